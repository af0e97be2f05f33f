//! Who owns what on a broker shared by several projects: each project's
//! [`Inventory`], kept together in warren's records on the broker.
//!
//! Exchanges, queues, bindings, policies and permissions have one owner: a
//! project changes and destroys only its own, and another project's are
//! shown as theirs. Vhosts and users are shared: every project that
//! declares one holds it, and it is destroyed only when none does.
//!
//! Records of format 1 (before projects) are one inventory, read as
//! project `default`'s, so a single-repository user sees no difference.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

use super::inventory::{FORMAT as INVENTORY_FORMAT, Inventory};
use super::key::ObjectKey;

/// The project of a directory without a project file, and the owner of
/// records written before projects existed.
pub const DEFAULT_PROJECT: &str = "default";

/// The records' format: 2 is one inventory per project.
const FORMAT: i64 = 2;

/// Every project's inventory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    pub projects: BTreeMap<String, Inventory>,
}

impl Ownership {
    /// Records in which `project` owns `inventory` and nobody else owns anything.
    pub fn single(project: &str, inventory: Inventory) -> Ownership {
        Ownership { projects: BTreeMap::from([(project.to_string(), inventory)]) }
    }

    /// `project`'s inventory (empty for a project with no records).
    pub fn of(&self, project: &str) -> Inventory {
        self.projects.get(project).cloned().unwrap_or_default()
    }

    /// Another project that holds `key`, if any: its owner, or for a vhost or
    /// a user one of the projects that share it. The first by name, so
    /// plans are the same from run to run.
    pub fn other_holder(&self, key: &ObjectKey, project: &str) -> Option<&str> {
        self.projects.iter().find(|(p, inv)| p.as_str() != project && inv.contains(key)).map(|(p, _)| p.as_str())
    }

    /// These records with `project`'s inventory replaced by `inventory`. An
    /// object of one owner that `project` now holds leaves every other
    /// project's inventory: a hand-over (`warren adopt`), or an old record
    /// of an object that was deleted and then made again by `project`.
    pub fn with(&self, project: &str, inventory: Inventory) -> Ownership {
        let mut out = self.clone();
        for (_, inv) in out.projects.iter_mut().filter(|(p, _)| p.as_str() != project) {
            *inv = inv.retained(|k| is_shared(k) || !inventory.contains(k));
        }
        out.projects.insert(project.to_string(), inventory);
        out.projects.retain(|_, inv| !inv.objects.is_empty());
        out
    }

    /// The records' JSON value; projects by name, each as [`Inventory::to_json`].
    pub fn to_json(&self) -> Json {
        let projects: serde_json::Map<String, Json> =
            self.projects.iter().map(|(p, inv)| (p.clone(), inv.to_json())).collect();
        json!({ "format": FORMAT, "projects": projects })
    }

    /// Reads the records; format 1 is project `default`'s inventory.
    pub fn from_json(value: &Json) -> Result<Ownership, String> {
        match value.get("format").and_then(Json::as_i64) {
            Some(INVENTORY_FORMAT) => Ok(Ownership::single(DEFAULT_PROJECT, Inventory::from_json(value)?)),
            Some(FORMAT) => {
                let mut projects = BTreeMap::new();
                let empty = serde_json::Map::new();
                for (p, inv) in value["projects"].as_object().unwrap_or(&empty) {
                    let inv = Inventory::from_json(inv).map_err(|e| format!("project \"{p}\": {e}"))?;
                    projects.insert(p.clone(), inv);
                }
                Ok(Ownership { projects })
            }
            _ => Err(format!(
                "the records have format {}, this warren reads {INVENTORY_FORMAT} and {FORMAT}: a newer warren wrote them",
                value["format"]
            )),
        }
    }
}

/// Vhosts and users may be held by several projects at once.
pub fn is_shared(key: &ObjectKey) -> bool {
    matches!(key, ObjectKey::Vhost(_) | ObjectKey::User(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str) -> ObjectKey {
        ObjectKey::Queue { vhost: "shared".into(), name: name.into() }
    }

    /// An inventory of `keys` and their vhost, as every inventory read back has.
    fn inventory(keys: &[ObjectKey]) -> Inventory {
        let mut objects: std::collections::BTreeSet<ObjectKey> = keys.iter().cloned().collect();
        objects.insert(ObjectKey::Vhost("shared".into()));
        Inventory { objects, ..Inventory::default() }
    }

    #[test]
    fn round_trips_through_json() {
        let o = Ownership::single("a", inventory(&[queue("q")])).with("b", inventory(&[queue("r")]));
        assert_eq!(Ownership::from_json(&o.to_json()), Ok(o));
    }

    #[test]
    fn records_from_before_projects_belong_to_default() {
        let old = inventory(&[queue("q")]);
        let o = Ownership::from_json(&old.to_json()).unwrap();
        assert_eq!(o, Ownership::single("default", old));
        assert!(Ownership::from_json(&json!({"format": 9})).unwrap_err().contains("format 9"));
    }

    #[test]
    fn an_object_has_one_owner_and_a_vhost_many_holders() {
        let vhost = ObjectKey::Vhost("shared".into());
        let o = Ownership::single("a", inventory(&[queue("q")]));
        let o = o.with("b", inventory(&[queue("q")]));
        assert!(!o.of("a").contains(&queue("q")), "handed over to b");
        assert!(o.of("a").contains(&vhost) && o.of("b").contains(&vhost), "shared");
        assert_eq!(o.other_holder(&vhost, "b"), Some("a"));
        assert_eq!(o.other_holder(&queue("q"), "b"), None);
    }

    #[test]
    fn a_project_with_nothing_left_leaves_the_records() {
        let o = Ownership::single("a", inventory(&[queue("q")])).with("a", Inventory::default());
        assert!(o.projects.is_empty());
    }
}
