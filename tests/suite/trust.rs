//! What a new user meets first must not hurt them: no broker and no
//! project picked for them, a broken project file said once and at its
//! place, and never a credential printed. Offline, through the real binary.

use crate::common::{files_dir, warren_env, warren_in};

/// The variables a user's shell may carry, removed: each test says what it sets.
const CLEAN: [(&str, Option<&str>); 3] = [("WARREN_URL", None), ("WARREN_PROJECT", None), ("WARREN_AMQP_URL", None)];

fn with(env: &[(&'static str, Option<&'static str>)]) -> Vec<(&'static str, Option<&'static str>)> {
    let mut all = CLEAN.to_vec();
    all.extend_from_slice(env);
    all
}

const TOPOLOGY: &str = "vhosts = [\"/\"]\n\n[queues.orders]\n";

#[test]
fn a_plan_against_a_broker_needs_a_project_and_shows_the_file_to_write() {
    let d = files_dir(&[("topology.toml", TOPOLOGY)]);
    // An address nothing listens on: the project is asked for first.
    let run = warren_in(d.path(), &["plan", "."], &with(&[("WARREN_URL", Some("http://u:p@127.0.0.1:9"))]));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no project: plan and apply against a broker act for a project"), "{}", run.stderr);
    assert!(run.stderr.contains("[project]") && run.stderr.contains("name = \"orders\""), "{}", run.stderr);
    for command in [&["apply", ".", "--auto-approve"][..], &["adopt", ".", "--from", "x", "--auto-approve"]] {
        let run = warren_in(d.path(), command, &with(&[("WARREN_URL", Some("http://u:p@127.0.0.1:9"))]));
        assert_eq!(run.code, 1, "{command:?}: {}", run.stderr);
        assert!(run.stderr.contains("no project"), "{command:?}: {}", run.stderr);
    }
    // Offline, the files are all it needs.
    let export = d.path().join("before.json");
    std::fs::write(&export, r#"{"vhosts":[{"name":"/"}]}"#).unwrap();
    let run = warren_in(d.path(), &["plan", ".", "--state", "before.json"], &with(&[]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    for command in ["validate", "lint", "graph"] {
        let run = warren_in(d.path(), &[command, "."], &with(&[]));
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
    }
}

#[test]
fn a_named_project_with_no_broker_given_is_told_how_to_name_one() {
    let d = files_dir(&[("topology.toml", TOPOLOGY)]);
    let run = warren_in(d.path(), &["plan", "."], &with(&[("WARREN_PROJECT", Some("orders"))]));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no broker given: warren has no default broker"), "{}", run.stderr);
    assert!(run.stderr.contains("--url or WARREN_URL"), "{}", run.stderr);
    // Never the machine's own broker.
    assert!(!run.stderr.contains("15672"), "{}", run.stderr);
}

#[test]
fn the_project_named_on_the_command_line_must_agree_with_its_file() {
    let d = files_dir(&[("topology.toml", TOPOLOGY), ("warren.toml", "[project]\nname = \"orders\"\n")]);
    let env = with(&[("WARREN_URL", Some("http://u:p@127.0.0.1:9"))]);
    let run = warren_in(d.path(), &["plan", ".", "--project", "billing"], &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("names project \"orders\", but --project or WARREN_PROJECT says \"billing\""));
}

const ENVIRONMENTS: &str = "[project]\nname = \"orders\"\n\n[environments.staging]\nurl_env = \"ORDERS_STAGING_URL\"\n\n[environments.prod]\nurl_env = \"ORDERS_PROD_URL\"\n";

#[test]
fn a_project_with_environments_names_one_even_when_warren_url_is_set() {
    let d = files_dir(&[("topology.toml", TOPOLOGY), ("warren.toml", ENVIRONMENTS)]);
    let env = with(&[("WARREN_URL", Some("http://u:p@127.0.0.1:9"))]);
    for command in [&["plan", "."][..], &["apply", ".", "--auto-approve"], &["lint", ".", "--live"]] {
        let run = warren_in(d.path(), command, &env);
        assert_eq!(run.code, 1, "{command:?}: {}", run.stderr);
        assert!(run.stderr.contains("this project has environments (prod, staging)"), "{command:?}: {}", run.stderr);
        assert!(!run.stderr.contains("127.0.0.1:9"), "the base was not planned against WARREN_URL: {}", run.stderr);
    }
    // A default environment is the one used, and said.
    std::fs::write(
        d.path().join("warren.toml"),
        ENVIRONMENTS.replace("\"orders\"\n", "\"orders\"\ndefault_env = \"staging\"\n"),
    )
    .unwrap();
    let run = warren_in(d.path(), &["plan", "."], &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("Environment \"staging\" (default_env in warren.toml)"), "{}", run.stderr);
    assert!(format!("{}{}", run.stdout, run.stderr).contains("$ORDERS_STAGING_URL is not set"), "{}", run.stderr);
}

#[test]
fn a_typo_in_the_project_file_is_one_error_at_its_place() {
    let project = "[environments.staging]\nurl_env = \"S\"\noverlays = [\"overlays/staging\"]\n\n[deploy]\nstagez = [[\"staging\"]]\n";
    let overlay = "rename_vhosts = { \"/\" = \"staging\" }\n";
    let d = files_dir(&[("topology.toml", TOPOLOGY), ("warren.toml", project), ("overlays/staging/o.toml", overlay)]);
    for args in [&["validate", "."][..], &["validate", ".", "--env", "staging"], &["plan", ".", "--env", "staging"]] {
        let run = warren_in(d.path(), args, &with(&[]));
        assert_eq!(run.code, 1, "{args:?}");
        assert_eq!(run.stderr.matches("warren::").count(), 1, "{args:?}: one diagnostic:\n{}", run.stderr);
        assert!(run.stderr.contains("unknown key `stagez` in the project file"), "{}", run.stderr);
        assert!(run.stderr.contains("warren.toml:6:1"), "{}", run.stderr);
        assert!(run.stderr.contains("did you mean `stages`?"), "{}", run.stderr);
        assert!(!run.stderr.contains("rename_vhosts"), "the overlay was not read as a base file:\n{}", run.stderr);
    }
}

#[test]
fn a_url_where_a_variable_belongs_fails_its_environment_alone_and_never_shows_the_password() {
    let project = "[project]\nname = \"orders\"\n\n[environments.staging]\nurl_env = \"http://guest:s3cret@127.0.0.1:15732\"\n\n[environments.prod]\nurl_env = \"ORDERS_PROD_URL\"\n";
    let d = files_dir(&[("topology.toml", TOPOLOGY), ("warren.toml", project)]);
    let run = warren_in(d.path(), &["validate", ".", "--env", "prod"], &with(&[]));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for args in [&["validate", ".", "--env", "staging"][..], &["validate", "."], &["plan", ".", "--env", "all"]] {
        let run = warren_in(d.path(), args, &with(&[]));
        assert_eq!(run.code, 1, "{args:?}");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains("s3cret"), "{args:?} printed the password:\n{all}");
        assert!(all.contains("environment \"staging\" gives a URL where the name of a variable"), "{args:?}: {all}");
        assert!(all.contains("warren.toml:5:11"), "{args:?}: at its place: {all}");
    }
    // prod was planned on its own: it fails only for its own unset variable.
    let run = warren_in(d.path(), &["plan", ".", "--env", "all"], &with(&[]));
    assert!(run.stdout.contains("$ORDERS_PROD_URL is not set") || run.stderr.contains("$ORDERS_PROD_URL is not set"));
}

#[test]
fn the_default_url_is_gone_from_the_help() {
    let run = warren_env(&["plan", "--help"], &with(&[]));
    assert!(!run.stdout.contains("15672"), "{}", run.stdout);
}
