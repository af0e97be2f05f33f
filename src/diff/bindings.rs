//! Bindings: all identity, so created or destroyed, never changed; those a
//! migration or a rollback takes care of are left to it.

use std::collections::BTreeSet;

use super::attributes;
use super::differ::Differ;
use super::sides::Sides;
use super::walk::only_in_each;
use crate::model::{Binding, ObjectKey};

impl Differ<'_> {
    pub(super) fn bindings(&mut self, s: &Sides, migrating: &BTreeSet<Binding>) {
        let (added, removed) = only_in_each(&s.want.bindings, &s.have.bindings);
        for b in added {
            if !migrating.contains(b) {
                let key = ObjectKey::Binding { vhost: s.v.into(), binding: b.clone() };
                self.created(key, attributes::binding(b), "declared in the files", None);
            }
        }
        for b in removed {
            if !migrating.contains(b) {
                let key = ObjectKey::Binding { vhost: s.v.into(), binding: b.clone() };
                self.absent(key, attributes::binding(b), false);
            }
        }
    }
}
