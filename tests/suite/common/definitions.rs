//! Definitions documents, for tests that import them into the private test
//! broker ([`TestBroker::import`]): reading them, the paths of their
//! objects, removing what an import created, and what the broker lacks of
//! them.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Map, Value as Json};

use super::TestBroker;

/// A document from its text; not JSON fails the test.
pub(crate) fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// Percent-encodes a name for a path segment (`/` is `%2F`).
pub(crate) fn seg(s: &Json) -> String {
    super::seg(s.as_str().expect("a name"))
}

/// Vhosts other tests and the broker itself use: only the objects a
/// document created in them are removed, never the vhost.
pub(crate) const SHARED_VHOSTS: [&str; 1] = ["/"];

/// Removes from the broker what importing `doc` created: its vhosts whole,
/// its objects in shared vhosts one by one, its users.
pub(crate) fn remove(broker: &TestBroker, doc: &Json) {
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
pub(crate) struct Cleanup<'a> {
    pub broker: &'a TestBroker,
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
pub(crate) const CHECKS: &[(&str, &[&str])] = &[
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
pub(crate) fn missing(live: &Json, doc: &Json) -> Vec<String> {
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

impl TestBroker {
    /// What [`missing`] finds after import, waited for: rabbitmqctl calls
    /// the import asynchronous, so allow it a moment.
    pub(crate) fn await_imported(&self, doc: &serde_json::Value, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let lacking = missing(&self.definitions(), doc);
            if lacking.is_empty() || Instant::now() > deadline {
                return lacking;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}
