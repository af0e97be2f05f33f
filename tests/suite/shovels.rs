//! Shovels and federation upstreams against a real broker: their URIs'
//! passwords come from the environment and never show, a change made by
//! hand is drift, and a broker without the plugin refuses before any write.

use serde_json::json;

use crate::common::{Case, TestBroker, seg};

const SHOVELS: &str = r##"
vhosts = ["{V}"]

[queues."q.from"]
[queues."q.to"]

[shovels.move]
src-uri = "amqp:///{V}"
src-queue = "q.from"
dest-uri = { env = "T_SHOVEL_DEST_URI" }
dest-queue = "q.to"

[federation_upstreams.origin]
uri = [{ env = "T_SHOVEL_ORIGIN_URI" }, "amqp://elsewhere"]
max-hops = 2

[federation_upstream_sets.all-origins]
upstreams = [{ upstream = "origin" }]
"##;

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn shovels_and_upstreams_are_applied_with_secrets_read_from_the_environment_and_never_shown() {
    let mut case = Case::admin("t-shovels");
    let amqp = case.amqp();
    let uri = |password: &str| {
        format!("{}/{}", amqp.replacen("guest:guest@", &format!("guest:{password}@"), 1), seg(&case.vhost))
    };
    // The node's guest password is "guest": a URI that works, and one
    // whose password is wrong but must not show either.
    let (good, other) = (uri("guest"), uri("t-shovel-secret-9Qw"));
    case.secrets = vec!["t-shovel-secret-9Qw".into()];
    case.topology(SHOVELS);

    // Unset: the plan warns and cannot create the shovel.
    let plan = case.plan(&[], &[]);
    assert!(plan.stderr.contains("secret-unknown") && plan.stderr.contains("$T_SHOVEL_DEST_URI"), "{}", plan.stderr);
    let refused = case.apply(&[], &[]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("comes from $T_SHOVEL_"), "{}", refused.stderr);
    assert!(!case.exists("queues/{V}/q.from"), "nothing was written");

    case.set_env("T_SHOVEL_DEST_URI", Some(&good));
    case.set_env("T_SHOVEL_ORIGIN_URI", Some(&other));
    case.apply_ok(&[], &[]);
    let shovel = case.get("parameters/shovel/{V}/move")["value"].clone();
    assert_eq!((shovel["dest-uri"].as_str(), shovel["src-queue"].as_str()), (Some(good.as_str()), Some("q.from")));
    assert_eq!(
        case.get("parameters/federation-upstream/{V}/origin")["value"]["uri"],
        json!([other, "amqp://elsewhere"])
    );
    assert_eq!(
        case.get("parameters/federation-upstream-set/{V}/all-origins")["value"],
        json!([{"upstream": "origin"}])
    );
    assert_eq!(case.plan(&["--detailed-exitcode"], &[]).code, 0, "converged");
    case.publish("q.from", 3);
    let moved = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        case.messages("q.to") == Some(3)
    });
    assert!(moved, "the shovel moves the messages");

    // A changed password is a change, shown masked with a new digest.
    let changed = case.plan(&["--detailed-exitcode"], &[("T_SHOVEL_ORIGIN_URI", Some(good.as_str()))]);
    assert_eq!(changed.code, 2, "{}", changed.stdout);
    assert!(changed.stdout.contains("guest:***@"), "{}", changed.stdout);
    for format in ["json", "markdown"] {
        case.plan(&["--format", format], &[]);
    }

    // By hand: drift.
    let by_hand = json!({"value": {"src-uri": format!("amqp:///{}", case.vhost), "src-queue": "q.from", "dest-uri": good, "dest-queue": "q.to", "src-prefetch-count": 10}});
    case.broker.put(&format!("parameters/shovel/{}/move", seg(&case.vhost)), by_hand);
    let drift = case.plan(&[], &[]);
    assert!(
        drift.stdout.contains("src-prefetch-count") && drift.stdout.contains("changed outside warren"),
        "{}",
        drift.stdout
    );

    // Removed from the files: deleted.
    case.topology("vhosts = [\"{V}\"]\n[queues.\"q.from\"]\n[queues.\"q.to\"]\n");
    case.apply_ok(&[], &[]);
    assert!(!case.exists("parameters/shovel/{V}/move"));
    assert!(!case.exists("parameters/federation-upstream/{V}/origin"));
    case.secrets.clear();
    drop(case);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_broker_without_the_plugin_refuses_the_plan_and_names_it() {
    // The fleet's nodes run without shovel and federation (scripts/test).
    let urls = std::env::var("WARREN_TEST_FLEET_URLS").expect("run with scripts/test, which starts the fleet");
    let broker = TestBroker::at(urls.split_whitespace().next().unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    let text = "vhosts = [\"t-no-plugin\"]\n[shovels.s]\nsrc-uri = \"amqp://\"\nsrc-queue = \"a\"\ndest-uri = \"amqp://\"\ndest-queue = \"b\"\n[shovels.t]\nsrc-uri = \"amqp://\"\nsrc-queue = \"a\"\ndest-uri = \"amqp://\"\ndest-queue = \"c\"\n";
    std::fs::write(dir.path().join("topology.toml"), text).unwrap();
    std::fs::write(dir.path().join("warren.toml"), "[project]\nname = \"t-no-plugin\"\n").unwrap();
    let path = dir.path().display().to_string();
    let plan = broker.warren(&["plan", &path], &[]);
    assert_eq!(plan.code, 1, "{}\n{}", plan.stdout, plan.stderr);
    let said = crate::common::flat(&plan.stderr);
    assert!(said.contains("plugin-missing") && said.contains("rabbitmq_shovel"), "{said}");
    assert!(said.contains("(and 1 more)"), "one problem per kind: {said}");
    assert!(!broker.exists("vhosts/t-no-plugin"));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_policymaker_reads_its_vhosts_shovels_and_converges() {
    let case = Case::policymaker("t-shovels-pm");
    case.topology(
        "vhosts = [\"{V}\"]\n[queues.a]\n[queues.b]\n[shovels.s]\nsrc-uri = \"amqp:///{V}\"\nsrc-queue = \"a\"\ndest-uri = \"amqp:///{V}\"\ndest-queue = \"b\"\nack-mode = \"on-publish\"\n",
    );
    case.apply_ok(&[], &[]);
    assert_eq!(case.get("parameters/shovel/{V}/s")["value"]["ack-mode"], "on-publish");
    let plan = case.plan(&["--detailed-exitcode"], &[]);
    assert_eq!(plan.code, 0, "read back, nothing to do:\n{}\n{}", plan.stdout, plan.stderr);
}

/// Every new kind through import, plan, export, the broker's own import and
/// plan again: nothing changes on the way, and no password reaches a file
/// but the export (which must carry it).
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_new_kinds_round_trip_through_import_export_and_the_brokers_import() {
    let mut case = Case::admin("t-kinds-trip");
    let v = seg(&case.vhost);
    let secret = "t-kinds-trip-pw-4Hd";
    case.secrets = vec![secret.to_string()];
    case.broker.put(&format!("vhosts/{v}"), json!({}));
    case.broker.put(&format!("queues/{v}/a"), json!({"durable": true}));
    case.broker.put(&format!("queues/{v}/b"), json!({"durable": true}));
    case.broker.put(&format!("exchanges/{v}/x"), json!({"type": "topic", "durable": true}));
    let local = format!("amqp:///{v}");
    let shovel = json!({"value": {"src-uri": local, "src-queue": "a", "dest-uri": local, "dest-queue": "b", "ack-mode": "on-publish"}});
    case.broker.put(&format!("parameters/shovel/{v}/s"), shovel);
    let upstream = format!("amqp://guest:{secret}@upstream.example/{v}");
    let upstream_value = json!({"value": {"uri": [upstream, "amqp://other.example"], "max-hops": 3}});
    case.broker.put(&format!("parameters/federation-upstream/{v}/u"), upstream_value);
    case.broker.put(&format!("parameters/federation-upstream-set/{v}/set"), json!({"value": [{"upstream": "u"}]}));
    let topic = json!({"exchange": "x", "write": "^a\\.", "read": ".*"});
    case.broker.put(&format!("topic-permissions/{v}/guest"), topic);

    let out = case.path_of("files");
    let import = case.warren(&["import", "--vhost", &case.vhost, "--out", &out], &[]);
    assert_eq!(import.code, 0, "{}\n{}", import.stdout, import.stderr);
    let text = std::fs::read_to_string(format!("{out}/{}.toml", case.vhost)).unwrap();
    assert!(text.contains("[shovels.s]") && text.contains("ack-mode = \"on-publish\""), "{text}");
    assert!(text.contains("uri = [{ env = \"FEDERATION_UPSTREAM_U_URI_1\" }, \"amqp://other.example\"]"), "{text}");
    assert!(!text.contains(secret), "no password in a file");
    std::fs::write(format!("{out}/warren.toml"), "[project]\nname = \"t-kinds-trip\"\n").unwrap();
    case.set_env("FEDERATION_UPSTREAM_U_URI_1", Some(&upstream));
    let unchanged = |case: &Case, when: &str| {
        let plan = case.warren(&["plan", &out, "--detailed-exitcode"], &[]);
        assert_eq!(plan.code, 0, "{when}: nothing to change\n{}\n{}", plan.stdout, plan.stderr);
    };
    unchanged(&case, "imported");

    let defs = case.path_of("definitions.json");
    let export = case.warren(&["export", &out, "--out", &defs], &[]);
    assert_eq!(export.code, 0, "{}\n{}", export.stdout, export.stderr);
    case.broker.delete(&format!("vhosts/{v}"));
    let dir = crate::common::broker::readable_dir();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&defs).unwrap()).unwrap();
    case.broker.import(dir.path(), &doc).expect("the broker imports warren's export");
    unchanged(&case, "exported and imported by the broker");
    assert_eq!(case.get("parameters/federation-upstream/{V}/u")["value"]["uri"][0], upstream.as_str());
    case.secrets.clear();
}
