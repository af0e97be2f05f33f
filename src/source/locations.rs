//! Where each desired object was declared, kept beside the topology so that
//! the model itself compares by content alone.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use rustc_hash::FxHasher;

use super::Location;
use super::sites::Sites;
use crate::model::ObjectKey;

/// A fast hash for keys that come from the user's own files: tens of
/// thousands of them per run, and no untrusted peer to flood the table.
pub type FastHash = BuildHasherDefault<FxHasher>;

/// The declaration site of one object and of its fields.
#[derive(Debug, Clone)]
pub struct ObjectLocation {
    pub at: Location,
    /// Shared: a file's declaration stands in each of the file's vhosts.
    pub fields: Arc<FieldLocations>,
}

/// Field path (`durable`, `arguments.x-message-ttl`) to its value's place.
/// An object has a handful, so a list is cheaper to build than a map.
#[derive(Debug, Clone, Default)]
pub struct FieldLocations(Vec<(Cow<'static, str>, Location)>);

impl FieldLocations {
    pub fn with_capacity(n: usize) -> Self {
        FieldLocations(Vec::with_capacity(n))
    }

    /// Room for `n` more paths, and no more.
    pub fn reserve_exact(&mut self, n: usize) {
        self.0.reserve_exact(n);
    }

    pub fn get(&self, path: &str) -> Option<&Location> {
        self.0.iter().find(|(p, _)| p == path).map(|(_, l)| l)
    }

    /// Each field path with its place.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Location)> {
        self.0.iter().map(|(p, l)| (p.as_ref(), l))
    }

    /// Records the place of a `path` not recorded yet.
    pub fn push(&mut self, path: &'static str, at: Location) {
        debug_assert!(self.get(path).is_none(), "{path} recorded twice");
        self.0.push((Cow::Borrowed(path), at));
    }

    /// Records `path`'s place, replacing an earlier one.
    pub fn insert(&mut self, path: impl Into<Cow<'static, str>>, at: Location) {
        let path = path.into();
        match self.0.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = at,
            None => self.0.push((path, at)),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// Every object but bindings.
    pub objects: Sites<ObjectLocation>,
    /// Bindings, most objects of a large topology: a map of their own, so
    /// that they can be placed on a thread of their own.
    pub bindings: Sites<ObjectLocation>,
    /// Exchanges, queues and users declared with errors, so that one mistake
    /// does not cascade into "undeclared" for the objects that name them.
    pub named: HashSet<ObjectKey, FastHash>,
    /// Services, by vhost and name, with each `publishes.N` entry's and
    /// each `consumes.N` queue's place: the contract's findings point there.
    pub services: HashMap<(String, String), ObjectLocation, FastHash>,
}

impl Locations {
    /// The place of an object, or of one of its fields when that is known.
    pub fn locate(&self, key: &ObjectKey, field: Option<&str>) -> Option<Location> {
        let site = self.site(key)?;
        field.and_then(|f| site.fields.get(f)).or(Some(&site.at)).cloned()
    }

    /// Where an object and its fields are declared.
    pub fn site(&self, key: &ObjectKey) -> Option<&ObjectLocation> {
        let map = if matches!(key, ObjectKey::Binding { .. }) { &self.bindings } else { &self.objects };
        map.get(key)
    }
}
