//! Bindings: which messages an exchange routes to a queue or to another
//! exchange, created at `/api/bindings/{vhost}/e/{source}/q|e/{destination}`.
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`Binding`]), as steps 1 to 4 of docs/development.md's "Moving an old
//! kind onto the seam": [`binding`] and [`object`] are the typed view both
//! ways, the broker's calls send the kind's requests, the files' parser
//! calls its [`check`], and import writes its [`identity`]. It is not in
//! [`super::KINDS`], and a vhost keeps its bindings typed in
//! `Vhost::bindings`, where the routing model borrows them (the team chose
//! to keep that storage: a vhost may hold 200,000 bindings).
//!
//! A binding has no name: RabbitMQ tells two apart by all they are (its
//! source, its destination, its routing key and its arguments; two
//! bindings that differ only in their arguments are two, as a headers
//! exchange's often are), so all of it is the identity, and the body is
//! empty. The identity is named as the files name it: `source`, `queue` or
//! `exchange` (the other one `""`, as no destination is named: RabbitMQ
//! refuses an empty name), `routing_key`, and `arguments`, which an id
//! holds as canonical JSON text (keys sorted, as a `Table`'s are; `""`
//! for none), because an id is strings and a table in it must compare
//! equal exactly when the arguments do. Every attribute is immutable: a
//! binding changes by being removed and added.

use serde_json::{Map, Value as Json, json};

use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field};
use crate::model::{Binding, DestinationKind, Table, Value};

pub static KIND: Kind = Kind {
    name: "binding",
    table: "bindings",
    scope: Scope::Vhost,
    identity: &[
        Attribute { immutable: true, ..Attribute::required("source", Type::String, "the exchange messages come from") },
        Attribute { immutable: true, ..Attribute::optional("queue", Type::String, "a destination queue") },
        Attribute { immutable: true, ..Attribute::optional("exchange", Type::String, "a destination exchange") },
        Attribute {
            immutable: true,
            ..Attribute::defaulted("routing_key", Type::String, Fixed::Str(""), "the routing key")
        },
        // A table, held in the id as its canonical JSON text: the seam's
        // identities are strings, which is why this kind stays out of
        // `KINDS` (its test says so) until it is read and written apart.
        Attribute {
            immutable: true,
            ..Attribute::optional(
                "arguments",
                Type::Table,
                "binding arguments, such as `x-match` for a headers exchange",
            )
        },
    ],
    attributes: &[],
    about: "Which messages an exchange routes to a queue or to another exchange: those whose routing key \
            matches `routing_key`, or whose headers match `arguments` on a headers exchange.",
    since: (3, 0),
    plugin: None,
    definitions: "bindings",
    listing: None,
    portable: true,
    // Removing one loses no message, but the route: the diff says so.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(check),
    phase: Phase::PutObject,
};

/// What the types cannot say, each a finding at its attribute: the
/// default exchange as the source (every queue is bound to it already, and
/// RabbitMQ refuses another binding with `access_refused`), and a `~` in
/// the routing key of a binding with arguments (the management API then
/// answers HTTP 500 to every listing of the vhost's bindings: its
/// properties key splits at the `~`).
pub fn check(o: &Object) -> Vec<Finding> {
    let mut found = Vec::new();
    if o.id[0].is_empty() {
        found.push(Finding {
            path: vec!["source".into()],
            at_key: false,
            code: "bad-value",
            message: "the default exchange (\"\") cannot be bound explicitly".into(),
            label: None,
            help: "every queue is already reachable through the default exchange by its name; remove this binding"
                .into(),
        });
    }
    if o.id[3].contains('~') && !o.id[4].is_empty() {
        found.push(Finding {
            path: vec!["routing_key".into()],
            at_key: false,
            code: "binding-tilde-arguments",
            message: "a routing key with `~` on a binding with arguments breaks the management API".into(),
            label: Some("`~` here".into()),
            help:
                "RabbitMQ then answers HTTP 500 to every binding listing of the vhost; remove the `~` or the arguments"
                    .into(),
        });
    }
    found
}

/// The typed view of an object: `None` when its identity is not a
/// binding's (one destination, arguments a table) or it has a body.
pub fn binding(id: &[String], body: &Table) -> Option<Binding> {
    let [source, queue, exchange, routing_key, arguments] = id else { return None };
    let (destination_kind, destination) = match (queue.is_empty(), exchange.is_empty()) {
        (false, true) => (DestinationKind::Queue, queue),
        (true, false) => (DestinationKind::Exchange, exchange),
        _ => return None,
    };
    let arguments = match arguments.as_str() {
        "" => Table::new(),
        text => match serde_json::from_str(text).ok()? {
            Value::Table(t) => t,
            _ => return None,
        },
    };
    body.is_empty().then(|| Binding {
        source: source.clone(),
        destination_kind,
        destination: destination.clone(),
        routing_key: routing_key.clone(),
        arguments,
    })
}

/// The object of a typed binding: the inverse of [`binding`].
pub fn object(b: &Binding) -> Object {
    let (queue, exchange) = match b.destination_kind {
        DestinationKind::Queue => (b.destination.clone(), String::new()),
        DestinationKind::Exchange => (String::new(), b.destination.clone()),
    };
    let id = vec![b.source.clone(), queue, exchange, b.routing_key.clone(), arguments_text(&b.arguments)];
    Object { id, body: Table::new() }
}

/// An id's identity as the files give it: the destination that is named,
/// the routing key, and the arguments as a table, each left out when the
/// id holds `""` for it (the routing key's default).
pub fn identity(id: &[String]) -> Table {
    let mut t = Table::with_capacity(4);
    for (a, part) in KIND.identity.iter().zip(id) {
        let value = match (a.ty, part.as_str()) {
            (_, "") => continue,
            (Type::Table, text) => serde_json::from_str(text).unwrap_or(Value::Null),
            (_, text) => Value::String(text.to_string()),
        };
        t.insert(a.name.to_string(), value);
    }
    t
}

/// The canonical JSON text of arguments in an id: `""` for none.
fn arguments_text(arguments: &Table) -> String {
    if arguments.is_empty() {
        return String::new();
    }
    let m: Map<String, Json> = arguments.iter().map(|(k, v)| (k.clone(), Json::from(v))).collect();
    Json::Object(m).to_string()
}

/// The arguments of an id as the broker takes them: `{}` for none.
fn arguments_json(text: &str) -> Json {
    if text.is_empty() { Json::Object(Map::new()) } else { serde_json::from_str(text).unwrap_or_default() }
}

/// The destination of an id: (`destination_type`, name).
fn destination(id: &[String]) -> (&'static str, &str) {
    if id[1].is_empty() { ("exchange", &id[2]) } else { ("queue", &id[1]) }
}

/// A `bindings` item (of an export or of the bindings listing): its
/// source, destination and `destination_type`, each a string, and the
/// routing key and arguments it gives (absent or null: none).
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let destination = field(item, "destination")?.to_string();
        let (queue, exchange) = match field(item, "destination_type")? {
            "queue" => (destination, String::new()),
            "exchange" => (String::new(), destination),
            other => return Err(format!("its `destination_type` is \"{other}\", not queue or exchange")),
        };
        let routing_key = match item.get("routing_key") {
            None | Some(Json::Null) => String::new(),
            Some(Json::String(k)) => k.clone(),
            Some(_) => return Err("its `routing_key` is not a string".into()),
        };
        let arguments = match item.get("arguments") {
            None | Some(Json::Null) => Table::new(),
            Some(a @ Json::Object(_)) => match Value::from(a) {
                Value::Table(t) => t,
                _ => Table::new(),
            },
            Some(_) => return Err("its `arguments` is not an object".into()),
        };
        let id = vec![field(item, "source")?.to_string(), queue, exchange, routing_key, arguments_text(&arguments)];
        Ok(Object { id, body: Table::new() })
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    let (destination_type, destination) = destination(&o.id);
    json!({
        "source": o.id[0], "vhost": vhost, "destination": destination, "destination_type": destination_type,
        "routing_key": o.id[3], "arguments": arguments_json(&o.id[4]),
    })
}

/// The binding's creation: a POST (not the PUT `Request`s of other kinds
/// are) to its ends, with its key and arguments; the broker names it.
fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    let body = json!({ "routing_key": o.id[3], "arguments": arguments_json(&o.id[4]) });
    vec![Request::new(delete(vhost, &o.id), body)]
}

/// The path of the binding's ends, `bindings/{vhost}/e/{source}/q|e/{destination}`,
/// which lists the bindings between them. One is deleted at its
/// `properties_key` below it, which the broker makes of the routing key
/// and, when there are arguments, a digest of their Erlang term
/// (`rabbit_mgmt_format:pack_binding_props`, `erlang:phash2`) that warren
/// cannot compute: the caller lists this path, finds the binding by [`read`],
/// and deletes it at the key the broker gave it.
fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    let (destination_type, destination) = destination(id);
    let d = if destination_type == "queue" { "q" } else { "e" };
    let v = vhost.unwrap_or_default();
    ["bindings", v, "e", id[0].as_str(), d, destination].map(str::to_string).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> Binding {
        let arguments = [("x-match", Value::String("all".into())), ("country", Value::String("pl".into()))]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Binding {
            source: "shop.headers".into(),
            destination_kind: DestinationKind::Queue,
            destination: "orders.pl".into(),
            routing_key: String::new(),
            arguments,
        }
    }

    fn to_exchange() -> Binding {
        Binding {
            source: "shop.orders".into(),
            destination_kind: DestinationKind::Exchange,
            destination: "shop.audit".into(),
            routing_key: "order.#".into(),
            arguments: Table::new(),
        }
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        for b in [headers(), to_exchange()] {
            let o = object(&b);
            assert_eq!(binding(&o.id, &o.body), Some(b.clone()));
            assert!(o.body.is_empty(), "all of a binding is its identity");
        }
        assert_eq!(object(&headers()).id, ["shop.headers", "orders.pl", "", "", r#"{"country":"pl","x-match":"all"}"#]);
        assert_eq!(object(&to_exchange()).id, ["shop.orders", "", "shop.audit", "order.#", ""]);
        let mut other = headers();
        other.arguments.insert("country".into(), Value::String("de".into()));
        assert_ne!(object(&other).id, object(&headers()).id, "arguments tell two bindings apart");
        let id = |parts: [&str; 5]| parts.map(str::to_string).to_vec();
        assert_eq!(binding(&id(["x", "q", "e", "", ""]), &Table::new()), None, "two destinations");
        assert_eq!(binding(&id(["x", "", "", "", ""]), &Table::new()), None, "none");
        assert_eq!(binding(&id(["x", "q", "", "", "[1]"]), &Table::new()), None, "arguments not a table");
    }

    #[test]
    fn a_bindings_item_reads_back_what_is_written_and_is_posted_at_its_ends() {
        let o = object(&headers());
        let item = (KIND.write)(Some("v"), &o);
        assert_eq!(
            item,
            json!({ "source": "shop.headers", "vhost": "v", "destination": "orders.pl", "destination_type": "queue",
                    "routing_key": "", "arguments": { "x-match": "all", "country": "pl" } })
        );
        assert_eq!((KIND.read)(&item), Some(Ok(o.clone())));
        let x = object(&to_exchange());
        assert_eq!((KIND.read)(&(KIND.write)(Some("v"), &x)), Some(Ok(x.clone())));
        assert_eq!((KIND.write)(Some("v"), &x)["arguments"], json!({}), "none: an empty table, as before");
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("v"), &o)).unwrap();
        assert_eq!(r.path, ["bindings", "v", "e", "shop.headers", "q", "orders.pl"]);
        assert_eq!(r.body, json!({ "routing_key": "", "arguments": { "x-match": "all", "country": "pl" } }));
        assert_eq!((KIND.delete)(Some("v"), &x.id), ["bindings", "v", "e", "shop.orders", "e", "shop.audit"]);
        // A listing's item: its vhost and properties key are not the binding's.
        let listed = json!({ "source": "shop.orders", "vhost": "v", "destination": "shop.audit",
                             "destination_type": "exchange", "routing_key": "order.#", "arguments": null,
                             "properties_key": "order.%23" });
        assert_eq!((KIND.read)(&listed), Some(Ok(x)));
        let bad = json!({ "source": "s", "destination": "d", "destination_type": "stream" });
        assert!((KIND.read)(&bad).unwrap().is_err());
        assert!((KIND.read)(&json!({ "source": "s", "destination": "d" })).unwrap().is_err(), "no type");
    }

    #[test]
    fn the_default_exchange_as_source_and_a_tilde_with_arguments_are_found() {
        assert!(check(&object(&headers())).is_empty());
        assert!(check(&object(&Binding { routing_key: "a~b".into(), ..to_exchange() })).is_empty(), "no arguments");
        let both = Binding { source: String::new(), routing_key: "a~b".into(), ..headers() };
        let found: Vec<(&str, String)> =
            check(&object(&both)).into_iter().map(|f| (f.code, f.path.join("."))).collect();
        assert_eq!(
            found,
            [("bad-value", "source".to_string()), ("binding-tilde-arguments", "routing_key".to_string())]
        );
    }

    #[test]
    fn the_identity_as_the_files_give_it() {
        let t = identity(&object(&headers()).id);
        assert_eq!(t.keys().map(String::as_str).collect::<Vec<_>>(), ["arguments", "queue", "source"]);
        assert_eq!(t.get("arguments"), Some(&Value::Table(headers().arguments)));
        let t = identity(&object(&to_exchange()).id);
        assert_eq!(t.get("exchange"), Some(&Value::String("shop.audit".into())));
        assert_eq!(t.get("routing_key"), Some(&Value::String("order.#".into())));
    }
}
