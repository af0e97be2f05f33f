//! The in-memory broker's state as the JSON text RabbitMQ 3.13 answers
//! with: the vhost listing, definitions exports (of one vhost and of the
//! whole broker), the user and permission listings, and a vhost's listings
//! of exchanges, queues, bindings and policies.

use serde_json::{Value as Json, json};

use super::super::lock::LOCK_QUEUE;
use super::state::{PolicyState, QueueState, State, VhostState};
use crate::model::kinds::{
    KINDS, Kind, Object, bindings, exchanges, operator_policies, permissions, policies, queues, users,
};
use crate::model::{Binding, Password, Queue, Table, User, Value};

fn table(t: &Table) -> Json {
    Json::from(&Value::Table(t.clone()))
}

/// One `GET /api/vhosts` item with the columns warren asks for.
fn vhost_item(name: &str, v: &VhostState) -> Json {
    let mut metadata = json!({ "description": v.description, "tags": v.tags });
    if let Some(t) = v.default_queue_type {
        metadata["default_queue_type"] = json!(t.as_str());
    }
    json!({
        "name": name,
        "description": v.description,
        "tags": v.tags,
        "default_queue_type": v.default_queue_type.map_or("undefined", |t| t.as_str()),
        "metadata": metadata,
    })
}

/// The vhosts `visible` lets through, as the vhost listing gives them.
pub(super) fn vhosts(s: &State, visible: impl Fn(&str) -> bool) -> String {
    let items: Vec<Json> = s.vhosts.iter().filter(|(n, _)| visible(n)).map(|(n, v)| vhost_item(n, v)).collect();
    Json::Array(items).to_string()
}

/// An exchange as the broker's listings and exports give it: its kind's
/// item, without the vhost where an export of one vhost leaves it out.
fn exchange_item(vhost: &str, x: &crate::model::Exchange, named: bool) -> Json {
    let mut item = (exchanges::KIND.write)(Some(vhost), &exchanges::object(x));
    if !named && let Some(m) = item.as_object_mut() {
        m.remove("vhost");
    }
    item
}

/// A queue as its kind's object, as it was declared: its type left to the
/// vhost's default when `x-queue-type` was neither given nor injected.
fn queue_object(name: &str, q: &QueueState) -> Object {
    let mut arguments = q.arguments.clone();
    let typed = arguments.remove("x-queue-type").is_some();
    let queue = Queue {
        name: name.to_string(),
        kind: q.kind,
        durable: q.durable,
        auto_delete: q.auto_delete,
        arguments,
        replaces: None,
    };
    let mut o = queues::object(&queue);
    if !typed {
        o.body.remove("type");
    }
    o
}

/// A queue as the broker's exports give it: its kind's item, without the
/// item's `type` (the management API's export gives the arguments as
/// declared, and no type), nor the vhost where an export of one vhost
/// leaves it out.
fn queue_item(vhost: &str, name: &str, q: &QueueState, named: bool) -> Json {
    let mut item = (queues::KIND.write)(Some(vhost), &queue_object(name, q));
    if let Some(m) = item.as_object_mut() {
        m.remove("type");
        if !named {
            m.remove("vhost");
        }
    }
    item
}

/// A binding as the broker's listings and exports give it: its kind's
/// item, without the vhost where an export of one vhost leaves it out.
fn binding_item(vhost: &str, b: &Binding, named: bool) -> Json {
    let mut item = (bindings::KIND.write)(Some(vhost), &bindings::object(b));
    if !named && let Some(m) = item.as_object_mut() {
        m.remove("vhost");
    }
    item
}

/// A policy's (or an operator policy's) item, as a policy's kind writes
/// it: the two listings give the same shape.
fn policy_item(vhost: &str, p: &PolicyState) -> Json {
    (policies::KIND.write)(Some(vhost), &policies::object(&p.policy))
}

/// The vhost's runtime parameters: its limits and operator policies.
fn parameters(vhost: &str, v: &VhostState) -> Vec<Json> {
    let mut out = Vec::new();
    if !v.limits.is_empty() {
        out.push(json!({ "value": v.limits, "vhost": vhost, "component": "vhost-limits", "name": "limits" }));
    }
    let of_kind = |p: &PolicyState| (operator_policies::KIND.write)(Some(vhost), &operator_policies::object(&p.policy));
    out.extend(v.operator_policies.values().map(of_kind));
    out
}

/// What an export leaves out: the broker's own exchanges.
fn exported(name: &str) -> bool {
    !(name.is_empty() || name.starts_with("amq."))
}

/// Each part of a vhost's export, its items naming the vhost or not.
fn export_parts(vhost: &str, v: &VhostState, named: bool) -> [(&'static str, Vec<Json>); 5] {
    let queues = v.queues.iter().map(|(name, q)| queue_item(vhost, name, q, named)).collect();
    let exchanges =
        v.exchanges.values().filter(|x| exported(&x.name)).map(|x| exchange_item(vhost, x, named)).collect();
    let bindings = v.bindings.iter().map(|b| binding_item(vhost, b, named)).collect();
    [
        ("parameters", parameters(vhost, v)),
        ("policies", v.policies.values().map(|p| policy_item(vhost, p)).collect()),
        ("queues", queues),
        ("exchanges", exchanges),
        ("bindings", bindings),
    ]
}

/// `GET /api/definitions/{vhost}`: no `vhost` in queues, exchanges and
/// bindings (policies and parameters keep theirs).
pub(super) fn vhost_export(s: &State, vhost: &str, v: &VhostState) -> String {
    let mut doc = json!({ "rabbit_version": s.version });
    for (key, items) in export_parts(vhost, v, false) {
        doc[key] = Json::Array(items);
    }
    doc.to_string()
}

/// The listing of each kind that has one (`GET /api/topic-permissions`, ...).
/// The global parameters listing holds the ones kept apart here (warren's
/// records, the cluster id) too, as RabbitMQ's does.
pub(super) fn kind_listings(s: &State) -> Vec<(&'static Kind, String)> {
    let listed = KINDS.iter().filter(|k| k.listing.is_some());
    let with_kept = |kind: &Kind| {
        let mut items = items_of(s, kind);
        if kind.definitions == "global_parameters" {
            items.extend(s.global_parameters.iter().map(|(n, v)| json!({ "name": n, "value": v })));
        }
        items
    };
    listed.map(|kind| (*kind, Json::Array(with_kept(kind)).to_string())).collect()
}

/// `GET /api/parameters` as a non-administrator: the runtime parameters
/// of the vhosts it sees (the listing is broker-wide, filtered by access).
pub(super) fn parameter_listing(s: &State, vhosts: &[&String]) -> String {
    let kinds = KINDS.iter().filter(|k| k.definitions == "parameters");
    let items = kinds.flat_map(|kind| items_of(s, kind));
    let seen = items.filter(|i| i["vhost"].as_str().is_some_and(|v| vhosts.iter().any(|w| *w == v)));
    Json::Array(seen.collect()).to_string()
}

/// `GET /api/parameters` as an administrator, of one vhost: its limits,
/// operator policies and the kinds' parameters.
pub(super) fn vhost_parameters(s: &State, vhost: &str, v: &VhostState) -> String {
    let mut items = parameters(vhost, v);
    let kinds = KINDS.iter().filter(|k| k.definitions == "parameters");
    items.extend(kinds.flat_map(|kind| items_of(s, kind)).filter(|i| i["vhost"] == vhost));
    Json::Array(items).to_string()
}

/// Every object of `kind`, as its definitions list's items.
fn items_of(s: &State, kind: &Kind) -> Vec<Json> {
    let in_vhosts = s.vhosts.iter().flat_map(|(n, v)| v.objects.iter().map(move |o| (Some(n.as_str()), o)));
    let all = in_vhosts.chain(s.objects.iter().map(|o| (None, o)));
    let of_kind = all.filter(|(_, (name, _))| name.kind == kind);
    of_kind
        .map(|(vhost, (name, body))| (kind.write)(vhost, &Object { id: name.id.clone(), body: body.clone() }))
        .collect()
}

/// `GET /api/definitions`: the whole broker.
pub(super) fn definitions(s: &State) -> String {
    let mut doc = json!({
        "rabbit_version": s.version, "rabbitmq_version": s.version,
        "product_name": "RabbitMQ", "product_version": s.version,
        "users": users_items(s), "permissions": permission_items(s),
        "vhosts": s.vhosts.iter().map(|(n, v)| vhost_item(n, v)).collect::<Vec<_>>(),
        "global_parameters": s.global_parameters.iter().map(|(n, v)| json!({ "name": n, "value": v })).collect::<Vec<_>>(),
    });
    for key in ["parameters", "policies", "queues", "exchanges", "bindings"] {
        doc[key] = json!([]);
    }
    // Users and permissions are the state's own (`users_items`,
    // `permission_items`), not objects of their kinds.
    for kind in KINDS.iter().filter(|k| **k != &users::KIND && **k != &permissions::KIND) {
        let list = doc[kind.definitions].as_array_mut();
        match list {
            Some(list) => list.extend(items_of(s, kind)),
            None => doc[kind.definitions] = Json::Array(items_of(s, kind)),
        }
    }
    for (name, v) in &s.vhosts {
        for (key, items) in export_parts(name, v, true) {
            doc[key].as_array_mut().expect("made a list above").extend(items);
        }
    }
    doc.to_string()
}

/// Each user as RabbitMQ exports it, written by the kind.
fn users_items(s: &State) -> Vec<Json> {
    let item = |(name, u): (&String, &super::state::UserState)| {
        let password = match u.password_hash.as_str() {
            "" => Password::None,
            hash => {
                let algorithm = (u.hashing_algorithm != users::DEFAULT_ALGORITHM).then(|| u.hashing_algorithm.clone());
                Password::Hash { hash: hash.to_string(), algorithm }
            }
        };
        let limits = Some(u.limits.clone()).filter(|l| !l.is_empty());
        let user = User { name: name.clone(), password, tags: u.tags.iter().cloned().collect(), limits };
        (users::KIND.write)(None, &users::object(&user))
    };
    s.users.iter().map(item).collect()
}

fn permission_items(s: &State) -> Vec<Json> {
    let item = |vhost: &str, p| (permissions::KIND.write)(Some(vhost), &permissions::object(p));
    s.vhosts.iter().flat_map(|(vhost, v)| v.permissions.values().map(move |p| item(vhost, p))).collect()
}

/// `GET /api/users`.
pub(super) fn users(s: &State) -> String {
    Json::Array(users_items(s)).to_string()
}

/// `GET /api/permissions`.
pub(super) fn permissions(s: &State) -> String {
    Json::Array(permission_items(s)).to_string()
}

/// A vhost's exchange listing, the broker's own exchanges included.
pub(super) fn exchange_listing(vhost: &str, v: &VhostState) -> String {
    Json::Array(v.exchanges.values().map(|x| exchange_item(vhost, x, true)).collect()).to_string()
}

/// A vhost's queue listing, with the lock's exclusive queue when it is
/// held: the columns `rabbit.rs` asks for (`QUEUE_COLUMNS`), no vhost
/// among them, and the type the queue has.
pub(super) fn queue_listing(vhost: &str, v: &VhostState, locked: bool) -> String {
    let listed = |(name, q): (&String, &QueueState)| {
        let mut item = queue_item(vhost, name, q, false);
        item["type"] = json!(q.kind.as_str());
        item["exclusive"] = json!(false);
        item
    };
    let mut items: Vec<Json> = v.queues.iter().map(listed).collect();
    if locked {
        items.push(json!({
            "name": LOCK_QUEUE, "type": "classic", "durable": false, "auto_delete": false,
            "exclusive": true, "arguments": {},
        }));
    }
    Json::Array(items).to_string()
}

/// A vhost's binding listing: the default exchange's implicit binding of
/// each queue first, then the others, each with its `properties_key`.
pub(super) fn binding_listing(vhost: &str, v: &VhostState) -> String {
    let mut items = Vec::new();
    for name in v.queues.keys() {
        items.push(json!({
            "source": "", "vhost": vhost, "destination": name, "destination_type": "queue",
            "routing_key": name, "arguments": {}, "properties_key": quote(name),
        }));
    }
    for b in &v.bindings {
        let mut item = binding_item(vhost, b, true);
        item["properties_key"] = json!(properties_key(b));
        items.push(item);
    }
    Json::Array(items).to_string()
}

/// A vhost's policy (or operator policy) listing.
pub(super) fn policy_listing(vhost: &str, v: &VhostState, operator: bool) -> String {
    let set = if operator { &v.operator_policies } else { &v.policies };
    Json::Array(set.values().map(|p| policy_item(vhost, p)).collect()).to_string()
}

/// The name the management API gives a binding (`rabbit_mgmt_format:pack_binding_props`): the key
/// quoted, and for arguments a digest of them (the broker's own digest is
/// Erlang's `phash2`; any stable one serves, since it is only read back).
fn properties_key(b: &Binding) -> String {
    if b.arguments.is_empty() {
        return if b.routing_key.is_empty() { "~".into() } else { quote(&b.routing_key) };
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(table(&b.arguments).to_string().as_bytes());
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let code: String = digest.iter().take(6).map(|byte| alphabet[(*byte as usize) % 64] as char).collect();
    format!("{}~{code}", quote(&b.routing_key))
}

/// `quote_plus`, with `~` escaped too.
fn quote(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
