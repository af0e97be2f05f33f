//! Queues that replace others (`replaces`): a change to what the broker
//! never changes in place, carried out by live migration, which
//! plan/migration.rs compiles into steps. Here: how the new queue takes
//! over the live one's bindings, what an interrupted run left, the policy
//! that could do it instead, and what refuses or warns about it.

mod scaffolding;
mod warnings;

pub(super) use scaffolding::without_scaffolding;

use super::attributes;
use super::change::{Action, Change, Declared, Migration};
use super::differ::Differ;
use super::immutable;
use super::policy_advice;
use super::refusals;
use super::sides::Sides;
use crate::model::{Binding, DestinationKind, Inventory, Matcher, Node, ObjectKey, Queue, scaffold};

impl Differ<'_> {
    /// Queue `new` takes over live queue `old` by live migration; `in_force`
    /// are the policies once the plan is applied. Returns the bindings the
    /// migration takes care of, which the bindings' diff leaves alone.
    pub(in crate::diff) fn migrate(
        &mut self,
        s: &Sides,
        new: &Queue,
        old: &Queue,
        in_force: &[Matcher],
    ) -> Vec<Binding> {
        let mut m = migration(s, new, old, self.inventory);
        m.policy_instead = policy_advice::policy_alternative(old, new, in_force).map(|a| a.commented());
        self.out.problems.extend(refusals::preflight(s, new, old, &m, self.inventory));
        self.out.problems.extend(warnings::warnings(s, new, old, &m));
        let handled = m
            .moved
            .iter()
            .chain(&m.dropped)
            .chain(&m.added)
            .cloned()
            .chain(m.moved.iter().map(|b| retarget(b, &new.name)))
            .collect();
        let key = ObjectKey::Queue { vhost: s.v.into(), name: new.name.clone() };
        let mut c = Change::new(key, Action::Migrate, format!("replaces queue \"{}\" by live migration", old.name));
        c.before = Some(attributes::queue(old));
        c.after = Some(attributes::queue(new));
        c.migration = Some(m);
        c.declared = Some(Declared::Queue(new.clone()));
        self.push(c);
        handled
    }
}

/// The same binding, delivering to `queue` instead.
fn retarget(b: &Binding, queue: &str) -> Binding {
    Binding { destination: queue.to_string(), ..b.clone() }
}

/// How `new` takes over `old`: which of the old queue's bindings move,
/// which go away, which are new, and what an interrupted run left behind.
fn migration(s: &Sides, new: &Queue, old: &Queue, inventory: &Inventory) -> Migration {
    let old_bindings = old_bindings(s, old);
    let new_bindings: Vec<&Binding> = s
        .want
        .bindings
        .iter()
        .filter(|b| b.destination_kind == DestinationKind::Queue && b.destination == new.name)
        .collect();
    let (mut moved, mut dropped) = (Vec::new(), Vec::new());
    for b in old_bindings {
        if new_bindings.contains(&&retarget(&b, &new.name)) {
            moved.push(b);
        } else {
            dropped.push(b);
        }
    }
    let added =
        new_bindings.into_iter().filter(|b| !moved.iter().any(|m| retarget(m, &new.name) == **b)).cloned().collect();
    let changed = immutable::queue_fields(old, new);
    let leftover_exchanges = scaffolding::leftovers(s, &old.name, &moved, inventory);
    Migration { replaces: old.name.clone(), moved, dropped, added, changed, policy_instead: None, leftover_exchanges }
}

/// The old queue's live bindings, sorted: direct ones, and those an earlier
/// run moved behind an interposed exchange (X -> X2 -> P, or X -> X2 once P
/// let go).
fn old_bindings(s: &Sides, old: &Queue) -> Vec<Binding> {
    let mut out: Vec<Binding> = s
        .graph
        .get()
        .inbound(&Node::Queue(old.name.clone()))
        .into_iter()
        .filter(|b| !scaffold::is_scaffolding(&b.source))
        .cloned()
        .collect();
    for b in &s.full.bindings {
        if b.destination_kind == DestinationKind::Exchange
            && b.destination == scaffold::interposed(&old.name, &b.source)
        {
            let direct =
                Binding { destination_kind: DestinationKind::Queue, destination: old.name.clone(), ..b.clone() };
            if !out.contains(&direct) {
                out.push(direct);
            }
        }
    }
    out.sort();
    out
}
