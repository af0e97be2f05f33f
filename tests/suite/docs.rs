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

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and
/// `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown page's headings (outside code blocks), with
/// GitHub's `-1`, `-2` for repeated ones.
fn anchors(markdown: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut out = std::collections::BTreeSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let base = anchor(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_default();
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

#[test]
fn every_link_of_the_readme_and_the_docs_reaches_its_page_and_heading() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for page in crate::docs_walk::pages() {
        let path = root().join(&page);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut in_code = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            for target in link.captures_iter(line).map(|c| c[1].to_string()) {
                if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
                let linked = if file.is_empty() { path.clone() } else { path.parent().unwrap().join(file) };
                if !linked.exists() {
                    broken.push(format!("{page}:{}: {target}: no such file", n + 1));
                } else if !fragment.is_empty() {
                    let there = std::fs::read_to_string(&linked).unwrap_or_default();
                    if !anchors(&there).contains(fragment) {
                        broken.push(format!("{page}:{}: {target}: no such heading", n + 1));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_short_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines: at most 200, the rest belongs in docs/");
}
