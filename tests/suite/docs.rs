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

/// The part of docs/format.md on the object kinds is made from the kinds:
/// a new kind's file documents it.
#[test]
fn the_format_sections_on_object_kinds_are_the_kinds() {
    let (file, begin, end) = ("docs/format.md", "<!-- object kinds: made from", "<!-- object kinds: end -->");
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let start = text.find(begin).expect("docs/format.md marks where the kinds begin");
    let start = start + text[start..].find('\n').unwrap() + 1;
    let stop = text.find(end).expect("docs/format.md marks where the kinds end");
    let made = format!("{}{}\n{}", &text[..start], warren::desired::kinds::reference().trim_start(), &text[stop..]);
    assert_made(file, &made);
    // Operator policies keep their hand-written section (desired::kinds::documented_apart).
    for k in warren::model::kinds::KINDS.iter().filter(|k| !warren::desired::kinds::documented_apart(k)) {
        let section = made.split(&format!("### `{}`\n", k.table)).nth(1).expect("each kind has its section");
        for a in k.attributes {
            assert!(section.contains(&format!("\n| `{}` |", a.name)), "{}.{} is not documented", k.table, a.name);
        }
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
        for command in ["plan", "apply", "lint", "validate", "diff", "graph", "import", "export", "route"] {
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

/// What bash's completion of `warren` offers for the command line `words`,
/// completing its last word, run in `dir`: the script `warren completions
/// bash` writes, sourced, and its function called as bash calls it.
fn bash_completes(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    bash_completes_at(dir, words, words.len() - 1)
}

/// [`bash_completes`], completing word `at` of `words`.
fn bash_completes_at(dir: &std::path::Path, words: &[&str], at: usize) -> Vec<String> {
    let script = crate::common::warren(&["completions", "bash"]);
    assert_eq!(script.code, 0, "{}", script.stderr);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &script.stdout).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("warren");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = at + 1; // the binary is word 0
    let prev = if at >= 1 { words[at - 1] } else { "" };
    let cur = words[at];
    let line = format!(
        "source '{}'; COMP_WORDS=('{}' {}); COMP_CWORD={cword}; _warren \"${{COMP_WORDS[0]}}\" '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.path().display(),
        bin.display(),
        quoted.join(" ")
    );
    let out = std::process::Command::new("bash").arg("-c").arg(&line).current_dir(dir).output().expect("bash runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut offered: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_env_with_the_environments_of_the_project() {
    // Seen: `--env <TAB>` offered file names.
    let root = crate::common::root();
    let envs = ["all", "prod", "staging"];
    for command in ["plan", "apply", "destroy", "status", "history", "lint", "validate", "diff", "export"] {
        let offered = bash_completes(&root, &[command, "examples/environments", "--env", ""]);
        assert_eq!(offered, envs, "warren {command} examples/environments --env <TAB>");
    }
    assert_eq!(bash_completes(&root, &["plan", "examples/environments", "--env", "st"]), ["staging"]);
    // The directory may come after the option, as the command takes it.
    assert_eq!(bash_completes_at(&root, &["diff", "--env", "prod", "--env", "", "examples/environments"], 4), envs);
    // In the project's own directory.
    assert_eq!(bash_completes(&root.join("examples/environments"), &["plan", "--env", ""]), envs);
    // Without a project, nothing: never the names of files.
    assert_eq!(bash_completes(&root.join("docs"), &["plan", "--env", ""]), Vec::<String>::new());
}

#[test]
fn zsh_and_fish_complete_env_with_the_environments_of_the_project() {
    // Neither shell is installed here: the scripts ask warren, as bash's does.
    let zsh = crate::common::warren(&["completions", "zsh"]).stdout;
    assert!(!zsh.contains(":ENV:_default"), "{zsh}");
    assert_eq!(zsh.matches(":ENV:_warren_envs'").count(), 11, "{zsh}");
    assert!(zsh.contains("_warren_envs() {") && zsh.contains("__complete-envs"), "{zsh}");
    let fish = crate::common::warren(&["completions", "fish"]).stdout;
    let env_lines: Vec<&str> = fish.lines().filter(|l| l.contains(" -l env ")).collect();
    assert_eq!(env_lines.len(), 11, "{fish}");
    assert!(env_lines.iter().all(|l| l.ends_with(" -r -f -a \"(__fish_warren_envs)\"")), "{fish}");
    assert!(fish.contains("function __fish_warren_envs") && fish.contains("__complete-envs"), "{fish}");
    // What they ask: the environments, one a line, `all` first.
    let asked = |args: &[&str]| {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("warren"))
            .args(args)
            .current_dir(crate::common::root())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    assert_eq!(asked(&["__complete-envs", "examples/environments"]), (Some(0), "all\nprod\nstaging\n".into()));
    assert_eq!(asked(&["__complete-envs", "docs"]), (Some(0), String::new()));
    // No shell offers the question itself.
    for shell in ["bash", "zsh", "fish"] {
        let script = crate::common::warren(&["completions", shell]).stdout;
        assert_eq!(script.matches("__complete-envs").count(), 1, "{shell}: only where its function asks it");
    }
}

#[test]
fn fish_completes_env_with_the_environments_of_the_project_where_fish_is_installed() {
    if std::process::Command::new("fish").arg("--version").output().is_err() {
        eprintln!("fish is not installed: its completion of --env is checked in its script only");
        return;
    }
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), crate::common::warren(&["completions", "fish"]).stdout).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("warren");
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let completes = |line: &str| {
        let out = std::process::Command::new("fish")
            .arg("-c")
            .arg(format!("source '{}'; complete -C '{line}'", script.path().display()))
            .env("PATH", &path)
            .current_dir(crate::common::root())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(|l| l.split('\t').next().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(completes("warren plan examples/environments --env "), ["all", "prod", "staging"]);
    assert_eq!(completes("warren history examples/environments --env st"), ["staging"]);
}

#[test]
fn the_man_page_is_one_page_with_every_command_its_exit_status_and_environment() {
    let man = warren::cli::man_page();
    // Seen: it listed warren-plan(1) and others, pages that do not exist.
    assert!(!man.contains("(1)"), "no other page is referred to:\n{man}");
    let sections: Vec<&str> = man.lines().filter(|l| l.starts_with(".SH ")).collect();
    assert_eq!(
        sections,
        [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH DESCRIPTION",
            ".SH OPTIONS",
            ".SH COMMANDS",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH VERSION"
        ]
    );
    let section = |name: &str| {
        let start = man.find(&format!(".SH {name}\n")).unwrap();
        let rest = &man[start + 4..];
        &rest[..rest.find("\n.SH ").unwrap_or(rest.len())]
    };
    let commands = section("COMMANDS");
    for command in [
        "plan",
        "apply",
        "status",
        "history",
        "abort",
        "adopt",
        "lint",
        "graph",
        "completions",
        "validate",
        "diff",
        "export",
        "import",
    ] {
        assert!(commands.contains(&format!(".SS \"warren {command}\"\n")), "{command}:\n{commands}");
    }
    assert!(!commands.contains("warren help"), "{commands}");
    // Each command's own options, once each; the global ones are at the top only.
    for option in ["\\-\\-allow\\-destroy", "\\-\\-detailed\\-exitcode", "\\-\\-drain\\-timeout", "\\-\\-rules"] {
        assert!(commands.contains(option), "{option}");
    }
    assert!(!commands.contains("\\-\\-amqp\\-url") && section("OPTIONS").contains("\\-\\-amqp\\-url"));
    assert_eq!(man.matches(".ie \\n(.g .ds Aq").count(), 1, "one preamble");

    let exit = section("\"EXIT STATUS\"");
    for (code, words) in
        [(0, "Success"), (1, "error"), (2, "detailed\\-exitcode"), (3, "paused"), (4, "Refused"), (5, "lock")]
    {
        let entry = exit.split(".TP\n").find(|e| e.starts_with(&format!("\\fB{code}\\fR\n")));
        assert!(entry.is_some_and(|e| e.contains(words)), "exit {code}:\n{exit}");
    }
    let environment = section("ENVIRONMENT");
    for variable in [
        "WARREN_URL",
        "WARREN_AMQP_URL",
        "WARREN_CA_CERT",
        "WARREN_CLIENT_CERT",
        "WARREN_CLIENT_KEY",
        "WARREN_PROJECT",
        "NO_COLOR",
        "GITHUB_STEP_SUMMARY",
    ] {
        assert!(environment.contains(&format!(".TP\n\\fB{variable}\\fR\n")), "{variable}:\n{environment}");
    }
}

#[test]
fn warren_help_says_the_exit_statuses_and_the_environment() {
    let run = crate::common::warren(&["--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("Exit status:\n"), "{}", run.stdout);
    assert!(run.stdout.contains("  5  "), "{}", run.stdout);
    assert!(run.stdout.contains("Environment:\n"), "{}", run.stdout);
    assert!(run.stdout.contains("  WARREN_PROJECT  "), "{}", run.stdout);
}
