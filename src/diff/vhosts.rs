//! Vhosts: the settings the files manage, the vhosts they no longer
//! declare, and the walk of what each declared vhost holds.

use super::attributes;
use super::change::{Action, Change, Declared};
use super::differ::Differ;
use super::in_flight::Held;
use super::migrations::without_scaffolding;
use super::sides::Sides;
use crate::model::{LazyGraph, ObjectKey, Topology, Vhost, VhostSettings};

/// The live settings `have` as the files' `want` manage them: the others
/// left out, and an unset one read as empty.
pub(super) fn managed(have: &VhostSettings, want: &VhostSettings) -> VhostSettings {
    VhostSettings {
        description: want.description.as_ref().map(|_| have.description.clone().unwrap_or_default()),
        default_queue_type: want.default_queue_type.and(have.default_queue_type),
        limits: want.limits.as_ref().map(|_| have.limits.clone().unwrap_or_default()),
        tags: want.tags.as_ref().map(|_| have.tags.clone().unwrap_or_default()),
        protected_from_deletion: want.protected_from_deletion.map(|_| have.protected_from_deletion.unwrap_or(false)),
    }
}

impl Differ<'_> {
    /// Everything in vhost `v`, kind by kind; `held` is what its rollbacks
    /// take care of.
    pub(super) fn vhost(&mut self, v: &str, want: &Vhost, full: &Vhost, held: &Held) {
        let have = without_scaffolding(full);
        let graph = LazyGraph::new(full);
        let s = Sides { v, want, have: &have, full, graph: &graph };
        self.exchanges(&s);
        // The queues' migrations take their bindings out of the bindings' diff.
        let migrating = self.queues(&s, held);
        self.bindings(&s, &migrating);
        self.policies(&s);
        self.permissions(&s);
        // Policies and permissions were diffed at their places, above.
        self.objects(Some(v), &want.objects, &have.objects, |k| {
            k != &crate::model::kinds::policies::KIND && k != &crate::model::kinds::permissions::KIND
        });
    }

    pub(super) fn vhost_settings(&mut self, name: &str, want: &VhostSettings, have: Option<&VhostSettings>) {
        let key = ObjectKey::Vhost(name.into());
        self.deletion_protection_refused(name, want);
        let Some(have) = have else {
            // Destroying makes nothing, not even a vhost that is gone already.
            if !self.options.destroy {
                self.created(
                    key,
                    attributes::vhost(want),
                    "declared in the files",
                    Some(Declared::Vhost(want.clone())),
                );
            }
            return;
        };
        // Only the settings the files manage are compared.
        let mut managed = managed(have, want);
        // A refused change is left out: the update would never converge.
        if self.default_queue_type_refused(name, want, have) {
            managed.default_queue_type = want.default_queue_type;
        }
        if managed != *want {
            self.updated(key, attributes::vhost(&managed), attributes::vhost(want), Declared::Vhost(want.clone()));
        }
    }

    /// The live vhosts the files no longer declare (with `destroy`, every
    /// one): each goes, with everything in it, when this project owns it
    /// and no other holds it.
    pub(super) fn vhosts_absent(&mut self, desired: &Topology, live: &Topology) {
        let destroy = self.options.destroy;
        for name in live.vhosts.keys().filter(|n| destroy || !desired.vhosts.contains_key(*n)) {
            let key = ObjectKey::Vhost(name.clone());
            if self.inventory.owns(&key, &self.declared) && self.ownership.other_holder(&key, self.project).is_none() {
                let reason = if self.options.review {
                    format!("{}: the vhost would go with everything in it", self.gone())
                } else {
                    format!("{}: the vhost goes with everything in it", self.gone())
                };
                let mut c = Change::new(key, Action::Destroy, reason);
                c.requires_allow_destroy = true;
                self.push(c);
            }
        }
    }
}
