//! The private test broker, for tests that import definitions into it and
//! look for what they declared: its management API over HTTP (`ureq`), its
//! `rabbitmqctl`, and cleaning up after an import.
//!
//! [`Broker::from_env`] reads `WARREN_TEST_URL`, `WARREN_TEST_NODE`
//! (default 1) and `WARREN_TEST_RABBITMQCTL` (default `rabbitmqctl`; a
//! RabbitMQ 4 test node's runs the one in its Debian 13 root), as
//! `scripts/broker env` prints them; without the URL a test fails.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value as Json};

/// The private test broker: its management API, its node name and the
/// rabbitmqctl that talks to it.
pub struct Broker {
    api: String,
    auth: String,
    node: String,
    rabbitmqctl: String,
}

impl Broker {
    pub fn from_env() -> Broker {
        let url = std::env::var("WARREN_TEST_URL")
            .expect("WARREN_TEST_URL is not set: run the tests with scripts/test, which starts the private broker");
        let rest = url.strip_prefix("http://").expect("WARREN_TEST_URL looks like http://user:password@host:port");
        let (userinfo, host) = rest.split_once('@').expect("WARREN_TEST_URL has user:password@");
        let n = std::env::var("WARREN_TEST_NODE").unwrap_or_else(|_| "1".into());
        Broker {
            api: format!("http://{}/api", host.trim_end_matches('/')),
            auth: format!("Basic {}", STANDARD.encode(userinfo)),
            node: format!("warren-test{n}@localhost"),
            rabbitmqctl: std::env::var("WARREN_TEST_RABBITMQCTL").unwrap_or_else(|_| "rabbitmqctl".into()),
        }
    }

    /// `GET /api/PATH` as JSON; panics on any failure.
    pub fn get(&self, path: &str) -> Json {
        let mut response = ureq::get(format!("{}/{path}", self.api))
            .header("Authorization", &self.auth)
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        json(&super::broker::body_text(&mut response).unwrap_or_else(|e| panic!("GET {path}: {e}")))
    }

    /// `DELETE /api/PATH` if present. A failure is reported, not raised, so
    /// that cleaning up never hides the assertion that failed.
    pub fn delete(&self, path: &str) {
        match ureq::delete(format!("{}/{path}", self.api)).header("Authorization", &self.auth).call() {
            Ok(_) | Err(ureq::Error::StatusCode(404)) => {}
            Err(e) => eprintln!("cleanup: DELETE {path}: {e}"),
        }
    }

    /// `PUT` or `POST /api/PATH` with a JSON body; panics on any failure.
    pub fn send(&self, method: &str, path: &str, body: &Json) {
        let url = format!("{}/{path}", self.api);
        let request = match method {
            "PUT" => ureq::put(url),
            "POST" => ureq::post(url),
            other => panic!("send: unsupported method {other}"),
        };
        request
            .header("Authorization", &self.auth)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    }

    /// `rabbitmqctl -n NODE ARGS`.
    pub fn ctl(&self, args: &[&str]) -> std::process::Output {
        Command::new(&self.rabbitmqctl).arg("-n").arg(&self.node).args(args).output().expect("rabbitmqctl runs")
    }

    /// `rabbitmqctl import_definitions FILE`, after making the file readable
    /// to the `rabbitmq` user that Debian's rabbitmqctl reads it as (its
    /// folder must be too: see [`readable_dir`]). The error is the CLI's
    /// output.
    pub fn import_file(&self, file: &Path) -> Result<(), String> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).map_err(|e| e.to_string())?;
        }
        let path = file.canonicalize().map_err(|e| e.to_string())?;
        let out = self.ctl(&["import_definitions", path.to_str().unwrap()]);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Writes `doc` into `dir` and imports it.
    pub fn import(&self, dir: &Path, doc: &Json) -> Result<(), String> {
        let file = dir.join("definitions.json");
        std::fs::write(&file, serde_json::to_string_pretty(doc).unwrap()).map_err(|e| e.to_string())?;
        self.import_file(&file)
    }

    /// What [`missing`] finds after import, waited for: rabbitmqctl calls
    /// the import asynchronous, so allow it a moment.
    pub fn await_imported(&self, doc: &Json, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let lacking = missing(&self.get("definitions"), doc);
            if lacking.is_empty() || Instant::now() > deadline {
                return lacking;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// `WARREN_TEST_URL`, for `warren --url`; without it the test fails.
pub fn test_url() -> String {
    std::env::var("WARREN_TEST_URL")
        .expect("WARREN_TEST_URL is not set: run the tests with scripts/test, which starts the private broker")
}

/// The test broker's URL as warren shows it: without credentials.
pub fn shown_url() -> String {
    let url = test_url();
    let (scheme, rest) = url.split_once("://").expect("WARREN_TEST_URL has a scheme");
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{}", host.trim_end_matches('/'))
}

/// A temporary folder the `rabbitmq` user can read files in.
pub fn readable_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

pub fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// Percent-encodes a name for a path segment (`/` is `%2F`).
pub fn seg(s: &Json) -> String {
    let s = s.as_str().expect("a name");
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Vhosts other tests and the broker itself use: only the objects a
/// document created in them are removed, never the vhost.
pub const SHARED_VHOSTS: [&str; 1] = ["/"];

/// Removes from the broker what importing `doc` created: its vhosts whole,
/// its objects in shared vhosts one by one, its users.
pub fn remove(broker: &Broker, doc: &Json) {
    let items = |key: &str| doc[key].as_array().cloned().unwrap_or_default();
    let shared = |item: &Json| SHARED_VHOSTS.iter().any(|v| item["vhost"] == *v);
    for v in items("vhosts") {
        if !SHARED_VHOSTS.iter().any(|s| v["name"] == *s) {
            broker.delete(&format!("vhosts/{}", seg(&v["name"])));
        }
    }
    let named = |key: &str, path: &str, field: &str| {
        for item in items(key).iter().filter(|i| shared(i)) {
            broker.delete(&format!("{path}/{}/{}", seg(&item["vhost"]), seg(&item[field])));
        }
    };
    named("queues", "queues", "name");
    named("exchanges", "exchanges", "name");
    named("policies", "policies", "name");
    named("permissions", "permissions", "user");
    for item in items("parameters").iter().filter(|i| shared(i)) {
        let vhost = seg(&item["vhost"]);
        match item["component"].as_str() {
            Some("operator_policy") => broker.delete(&format!("operator-policies/{vhost}/{}", seg(&item["name"]))),
            Some("vhost-limits") => {
                for limit in item["value"].as_object().into_iter().flatten().map(|l| l.0) {
                    broker.delete(&format!("vhost-limits/{vhost}/{}", seg(&Json::from(limit.as_str()))));
                }
            }
            other => panic!("unexpected parameter component {other:?}"),
        }
    }
    for u in items("users") {
        broker.delete(&format!("users/{}", seg(&u["name"])));
    }
}

/// Removes what imports created when dropped, also when an assertion fails.
pub struct Cleanup<'a> {
    pub broker: &'a Broker,
    pub docs: Vec<Json>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for doc in &self.docs {
            remove(self.broker, doc);
        }
    }
}

/// What import must have created for each key, compared on these fields
/// (the broker's own export adds others).
pub const CHECKS: &[(&str, &[&str])] = &[
    ("exchanges", &["vhost", "name", "type", "durable", "auto_delete", "internal", "arguments"]),
    ("queues", &["vhost", "name", "durable", "auto_delete", "arguments"]),
    ("bindings", &["vhost", "source", "destination", "destination_type", "routing_key", "arguments"]),
    ("policies", &["vhost", "name", "pattern", "apply-to", "priority", "definition"]),
    ("parameters", &["vhost", "component", "name", "value"]),
    ("users", &["name", "password_hash", "hashing_algorithm"]),
    ("permissions", &["vhost", "user", "configure", "write", "read"]),
    ("vhosts", &["name"]),
];

/// The item's fields as canonical text (keys sorted at every level).
fn project(item: &Json, fields: &[&str]) -> String {
    let m: Map<String, Json> = fields.iter().map(|f| (f.to_string(), item[f].clone())).collect();
    warren::model::Value::from(&Json::Object(m)).to_string()
}

/// Every item of `doc` that the live definitions lack, described.
/// RabbitMQ 4 gives each queue declared without `x-queue-type` the
/// argument (the vhost's default queue type, else the node's): a queue the
/// document declares without it is looked for both ways.
pub fn missing(live: &Json, doc: &Json) -> Vec<String> {
    let mut out = Vec::new();
    for (key, fields) in CHECKS {
        let have: HashSet<String> = live[key].as_array().into_iter().flatten().map(|l| project(l, fields)).collect();
        for item in doc[key].as_array().into_iter().flatten() {
            let found = |typed: &Json| have.contains(&project(typed, fields));
            let typed_by_4x = |kind: &str| {
                let mut typed = item.clone();
                typed["arguments"]["x-queue-type"] = Json::from(kind);
                found(&typed)
            };
            let untyped = *key == "queues" && item["arguments"].get("x-queue-type").is_none();
            let typed_found = untyped && ["classic", "quorum", "stream"].into_iter().any(typed_by_4x);
            if !found(item) && !typed_found {
                out.push(format!("{key}: {item}"));
            }
        }
    }
    out
}
