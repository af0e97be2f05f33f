//! The user documentation that is made from the code stays in step with it.

use crate::common::root;

/// Asserts that the file at `file` is `made`, what the code makes of it;
/// with `WARREN_UPDATE_DOCS` set, writes it first.
fn assert_made(file: &str, made: &str) {
    let path = root().join(file);
    if std::env::var_os("WARREN_UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == made,
        "{file} differs from what the code makes: rewrite it with `WARREN_UPDATE_DOCS=1 cargo test --test suite docs::`"
    );
}

#[test]
fn the_command_reference_is_the_command_line_definition() {
    assert_made("docs/commands.md", &warren::cli::reference());
}

#[test]
fn the_json_schemas_are_the_parsers_definitions() {
    for (file, made) in [
        ("docs/schema/topology.schema.json", warren::desired::schema::topology()),
        ("docs/schema/warren.schema.json", warren::desired::schema::project()),
    ] {
        assert_made(file, &(serde_json::to_string_pretty(&made).unwrap() + "\n"));
    }
}

#[test]
fn the_man_page_is_the_command_line_definition() {
    assert_made("docs/man/warren.1", &warren::cli::man_page());
}

#[test]
fn completions_know_every_command_in_every_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let run = crate::common::warren(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for command in ["plan", "apply", "lint", "validate", "diff", "graph", "import", "export"] {
            assert!(run.stdout.contains(command), "{shell} completes {command}");
        }
    }
    let run = crate::common::warren(&["completions", "tcsh"]);
    assert_eq!(run.code, 1, "an unknown shell is a usage error");
}
