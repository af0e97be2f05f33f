//! A topology as a cluster-wide RabbitMQ definitions document, the file that
//! `rabbitmqctl import_definitions` and `POST /api/definitions` read
//! (rabbitmq-reference.md section 7).
//!
//! Import only creates what is missing and overwrites mutable objects, so an
//! export is written to carry everything import needs to rebuild the objects
//! exactly:
//! - queues carry `x-queue-type`: import declares them from `arguments` and
//!   ignores the `type` field (which is written too, for readers);
//! - vhosts carry the default queue type both at the top level and in
//!   `metadata`: RabbitMQ 3.10 reads only `metadata.default_queue_type`;
//! - a vhost's limits are a runtime parameter (`vhost-limits`), written
//!   after its objects of kinds that are parameters too, as the broker's
//!   own exports do;
//! - users always name their hashing algorithm, so no `rabbit_version` is
//!   needed (import uses it only to guess a missing algorithm), and carry
//!   their limits in `limits`, as the broker's own exports do.

use serde_json::{Value as Json, json};

use crate::model::kinds::{Name, Object, bindings, exchanges, queues, vhosts};
use crate::model::{Table, Topology, Vhost};

/// The definitions document of `topology`. Pure: passwords given as
/// `Password::Env` must have been hashed by [`crate::password::resolve`] first; one
/// left unresolved is written with an empty hash (no password login), never
/// with the variable's value.
pub fn definitions(topology: &Topology) -> Json {
    let vhosts = || topology.vhosts.values();
    let collect = |f: fn(&Vhost) -> Vec<Json>| -> Json { vhosts().flat_map(f).collect() };
    let mut doc = json!({
        "users": [],
        "vhosts": vhosts().map(vhost).collect::<Vec<_>>(),
        "permissions": [],
        "topic_permissions": [],
        "parameters": collect(parameters),
        "global_parameters": [],
        "policies": [],
        "queues": collect(queues),
        "exchanges": collect(exchanges),
        "bindings": collect(bindings),
    });
    // A vhost's runtime parameters are written with it, in `parameters`;
    // its policies, by their kind, in `policies`, and its permissions, by
    // user, in `permissions`; the users, in name order, in `users`.
    for (vhost, name, body) in topology.kind_objects().filter(|(v, n, _)| v.is_none() || !is_parameter(n)) {
        let item = (name.kind.write)(vhost, &Object { id: name.id.clone(), body: body.clone() });
        let list = doc[name.kind.definitions].as_array_mut().expect("every kind's list is one of the above");
        list.push(item);
    }
    doc
}

/// The document as the file warren writes: pretty JSON and a final newline.
pub fn to_text(definitions: &Json) -> String {
    let mut text = serde_json::to_string_pretty(definitions).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// Only what the files manage, as the vhost settings' kind writes its item.
fn vhost(v: &Vhost) -> Json {
    (vhosts::KIND.write)(None, &vhosts::object(&v.name, &v.settings))
}

/// Whether objects of `name`'s kind are runtime parameters of their vhost.
fn is_parameter(name: &Name) -> bool {
    name.kind.definitions == "parameters"
}

/// The vhost's runtime parameters: its objects of kinds that are ones,
/// then its limits (when it declares some).
fn parameters(v: &Vhost) -> Vec<Json> {
    let of_kind =
        |(n, body): (&Name, &Table)| (n.kind.write)(Some(&v.name), &Object { id: n.id.clone(), body: body.clone() });
    let mut out: Vec<Json> = v.objects.iter().filter(|(n, _)| is_parameter(n)).map(of_kind).collect();
    out.extend(vhosts::limits_item(&vhosts::object(&v.name, &v.settings)));
    out
}

fn queues(v: &Vhost) -> Vec<Json> {
    let item = |q| (queues::KIND.write)(Some(&v.name), &queues::object(q));
    v.queues.values().map(item).collect()
}

fn exchanges(v: &Vhost) -> Vec<Json> {
    let item = |x| (exchanges::KIND.write)(Some(&v.name), &exchanges::object(x));
    v.exchanges.values().map(item).collect()
}

fn bindings(v: &Vhost) -> Vec<Json> {
    let item = |b| (bindings::KIND.write)(Some(&v.name), &bindings::object(b));
    v.bindings.iter().map(item).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{
        ApplyTo, Binding, DestinationKind, Exchange, Password, Permission, Policy, Queue, QueueType, User, Value,
    };

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn sample() -> Topology {
        let mut v = Vhost::new("orders");
        v.settings.description = Some("order events".into());
        v.settings.default_queue_type = Some(QueueType::Quorum);
        v.settings.limits = Some(BTreeMap::from([("max-queues".to_string(), 100)]));
        v.exchanges.insert(
            "orders.events".into(),
            Exchange {
                name: "orders.events".into(),
                kind: "topic".into(),
                durable: true,
                auto_delete: false,
                internal: false,
                arguments: Table::new(),
            },
        );
        v.queues.insert(
            "orders.audit".into(),
            Queue {
                name: "orders.audit".into(),
                kind: QueueType::Stream,
                durable: true,
                auto_delete: false,
                arguments: Table::from_iter([("x-max-age".to_string(), s("7D"))]),
                replaces: Some("audit".into()),
            },
        );
        v.bindings.insert(Binding {
            source: "orders.events".into(),
            destination_kind: DestinationKind::Queue,
            destination: "orders.audit".into(),
            routing_key: "order.#".into(),
            arguments: Table::new(),
        });
        let policy = Policy {
            name: "cap".into(),
            pattern: "^orders\\.".into(),
            apply_to: ApplyTo::Queues,
            priority: 1,
            definition: Table::from_iter([("max-length".to_string(), Value::Int(10))]),
        };
        v.set_policy(&policy);
        v.objects.extend(crate::model::kinds::operator_policies::objects([&policy]));
        v.set_permission(&Permission {
            user: "app".into(),
            configure: "^$".into(),
            write: "^$".into(),
            read: ".*".into(),
        });
        let mut t = Topology::default();
        t.vhosts.insert("orders".into(), v);
        t.set_user(&User {
            name: "app".into(),
            password: Password::None,
            tags: ["monitoring".to_string(), "management".to_string()].into(),
            limits: None,
        });
        t.set_user(&User {
            name: "ops".into(),
            password: Password::Hash { hash: "abc".into(), algorithm: Some("rabbit_password_hashing_sha512".into()) },
            tags: Default::default(),
            limits: None,
        });
        t
    }

    #[test]
    fn has_every_top_level_key_import_reads() {
        let d = definitions(&sample());
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        for k in [
            "users",
            "vhosts",
            "permissions",
            "topic_permissions",
            "parameters",
            "global_parameters",
            "policies",
            "queues",
            "exchanges",
            "bindings",
        ] {
            assert!(keys.contains(&k), "{k} missing from {keys:?}");
            assert!(d[k].is_array());
        }
    }

    #[test]
    fn queue_type_is_an_argument() {
        let d = definitions(&sample());
        assert_eq!(
            d["queues"],
            json!([{
                "name": "orders.audit",
                "vhost": "orders",
                "type": "stream",
                "durable": true,
                "auto_delete": false,
                "arguments": {"x-max-age": "7D", "x-queue-type": "stream"},
            }])
        );
    }

    #[test]
    fn vhost_settings_in_both_places_and_limits_as_a_parameter() {
        let d = definitions(&sample());
        assert_eq!(
            d["vhosts"],
            json!([{
                "name": "orders",
                "description": "order events",
                "default_queue_type": "quorum",
                "metadata": {"description": "order events", "default_queue_type": "quorum"},
            }])
        );
        assert_eq!(
            d["parameters"],
            json!([
                {"vhost": "orders", "component": "operator_policy", "name": "cap",
                 "value": {"pattern": "^orders\\.", "apply-to": "queues", "priority": 1,
                           "definition": {"max-length": 10}}},
                {"vhost": "orders", "component": "vhost-limits", "name": "limits",
                 "value": {"max-queues": 100}},
            ])
        );
    }

    #[test]
    fn an_unmanaged_vhost_is_only_named() {
        let mut t = Topology::default();
        t.vhosts.insert("/".into(), Vhost::new("/"));
        assert_eq!(definitions(&t)["vhosts"], json!([{"name": "/"}]));
        assert_eq!(definitions(&t)["parameters"], json!([]));
    }

    #[test]
    fn policies_exchanges_bindings_permissions() {
        let d = definitions(&sample());
        assert_eq!(
            d["policies"],
            json!([{"vhost": "orders", "name": "cap", "pattern": "^orders\\.",
                    "apply-to": "queues", "priority": 1, "definition": {"max-length": 10}}])
        );
        assert_eq!(
            d["exchanges"],
            json!([{"name": "orders.events", "vhost": "orders", "type": "topic", "durable": true,
                    "auto_delete": false, "internal": false, "arguments": {}}])
        );
        assert_eq!(
            d["bindings"],
            json!([{"source": "orders.events", "vhost": "orders", "destination": "orders.audit",
                    "destination_type": "queue", "routing_key": "order.#", "arguments": {}}])
        );
        assert_eq!(
            d["permissions"],
            json!([{"user": "app", "vhost": "orders", "configure": "^$", "write": "^$", "read": ".*"}])
        );
    }

    #[test]
    fn users_with_and_without_a_password() {
        let d = definitions(&sample());
        assert_eq!(
            d["users"],
            json!([
                {"name": "app", "password_hash": "", "hashing_algorithm": crate::password::SHA256,
                 "tags": ["management", "monitoring"], "limits": {}},
                {"name": "ops", "password_hash": "abc",
                 "hashing_algorithm": "rabbit_password_hashing_sha512", "tags": [], "limits": {}},
            ])
        );
    }

    #[test]
    fn is_deterministic() {
        let t = sample();
        assert_eq!(to_text(&definitions(&t)), to_text(&definitions(&t.clone())));
        assert!(to_text(&definitions(&t)).ends_with("}\n"));
    }
}
