//! The CI formats of `validate` and `lint` through the real binary, on the
//! broken-file corpus: GitHub annotations at each diagnostic's place with
//! its code, the step summary, and GitLab's code quality report.

use std::collections::BTreeSet;

use crate::common::{corpus, warren, warren_env};

/// (file, line, column, code) of each diagnostic `validate --format json`
/// reports: what the other formats must carry.
fn places(entry: &str) -> BTreeSet<(String, u64, u64, String)> {
    let run = warren(&["validate", entry, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{entry}: {e}"));
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["file"].as_str().unwrap_or_default().to_string(),
                f["line"].as_u64().unwrap_or(0),
                f["column"].as_u64().unwrap_or(0),
                f["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The `key=value` properties of a workflow command line.
fn properties(line: &str) -> (String, Vec<(String, String)>, String) {
    let rest = line.strip_prefix("::").expect("a workflow command");
    let (head, message) = rest.split_once("::").expect("command::message");
    let (command, props) = head.split_once(' ').unwrap_or((head, ""));
    let props = props
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').expect("key=value");
            (k.to_string(), v.replace("%3A", ":").replace("%2C", ",").replace("%25", "%"))
        })
        .collect();
    (command.to_string(), props, message.to_string())
}

#[test]
fn each_broken_file_gets_one_annotation_per_diagnostic_at_its_place_errors_first() {
    for entry in corpus("tests/invalid") {
        let summary = tempfile::NamedTempFile::new().unwrap();
        let run = warren_env(
            &["validate", &entry, "--format", "github"],
            &[("GITHUB_STEP_SUMMARY", Some(summary.path().to_str().unwrap()))],
        );
        assert_eq!(run.code, 1, "{entry}: {}", run.stderr);
        let mut seen = BTreeSet::new();
        let mut errors_done = false;
        for line in run.stdout.lines() {
            let (command, props, message) = properties(line);
            assert!(!message.contains('\n'), "{entry}: one line per annotation");
            match command.as_str() {
                "error" => assert!(!errors_done, "{entry}: errors come first:\n{}", run.stdout),
                "warning" | "notice" => errors_done = true,
                other => panic!("{entry}: {other}"),
            }
            let get = |k: &str| props.iter().find(|(p, _)| p == k).map(|(_, v)| v.clone());
            let code = get("title").unwrap().strip_prefix("warren ").unwrap().to_string();
            let num = |k: &str| get(k).map_or(0, |v| v.parse().unwrap());
            seen.insert((get("file").unwrap_or_default(), num("line"), num("col"), code));
        }
        assert_eq!(seen, places(&entry), "{entry}:\n{}", run.stdout);
        let text = std::fs::read_to_string(summary.path()).unwrap();
        assert!(text.starts_with(&format!("### warren validate {entry}\n")), "{text}");
        for (_, _, _, code) in &seen {
            assert!(text.contains(&format!("`{code}`")), "{entry}: the summary lists {code}:\n{text}");
        }
    }
}

#[test]
fn the_gitlab_report_has_every_diagnostic_with_a_fingerprint_that_stays() {
    for entry in corpus("tests/invalid") {
        let run = warren(&["validate", &entry, "--format", "gitlab"]);
        assert_eq!(run.code, 1, "{entry}");
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let items = report.as_array().unwrap();
        assert_eq!(items.len(), places(&entry).len(), "{entry}: {}", run.stdout);
        let mut prints = BTreeSet::new();
        for i in items {
            for key in ["description", "check_name", "fingerprint", "severity"] {
                assert!(i[key].is_string(), "{entry}: {key} in {i}");
            }
            assert!(["info", "minor", "major", "critical", "blocker"].contains(&i["severity"].as_str().unwrap()));
            assert!(i["location"]["path"].is_string() && i["location"]["lines"]["begin"].is_u64(), "{i}");
            prints.insert(i["fingerprint"].as_str().unwrap().to_string());
        }
        assert_eq!(prints.len(), items.len(), "{entry}: one fingerprint per finding");
        assert_eq!(warren(&["validate", &entry, "--format", "gitlab"]).stdout, run.stdout, "{entry}: stable");
    }
}

#[test]
fn lint_annotates_its_findings_and_a_clean_run_annotates_nothing() {
    let run = warren(&["lint", "tests/lint/guest-user.toml", "--format", "github"]);
    assert_eq!(run.code, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(lines[0].starts_with("::warning file=tests/lint/guest-user.toml,line=3,col="), "{}", lines[0]);
    assert!(lines[0].contains(",title=warren guest-user::"), "{}", lines[0]);
    let run = warren(&["lint", "tests/lint/guest-user.ok.toml", "--format", "github"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[test]
fn a_plan_for_github_annotates_its_diagnostics_and_puts_the_comment_in_the_step_summary() {
    let summary = tempfile::NamedTempFile::new().unwrap();
    let env = [("GITHUB_STEP_SUMMARY", Some(summary.path().to_str().unwrap()))];
    let run =
        warren_env(&["diff", "tests/diff/advice/before", "tests/diff/advice/replaced", "--format", "github"], &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (annotations, plan): (Vec<&str>, Vec<&str>) = run.stdout.lines().partition(|l| l.starts_with("::"));
    assert!(!annotations.is_empty(), "the migration's warnings: {}", run.stdout);
    assert!(annotations.iter().all(|a| a.starts_with("::warning file=tests/diff/advice/replaced/topology.toml,line=")));
    assert!(run.stdout.starts_with(annotations[0]), "annotations first");
    assert_eq!(plan.last(), Some(&"Plan: 0 to add, 0 to change, 0 to destroy, 1 to migrate."), "{}", run.stdout);
    let text = std::fs::read_to_string(summary.path()).unwrap();
    assert!(text.starts_with("<!-- warren:diff project=default -->\n"), "{text}");

    let run =
        warren(&["diff", "tests/diff/advice/before", "tests/invalid/16-exchange-type-topc.toml", "--format", "github"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.starts_with("::error file=tests/invalid/16-exchange-type-topc.toml,line="), "{}", run.stdout);
}

#[test]
fn the_ci_examples_script_annotates_summarises_and_writes_the_comment() {
    let v1 = "vhosts = [\"shop\"]\n\n[exchanges.orders]\ntype = \"topic\"\n\n[queues.billing]\ntype = \"classic\"\n\n[[bindings]]\nsource = \"orders\"\nqueue = \"billing\"\nrouting_key = \"order.#\"\n";
    let repo = crate::common::repository(&[("topology/shop.toml", v1)]);
    let dir = repo.path();
    // The pull request: a quorum queue with no dead-letter exchange.
    let v2 = format!(
        "{v1}\n[queues.audit]\ntype = \"quorum\"\n\n[[bindings]]\nsource = \"orders\"\nqueue = \"audit\"\nrouting_key = \"order.#\"\n"
    );
    std::fs::write(dir.join("topology/shop.toml"), v2).unwrap();

    let (summary, output) = (dir.join("summary.md"), dir.join("output.txt"));
    let bin = assert_cmd::cargo::cargo_bin("warren");
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new(crate::common::root().join("examples/ci/check.sh"))
        .arg("topology")
        .current_dir(dir)
        .env("PATH", path)
        .env("WARREN_BASE_REF", "main")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .env_remove("WARREN_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let annotations: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(annotations.len(), 1, "each finding annotated once: {stdout}");
    assert!(annotations[0].starts_with("::warning file=topology/shop.toml,line=14,"), "{stdout}");
    assert!(annotations[0].contains("title=warren quorum-without-dlx::"), "{stdout}");
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.starts_with("### warren lint topology\n"), "{summary}");
    assert!(summary.contains("`quorum-without-dlx`"), "{summary}");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "comment=warren-comment.md\n");
    let comment = std::fs::read_to_string(dir.join("warren-comment.md")).unwrap();
    assert!(
        comment.starts_with("<!-- warren:diff project=default -->\n### warren diff `main:topology` → `topology`"),
        "{comment}"
    );
    assert!(comment.contains("**Plan: 2 to add, 0 to change, 0 to destroy, 0 to migrate.**"), "{comment}");
}

#[test]
fn sarif_of_every_broken_file_is_valid_sarif_with_stable_rules_and_fingerprints() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::common::root().join("tests/fixtures/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    assert!(!validator.is_valid(&serde_json::json!({"version": "2.0", "runs": []})), "the check can fail");
    let mut entries = corpus("tests/invalid");
    entries.push("tests/lint/shared-queue.toml".into());
    for entry in entries {
        let command = if entry.starts_with("tests/lint") { "lint" } else { "validate" };
        let run = warren(&[command, &entry, "--format", "sarif"]);
        let log: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{entry}: {e}"));
        let errors: Vec<String> =
            validator.iter_errors(&log).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{entry}: not valid SARIF 2.1.0: {errors:#?}");
        let run0 = &log["runs"][0];
        let results = run0["results"].as_array().unwrap();
        // One result per finding the same command's JSON lists.
        let json: serde_json::Value =
            serde_json::from_str(&warren(&[command, &entry, "--format", "json"]).stdout).unwrap();
        assert_eq!(results.len(), json["findings"].as_array().unwrap().len(), "{entry}");
        for r in results {
            let i = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(run0["tool"]["driver"]["rules"][i]["id"], r["ruleId"], "{entry}");
        }
        assert_eq!(warren(&[command, &entry, "--format", "sarif"]).stdout, run.stdout, "{entry}: the same each run");
    }
}
