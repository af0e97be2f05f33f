//! `warren init` through the binary, offline: the files it writes are a
//! valid project of the name given, and it never writes over a topology.

use crate::common::warren_env;

/// No broker: nothing may reach one.
const NOWHERE: (&str, Option<&str>) = ("WARREN_URL", Some("http://guest:guest@127.0.0.1:9"));

#[test]
fn init_writes_a_valid_project_and_never_over_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("topology").display().to_string();

    let run = warren_env(&["init", &path], &[NOWHERE, ("WARREN_PROJECT", None)]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("warren init needs the project's name: --project NAME"), "{}", run.stderr);
    assert!(!dir.path().join("topology").exists(), "nothing is written without a name");

    let run = warren_env(&["init", &path, "--project", "bad name"], &[NOWHERE]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("project name \"bad name\""), "{}", run.stderr);

    let run = warren_env(&["init", &path, "--project", "orders", "--vhost", "orders"], &[NOWHERE]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("Wrote {path}/warren.toml: project \"orders\"")), "{}", run.stdout);
    let validate = warren_env(&["validate", &path], &[NOWHERE]);
    assert_eq!(validate.code, 0, "{}\n{}", validate.stdout, validate.stderr);
    assert!(validate.stdout.contains("1 vhost"), "{}", validate.stdout);
    // The files name the project: a plan against an export needs no --project.
    let state = dir.path().join("empty.json");
    std::fs::write(&state, "{}").unwrap();
    let plan = warren_env(&["plan", &path, "--state", state.to_str().unwrap()], &[NOWHERE, ("WARREN_PROJECT", None)]);
    assert_eq!(plan.code, 0, "{}\n{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("+ vhost \"orders\""), "{}", plan.stdout);

    let before = std::fs::read_to_string(dir.path().join("topology/main.toml")).unwrap();
    let again = warren_env(&["init", &path, "--project", "other"], &[NOWHERE]);
    assert_eq!(again.code, 1, "{}\n{}", again.stdout, again.stderr);
    assert!(again.stderr.contains("already holds topology files"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("topology/main.toml")).unwrap(), before);
}

#[test]
fn init_from_an_export_imports_it_beside_the_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events").display().to_string();
    let state = "examples/order-events/before.definitions.json";
    let run = warren_env(&["init", &path, "--project", "events", "--state", state], &[NOWHERE]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("project \"events\""), "{}", run.stdout);
    assert!(run.stdout.contains("Imported"), "{}", run.stdout);
    assert!(!run.stdout.contains("Name the project"), "the project is named already: {}", run.stdout);
    let project = std::fs::read_to_string(dir.path().join("events/warren.toml")).unwrap();
    assert!(project.contains("name = \"events\""), "{project}");
    let validate = warren_env(&["validate", &path], &[NOWHERE]);
    assert_eq!(validate.code, 0, "{}\n{}", validate.stdout, validate.stderr);
}
