//! Vhost settings: a vhost's description, tags, default queue type,
//! deletion protection and limits, set at `/api/vhosts/{name}` (its
//! attributes) and `/api/vhost-limits/{name}/{limit}` (each limit).
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`VhostSettings`]): [`settings`] and [`object`] are the typed view
//! both ways. It is not in [`super::KINDS`]: the vhost keeps its
//! settings in `Vhost::settings` ("Where the seam stops" in
//! docs/development.md says why), and the vhost itself stays the
//! container of its exchanges, queues, bindings and objects
//! (`Topology::vhosts`, `ObjectKey::Vhost`). Every attribute is optional:
//! an absent one is not managed (the broker's is left as it is), as
//! `VhostSettings`'s `None` says.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value as Json, json};

// The queue types, which a vhost's `default_queue_type` names.
use super::queues::TYPES as QUEUE_TYPES;
use super::{Attribute, Kind, Object, Phase, Request, Scope, Type, field};
use crate::model::{QueueType, Table, Value, VhostSettings};

pub static KIND: Kind = Kind {
    name: "vhost",
    table: "vhosts",
    scope: Scope::Broker,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the vhost's name") }],
    // In the order the files and import write them.
    attributes: &[
        Attribute::optional("description", Type::String, "a free text shown in the management UI"),
        Attribute::optional(
            "default_queue_type",
            Type::OneOf(QUEUE_TYPES),
            "the type of the vhost's queues declared without one",
        ),
        Attribute::optional("tags", Type::Strings, "the vhost's tags, for operators"),
        Attribute::optional(
            "protected_from_deletion",
            Type::Boolean,
            "RabbitMQ 4.1 or later: the broker refuses to delete the vhost while it is `true`",
        ),
        Attribute::optional(
            "limits",
            Type::Table,
            "`max-queues` and `max-connections`; left as they are on the broker when not given",
        ),
    ],
    about: "A vhost's settings: its description, tags, default queue type, deletion protection and limits. \
            Each is left as it is on the broker when not given. Setting them needs the `administrator` tag.",
    since: (3, 0),
    plugin: None,
    definitions: "vhosts",
    listing: None,
    portable: true,
    // Deleting a vhost loses everything in it: the vhost's own diff says so.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: None,
    phase: Phase::PutObject,
};

/// The typed view of an object: `None` when its attributes are not a
/// vhost's settings (a file or a broker checked them first; the live side
/// takes out a default queue type warren does not know, with its note).
pub fn settings(_name: &str, body: &Table) -> Option<VhostSettings> {
    let description = match body.get("description") {
        None => None,
        Some(v) => Some(v.as_str()?.to_string()),
    };
    let default_queue_type = match body.get("default_queue_type") {
        None => None,
        Some(v) => Some(QueueType::parse(v.as_str()?)?),
    };
    let tags = match body.get("tags") {
        None => None,
        Some(Value::List(items)) => {
            Some(items.iter().map(|t| t.as_str().map(str::to_string)).collect::<Option<BTreeSet<_>>>()?)
        }
        Some(_) => return None,
    };
    let protected_from_deletion = match body.get("protected_from_deletion") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return None,
    };
    let limits = match body.get("limits") {
        None => None,
        Some(Value::Table(t)) => {
            Some(t.iter().map(|(k, v)| Some((k.clone(), v.as_int()?))).collect::<Option<BTreeMap<_, _>>>()?)
        }
        Some(_) => return None,
    };
    Some(VhostSettings { description, default_queue_type, limits, tags, protected_from_deletion })
}

/// The object of vhost `name`'s typed settings: the inverse of [`settings`].
pub fn object(name: &str, s: &VhostSettings) -> Object {
    let mut body = Table::with_capacity(5);
    if let Some(d) = &s.description {
        body.insert("description".into(), Value::String(d.clone()));
    }
    if let Some(t) = s.default_queue_type {
        body.insert("default_queue_type".into(), Value::String(t.as_str().into()));
    }
    if let Some(tags) = &s.tags {
        body.insert("tags".into(), Value::List(tags.iter().map(|t| Value::String(t.clone())).collect()));
    }
    if let Some(p) = s.protected_from_deletion {
        body.insert("protected_from_deletion".into(), Value::Bool(p));
    }
    if let Some(l) = &s.limits {
        body.insert("limits".into(), Value::Table(l.iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect()));
    }
    Object { id: vec![name.to_string()], body }
}

/// The name, among a topology's objects, of vhost `name`'s settings.
pub fn name(name: &str) -> super::Name {
    super::Name { kind: &KIND, id: vec![name.to_string()] }
}

/// A `vhosts` item of a definitions export (3.10 to 4.x), an item of the
/// vhost listing (`GET /api/vhosts`), or the top of a 4.x single-vhost
/// export with its `name`: what it says of each setting, as the old
/// reader took it. A top-level field before the `metadata` one (3.13+
/// write both), `defaultqueuetype` (3.10's PUT key) last; an empty
/// description and a default queue type `""` or `"undefined"` are none;
/// tags an array or RabbitMQ's comma-separated text, blanks dropped, none
/// when there is none; deletion protection only when true (4.1+); limits
/// (4.x entries) as given, each number an integer (`[]` for none). What
/// `read` cannot judge alone is the live side's to note and take out: a
/// queue type warren does not know, and limits that are not numbers or
/// not an object.
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?.to_string();
        let meta = item.get("metadata").filter(|m| m.is_object());
        let given = |v: &&Json| !v.is_null();
        let of = |key: &str| item.get(key).filter(given).or_else(|| meta?.get(key).filter(given));
        let mut body = Table::with_capacity(5);
        if let Some(d) = of("description").and_then(Json::as_str).filter(|d| !d.is_empty()) {
            body.insert("description".into(), Value::String(d.to_string()));
        }
        let dqt = of("default_queue_type").or_else(|| item.get("defaultqueuetype").filter(given));
        if let Some(t) = dqt.and_then(Json::as_str).filter(|t| !matches!(*t, "" | "undefined")) {
            body.insert("default_queue_type".into(), Value::String(t.to_string()));
        }
        if let Some(tags) = of("tags").map(tags).filter(|t| !t.is_empty()) {
            body.insert("tags".into(), Value::List(tags.into_iter().map(Value::String).collect()));
        }
        if of("protected_from_deletion").and_then(Json::as_bool) == Some(true) {
            body.insert("protected_from_deletion".into(), Value::Bool(true));
        }
        match item.get("limits") {
            None | Some(Json::Null) => {}
            Some(Json::Array(a)) if a.is_empty() => {}
            Some(Json::Object(l)) => {
                let limit = |v: &Json| Value::from(v).as_int().map_or_else(|| Value::from(v), Value::Int);
                let limits: Table = l.iter().map(|(k, v)| (k.clone(), limit(v))).collect();
                if !limits.is_empty() {
                    body.insert("limits".into(), Value::Table(limits));
                }
            }
            Some(other) => {
                body.insert("limits".into(), Value::from(other));
            }
        }
        Ok(Object { id: vec![name], body })
    };
    Some(object())
}

/// A vhost's tags: a list, or one comma-separated string as RabbitMQ
/// accepts them; blanks dropped.
fn tags(json: &Json) -> BTreeSet<String> {
    let items: Vec<&str> = match json {
        Json::Array(a) => a.iter().filter_map(Json::as_str).collect(),
        Json::String(s) => s.split(',').collect(),
        _ => Vec::new(),
    };
    items.into_iter().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// The `vhosts` item as `warren export` writes it: only what the object
/// manages (a vhost without settings is just named), description, tags
/// and default queue type at the top and in `metadata` (3.13+ read the
/// one, 3.10 to 3.12 the other), `protected_from_deletion` at the top
/// only, where 4.x writes it (brokers before 4.1 ignore it). Its limits
/// are not in the item: [`limits_item`] writes them as the runtime
/// parameter every version imports.
fn write(_: Option<&str>, o: &Object) -> Json {
    let mut metadata = Map::new();
    if let Some(d) = o.text("description") {
        metadata.insert("description".into(), json!(d));
    }
    if let Some(t @ Value::List(_)) = o.body.get("tags") {
        metadata.insert("tags".into(), Json::from(t));
    }
    if let Some(q) = o.text("default_queue_type") {
        metadata.insert("default_queue_type".into(), json!(q));
    }
    let mut out = metadata.clone();
    if let Some(Value::Bool(p)) = o.body.get("protected_from_deletion") {
        out.insert("protected_from_deletion".into(), json!(p));
    }
    out.insert("name".into(), json!(o.id[0]));
    if !metadata.is_empty() {
        out.insert("metadata".into(), Json::Object(metadata));
    }
    Json::Object(out)
}

/// The vhost's limits as a `parameters` item (component `vhost-limits`),
/// as exports write them and every version imports them: `None` when it
/// sets none.
pub fn limits_item(o: &Object) -> Option<Json> {
    let limits = match o.body.get("limits") {
        Some(l @ Value::Table(t)) if !t.is_empty() => Json::from(l),
        _ => return None,
    };
    Some(json!({ "vhost": o.id[0], "component": "vhost-limits", "name": "limits", "value": limits }))
}

/// The vhost's PUT (only what the object manages: a PUT without a field
/// leaves it as it is), then one PUT per limit it gives, each with its
/// `part` (`limit max-queues`): the broker keeps a vhost's limits apart
/// (`/api/vhost-limits/{name}/{limit}`). The default queue type is sent
/// under both keys: 3.10 to 3.12 read `defaultqueuetype`, later versions
/// `default_queue_type`. Tags go as an array. A limit the object no
/// longer gives is the caller's to remove: it is on the broker, not in the
/// object.
fn put(_: Option<&str>, o: &Object) -> Vec<Request> {
    let mut body = json!({});
    if let Some(d) = o.text("description") {
        body["description"] = json!(d);
    }
    if let Some(t) = o.text("default_queue_type") {
        body["default_queue_type"] = json!(t);
        body["defaultqueuetype"] = json!(t);
    }
    if let Some(t @ Value::List(_)) = o.body.get("tags") {
        body["tags"] = Json::from(t);
    }
    if let Some(Value::Bool(p)) = o.body.get("protected_from_deletion") {
        body["protected_from_deletion"] = json!(p);
    }
    let vhost = Request::new(delete(None, &o.id), body);
    std::iter::once(vhost).chain(super::limit_requests(o, "vhost-limits")).collect()
}

fn delete(_: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["vhosts".into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders() -> VhostSettings {
        VhostSettings {
            description: Some("orders domain".into()),
            default_queue_type: Some(QueueType::Quorum),
            limits: Some([("max-queues".to_string(), 100), ("max-connections".to_string(), -1)].into()),
            tags: Some(["critical".to_string(), "team-orders".to_string()].into()),
            protected_from_deletion: Some(true),
        }
    }

    /// Each setting alone, none, and all of them.
    fn each_settings() -> Vec<VhostSettings> {
        let all = orders();
        vec![
            VhostSettings::default(),
            VhostSettings { description: all.description.clone(), ..Default::default() },
            VhostSettings { default_queue_type: Some(QueueType::Stream), ..Default::default() },
            VhostSettings { limits: all.limits.clone(), ..Default::default() },
            VhostSettings { tags: all.tags.clone(), ..Default::default() },
            VhostSettings { protected_from_deletion: Some(true), ..Default::default() },
            all,
        ]
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let mut given = each_settings();
        // What only the files say: no tags, no limits, unprotected.
        given.push(VhostSettings {
            tags: Some(BTreeSet::new()),
            limits: Some(BTreeMap::new()),
            protected_from_deletion: Some(false),
            ..Default::default()
        });
        for s in given {
            let o = object("orders", &s);
            assert_eq!(o.id, ["orders"]);
            assert_eq!(settings("orders", &o.body), Some(s.clone()));
            for (k, v) in &o.body {
                assert!(KIND.attribute(k).is_some_and(|a| a.ty.admits(v)), "{k} = {v:?}");
            }
            assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "nothing defaulted: absent is not managed");
        }
        let mut odd = object("v", &orders()).body;
        odd.insert("default_queue_type".into(), Value::String("qourum".into()));
        assert_eq!(settings("v", &odd), None);
    }

    #[test]
    fn a_definitions_item_reads_back_what_is_written_with_its_limits_apart() {
        for s in each_settings() {
            let o = object("orders", &s);
            let back = (KIND.read)(&(KIND.write)(None, &o)).unwrap().unwrap();
            let without_limits = VhostSettings { limits: None, ..s.clone() };
            assert_eq!(back, object("orders", &without_limits), "{s:?}");
            match &s.limits {
                Some(l) => {
                    let item = limits_item(&o).unwrap();
                    assert_eq!(item["value"], json!(l));
                    assert_eq!(
                        (item["component"].as_str(), item["vhost"].as_str()),
                        (Some("vhost-limits"), Some("orders"))
                    );
                }
                None => assert_eq!(limits_item(&o), None),
            }
        }
        assert_eq!((KIND.write)(None, &object("v", &VhostSettings::default())), json!({ "name": "v" }));
        assert!((KIND.read)(&json!({ "description": "no name" })).unwrap().is_err());
    }

    #[test]
    fn each_version_s_item_is_read() {
        let read = |item: Json| settings("v", &(KIND.read)(&item).unwrap().unwrap().body).unwrap();
        // 3.10: just a name.
        assert_eq!(read(json!({ "name": "v" })), VhostSettings::default());
        // 3.13 and 4.x: the top and the metadata; 4.x limits in the entry.
        let s = read(json!({
            "name": "v", "description": "orders", "tags": [], "default_queue_type": "quorum",
            "limits": { "max-queues": 100, "max-connections": 10.0 },
            "metadata": { "description": "orders", "tags": [], "default_queue_type": "quorum" },
        }));
        assert_eq!(s.description.as_deref(), Some("orders"));
        assert_eq!(s.default_queue_type, Some(QueueType::Quorum));
        assert_eq!(s.tags, None, "no tags, nothing said");
        assert_eq!(s.limits, Some([("max-connections".to_string(), 10), ("max-queues".to_string(), 100)].into()));
        let s = read(json!({ "name": "v", "limits": [], "metadata": { "description": "Default virtual host" } }));
        assert_eq!((s.description.as_deref(), s.limits), (Some("Default virtual host"), None));
        // 3.10's PUT key, read last; "undefined" and "" are none.
        assert_eq!(
            read(json!({ "name": "v", "defaultqueuetype": "stream" })).default_queue_type,
            Some(QueueType::Stream)
        );
        let both = json!({ "name": "v", "default_queue_type": "classic", "defaultqueuetype": "stream" });
        assert_eq!(read(both).default_queue_type, Some(QueueType::Classic));
        let none = json!({ "name": "v", "description": "", "default_queue_type": "undefined" });
        assert_eq!(read(none), VhostSettings::default());
        // Tags as text; protection only when true.
        let s = read(json!({ "name": "v", "metadata": { "tags": "b, a," }, "protected_from_deletion": true }));
        assert_eq!(s.tags, Some(["a".to_string(), "b".to_string()].into()));
        assert_eq!(s.protected_from_deletion, Some(true));
        let s = read(json!({ "name": "v", "protected_from_deletion": false }));
        assert_eq!(s.protected_from_deletion, None);
        // What the live side notes is kept for it to judge.
        let odd =
            (KIND.read)(&json!({ "name": "v", "default_queue_type": "qourum", "limits": { "max-queues": "many" } }));
        let body = odd.unwrap().unwrap().body;
        assert_eq!(body.get("default_queue_type"), Some(&Value::String("qourum".into())));
        assert_eq!(
            body.get("limits"),
            Some(&Value::Table([("max-queues".to_string(), Value::String("many".into()))].into_iter().collect()))
        );
    }

    #[test]
    fn the_vhost_s_put_then_one_put_per_limit() {
        let o = object("orders", &orders());
        let [r, connections, queues] = <[Request; 3]>::try_from((KIND.put)(None, &o)).unwrap();
        assert_eq!(r.path, ["vhosts", "orders"]);
        assert_eq!(
            r.body,
            json!({
                "description": "orders domain", "default_queue_type": "quorum", "defaultqueuetype": "quorum",
                "tags": ["critical", "team-orders"], "protected_from_deletion": true,
            })
        );
        assert_eq!(r.part, None);
        assert_eq!(connections.path, ["vhost-limits", "orders", "max-connections"]);
        assert_eq!(connections.body, json!({ "value": -1 }));
        assert_eq!(connections.part.as_deref(), Some("limit max-connections"));
        assert_eq!((queues.path[2].as_str(), &queues.body), ("max-queues", &json!({ "value": 100 })));
        let bare = (KIND.put)(None, &object("v", &VhostSettings::default()));
        assert_eq!(bare, [Request::new(vec!["vhosts".into(), "v".into()], json!({}))]);
        assert_eq!((KIND.delete)(None, &["v".to_string()]), ["vhosts", "v"]);
    }
}
