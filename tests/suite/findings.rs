//! Findings beside a command's main output (issue 27, item 8): repeated
//! findings of one code are drawn three times, then said in one line that
//! points at `warren lint`, which lists them all; the machine formats draw
//! none on stderr, their document holds them. `validate` draws its errors
//! and counts the lint's warnings (item 7).

use crate::common::{codes_in, flat, warren};

/// `n` queues that dead-letter to `dlx`, a direct exchange with no binding:
/// `n` `dlx-unroutable` warnings, and one `unroutable-exchange` for `dlx`.
fn unroutable(n: usize) -> tempfile::TempDir {
    let mut text = String::from(
        "vhosts = [\"bench\"]\n\n[exchanges.in]\ntype = \"direct\"\n\n[exchanges.dlx]\ntype = \"direct\"\n",
    );
    for i in 0..n {
        text += &format!(
            "\n[queues.\"q{i:02}\"]\ntype = \"classic\"\narguments = {{ x-dead-letter-exchange = \"dlx\" }}\n\n\
             [[bindings]]\nsource = \"in\"\nqueue = \"q{i:02}\"\nrouting_key = \"k{i}\"\n"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("topology")).unwrap();
    std::fs::write(dir.path().join("topology/bench.toml"), text).unwrap();
    std::fs::write(dir.path().join("empty.json"), "{}").unwrap();
    dir
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_string()
}

fn count(codes: &[String], code: &str) -> usize {
    codes.iter().filter(|c| *c == code).count()
}

#[test]
fn a_plan_draws_three_of_fifty_identical_warnings_and_says_the_rest_in_one_line() {
    let dir = unroutable(50);
    let topology = path(&dir, "topology");
    let run = warren(&["plan", &topology, "--state", &path(&dir, "empty.json")]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let codes = codes_in(&run.stderr);
    assert_eq!(count(&codes, "dlx-unroutable"), 3, "{}", run.stderr);
    assert_eq!(count(&codes, "unroutable-exchange"), 1, "{}", run.stderr);
    let said = flat(&run.stderr);
    let line = format!("and 47 more warnings like this (dlx-unroutable): `warren lint {topology}` lists them all");
    assert!(said.contains(&line), "{said}");
    assert_eq!(said.matches("more warnings like this").count(), 1, "{said}");
    assert!(run.stdout.contains("Plan: 103 to add"), "{}", run.stdout);
}

#[test]
fn machine_formats_of_a_plan_draw_no_diagnostics_on_stderr_and_hold_every_finding() {
    let dir = unroutable(50);
    let topology = path(&dir, "topology");
    for format in ["json", "markdown", "github"] {
        let run = warren(&["plan", &topology, "--state", &path(&dir, "empty.json"), "--format", format]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(!run.stderr.contains("warren::"), "{format} draws no diagnostic on stderr:\n{}", run.stderr);
        assert!(!run.stderr.contains("like this"), "{format}:\n{}", run.stderr);
    }
    let run = warren(&["plan", &topology, "--state", &path(&dir, "empty.json"), "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 51, "every finding is in the document");
    assert_eq!(warnings.iter().filter(|w| w["code"] == "dlx-unroutable").count(), 50);
    // The same for diff, whose document is a plan too.
    let other = unroutable(0);
    let run = warren(&["diff", &path(&other, "topology"), &topology, "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("warren::"), "{}", run.stderr);
}

#[test]
fn lint_lists_every_finding() {
    let dir = unroutable(50);
    let run = warren(&["lint", &path(&dir, "topology")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let codes = codes_in(&run.stdout);
    assert_eq!(count(&codes, "dlx-unroutable"), 50, "{}", run.stdout);
    assert!(!run.stdout.contains("like this"), "{}", run.stdout);
}

#[test]
fn quiet_draws_no_warning_and_no_consolidated_line() {
    let dir = unroutable(50);
    let run = warren(&["-q", "plan", &path(&dir, "topology"), "--state", &path(&dir, "empty.json")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
}

#[test]
fn export_and_diff_consolidate_too() {
    let dir = unroutable(50);
    let topology = path(&dir, "topology");
    let run = warren(&["export", &topology]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(count(&codes_in(&run.stderr), "dlx-unroutable"), 3, "{}", run.stderr);
    assert!(flat(&run.stderr).contains("and 47 more warnings like this (dlx-unroutable)"), "{}", run.stderr);
    let other = unroutable(0);
    let run = warren(&["diff", &path(&other, "topology"), &topology]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(count(&codes_in(&run.stderr), "dlx-unroutable"), 3, "{}", run.stderr);
    let line = format!("and 47 more warnings like this (dlx-unroutable): `warren lint {topology}` lists them all");
    assert!(flat(&run.stderr).contains(&line), "{}", run.stderr);
}

/// Five queues with the same unknown key: five errors of one code.
fn misspelt(n: usize) -> tempfile::TempDir {
    let mut text = String::from("vhosts = [\"bench\"]\n");
    for i in 0..n {
        text += &format!("\n[queues.\"q{i}\"]\ntype = \"classic\"\ndurabel = true\n");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("topology")).unwrap();
    std::fs::write(dir.path().join("topology/bench.toml"), text).unwrap();
    std::fs::write(dir.path().join("empty.json"), "{}").unwrap();
    dir
}

#[test]
fn repeated_errors_are_consolidated_and_counted_exactly() {
    let dir = misspelt(5);
    let topology = path(&dir, "topology");
    let run = warren(&["validate", &topology]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["unknown-key"; 3], "{}", run.stderr);
    let said = flat(&run.stderr);
    let line = format!("and 2 more errors like this (unknown-key): `warren lint {topology}` lists them all");
    assert!(said.contains(&line), "{said}");
    assert!(said.contains(&format!("{topology} is not valid: 5 errors.")), "{said}");
    let run = warren(&["plan", &topology, "--state", &path(&dir, "empty.json")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["unknown-key"; 3], "{}", run.stderr);
    assert!(flat(&run.stderr).contains(&line), "{}", run.stderr);
    assert!(run.stderr.contains("no plan was made"), "{}", run.stderr);
    // A JSON plan of invalid files holds every error, and draws none.
    let run = warren(&["plan", &topology, "--state", &path(&dir, "empty.json"), "--format", "json"]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["errors"].as_array().unwrap().len(), 5);
    assert!(!run.stderr.contains("warren::"), "{}", run.stderr);
    assert!(run.stderr.contains("no plan was made"), "{}", run.stderr);
    // graph draws the errors it refuses, consolidated the same way.
    let run = warren(&["graph", &topology]);
    assert_eq!(run.code, 1);
    assert_eq!(codes_in(&run.stderr), ["unknown-key"; 3], "{}", run.stderr);
    // lint lists them all.
    let run = warren(&["lint", &topology]);
    assert_eq!(codes_in(&run.stdout), ["unknown-key"; 5], "{}", run.stdout);
}

#[test]
fn validate_draws_no_warning_and_counts_what_lint_lists() {
    let dir = unroutable(50);
    let topology = path(&dir, "topology");
    let run = warren(&["validate", &topology]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("warren::"), "{}", run.stderr);
    let said = format!(
        "{topology} is valid: 1 vhost, 2 exchanges, 50 queues, 50 bindings, 0 policies, 0 users \
         (51 warnings: `warren lint {topology}` lists them)."
    );
    assert!(flat(&run.stdout).contains(&said), "{}", run.stdout);
    // In CI: validate annotates no warning, lint annotates each once.
    let run = warren(&["validate", &topology, "--format", "github"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "", "validate annotates its errors only");
    let run = warren(&["lint", &topology, "--format", "github"]);
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("::warning")).count(), 51);
    // validate's JSON: its errors, and the counts of the rest.
    let run = warren(&["validate", &topology, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{}", run.stdout);
    assert_eq!(doc["summary"]["warnings"], 51, "{}", run.stdout);
}

#[test]
fn plan_over_environments_consolidates_and_its_json_holds_the_warnings_of_an_environment_without_a_plan() {
    let dir = unroutable(50);
    let topology = path(&dir, "topology");
    let project = "[project]\nname = \"bench\"\n\n[environments.qa]\nurl_env = \"WARREN_TEST_FINDINGS_QA_URL\"\n";
    std::fs::write(dir.path().join("topology/warren.toml"), project).unwrap();
    let unset = [("WARREN_TEST_FINDINGS_QA_URL", None)];
    let run = crate::common::warren_env(&["plan", &topology, "--env", "qa"], &unset);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(count(&codes_in(&run.stderr), "dlx-unroutable"), 3, "{}", run.stderr);
    let line =
        format!("and 47 more warnings like this (dlx-unroutable): `warren lint {topology} --env qa` lists them all");
    assert!(flat(&run.stderr).contains(&line), "{}", run.stderr);
    let run = crate::common::warren_env(&["plan", &topology, "--env", "qa", "--format", "json"], &unset);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("warren::"), "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let qa = &doc["environments"][0];
    assert!(qa["errors"][0]["message"].as_str().unwrap().contains("is not set"), "{qa}");
    assert_eq!(qa["warnings"].as_array().unwrap().len(), 51, "{qa}");
}
