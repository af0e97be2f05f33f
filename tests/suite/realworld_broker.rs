//! The repository's own export with real-world quirks ([`QUIRKS`]) and
//! every file of the optional real-world corpus (the folder
//! `WARREN_REALWORLD_DIR` names, when set) through the private
//! test broker and back: loaded into fresh
//! vhosts with `rabbitmqctl import_definitions`, then the real binary runs
//! `warren import --out DIR --vhost …` from the broker, `warren validate
//! DIR`, and `warren plan DIR --detailed-exitcode`, which must find no
//! change (unmanaged `?` lines are fine).
//!
//! Each file is loaded from a copy whose vhosts and users are renamed
//! `t-import-<n>-<name>`, so that files collide neither with each other nor
//! with other tests, and no file's `guest` replaces the broker's. The copy
//! also leaves out global parameters: `cluster_name` and
//! `internal_cluster_id` are the whole broker's, not the file's.
//!
//! What the broker itself refuses or drops at import is asserted exactly,
//! file by file, in [`EXPECT`].

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::common::broker::{TestBroker, readable_dir};
use crate::common::definitions::{Cleanup, json, missing, remove};
use crate::common::{QUIRKS, realworld, root, squash, warren};
use serde_json::{Value as Json, json};

/// What one file does on the way through RabbitMQ 3.10.8 and warren.
struct Expect {
    /// The file's number: `02` for `02-yoko-broker-service.json` (`3.x` for [`QUIRKS`]).
    number: &'static str,
    /// What `rabbitmqctl import_definitions` answers to the renamed copy,
    /// exactly (after its first line, which names the file), and the
    /// parameter component the test then removes to import the rest.
    refused: Option<(&'static str, &'static str)>,
    /// Server-named (`amq.`) queues the broker skips at import.
    skipped_queues: usize,
    /// Bindings the broker drops at import because the file lacks one end.
    dropped_bindings: usize,
    /// Notes `warren import --state COPY` gives: every one, by a fragment.
    file_notes: &'static [&'static str],
    /// Notes `warren import` gives reading the broker: every one.
    broker_notes: &'static [&'static str],
}

const EXPECT: &[Expect] = &[
    Expect {
        number: "01",
        refused: None,
        skipped_queues: 0,
        dropped_bindings: 0,
        file_notes: &[
            "users with a plaintext `password` (read as having no password: warren never keeps a plaintext password): \"t-import-01-RABBITMQ_DEFAULT_USER\"",
        ],
        // The broker hashed the plaintext password.
        broker_notes: &[],
    },
    Expect {
        number: "02",
        refused: None,
        skipped_queues: 0,
        dropped_bindings: 5,
        file_notes: &[
            "vhost \"t-import-02-/\": bindings from exchanges that the file does not declare (kept): \"identity.application.event.client.changed\"",
            "vhost \"t-import-02-/\": bindings to queues that the file does not declare (kept): \"access.function.client.changed.processing\"",
        ],
        broker_notes: &[],
    },
    Expect {
        number: "07",
        refused: None,
        skipped_queues: 0,
        dropped_bindings: 8,
        file_notes: &[
            "the file has no `vhosts` list; made these vhosts from the objects that name them: \"t-import-07-/\"",
            "vhost \"t-import-07-/\": bindings to queues that the file does not declare (kept): \"Field.other\", \"Field.refusals\"",
        ],
        broker_notes: &[],
    },
    Expect {
        number: "10",
        refused: None,
        skipped_queues: 2,
        dropped_bindings: 0,
        file_notes: &[
            "vhost \"t-import-10-/\": bindings from the broker's own exchanges (kept: topology files may bind from built-ins): \"amq.fanout\"",
            "vhost \"t-import-10-/\": queues left out, as topology files cannot declare them (server-named: `amq.` names belong to the broker): \"amq.gen-7EZF7WjGIQFDoXexVF-e8w\"",
            "vhost \"t-import-10-bunny_testbed\": queues left out, as topology files cannot declare them (server-named: `amq.` names belong to the broker): \"amq.gen-xddEPq9wHSNZKQbPK8pi3A\"",
        ],
        broker_notes: &[
            "vhost \"t-import-10-/\": bindings from the broker's own exchanges (kept: topology files may bind from built-ins): \"amq.fanout\"",
        ],
    },
    Expect { number: "11", refused: None, skipped_queues: 0, dropped_bindings: 0, file_notes: &[], broker_notes: &[] },
    Expect {
        number: "3.x",
        refused: None,
        skipped_queues: 2,
        dropped_bindings: 0,
        file_notes: &[
            "vhost \"t-import-3.x-/\": bindings from the broker's own exchanges (kept: topology files may bind from built-ins): \"amq.fanout\"",
            "vhost \"t-import-3.x-/\": queues left out, as topology files cannot declare them (server-named: `amq.` names belong to the broker): \"amq.gen-Fx1ServerNamedInRoot\"",
            "vhost \"t-import-3.x-bunny_testbed\": queues left out, as topology files cannot declare them (server-named: `amq.` names belong to the broker): \"amq.gen-Fx2ServerNamedInTestbed\"",
        ],
        broker_notes: &[
            "vhost \"t-import-3.x-/\": bindings from the broker's own exchanges (kept: topology files may bind from built-ins): \"amq.fanout\"",
        ],
    },
];

/// The repository's own quirky export, then the optional corpus.
fn files() -> Vec<std::path::PathBuf> {
    std::iter::once(root().join(QUIRKS)).chain(realworld()).collect()
}

/// `name` as the copy of file `n` names it.
fn renamed(n: &str, name: &str) -> String {
    format!("t-import-{n}-{name}")
}

/// The file with its vhosts and users renamed, without global parameters.
fn rename(doc: &Json, n: &str) -> Json {
    let mut doc = doc.clone();
    // `doc[key]` would add a `null` for a key the file lacks, which 3.10.8's
    // import fails on (`badarg` in `length/1`).
    fn list<'a>(doc: &'a mut Json, key: &str) -> impl Iterator<Item = &'a mut Json> {
        doc.get_mut(key).and_then(Json::as_array_mut).into_iter().flatten()
    }
    let rename_field = |item: &mut Json, field: &str| {
        if let Some(s) = item[field].as_str() {
            item[field] = Json::from(renamed(n, s));
        }
    };
    for key in ["queues", "exchanges", "bindings", "policies", "parameters", "permissions", "topic_permissions"] {
        for item in list(&mut doc, key) {
            rename_field(item, "vhost");
        }
    }
    for key in ["permissions", "topic_permissions"] {
        for item in list(&mut doc, key) {
            rename_field(item, "user");
        }
    }
    for key in ["users", "vhosts"] {
        for item in list(&mut doc, key) {
            rename_field(item, "name");
        }
    }
    if let Some(g) = doc.get_mut("global_parameters") {
        *g = json!([]);
    }
    doc
}

fn items<'a>(doc: &'a Json, key: &str) -> impl Iterator<Item = &'a Json> {
    doc[key].as_array().into_iter().flatten()
}

/// Every vhost the file names: listed, or named by an item.
fn vhosts_of(doc: &Json) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = items(doc, "vhosts").filter_map(|v| v["name"].as_str()).map(String::from).collect();
    for key in ["queues", "exchanges", "bindings", "policies", "parameters", "permissions"] {
        out.extend(items(doc, key).filter_map(|i| i["vhost"].as_str()).map(String::from));
    }
    out
}

/// The vhosts items name but the file does not list: it relies on them
/// existing (every broker has `/`), so the test makes them.
fn unlisted_vhosts(doc: &Json) -> Vec<String> {
    let listed: BTreeSet<&str> = items(doc, "vhosts").filter_map(|v| v["name"].as_str()).collect();
    vhosts_of(doc).into_iter().filter(|v| !listed.contains(v.as_str())).collect()
}

/// Splits the file into what the broker keeps and what 3.10.8 drops at
/// import: queues named `amq.…` ("Skipping import of a queue whose name
/// begins with 'amq.'", its log says), and bindings whose source exchange
/// or destination the file lacks (or only as a skipped queue). Users with a
/// plaintext `password` are in neither: the broker keeps them with a hash.
fn split(doc: &Json) -> (Json, Json) {
    let (mut kept, mut dropped) = (doc.clone(), json!({}));
    let skipped = |q: &Json| q["name"].as_str().is_some_and(|n| n.starts_with("amq."));
    let has = |key: &str, vhost: &Json, name: &Json| {
        items(doc, key).any(|i| i["vhost"] == *vhost && i["name"] == *name && !(key == "queues" && skipped(i)))
    };
    let exchange = |vhost: &Json, name: &Json| {
        name.as_str().is_some_and(|n| n.is_empty() || n.starts_with("amq.")) || has("exchanges", vhost, name)
    };
    let lacks_an_end = |b: &Json| {
        let destination = match b["destination_type"].as_str() {
            Some("queue") => has("queues", &b["vhost"], &b["destination"]),
            _ => exchange(&b["vhost"], &b["destination"]),
        };
        !(exchange(&b["vhost"], &b["source"]) && destination)
    };
    for (key, drops) in [("queues", &skipped as &dyn Fn(&Json) -> bool), ("bindings", &lacks_an_end)] {
        let (gone, stay): (Vec<Json>, Vec<Json>) = items(doc, key).cloned().partition(|i| drops(i));
        kept[key] = Json::from(stay);
        dropped[key] = Json::from(gone);
    }
    kept["users"] =
        Json::from(items(doc, "users").filter(|u| u.get("password").is_none()).cloned().collect::<Vec<_>>());
    // What the file leaves out, the broker has with its default.
    for (key, field, default) in [
        ("exchanges", "arguments", json!({})),
        ("exchanges", "internal", json!(false)),
        ("queues", "arguments", json!({})),
    ] {
        for item in kept.get_mut(key).and_then(Json::as_array_mut).into_iter().flatten() {
            if item.get(field).is_none() {
                item[field] = default.clone();
            }
        }
    }
    (kept, dropped)
}

/// rabbitmqctl's error as 3.10's prints it: 4.0's prints the reason as an
/// Erlang binary (`<<"Validation failed\\n…">>`, escapes and all).
fn unquoted(said: &str) -> String {
    said.lines()
        .map(|line| match line.strip_prefix("<<\"").and_then(|l| l.strip_suffix("\">>")) {
            Some(inner) => inner.replace("\\n", "\n").replace("\\\"", "\"").replace("\\\\", "\\"),
            None => line.to_string(),
        })
        .map(|line| line + "\n")
        .collect()
}

/// How many of these notes `stderr` holds: each starts `warren::<code>`.
fn notes_in(stderr: &str) -> usize {
    stderr.matches("warren::").count()
}

/// The change lines of a human plan: `+`, `~`, `-`, `-/+`, `>>`.
fn change_lines(plan: &str) -> Vec<&str> {
    plan.lines().filter(|l| ["+ ", "~ ", "- ", "-/+ ", ">> "].iter().any(|s| l.trim_start().starts_with(s))).collect()
}

fn check_notes(what: &str, stderr: &str, expected: &[&str]) {
    let got = squash(stderr);
    for note in expected {
        assert!(got.contains(&squash(note)), "{what}: lacks the note\n{note}\nin\n{stderr}");
    }
    assert_eq!(notes_in(stderr), expected.len(), "{what}: other notes than expected in\n{stderr}");
}

/// One file: load it into the broker, import it back, validate, plan.
fn round_trip(broker: &TestBroker, path: &Path, expect: &Expect, tmp: &Path) {
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let n = expect.number;
    let mut doc = rename(&json(&std::fs::read_to_string(path).unwrap()), n);
    let vhosts = vhosts_of(&doc);
    let ours = json!({
        "vhosts": vhosts.iter().map(|v| json!({"name": v})).collect::<Vec<_>>(),
        "users": doc["users"].clone(),
    });
    let _cleanup = Cleanup { broker, docs: vec![ours.clone()] };
    remove(broker, &ours); // an earlier run that was killed may have left them
    let make_unlisted = |doc: &Json| {
        for v in unlisted_vhosts(doc) {
            let out = broker.ctl(&["add_vhost", &v]);
            assert!(out.status.success(), "{file}: add_vhost {v}: {}", String::from_utf8_lossy(&out.stderr));
        }
    };

    // The file's own notes, read as a file.
    let copy = tmp.join(&file);
    std::fs::write(&copy, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let offline = warren(&["import", "--state", copy.to_str().unwrap(), "--out", tmp.join("file").to_str().unwrap()]);
    assert_eq!(offline.code, 0, "{file}: {}", offline.stderr);
    check_notes(&format!("{file}, import --state"), &offline.stderr, expect.file_notes);

    // RabbitMQ 4 refuses a whole file that binds to or from objects it
    // lacks, where 3.10 drops those bindings: on 4.x the file is loaded
    // again without them (what 3.10 keeps), and the checks below hold.
    let import = |doc: &Json| {
        make_unlisted(doc);
        std::fs::write(&copy, serde_json::to_string_pretty(doc).unwrap()).unwrap();
        match broker.import_file(&copy) {
            Err(e) if e.contains("{resources_missing,") => {
                remove(broker, &ours);
                let (_, dropped) = split(doc);
                let mut loadable = doc.clone();
                loadable["bindings"] = Json::from(
                    items(doc, "bindings")
                        .filter(|b| !items(&dropped, "bindings").any(|d| d == *b))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                make_unlisted(&loadable);
                std::fs::write(&copy, serde_json::to_string_pretty(&loadable).unwrap()).unwrap();
                broker.import_file(&copy)
            }
            other => other,
        }
    };
    let answer = import(&doc);
    match expect.refused {
        None => assert!(answer.is_ok(), "{file}: import_definitions failed:\n{}", answer.unwrap_err()),
        Some((reason, component)) => {
            let error = answer.expect_err("the broker refuses the file");
            let said = error.split_once(" ...\n").map_or(error.as_str(), |(_, rest)| rest);
            assert_eq!(unquoted(said), reason, "{file}: the broker's refusal");
            // What the refusal left half-imported goes before the rest is loaded.
            remove(broker, &ours);
            doc["parameters"] = Json::from(
                items(&doc, "parameters").filter(|p| p["component"] != component).cloned().collect::<Vec<_>>(),
            );
            if let Err(e) = import(&doc) {
                panic!("{file}: import_definitions without `{component}` parameters failed:\n{e}");
            }
        }
    }

    let (kept, dropped) = split(&doc);
    let count = |key: &str| items(&dropped, key).count();
    assert_eq!(count("queues"), expect.skipped_queues, "{file}: server-named queues");
    assert_eq!(count("bindings"), expect.dropped_bindings, "{file}: bindings with a missing end");
    let lacking = broker.await_imported(&kept, Duration::from_secs(30));
    assert!(lacking.is_empty(), "{file}: the broker lacks\n{}", lacking.join("\n"));
    let live = broker.definitions();
    let gone = missing(&live, &dropped);
    assert_eq!(gone.len(), count("queues") + count("bindings"), "{file}: the broker kept some of\n{dropped:#}");
    for u in items(&doc, "users").filter(|u| u.get("password").is_some()) {
        let on_broker = items(&live, "users").find(|l| l["name"] == u["name"]).expect("the user was imported");
        assert_eq!(on_broker["hashing_algorithm"], "rabbit_password_hashing_sha256", "{file}: {}", u["name"]);
    }

    // warren import from the broker.
    let url = broker.url.as_str();
    let out = tmp.join("broker");
    let mut args = vec!["--url", url, "import", "--out", out.to_str().unwrap()];
    for v in &vhosts {
        args.extend(["--vhost", v]);
    }
    let run = warren(&args);
    assert_eq!(run.code, 0, "{file}: import:\n{}{}", run.stdout, run.stderr);
    let summary = format!("Imported the broker at {} into {}: ", broker.shown_url(), out.display());
    assert!(run.stdout.contains(&summary), "{file}: {}", run.stdout);
    check_notes(&format!("{file}, import from the broker"), &run.stderr, expect.broker_notes);

    let check = warren(&["validate", out.to_str().unwrap()]);
    assert_eq!(check.code, 0, "{file}: validate:\n{}{}", check.stdout, check.stderr);

    let plan = warren(&["--url", url, "--project", "realworld", "plan", out.to_str().unwrap(), "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{file}: plan:\n{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes. The broker matches the topology."), "{file}: {}", plan.stdout);
    assert_eq!(change_lines(&plan.stdout), Vec::<&str>::new(), "{file}: {}", plan.stdout);
    let plan = warren(&["--url", url, "--project", "realworld", "plan", out.to_str().unwrap(), "--format", "json"]);
    let summary = &json(&plan.stdout)["summary"];
    for field in ["add", "change", "destroy", "migrate"] {
        assert_eq!(summary[field], 0, "{file}: {field} in {summary}");
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn every_realworld_file_round_trips_through_the_broker_with_no_changes() {
    let _turn = crate::common::alone();
    let broker = TestBroker::from_env();
    let files = files();
    let numbers: Vec<&str> = EXPECT.iter().map(|e| e.number).collect();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let n = file.split('-').next().unwrap();
        let expect = EXPECT
            .iter()
            .find(|e| e.number == n)
            .unwrap_or_else(|| panic!("{file} is new: add what it does to EXPECT ({numbers:?})"));
        let tmp = readable_dir();
        round_trip(&broker, path, expect, tmp.path());
    }
    if files.len() > 1 {
        assert_eq!(files.len(), EXPECT.len(), "a file of EXPECT is gone from WARREN_REALWORLD_DIR");
    }
}

#[test]
fn renaming_covers_every_vhost_and_user() {
    for path in files() {
        let original = json(&std::fs::read_to_string(&path).unwrap());
        let doc = rename(&original, "99");
        let text = doc.to_string();
        for v in vhosts_of(&doc) {
            assert!(v.starts_with("t-import-99-"), "{}: {v}", path.display());
        }
        for u in items(&doc, "users").chain(items(&doc, "permissions")) {
            let name = u.get("name").unwrap_or(&u["user"]).as_str().unwrap();
            assert!(name.starts_with("t-import-99-"), "{}: {name}", path.display());
        }
        assert!(!text.contains("\"cluster_name\""), "{}", path.display());
    }
}
