//! `warren export` through the real binary: what it prints and refuses
//! without a broker, and a real broker importing the export of every example
//! (`rabbitmqctl import_definitions`) and then holding every exported object.
//!
//! The broker tests also import generated definitions and the exports of
//! arbitrary topologies. They read `WARREN_TEST_URL` (and `WARREN_TEST_NODE`,
//! default 1, for the node name) as `scripts/test` sets them; without them
//! they fail.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value as Json;
use warren::model::Password;
use warren::password::hash_with_salt;

use crate::common::broker::{TestBroker, readable_dir};
use crate::common::definitions::{Cleanup, json, remove, seg};
use crate::common::r#gen::large_definitions;
use crate::common::strategy;
use crate::common::{root, warren_env};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use warren::export::definitions;
use warren::model::Topology;

/// The users of a topology that read a password from a variable, as
/// `(user, variable, password)`, with a password made up for the test.
fn passwords(path: &str) -> Vec<(String, String, String)> {
    let desired = warren::desired::load(&root().join(path));
    assert!(!desired.has_errors(), "{path} is not valid");
    desired
        .topology
        .users()
        .into_values()
        .filter_map(|u| match &u.password {
            Password::Env(var) => Some((u.name.clone(), var.clone(), format!("pw-{}-7", u.name))),
            _ => None,
        })
        .collect()
}

fn env_of(passwords: &[(String, String, String)]) -> Vec<(&str, Option<&str>)> {
    passwords.iter().map(|(_, var, pw)| (var.as_str(), Some(pw.as_str()))).collect()
}

#[test]
fn the_shop_exports_to_a_stable_document() {
    let run = warren_env(&["export", "examples/shop"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let again = warren_env(&["export", "examples/shop"], &[]);
    assert_eq!(run.stdout, again.stdout, "two exports differ");
    insta::assert_snapshot!("export-shop", run.stdout);
}

#[test]
fn an_unset_password_variable_fails_naming_the_user_and_variable() {
    let secret = "hunter2-never-printed";
    let run = warren_env(
        &["export", "examples/order-events"],
        &[("ANALYTICS_PASSWORD", None), ("FULFILLMENT_PASSWORD", Some(secret))],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing may be exported");
    assert!(run.stderr.contains("warren::password-env"), "{}", run.stderr);
    assert!(run.stderr.contains("user \"analytics\"") && run.stderr.contains("$ANALYTICS_PASSWORD"), "{}", run.stderr);
    assert!(
        run.stderr.contains("examples/order-events/access.toml:"),
        "the diagnostic points at the file: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("fulfillment\""), "{}", run.stderr);
    assert!(!run.stderr.contains(secret));
}

#[test]
fn an_empty_password_variable_is_refused() {
    let run = warren_env(
        &["export", "examples/order-events"],
        &[("ANALYTICS_PASSWORD", Some("")), ("FULFILLMENT_PASSWORD", Some("x"))],
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("which is empty"), "{}", run.stderr);
}

#[test]
fn passwords_are_written_as_salted_hashes_and_never_printed() {
    let pws = passwords("examples/order-events");
    assert_eq!(pws.len(), 2);
    let run = warren_env(&["export", "examples/order-events"], &env_of(&pws));
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (_, _, pw) in &pws {
        assert!(!run.stdout.contains(pw.as_str()) && !run.stderr.contains(pw.as_str()));
    }
    let doc = json(&run.stdout);
    for (user, _, pw) in &pws {
        let u = doc["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == user.as_str())
            .unwrap_or_else(|| panic!("user {user} not exported"));
        assert_eq!(u["hashing_algorithm"], "rabbit_password_hashing_sha256");
        let hash = u["password_hash"].as_str().unwrap();
        let salt: [u8; 4] = STANDARD.decode(hash).unwrap()[..4].try_into().unwrap();
        assert_eq!(hash_with_salt(pw, salt), hash);
    }
}

#[test]
fn out_writes_a_file_only_its_owner_reads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("defs.json");
    let run = warren_env(&["export", "examples/shop", "--out", file.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("Exported examples/shop to") && run.stderr.contains("7 queues, 7 bindings"),
        "{}",
        run.stderr
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written, warren_env(&["export", "examples/shop"], &[]).stdout);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn an_invalid_topology_exports_nothing() {
    let run = warren_env(&["export", "tests/invalid/16-exchange-type-topc.toml"], &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("warren::bad-value"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing exported"), "{}", run.stderr);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_broker_imports_every_example_and_holds_every_object() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let dir = readable_dir();
    let examples = crate::common::examples();
    assert!(examples.len() >= 3, "examples: {examples:?}");
    let mut exported = Vec::new();
    for example in &examples {
        let pws = passwords(example);
        let name = Path::new(example).file_name().unwrap().to_string_lossy();
        let file = dir.path().join(format!("{name}.json"));
        let run = warren_env(&["export", example, "--out", file.to_str().unwrap()], &env_of(&pws));
        assert_eq!(run.code, 0, "{example}: {}", run.stderr);
        let doc = json(&std::fs::read_to_string(&file).unwrap());
        exported.push((example.clone(), file, doc, pws));
    }
    // Users an example lists as external are made elsewhere, as their
    // permissions in the export assume: made here before the import.
    let external: BTreeSet<String> = (exported.iter())
        .flat_map(|(_, _, doc, _)| {
            let name = |j: &Json| j.as_str().unwrap().to_string();
            let declared: BTreeSet<String> =
                doc["users"].as_array().unwrap().iter().map(|u| name(&u["name"])).collect();
            let permitted = doc["permissions"].as_array().unwrap().iter().map(move |p| name(&p["user"]));
            permitted.filter(move |u| !declared.contains(u))
        })
        .collect();
    let made_elsewhere =
        serde_json::json!({"users": external.iter().map(|u| serde_json::json!({"name": u})).collect::<Vec<_>>()});
    let mut docs: Vec<Json> = exported.iter().map(|e| e.2.clone()).collect();
    docs.push(made_elsewhere);
    let cleanup = Cleanup { broker: &broker, docs };
    // Start clean: an earlier run that was killed may have left objects.
    for doc in &cleanup.docs {
        remove(&broker, doc);
    }
    for user in &external {
        broker.put(
            &format!("users/{}", seg(&Json::from(user.as_str()))),
            serde_json::json!({"password": "made-elsewhere-4Tq", "tags": ""}),
        );
    }

    for (example, file, _, _) in &exported {
        if let Err(e) = broker.import_file(file) {
            panic!("{example}: import_definitions failed:\n{e}");
        }
    }
    for (example, _, doc, _) in &exported {
        let lacking = broker.await_imported(doc, Duration::from_secs(15));
        assert!(lacking.is_empty(), "{example}: the broker lacks\n{}", lacking.join("\n"));
    }

    for (example, _, doc, pws) in &exported {
        for q in doc["queues"].as_array().unwrap() {
            let live = broker.get(&format!("queues/{}/{}", seg(&q["vhost"]), seg(&q["name"])));
            assert_eq!(live["type"], q["type"], "{example}: queue {}", q["name"]);
        }
        for v in doc["vhosts"].as_array().unwrap() {
            let live = broker.get(&format!("vhosts/{}", seg(&v["name"])));
            for field in ["description", "default_queue_type"] {
                if !v[field].is_null() {
                    assert_eq!(live[field], v[field], "{example}: vhost {}", v["name"]);
                }
            }
        }
        for u in doc["users"].as_array().unwrap() {
            let live = broker.get(&format!("users/{}", seg(&u["name"])));
            let tags = |j: &Json| {
                let mut t: Vec<String> =
                    j.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
                t.sort();
                t
            };
            assert_eq!(tags(&live["tags"]), tags(&u["tags"]), "{example}: user {}", u["name"]);
        }
        for (user, _, pw) in pws {
            let out = broker.ctl(&["authenticate_user", user, pw]);
            assert!(
                out.status.success(),
                "{example}: {user} cannot log in with the exported password: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    drop(cleanup);

    let live = broker.definitions();
    for (example, _, doc, _) in &exported {
        for v in doc["vhosts"].as_array().unwrap() {
            if v["name"] != "/" {
                let names: Vec<&Json> = live["vhosts"].as_array().unwrap().iter().map(|l| &l["name"]).collect();
                assert!(!names.contains(&&v["name"]), "{example}: vhost {} was not removed", v["name"]);
            }
        }
        for q in doc["queues"].as_array().unwrap() {
            let left =
                live["queues"].as_array().unwrap().iter().any(|l| l["vhost"] == q["vhost"] && l["name"] == q["name"]);
            assert!(!left, "{example}: queue {} was not removed", q["name"]);
        }
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_broker_imports_generated_definitions() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let doc = json(&large_definitions(1_000, 50, 2_000));
    let _cleanup = Cleanup { broker: &broker, docs: vec![doc.clone()] };
    remove(&broker, &doc);
    let dir = readable_dir();
    broker.import(dir.path(), &doc).expect("import_definitions");
    let lacking = broker.await_imported(&doc, Duration::from_secs(30));
    assert!(lacking.is_empty(), "the broker lacks\n{}", lacking.join("\n"));
}

/// The topology with its vhosts and users renamed `PREFIX…`, so that a test
/// owns every vhost it imports into (`/` becomes `PREFIX/`).
fn namespaced(t: Topology, prefix: &str) -> Topology {
    let name = |n: &str| format!("{prefix}{n}");
    let users: Vec<_> = t
        .users()
        .into_values()
        .map(|mut u| {
            u.name = name(&u.name);
            u
        })
        .collect();
    let vhosts = t
        .vhosts
        .into_values()
        .map(|mut v| {
            v.name = name(&v.name);
            let permissions = v.permissions();
            v.retain_permissions(|_| false);
            for mut p in permissions.into_values() {
                p.user = name(&p.user);
                v.set_permission(&p);
            }
            (v.name.clone(), v)
        })
        .collect();
    let mut t = Topology { vhosts, ..Topology::default() };
    for u in &users {
        t.set_user(u);
    }
    t
}

/// Arbitrary topologies the 3.10 broker should accept: each export imports
/// without error and leaves every object on the broker. (The stronger
/// property, that a plan afterwards is empty, waits for the live side.)
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_broker_imports_the_export_of_arbitrary_topologies() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let dir = readable_dir();
    let config =
        ProptestConfig { cases: 12, max_shrink_iters: 32, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy::topology_3_10(), |t| {
        let doc = definitions(&namespaced(t, "warren-prop-"));
        let _cleanup = Cleanup { broker: &broker, docs: vec![doc.clone()] };
        remove(&broker, &doc);
        if let Err(e) = broker.import(dir.path(), &doc) {
            return Err(TestCaseError::fail(format!("import failed: {e}\n{doc:#}")));
        }
        let lacking = broker.await_imported(&doc, Duration::from_secs(10));
        prop_assert!(lacking.is_empty(), "the broker lacks\n{}\nof\n{doc:#}", lacking.join("\n"));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
