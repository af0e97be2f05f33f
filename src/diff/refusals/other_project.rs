//! Objects the files declare, or `replaces`, that another project owns:
//! this project would change them and take them over. Vhosts and users are
//! shared, and never refused.

use std::collections::BTreeMap;

use super::OTHER_PROJECT;
use crate::diagnostic::Diagnostic;
use crate::diff::Problem;
use crate::diff::differ::Differ;
use crate::model::{Inventory, ObjectKey, Topology, is_shared};

impl<'a> Differ<'a> {
    /// A problem for each declared object that another project owns.
    pub(in crate::diff) fn theirs_declared(&mut self, desired: &Topology, live: &Topology) {
        if self.ownership.projects.keys().all(|p| p == self.project) {
            return; // the common case: one project, nothing to look up
        }
        let replaced = desired
            .vhosts
            .iter()
            .flat_map(|(v, vh)| vh.queues.values().filter_map(move |q| q.replaces.as_ref().map(|old| (q, v, old))));
        let mut found: Vec<(ObjectKey, Option<String>, &str)> = Vec::new();
        for (q, v, old) in replaced {
            let key = ObjectKey::Queue { vhost: v.clone(), name: old.clone() };
            if let Some(p) = self.taken(&key, live) {
                found.push((ObjectKey::Queue { vhost: v.clone(), name: q.name.clone() }, Some("replaces".into()), p));
            }
        }
        // Each other project's objects that the files declare: the sorted
        // sets walked together, rather than each declared object looked
        // up in each project's (a sixth of a twelve-broker plan's
        // instructions beside another project's records). The first
        // holder by name, as `other_holder` picks.
        let declared = Inventory::of(desired).objects;
        let mut theirs: BTreeMap<&ObjectKey, &'a str> = BTreeMap::new();
        for (p, inv) in self.ownership.projects.iter().filter(|(p, _)| p.as_str() != self.project) {
            for key in declared.intersection(&inv.objects).filter(|k| !is_shared(k)) {
                theirs.entry(key).or_insert(p.as_str());
            }
        }
        for (key, p) in theirs.into_iter().filter(|(key, _)| self.contested(key, live)) {
            found.push((key.clone(), None, p));
        }
        for (key, field, owner) in found {
            let what = if field.is_some() { "replaces" } else { "declares" };
            let diagnostic = Diagnostic::error(
                OTHER_PROJECT,
                format!("{key} belongs to project \"{owner}\"; project \"{}\" {what} it", self.project),
            )
            .label(format!("owned by project \"{owner}\""))
            .help(format!(
                "to use it without managing it, list it under [external] instead; to take it over, run `warren adopt --from {owner}` on these files, then remove it from project \"{owner}\"'s files"
            ));
            self.out.problems.push(Problem { key, field, diagnostic });
        }
    }

    /// The other project that owns `key`, when it is live and this project
    /// does not own it too.
    fn taken(&self, key: &ObjectKey, live: &Topology) -> Option<&'a str> {
        self.contested(key, live).then(|| self.ownership.other_holder(key, self.project)).flatten()
    }

    /// Whether `key` is live and this project does not own it: another
    /// project's holding it makes it theirs.
    fn contested(&self, key: &ObjectKey, live: &Topology) -> bool {
        !self.inventory.contains(key) && live.has(key)
    }
}
