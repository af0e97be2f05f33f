//! Policies: a vhost's `[policies.NAME]`, set and deleted at
//! `/api/policies/{vhost}/{name}` and listed in a definitions export's
//! `policies`. The broker applies to each queue and exchange the one of
//! highest priority whose pattern its name matches.
//!
//! An old kind moved onto the seam (docs/development.md, "Moving an old
//! kind onto the seam"): held as this kind's objects in `Vhost::objects`.
//! What a policy is to a queue (its effective
//! arguments, the routing model, lint, the migration compiler) is read
//! from the typed view, [`policy`]; the functions here that make and read
//! that view serve operator policies too, whose objects have the same
//! attributes.

use serde_json::{Map, Value as Json};

use super::{Attribute, Finding, Fixed, Kind, Name, Object, Objects, Phase, Request, Scope, Type, field, named_item};
use crate::model::{ApplyTo, ObjectKey, Policy, Table, Value, Vhost, definition_findings};

/// The values `apply_to` takes: the broker's, as [`ApplyTo::as_str`] gives them.
pub(super) const APPLY_TO: Type =
    Type::OneOf(&["all", "queues", "exchanges", "classic_queues", "quorum_queues", "streams"]);

pub static KIND: Kind = Kind {
    name: "policy",
    table: "policies",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the policy's name") }],
    attributes: &[
        Attribute::required(
            "pattern",
            Type::String,
            "a regular expression the names of the queues or exchanges it applies to match",
        ),
        Attribute::defaulted("apply_to", APPLY_TO, Fixed::Str("all"), "the objects it applies to"),
        Attribute::defaulted(
            "priority",
            Type::Integer,
            Fixed::Int(0),
            "of several policies matching a queue or an exchange, the one of highest priority applies",
        ),
        Attribute::required("definition", Type::Table, "the keys it sets (see Policy keys)"),
    ],
    about: "Settings the broker applies to the queues and exchanges whose names match a pattern.",
    since: (3, 0),
    plugin: None,
    definitions: "policies",
    listing: None,
    portable: true,
    // Deleting one takes its settings off queues; the messages stay.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(|o| check(o, &KIND, false)),
    // Set before queues: a queue is declared under its policy.
    phase: Phase::PutPolicy,
};

/// Its `definition`, by the policy-key tables (with `operator`, only the
/// keys an operator policy may set), and not empty: for policies and
/// operator policies alike.
pub(super) fn check(o: &Object, kind: &Kind, operator: bool) -> Vec<Finding> {
    match o.body.get("definition") {
        Some(Value::Table(d)) if d.is_empty() => vec![Finding {
            path: vec!["definition".into()],
            at_key: false,
            code: "bad-value",
            message: format!("{} \"{}\" has an empty `definition`", kind.name, o.id[0]),
            label: None,
            help: "RabbitMQ refuses a policy that sets nothing; add a key or remove the policy".into(),
        }],
        Some(Value::Table(d)) => definition_findings(d, operator),
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

/// The typed view of a policy's or an operator policy's object: `None`
/// when its `apply_to` or its types are not a policy's (a file or a broker
/// checked them first).
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

/// The object of a typed policy (or operator policy): the inverse of [`policy`].
pub fn object(p: &Policy) -> Object {
    let body = [
        ("pattern", Value::String(p.pattern.clone())),
        ("apply_to", Value::String(p.apply_to.as_str().into())),
        ("priority", Value::Int(p.priority)),
        ("definition", Value::Table(p.definition.clone())),
    ];
    Object { id: vec![p.name.clone()], body: body.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

/// The typed view of `kind`'s objects among `objects` (a vhost's), by name.
pub fn typed_of(kind: &Kind, objects: &Objects) -> std::collections::BTreeMap<String, Policy> {
    let of_kind = objects.iter().filter(|(n, _)| n.kind == kind);
    of_kind.filter_map(|(n, body)| policy(&n.id[0], body)).map(|p| (p.name.clone(), p)).collect()
}

/// The key of `kind`'s object `name` in vhost `vhost`.
pub fn key_of(kind: &'static Kind, vhost: &str, name: &str) -> ObjectKey {
    ObjectKey::Object { vhost: Some(vhost.to_string()), name: Name { kind, id: vec![name.to_string()] } }
}

/// `kind`'s objects of typed policies.
pub(super) fn objects_of<'p>(kind: &'static Kind, policies: impl IntoIterator<Item = &'p Policy>) -> Objects {
    let named = |p: &Policy| (Name { kind, id: vec![p.name.clone()] }, object(p).body);
    policies.into_iter().map(named).collect()
}

/// `kind`'s objects in `vhost`, by name, as typed views kept with the
/// vhost (`model::views`).
pub(super) fn kept<'v>(vhost: &'v Vhost, kind: &Kind) -> Vec<&'v Policy> {
    let of_kind = vhost.objects.iter().filter(|(n, _)| n.kind == kind);
    let typed = of_kind.filter_map(|(n, body)| policy(&n.id[0], body));
    typed.map(|p| vhost.views.policy(p)).collect()
}

impl Vhost {
    /// Its policies, by name, as their kind's typed view kept with the
    /// vhost: what matches them (the routing model, lint, the planner)
    /// lends them for as long as the vhost.
    pub fn policies(&self) -> Vec<&Policy> {
        kept(self, &KIND)
    }

    /// Its policy `name`, typed.
    pub fn policy(&self, name: &str) -> Option<Policy> {
        policy(name, self.objects.get(&Name { kind: &KIND, id: vec![name.to_string()] })?)
    }

    /// Sets policy `p`, as its kind's object; whether it had one of that name.
    pub fn set_policy(&mut self, p: &Policy) -> bool {
        let o = object(p);
        self.objects.insert(Name { kind: &KIND, id: o.id }, o.body).is_some()
    }

    /// Takes its policy `name` out; whether it had one.
    pub fn remove_policy(&mut self, name: &str) -> bool {
        self.objects.remove(&Name { kind: &KIND, id: vec![name.to_string()] }).is_some()
    }
}

/// The typed view of the policies among `objects` (a vhost's), by name.
pub fn typed(objects: &Objects) -> std::collections::BTreeMap<String, Policy> {
    typed_of(&KIND, objects)
}

/// The key of policy `name` in vhost `vhost`.
pub fn key(vhost: &str, name: &str) -> ObjectKey {
    key_of(&KIND, vhost, name)
}

/// The objects of typed policies.
pub fn objects<'p>(policies: impl IntoIterator<Item = &'p Policy>) -> Objects {
    objects_of(&KIND, policies)
}

/// What the broker takes and gives for a policy beside its vhost and name
/// (an operator policy's parameter `value`): `apply-to` with a hyphen.
pub(super) fn value(o: &Object) -> Map<String, Json> {
    let mut m = Map::new();
    for (name, wire) in
        [("pattern", "pattern"), ("apply_to", "apply-to"), ("priority", "priority"), ("definition", "definition")]
    {
        if let Some(v) = o.body.get(name) {
            m.insert(wire.to_string(), Json::from(v));
        }
    }
    m
}

/// A policy's object from `name` and that [`value`] (what a `policies`
/// item or an operator policy's parameter holds): `apply_to` and
/// `priority` only when given.
pub(super) fn read_value(name: &str, value: &Json) -> Result<Object, String> {
    let mut body = Table::with_capacity(4);
    body.insert("pattern".into(), Value::String(field(value, "pattern")?.to_string()));
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
    Ok(Object { id: vec![name.to_string()], body })
}

/// Every item of the `policies` list is a policy.
fn read(item: &Json) -> Option<Result<Object, String>> {
    Some(field(item, "name").and_then(|name| read_value(name, item)))
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    named_item(vhost, &o.id[0], value(o))
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    vec![Request::new(delete(vhost, &o.id), Json::Object(value(o)))]
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["policies".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn limits() -> Policy {
        let definition = [("max-length".to_string(), Value::Int(10))].into_iter().collect();
        Policy { name: "limits".into(), pattern: "^jobs".into(), apply_to: ApplyTo::Queues, priority: 2, definition }
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let o = object(&limits());
        assert_eq!(policy("limits", &o.body), Some(limits()));
        assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
        let objects = objects([&limits()]);
        assert_eq!(typed(&objects).into_values().collect::<Vec<_>>(), [limits()]);
        assert_eq!(key("v", "limits").to_string(), "policy \"limits\" in vhost \"v\"");
    }

    #[test]
    fn a_policies_item_reads_back_what_is_written_and_is_put_at_the_policies_path() {
        let o = object(&limits());
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(
            item,
            json!({ "vhost": "v", "name": "limits", "pattern": "^jobs", "apply-to": "queues", "priority": 2,
                    "definition": { "max-length": 10 } })
        );
        assert_eq!((KIND.read)(&item), Some(Ok(o.clone())));
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
        assert_eq!(r.path, ["policies", "v", "limits"]);
        assert_eq!(
            r.body,
            json!({ "pattern": "^jobs", "apply-to": "queues", "priority": 2, "definition": { "max-length": 10 } })
        );
        let bare = json!({ "name": "b", "pattern": ".*", "definition": { "max-length": 1 } });
        let read = (KIND.read)(&bare).unwrap().unwrap();
        assert_eq!(policy("b", &read.body).map(|p| (p.apply_to, p.priority)), Some((ApplyTo::All, 0)));
        assert!((KIND.read)(&json!({ "name": "b", "pattern": ".*" })).unwrap().is_err());
        assert!((KIND.read)(&json!({ "pattern": ".*", "definition": {} })).unwrap().is_err(), "no name");
    }

    #[test]
    fn its_check_is_the_policy_key_tables_for_a_policy() {
        let mut o = object(&limits());
        assert!((KIND.check.unwrap())(&o).is_empty());
        o.body.insert(
            "definition".into(),
            Value::Table([("dead-letter-exchange".to_string(), Value::String("x".into()))].into_iter().collect()),
        );
        assert!((KIND.check.unwrap())(&o).is_empty(), "a policy may set what an operator policy may not");
        o.body.insert(
            "definition".into(),
            Value::Table([("max-lenght".to_string(), Value::Int(1))].into_iter().collect()),
        );
        let found = (KIND.check.unwrap())(&o);
        assert_eq!(
            found.iter().map(|f| (f.code, f.path.join("."))).collect::<Vec<_>>(),
            [("unknown-policy-key", "definition.max-lenght".to_string())]
        );
        o.body.insert("definition".into(), Value::Table(Table::new()));
        let found = (KIND.check.unwrap())(&o);
        assert_eq!(found[0].message, "policy \"limits\" has an empty `definition`");
    }
}
