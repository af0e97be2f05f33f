//! Global runtime parameters that teams set: `cluster_name`, `cluster_tags`
//! and the like (`rabbitmqctl set_global_parameter`). The broker's own
//! (`internal_cluster_id`) and warren's records are not of this kind.

use serde_json::json;

use super::{Attribute, Kind, Object, Phase, Presence, Request, Scope, Type, field};
use crate::model::Value;

pub(super) static KIND: Kind = Kind {
    name: "global parameter",
    table: "global_parameters",
    scope: Scope::Broker,
    identity: &[Attribute {
        name: "name",
        ty: Type::String,
        presence: Presence::Required,
        immutable: true,
        secret: false,
        about: "the parameter's name, such as `cluster_name`",
    }],
    attributes: &[Attribute {
        name: "value",
        ty: Type::Any,
        presence: Presence::Required,
        immutable: false,
        secret: false,
        about: "its value: a string, a number, a boolean, an array or a table",
    }],
    about: "A broker-wide runtime parameter, such as `cluster_name` (the name that management UIs and \
            monitoring show) or `cluster_tags`. Setting one needs the `administrator` tag. Only the \
            parameters a project declares are compared: the others on the broker are not shown. \
            `warren import` leaves them out, since they name one broker: declare the ones to manage.",
    since: (3, 7),
    plugin: None,
    definitions: "global_parameters",
    listing: Some("global-parameters"),
    // `cluster_name` names one broker: declared, never imported.
    portable: false,
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

/// Global parameters the broker sets itself, or warren keeps its records in.
fn not_a_team_setting(name: &str) -> bool {
    name == "internal_cluster_id" || name.starts_with("warren.")
}

fn read(item: &serde_json::Value) -> Option<Result<Object, String>> {
    let name = match field(item, "name") {
        Ok(n) if not_a_team_setting(n) => return None,
        Ok(n) => n.to_string(),
        Err(e) => return Some(Err(e)),
    };
    let value = Value::from(item.get("value").unwrap_or(&serde_json::Value::Null));
    Some(Ok(Object { id: vec![name], body: [("value".to_string(), value)].into_iter().collect() }))
}

fn write(_: Option<&str>, o: &Object) -> serde_json::Value {
    json!({ "name": o.id[0], "value": o.body.get("value").map(serde_json::Value::from) })
}

fn put(_: Option<&str>, o: &Object) -> Vec<Request> {
    vec![Request::new(vec!["global-parameters".into(), o.id[0].clone()], write(None, o))]
}

fn delete(_: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["global-parameters".into(), id[0].clone()]
}
