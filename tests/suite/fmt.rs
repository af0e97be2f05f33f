//! `warren fmt`: the examples are in the canonical layout, `import` writes
//! it, formatting is idempotent and never changes what a file means, and
//! the command rewrites, checks and fails as docs/format.md says.

use std::path::{Path, PathBuf};

use crate::common::{files_dir, realworld, root, walk, warren};
use warren::format::{FileKind, format};

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_example_is_in_the_canonical_layout() {
    let run = warren(&["fmt", "--check", "examples"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
}

/// Each export, with the `--vhost` a single-vhost export needs.
fn exports() -> Vec<(PathBuf, Option<&'static str>)> {
    let mut out: Vec<(PathBuf, Option<&str>)> = Vec::new();
    for dir in ["examples", "tests/definitions"] {
        let mut found: Vec<PathBuf> = Vec::new();
        walk(&root().join(dir), &mut found);
        found.retain(|p| p.extension().is_some_and(|e| e == "json"));
        found.sort();
        out.extend(found.into_iter().map(|p| {
            let vhost = p.ends_with("3.10-vhost-orders.json").then_some("orders");
            (p, vhost)
        }));
    }
    out.extend(realworld().into_iter().map(|p| (p, None)));
    out
}

#[test]
fn what_import_writes_is_in_the_canonical_layout() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (state, vhost)) in exports().iter().enumerate() {
        let out = tmp.path().join(i.to_string());
        let mut args = vec!["import", "--state", path_str(state), "--out", path_str(&out)];
        if let Some(v) = vhost {
            args.extend(["--vhost", v]);
        }
        let run = warren(&args);
        assert_eq!(run.code, 0, "{}:\n{}{}", state.display(), run.stdout, run.stderr);
        let check = warren(&["fmt", "--check", path_str(&out)]);
        assert_eq!(check.code, 0, "{}:\n{}{}", state.display(), check.stdout, check.stderr);
    }
}

/// Every TOML file of the repository's corpora that parses: formatting it
/// twice gives what formatting it once does, and the same TOML value.
#[test]
fn formatting_is_idempotent_and_keeps_the_meaning_of_every_corpus_file() {
    let mut files = Vec::new();
    for dir in ["examples", "tests", "docs"] {
        walk(&root().join(dir), &mut files);
    }
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(before) = toml::from_str::<toml::Table>(&text) else { continue };
        let once = format(&text, FileKind::Topology).unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
        let twice = format(&once, FileKind::Topology).unwrap();
        assert_eq!(twice, once, "{}: not idempotent", file.display());
        let after: toml::Table = toml::from_str(&once).unwrap();
        assert_eq!(after, before, "{}: its meaning changed:\n{once}", file.display());
        checked += 1;
    }
    assert!(checked > 100, "only {checked} files checked");
}

const MESSY: &str = "[queues.'a']\ndurable=false\ntype = \"quorum\"\t# why\n";
const NEAT: &str = "[queues.a]\ntype = \"quorum\" # why\ndurable = false\n";

#[test]
fn fmt_rewrites_the_files_that_change_and_lists_them() {
    let tmp = files_dir(&[("t/a.toml", MESSY), ("t/b.toml", NEAT), ("t/warren.toml", "[project]\nname='x'\n")]);
    std::fs::create_dir_all(tmp.path().join("t/.git")).unwrap();
    std::fs::write(tmp.path().join("t/.git/x.toml"), MESSY).unwrap();
    let dir = tmp.path().join("t");
    let run = warren(&["fmt", path_str(&dir)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let a = dir.join("a.toml");
    let project_file = dir.join("warren.toml");
    assert_eq!(run.stdout, format!("{}\n{}\n", a.display(), project_file.display()));
    assert!(run.stderr.contains("2 of 3 files reformatted."), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), NEAT);
    assert_eq!(std::fs::read_to_string(&project_file).unwrap(), "[project]\nname = \"x\"\n");
    let again = warren(&["fmt", path_str(&dir)]);
    assert_eq!((again.code, again.stdout.as_str()), (0, ""));
}

#[test]
fn check_changes_nothing_shows_a_diff_and_exits_1() {
    let tmp = files_dir(&[("a.toml", MESSY), ("b.toml", NEAT)]);
    let run = warren(&["fmt", "--check", path_str(tmp.path())]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let a = tmp.path().join("a.toml").display().to_string();
    assert!(run.stdout.starts_with(&format!("--- {a}\n+++ {a}\n@@ ")), "{}", run.stdout);
    assert!(run.stdout.contains("-[queues.'a']\n") && run.stdout.contains("+[queues.a]\n"), "{}", run.stdout);
    assert!(run.stderr.contains("1 file is not in the canonical layout"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.toml")).unwrap(), MESSY);
    // A relative path is named as git names it.
    let relative = crate::common::warren_in(tmp.path(), &["fmt", "--check", "a.toml"], &[]);
    assert!(relative.stdout.starts_with("--- a/a.toml\n+++ b/a.toml\n@@ "), "{}", relative.stdout);
    let quiet = warren(&["-q", "fmt", "--check", path_str(tmp.path())]);
    assert_eq!((quiet.code, quiet.stdout), (1, format!("{a}\n")));
}

#[test]
fn a_file_that_is_not_toml_is_an_error_at_its_place_and_nothing_is_written() {
    let tmp = files_dir(&[("a.toml", MESSY), ("b.toml", "vhosts = [\"/\"]\n[queues.a\n")]);
    let run = warren(&["fmt", path_str(tmp.path())]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("b.toml:2:"), "{}", run.stderr);
    assert!(run.stderr.contains("invalid TOML"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.toml")).unwrap(), MESSY);
}

mod properties {
    use proptest::prelude::*;
    use warren::format::{FileKind, format};

    /// A key: known ones, odd ones that need quotes, and unknown ones.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "type",
                "durable",
                "arguments",
                "pattern",
                "source",
                "queue",
                "zz",
                "x-max-length"
            ])
            .prop_map(str::to_string),
            "[a-z.\\- '\"\\\\]{1,8}",
        ]
    }

    /// A value as a user may write it, with odd spacing and comments.
    fn value() -> impl Strategy<Value = String> {
        let string = "[a-z\\\\'\"\n\t .^$]{0,12}".prop_map(|s| format!("{s:?}"));
        let scalar = prop_oneof![
            string.clone(),
            any::<i64>().prop_map(|i| i.to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            Just("1_000".to_string()),
            Just("'^a\\.b$'".to_string()),
            Just("\"\"\"two\nlines\"\"\"".to_string()),
        ];
        let leaf = scalar.clone();
        prop_oneof![
            4 => scalar,
            1 => prop::collection::vec(leaf.clone(), 0..30)
                .prop_map(|items| format!("[ {} ]", items.join(" ,\n  "))),
            1 => (prop::collection::vec(leaf.clone(), 1..4), "[a-z ]{0,6}")
                .prop_map(|(items, c)| format!("[\n  {}, # {c}\n]", items.join(","))),
            1 => prop::collection::btree_map("[a-z-]{1,6}", leaf, 0..4).prop_map(|m| {
                let entries: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{{{}}}", entries.join(" , "))
            }),
        ]
    }

    /// A line of key and value, with a comment before or after it or not.
    fn entry() -> impl Strategy<Value = (String, String)> {
        (key(), value(), "( {0,3}# [a-z ]{0,10}\n)?", "( *# [a-z]{0,6})?", " {0,3}", "\n{1,3}").prop_map(
            |(k, v, before, after, pad, gap)| (k.clone(), format!("{before}{pad}{k:?} ={pad}{v}{after}{gap}")),
        )
    }

    /// A document: some root entries, then tables and [[bindings]] items.
    fn document() -> impl Strategy<Value = String> {
        let table = (
            prop::sample::select(vec!["[queues.\"a.b\"]", "[exchanges.x]", "[[bindings]]", "[policies.'p']", "[zzz]"]),
            prop::collection::vec(entry(), 0..5),
            "(# [a-z]{0,8}\n)?",
            "( *# [a-z]{0,6})?",
        );
        (prop::collection::vec(entry(), 0..4), prop::collection::vec(table, 0..6)).prop_map(|(root, tables)| {
            let mut text = String::new();
            let mut seen = std::collections::BTreeSet::new();
            push_entries(&mut text, &root, &mut seen);
            for (n, (header, entries, before, after)) in tables.into_iter().enumerate() {
                // Tables once each, but [[bindings]] items as often as they come.
                let header = if header.starts_with("[[") || n == 0 { header.to_string() } else { format!("[t{n}]") };
                text.push_str(&format!("{before}{header}{after}\n"));
                push_entries(&mut text, &entries, &mut std::collections::BTreeSet::new());
            }
            text
        })
    }

    fn push_entries(text: &mut String, entries: &[(String, String)], seen: &mut std::collections::BTreeSet<String>) {
        for (k, line) in entries {
            if seen.insert(k.clone()) {
                text.push_str(line);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// fmt(fmt(x)) == fmt(x), and fmt(x) means what x means.
        #[test]
        fn formatting_is_idempotent_and_keeps_the_meaning(text in document()) {
            let Ok(before) = toml::from_str::<toml::Table>(&text) else { return Ok(()) };
            let once = format(&text, FileKind::Topology).unwrap();
            let after: toml::Table = toml::from_str(&once).map_err(|e| TestCaseError::fail(format!("{e}\n{once}")))?;
            prop_assert_eq!(&after, &before, "meaning changed:\n{}\n=>\n{}", text, once);
            let twice = format(&once, FileKind::Topology).unwrap();
            prop_assert_eq!(&twice, &once, "not idempotent:\n{}", text);
            prop_assert!(once.is_empty() || once.ends_with('\n') && !once.ends_with("\n\n"));
            prop_assert!(once.lines().all(|l| l == l.trim_end()));
        }
    }
}

/// Every fenced ```` ```toml ```` block of a markdown text: the line after
/// its fence, its info string, and its text with the fence's indent taken
/// off (a block inside a list is indented).
fn toml_blocks(markdown: &str) -> Vec<(usize, String, String)> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        let mut text = String::new();
        for (_, body) in lines.by_ref() {
            if body.trim_start().starts_with("```") {
                break;
            }
            text.push_str(body.get(indent.min(body.len() - body.trim_start().len())..).unwrap_or(body));
            text.push('\n');
        }
        if info.split_whitespace().next() == Some("toml") {
            blocks.push((n + 2, info.to_string(), text));
        }
    }
    blocks
}

/// A reader copies the docs' TOML into their files, and `fmt --check` in
/// CI would then fail on what the docs taught them: every block that is
/// TOML is in the layout `fmt` writes. A block that is not TOML on its own
/// (a fragment with `...`) is left out.
#[test]
fn the_toml_of_the_docs_is_in_the_canonical_layout() {
    let mut wrong = Vec::new();
    for page in crate::docs_walk::pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        for (line, info, block) in toml_blocks(&text) {
            let kind = if info.contains("warren.toml") {
                FileKind::Project
            } else if info.contains(".test.toml") {
                FileKind::Test
            } else {
                FileKind::Topology
            };
            if let Ok(formatted) = format(&block, kind)
                && formatted != block
            {
                wrong.push(format!("{page}:{line}\n--- as written\n{block}--- as fmt writes it\n{formatted}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} blocks are not in fmt's layout:\n{}", wrong.len(), wrong.join("\n"));
}
