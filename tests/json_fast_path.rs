//! The quick reader of definitions exports reads every document it takes
//! exactly as the derived reader does, takes none that the derived reader
//! refuses, and takes the exports warren and the broker write.

mod common;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use warren::testing::{json_fast_path_agrees, large_definitions};

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn every_export_of_the_repository_and_the_real_world_reads_the_same() {
    let mut files = common::realworld();
    for dir in ["examples", "tests"] {
        json_files(&common::root().join(dir), &mut files);
    }
    let mut taken = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        match json_fast_path_agrees(&text) {
            Ok(t) => taken += usize::from(t),
            Err(e) => panic!("{}: {e}", file.display()),
        }
    }
    // The rest have escapes in strings, or are broken on purpose.
    assert!(taken * 2 > files.len(), "only {taken} of {} files taken", files.len());
}

#[test]
fn generated_exports_are_taken() {
    for (q, x, b) in [(0, 0, 0), (3, 2, 5), (300, 20, 600)] {
        assert_eq!(json_fast_path_agrees(&large_definitions(q, x, b)), Ok(true), "{q} {x} {b}");
    }
}

/// A small export with what the quick reader reads itself: nulls, absent
/// and unknown fields, argument tables, both destination types.
const SMALL: &str = r#"{
  "rabbit_version": "4.0.5",
  "vhosts": [{"name": "/", "metadata": {"description": "d", "tags": []}}],
  "queues": [
    {"name": "q1", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-max-length": 10}, "type": "quorum"},
    {"name": "q2", "vhost": null, "durable": null, "arguments": null, "extra": [1, {"a": -2.5e3}], "type": null},
    {"vhost": "/", "name": "q3", "arguments": {}},
    {"name": "q4", "arguments": {"x-message-ttl": -5, "x-a": true, "x-b": false, "x-c": "s", "x-d": 0}},
    {"name": "q5", "arguments": {"x-big": 18446744073709551615, "x-f": 1.5, "x-g": 2e3, "x-z": -0}},
    {"name": "q6", "arguments": {"x-list": [1, "a", {"b": null}], "x-n": null, "x-c": "\u00e9"}},
    {"name": "q7", "arguments": {"x-r": 1, "x-r": 2}}
  ],
  "exchanges": [
    {"name": "x", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "y", "type": "x-custom", "internal": null, "arguments": {"alternate-exchange": "z"}}
  ],
  "bindings": [
    {"source": "x", "vhost": "/", "destination": "q1", "destination_type": "queue", "routing_key": "a.#", "arguments": {}},
    {"source": "x", "destination": "y", "destination_type": "exchange", "routing_key": null, "arguments": {"x-match": "all"}},
    {"source": "x", "destination": "q2", "destination_type": "queue"}
  ],
  "policies": [{"vhost": "/", "name": "p", "pattern": "^q", "apply-to": "queues", "priority": 1, "definition": {"max-length": 5}}],
  "users": [], "permissions": null
}"#;

#[test]
fn a_small_export_with_every_field_reads_the_same() {
    assert_eq!(json_fast_path_agrees(SMALL), Ok(true));
}

#[test]
fn what_only_the_derived_reader_reads_is_left_to_it() {
    let left = [
        // An escape in a string; a raw control character, which JSON refuses.
        SMALL.replace("\"q1\"", "\"q\\u0031\""),
        SMALL.replace("\"q1\"", "\"q\t1\""),
        SMALL.replace("\"^q\"", "\"^\nq\""),
        // A field given twice, in an item and at the top.
        SMALL.replace("\"name\": \"q3\"", "\"name\": \"q3\", \"name\": \"q4\""),
        SMALL.replace("\"users\": []", "\"users\": [], \"queues\": []"),
        // An item written as a list of its fields.
        SMALL.replace(
            "{\"source\": \"x\", \"destination\": \"q2\", \"destination_type\": \"queue\"}",
            "[\"x\", null, \"q2\", \"queue\"]",
        ),
        // A value of the wrong kind, an unknown destination type, no name.
        SMALL.replace(
            "\"durable\": true, \"auto_delete\": false, \"arguments\": {\"x-queue-type\"",
            "\"durable\": \"yes\", \"auto_delete\": false, \"arguments\": {\"x-queue-type\"",
        ),
        SMALL.replace("\"destination_type\": \"exchange\"", "\"destination_type\": \"stream\""),
        SMALL.replace("{\"vhost\": \"/\", \"name\": \"q3\", ", "{\"vhost\": \"/\", "),
        // Not JSON: a trailing comma, a leading zero, text after the end.
        SMALL.replace("\"x-r\": 2}}\n  ],", "\"x-r\": 2}},\n  ],"),
        SMALL.replace("\"priority\": 1", "\"priority\": 01"),
        format!("{SMALL} x"),
    ];
    for (i, doc) in left.iter().enumerate() {
        assert_ne!(doc, SMALL, "case {i} changes the document");
        assert_eq!(json_fast_path_agrees(doc), Ok(false), "case {i}:\n{doc}");
    }
}

/// A few edits of [`SMALL`]: bytes removed, inserted or replaced.
fn edited() -> impl Strategy<Value = String> {
    let byte = prop::sample::select(vec![
        '"', '\\', ',', ':', '{', '}', '[', ']', 'n', 't', '0', '1', '-', '.', 'e', ' ', 'x',
    ]);
    prop::collection::vec((any::<prop::sample::Index>(), 0..3u8, byte), 1..4).prop_map(|edits| {
        let mut doc: Vec<char> = SMALL.chars().collect();
        for (at, how, c) in edits {
            let i = at.index(doc.len());
            match how {
                0 => _ = doc.remove(i),
                1 => doc.insert(i, c),
                _ => doc[i] = c,
            }
        }
        doc.into_iter().collect()
    })
}

/// Of the edited exports the derived reader reads, the quick reader takes
/// most, so that the comparison below means something.
#[test]
fn the_quick_reader_takes_most_edited_exports_the_derived_reader_reads() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut valid, mut taken) = (0, 0);
    for _ in 0..2000 {
        let doc = edited().new_tree(&mut runner).unwrap().current();
        valid += usize::from(serde_json::from_str::<serde_json::Value>(&doc).is_ok());
        taken += usize::from(json_fast_path_agrees(&doc).unwrap_or_else(|e| panic!("{doc}\n{e}")));
    }
    // The rest have escapes, repeated fields or values of another kind.
    assert!(taken * 2 > valid && valid > 200, "only {taken} of {valid} valid documents taken");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever a few edits make of an export, the quick reader leaves it
    /// or reads it as the derived reader does.
    #[test]
    fn edited_exports_are_left_or_read_the_same(doc in edited()) {
        if let Err(e) = json_fast_path_agrees(&doc) {
            prop_assert!(false, "{doc}\n{e}");
        }
    }
}
