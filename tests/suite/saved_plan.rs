//! Saved plans: `warren plan --out FILE`, then `warren apply FILE`, against
//! the private test broker through the real binary.
//!
//! Reads `WARREN_TEST_URL` as `scripts/test` sets it; the broker tests fail
//! without it. Each test works in its own vhost, named after it, alone on
//! the node ([`crate::common::Turn`]): warren's inventory is one global
//! parameter that every apply rewrites, and it is part of the live state a saved plan checks, so
//! one test's apply would make another's saved plan stale.

use serde_json::json;

use crate::common::{Run, TestBroker, Turn, alone, flat, seg, warren};

/// One test's vhost, users, topology directory and saved-plan file.
struct Case {
    broker: TestBroker,
    vhost: String,
    users: Vec<String>,
    dir: tempfile::TempDir,
    _turn: Turn,
}

impl Case {
    fn new(vhost: &str, users: &[&str]) -> Case {
        let turn = alone();
        let case = Case {
            broker: TestBroker::from_env(),
            vhost: vhost.into(),
            users: users.iter().map(|u| u.to_string()).collect(),
            dir: tempfile::tempdir().unwrap(),
            _turn: turn,
        };
        case.clean();
        case
    }

    fn clean(&self) {
        self.broker.delete(&format!("vhosts/{}", seg(&self.vhost)));
        for u in &self.users {
            self.broker.delete(&format!("users/{}", seg(u)));
        }
    }

    /// Writes (or replaces) the topology file; `{V}` stands for the vhost.
    fn topology(&self, toml: &str) {
        std::fs::create_dir_all(self.dir.path().join("topology")).unwrap();
        std::fs::write(self.dir.path().join("topology/main.toml"), toml.replace("{V}", &self.vhost)).unwrap();
    }

    fn topology_path(&self) -> String {
        self.dir.path().join("topology").display().to_string()
    }

    /// Where the saved plan goes: beside the topology, not in it.
    fn plan_file(&self) -> String {
        self.dir.path().join("saved.plan").display().to_string()
    }

    fn warren(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.broker.warren(args, env);
        Run { stderr: flat(&run.stderr), ..run }
    }

    /// `warren plan TOPOLOGY --out FILE`, which must succeed.
    fn save_plan(&self, env: &[(&str, Option<&str>)]) -> String {
        let (path, file) = (self.topology_path(), self.plan_file());
        let run = self.warren(&["plan", &path, "--out", &file], env);
        assert_eq!(run.code, 0, "plan --out failed:\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("Saved this plan to"), "{}", run.stderr);
        std::fs::read_to_string(&file).unwrap()
    }

    /// `warren apply FILE --auto-approve ARGS`.
    fn apply_saved(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let file = self.plan_file();
        let mut all = vec!["apply", file.as_str(), "--auto-approve"];
        all.extend_from_slice(args);
        self.warren(&all, env)
    }

    fn exists(&self, path: &str) -> bool {
        self.broker.exists(&path.replace("{V}", &seg(&self.vhost)))
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        self.clean();
    }
}

const TOPOLOGY: &str = r#"
vhosts = ["{V}"]

[exchanges."saved.events"]
type = "topic"

[queues."saved.work"]
type = "classic"

[[bindings]]
source = "saved.events"
queue = "saved.work"
routing_key = "work.#"
"#;

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_saved_plan_is_applied_and_then_nothing_remains_to_do() {
    let case = Case::new("saved-plan-applies", &[]);
    case.topology(TOPOLOGY);
    let text = case.save_plan(&[]);
    let saved: serde_json::Value = serde_json::from_str(&text).expect("the saved plan is JSON");
    assert_eq!(saved["warren_saved_plan"], 1);
    assert_eq!(saved["warren_version"], env!("CARGO_PKG_VERSION"));
    assert!(!text.contains("guest:guest"), "credentials in the saved plan:\n{text}");
    assert!(!case.exists("vhosts/{V}"), "plan --out changed the broker");

    let run = case.apply_saved(&[], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Apply complete! 4 added"), "{}", run.stdout);
    assert!(case.exists("exchanges/{V}/saved.events"));
    assert!(case.exists("queues/{V}/saved.work"));

    let path = case.topology_path();
    let again = case.warren(&["plan", &path, "--detailed-exitcode"], &[]);
    assert_eq!(again.code, 0, "changes remain after applying the saved plan:\n{}", again.stdout);
    assert!(again.stdout.contains("No changes."), "{}", again.stdout);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_saved_plan_applies_the_files_as_they_were_reviewed_not_as_they_are_now() {
    let case = Case::new("saved-plan-reviewed-files", &[]);
    case.topology(TOPOLOGY);
    case.save_plan(&[]);
    // Edited after review: the saved plan must not pick this up.
    case.topology(&TOPOLOGY.replace("saved.events", "edited.events"));

    let run = case.apply_saved(&[], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(case.exists("exchanges/{V}/saved.events"), "the reviewed exchange was not created");
    assert!(!case.exists("exchanges/{V}/edited.events"), "the files on disk were applied");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_saved_plan_is_refused_when_the_broker_changed_since() {
    let case = Case::new("saved-plan-stale", &[]);
    case.topology(TOPOLOGY);
    let path = case.topology_path();
    let first = case.warren(&["apply", &path, "--auto-approve"], &[]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    case.topology(&format!("{TOPOLOGY}\n[exchanges.\"saved.more\"]\ntype = \"fanout\"\n"));
    let text = case.save_plan(&[]);
    let fingerprint =
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["live_fingerprint"].as_str().unwrap().to_string();

    // Someone changes the vhost by hand after the plan was reviewed.
    let vhost = seg(&case.vhost);
    case.broker.put(&format!("exchanges/{vhost}/by.hand"), json!({"type": "direct", "durable": true}));

    let run = case.apply_saved(&[], &[]);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!("the broker changed since this plan was made (fingerprint {fingerprint}, now ")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("make a new plan"), "{}", run.stderr);
    assert!(!case.exists("exchanges/{V}/saved.more"), "a stale plan was carried out");

    // A new plan, made now, goes through.
    case.save_plan(&[]);
    let run = case.apply_saved(&[], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(case.exists("exchanges/{V}/saved.more"));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_saved_plan_is_refused_when_it_comes_out_different() {
    let user = "saved-plan-user";
    let case = Case::new("saved-plan-different", &[user]);
    case.topology(&format!("{TOPOLOGY}\n[users.\"{user}\"]\npassword_env = \"SAVED_PLAN_PASSWORD\"\ntags = []\n"));
    let secret = "s3cret-never-saved";
    let text = case.save_plan(&[("SAVED_PLAN_PASSWORD", Some(secret))]);
    assert!(!text.contains(secret), "a password value was saved:\n{text}");

    // The broker is as it was, but without the variable the plan differs
    // (the user's password is unknown).
    let run = case.apply_saved(&[], &[("SAVED_PLAN_PASSWORD", None)]);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("the plan now comes out different"), "{}", run.stderr);
    assert!(run.stderr.contains("password_env"), "{}", run.stderr);
    assert!(!case.exists("vhosts/{V}"), "a plan other than the saved one was carried out");
    assert!(!case.exists(&format!("users/{}", seg(user))));

    let run = case.apply_saved(&[], &[("SAVED_PLAN_PASSWORD", Some(secret))]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(case.exists(&format!("users/{}", seg(user))));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_broken_saved_plan_is_an_error_that_names_the_file() {
    let case = Case::new("saved-plan-broken", &[]);
    case.topology(TOPOLOGY);
    let text = case.save_plan(&[]);
    let file = case.plan_file();
    let broken = [
        (text[..text.len() / 2].to_string(), "it is cut short"),
        ("{\"plan\": \"mine\"}".to_string(), "it has no \"warren_saved_plan\" marker"),
        (text.replace("\"warren_saved_plan\": 1", "\"warren_saved_plan\": 99"), "its format version is 99"),
        ("{ not json at all".to_string(), "it is not valid JSON"),
    ];
    for (content, why) in broken {
        std::fs::write(&file, &content).unwrap();
        let run = case.apply_saved(&[], &[]);
        assert_eq!(run.code, 1, "{content}\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(&format!("{file} is not a usable saved plan: {why}")), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    assert!(!case.exists("vhosts/{V}"), "a broken saved plan changed the broker");

    // --replace belongs to the plan: a saved plan records its own.
    std::fs::write(&file, &text).unwrap();
    let run = case.apply_saved(&["--replace", "saved.work"], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("--replace cannot be given with a saved plan"), "{}", run.stderr);
    assert!(!case.exists("vhosts/{V}"));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_plan_saved_from_an_export_is_checked_against_the_broker() {
    let case = Case::new("saved-plan-from-export", &[]);
    case.topology(TOPOLOGY);
    let export = case.dir.path().join("export.json");
    std::fs::write(&export, case.broker.get("definitions").to_string()).unwrap();
    let (path, file) = (case.topology_path(), case.plan_file());
    let run = warren(&["plan", &path, "--state", &export.display().to_string(), "--out", &file]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    // The broker moves on from the export: a user appears.
    let user = "users/saved-plan-from-export-user";
    case.broker.put(user, serde_json::json!({"password": "pw-from-export", "tags": ""}));
    let run = case.apply_saved(&[], &[]);
    case.broker.delete(user);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("the broker changed since this plan was made"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("The plan was made against definitions file {}", export.display())));
    assert!(!case.exists("vhosts/{V}"));
}

/// No broker involved: `plan --state --out` writes the saved plan, with the
/// files' text and the export as its origin.
#[test]
fn plan_out_against_an_export_writes_a_saved_plan() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shop.plan");
    let file = file.display().to_string();
    let run = crate::common::warren_env(
        &["plan", "examples/shop", "--state", "examples/shop/before.definitions.json", "--out", &file],
        // Nothing listens there: the plan must not need a broker.
        &[("WARREN_URL", Some("http://guest:guest@127.0.0.1:9"))],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["warren_saved_plan"], 1);
    assert_eq!(saved["origin"], "definitions file examples/shop/before.definitions.json");
    assert_eq!(saved["path"], "examples/shop");
    let files: Vec<&str> = saved["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, ["examples/shop/policies.toml", "examples/shop/topology.toml"]);
    let on_disk = std::fs::read_to_string(crate::common::root().join("examples/shop/topology.toml")).unwrap();
    assert_eq!(saved["files"][1]["text"], on_disk.as_str());
    assert_eq!(saved["live_fingerprint"].as_str().unwrap().len(), 16);
    assert_eq!(saved["plan_fingerprint"].as_str().unwrap().len(), 16);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_plan_saved_for_a_project_named_on_the_command_line_is_applied_as_that_project() {
    let case = Case::new("saved-plan-named-project", &[]);
    case.topology(TOPOLOGY);
    case.save_plan(&[("WARREN_PROJECT", Some("named-once"))]);
    // The saved plan says which project it was made for: apply needs no
    // --project again, and applies as that one.
    let run = case.apply_saved(&[], &[("WARREN_PROJECT", None)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let path = case.topology_path();
    let again = case.warren(&["plan", &path, "--detailed-exitcode"], &[("WARREN_PROJECT", Some("named-once"))]);
    assert_eq!(again.code, 0, "the saved plan was not applied as project named-once:\n{}", again.stdout);
    // Another project named with it is a mismatch, not a silent switch.
    case.save_plan(&[("WARREN_PROJECT", Some("named-once"))]);
    let run = case.apply_saved(&[], &[("WARREN_PROJECT", Some("someone-else"))]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
}
