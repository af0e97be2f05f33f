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

/// `import --object ADDRESS --into DIR`: one object of an export added to
/// the file that declares its vhost, valid; what the files declare already
/// is nothing to import, and a binding's ends declared in the files are
/// not listed as external.
#[test]
fn import_object_adds_one_object_to_the_file_of_its_vhost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t").display().to_string();
    let state = "examples/shop/before.definitions.json";
    assert_eq!(warren_env(&["init", &path, "--project", "shop"], &[NOWHERE]).code, 0);
    let import = |objects: &[&str]| {
        let mut args = vec!["import", "--state", state, "--into", &path];
        for o in objects {
            args.extend(["--object", o]);
        }
        warren_env(&args, &[NOWHERE])
    };
    let run = import(&["exchange:/shop.orders", "queue:/legacy.audit"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("Added to {path}/main.toml")), "{}", run.stdout);
    assert!(run.stdout.contains("exchange \"shop.orders\" in vhost \"/\", queue \"legacy.audit\""), "{}", run.stdout);
    let run = import(&["binding:/legacy.audit"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let text = std::fs::read_to_string(dir.path().join("t/main.toml")).unwrap();
    assert!(!text.contains("[external]"), "its ends are declared in the file:\n{text}");
    assert!(text.contains("routing_key = \"#\""), "{text}");
    let validate = warren_env(&["validate", &path], &[NOWHERE]);
    assert_eq!(validate.code, 0, "{}\n{}", validate.stdout, validate.stderr);
    assert!(validate.stdout.contains("1 exchange, 1 queue, 1 binding"), "{}", validate.stdout);

    let again = import(&["queue:/legacy.audit"]);
    assert_eq!(again.code, 1, "{}\n{}", again.stdout, again.stderr);
    assert!(again.stderr.contains("Nothing to import"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("t/main.toml")).unwrap(), text, "nothing was written");
}
