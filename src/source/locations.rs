//! Where each desired object was declared, kept beside the topology so that
//! the model itself compares by content alone.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use rustc_hash::FxHasher;

use super::field_paths::{self, PathId};
use super::sites::Sites;
use super::{FileId, Location};
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
/// An object has a handful, so a list is cheaper to build than a map; a
/// large topology has about a million, so each is 16 bytes: its path's
/// number and its place in 32-bit parts (47 MB as pairs of a path and a
/// `Location`, at 100,000 queues; docs/development.md, Benchmarks).
#[derive(Debug, Clone, Default)]
pub struct FieldLocations(Vec<FieldPlace>);

#[derive(Debug, Clone, Copy)]
struct FieldPlace {
    path: PathId,
    file: u32,
    start: u32,
    end: u32,
}

impl FieldPlace {
    fn new(path: PathId, at: &Location) -> Self {
        FieldPlace { path, file: narrow(at.file.0), start: narrow(at.span.start), end: narrow(at.span.end) }
    }

    fn location(&self) -> Location {
        Location { file: FileId(self.file as usize), span: self.start as usize..self.end as usize }
    }
}

/// A file id or an offset in 32 bits. Offsets past 4 GiB, in a file no
/// TOML reader holds, point at the last one rather than wrapping.
fn narrow(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl FieldLocations {
    pub fn with_capacity(n: usize) -> Self {
        FieldLocations(Vec::with_capacity(n))
    }

    /// Room for `n` more paths, and no more.
    pub fn reserve_exact(&mut self, n: usize) {
        self.0.reserve_exact(n);
    }

    pub fn get(&self, path: &str) -> Option<Location> {
        let id = field_paths::find(path)?;
        self.0.iter().find(|f| f.path == id).map(FieldPlace::location)
    }

    /// Each field path with its place.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Location)> + '_ {
        self.0.iter().map(|f| (field_paths::name(f.path), f.location()))
    }

    /// Records the place of a `path` not recorded yet.
    pub fn push(&mut self, path: &'static str, at: Location) {
        debug_assert!(self.get(path).is_none(), "{path} recorded twice");
        self.0.push(FieldPlace::new(field_paths::intern(Cow::Borrowed(path)), &at));
    }

    /// Records `path`'s place, replacing an earlier one.
    pub fn insert(&mut self, path: impl Into<Cow<'static, str>>, at: Location) {
        let place = FieldPlace::new(field_paths::intern(path.into()), &at);
        match self.0.iter_mut().find(|f| f.path == place.path) {
            Some(slot) => *slot = place,
            None => self.0.push(place),
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
        field.and_then(|f| site.fields.get(f)).or_else(|| Some(site.at.clone()))
    }

    /// Where an object and its fields are declared.
    pub fn site(&self, key: &ObjectKey) -> Option<&ObjectLocation> {
        let map = if matches!(key, ObjectKey::Binding { .. }) { &self.bindings } else { &self.objects };
        map.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(file: usize, span: std::ops::Range<usize>) -> Location {
        Location { file: FileId(file), span }
    }

    /// Each path reads back the place last recorded for it, whether the
    /// path was written out or made.
    #[test]
    fn a_field_reads_back_its_place() {
        let mut fields = FieldLocations::default();
        fields.push("durable", at(0, 10..14));
        fields.insert(format!("arguments.{}", "x-message-ttl"), at(0, 20..25));
        fields.insert("arguments.x-message-ttl", at(2, 30..35));
        assert_eq!(fields.get("durable"), Some(at(0, 10..14)));
        assert_eq!(fields.get("arguments.x-message-ttl"), Some(at(2, 30..35)), "replaced, not added");
        assert_eq!(fields.get("auto_delete"), None);
        assert_eq!(fields.get("a path no file has ever named"), None);
        let all: Vec<_> = fields.iter().collect();
        assert_eq!(all, [("durable", at(0, 10..14)), ("arguments.x-message-ttl", at(2, 30..35))]);
    }

    /// A place past 4 GiB points at the last offset 32 bits hold.
    #[test]
    fn a_place_past_four_gib_is_clamped_not_wrapped() {
        let far = u32::MAX as usize + 5;
        let mut fields = FieldLocations::default();
        fields.push("durable", at(1, 7..far));
        assert_eq!(fields.get("durable"), Some(at(1, 7..u32::MAX as usize)));
    }
}
