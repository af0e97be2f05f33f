//! Topic permissions: which routing keys a user may publish with (write)
//! and bind or consume with (read), on one topic exchange of a vhost.
//! RabbitMQ checks them on topic exchanges only (`rabbit_auth_backend_internal`
//! `check_topic_access`); without one, a user's keys are not restricted.

use serde_json::json;

use super::{Attribute, Kind, Object, Phase, Presence, Request, Scope, Type, field};
use crate::model::Value;

pub(super) static KIND: Kind = Kind {
    name: "topic permission",
    table: "topic_permissions",
    scope: Scope::Vhost,
    identity: &[
        Attribute {
            name: "user",
            ty: Type::String,
            presence: Presence::Required,
            immutable: true,
            secret: false,
            about: "the user the permission is for",
        },
        Attribute {
            name: "exchange",
            ty: Type::String,
            presence: Presence::Required,
            immutable: true,
            secret: false,
            about: "the topic exchange it applies to (`amq.topic`, or one of yours)",
        },
    ],
    attributes: &[
        Attribute {
            name: "write",
            ty: Type::String,
            presence: Presence::Required,
            immutable: false,
            secret: false,
            about: "a regular expression the routing key of a message the user publishes must match",
        },
        Attribute {
            name: "read",
            ty: Type::String,
            presence: Presence::Required,
            immutable: false,
            secret: false,
            about: "a regular expression the binding key of the user's bindings and consumers must match",
        },
    ],
    about: "Which routing keys a user may publish with (`write`) and bind with (`read`) on one topic exchange. \
            They narrow the user's `permissions`, never widen them; a user with none on an exchange is not \
            restricted by key.",
    since: (3, 7),
    plugin: None,
    definitions: "topic_permissions",
    listing: Some("topic-permissions"),
    portable: true,
    // Deleting one lifts a restriction: the user's keys are then unrestricted.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

fn read(item: &serde_json::Value) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let id = vec![field(item, "user")?.to_string(), field(item, "exchange")?.to_string()];
        let text = |k: &str| field(item, k).map(|s| Value::String(s.to_string()));
        let body = [("read".to_string(), text("read")?), ("write".to_string(), text("write")?)].into_iter().collect();
        Ok(Object { id, body })
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> serde_json::Value {
    json!({ "user": o.id[0], "vhost": vhost, "exchange": o.id[1], "write": o.text("write"), "read": o.text("read") })
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    let path = vec!["topic-permissions".into(), vhost.unwrap_or_default().into(), o.id[0].clone()];
    vec![Request::new(path, json!({ "exchange": o.id[1], "write": o.text("write"), "read": o.text("read") }))]
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["topic-permissions".into(), vhost.unwrap_or_default().into(), id[0].clone(), id[1].clone()]
}
