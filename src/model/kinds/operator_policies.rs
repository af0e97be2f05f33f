//! Operator policies: a vhost's runtime parameters of component
//! `operator_policy`, set and deleted at `/api/operator-policies/{vhost}/{name}`
//! (administrators only). They cap what a queue's policy and arguments
//! set (`rabbit_policy:merge_operator_definitions`): the broker takes the
//! lower of a limit the two set.
//!
//! The first kind that warren had before the seam: its objects are
//! declared here, and [`policy`] is the typed view that the routing model,
//! lint and the migration compiler read (what an operator policy does to a
//! queue's effective arguments), derived from an object.

use serde_json::{Map, Value as Json, json};

use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field};
use crate::model::{ApplyTo, Policy, Table, Value, definition_findings};

/// The runtime parameters' component that holds operator policies.
const COMPONENT: &str = "operator_policy";

/// The values `apply_to` takes: the broker's, as [`ApplyTo::as_str`] gives them.
const APPLY_TO: Type = Type::OneOf(&["all", "queues", "exchanges", "classic_queues", "quorum_queues", "streams"]);

pub static KIND: Kind = Kind {
    name: "operator policy",
    table: "operator_policies",
    scope: Scope::Vhost,
    identity: &[Attribute {
        immutable: true,
        ..Attribute::required("name", Type::String, "the operator policy's name")
    }],
    attributes: &[
        Attribute::required(
            "pattern",
            Type::String,
            "a regular expression the names of the queues it applies to match",
        ),
        Attribute::defaulted("apply_to", APPLY_TO, Fixed::Str("all"), "the objects it applies to"),
        Attribute::defaulted(
            "priority",
            Type::Integer,
            Fixed::Int(0),
            "of several operator policies matching a queue, the one of highest priority applies",
        ),
        Attribute::required(
            "definition",
            Type::Table,
            "the keys it sets, each one an operator policy may set (see Policy keys)",
        ),
    ],
    about: "A policy an administrator sets over the users' own: the lower of a limit it and a queue's policy \
            or argument set applies.",
    since: (3, 7),
    plugin: None,
    definitions: "parameters",
    listing: None,
    portable: true,
    // Deleting one lifts a cap; nothing is lost.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(check),
    // Set before queues, as policies are: a queue is declared under its caps.
    phase: Phase::PutPolicy,
};

/// Its `definition`, by the policy-key tables: keys RabbitMQ knows, and
/// of those only the ones an operator policy may set.
fn check(o: &Object) -> Vec<Finding> {
    match o.body.get("definition") {
        Some(Value::Table(d)) if d.is_empty() => vec![Finding {
            path: vec!["definition".into()],
            at_key: false,
            code: "bad-value",
            message: format!("operator policy \"{}\" has an empty `definition`", o.id[0]),
            label: None,
            help: "RabbitMQ refuses a policy that sets nothing; add a key or remove the policy".into(),
        }],
        Some(Value::Table(d)) => definition_findings(d, true),
        None => Vec::new(),
        Some(other) => vec![Finding {
            path: vec!["definition".into()],
            at_key: false,
            code: "wrong-type",
            message: format!("`definition` must be a table, not {}", other.kind()),
            label: None,
            help: "write `definition = { \"max-length\" = 1000 }` with the keys it sets".into(),
        }],
    }
}

/// The typed view of an object: `None` when its `apply_to` or its types
/// are not an operator policy's (a file or a broker checked them first).
pub fn policy(name: &str, body: &Table) -> Option<Policy> {
    Some(Policy {
        name: name.to_string(),
        pattern: body.get("pattern")?.as_str()?.to_string(),
        apply_to: match body.get("apply_to") {
            None => ApplyTo::All,
            Some(a) => ApplyTo::parse(a.as_str()?)?,
        },
        priority: match body.get("priority") {
            None => 0,
            Some(Value::Int(i)) => *i,
            Some(_) => return None,
        },
        definition: match body.get("definition") {
            Some(Value::Table(t)) => t.clone(),
            _ => return None,
        },
    })
}

/// The object of a typed operator policy: the inverse of [`policy`].
pub fn object(p: &Policy) -> Object {
    let body = [
        ("pattern", Value::String(p.pattern.clone())),
        ("apply_to", Value::String(p.apply_to.as_str().into())),
        ("priority", Value::Int(p.priority)),
        ("definition", Value::Table(p.definition.clone())),
    ];
    Object { id: vec![p.name.clone()], body: body.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

/// The typed view of the operator policies among `objects` (a vhost's),
/// by name: for what reads them as policies (lint, import's checks, what a
/// plan depends on).
pub fn typed(objects: &super::Objects) -> std::collections::BTreeMap<String, Policy> {
    let of_kind = objects.iter().filter(|(n, _)| n.kind == &KIND);
    of_kind.filter_map(|(n, body)| policy(&n.id[0], body)).map(|p| (p.name.clone(), p)).collect()
}

/// The key of operator policy `name` in vhost `vhost`.
pub fn key(vhost: &str, name: &str) -> crate::model::ObjectKey {
    let name = super::Name { kind: &KIND, id: vec![name.to_string()] };
    crate::model::ObjectKey::Object { vhost: Some(vhost.to_string()), name }
}

/// The objects of typed operator policies (the in-memory broker keeps its
/// own, validated as the broker does).
pub fn objects<'p>(policies: impl IntoIterator<Item = &'p Policy>) -> super::Objects {
    let named = |p: &Policy| (super::Name { kind: &KIND, id: vec![p.name.clone()] }, object(p).body);
    policies.into_iter().map(named).collect()
}

/// The parameter's value, as exports and the management API write it
/// (`apply-to` with a hyphen there).
fn value(o: &Object) -> Json {
    let mut m = Map::new();
    for (name, wire) in
        [("pattern", "pattern"), ("apply_to", "apply-to"), ("priority", "priority"), ("definition", "definition")]
    {
        if let Some(v) = o.body.get(name) {
            m.insert(wire.to_string(), Json::from(v));
        }
    }
    Json::Object(m)
}

fn read(item: &Json) -> Option<Result<Object, String>> {
    if item.get("component").and_then(Json::as_str) != Some(COMPONENT) {
        return None;
    }
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?.to_string();
        let Some(value) = item.get("value").and_then(Json::as_object) else {
            return Err("its `value` is not an object".into());
        };
        let mut body = Table::with_capacity(4);
        body.insert("pattern".into(), Value::String(field(&Json::Object(value.clone()), "pattern")?.to_string()));
        let Some(definition @ Json::Object(_)) = value.get("definition") else {
            return Err("its value has no object `definition`".into());
        };
        body.insert("definition".into(), Value::from(definition));
        if let Some(a) = value.get("apply-to") {
            let a = a.as_str().ok_or("its `apply-to` is not a string")?;
            body.insert("apply_to".into(), Value::String(a.to_string()));
        }
        match value.get("priority") {
            None | Some(Json::Null) => {}
            Some(n @ Json::Number(_)) => {
                let i = Value::from(n).as_int().ok_or_else(|| format!("its `priority` {n} is not an integer"))?;
                body.insert("priority".into(), Value::Int(i));
            }
            Some(_) => return Err("its `priority` is not an integer".into()),
        }
        Ok(Object { id: vec![name], body })
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    json!({ "vhost": vhost, "component": COMPONENT, "name": o.id[0], "value": value(o) })
}

fn put(vhost: Option<&str>, o: &Object) -> Request {
    Request { path: delete(vhost, &o.id), body: value(o) }
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["operator-policies".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap() -> Policy {
        let definition = [("max-length".to_string(), Value::Int(10))].into_iter().collect();
        Policy { name: "cap".into(), pattern: "^jobs".into(), apply_to: ApplyTo::Queues, priority: 2, definition }
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let o = object(&cap());
        assert_eq!(policy("cap", &o.body), Some(cap()));
        assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
    }

    #[test]
    fn a_parameter_reads_back_what_is_written_and_put_at_the_operator_policies_path() {
        let o = object(&cap());
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(item["value"]["apply-to"], "queues");
        assert_eq!((KIND.read)(&item), Some(Ok(o.clone())));
        let r = (KIND.put)(Some("v"), &o);
        assert_eq!(r.path, ["operator-policies", "v", "cap"]);
        assert_eq!(r.body, item["value"]);
        assert_eq!((KIND.read)(&json!({ "component": "vhost-limits" })), None, "another component's");
        let bare = json!({ "component": COMPONENT, "name": "b", "value": { "pattern": ".*", "definition": {} } });
        let read = (KIND.read)(&bare).unwrap().unwrap();
        assert_eq!(policy("b", &read.body).map(|p| (p.apply_to, p.priority)), Some((ApplyTo::All, 0)));
        let mut bad_key = o.clone();
        bad_key.body.insert(
            "definition".into(),
            Value::Table([("dead-letter-exchange".to_string(), Value::String("x".into()))].into_iter().collect()),
        );
        let found = (KIND.check.unwrap())(&bad_key);
        assert_eq!(
            found.iter().map(|f| (f.code, f.path.join("."))).collect::<Vec<_>>(),
            [("operator-policy-key", "definition.dead-letter-exchange".to_string())]
        );
        assert!((KIND.check.unwrap())(&o).is_empty());
        let bad = json!({ "component": COMPONENT, "name": "b", "value": { "pattern": ".*" } });
        assert!((KIND.read)(&bad).unwrap().is_err());
    }
}
