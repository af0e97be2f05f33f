//! Environments without a broker: overlays merged over the base, checked
//! per environment by `validate --env`, through the real binary.

use crate::common::warren;

#[test]
fn every_environment_of_the_example_validates_with_its_overlay() {
    let run = warren(&["validate", "examples/environments", "--env", "all"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    // The base leaves the overlays out: staging's tap queue is staging's own.
    assert_eq!(
        run.stdout,
        "examples/environments is valid: 1 vhost, 2 exchanges, 3 queues, 3 bindings, 1 policy, 0 users.\n\
         environment prod is valid: 1 vhost, 2 exchanges, 3 queues, 3 bindings, 1 policy, 0 users.\n\
         environment staging is valid: 1 vhost, 2 exchanges, 4 queues, 4 bindings, 1 policy, 0 users.\n"
    );
}

#[test]
fn a_broken_overlay_is_reported_at_its_own_file_and_line() {
    let dir = "tests/environments/broken-overlay";
    // The base alone is valid.
    let run = warren(&["validate", dir]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = warren(&["validate", dir, "--env", "qa"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let overlay = format!("{dir}/overlays/qa/limits.toml:5:26");
    assert!(run.stderr.contains(&overlay), "the bad value, at the overlay's line:\n{}", run.stderr);
    // The binding the overlay left dangling is the base's, and said so.
    assert!(run.stderr.contains(&format!("{dir}/topology.toml:10:10")), "{}", run.stderr);
    assert!(run.stderr.contains("environment qa is not valid: 2 errors."), "{}", run.stderr);
    // The other environment is checked too, and passes.
    let run = warren(&["validate", dir, "--env", "all"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("environment ok is valid"), "{}", run.stdout);
}

#[test]
fn an_exclusion_leaves_an_environment_out_and_a_misspelt_one_is_an_error() {
    let run = warren(&["validate", "examples/environments", "--env", "!staging"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("environment prod is valid") && !run.stdout.contains("staging"), "{}", run.stdout);
    let run = warren(&["validate", "examples/environments", "--env", "all", "--env", "!stagin"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("no environment is called \"stagin\""), "{}", run.stderr);
    assert!(
        !run.stdout.contains("environment prod"),
        "no environment is validated on a misspelt exclusion: {}",
        run.stdout
    );
}

#[test]
fn an_unknown_environment_is_an_error_that_lists_them() {
    let run = warren(&["validate", "examples/environments", "--env", "stagin"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("no environment is called \"stagin\""), "{}", run.stderr);
    assert!(run.stderr.contains("did you mean \"staging\"?"), "{}", run.stderr);
}

#[test]
fn diff_between_environments_shows_what_the_overlays_change() {
    let run = warren(&["diff", "examples/environments", "--env", "staging", "--env", "prod"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Compared under the base's vhost names, which are said apart.
    assert!(run.stderr.contains("In environment staging, vhost \"shipments\" is called \"shipments-staging\"."));
    assert!(run.stdout.contains("- arguments.\"x-max-length\"           = 1000\n"), "{}", run.stdout);
    assert!(run.stdout.contains("+ arguments.\"x-max-length\"           = 1000000\n"), "{}", run.stdout);
    assert!(run.stdout.contains("- queue \"shipments.tap\""), "staging's own queue: {}", run.stdout);
    assert!(!run.stdout.contains("allow-destroy"), "a comparison applies nothing: {}", run.stdout);
    let run = warren(&["diff", "examples/environments", "--env", "staging"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("give --env twice"), "{}", run.stderr);
}

#[test]
fn export_writes_one_environment_s_definitions() {
    let run = warren(&["export", "examples/environments", "--env", "prod"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["vhosts"][0]["name"], "shipments-prod");
    let settlement = doc["queues"].as_array().unwrap().iter().find(|q| q["name"] == "shipments.labels").unwrap();
    assert_eq!(settlement["arguments"]["x-max-length"], 1_000_000);
    let run = warren(&["export", "examples/environments", "--env", "all"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("takes one environment"), "{}", run.stderr);
}

#[test]
fn an_unset_url_variable_is_an_error_that_names_it() {
    let run = crate::common::warren_env(
        &["plan", "examples/environments", "--env", "staging"],
        &[("SHIPMENTS_STAGING_URL", None)],
    );
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("$SHIPMENTS_STAGING_URL is not set"), "{}", run.stdout);
}

#[test]
fn status_takes_the_project_directory_as_plan_does() {
    // Seen: `warren status .` was refused (`unexpected argument '.'`).
    let unset = [("SHIPMENTS_STAGING_URL", None), ("WARREN_URL", None)];
    let dir = crate::common::root().join("examples/environments");
    for (run, how) in [
        (crate::common::warren_in(&dir, &["status", ".", "--env", "staging"], &unset), "status ."),
        (crate::common::warren_env(&["status", "examples/environments", "--env", "staging"], &unset), "PATH"),
        (
            crate::common::warren_env(&["status", "--path", "examples/environments", "--env", "staging"], &unset),
            "--path",
        ),
    ] {
        assert!(!run.stderr.contains("unexpected argument"), "{how}: {}", run.stderr);
        // The project's environment was found; its broker is not set here.
        assert!(run.stdout.contains("Environment staging:"), "{how}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("$SHIPMENTS_STAGING_URL is not set"), "{how}: {}", run.stderr);
        assert_eq!(run.code, 1, "{how}");
    }
    let run = warren(&["status", "examples/environments", "--path", "examples/environments"]);
    assert_eq!(run.code, 1, "PATH or --path, not both: {}", run.stderr);
}
