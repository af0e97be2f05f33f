//! `warren validate` on the broken-file corpus, the warning files and the
//! examples, through the real binary.

use crate::common::{codes_in, corpus, expected_codes, stem, warren};

#[test]
fn every_broken_file_fails_with_its_diagnostics() {
    let entries = corpus("tests/invalid");
    assert!(entries.len() >= 30, "the corpus has {} entries", entries.len());
    for entry in entries {
        let run = warren(&["validate", &entry]);
        assert_eq!(run.code, 1, "{entry} should fail with exit 1:\n{}", run.stderr);
        assert_eq!(codes_in(&run.stderr), expected_codes(&entry), "{entry}:\n{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{entry} panicked");
        insta::assert_snapshot!(format!("invalid-{}", stem(&entry)), run.stderr);
    }
}

/// Files with warnings are valid: validate counts the warnings and points
/// at `warren lint`, which draws them (validate used to draw them too, and
/// a CI running both annotated each twice).
#[test]
fn files_with_warnings_are_valid() {
    for entry in corpus("tests/warnings") {
        let run = warren(&["validate", &entry]);
        assert_eq!(run.code, 0, "{entry} should pass:\n{}", run.stderr);
        assert_eq!(run.stderr, "", "{entry}: validate draws no warning");
        assert!(run.stdout.contains(&format!("`warren lint {entry}` lists ")), "{entry}: {}", run.stdout);
        let lint = warren(&["lint", &entry]);
        assert_eq!(codes_in(&lint.stdout), expected_codes(&entry), "{entry}:\n{}", lint.stdout);
        insta::assert_snapshot!(format!("warning-{}", stem(&entry)), format!("{}{}", lint.stdout, run.stdout));
    }
}

#[test]
fn every_example_and_the_default_topology_validate_cleanly() {
    let mut paths = crate::common::examples();
    paths.push("topology".into());
    for path in paths {
        let run = warren(&["validate", &path]);
        assert_eq!(run.code, 0, "{path}:\n{}", run.stderr);
        assert_eq!(run.stderr, "", "{path} should have no warnings");
        assert!(run.stdout.contains("is valid"), "{path}: {}", run.stdout);
    }
}

#[test]
fn without_a_path_the_default_topology_is_validated() {
    let run = warren(&["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("topology is valid: 1 vhost, 3 exchanges, 7 queues"), "{}", run.stdout);
}

#[test]
fn a_missing_path_is_an_error_not_a_panic() {
    let run = warren(&["validate", "no/such/dir"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("cannot read no/such/dir"), "{}", run.stderr);
}

#[test]
fn quiet_hides_warnings_but_not_errors() {
    let run = warren(&["-q", "validate", "tests/warnings/01-quorum-without-dlx.toml"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stderr, "");
}

/// An object of a kind (`src/model/kinds`) is reported at its own line and
/// column, with the codes and helps of the other objects.
#[test]
fn topic_permission_and_removed_mistakes_are_placed_and_explained() {
    let cases = [
        ("70-topic-permission-missing-write.toml", vec!["missing-write.toml:8:1]", "add `write = \"…\"`"]),
        (
            "71-topic-permission-wirte-typo.toml",
            vec!["unknown key `wirte`", "wirte-typo.toml:11:1]", "did you mean `write`?", "wirte-typo.toml:8:1]"],
        ),
        ("72-topic-permission-write-number.toml", vec!["write-number.toml:11:9]", "must be a string, not an integer"]),
        (
            "74-declared-and-removed.toml",
            vec!["queue \"orders.legacy\" in vhost \"/\" is both declared and in [removed]", "removed.toml:10:11]"],
        ),
        (
            "73-duplicate-topic-permission-two-files",
            vec![
                "topic permission (user \"orders-app\", exchange \"amq.topic\") in vhost \"/\" is declared twice",
                "two-files/b.toml:3:1]",
                "two-files/a.toml:8:1",
            ],
        ),
    ];
    for (entry, said) in cases {
        let run = warren(&["validate", &format!("tests/invalid/{entry}")]);
        assert_eq!(run.code, 1, "{entry}");
        // Long messages and helps are wrapped: compare them on one line.
        let text = run.stderr.split_whitespace().filter(|w| *w != "│").collect::<Vec<_>>().join(" ");
        for s in said {
            assert!(text.contains(s), "{entry} does not say {s}:\n{}", run.stderr);
        }
    }
}
