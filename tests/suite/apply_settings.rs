//! User limits and vhost settings through the real binary against the
//! private test broker: each goes from the files to the broker and back
//! (apply, a plan with nothing to do, export, the broker's own import,
//! `warren import`, the same settings again), a change made on the broker
//! shows as changed outside warren, and a setting the broker's version
//! lacks is refused before any write.
//!
//! Reads `WARREN_TEST_URL` as `scripts/test` sets it. Each test runs alone
//! on the node: warren runs as the administrator.

use serde_json::{Value as Json, json};

use crate::common::{Case, Run};

const USER: &str = "t-settings-limited";

/// The case's vhost with user [`USER`] of these `limits` (a TOML table),
/// who may read there.
fn with_limits(limits: &str) -> String {
    format!(
        "vhosts = [\"{{V}}\"]\n\n[users.{USER}]\ntags = [\"management\"]\nlimits = {limits}\n\n\
         [permissions.{USER}]\nconfigure = \"^$\"\nwrite = \"^$\"\nread = \".*\"\n"
    )
}

fn json_of(run: &Run) -> Json {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}:\n{}\n{}", run.stdout, run.stderr))
}

/// The plan says there is nothing to do.
fn assert_no_changes(case: &Case, path: &str) {
    let plan = case.warren(&["plan", path, "--detailed-exitcode"], &[]);
    assert_eq!(plan.code, 0, "the plan is not empty:\n{}\n{}", plan.stdout, plan.stderr);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn user_limits_go_to_the_broker_and_back() {
    let case = Case::admin("t-settings-user-limits").with_users(&[USER]);
    let limits = |case: &Case| case.get(&format!("users/{USER}"))["limits"].clone();
    case.topology(&with_limits("{ max-connections = 10, max-channels = 20 }"));
    let plan = case.plan(&[], &[]);
    assert!(plan.stdout.contains("max-channels"), "the plan shows the limits:\n{}", plan.stdout);
    case.apply_ok(&[], &[]);
    assert_eq!(limits(&case), json!({"max-connections": 10, "max-channels": 20}));
    assert_no_changes(&case, &case.path());

    // Changed on the broker: told apart from a change in the files, and put back.
    case.broker.put(&format!("user-limits/{USER}/max-channels"), json!({"value": 5}));
    let doc = json_of(&case.plan(&["--format", "json"], &[]));
    assert_eq!(doc["summary"]["outside"], 1, "{doc:#}");
    assert_eq!(doc["changed_outside"][0]["name"], USER, "{doc:#}");
    let run = case.apply_ok(&[], &[]);
    assert!(run.stdout.contains("changed outside warren"), "{}", run.stdout);
    assert_eq!(limits(&case), json!({"max-connections": 10, "max-channels": 20}));

    // A limit the files no longer list is removed; -1 is no limit.
    case.topology(&with_limits("{ max-connections = -1 }"));
    case.apply_ok(&[], &[]);
    assert_eq!(limits(&case), json!({"max-connections": -1}));
    assert_no_changes(&case, &case.path());

    // Export, the broker's own import of it, and `warren import`: the same
    // limits, and nothing to do.
    case.topology(&with_limits("{ max-connections = 10, max-channels = 20 }"));
    let export = case.warren(&["export", &case.path()], &[]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    case.broker.delete(&format!("users/{USER}"));
    case.broker.post("definitions", json_of(&export));
    assert_eq!(limits(&case), json!({"max-connections": 10, "max-channels": 20}));
    assert_no_changes(&case, &case.path());
    let imported = tempfile::tempdir().unwrap();
    let out = imported.path().join("files").display().to_string();
    let import = case.warren(&["import", "--vhost", &case.vhost, "--out", &out], &[]);
    assert_eq!(import.code, 0, "{}\n{}", import.stdout, import.stderr);
    let users = std::fs::read_to_string(format!("{out}/users.toml")).unwrap();
    assert!(users.contains("limits = { max-channels = 20, max-connections = 10 }"), "{users}");
    assert_no_changes(&case, &out);

    // Files that leave `limits` out leave the live ones alone.
    case.topology(&with_limits("{}").replace("limits = {}\n", ""));
    assert_no_changes(&case, &case.path());
}

const TAGGED: &str =
    "vhosts = [\"{V}\"]\n\n[vhost]\ndescription = \"orders domain\"\ntags = [\"orders\", \"team-a\"]\n";

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn vhost_tags_and_description_go_to_the_broker_and_back() {
    let case = Case::admin("t-settings-vhost-tags");
    let vhost = |case: &Case| {
        let v = case.get("vhosts/{V}");
        (v["description"].clone(), v["tags"].clone())
    };
    let tagged = (json!("orders domain"), json!(["orders", "team-a"]));
    case.topology(TAGGED);
    case.apply_ok(&[], &[]);
    assert_eq!(vhost(&case), tagged);
    assert_no_changes(&case, &case.path());

    // Changed on the broker: told apart from a change in the files, and put back.
    case.broker
        .put(&format!("vhosts/{}", case.vhost), json!({"description": "orders domain", "tags": "orders,by-hand"}));
    let doc = json_of(&case.plan(&["--format", "json"], &[]));
    assert_eq!(doc["summary"]["outside"], 1, "{doc:#}");
    assert_eq!(doc["changed_outside"][0]["name"], case.vhost.as_str(), "{doc:#}");
    case.apply_ok(&[], &[]);
    assert_eq!(vhost(&case), tagged);

    // Files that stop setting the tags leave them: a vhost's PUT, which
    // replaces them, sends them back as they are.
    case.topology("vhosts = [\"{V}\"]\n\n[vhost]\ndescription = \"orders\"\n");
    case.apply_ok(&[], &[]);
    assert_eq!(vhost(&case), (json!("orders"), json!(["orders", "team-a"])));

    // Export, the broker's own import of it, and `warren import`: the same
    // settings, and nothing to do.
    case.topology(TAGGED);
    let export = case.warren(&["export", &case.path()], &[]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    case.broker.delete(&format!("vhosts/{}", case.vhost));
    case.broker.post("definitions", json_of(&export));
    assert_eq!(vhost(&case), tagged);
    assert_no_changes(&case, &case.path());
    let imported = tempfile::tempdir().unwrap();
    let out = imported.path().join("files").display().to_string();
    let import = case.warren(&["import", "--vhost", &case.vhost, "--out", &out], &[]);
    assert_eq!(import.code, 0, "{}\n{}", import.stdout, import.stderr);
    let file = std::fs::read_to_string(format!("{out}/{}.toml", case.vhost)).unwrap();
    // 4.x gives every vhost a default queue type, which import writes too.
    for line in ["description = \"orders domain\"\n", "tags = [\"orders\", \"team-a\"]\n"] {
        assert!(file.contains(line), "{file}");
    }
    assert_no_changes(&case, &out);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn deletion_protection_is_refused_before_any_write_on_a_broker_without_it() {
    let case = Case::admin("t-settings-vhost-protected");
    let version = case.get("overview")["rabbitmq_version"].as_str().unwrap().to_string();
    case.topology(
        "vhosts = [\"{V}\"]\n\n[vhost]\nprotected_from_deletion = true\n\n[exchanges.\"x.orders\"]\ntype = \"topic\"\n",
    );
    let below = version.split('.').take(2).map(|n| n.parse::<u32>().unwrap()).collect::<Vec<_>>() < vec![4, 1];
    assert!(below, "this test is for brokers before 4.1, not {version}");
    for run in [case.plan(&[], &[]), case.apply(&[], &[])] {
        assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("`protected_from_deletion`"), "{}", run.stderr);
        assert!(run.stderr.contains("it came in RabbitMQ 4.1"), "{}", run.stderr);
        assert!(run.stderr.contains("topology.toml:4:27"), "points at the setting: {}", run.stderr);
    }
    assert!(!case.exists("vhosts/{V}"), "nothing was written");
}
