//! Kinds kept by the broker as vhost runtime parameters of one component
//! (`/api/parameters/{component}/{vhost}/{name}`, the `parameters` list of
//! an export): shovels and federation upstreams. The broker keeps a
//! parameter's value as it was given, defaults left out.

use serde_json::{Map, Value as Json, json};

use super::{Attribute, Fixed, Kind, Object, Request, Type, field};
use crate::model::{Table, Value};

/// When a shovel or a federation link acknowledges a message at its
/// source: `on-confirm` (the default) loses none.
pub(super) const ACK_MODES: Type = Type::OneOf(&["on-confirm", "on-publish", "no-ack"]);

/// The seconds a shovel or a federation link waits to reconnect.
pub(super) const RECONNECT_DELAY: Attribute =
    Attribute::defaulted("reconnect-delay", Type::Integer, Fixed::Int(5), "seconds between reconnection attempts");

/// A `parameters` item of `component` as an object of `kind`: its value's
/// keys are the kind's attributes (`renamed` maps a key an older broker
/// wrote to the one it means now). A key the kind does not know makes the
/// item unreadable rather than silently dropped, which would let an update
/// erase it.
pub(super) fn read(
    kind: &Kind,
    component: &str,
    renamed: &[(&str, &str)],
    item: &Json,
) -> Option<Result<Object, String>> {
    if item.get("component").and_then(Json::as_str) != Some(component) {
        return None;
    }
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?.to_string();
        let Some(value) = item.get("value").and_then(Json::as_object) else {
            return Err("its `value` is not an object".into());
        };
        let mut body = Table::with_capacity(value.len());
        for (key, v) in value {
            let key = renamed.iter().find(|(old, _)| old == key).map_or(key.as_str(), |(_, new)| new);
            if kind.attribute(key).is_none() {
                return Err(format!("its value has `{key}`, which warren does not know for a {}", kind.name));
            }
            body.insert(key.to_string(), Value::from(v));
        }
        Ok(Object { id: vec![name], body })
    };
    Some(object())
}

/// The `parameters` item of an object.
pub(super) fn write(component: &str, vhost: Option<&str>, o: &Object) -> Json {
    json!({ "vhost": vhost, "component": component, "name": o.id[0], "value": value(o) })
}

/// The value of the parameter: the object's body.
pub(super) fn value(o: &Object) -> Json {
    Json::Object(o.body.iter().map(|(k, v)| (k.clone(), Json::from(v))).collect::<Map<_, _>>())
}

pub(super) fn put(component: &str, vhost: Option<&str>, o: &Object, value: Json) -> Vec<Request> {
    vec![Request::new(path(component, vhost, &o.id), json!({ "value": value }))]
}

pub(super) fn path(component: &str, vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["parameters".into(), component.into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

/// The four functions of a kind whose object is one parameter of
/// `$component`, its value the object's body (`$renamed`: keys an older
/// broker wrote, as `read` takes them).
macro_rules! parameter_functions {
    ($component:expr, $renamed:expr) => {
        fn read(item: &serde_json::Value) -> Option<Result<Object, String>> {
            parameter::read(&KIND, $component, $renamed, item)
        }

        fn write(vhost: Option<&str>, o: &Object) -> serde_json::Value {
            parameter::write($component, vhost, o)
        }

        fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
            parameter::put($component, vhost, o, parameter::value(o))
        }

        fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
            parameter::path($component, vhost, id)
        }
    };
}
pub(super) use parameter_functions;
