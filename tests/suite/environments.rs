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
fn an_unknown_environment_is_an_error_that_lists_them() {
    let run = warren(&["validate", "examples/environments", "--env", "stagin"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("no environment is called \"stagin\""), "{}", run.stderr);
    assert!(run.stderr.contains("did you mean \"staging\"?"), "{}", run.stderr);
}
