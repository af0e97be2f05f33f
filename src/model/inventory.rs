//! warren's inventory: the objects it manages, stored in the broker itself
//! (a global parameter) so that no state file is needed anywhere. An object
//! removed from the files is destroyed only if it is in the inventory.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as Json, json};

use super::key::ObjectKey;
use super::topology::{Binding, DestinationKind, Topology};
use super::value::Value;

/// The global parameter that holds the inventory. A fixed name: each global
/// parameter name becomes an Erlang atom on the broker.
pub const INVENTORY_PARAMETER: &str = "warren.inventory";

/// Global parameters the broker owns, never part of a topology.
pub const BROKER_GLOBAL_PARAMETERS: [&str; 3] = ["cluster_name", "cluster_tags", "internal_cluster_id"];

const FORMAT: i64 = 1;

/// The set of objects warren manages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub objects: BTreeSet<ObjectKey>,
}

impl Inventory {
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.objects.contains(key)
    }

    /// Every object of a topology, as managed objects.
    pub fn of(topology: &Topology) -> Inventory {
        let mut objects = BTreeSet::new();
        for user in topology.users.keys() {
            objects.insert(ObjectKey::User(user.clone()));
        }
        for (v, vh) in &topology.vhosts {
            let vhost = || v.clone();
            objects.insert(ObjectKey::Vhost(vhost()));
            objects.extend(vh.exchanges.keys().map(|n| ObjectKey::Exchange { vhost: vhost(), name: n.clone() }));
            objects.extend(vh.queues.keys().map(|n| ObjectKey::Queue { vhost: vhost(), name: n.clone() }));
            objects.extend(vh.bindings.iter().map(|b| ObjectKey::Binding { vhost: vhost(), binding: b.clone() }));
            objects.extend(vh.policies.keys().map(|n| ObjectKey::Policy { vhost: vhost(), name: n.clone() }));
            objects.extend(
                vh.operator_policies.keys().map(|n| ObjectKey::OperatorPolicy { vhost: vhost(), name: n.clone() }),
            );
            objects.extend(vh.permissions.keys().map(|u| ObjectKey::Permission { vhost: vhost(), user: u.clone() }));
        }
        Inventory { objects }
    }

    /// The parameter's JSON value: grouped by vhost, names sorted, so that
    /// an unchanged inventory is byte-for-byte the same.
    pub fn to_json(&self) -> Json {
        let mut users = Vec::new();
        let mut vhosts: BTreeMap<&str, BTreeMap<&str, Vec<Json>>> = BTreeMap::new();
        for key in &self.objects {
            let (vhost, group, item) = match key {
                ObjectKey::User(u) => {
                    users.push(json!(u));
                    continue;
                }
                ObjectKey::Vhost(v) => {
                    vhosts.entry(v).or_default();
                    continue;
                }
                ObjectKey::Exchange { vhost, name } => (vhost, "exchanges", json!(name)),
                ObjectKey::Queue { vhost, name } => (vhost, "queues", json!(name)),
                ObjectKey::Policy { vhost, name } => (vhost, "policies", json!(name)),
                ObjectKey::OperatorPolicy { vhost, name } => (vhost, "operator_policies", json!(name)),
                ObjectKey::Permission { vhost, user } => (vhost, "permissions", json!(user)),
                ObjectKey::Binding { vhost, binding } => (vhost, "bindings", binding_json(binding)),
            };
            vhosts.entry(vhost).or_default().entry(group).or_default().push(item);
        }
        json!({ "format": FORMAT, "users": users, "vhosts": vhosts })
    }

    /// Reads the parameter's value; an error says what is malformed.
    pub fn from_json(value: &Json) -> Result<Inventory, String> {
        if value.get("format").and_then(Json::as_i64) != Some(FORMAT) {
            return Err(format!("the inventory has format {}, this warren reads {FORMAT}", value["format"]));
        }
        let mut objects = BTreeSet::new();
        for u in value["users"].as_array().into_iter().flatten() {
            objects.insert(ObjectKey::User(text(u)?));
        }
        let empty = serde_json::Map::new();
        for (v, groups) in value["vhosts"].as_object().unwrap_or(&empty) {
            objects.insert(ObjectKey::Vhost(v.clone()));
            for (group, items) in groups.as_object().unwrap_or(&empty) {
                for item in items.as_array().into_iter().flatten() {
                    let (vhost, name) = (v.clone(), || text(item));
                    objects.insert(match group.as_str() {
                        "exchanges" => ObjectKey::Exchange { vhost, name: name()? },
                        "queues" => ObjectKey::Queue { vhost, name: name()? },
                        "policies" => ObjectKey::Policy { vhost, name: name()? },
                        "operator_policies" => ObjectKey::OperatorPolicy { vhost, name: name()? },
                        "permissions" => ObjectKey::Permission { vhost, user: name()? },
                        "bindings" => ObjectKey::Binding { vhost, binding: binding_from(item)? },
                        other => return Err(format!("unknown inventory group \"{other}\"")),
                    });
                }
            }
        }
        Ok(Inventory { objects })
    }
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

fn binding_from(v: &Json) -> Result<Binding, String> {
    let destination_kind = match v["destination_type"].as_str() {
        Some("queue") => DestinationKind::Queue,
        Some("exchange") => DestinationKind::Exchange,
        _ => {
            return Err(format!("a binding in the inventory has no valid destination_type: {v}"));
        }
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

    #[test]
    fn round_trips_through_json() {
        let mut t = Topology::default();
        let mut v = Vhost::new("/");
        let mut args = Table::new();
        args.insert("x-match".into(), Value::String("all".into()));
        v.bindings.insert(Binding {
            source: "x".into(),
            destination_kind: DestinationKind::Queue,
            destination: "q".into(),
            routing_key: "k".into(),
            arguments: args,
        });
        t.vhosts.insert("/".into(), v);
        let inv = Inventory::of(&t);
        assert_eq!(Inventory::from_json(&inv.to_json()), Ok(inv));
    }

    #[test]
    fn refuses_an_unknown_format() {
        assert!(Inventory::from_json(&json!({"format": 9})).unwrap_err().contains("format 9"));
    }
}
