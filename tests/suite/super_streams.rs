//! Super streams against the test node: on RabbitMQ 3.11 and later (the
//! RabbitMQ 4 node, `tests/rabbitmq4.txt`), one RabbitMQ makes plans as no
//! change from the files that declare it and imports back as one
//! `[super_streams.NAME]`; one warren makes grows and shrinks by its
//! partition count, a shrink refused without --allow-destroy. On 3.10 (the
//! main suite's node) an apply is refused before any write, naming 3.11.

use serde_json::json;

use crate::common::{Case, seg, squash};

const SINCE: (u32, u32) = (3, 11);

/// Makes super stream `name` in the case's vhost as RabbitMQ's own
/// `rabbitmq-streams add_super_stream` does: the same server function
/// (`rabbit_stream_manager:create_super_stream`, in the stream plugin,
/// which scripts/broker enables on RabbitMQ 4 nodes) with the partitions,
/// routing keys and arguments the command computes from its options.
fn rabbitmq_makes(case: &Case, name: &str, keys: &[&str], arguments: &[(&str, &str)]) {
    let bin = |s: &str| format!("<<\"{s}\">>");
    let list = |items: Vec<String>| format!("[{}]", items.join(","));
    let partitions = list(keys.iter().map(|k| bin(&format!("{name}-{k}"))).collect());
    let keys = list(keys.iter().map(|k| bin(k)).collect());
    let arguments: Vec<String> = arguments.iter().map(|(k, v)| format!("{} => {}", bin(k), bin(v))).collect();
    let call = format!(
        "rabbit_stream_manager:create_super_stream({}, {}, {partitions}, #{{{}}}, {keys}, <<\"guest\">>).",
        bin(&case.vhost),
        bin(name),
        arguments.join(",")
    );
    let out = case.broker.ctl(&["eval", &call]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.trim() == "ok", "{call}: {said}{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_super_stream_rabbitmq_made_plans_as_no_change_and_imports_back_as_one() {
    let case = Case::admin("t-superstreams-made");
    if case.broker.version() < SINCE {
        return; // The version error: the next test.
    }
    case.broker.put(&format!("vhosts/{}", seg(&case.vhost)), json!({}));
    rabbitmq_makes(&case, "made", &["0", "1", "2"], &[]);
    let limits = [
        ("max-age", "604800s"),
        ("max-length-bytes", "1000000"),
        ("stream-max-segment-size-bytes", "500000"),
        ("initial-cluster-size", "1"),
    ];
    rabbitmq_makes(&case, "regions", &["eu", "us"], &limits);
    let made = case.get("exchanges/{V}/made");
    assert_eq!((made["type"].as_str(), &made["arguments"]), (Some("direct"), &json!({"x-super-stream": true})));
    case.topology(
        r#"vhosts = ["{V}"]

[super_streams.made]
partitions = 3

[super_streams.regions]
binding_keys = ["eu", "us"]
arguments = { "x-max-age" = "604800s", "x-max-length-bytes" = 1000000, "x-stream-max-segment-size-bytes" = 500000, "x-initial-cluster-size" = 1 }
"#,
    );
    let plan = case.plan(&["--detailed-exitcode", "--project", "t"], &[]);
    assert_eq!(plan.code, 0, "{}\n{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);

    let out = case.path_of("imported");
    // Named as the plans name it: import writes it into the files' warren.toml.
    let run = case.warren(&["import", "--vhost", &case.vhost, "--project", "t", "--out", &out], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let file = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.ends_with(format!("{}.toml", case.vhost)));
    let text = std::fs::read_to_string(file.expect("the vhost's file")).unwrap();
    assert!(text.contains("[super_streams.made]\npartitions = 3\n"), "{text}");
    assert!(text.contains("[super_streams.regions]\nbinding_keys = [\"eu\", \"us\"]\n"), "{text}");
    assert!(text.contains("x-max-age = \"604800s\""), "{text}");
    for alone in ["[exchanges.", "[queues.", "[[bindings]]"] {
        assert!(!text.contains(alone), "no object of a super stream apart: {text}");
    }
    let plan = case.warren(&["plan", &out, "--detailed-exitcode", "--project", "t"], &[]);
    assert_eq!(plan.code, 0, "{}\n{}", plan.stdout, plan.stderr);

    // export writes the objects the super stream is.
    let run = case.warren(&["export", &case.path_of("topology.toml")], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let defs: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names = |list: &str| -> Vec<String> {
        defs[list].as_array().unwrap().iter().map(|o| o["name"].as_str().unwrap_or("").to_string()).collect()
    };
    assert_eq!(names("exchanges"), ["made", "regions"]);
    assert_eq!(names("queues"), ["made-0", "made-1", "made-2", "regions-eu", "regions-us"]);
    let binding = &defs["bindings"].as_array().unwrap()[4];
    assert_eq!(binding["routing_key"], "us");
    assert_eq!(binding["arguments"], json!({"x-stream-partition-order": 1}));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_super_stream_grows_and_shrinks_only_with_allow_destroy_or_is_refused_before_3_11() {
    let case = Case::admin("t-superstreams-count");
    let file = |n: usize| {
        case.topology(&format!(
            "vhosts = [\"{{V}}\"]\n\n[super_streams.orders]\npartitions = {n}\narguments = {{ \"x-max-age\" = \"7D\" }}\n"
        ))
    };
    file(2);
    let version = case.broker.version();
    if version < SINCE {
        let run = case.apply(&[], &[]);
        assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
        let said = format!(
            "super stream \"orders\" in vhost \"{}\": RabbitMQ {}.{} has no super streams; they came in RabbitMQ 3.11",
            case.vhost, version.0, version.1
        );
        assert!(squash(&run.stderr).contains(&squash(&said)), "{}", run.stderr);
        assert!(run.stderr.contains("Nothing was changed"), "{}", run.stderr);
        assert!(!case.broker.exists(&format!("vhosts/{}", seg(&case.vhost))), "nothing was written");
        return;
    }
    case.apply_ok(&[], &[]);
    case.assert_converged(&[]);
    assert_eq!(case.get("queues/{V}/orders-1")["type"], "stream");

    file(3);
    let plan = case.plan(&[], &[]);
    assert!(plan.stdout.contains("# queue \"orders-2\" in vhost"), "{}", plan.stdout);
    assert!(plan.stdout.contains("# part of super stream \"orders\""), "{}", plan.stdout);
    assert!(plan.stdout.contains("Plan: 2 to add, 0 to change, 0 to destroy,"), "{}", plan.stdout);
    case.apply_ok(&[], &[]);
    case.assert_converged(&[]);
    let bound = case.get("exchanges/{V}/orders/bindings/source");
    let orders: Vec<_> =
        bound.as_array().unwrap().iter().map(|b| b["arguments"]["x-stream-partition-order"].clone()).collect();
    assert_eq!(orders, [json!(0), json!(1), json!(2)]);
    // RabbitMQ's stream plugin takes warren's objects for a super stream.
    let call = format!("rabbit_stream_manager:partitions(<<\"{}\">>, <<\"orders\">>).", case.vhost);
    let out = case.broker.ctl(&["eval", &call]);
    let said = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<String>();
    assert_eq!(said, "{ok,[<<\"orders-0\">>,<<\"orders-1\">>,<<\"orders-2\">>]}", "{call}");

    // Messages in the partitions to go: the refusal is not for want of counts.
    case.publish("orders-1", 2);
    case.publish("orders-2", 3);
    file(1);
    let run = case.apply(&[], &[]);
    assert_eq!(run.code, 4, "refused without --allow-destroy:\n{}\n{}", run.stdout, run.stderr);
    let plain = "# queue \"orders-2\" in vhost \"t-superstreams-count\" will be destroyed: a partition of super stream \"orders\" that the files no longer have: removed from the files;";
    assert!(run.stdout.contains(plain), "{}", run.stdout);
    assert!(run.stdout.contains("# needs --allow-destroy: messages or routes can be lost"), "{}", run.stdout);
    assert!(case.exists("queues/{V}/orders-2"), "nothing deleted");
    case.apply_ok(&["--allow-destroy"], &[]);
    assert!(!case.exists("queues/{V}/orders-1") && !case.exists("queues/{V}/orders-2"));
    case.assert_converged(&[]);
}
