//! Policies: they change in place; and the policies
//! in force once a plan is applied, which the advice to set a queue's
//! change by policy must beat.

use super::attributes;
use super::change::Declared;
use super::differ::Differ;
use super::sides::Sides;
use crate::model::{Matcher, ObjectKey};

impl Differ<'_> {
    pub(super) fn policies(&mut self, s: &Sides) {
        let v = s.v;
        self.mutable(
            &s.want.policies,
            &s.have.policies,
            |n| ObjectKey::Policy { vhost: v.into(), name: n.into() },
            attributes::policy,
            |p| Declared::Policy(p.clone()),
        );
        self.mirroring_refused(s);
    }

    /// The policies of the vhost once the plan is applied: those the files
    /// declare, and live ones warren leaves alone (neither declared nor owned).
    pub(super) fn policies_in_force<'v>(&self, s: &Sides<'v>) -> Vec<Matcher<'v>> {
        let (want, v) = (s.want, s.v);
        let kept = s.have.policies.values().filter(|p| {
            !want.policies.contains_key(&p.name)
                && !self.inventory.owns(&ObjectKey::Policy { vhost: v.into(), name: p.name.clone() }, &self.declared)
        });
        want.policies.values().chain(kept).map(Matcher::new).collect()
    }
}
