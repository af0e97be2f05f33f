//! Queues: where messages wait for their consumers, declared at
//! `/api/queues/{vhost}/{name}`.
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`Queue`]), as step 1 of docs/development.md's "Moving an old kind
//! onto the seam": [`queue`] and [`object`] are the typed view both ways,
//! and the broker's calls send the kind's requests. It is not in
//! [`super::KINDS`], so nothing generic sees it: a vhost keeps its queues
//! in `Vhost::queues`, typed, where the migration compiler and the routing
//! model borrow them (and where step 5 is not to take them: 100,000 queues
//! as generic objects would cost memory those borrow nothing from).

use serde_json::{Map, Value as Json};

use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field, named_item};
use crate::model::{Queue, QueueType, Table, Value, argument_rule, check_expect};

/// The queue types, as the files, the broker and `x-queue-type` name them
/// ([`QueueType::as_str`]); a vhost's `default_queue_type` names one too.
pub const TYPES: &[&str] = &["classic", "quorum", "stream"];

/// The argument the broker decides a queue's type by; the kind's `type`.
const TYPE_ARGUMENT: &str = "x-queue-type";

pub static KIND: Kind = Kind {
    name: "queue",
    table: "queues",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the queue's name") }],
    // RabbitMQ declares a queue once: another declaration that differs in
    // any of these is refused (PRECONDITION_FAILED, "inequivalent arg"), so
    // each is immutable. The diff refuses such a change unless --replace
    // asks to recreate the queue or `replaces` migrates it (the migration
    // compiler, which stays the queues' own); `replaces` is that
    // compiler's instruction, not the queue's, so it is no attribute.
    attributes: &[
        // Optional with no default: a queue that names no type takes its
        // vhost's default queue type (the files' `[vhost]
        // default_queue_type`, the broker's `x-queue-type` left out), which
        // no fixed default of the kind can say. An absent `type` is sent
        // and written as absent, for the broker to decide.
        Attribute {
            immutable: true,
            ..Attribute::optional("type", Type::OneOf(TYPES), "the vhost's default queue type, else `classic`")
        },
        Attribute {
            immutable: true,
            ..Attribute::defaulted("durable", Type::Boolean, Fixed::Bool(true), "survives a broker restart")
        },
        Attribute {
            immutable: true,
            ..Attribute::defaulted(
                "auto_delete",
                Type::Boolean,
                Fixed::Bool(false),
                "deleted when its last consumer goes",
            )
        },
        Attribute {
            immutable: true,
            ..Attribute::optional("arguments", Type::Table, "`x-` queue arguments, `x-queue-type` aside (it is `type`)")
        },
    ],
    about: "Where messages wait for consumers, routed there by the bindings of exchanges.",
    since: (3, 0),
    plugin: None,
    definitions: "queues",
    listing: None,
    portable: true,
    // The diff's own queue code says what deleting one loses, from its
    // counts (nothing when it is idle), and asks --allow-destroy for it.
    destroy_loses: Some("its messages are lost"),
    read,
    write,
    put,
    delete,
    check: Some(check),
    phase: Phase::PutObject,
};

/// A known argument whose value RabbitMQ refuses (of another type, or
/// out of range), each a finding at its key's value in `arguments`. Not
/// whether the queue's type knows it: that needs the type with the
/// vhost's default applied, which an object alone does not know
/// (`argument-for-other-type`, lint's).
pub fn check(o: &Object) -> Vec<Finding> {
    match o.body.get("arguments") {
        Some(Value::Table(arguments)) => argument_findings(arguments),
        _ => Vec::new(),
    }
}

/// [`check`] of a queue's `arguments`, which the files' parser calls on
/// the arguments a queue's table gives (an overlay's inherited ones were
/// checked in the base), without making an object of them.
pub fn argument_findings(arguments: &Table) -> Vec<Finding> {
    let finding = |(name, value): (&String, &Value)| {
        let rule = argument_rule(name)?;
        let problem = check_expect(rule.expect, value)?;
        let expected = rule.expect.describe();
        Some(Finding {
            path: vec!["arguments".into(), name.clone()],
            at_key: false,
            code: "bad-argument",
            message: format!("`{name}` {problem}"),
            label: Some(format!("must be {expected}")),
            help: format!("set `{name}` to {expected}"),
        })
    };
    arguments.iter().filter_map(finding).collect()
}

/// The typed view of an object: `None` when its attributes are not a
/// queue's (a file or a broker checked them first). An absent flag is the
/// broker's default, as [`KIND`] says; an absent `type` is classic, the
/// broker's own default where the vhost names none (a caller that knows
/// the vhost's default gives the object its `type` first).
pub fn queue(name: &str, body: &Table) -> Option<Queue> {
    let flag = |k: &str, default: bool| match body.get(k) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    };
    let kind = match body.get("type") {
        None => QueueType::Classic,
        Some(t) => QueueType::parse(t.as_str()?)?,
    };
    Some(Queue {
        name: name.to_string(),
        kind,
        durable: flag("durable", true)?,
        auto_delete: flag("auto_delete", false)?,
        arguments: match body.get("arguments") {
            None => Table::new(),
            Some(Value::Table(t)) => t.clone(),
            Some(_) => return None,
        },
        replaces: None,
    })
}

/// The object of a typed queue: the inverse of [`queue`] (but for
/// `replaces`, the migration's, not the queue's), every attribute given
/// but arguments when there are none (absent, as the files leave them).
pub fn object(q: &Queue) -> Object {
    let mut body: Table = [
        ("type", Value::String(q.kind.as_str().into())),
        ("durable", Value::Bool(q.durable)),
        ("auto_delete", Value::Bool(q.auto_delete)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if !q.arguments.is_empty() {
        body.insert("arguments".into(), Value::Table(q.arguments.clone()));
    }
    Object { id: vec![q.name.clone()], body }
}

/// The object of a typed queue as a vhost whose default queue type is
/// `default` declares it: its `type` left out when it is that default
/// (classic when the vhost names none), as the files leave it out.
pub fn object_in(q: &Queue, default: Option<QueueType>) -> Object {
    let mut o = object(q);
    if q.kind == default.unwrap_or(QueueType::Classic) {
        o.body.remove("type");
    }
    o
}

/// The name, among a vhost's objects, of queue `name`.
pub fn name(name: &str) -> super::Name {
    super::Name { kind: &KIND, id: vec![name.to_string()] }
}

/// What the broker takes for a queue beside its vhost and name: the flags,
/// defaults filled in, and the arguments with the type as `x-queue-type`
/// (RabbitMQ's management API reads the type from there only), none when
/// the object leaves the type to the vhost's default.
fn value(o: &Object) -> Map<String, Json> {
    let body = KIND.with_defaults(o.body.clone());
    let mut m = Map::new();
    for name in ["durable", "auto_delete"] {
        if let Some(v) = body.get(name) {
            m.insert(name.to_string(), Json::from(v));
        }
    }
    let mut arguments = match body.get("arguments") {
        Some(Value::Table(t)) => t.clone(),
        _ => Table::new(),
    };
    if let Some(t) = body.get("type") {
        arguments.insert(TYPE_ARGUMENT.into(), t.clone());
    }
    m.insert("arguments".into(), Json::from(&Value::Table(arguments)));
    m
}

/// A `queues` item: its name, its type from `x-queue-type` (which the
/// broker decides by) else the item's `type` (3.13+ and 4.x give both),
/// else absent, and the flags and other arguments it gives (an absent or
/// null one is the broker's default).
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let mut body = Table::with_capacity(4);
        let mut arguments = match item.get("arguments") {
            None | Some(Json::Null) => Table::new(),
            Some(a) => match Value::from(a) {
                Value::Table(t) => t,
                _ => return Err("its `arguments` is not an object".into()),
            },
        };
        let kind = match (arguments.remove(TYPE_ARGUMENT), item.get("type")) {
            (Some(Value::String(t)), _) => Some(t),
            (Some(_), _) => return Err(format!("its `{TYPE_ARGUMENT}` is not a string")),
            (None, None | Some(Json::Null)) => None,
            (None, Some(Json::String(t))) => Some(t.clone()),
            (None, Some(_)) => return Err("its `type` is not a string".into()),
        };
        if let Some(t) = kind {
            if !TYPES.contains(&t.as_str()) {
                return Err(format!("its type \"{t}\" is not one warren knows"));
            }
            body.insert("type".into(), Value::String(t));
        }
        for flag in ["durable", "auto_delete"] {
            match item.get(flag) {
                None | Some(Json::Null) => {}
                Some(Json::Bool(b)) => {
                    body.insert(flag.into(), Value::Bool(*b));
                }
                Some(_) => return Err(format!("its `{flag}` is not a boolean")),
            }
        }
        if !arguments.is_empty() {
            body.insert("arguments".into(), Value::Table(arguments));
        }
        Ok(Object { id: vec![field(item, "name")?.to_string()], body })
    };
    Some(object())
}

/// The item warren's export writes: the type both as the item's `type`
/// (which 3.13+ gives) and as `x-queue-type` (which every version's
/// import declares it by).
fn write(vhost: Option<&str>, o: &Object) -> Json {
    let mut m = value(o);
    if let Some(t) = o.body.get("type") {
        m.insert("type".into(), Json::from(t));
    }
    named_item(vhost, &o.id[0], m)
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    vec![Request::new(delete(vhost, &o.id), Json::Object(value(o)))]
}

/// The queue's path: the plain delete. The guarded one (a classic queue
/// only if empty and unused) is this path with the broker's query
/// (`if-empty`, `if-unused`) that `broker/ops.rs` adds: a condition of
/// that one request, which a path of segments, each escaped, cannot carry.
fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["queues".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn invoicing() -> Queue {
        let arguments = [
            ("x-dead-letter-exchange".to_string(), Value::String("orders.dlx".into())),
            ("x-delivery-limit".to_string(), Value::Int(10)),
        ]
        .into_iter()
        .collect();
        Queue {
            name: "orders.invoicing".into(),
            kind: QueueType::Quorum,
            durable: true,
            auto_delete: false,
            arguments,
            replaces: None,
        }
    }

    #[test]
    fn the_types_are_the_models() {
        assert_eq!(TYPES, QueueType::ALL.map(QueueType::as_str));
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let o = object(&invoicing());
        assert_eq!(queue("orders.invoicing", &o.body), Some(invoicing()));
        assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
        let bare = Table::new();
        let q = queue("b", &bare).unwrap();
        assert_eq!((q.kind, q.durable, q.auto_delete, q.arguments.len()), (QueueType::Classic, true, false, 0));
        assert_eq!(queue("b", &object(&q).body), Some(q.clone()), "no arguments: none given");
        let replacing = Queue { replaces: Some("orders.old".into()), ..invoicing() };
        assert_eq!(object(&replacing), o, "`replaces` is the migration's, not the queue's");
        let typeless: Table = [("type".to_string(), Value::String("delayed".into()))].into_iter().collect();
        assert_eq!(queue("b", &typeless), None, "a type warren does not know");
        assert_eq!(object_in(&invoicing(), Some(QueueType::Quorum)).body.get("type"), None, "the vhost's default");
        assert_eq!(object_in(&q, None).body.get("type"), None, "classic where the vhost names none");
        assert!(object_in(&invoicing(), None).body.contains_key("type"));
    }

    #[test]
    fn a_queues_item_reads_back_what_is_written_and_is_put_at_the_queues_path() {
        let o = object(&invoicing());
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(
            item,
            json!({ "name": "orders.invoicing", "vhost": "v", "type": "quorum", "durable": true, "auto_delete": false,
                    "arguments": { "x-dead-letter-exchange": "orders.dlx", "x-delivery-limit": 10,
                                   "x-queue-type": "quorum" } }),
            "the item the old export wrote"
        );
        assert_eq!((KIND.read)(&item), Some(Ok(o.clone())));
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
        assert_eq!(r.path, ["queues", "v", "orders.invoicing"]);
        assert_eq!(
            r.body,
            json!({ "durable": true, "auto_delete": false,
                    "arguments": { "x-dead-letter-exchange": "orders.dlx", "x-delivery-limit": 10,
                                   "x-queue-type": "quorum" } }),
            "the body the old code sent"
        );
        assert_eq!((KIND.delete)(Some("v"), &["orders.invoicing".to_string()]), ["queues", "v", "orders.invoicing"]);
    }

    #[test]
    fn a_known_arguments_bad_value_is_found_at_its_key() {
        let mut o = object(&invoicing());
        assert!(check(&o).is_empty());
        let Some(Value::Table(arguments)) = o.body.get_mut("arguments") else { unreachable!() };
        arguments.insert("x-delivery-limit".into(), Value::String("10".into()));
        arguments.insert("x-custom".into(), Value::String("anything".into()));
        let found = check(&o);
        assert_eq!(found.len(), 1, "only the known argument: {found:?}");
        assert_eq!(
            (found[0].code, found[0].path.join("."), found[0].at_key),
            ("bad-argument", "arguments.x-delivery-limit".to_string(), false)
        );
        assert_eq!(found[0].message, "`x-delivery-limit` must be an integer of at least -1, not a string");
    }

    #[test]
    fn a_queue_left_to_its_vhosts_default_type_is_sent_and_read_without_one() {
        let o = object_in(&invoicing(), Some(QueueType::Quorum));
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
        assert_eq!(r.body["arguments"].get(TYPE_ARGUMENT), None, "the broker applies the vhost's default");
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(item.get("type"), None);
        assert_eq!((KIND.read)(&item), Some(Ok(o)));
        let read = |item: Json| (KIND.read)(&item).unwrap();
        let q = read(json!({ "name": "q", "type": "stream", "durable": null })).unwrap();
        assert_eq!(queue("q", &q.body).map(|q| (q.kind, q.durable)), Some((QueueType::Stream, true)), "3.13's type");
        let both = json!({ "name": "q", "type": "classic", "arguments": { "x-queue-type": "quorum" } });
        assert_eq!(read(both).unwrap().body.get("type"), Some(&Value::String("quorum".into())), "the argument decides");
        assert!(read(json!({ "name": "q", "arguments": { "x-queue-type": "delayed" } })).is_err());
        assert!(read(json!({ "name": "q", "arguments": { "x-queue-type": 1 } })).is_err());
        assert!(read(json!({ "name": "q", "durable": "no" })).is_err());
        assert!(read(json!({ "type": "classic" })).is_err(), "no name");
    }
}
