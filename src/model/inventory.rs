//! warren's inventory: the objects it manages, stored in the broker itself
//! (a global parameter) so that no state file is needed anywhere. An object
//! removed from the files is destroyed only if it is in the inventory.
//!
//! Several topologies (repositories, teams) may share a broker, each
//! declaring its own vhosts. So that one never destroys another's, a vhost
//! or a user (the objects that live outside any declared vhost) records the
//! vhosts declared alongside it; it is destroyed by omission only by a run
//! that declares at least one of them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value as Json, json};

use super::key::ObjectKey;
use super::key_set::KeySet;
use super::kinds::users;
use super::record_format::{RECORD_FORMAT, RecordError};
use super::record_kind::RecordKind;
use super::topology::{Binding, DestinationKind, Topology};
use super::value::Value;

/// The global parameter that holds the inventory. A fixed name: each global
/// parameter name becomes an Erlang atom on the broker.
pub const INVENTORY_PARAMETER: &str = "warren.inventory";

/// Global parameters the broker owns, never part of a topology.
pub const BROKER_GLOBAL_PARAMETERS: [&str; 3] = ["cluster_name", "cluster_tags", "internal_cluster_id"];

/// The set of objects warren manages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub objects: KeySet,
    /// For vhosts and users: the vhosts declared alongside them.
    pub scopes: BTreeMap<ObjectKey, BTreeSet<String>>,
    /// A digest of each object as warren last applied it, for the objects
    /// that have one (see `diff::drift`): a live object whose digest
    /// differs was changed outside warren since.
    pub digests: BTreeMap<ObjectKey, String>,
}

impl Inventory {
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.objects.contains(key)
    }

    /// Whether a run that declares `declared` vhosts owns `key`: it is in
    /// the inventory and, for a vhost or a user, was declared alongside one
    /// of them (or alongside none, by a run that declares none).
    pub fn owns(&self, key: &ObjectKey, declared: &BTreeSet<String>) -> bool {
        if !self.contains(key) {
            return false;
        }
        match key {
            k if matches!(k, ObjectKey::Vhost(_)) || users::name_of(k).is_some() => {
                let scope = self.scopes.get(key).cloned().unwrap_or_default();
                !scope.is_disjoint(declared) || (scope.is_empty() && declared.is_empty())
            }
            _ => true,
        }
    }

    /// The objects `keep` keeps, with their scopes and digests.
    pub fn retained(&self, keep: impl Fn(&ObjectKey) -> bool) -> Inventory {
        let objects: KeySet = self.objects.iter().filter(|k| keep(k)).cloned().collect();
        let scopes = of_kept(&self.scopes, &objects);
        let digests = of_kept(&self.digests, &objects);
        Inventory { objects, scopes, digests }
    }

    /// `self` with `newer`'s objects added and its scopes and digests
    /// taking precedence.
    pub fn merged(&self, newer: &Inventory) -> Inventory {
        let mut out = self.clone();
        out.objects.extend(newer.objects.iter().cloned());
        out.scopes.extend(newer.scopes.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.digests.extend(newer.digests.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }

    /// Every object of a topology, as managed objects.
    pub fn of(topology: &Topology) -> Inventory {
        // Gathered, then built whole: inserted one by one, the keys were
        // compared a dozen times each (a plan beside another project's
        // records makes this inventory).
        let in_vhosts: usize = topology
            .vhosts
            .values()
            .map(|v| 1 + v.exchanges.len() + v.queues.len() + v.bindings.len() + v.objects.len())
            .sum();
        let mut objects = Vec::with_capacity(in_vhosts + topology.objects.len());
        let declared: BTreeSet<String> = topology.vhosts.keys().cloned().collect();
        let mut scopes = BTreeMap::new();
        for user in topology.user_names() {
            objects.push(users::key(user));
            scopes.insert(users::key(user), declared.clone());
        }
        for (v, vh) in &topology.vhosts {
            let vhost = || v.clone();
            objects.push(ObjectKey::Vhost(vhost()));
            scopes.insert(ObjectKey::Vhost(vhost()), declared.clone());
            objects.extend(vh.exchanges.keys().map(|n| ObjectKey::Exchange { vhost: vhost(), name: n.clone() }));
            objects.extend(vh.queues.keys().map(|n| ObjectKey::Queue { vhost: vhost(), name: n.clone() }));
            objects.extend(vh.bindings.iter().map(|b| ObjectKey::Binding { vhost: vhost(), binding: b.clone() }));
        }
        let of_kinds = topology.kind_objects();
        objects.extend(of_kinds.map(|(v, n, _)| ObjectKey::Object { vhost: v.map(str::to_string), name: n.clone() }));
        Inventory { objects: KeySet::from(objects), scopes, digests: BTreeMap::new() }
    }

    /// The parameter's JSON value: grouped by vhost, names sorted, so that
    /// an unchanged inventory is byte-for-byte the same.
    pub fn to_json(&self) -> Json {
        let mut users = Vec::new();
        let mut vhosts: BTreeMap<&str, BTreeMap<&str, Vec<Json>>> = BTreeMap::new();
        let mut bindings: BTreeMap<&str, Vec<Json>> = BTreeMap::new();
        let mut broker: BTreeMap<&str, Vec<Json>> = BTreeMap::new();
        for key in &self.objects {
            // Users apart from the broker-wide kinds' objects, as before
            // they were a kind's objects.
            if let Some(u) = users::name_of(key) {
                users.push(json!(u));
                continue;
            }
            let (vhost, group, item) = match key {
                ObjectKey::Object { vhost: None, name } => {
                    broker.entry(name.kind.table).or_default().push(id_json(&name.id));
                    continue;
                }
                ObjectKey::Object { vhost: Some(vhost), name } => (vhost.as_str(), name.kind.table, id_json(&name.id)),
                ObjectKey::Vhost(v) => {
                    vhosts.entry(v).or_default();
                    continue;
                }
                ObjectKey::Binding { vhost, binding } => {
                    vhosts.entry(vhost).or_default();
                    bindings.entry(vhost).or_default().push(compact_binding(binding));
                    continue;
                }
                named => {
                    let (vhost, group, name) = grouped(named).expect("every other key is named in a vhost");
                    (vhost, group, json!(name))
                }
            };
            vhosts.entry(vhost).or_default().entry(group).or_default().push(item);
        }
        let (mut users_with, mut vhosts_with) = (serde_json::Map::new(), serde_json::Map::new());
        for (key, scope) in &self.scopes {
            match (key, users::name_of(key)) {
                (_, Some(u)) => users_with.insert(u.to_string(), json!(scope)),
                (ObjectKey::Vhost(v), _) => vhosts_with.insert(v.clone(), json!(scope)),
                _ => None,
            };
        }
        let declared_with = json!({ "users": users_with, "vhosts": vhosts_with });
        let mut out =
            json!({ "format": RECORD_FORMAT, "users": users, "vhosts": vhosts, "declared_with": declared_with });
        if !bindings.is_empty() {
            // Apart from the objects, as `[source, destination type,
            // destination, routing key(, arguments)]`: 42% of the size of an
            // export's binding objects, and half the broker's time to hand
            // over the parameter, which every plan reads.
            out["bindings"] = json!(bindings);
        }
        if !self.digests.is_empty() {
            out["digests"] = digests_json(&self.digests);
        }
        let broker_wide: BTreeMap<&str, serde_json::Map<String, Json>> =
            self.digests.iter().fold(BTreeMap::new(), |mut out, (k, d)| {
                if let ObjectKey::Object { vhost: None, name } = k
                    && users::name_of(k).is_none()
                {
                    out.entry(name.kind.table).or_default().insert(id_text(&name.id), json!(d));
                }
                out
            });
        if !broker_wide.is_empty() {
            out["object_digests"] = json!(broker_wide);
        }
        if let Some(settings) = settings_digests_json(&self.digests) {
            out["settings_digests"] = settings;
        }
        if !broker.is_empty() {
            out["objects"] = json!(broker);
        }
        out
    }

    /// Reads the parameter's value; an error says what is malformed, or
    /// which format it has.
    pub fn from_json(value: &Json) -> Result<Inventory, RecordError> {
        RecordError::check_format(RecordKind::Inventory, value)?;
        Stored::deserialize(value).map_err(|e| RecordError::Malformed(e.to_string()))?.read()
    }

    /// Reads the record from its JSON text, as [`Self::from_json`] reads
    /// its value, with no JSON tree of it in between: a large vhost's
    /// inventory is megabytes of text, and a tree of it several times that,
    /// held at a plan's peak beside the keys made from it.
    ///
    /// One pass over the text, the format checked once it is read: a record
    /// of another format that does not read as this one is told apart by
    /// its `format` alone, read then. (Checked first, in a pass of its own,
    /// it cost a fleet's plan a tenth of its instructions.)
    pub fn from_text(text: &str) -> Result<Inventory, RecordError> {
        match serde_json::from_str::<Stored>(text) {
            Ok(stored) => stored.checked_read(),
            Err(e) => {
                let found: Format = serde_json::from_str(text).map_err(|_| RecordError::Malformed(e.to_string()))?;
                RecordError::check_found_format(RecordKind::Inventory, found.format.as_ref())?;
                Err(RecordError::Malformed(e.to_string()))
            }
        }
    }
}

/// Broker-wide records (`{"format": F, "projects": {P: inventory}}`) read
/// in one pass over their text: their `format`, and each project's
/// inventory as [`Inventory::from_text`] reads one, in the projects' order
/// (`None` when they hold no `projects`). `None` when the text does not
/// read as such records, for the caller to read it again a part at a time
/// and say what is wrong: a pass for the records, then one for each
/// project, cost a fleet's plan a twentieth of its instructions.
#[allow(clippy::type_complexity)]
pub(crate) fn records_from_text(
    text: &str,
) -> Option<(Option<Json>, Option<Vec<(String, Result<Inventory, RecordError>)>>)> {
    #[derive(serde::Deserialize)]
    struct Records<'a> {
        #[serde(default)]
        format: Option<Json>,
        #[serde(default, borrow)]
        projects: Option<BTreeMap<String, Stored<'a>>>,
    }
    let records: Records = serde_json::from_str(text).ok()?;
    let projects =
        records.projects.map(|projects| projects.into_iter().map(|(p, stored)| (p, stored.checked_read())).collect());
    Some((records.format, projects))
}

/// A record's `format` alone, for a record that does not read as this
/// format's: another format's may hold any shape.
#[derive(serde::Deserialize)]
struct Format {
    format: Option<Json>,
}

/// The record as [`Inventory::to_json`] writes it, its names borrowed from
/// the text or value it is read from.
#[derive(serde::Deserialize)]
struct Stored<'a> {
    /// Checked by the caller.
    #[serde(default)]
    format: Option<Json>,
    #[serde(default, borrow)]
    users: Vec<Name<'a>>,
    #[serde(default, borrow)]
    vhosts: BTreeMap<Name<'a>, BTreeMap<Name<'a>, Vec<Item<'a>>>>,
    #[serde(default, borrow)]
    bindings: BTreeMap<Name<'a>, Vec<Compact>>,
    #[serde(default, borrow)]
    objects: BTreeMap<Name<'a>, Vec<Item<'a>>>,
    #[serde(default, borrow)]
    declared_with: BTreeMap<Name<'a>, BTreeMap<Name<'a>, Vec<Name<'a>>>>,
    #[serde(default, borrow)]
    digests: BTreeMap<Name<'a>, BTreeMap<Name<'a>, BTreeMap<Name<'a>, Name<'a>>>>,
    #[serde(default, borrow)]
    object_digests: BTreeMap<Name<'a>, BTreeMap<Name<'a>, Name<'a>>>,
    #[serde(default, borrow)]
    settings_digests: BTreeMap<Name<'a>, BTreeMap<Name<'a>, Name<'a>>>,
}

/// A name as the record holds it: borrowed unless it has escapes (serde's
/// own `Cow` borrows only as a field, never inside a map or a list).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Name<'a>(std::borrow::Cow<'a, str>);

impl Name<'_> {
    fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl std::ops::Deref for Name<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Name<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Item::deserialize(d)? {
            Item::One(name) => Ok(name),
            Item::Parts(_) => Err(serde::de::Error::custom("expected a name in the inventory, found a list")),
        }
    }
}

/// An object in a group: its one name, or its identity's parts.
enum Item<'a> {
    One(Name<'a>),
    Parts(Vec<String>),
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Item<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ItemVisitor(std::marker::PhantomData))
    }
}

struct ItemVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for ItemVisitor<'a> {
    type Value = Item<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a name in the inventory, or its parts")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Item<'a>, E> {
        Ok(Item::One(Name(v.into())))
    }

    fn visit_str<E>(self, v: &str) -> Result<Item<'a>, E> {
        Ok(Item::One(Name(v.to_string().into())))
    }

    fn visit_string<E>(self, v: String) -> Result<Item<'a>, E> {
        Ok(Item::One(Name(v.into())))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Item<'a>, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(2));
        while let Some(part) = seq.next_element()? {
            parts.push(part);
        }
        Ok(Item::Parts(parts))
    }
}

impl Item<'_> {
    fn id(self) -> Vec<String> {
        match self {
            Item::One(name) => vec![name.into_owned()],
            Item::Parts(parts) => parts,
        }
    }
}

impl Stored<'_> {
    /// The inventory the record holds, once its format is this warren's.
    fn checked_read(self) -> Result<Inventory, RecordError> {
        RecordError::check_found_format(RecordKind::Inventory, self.format.as_ref())?;
        self.read()
    }

    /// The inventory the record holds.
    fn read(self) -> Result<Inventory, RecordError> {
        // Gathered, then sorted once and built whole: the record lists its
        // objects in order, and inserting each into the set searched it,
        // the first CPU of a fleet's plan after parsing. Sized at once: grown
        // by doubling, the vector was held twice while it moved.
        let groups: usize = self.vhosts.values().flat_map(|g| g.values()).map(Vec::len).sum();
        let bindings: usize = self.bindings.values().map(Vec::len).sum();
        let objects_of_kinds: usize = self.objects.values().map(Vec::len).sum();
        let mut objects =
            Vec::with_capacity(self.users.len() + self.vhosts.len() + groups + bindings + objects_of_kinds);
        objects.extend(self.users.iter().map(|u| users::key(u)));
        for (v, groups) in self.vhosts {
            objects.push(ObjectKey::Vhost(v.to_string()));
            for (group, items) in groups {
                for item in items {
                    objects.push(named(&group, v.to_string(), item.id())?);
                }
            }
        }
        for (v, items) in self.bindings {
            objects.extend(items.into_iter().map(|c| ObjectKey::Binding { vhost: v.to_string(), binding: c.0 }));
        }
        for (group, items) in self.objects {
            for item in items {
                objects.push(ObjectKey::Object { vhost: None, name: object_name(&group, item.id())? });
            }
        }
        let objects = KeySet::from(objects);
        let mut scopes = BTreeMap::new();
        for (kind, map) in self.declared_with {
            for (name, list) in map {
                let key = match kind.as_ref() {
                    "users" => users::key(&name),
                    _ => ObjectKey::Vhost(name.into_owned()),
                };
                scopes.insert(key, list.into_iter().map(Name::into_owned).collect());
            }
        }
        let of_vhosts: usize = self.digests.values().flat_map(|g| g.values()).map(BTreeMap::len).sum();
        let mut digests = Vec::with_capacity(
            of_vhosts
                + self.object_digests.values().chain(self.settings_digests.values()).map(BTreeMap::len).sum::<usize>(),
        );
        for (v, groups) in self.digests {
            for (group, names) in groups {
                for (name, digest) in names {
                    digests.push((named(&group, v.to_string(), id_parsed(&group, &name)?)?, digest.into_owned()));
                }
            }
        }
        for (group, names) in self.object_digests {
            for (name, digest) in names {
                let key = ObjectKey::Object { vhost: None, name: object_name(&group, id_parsed(&group, &name)?)? };
                digests.push((key, digest.into_owned()));
            }
        }
        for (group, names) in self.settings_digests {
            for (name, digest) in names {
                let key = match group.as_ref() {
                    "users" => users::key(&name),
                    _ => ObjectKey::Vhost(name.into_owned()),
                };
                digests.push((key, digest.into_owned()));
            }
        }
        Ok(Inventory { objects, scopes, digests: BTreeMap::from_iter(digests) })
    }
}

/// A binding as the inventory keeps it ([`compact_binding`]), read
/// straight into the binding.
struct Compact(Binding);

impl<'de> serde::Deserialize<'de> for Compact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(CompactVisitor)
    }
}

struct CompactVisitor;

const COMPACT: &str = "[source, type, destination, key(, arguments)]";

impl<'de> serde::de::Visitor<'de> for CompactVisitor {
    type Value = Compact;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a binding in the inventory as {COMPACT}")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Compact, A::Error> {
        use serde::de::Error;
        let malformed = || A::Error::custom(format!("a binding in the inventory is not {COMPACT}"));
        let mut next = || seq.next_element::<String>()?.ok_or_else(malformed);
        let source = next()?;
        let destination_kind = DestinationKind::parse(&next()?).ok_or_else(malformed)?;
        let destination = next()?;
        let routing_key = next()?;
        let arguments = match seq.next_element::<Value>()? {
            None => Default::default(),
            Some(Value::Table(t)) => t,
            Some(_) => return Err(malformed()),
        };
        if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Err(malformed());
        }
        Ok(Compact(Binding { source, destination_kind, destination, routing_key, arguments }))
    }
}

/// Digests grouped as the objects are: vhost, then group, then name.
fn digests_json(digests: &BTreeMap<ObjectKey, String>) -> Json {
    let mut out: BTreeMap<&str, BTreeMap<&str, serde_json::Map<String, Json>>> = BTreeMap::new();
    // Bindings, vhosts and users have none: their identity is all there is.
    for ((vhost, group, name), digest) in digests.iter().filter_map(|(k, d)| Some((grouped(k)?, d))) {
        let name = match name {
            Json::String(s) => s,
            compound => compound.to_string(),
        };
        out.entry(vhost).or_default().entry(group).or_default().insert(name, json!(digest));
    }
    json!(out)
}

/// The digests of users and vhosts (of the settings the files manage), as
/// `{"users": {NAME: DIGEST}, "vhosts": {…}}`; `None` when there are none.
fn settings_digests_json(digests: &BTreeMap<ObjectKey, String>) -> Option<Json> {
    let settings: BTreeMap<&str, BTreeMap<&str, &String>> = digests.iter().fold(BTreeMap::new(), |mut out, (k, d)| {
        match (k, users::name_of(k)) {
            (_, Some(u)) => _ = out.entry("users").or_default().insert(u, d),
            (ObjectKey::Vhost(v), _) => _ = out.entry("vhosts").or_default().insert(v.as_str(), d),
            _ => {}
        }
        out
    });
    (!settings.is_empty()).then(|| json!(settings))
}

/// The vhost, inventory group and name of an object named within a vhost:
/// an exchange, queue, policy, permission or an object of
/// a vhost kind (whose name is its identity: see [`id_json`]).
fn grouped(key: &ObjectKey) -> Option<(&str, &'static str, Json)> {
    match key {
        ObjectKey::Exchange { vhost, name } => Some((vhost, "exchanges", json!(name))),
        ObjectKey::Queue { vhost, name } => Some((vhost, "queues", json!(name))),
        ObjectKey::Object { vhost: Some(vhost), name } => Some((vhost, name.kind.table, id_json(&name.id))),
        ObjectKey::Object { vhost: None, .. } | ObjectKey::Binding { .. } | ObjectKey::Vhost(_) => None,
    }
}

/// The inverse of [`grouped`], of an identity read by [`Item::id`].
fn named(group: &str, vhost: String, mut id: Vec<String>) -> Result<ObjectKey, String> {
    let one = |id: &mut Vec<String>| match id.as_mut_slice() {
        [one] => Ok(std::mem::take(one)),
        _ => Err(format!("expected a name in the inventory, found {id:?}")),
    };
    Ok(match group {
        "exchanges" => ObjectKey::Exchange { vhost, name: one(&mut id)? },
        "queues" => ObjectKey::Queue { vhost, name: one(&mut id)? },
        kind => ObjectKey::Object { vhost: Some(vhost), name: object_name(kind, id)? },
    })
}

/// An identity as the inventory holds it: its one name, or its parts.
fn id_json(id: &[String]) -> Json {
    match id {
        [one] => json!(one),
        parts => json!(parts),
    }
}

/// An identity as a digest's name: its one name, or its JSON array's text.
fn id_text(id: &[String]) -> String {
    match id_json(id) {
        Json::String(s) => s,
        compound => compound.to_string(),
    }
}

/// The inverse of [`id_text`] for group `group`: the identity's parts.
fn id_parsed(group: &str, name: &str) -> Result<Vec<String>, String> {
    match super::kinds::by_table(group).is_some_and(|k| k.identity.len() > 1) {
        true => serde_json::from_str(name).map_err(|e| format!("bad digest name {name}: {e}")),
        false => Ok(vec![name.to_string()]),
    }
}

/// The inverse of [`id_json`], for an object of the kind whose group is `group`.
fn object_name(group: &str, id: Vec<String>) -> Result<super::kinds::Name, String> {
    let kind = super::kinds::by_table(group).ok_or_else(|| format!("unknown inventory group \"{group}\""))?;
    if id.len() != kind.identity.len() {
        return Err(format!(
            "{} in the inventory has {} name part(s), not {}",
            kind.name,
            id.len(),
            kind.identity.len()
        ));
    }
    Ok(super::kinds::Name { kind, id })
}

/// The entries of `map` whose object is in `objects`.
fn of_kept<V: Clone>(map: &BTreeMap<ObjectKey, V>, objects: &KeySet) -> BTreeMap<ObjectKey, V> {
    map.iter().filter(|(k, _)| objects.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn text(v: &Json) -> Result<String, String> {
    v.as_str().map(str::to_string).ok_or_else(|| format!("expected a name in the inventory, found {v}"))
}

/// A binding in the shape of a definitions file's `bindings` entries.
pub fn binding_json(b: &Binding) -> Json {
    json!({
        "source": b.source,
        "destination": b.destination,
        "destination_type": b.destination_kind.as_str(),
        "routing_key": b.routing_key,
        "arguments": Json::from(&Value::Table(b.arguments.clone())),
    })
}

/// A binding as the inventory keeps it: `[source, "queue" or "exchange",
/// destination, routing key]`, and its arguments last when it has any.
fn compact_binding(b: &Binding) -> Json {
    let mut item =
        vec![json!(b.source), json!(b.destination_kind.as_str()), json!(b.destination), json!(b.routing_key)];
    if !b.arguments.is_empty() {
        item.push(Json::from(&Value::Table(b.arguments.clone())));
    }
    Json::Array(item)
}

/// Bindings in the shape of [`binding_json`], for `#[serde(with = ..)]`:
/// warren's records keep bindings as a definitions export writes them.
pub mod exported_bindings {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{Binding, binding_from, binding_json};

    pub fn serialize<S: Serializer>(list: &[Binding], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(binding_json))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Binding>, D::Error> {
        let list = Vec::<serde_json::Value>::deserialize(d)?;
        list.iter().map(|b| binding_from(b).map_err(D::Error::custom)).collect()
    }
}

/// The inverse of [`binding_json`].
fn binding_from(v: &Json) -> Result<Binding, String> {
    let Some(destination_kind) = v["destination_type"].as_str().and_then(DestinationKind::parse) else {
        return Err(format!("a binding in the inventory has no valid destination_type: {v}"));
    };
    let arguments = match Value::from(&v["arguments"]) {
        Value::Table(t) => t,
        Value::Null => Default::default(),
        other => {
            return Err(format!("binding arguments must be an object, found {other}"));
        }
    };
    Ok(Binding {
        source: text(&v["source"])?,
        destination_kind,
        destination: text(&v["destination"])?,
        routing_key: v["routing_key"].as_str().unwrap_or_default().to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Table, Vhost};

    /// A topology of the vhost `vhost` holding `binding` alone.
    fn with_binding(vhost: &str, binding: Binding) -> Topology {
        let mut v = Vhost::new(vhost);
        v.bindings.insert(binding);
        let mut t = Topology::default();
        t.vhosts.insert(vhost.into(), v);
        t
    }

    #[test]
    fn round_trips_through_json() {
        let mut args = Table::new();
        args.insert("x-match".into(), Value::String("all".into()));
        let t = with_binding(
            "/",
            Binding {
                source: "x".into(),
                destination_kind: DestinationKind::Queue,
                destination: "q".into(),
                routing_key: "k".into(),
                arguments: args,
            },
        );
        let mut inv = Inventory::of(&t);
        assert_eq!(Inventory::from_json(&inv.to_json()), Ok(inv.clone()));
        inv.digests.insert(ObjectKey::Queue { vhost: "/".into(), name: "q".into() }, "0a1b".into());
        inv.digests.insert(crate::model::kinds::permissions::key("/", "u"), "2c3d".into());
        inv.digests.insert(users::key("u"), "4e5f".into());
        inv.digests.insert(ObjectKey::Vhost("/".into()), "6a7b".into());
        assert_eq!(Inventory::from_json(&inv.to_json()), Ok(inv));
    }

    /// A user is its kind's object, but the record keeps users apart from
    /// the broker-wide kinds' objects, as before they were: its list, its
    /// scope and its settings digest.
    #[test]
    fn a_user_is_written_where_users_were() {
        let mut inv = Inventory::default();
        inv.objects.insert(users::key("u"));
        inv.scopes.insert(users::key("u"), ["/".to_string()].into());
        inv.digests.insert(users::key("u"), "4e5f".into());
        let written = inv.to_json();
        assert_eq!(written["users"], json!(["u"]), "{written}");
        assert_eq!(written["declared_with"]["users"], json!({ "u": ["/"] }), "{written}");
        assert_eq!(written["settings_digests"], json!({ "users": { "u": "4e5f" } }), "{written}");
        assert!(written.get("objects").is_none() && written.get("object_digests").is_none(), "{written}");
        assert_eq!(Inventory::from_json(&written), Ok(inv));
    }

    #[test]
    fn a_vhost_or_user_belongs_to_the_run_that_declares_its_vhosts() {
        let mut t = Topology::default();
        t.vhosts.insert("a".into(), Vhost::new("a"));
        let inv = Inventory::from_json(&Inventory::of(&t).to_json()).unwrap();
        let vhost = ObjectKey::Vhost("a".into());
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
        assert!(inv.owns(&vhost, &set(&["a", "b"])));
        assert!(!inv.owns(&vhost, &set(&["b"])), "another topology's vhost is never destroyed by omission");
    }

    #[test]
    fn objects_of_kinds_and_their_digests_read_back_as_written() {
        use crate::model::kinds::{Name, by_table};
        let topic = Name { kind: by_table("topic_permissions").unwrap(), id: vec!["u".into(), "amq.topic".into()] };
        let setting = Name { kind: by_table("global_parameters").unwrap(), id: vec!["[odd] name".into()] };
        let keys = [
            ObjectKey::Object { vhost: Some("/".into()), name: topic },
            ObjectKey::Object { vhost: None, name: setting },
        ];
        // A vhost's objects list the vhost too.
        let mut inv = Inventory { objects: [ObjectKey::Vhost("/".into())].into(), ..Inventory::default() };
        for (i, k) in keys.iter().enumerate() {
            inv.objects.insert(k.clone());
            inv.digests.insert(k.clone(), format!("d{i}"));
        }
        let written = inv.to_json();
        assert_eq!(written["vhosts"]["/"]["topic_permissions"], json!([["u", "amq.topic"]]), "{written}");
        assert_eq!(written["objects"]["global_parameters"], json!(["[odd] name"]), "{written}");
        assert_eq!(Inventory::from_json(&written), Ok(inv));
    }

    /// Read from its text, a record gives what its value gives: names with
    /// escapes (read into names of their own, not borrowed), identities of
    /// several parts, bindings with arguments, scopes and every digest.
    #[test]
    fn the_text_of_a_record_reads_as_its_value() {
        use crate::model::kinds::{Name, by_table, permissions};
        let mut args = Table::new();
        args.insert("x-match".into(), Value::String("any".into()));
        // Escapes in every name of the binding.
        let t = with_binding(
            "v",
            Binding {
                source: "x \"quoted\"".into(),
                destination_kind: DestinationKind::Exchange,
                destination: "d\\e".into(),
                routing_key: "k\u{e9}".into(),
                arguments: args,
            },
        );
        let mut inv = Inventory::of(&t);
        let queue = ObjectKey::Queue { vhost: "v".into(), name: "q\nline".into() };
        let setting = Name { kind: by_table("global_parameters").unwrap(), id: vec!["[odd] name".into()] };
        let keys = [
            queue,
            permissions::key("v", "u\t"),
            users::key("u\t"),
            ObjectKey::Object { vhost: None, name: setting },
            ObjectKey::Vhost("v".into()),
        ];
        for (i, k) in keys.iter().enumerate() {
            inv.objects.insert(k.clone());
            inv.digests.insert(k.clone(), format!("d{i}"));
        }
        let text = inv.to_json().to_string();
        assert!(text.contains(r#"q\nline"#), "{text}");
        assert_eq!(Inventory::from_text(&text), Ok(inv));
        let e = Inventory::from_text(r#"{"format": 1, "users": {}}"#).unwrap_err();
        assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Inventory, found: Some("1".into()) });
        let e = Inventory::from_text(&format!(r#"{{"format": {RECORD_FORMAT}, "users": [1]}}"#)).unwrap_err();
        assert!(e.to_string().contains("expected a name in the inventory"), "{e}");
        assert!(matches!(Inventory::from_text("{"), Err(RecordError::Malformed(_))));
    }

    #[test]
    fn digests_follow_their_objects() {
        let q = |n: &str| ObjectKey::Queue { vhost: "a".into(), name: n.into() };
        let mut old = Inventory { objects: [q("x"), q("y")].into(), ..Inventory::default() };
        old.digests = [(q("x"), "1".to_string()), (q("y"), "2".to_string())].into();
        let kept = old.retained(|k| *k == q("x"));
        assert_eq!(kept.digests, [(q("x"), "1".to_string())].into());
        let mut newer = Inventory { objects: [q("x")].into(), ..Inventory::default() };
        newer.digests = [(q("x"), "3".to_string())].into();
        assert_eq!(old.merged(&newer).digests, [(q("x"), "3".to_string()), (q("y"), "2".to_string())].into());
    }

    #[test]
    fn bindings_are_kept_compact() {
        let b = |key: &str, kind: DestinationKind, arguments: Table| Binding {
            source: "x".into(),
            destination_kind: kind,
            destination: "d".into(),
            routing_key: key.into(),
            arguments,
        };
        let mut args = Table::new();
        args.insert("x-match".into(), Value::String("any".into()));
        let mut t = Topology::default();
        let mut v = Vhost::new("v");
        v.bindings.insert(b("k", DestinationKind::Queue, Table::new()));
        v.bindings.insert(b("", DestinationKind::Exchange, args));
        t.vhosts.insert("v".into(), v);
        let inv = Inventory::of(&t);
        let written = inv.to_json();
        assert_eq!(
            written["bindings"],
            json!({"v": [["x", "queue", "d", "k"], ["x", "exchange", "d", "", {"x-match": "any"}]]}),
            "{written}"
        );
        assert_eq!(written["vhosts"], json!({"v": {}}), "no binding objects: {written}");
        assert_eq!(Inventory::from_json(&written), Ok(inv));
        for bad in
            [json!([]), json!(["x", "queue", "d"]), json!(["x", "topic", "d", "k"]), json!(["x", "queue", "d", "k", 1])]
        {
            let doc = json!({"format": RECORD_FORMAT, "bindings": {"v": [bad]}});
            assert!(Inventory::from_json(&doc).unwrap_err().to_string().contains("is not [source"), "{bad}");
        }
        // Binding objects in the vhost's group are no shape of this format.
        let object = json!({"source": "x", "destination": "d", "destination_type": "queue", "routing_key": "k"});
        let objects = json!({"format": RECORD_FORMAT, "vhosts": {"v": {"bindings": [object]}}});
        assert!(Inventory::from_json(&objects).unwrap_err().to_string().contains("expected a name in the inventory"));
        let names = json!({"format": RECORD_FORMAT, "vhosts": {"v": {"bindings": ["x"]}}});
        assert!(Inventory::from_json(&names).unwrap_err().to_string().contains("unknown inventory group"));
    }

    #[test]
    fn refuses_another_format() {
        let e = Inventory::from_json(&json!({"format": 1, "users": []})).unwrap_err();
        assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Inventory, found: Some("1".into()) });
        assert!(e.to_string().contains("record format 1, and this warren reads format 3"), "{e}");
    }
}
