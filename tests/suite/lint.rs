//! `warren lint` through the real binary: the rule corpus (`tests/lint`, a
//! file that triggers each rule at the lines it marks, and one that does
//! not), the project's `[lint]` levels and objects' `lint_allow`, and the
//! rules page and README agreeing with the rules warren has.

use std::collections::BTreeSet;

use crate::common::{corpus, root, warren};

/// Findings as `(code, line)`.
type Places = BTreeSet<(String, usize)>;

/// Every finding a lint shows, those it allows, and its exit code.
fn findings(path: &str, extra: &[&str]) -> (Places, Places, i32) {
    let mut args = vec!["lint", path, "--format", "json"];
    args.extend_from_slice(extra);
    let run = warren(&args);
    assert!(!run.stderr.contains("panicked"), "{path}: {}", run.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{path}: {e}\n{}", run.stdout));
    let (mut shown, mut allowed) = (BTreeSet::new(), BTreeSet::new());
    for f in doc["findings"].as_array().unwrap() {
        let at = (f["code"].as_str().unwrap().to_string(), f["line"].as_u64().unwrap_or(0) as usize);
        if f["allowed"].is_null() {
            shown.insert(at)
        } else {
            allowed.insert(at)
        };
    }
    (shown, allowed, run.code)
}

/// The lines a corpus file marks with `# expect: CODE`.
fn marked(path: &str) -> BTreeSet<(String, usize)> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| Some((l.split("# expect: ").nth(1)?.trim().to_string(), i + 1)))
        .collect()
}

/// The rules as `lint --rules --format json` lists them: (code, reads).
fn rules() -> Vec<(String, String)> {
    let run = warren(&["lint", "--rules", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["code"].as_str().unwrap().to_string(), r["reads"].as_str().unwrap().to_string()))
        .collect()
}

/// A corpus file's rule and variant: `CODE.toml` and `CODE.ok.toml` are a
/// rule's own pair; `CODE.VARIANT.toml` and `CODE.VARIANT.ok.toml` a variant
/// of it (the routing rules have one per exchange type: `fanout`, `topic`,
/// `headers`). Codes have no dots, so the name before the first is the rule.
fn named(file: &str) -> (String, Option<String>, bool) {
    let stem = file.trim_start_matches("tests/lint/").trim_end_matches(".toml");
    let (stem, ok) = match stem.strip_suffix(".ok") {
        Some(s) => (s, true),
        None => (stem, false),
    };
    match stem.split_once('.') {
        Some((code, variant)) => (code.to_string(), Some(variant.to_string()), ok),
        None => (stem.to_string(), None, ok),
    }
}

#[test]
fn each_rule_fires_at_the_lines_its_file_marks_and_not_on_its_fixed_file() {
    let files = corpus("tests/lint");
    let rules = rules();
    for (code, reads) in &rules {
        if reads == "broker" {
            continue;
        }
        let bad = format!("tests/lint/{code}.toml");
        let good = format!("tests/lint/{code}.ok.toml");
        assert!(files.contains(&bad) && files.contains(&good), "rule {code} has no {bad} and {good}");
    }
    for f in &files {
        let (code, variant, ok) = named(f);
        assert!(rules.iter().any(|(c, _)| *c == code), "{f} is named after no rule");
        if ok {
            let (shown, _, code_exit) = findings(f, &[]);
            assert!(shown.is_empty(), "{f} should have no finding: {shown:?}");
            assert_eq!(code_exit, 0, "{f}");
            continue;
        }
        if let Some(v) = &variant {
            let good = format!("tests/lint/{code}.{v}.ok.toml");
            assert!(files.contains(&good), "{f} has no fixed file {good}");
        }
        let expected = marked(f);
        assert!(expected.iter().any(|(c, _)| *c == code), "{f} marks no line with `# expect: {code}`");
        let (shown, _, _) = findings(f, &[]);
        assert_eq!(shown, expected, "{f}");
    }
}

#[test]
fn warnings_exit_0_and_deny_warnings_makes_them_errors() {
    let run = warren(&["lint", "tests/lint/guest-user.toml"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("warren::guest-user"), "{}", run.stdout);
    assert!(run.stdout.ends_with("lint: 0 error(s), 2 warning(s), 0 info(s), 0 allowed.\n"), "{}", run.stdout);
    let run = warren(&["lint", "tests/lint/guest-user.toml", "--deny", "warnings"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.ends_with("lint: 2 error(s), 0 warning(s), 0 info(s), 0 allowed.\n"), "{}", run.stdout);
}

#[test]
fn the_project_raises_lowers_and_silences_rules_and_objects_allow_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("warren.toml"),
        "[project]\nname = \"shop\"\n\n[lint]\nguest-user = \"error\"\nunroutable-exchange = \"off\"\nstream-unbounded = \"info\"\nno-such-rule = \"off\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("shop.toml"),
        "vhosts = [\"shop\"]\n\n[exchanges.orders]\ntype = \"topic\"\n\n[queues.events]\ntype = \"stream\"\n\n[queues.cache]\ntype = \"classic\"\ndurable = false\nlint_allow = [\"transient-queue\", \"transient-queues\"]\n\n[users.guest]\npassword_env = \"GUEST_PASSWORD\"\n",
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    let run = warren(&["lint", path, "--format", "json"]);
    assert_eq!(run.code, 1, "guest-user is an error here:\n{}", run.stdout);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let by_code = |code: &str| -> Vec<&serde_json::Value> {
        doc["findings"].as_array().unwrap().iter().filter(|f| f["code"] == code).collect()
    };
    assert_eq!(by_code("guest-user")[0]["severity"], "error");
    assert_eq!(by_code("stream-unbounded")[0]["severity"], "info");
    // Off and allowed findings stay visible, with where the exception is.
    let off = by_code("unroutable-exchange");
    assert_eq!(off[0]["allowed"]["file"], format!("{path}/warren.toml"), "{off:?}");
    assert_eq!(off[0]["allowed"]["line"], 6);
    let allowed = by_code("transient-queue");
    assert_eq!(allowed[0]["allowed"]["file"], format!("{path}/shop.toml"), "{allowed:?}");
    assert_eq!(allowed[0]["allowed"]["line"], 12);
    // Codes that name no rule are said, with the closest one.
    let unknown = by_code("lint-config");
    assert_eq!(unknown.len(), 2, "{unknown:?}");
    assert!(
        unknown.iter().any(|f| f["help"].as_str().unwrap().contains("did you mean \"transient-queue\"")),
        "{unknown:?}"
    );
    assert_eq!(doc["summary"]["allowed"], 2);
    // validate and plan show the same levels.
    let run = warren(&["validate", path]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("guest-user") && !run.stderr.contains("unroutable-exchange"), "{}", run.stderr);
    assert!(!run.stderr.contains("warren::transient-queue"), "{}", run.stderr);
}

#[test]
fn a_bad_level_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("warren.toml"), "[lint]\nguest-user = \"loud\"\n").unwrap();
    std::fs::write(dir.path().join("shop.toml"), "vhosts = [\"shop\"]\n").unwrap();
    let run = warren(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("\"loud\" is not a lint level"), "{}", run.stderr);
    assert!(run.stderr.contains("warren.toml:2:14"), "{}", run.stderr);
}

#[test]
fn the_rules_page_lists_every_rule() {
    let page = std::fs::read_to_string(root().join("docs/lint.md")).unwrap();
    let headed: BTreeSet<String> =
        page.lines().filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`').map(str::to_string)).collect();
    let codes: BTreeSet<String> = rules().into_iter().map(|(c, _)| c).collect();
    assert_eq!(headed, codes, "docs/lint.md has a `### `code`` section per rule");
}

#[test]
fn examples_and_the_default_topology_lint_cleanly() {
    let mut paths = crate::common::examples();
    paths.push("topology".into());
    for path in paths {
        let (shown, _, code) = findings(&path, &[]);
        assert_eq!(code, 0, "{path}");
        assert!(shown.is_empty(), "{path}: {shown:?}");
    }
}

#[test]
fn an_environment_shows_the_findings_its_overlays_add_at_the_overlays_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("warren.toml"),
        "[environments.dev]\nurl_env = \"DEV_URL\"\noverlays = [\"overlays/dev\"]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("shop.toml"), "vhosts = [\"shop\"]\n\n[queues.cache]\ntype = \"classic\"\n")
        .unwrap();
    std::fs::create_dir_all(dir.path().join("overlays/dev")).unwrap();
    std::fs::write(dir.path().join("overlays/dev/dev.toml"), "vhosts = [\"shop\"]\n[queues.cache]\ndurable = false\n")
        .unwrap();
    let path = dir.path().to_str().unwrap();
    let run = warren(&["lint", path, "--env", "all", "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["environment"], "dev");
    assert_eq!(findings[0]["code"], "transient-queue");
    assert_eq!(findings[0]["file"], format!("{path}/overlays/dev/dev.toml"));
    assert_eq!(findings[0]["line"], 3);
}

/// Real-world exports, imported: lint finds no error in what RabbitMQ
/// accepted, and what it finds of each rule is a handful, not one per
/// object (reviewed for issue 16; see docs/lint.md).
#[test]
fn imported_real_world_exports_lint_without_errors_or_floods() {
    // The exports of tests/definitions (which `corpus` leaves out: it
    // lists topology files), then the real-world ones.
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(root().join("tests/definitions"))
        .expect("tests/definitions exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "the exports are read: {files:?}");
    files.extend(crate::common::realworld());
    for file in files {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("imported");
        let run = warren(&["import", "--state", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        if run.code != 0 {
            // A single-vhost export of 3.10 names no vhost: import says so.
            assert!(run.stderr.contains("vhost"), "{}: {}", file.display(), run.stderr);
            continue;
        }
        let run = warren(&["lint", out.to_str().unwrap(), "--format", "json"]);
        assert_eq!(run.code, 0, "{}: {}", file.display(), run.stdout);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let mut per_code: std::collections::BTreeMap<String, usize> = Default::default();
        for f in doc["findings"].as_array().unwrap() {
            *per_code.entry(f["code"].as_str().unwrap().to_string()).or_default() += 1;
        }
        for (code, n) in per_code {
            assert!(n <= 30, "{}: {n} findings of {code}", file.display());
        }
    }
}
