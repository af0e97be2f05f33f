//! Who owns what on a broker shared by several projects: each project's
//! [`Inventory`], kept together in warren's records on the broker.
//!
//! Exchanges, queues, bindings, policies and permissions have one owner: a
//! project changes and destroys only its own, and another project's are
//! shown as theirs. Vhosts and users are shared: every project that
//! declares one holds it, and it is destroyed only when none does.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value as Json, json};

use super::inventory::Inventory;
use super::key::ObjectKey;
use super::key_set::KeySet;
use super::record_format::{RECORD_FORMAT, RecordError};
use super::record_kind::RecordKind;

/// The project of a directory without a project file.
pub const DEFAULT_PROJECT: &str = "default";

/// Every project's inventory, each shared: the live side keeps the records
/// as read beside the ownership made from them, and a plan of 10,000
/// queues held their inventories three times over (11.5 MB of its heap).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    pub projects: BTreeMap<String, Arc<Inventory>>,
}

/// The inventory of a project with no records.
static EMPTY: Inventory = Inventory { objects: KeySet::new(), scopes: BTreeMap::new(), digests: BTreeMap::new() };

impl Ownership {
    /// Records in which `project` owns `inventory` and nobody else owns anything.
    pub fn single(project: &str, inventory: Inventory) -> Ownership {
        Ownership { projects: BTreeMap::from([(project.to_string(), Arc::new(inventory))]) }
    }

    /// `project`'s inventory (empty for a project with no records).
    pub fn of(&self, project: &str) -> &Inventory {
        self.projects.get(project).map_or(&EMPTY, |inv| inv)
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
            if inv.objects.iter().any(|k| !is_shared(k) && inventory.contains(k)) {
                *inv = Arc::new(inv.retained(|k| is_shared(k) || !inventory.contains(k)));
            }
        }
        out.projects.insert(project.to_string(), Arc::new(inventory));
        out.projects.retain(|_, inv| !inv.objects.is_empty());
        out
    }

    /// The records' JSON value; projects by name, each as [`Inventory::to_json`].
    pub fn to_json(&self) -> Json {
        let projects: serde_json::Map<String, Json> =
            self.projects.iter().map(|(p, inv)| (p.clone(), inv.to_json())).collect();
        json!({ "format": RECORD_FORMAT, "projects": projects })
    }

    /// Reads the records; an error says what is malformed, or which format
    /// they have.
    pub fn from_json(value: &Json) -> Result<Ownership, RecordError> {
        RecordError::check_format(RecordKind::Inventory, value)?;
        let mut projects = BTreeMap::new();
        let Some(found) = value["projects"].as_object() else {
            return Err(RecordError::Malformed("the records hold no \"projects\"".into()));
        };
        for (p, inv) in found {
            let inv = Inventory::from_json(inv).map_err(|e| match e {
                RecordError::Malformed(e) => RecordError::Malformed(format!("project \"{p}\": {e}")),
                other => other,
            })?;
            projects.insert(p.clone(), Arc::new(inv));
        }
        Ok(Ownership { projects })
    }

    /// Reads the records from their JSON text, as [`Self::from_json`]
    /// reads their value, each project's inventory straight from its text
    /// ([`Inventory::from_text`]).
    pub fn from_text(text: &str) -> Result<Ownership, RecordError> {
        let found = match super::inventory::records_from_text(text) {
            Some((format, found)) => {
                RecordError::check_found_format(RecordKind::Inventory, format.as_ref())?;
                found
            }
            // Read again a part at a time, to say which part is wrong.
            None => {
                #[derive(serde::Deserialize)]
                struct Stored<'a> {
                    format: Option<Json>,
                    #[serde(borrow)]
                    projects: Option<BTreeMap<String, &'a serde_json::value::RawValue>>,
                }
                let stored: Stored = serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()))?;
                RecordError::check_found_format(RecordKind::Inventory, stored.format.as_ref())?;
                stored
                    .projects
                    .map(|found| found.into_iter().map(|(p, inv)| (p, Inventory::from_text(inv.get()))).collect())
            }
        };
        let Some(found) = found else {
            return Err(RecordError::Malformed("the records hold no \"projects\"".into()));
        };
        let mut projects = BTreeMap::new();
        for (p, inv) in found {
            let inv = inv.map_err(|e| match e {
                RecordError::Malformed(e) => RecordError::Malformed(format!("project \"{p}\": {e}")),
                other => other,
            })?;
            projects.insert(p, Arc::new(inv));
        }
        Ok(Ownership { projects })
    }
}

/// Vhosts and users may be held by several projects at once.
pub fn is_shared(key: &ObjectKey) -> bool {
    matches!(key, ObjectKey::Vhost(_)) || super::kinds::users::name_of(key).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str) -> ObjectKey {
        ObjectKey::Queue { vhost: "shared".into(), name: name.into() }
    }

    /// An inventory of `keys` and their vhost, as every inventory read back has.
    fn inventory(keys: &[ObjectKey]) -> Inventory {
        let mut objects: KeySet = keys.iter().cloned().collect();
        objects.insert(ObjectKey::Vhost("shared".into()));
        Inventory { objects, ..Inventory::default() }
    }

    #[test]
    fn round_trips_through_json() {
        let o = Ownership::single("a", inventory(&[queue("q")])).with("b", inventory(&[queue("r")]));
        assert_eq!(Ownership::from_text(&o.to_json().to_string()), Ok(o.clone()));
        assert_eq!(Ownership::from_json(&o.to_json()), Ok(o));
    }

    /// From their value and from their text alike.
    #[test]
    fn records_of_another_format_are_refused() {
        type Read = fn(&Json) -> Result<Ownership, RecordError>;
        let readers: [Read; 2] =
            [|value| Ownership::from_json(value), |value| Ownership::from_text(&value.to_string())];
        for read in readers {
            // As warren wrote them before projects (one inventory), and with projects.
            for format in [1, 2] {
                let e = read(&json!({"format": format, "projects": {}})).unwrap_err();
                let found = Some(format.to_string());
                assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Inventory, found });
            }
            let mut inner = Ownership::single("a", inventory(&[queue("q")])).to_json();
            inner["projects"]["a"]["format"] = json!(2);
            assert!(matches!(read(&inner), Err(RecordError::OtherFormat { .. })));
            inner["projects"]["a"] = json!({"format": RECORD_FORMAT, "vhosts": {"v": {"queue": ["q"]}}});
            let e = read(&inner).unwrap_err().to_string();
            assert_eq!(e, "project \"a\": unknown inventory group \"queue\"");
        }
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
