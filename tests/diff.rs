//! `warren diff OLD NEW`: offline plans between two topologies, as a
//! reviewer sees them in all three formats.

mod common;

use common::{corpus, warren};

#[test]
fn a_topology_compared_with_itself_has_no_changes() {
    let mut paths = corpus("examples");
    paths.push("topology".into());
    for path in paths {
        let run = warren(&["diff", &path, &path, "--detailed-exitcode"]);
        assert_eq!(run.code, 0, "{path}:\n{}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout, "No changes. The broker matches the topology.\n", "{path}");
    }
}

#[test]
fn the_shop_change_in_three_formats() {
    for format in ["human", "json", "markdown"] {
        let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", format]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(format!("shop-v1-to-shop-{format}"), run.stdout);
    }
}

#[test]
fn detailed_exitcode_is_two_when_there_are_changes() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--detailed-exitcode"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.ends_with("Plan: 17 to add, 1 to change, 2 to destroy, 0 to migrate.\n"), "{}", run.stdout);
}

#[test]
fn the_json_document_is_versioned_and_drives_the_other_views() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", "json"]);
    let doc: warren::render::PlanDocument = serde_json::from_str(&run.stdout).expect("the JSON is a plan document");
    assert_eq!(doc.format_version, warren::render::FORMAT_VERSION);
    let human = warren(&["diff", "tests/diff/shop-v1", "examples/shop"]);
    assert_eq!(warren::render::human::render(&doc, false), human.stdout, "human view drawn from the same document");
}

#[test]
fn an_invalid_new_side_is_an_error_with_no_plan() {
    let run = warren(&["diff", "examples/shop", "tests/invalid/05-queue-arguements-typo.toml"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("warren::unknown-key"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}
