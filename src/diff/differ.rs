//! One diff under way, and how it records what it finds: the same for
//! every kind of object, and what ownership makes of a live object the
//! files do not declare (see the module's notes).

use std::collections::{BTreeMap, BTreeSet};

use super::Diff;
use super::attributes::Attributes;
use super::change::{Action, Change, Declared};
use super::facts::BrokerFacts;
use super::options::Options;
use crate::model::{Inventory, ObjectKey, Ownership, is_removed, is_shared};

/// What one diff reads, and what it has found so far.
pub(super) struct Differ<'a> {
    /// This project's inventory.
    pub(super) inventory: &'a Inventory,
    pub(super) ownership: &'a Ownership,
    pub(super) project: &'a str,
    /// The vhosts the files declare: the scope of this run's ownership.
    pub(super) declared: BTreeSet<String>,
    pub(super) options: &'a Options,
    pub(super) facts: &'a BrokerFacts,
    /// The files' `[removed]`.
    pub(super) removed: &'a BTreeSet<ObjectKey>,
    pub(super) out: Diff,
}

/// Why a live object absent from the files is left alone: nothing made it.
pub const NOT_WARRENS: &str = "live, but neither in the files nor created by warren";

/// Why a user or vhost the project made is left alone: it was declared with
/// vhosts the files no longer declare, and a project's topologies are told
/// apart by their vhosts, so this run does not speak for those.
pub const LEFT_WITH_ITS_VHOST: &str = "this project's, made with vhosts the files no longer declare: left as it is, since this run does not speak for them";

impl<'a> Differ<'a> {
    /// Why an object the project owns goes: taken out of the files, or the
    /// whole project destroyed (`warren destroy`).
    pub(super) fn gone(&self) -> &'static str {
        if self.options.destroy { "destroyed with the project (warren destroy)" } else { "removed from the files" }
    }

    pub(super) fn push(&mut self, c: Change) {
        self.out.changes.push(c);
    }

    /// A live object absent from the files: destroyed if this project owns
    /// it (and, for a shared vhost or user, no other project holds it).
    pub(super) fn absent(&mut self, key: ObjectKey, before: Attributes, lossy: bool) {
        let other = self.ownership.other_holder(&key, self.project);
        let mut c = match other {
            None if self.inventory.contains(&key) && is_removed(self.removed, &key) => {
                let why = match self.removed.contains(&key) {
                    true => "in [removed]",
                    false => "what it connects is in [removed]",
                };
                let reason = format!("{why}: it leaves this project's inventory and stays on the broker as it is");
                Change::new(key, Action::Forget, reason)
            }
            Some(p) if !self.inventory.contains(&key) || is_shared(&key) => theirs(key, p),
            _ if self.inventory.owns(&key, &self.declared) => {
                let mut c = Change::new(key, Action::Destroy, self.gone());
                c.requires_allow_destroy = lossy;
                c
            }
            _ if self.inventory.contains(&key) => {
                let mut c = Change::new(key, Action::Unmanaged, LEFT_WITH_ITS_VHOST);
                c.owner = Some(self.project.to_string());
                c
            }
            _ => Change::new(key, Action::Unmanaged, NOT_WARRENS),
        };
        c.before = Some(before);
        self.push(c);
    }

    /// Replaces the reason of the change just pushed, when it is a destroy.
    pub(super) fn explain_last(&mut self, reason: &str) {
        if let Some(c) = self.out.changes.last_mut().filter(|c| c.action == Action::Destroy) {
            c.reason = reason.to_string();
        }
    }

    pub(super) fn created(&mut self, key: ObjectKey, after: Attributes, reason: &str, declared: Option<Declared>) {
        let mut c = Change::new(key, Action::Create, reason);
        c.after = Some(after);
        c.declared = declared;
        self.push(c);
    }

    pub(super) fn updated(&mut self, key: ObjectKey, before: Attributes, after: Attributes, declared: Declared) {
        let mut c = Change::new(key, Action::Update, "changed in the files");
        c.before = Some(before);
        c.after = Some(after);
        c.declared = Some(declared);
        self.push(c);
    }

    /// Create, update, destroy or mark unmanaged the entries of two maps of
    /// objects that can all change in place.
    pub(super) fn mutable<T: PartialEq>(
        &mut self,
        want: &BTreeMap<String, T>,
        have: &BTreeMap<String, T>,
        key: impl Fn(&str) -> ObjectKey,
        attrs: impl Fn(&T) -> Attributes,
        declared: impl Fn(&T) -> Declared,
    ) {
        for (name, w) in want {
            match have.get(name) {
                None => self.created(key(name), attrs(w), "declared in the files", Some(declared(w))),
                Some(h) if h != w => self.updated(key(name), attrs(h), attrs(w), declared(w)),
                Some(_) => {}
            }
        }
        for (name, h) in have.iter().filter(|(n, _)| !want.contains_key(*n)) {
            self.absent(key(name), attrs(h), false);
        }
    }
}

/// A live object that another project holds: shown as theirs, never touched.
fn theirs(key: ObjectKey, project: &str) -> Change {
    let mut c = Change::new(key, Action::OtherProject, format!("owned by project \"{project}\""));
    c.owner = Some(project.to_string());
    c
}
