//! Operator policies: a vhost's runtime parameters of component
//! `operator_policy`, set and deleted at `/api/operator-policies/{vhost}/{name}`
//! (administrators only). They cap what a queue's policy and arguments
//! set (`rabbit_policy:merge_operator_definitions`): the broker takes the
//! lower of a limit the two set.
//!
//! The first kind that warren had before the seam: its objects are
//! declared here, and [`policy`] is the typed view that the routing model,
//! lint and the migration compiler read (what an operator policy does to a
//! queue's effective arguments), derived from an object. Its objects have
//! a policy's attributes: the typed view, the broker's JSON of the body
//! and the check are [`policies`]' own.

use serde_json::{Value as Json, json};

pub use super::policies::{object, policy};
use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field, policies};
use crate::model::Policy;

/// The runtime parameters' component that holds operator policies.
const COMPONENT: &str = "operator_policy";

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
        Attribute::defaulted("apply_to", policies::APPLY_TO, Fixed::Str("all"), "the objects it applies to"),
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
    policies::check(o, &KIND, true)
}

/// The typed view of the operator policies among `objects` (a vhost's),
/// by name: for what reads them as policies (lint, import's checks, what a
/// plan depends on).
pub fn typed(objects: &super::Objects) -> std::collections::BTreeMap<String, Policy> {
    policies::typed_of(&KIND, objects)
}

impl crate::model::Vhost {
    /// Its operator policies, by name, as [`crate::model::Vhost::policies`]
    /// gives its policies.
    pub fn operator_policies(&self) -> Vec<&Policy> {
        policies::kept(self, &KIND)
    }
}

/// The key of operator policy `name` in vhost `vhost`.
pub fn key(vhost: &str, name: &str) -> crate::model::ObjectKey {
    policies::key_of(&KIND, vhost, name)
}

/// The objects of typed operator policies (the in-memory broker keeps its
/// own, validated as the broker does).
pub fn objects<'p>(policies: impl IntoIterator<Item = &'p Policy>) -> super::Objects {
    policies::objects_of(&KIND, policies)
}

fn read(item: &Json) -> Option<Result<Object, String>> {
    if item.get("component").and_then(Json::as_str) != Some(COMPONENT) {
        return None;
    }
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?;
        match item.get("value") {
            Some(value @ Json::Object(_)) => policies::read_value(name, value),
            _ => Err("its `value` is not an object".into()),
        }
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    json!({ "vhost": vhost, "component": COMPONENT, "name": o.id[0], "value": policies::value(o) })
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    vec![Request::new(delete(vhost, &o.id), Json::Object(policies::value(o)))]
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["operator-policies".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApplyTo, Value};

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
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
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
