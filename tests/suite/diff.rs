//! `warren diff OLD NEW`: offline plans between two topologies, as a
//! reviewer sees them in all three formats.

use crate::common::warren;

#[test]
fn a_topology_compared_with_itself_has_no_changes() {
    let mut paths = crate::common::examples();
    paths.push("topology".into());
    for path in paths {
        let run = warren(&["diff", &path, &path, "--detailed-exitcode"]);
        assert_eq!(run.code, 0, "{path}:\n{}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout, "No changes. The two topologies match.\n", "{path}");
    }
}

#[test]
fn the_shop_change_in_three_formats() {
    for format in ["human", "json", "markdown"] {
        let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", format]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(format!("shop-v1-to-shop-{format}"), run.stdout);
    }
}

#[test]
fn detailed_exitcode_is_two_when_there_are_changes() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--detailed-exitcode"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.ends_with("Plan: 22 to add, 1 to change, 2 to destroy, 0 to migrate.\n"), "{}", run.stdout);
}

#[test]
fn the_json_document_is_versioned_and_drives_the_other_views() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", "json"]);
    let mut doc: warren::render::PlanDocument = serde_json::from_str(&run.stdout).expect("the JSON is a plan document");
    assert_eq!(doc.format_version, warren::render::FORMAT_VERSION);
    // Who made it sets the wording, and is not part of the document.
    doc.origin.diff = true;
    let human = warren(&["diff", "tests/diff/shop-v1", "examples/shop"]);
    assert_eq!(warren::render::human::render(&doc, false), human.stdout, "human view drawn from the same document");
}

#[test]
fn an_invalid_new_side_is_an_error_with_no_plan() {
    let run = warren(&["diff", "examples/shop", "tests/invalid/05-queue-arguements-typo.toml"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("warren::unknown-key"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

/// The one policy a piece of advice declares, as TOML.
fn advised_policy(text: &str) -> (String, toml::Table) {
    let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("the advice is TOML: {e}\n{text}"));
    let policies = doc["policies"].as_table().expect("a [policies] table");
    assert_eq!(policies.len(), 1, "{text}");
    let (name, policy) = policies.iter().next().unwrap();
    (name.clone(), policy.as_table().expect("a policy table").clone())
}

/// Issue 12, observation 4: the advice must target the queue that changes,
/// keep what `orders-limits` sets on it, and win over it.
fn assert_keeps_the_limits(text: &str) {
    let (_, p) = advised_policy(text);
    let pattern = regex::Regex::new(p["pattern"].as_str().unwrap()).unwrap();
    assert!(pattern.is_match("orders.invoicing"), "{text}");
    for other in ["orders.invoicing.v2", "orders.shipping", "xorders.invoicing"] {
        assert!(!pattern.is_match(other), "{other}: {text}");
    }
    assert_eq!(p["apply_to"].as_str(), Some("queues"), "{text}");
    assert!(p["priority"].as_integer().unwrap() > 0, "above orders-limits' 0: {text}");
    let def = p["definition"].as_table().unwrap();
    assert_eq!(def.get("delivery-limit").and_then(|v| v.as_integer()), Some(20), "{text}");
    assert_eq!(def.get("max-length").and_then(|v| v.as_integer()), Some(50000), "{text}");
    assert_eq!(def.get("message-ttl").and_then(|v| v.as_integer()), Some(60000), "{text}");
    assert_eq!(def.len(), 3, "{text}");
}

#[test]
fn the_policy_advised_for_an_immutable_change_keeps_the_policy_it_overrides() {
    let run = warren(&["diff", "tests/diff/advice/before", "tests/diff/advice/argument-changed", "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let error = &doc["errors"][0];
    assert_eq!(error["code"], "immutable-change");
    let help = error["help"].as_str().unwrap();
    let policy = help.split("\n\n").nth(1).expect("the policy between blank lines");
    assert_keeps_the_limits(policy);
    let human = warren(&["diff", "tests/diff/advice/before", "tests/diff/advice/argument-changed"]);
    insta::assert_snapshot!("advice-argument-changed", human.stderr);
}

#[test]
fn the_policy_offered_instead_of_a_migration_targets_the_old_queue() {
    let run = warren(&["diff", "tests/diff/advice/before", "tests/diff/advice/replaced", "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let policy = doc["changes"][0]["migration"]["policy_instead"].as_str().expect("a policy is offered");
    assert_keeps_the_limits(policy);
    let human = warren(&["diff", "tests/diff/advice/before", "tests/diff/advice/replaced"]);
    insta::assert_snapshot!("advice-replaced", human.stdout);
}

#[test]
fn following_the_advice_adds_one_policy_that_hides_nothing() {
    let run = warren(&["diff", "tests/diff/advice/before", "tests/diff/advice/replaced", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let policy = doc["changes"][0]["migration"]["policy_instead"].as_str().expect("a policy is offered");
    let before = std::fs::read_to_string(crate::common::root().join("tests/diff/advice/before/topology.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("topology.toml"), format!("{before}\n{policy}\n")).unwrap();
    let after = dir.path().to_str().unwrap();
    let check = warren(&["validate", after]);
    assert_eq!((check.code, check.stderr.as_str()), (0, ""), "no error, no warning (policy-shadows)");
    let plan = warren(&["diff", "tests/diff/advice/before", after]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("+ policy \"orders.invoicing-settings\""), "{}", plan.stdout);
    assert!(plan.stdout.ends_with("Plan: 1 to add, 0 to change, 0 to destroy, 0 to migrate.\n"), "{}", plan.stdout);
}

#[test]
fn diff_reads_the_old_side_at_a_git_revision() {
    let v1 = "vhosts = [\"shop\"]\n\n[exchanges.orders]\ntype = \"topic\"\nlint_allow = [\"unroutable-exchange\"]\n";
    let repo = crate::common::repository(&[("topology/shop.toml", v1)]);
    let dir = repo.path();
    let v2 = format!("{v1}\n[exchanges.billing]\ntype = \"fanout\"\nlint_allow = [\"unroutable-exchange\"]\n");
    std::fs::write(dir.join("topology/shop.toml"), v2).unwrap();

    let run = crate::common::warren_in(dir, &["diff", "HEAD:topology", "topology"], &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("+ exchange \"billing\""), "{}", run.stdout);
    assert!(run.stdout.ends_with("Plan: 1 to add, 0 to change, 0 to destroy, 0 to migrate.\n"), "{}", run.stdout);

    // Diagnostics name the file at its revision.
    std::fs::write(dir.join("topology/shop.toml"), "vhosts = [\"shop\"]\n[exchanges.orders]\ntype = \"topik\"\n")
        .unwrap();
    crate::common::git(dir, &["commit", "-q", "-am", "broken"]);
    let run = crate::common::warren_in(dir, &["diff", "HEAD:topology", "topology"], &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("HEAD:topology/shop.toml:3:8"), "{}", run.stderr);

    // A revision git does not know is said, not a panic.
    let run = crate::common::warren_in(dir, &["diff", "no-such-rev:topology", "topology"], &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("cannot read no-such-rev:topology from git"), "{}", run.stderr);
}

#[test]
fn a_ten_thousand_queue_comment_fits_github_and_keeps_what_matters() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    let topology = warren::testing::large_topology(10_000, 500, 20_000);
    let files = warren::import::import(&topology, &[], "generated").unwrap();
    std::fs::create_dir_all(&new).unwrap();
    for f in &files.files {
        std::fs::write(new.join(&f.name), &f.text).unwrap();
    }
    let vhost = topology.vhosts.keys().next().unwrap();
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("old.toml"), format!("vhosts = [\"{vhost}\"]\n\n[queues.gone]\ntype = \"classic\"\n"))
        .unwrap();
    let run = warren(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let md = &run.stdout;
    assert!(md.chars().count() <= 65_536, "{} characters", md.chars().count());
    assert!(md.starts_with("<!-- warren:diff project=default -->\n"), "{:.200}", md);
    assert!(md.contains("> 1 object(s) would be **destroyed** if applied: queue \"gone\""), "{:.2000}", md);
    assert!(md.contains(" to add, 0 to change, 1 to destroy, 0 to migrate.**"), "{:.2000}", md);
    assert!(md.contains("**The plan is cut here**"), "the plan is cut, and says so");
    assert!(md.trim_end().ends_with("</details>"), "the folded section is closed");
}

#[test]
fn diff_at_a_revision_of_the_current_directory_reads_its_project_file_and_leaves_its_overlays() {
    let project = "[project]\nname = \"orders\"\n\n[environments.staging]\nurl_env = \"X_URL\"\noverlays = [\"overlays/staging\"]\n";
    let base = "vhosts = [\"shop\"]\n\n[exchanges.orders]\ntype = \"topic\"\nlint_allow = [\"unroutable-exchange\"]\n";
    let repo = crate::common::repository(&[
        ("warren.toml", project),
        ("shop.toml", base),
        ("overlays/staging/x.toml", "[exchanges.orders]\ntype = \"fanout\"\n"),
    ]);
    let dir = repo.path();

    // `HEAD:.` as `git show` spells the current directory: the project is
    // "orders", and the overlay is not read as part of the base.
    let run = crate::common::warren_in(dir, &["diff", "HEAD:.", ".", "--format", "markdown"], &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("<!-- warren:diff project=orders -->"), "{}", run.stdout);
    assert!(run.stdout.contains("The two topologies match."), "{}", run.stdout);
}

/// The wording of a plan: what a comparison or a review must not say.
const ACTING: [&str; 7] =
    ["will be", "will perform", "are lost", "updated in place", "destroyed", "Plan:", "apply refuses"];

/// Issue 27, item 4: two environments compared are not an apply. Each
/// difference is said as one ("only in staging", "only in prod",
/// "differs"), an argument that cannot change in place as such, in every
/// format; the base's finding is said once.
#[test]
fn two_environments_compared_speak_of_differences_not_actions() {
    let args = ["diff", "tests/diff/environments", "--env", "staging", "--env", "prod"];
    for format in ["human", "markdown", "json", "github"] {
        let mut all = args.to_vec();
        all.extend(["--format", format]);
        let run = crate::common::warren_env(&all, &[("GITHUB_STEP_SUMMARY", None)]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let said = if format == "json" {
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            let reasons: Vec<&str> =
                doc["changes"].as_array().unwrap().iter().map(|c| c["reason"].as_str().unwrap()).collect();
            assert_eq!(
                reasons,
                [
                    "differs",
                    "only in prod",
                    "only in prod",
                    "only in staging",
                    "only in staging",
                    "differs in arguments.x-max-priority, which cannot change in place",
                ],
                "{}",
                run.stdout
            );
            reasons.join("\n")
        } else {
            run.stdout.clone()
        };
        for word in ACTING {
            assert!(!said.contains(word), "{format} says {word:?}:\n{said}");
        }
        // The base's finding, once, not once per environment; prod's own
        // once. The machine formats carry them in their document and draw
        // none on stderr.
        let drawn = usize::from(format == "human");
        for finding in ["exchange \"parcels.unused\" has no binding", "queue \"parcels.audit\" has no dead-letter"] {
            assert_eq!(run.stderr.matches(finding).count(), drawn, "{format}: {finding}\n{}", run.stderr);
            if format != "human" {
                let written = if format == "json" { finding.replace('"', "\\\"") } else { finding.to_string() };
                assert_eq!(run.stdout.matches(&written).count(), 1, "{format}: {finding}\n{}", run.stdout);
            }
        }
        if matches!(format, "human" | "markdown") {
            insta::assert_snapshot!(format!("environments-staging-prod-{format}"), run.stdout);
        }
    }
}

/// `diff OLD NEW` reviews a change: what applying it would do, in the
/// conditional, with the plan's last line as terraform's.
#[test]
fn a_change_reviewed_says_what_applying_it_would_do() {
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for word in ["will be", "will perform", "are lost"] {
        assert!(!run.stdout.contains(word), "says {word:?}:\n{}", run.stdout);
    }
    assert!(run.stdout.contains("# queue \"orders\" in vhost \"/\" would be destroyed if applied: "), "{}", run.stdout);
    assert!(
        run.stdout.contains("# policy \"orders-limits\" in vhost \"/\" would be updated in place"),
        "{}",
        run.stdout
    );
    let run = warren(&["diff", "tests/diff/shop-v1", "examples/shop", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    for c in doc["changes"].as_array().unwrap() {
        assert!(!c["reason"].as_str().unwrap().contains("are lost"), "{c}");
    }
    // Offline, no password is compared or set: an unset password variable
    // is nothing to say (it was a warning per user, "to create the user").
    let run = crate::common::warren_env(
        &["diff", "examples/order-events", "examples/order-events"],
        &[("FULFILLMENT_PASSWORD", None), ("ANALYTICS_PASSWORD", None)],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
}
