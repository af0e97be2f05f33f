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
