//! Policies: objects of their kind, diffed at their place among the old
//! kinds (after bindings, before permissions); and the policies in force
//! once a plan is applied, which the advice to set a queue's change by
//! policy must beat.

use super::differ::Differ;
use super::sides::Sides;
use crate::model::Matcher;
use crate::model::kinds::{Name, policies};

impl Differ<'_> {
    pub(super) fn policies(&mut self, s: &Sides) {
        self.objects(Some(s.v), &s.want.objects, &s.have.objects, |k| k == &policies::KIND);
        self.mirroring_refused(s);
    }

    /// The policies of the vhost once the plan is applied: those the files
    /// declare, and live ones warren leaves alone (neither declared nor owned).
    pub(super) fn policies_in_force<'v>(&self, s: &Sides<'v>) -> Vec<Matcher<'v>> {
        let (want, v) = (s.want, s.v);
        let have = s.have.policies();
        let kept = have.into_iter().filter(|p| {
            !want.objects.contains_key(&Name { kind: &policies::KIND, id: vec![p.name.clone()] })
                && !self.inventory.owns(&policies::key(v, &p.name), &self.declared)
        });
        want.policies().into_iter().chain(kept).map(Matcher::new).collect()
    }
}
