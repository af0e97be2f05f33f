//! Carrying out a plan on the broker: the inventory before and after, and
//! the steps in order.

pub mod event;
mod execute;
mod failure;
pub mod migrate;
mod op;
mod recheck;
mod recorder;
pub mod rollback;

pub use event::{Event, Events};
pub use execute::{CONCURRENCY, Context, Outcome, execute};
pub use failure::Failure;
pub use recorder::Recorder;

use std::collections::BTreeSet;

use crate::diff::{Action, outside};
use crate::journal;
use crate::model::{Inventory, ObjectKey, Topology};
use crate::plan::{Op, Plan};

/// What to record before the first step: every object the files declare is
/// claimed before it is created, so a run cut short still owns what it made.
/// Objects of the old inventory that are no longer live are dropped.
pub fn inventory_before(old: &Inventory, desired: &Topology, live: &Topology) -> Inventory {
    let mut kept = old.clone();
    // What the files' `[removed]` names leaves here, bindings along.
    kept.objects.retain(|k| live.has(k) && !crate::model::is_removed(&desired.removed, k));
    kept.scopes.retain(|k, _| kept.objects.contains(k));
    kept.merged(&Inventory::of(desired))
}

/// The scaffolding a migration puts up, claimed before it exists so that a
/// run cut short still owns it, and what an earlier run left to delete.
pub fn scaffolding(m: &crate::plan::MigrationPlan) -> Vec<ObjectKey> {
    let v = || m.vhost.clone();
    let exchange = |name: &String| ObjectKey::Exchange { vhost: v(), name: name.clone() };
    let mut out: Vec<ObjectKey> =
        m.sources.iter().flat_map(|s| [exchange(&s.interposed), exchange(&s.alternate)]).collect();
    out.extend(m.leftover_exchanges.iter().map(exchange));
    out
}

/// [`inventory_before`], with every planned migration's scaffolding.
pub fn inventory_claim(old: &Inventory, desired: &Topology, live: &Topology, plan: &Plan) -> Inventory {
    let mut inv = inventory_before(old, desired, live);
    for s in &plan.steps {
        match &s.op {
            Op::Migrate(m) => inv.objects.extend(scaffolding(m)),
            Op::Rollback(r) => inv.objects.extend(rollback_scaffolding(r)),
            _ => {}
        }
    }
    inv
}

/// The scaffolding a rollback may put back for a while and then deletes.
fn rollback_scaffolding(r: &crate::plan::RollbackPlan) -> Vec<ObjectKey> {
    r.exchanges.iter().map(|name| ObjectKey::Exchange { vhost: r.vhost.clone(), name: name.clone() }).collect()
}

/// What to record after the steps that were `done`: the claimed objects
/// less those destroyed (a destroyed vhost takes everything in it along),
/// with a digest of each object as the files declare it, except where its
/// change was not carried out in full.
pub fn inventory_after(before: &Inventory, plan: &Plan, done: &[usize], desired: &Topology) -> Inventory {
    let mut after = before.clone();
    let (_, not_done) = execute::changes_done(plan, done);
    let unsettled: BTreeSet<ObjectKey> = not_done.iter().map(|c| plan.changes[*c].key.clone()).collect();
    after.digests = outside::recorded(&before.digests, desired, &before.objects, &unsettled);
    // Gathered, then taken out in one pass: removed one by one, each key
    // moved every key after it (the set is one sorted vector).
    let (mut gone, mut gone_vhosts, mut migrated) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
    for i in done {
        let step = &plan.steps[*i];
        let change = &plan.changes[step.change];
        if let Op::Migrate(m) = &step.op {
            // Finished: the scaffolding, the old queue and its bindings are gone.
            gone.extend(scaffolding(m));
            gone.insert(ObjectKey::Queue { vhost: m.vhost.clone(), name: m.old.name.clone() });
            migrated.push((&m.vhost, &m.old.name));
        }
        if let Op::Rollback(r) = &step.op {
            // The new queue stays claimed: kept when it held messages, it
            // is destroyed by a later apply once empty.
            gone.extend(rollback_scaffolding(r));
        }
        if change.action == Action::Destroy && !matches!(step.op, Op::Bind { .. }) {
            gone.insert(change.key.clone());
            if let ObjectKey::Vhost(v) = &change.key {
                gone_vhosts.insert(v.as_str());
            }
        }
    }
    let to_old_queue = |k: &ObjectKey| match k {
        ObjectKey::Binding { vhost, binding } => {
            binding.destination_kind == crate::model::DestinationKind::Queue
                && migrated.iter().any(|(v, q)| *v == vhost && **q == binding.destination)
        }
        _ => false,
    };
    after
        .objects
        .retain(|k| !gone.contains(k) && !k.vhost().is_some_and(|v| gone_vhosts.contains(v)) && !to_old_queue(k));
    let live = after.objects.clone();
    after.scopes.retain(|k, _| live.contains(k));
    after.digests.retain(|k, _| live.contains(k));
    after
}

/// What `warren destroy` leaves of the project's records once its steps
/// that were `done` (all, with no plan): nothing of the destroyed `vhosts`
/// but what is still to go. A vhost or user another project also holds is
/// not destroyed, and the project lets go of it; one whose removal did not
/// happen stays held, for the next run to finish.
pub fn released(mut inv: Inventory, plan: &Plan, done: &[usize], vhosts: &BTreeSet<String>) -> Inventory {
    let (_, not_done) = execute::changes_done(plan, done);
    let pending: BTreeSet<&ObjectKey> = not_done.iter().map(|c| &plan.changes[*c].key).collect();
    let keeps = |inv: &Inventory, v: &str| {
        inv.objects.iter().any(|k| k.vhost() == Some(v) && !matches!(k, ObjectKey::Vhost(_)))
    };
    let gone: crate::model::KeySet = inv
        .objects
        .iter()
        .filter(|k| !pending.contains(k))
        .filter(|k| match k {
            ObjectKey::Vhost(v) => vhosts.contains(v) && !keeps(&inv, v),
            k if crate::model::kinds::users::name_of(k).is_some() => {
                inv.scopes.get(*k).is_none_or(|s| s.is_subset(vhosts))
            }
            // The project's other objects there are destroyed, or pending.
            _ => false,
        })
        .cloned()
        .collect();
    inv.objects.retain(|k| !gone.contains(k));
    for k in &gone {
        inv.scopes.remove(k);
        inv.digests.remove(k);
    }
    inv
}

/// [`inventory_before`] when the broker already matches the files: every
/// object the files declare gets its digest.
pub fn inventory_matched(old: &Inventory, desired: &Topology, live: &Topology) -> Inventory {
    let mut now = inventory_before(old, desired, live);
    // Only what is there: a vhost `warren destroy` took is declared (empty)
    // but gone, and stays out of the records.
    now.objects.retain(|k| live.has(k));
    now.scopes.retain(|k, _| live.has(k));
    now.digests = outside::recorded(&old.digests, desired, &now.objects, &BTreeSet::new());
    now
}

/// A digest of a migration's compiled steps: a later run resumes from the
/// journal's count only when it compiles the same steps.
pub fn migration_fingerprint(m: &crate::plan::MigrationPlan) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (_, s) in &m.steps {
        h.update(s.to_string().as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The journal's entry for a migration about to run. `done` comes from an
/// earlier run's entry for the same steps, if any.
pub fn migration_record(
    m: &crate::plan::MigrationPlan,
    earlier: Option<&journal::Migration>,
    now: &str,
) -> journal::Migration {
    let fingerprint = migration_fingerprint(m);
    let earlier = earlier.filter(|e| e.fingerprint == fingerprint);
    journal::Migration {
        id: journal::migration_id(&m.vhost, &m.old.name, &m.new.name),
        vhost: m.vhost.clone(),
        old: m.old.name.clone(),
        new: m.new.name.clone(),
        steps: m.steps.iter().map(|(_, s)| s.to_string()).collect(),
        done: earlier.map_or(0, |e| e.done),
        point_of_no_return: m.point_of_no_return(),
        sources: m.sources.clone(),
        added: m.added.clone(),
        dropped: m.dropped.clone(),
        queue: journal::declaration(&m.new),
        started: earlier.map_or_else(|| now.to_string(), |e| e.started.clone()),
        updated: now.to_string(),
        state: crate::journal::MigrationState::Running,
        detail: None,
        fingerprint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Change;
    use crate::plan::Phase;
    use crate::plan::Step;

    #[test]
    fn a_destroyed_vhost_leaves_nothing_of_it_in_the_inventory() {
        let key = |v: &str| ObjectKey::Exchange { vhost: v.into(), name: "x".into() };
        let before = Inventory {
            objects: [ObjectKey::Vhost("gone".into()), key("gone"), ObjectKey::Vhost("kept".into()), key("kept")]
                .into_iter()
                .collect(),
            ..Inventory::default()
        };
        let plan = Plan {
            changes: vec![Change::new(ObjectKey::Vhost("gone".into()), Action::Destroy, "removed from the files")],
            steps: vec![Step { op: Op::DeleteVhost { name: "gone".into() }, change: 0, phase: Phase::DeleteVhost }],
            problems: vec![],
            in_flight: vec![],
            outside: vec![],
        };
        let none = Topology::default();
        let after = inventory_after(&before, &plan, &[0], &none);
        assert_eq!(after.objects, [ObjectKey::Vhost("kept".into()), key("kept")].into_iter().collect());
        assert_eq!(inventory_after(&before, &plan, &[], &none), before, "not done: still claimed");
    }
}
