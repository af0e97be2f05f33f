//! `warren export` through the real binary: what it prints and refuses
//! without a broker, and a real broker importing the export of every example
//! (`rabbitmqctl import_definitions`) and then holding every exported object.
//!
//! The broker test reads `WARREN_TEST_URL` (and `WARREN_TEST_NODE`, default
//! 1, for the node name) as `scripts/test` sets them; without them it fails.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value as Json;
use warren::model::Password;
use warren::password::hash_with_salt;

use common::{corpus, root, warren_env};

/// The users of a topology that read a password from a variable, as
/// `(user, variable, password)`, with a password made up for the test.
fn passwords(path: &str) -> Vec<(String, String, String)> {
    let desired = warren::desired::load(&root().join(path));
    assert!(!desired.has_errors(), "{path} is not valid");
    desired
        .topology
        .users
        .values()
        .filter_map(|u| match &u.password {
            Password::Env(var) => Some((u.name.clone(), var.clone(), format!("pw-{}-7", u.name))),
            _ => None,
        })
        .collect()
}

fn env_of(passwords: &[(String, String, String)]) -> Vec<(&str, Option<&str>)> {
    passwords.iter().map(|(_, var, pw)| (var.as_str(), Some(pw.as_str()))).collect()
}

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
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

/// The private test broker: its management API and its node name.
struct Broker {
    api: String,
    auth: String,
    node: String,
}

impl Broker {
    fn from_env() -> Broker {
        let url = std::env::var("WARREN_TEST_URL")
            .expect("WARREN_TEST_URL is not set: run the tests with scripts/test, which starts the private broker");
        let rest = url.strip_prefix("http://").expect("WARREN_TEST_URL looks like http://user:password@host:port");
        let (userinfo, host) = rest.split_once('@').expect("WARREN_TEST_URL has user:password@");
        let n = std::env::var("WARREN_TEST_NODE").unwrap_or_else(|_| "1".into());
        Broker {
            api: format!("http://{}/api", host.trim_end_matches('/')),
            auth: format!("Basic {}", STANDARD.encode(userinfo)),
            node: format!("warren-test{n}@localhost"),
        }
    }

    fn get(&self, path: &str) -> Json {
        let mut response = ureq::get(format!("{}/{path}", self.api))
            .header("Authorization", &self.auth)
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        json(&response.body_mut().read_to_string().unwrap())
    }

    /// Deletes if present; a failure is reported, not raised, so that
    /// cleaning up never hides the assertion that failed.
    fn delete(&self, path: &str) {
        match ureq::delete(format!("{}/{path}", self.api)).header("Authorization", &self.auth).call() {
            Ok(_) | Err(ureq::Error::StatusCode(404)) => {}
            Err(e) => eprintln!("cleanup: DELETE {path}: {e}"),
        }
    }

    fn ctl(&self, args: &[&str]) -> std::process::Output {
        Command::new("rabbitmqctl").arg("-n").arg(&self.node).args(args).output().expect("rabbitmqctl runs")
    }
}

/// Percent-encodes a path segment (`/` is `%2F`).
fn seg(s: &Json) -> String {
    let s = s.as_str().expect("a name");
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Vhosts other tests and the broker itself use: only the objects the export
/// created in them are removed, never the vhost.
const SHARED_VHOSTS: [&str; 1] = ["/"];

/// Removes from the broker what importing `doc` created.
fn remove(broker: &Broker, doc: &Json) {
    let items = |key: &str| doc[key].as_array().cloned().unwrap_or_default();
    let shared = |item: &Json| SHARED_VHOSTS.iter().any(|v| item["vhost"] == *v);
    for v in items("vhosts") {
        if !SHARED_VHOSTS.iter().any(|s| v["name"] == *s) {
            broker.delete(&format!("vhosts/{}", seg(&v["name"])));
        }
    }
    for item in items("queues").iter().filter(|i| shared(i)) {
        broker.delete(&format!("queues/{}/{}", seg(&item["vhost"]), seg(&item["name"])));
    }
    for item in items("exchanges").iter().filter(|i| shared(i)) {
        broker.delete(&format!("exchanges/{}/{}", seg(&item["vhost"]), seg(&item["name"])));
    }
    for item in items("policies").iter().filter(|i| shared(i)) {
        broker.delete(&format!("policies/{}/{}", seg(&item["vhost"]), seg(&item["name"])));
    }
    for item in items("permissions").iter().filter(|i| shared(i)) {
        broker.delete(&format!("permissions/{}/{}", seg(&item["vhost"]), seg(&item["user"])));
    }
    for item in items("parameters").iter().filter(|i| shared(i)) {
        let vhost = seg(&item["vhost"]);
        match item["component"].as_str() {
            Some("operator_policy") => broker.delete(&format!("operator-policies/{vhost}/{}", seg(&item["name"]))),
            Some("vhost-limits") => {
                for limit in item["value"].as_object().into_iter().flatten() {
                    broker.delete(&format!("vhost-limits/{vhost}/{}", seg(&Json::from(limit.0.as_str()))));
                }
            }
            other => panic!("unexpected parameter component {other:?}"),
        }
    }
    for u in items("users") {
        broker.delete(&format!("users/{}", seg(&u["name"])));
    }
}

/// Removes what the imports created, also when an assertion fails.
struct Cleanup<'a> {
    broker: &'a Broker,
    docs: Vec<Json>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for doc in &self.docs {
            remove(self.broker, doc);
        }
    }
}

/// What import must have created for each key, compared on these fields.
const CHECKS: &[(&str, &[&str])] = &[
    ("exchanges", &["vhost", "name", "type", "durable", "auto_delete", "internal", "arguments"]),
    ("queues", &["vhost", "name", "durable", "auto_delete", "arguments"]),
    ("bindings", &["vhost", "source", "destination", "destination_type", "routing_key", "arguments"]),
    ("policies", &["vhost", "name", "pattern", "apply-to", "priority", "definition"]),
    ("parameters", &["vhost", "component", "name", "value"]),
    ("users", &["name", "password_hash", "hashing_algorithm"]),
    ("permissions", &["vhost", "user", "configure", "write", "read"]),
    ("vhosts", &["name"]),
];

/// Every exported item the live definitions lack, described.
fn missing(live: &Json, doc: &Json) -> Vec<String> {
    let mut out = Vec::new();
    for (key, fields) in CHECKS {
        let live_items = live[key].as_array().cloned().unwrap_or_default();
        for item in doc[key].as_array().into_iter().flatten() {
            let found = live_items.iter().any(|l| fields.iter().all(|f| l[f] == item[f]));
            if !found {
                out.push(format!("{key}: {item}"));
            }
        }
    }
    out
}

#[test]
fn the_broker_imports_every_example_and_holds_every_object() {
    let broker = Broker::from_env();
    let dir = tempfile::tempdir().unwrap();
    // rabbitmqctl reads the file as the `rabbitmq` user.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let examples = corpus("examples");
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
    let cleanup = Cleanup { broker: &broker, docs: exported.iter().map(|e| e.2.clone()).collect() };
    // Start clean: an earlier run that was killed may have left objects.
    for doc in &cleanup.docs {
        remove(&broker, doc);
    }

    for (example, file, _, _) in &exported {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let out = broker.ctl(&["import_definitions", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{example}: import_definitions failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // rabbitmqctl calls the import asynchronous: allow it a moment.
    let deadline = Instant::now() + Duration::from_secs(15);
    for (example, _, doc, _) in &exported {
        let lacking = loop {
            let lacking = missing(&broker.get("definitions"), doc);
            if lacking.is_empty() || Instant::now() > deadline {
                break lacking;
            }
            std::thread::sleep(Duration::from_millis(300));
        };
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

    let live = broker.get("definitions");
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
