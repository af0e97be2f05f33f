//! Exchanges: where publishers send messages, routing them to queues and
//! other exchanges by their bindings, declared at
//! `/api/exchanges/{vhost}/{name}`.
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`Exchange`]), as docs/development.md's "Moving an old kind onto the
//! seam" says: [`exchange`] and [`object`] are the typed view both ways,
//! and the broker's calls send the kind's requests. It is not in
//! [`super::KINDS`], so nothing generic sees it: a vhost keeps its
//! exchanges in `Vhost::exchanges`, typed, where the routing model and the
//! migration compiler borrow them ("Where the seam stops" says why).

use serde_json::{Map, Value as Json};

use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field, named_item};
use crate::model::{Exchange, Table, Value};

pub static KIND: Kind = Kind {
    name: "exchange",
    table: "exchanges",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the exchange's name") }],
    // RabbitMQ declares an exchange once: another declaration that differs
    // in any of these is refused (PRECONDITION_FAILED), so each is
    // immutable and a change replaces the exchange.
    attributes: &[
        Attribute {
            immutable: true,
            ..Attribute::required(
                "type",
                Type::String,
                "`direct`, `fanout`, `topic`, `headers`, or a plugin's type starting with `x-`",
            )
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
                "deleted when its last binding goes",
            )
        },
        Attribute {
            immutable: true,
            ..Attribute::defaulted(
                "internal",
                Type::Boolean,
                Fixed::Bool(false),
                "publishers cannot publish to it directly",
            )
        },
        Attribute { immutable: true, ..Attribute::optional("arguments", Type::Table, "AMQP arguments, as written") },
    ],
    about: "Where publishers send messages: it routes each to the queues and exchanges its bindings name.",
    since: (3, 0),
    plugin: None,
    definitions: "exchanges",
    listing: None,
    portable: true,
    // Deleting one loses no message (an exchange holds none), but its
    // publishers' messages go nowhere: the diff says so, as it did.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(check),
    phase: Phase::PutObject,
};

/// The built-in types; any other must be a plugin's, whose names start
/// with `x-` (RabbitMQ refuses an unknown type with `command_invalid`).
pub const BUILT_IN: [&str; 4] = ["direct", "fanout", "topic", "headers"];

/// Whether `t` is a type an exchange may have: built in, or a plugin's.
pub fn is_type(t: &str) -> bool {
    BUILT_IN.contains(&t) || t.starts_with("x-")
}

/// A `type` that is neither built in nor a plugin's.
pub fn check(o: &Object) -> Vec<Finding> {
    match o.text("type") {
        Some(t) if !is_type(t) => vec![Finding {
            path: vec!["type".into()],
            at_key: false,
            code: "bad-value",
            message: format!("exchange \"{}\" has type \"{t}\", which RabbitMQ does not have", o.id[0]),
            label: None,
            help: "use `direct`, `fanout`, `topic` or `headers`, or a plugin's type (`x-…`)".into(),
        }],
        _ => Vec::new(),
    }
}

/// The typed view of an object: `None` when its attributes are not an
/// exchange's (a file or a broker checked them first). An absent flag is
/// the broker's default, as [`KIND`] says.
pub fn exchange(name: &str, body: &Table) -> Option<Exchange> {
    let flag = |k: &str, default: bool| match body.get(k) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    };
    Some(Exchange {
        name: name.to_string(),
        kind: body.get("type")?.as_str()?.to_string(),
        durable: flag("durable", true)?,
        auto_delete: flag("auto_delete", false)?,
        internal: flag("internal", false)?,
        arguments: match body.get("arguments") {
            None => Table::new(),
            Some(Value::Table(t)) => t.clone(),
            Some(_) => return None,
        },
    })
}

/// The object of a typed exchange: the inverse of [`exchange`], every
/// attribute given but arguments when there are none (absent, as the
/// files leave them).
pub fn object(x: &Exchange) -> Object {
    let mut body: Table = [
        ("type", Value::String(x.kind.clone())),
        ("durable", Value::Bool(x.durable)),
        ("auto_delete", Value::Bool(x.auto_delete)),
        ("internal", Value::Bool(x.internal)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if !x.arguments.is_empty() {
        body.insert("arguments".into(), Value::Table(x.arguments.clone()));
    }
    Object { id: vec![x.name.clone()], body }
}

/// The name, among a vhost's objects, of exchange `name`.
pub fn name(name: &str) -> super::Name {
    super::Name { kind: &KIND, id: vec![name.to_string()] }
}

/// What the broker takes for an exchange beside its vhost and name: every
/// attribute, defaults filled in, as the old code sent it.
fn value(o: &Object) -> Map<String, Json> {
    let body = KIND.with_defaults(o.body.clone());
    let mut m = Map::new();
    for name in ["type", "durable", "auto_delete", "internal"] {
        if let Some(v) = body.get(name) {
            m.insert(name.to_string(), Json::from(v));
        }
    }
    let arguments = body.get("arguments").map_or_else(|| Json::Object(Map::new()), Json::from);
    m.insert("arguments".into(), arguments);
    m
}

/// An `exchanges` item: its name and type, each a string, and the flags
/// and arguments it gives (an absent or null one is the broker's default).
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let mut body = Table::with_capacity(5);
        body.insert("type".into(), Value::String(field(item, "type")?.to_string()));
        for flag in ["durable", "auto_delete", "internal"] {
            match item.get(flag) {
                None | Some(Json::Null) => {}
                Some(Json::Bool(b)) => {
                    body.insert(flag.into(), Value::Bool(*b));
                }
                Some(_) => return Err(format!("its `{flag}` is not a boolean")),
            }
        }
        match item.get("arguments") {
            None | Some(Json::Null) => {}
            Some(a @ Json::Object(_)) => {
                body.insert("arguments".into(), Value::from(a));
            }
            Some(_) => return Err("its `arguments` is not an object".into()),
        }
        Ok(Object { id: vec![field(item, "name")?.to_string()], body })
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    named_item(vhost, &o.id[0], value(o))
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    vec![Request::new(delete(vhost, &o.id), Json::Object(value(o)))]
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["exchanges".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn orders() -> Exchange {
        let arguments = [("alternate-exchange".to_string(), Value::String("orders.ae".into()))].into_iter().collect();
        Exchange {
            name: "orders".into(),
            kind: "topic".into(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments,
        }
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let o = object(&orders());
        assert_eq!(exchange("orders", &o.body), Some(orders()));
        assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
        let bare: Table = [("type".to_string(), Value::String("fanout".into()))].into_iter().collect();
        let x = exchange("b", &bare).unwrap();
        assert_eq!((x.durable, x.auto_delete, x.internal, x.arguments.len()), (true, false, false, 0), "defaults");
        assert_eq!(exchange("b", &object(&x).body), Some(x.clone()), "no arguments: none given");
        assert_eq!((KIND.write)(Some("v"), &object(&x))["arguments"], json!({}), "the broker is sent an empty table");
    }

    #[test]
    fn an_exchanges_item_reads_back_what_is_written_and_is_put_at_the_exchanges_path() {
        let o = object(&orders());
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(
            item,
            json!({ "name": "orders", "vhost": "v", "type": "topic", "durable": true, "auto_delete": false,
                    "internal": false, "arguments": { "alternate-exchange": "orders.ae" } })
        );
        assert_eq!((KIND.read)(&item), Some(Ok(o.clone())));
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
        assert_eq!(r.path, ["exchanges", "v", "orders"]);
        assert_eq!(
            r.body,
            json!({ "type": "topic", "durable": true, "auto_delete": false, "internal": false,
                    "arguments": { "alternate-exchange": "orders.ae" } }),
            "the body the old code sent"
        );
        let bare = json!({ "name": "b", "type": "direct", "durable": null });
        let read = (KIND.read)(&bare).unwrap().unwrap();
        assert_eq!(exchange("b", &read.body).map(|x| x.durable), Some(true), "null is the default");
        assert!((KIND.read)(&json!({ "name": "b" })).unwrap().is_err(), "no type");
        assert!((KIND.read)(&json!({ "name": "b", "type": "direct", "internal": "no" })).unwrap().is_err());
        assert_eq!((KIND.delete)(Some("v"), &["orders".to_string()]), ["exchanges", "v", "orders"]);
    }

    #[test]
    fn a_type_neither_built_in_nor_a_plugins_is_found() {
        let mut o = object(&orders());
        assert!(check(&o).is_empty());
        o.body.insert("type".into(), Value::String("x-delayed-message".into()));
        assert!(check(&o).is_empty(), "a plugin's");
        o.body.insert("type".into(), Value::String("topics".into()));
        let found = check(&o);
        assert_eq!((found[0].code, found[0].path.join(".")), ("bad-value", "type".to_string()));
    }
}
