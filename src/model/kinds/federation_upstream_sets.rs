//! Federation upstream sets: a vhost's runtime parameters of component
//! `federation-upstream-set`, whose value is a list of upstreams, each
//! with keys of its own that override the upstream's.

use serde_json::Value as Json;

use super::{Attribute, Kind, Object, Phase, Request, Scope, Type, field, parameter};
use crate::model::Value;

const COMPONENT: &str = "federation-upstream-set";

pub(super) static KIND: Kind = Kind {
    name: "federation upstream set",
    table: "federation_upstream_sets",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the set's name") }],
    attributes: &[Attribute::required(
        "upstreams",
        Type::Any,
        "an array of tables, each with `upstream` (an upstream's name) and any upstream key to override",
    )],
    about: "A named set of federation upstreams, for a policy's `federation-upstream-set` key (`all` is the \
            broker's own set of every upstream).",
    since: (3, 7),
    plugin: Some("rabbitmq_federation"),
    definitions: "parameters",
    listing: None,
    portable: true,
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

fn read(item: &Json) -> Option<Result<Object, String>> {
    if item.get("component").and_then(Json::as_str) != Some(COMPONENT) {
        return None;
    }
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?.to_string();
        let upstreams = item.get("value").filter(|v| v.is_array()).ok_or("its `value` is not an array")?;
        Ok(Object { id: vec![name], body: [("upstreams".to_string(), Value::from(upstreams))].into_iter().collect() })
    };
    Some(object())
}

fn upstreams(o: &Object) -> Json {
    o.body.get("upstreams").map_or(Json::Array(Vec::new()), Json::from)
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    serde_json::json!({ "vhost": vhost, "component": COMPONENT, "name": o.id[0], "value": upstreams(o) })
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    parameter::put(COMPONENT, vhost, o, upstreams(o))
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    parameter::path(COMPONENT, vhost, id)
}
