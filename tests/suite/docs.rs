//! The user documentation that is made from the code stays in step with it.

use crate::common::root;

#[test]
fn the_command_reference_is_the_command_line_definition() {
    let path = root().join("docs/commands.md");
    let made = warren::cli::reference();
    if std::env::var_os("WARREN_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == made,
        "docs/commands.md differs from the command line: rewrite it with `WARREN_UPDATE_DOCS=1 cargo test --test suite docs::`"
    );
}

#[test]
fn the_json_schemas_are_the_parsers_definitions() {
    for (file, made) in [
        ("docs/schema/topology.schema.json", warren::desired::schema::topology()),
        ("docs/schema/warren.schema.json", warren::desired::schema::project()),
    ] {
        let path = root().join(file);
        let made = serde_json::to_string_pretty(&made).unwrap() + "\n";
        if std::env::var_os("WARREN_UPDATE_DOCS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &made).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == made,
            "{file} differs from the parser: rewrite it with `WARREN_UPDATE_DOCS=1 cargo test --test suite docs::`"
        );
    }
}

#[test]
fn the_man_page_is_the_command_line_definition() {
    let path = root().join("docs/man/warren.1");
    let made = warren::cli::man_page();
    if std::env::var_os("WARREN_UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &made).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == made,
        "docs/man/warren.1 differs: rewrite it with `WARREN_UPDATE_DOCS=1 cargo test --test suite docs::`"
    );
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
