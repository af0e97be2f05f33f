//! The routing change of a plan: the live topology against the topology
//! once the plan is applied, vhost by vhost, exchange by exchange (see
//! [`crate::routing::change`]). Pure, like the rest of the planner.
//!
//! A queue that replaces another by live migration takes its place: the
//! new queue is compared under the old one's name, so that a migration
//! shows no routing change but that of the bindings it adds or drops.

use std::collections::BTreeSet;

use super::Plan;
use crate::diff::{Action, Change, Declared};
use crate::model::kinds::{Name, policies};
use crate::model::{Binding, DestinationKind, Node, ObjectKey, Topology, Vhost};
use crate::routing::Version;
use crate::routing::change::{ExchangeChange, Side, compare_sides};

/// Each vhost's routing change, in vhost order.
pub fn routing_change(live: &Topology, plan: &Plan, version: Version) -> Vec<(String, ExchangeChange)> {
    let touched: BTreeSet<&str> = plan.changes.iter().filter(|c| routes(c)).filter_map(|c| c.key.vhost()).collect();
    let empty = Vhost::default();
    let mut out = Vec::new();
    for v in touched {
        let before = live.vhosts.get(v).unwrap_or(&empty);
        let changes: Vec<&Change> = plan.changes.iter().filter(|c| routes(c) && c.key.vhost() == Some(v)).collect();
        // The after side is the live vhost with the changes laid over it:
        // its bindings a list of the live ones and the plan's, its other
        // objects copied only when the plan changes some.
        let moved = moved(&changes);
        let bindings = applied_bindings(before, &changes, &moved);
        let copy = applied(before, &changes);
        let after = Side { vhost: copy.as_ref().unwrap_or(before), bindings: Some(&bindings) };
        out.extend(compare_sides(Side::of(before), after, version).into_iter().map(|c| (v.to_string(), c)));
    }
    out
}

/// Whether a change can change where messages go.
fn routes(c: &Change) -> bool {
    let acts =
        matches!(c.action, Action::Create | Action::Update | Action::Destroy | Action::Replace | Action::Migrate);
    let kind = match &c.key {
        ObjectKey::Vhost(_) | ObjectKey::Exchange { .. } | ObjectKey::Queue { .. } | ObjectKey::Binding { .. } => true,
        ObjectKey::Object { name, .. } => is_policy(name),
    };
    acts && kind
}

/// Whether `name` is a policy's: the only kind's objects that route.
fn is_policy(name: &Name) -> bool {
    name.kind == &policies::KIND
}

/// What of vhost `v` routes, but its bindings: its queues by name alone
/// (their arguments, the most of a large vhost, route nothing here), the
/// rest whole (of its objects, its policies).
fn routing_part(v: &Vhost) -> Vhost {
    let queue = |q: &crate::model::Queue| crate::model::Queue {
        name: q.name.clone(),
        kind: q.kind,
        durable: q.durable,
        auto_delete: q.auto_delete,
        arguments: Default::default(),
        replaces: None,
    };
    Vhost {
        name: v.name.clone(),
        settings: Default::default(),
        exchanges: v.exchanges.clone(),
        queues: v.queues.iter().map(|(n, q)| (n.clone(), queue(q))).collect(),
        bindings: Default::default(),
        objects: v.objects.iter().filter(|(n, _)| is_policy(n)).map(|(n, b)| (n.clone(), b.clone())).collect(),
        external: v.external.clone(),
        moved: Default::default(),
        services: Default::default(),
        views: Default::default(),
        unread: v.unread,
    }
}

/// Whether a change touches what routes but the bindings.
fn beyond_bindings(c: &Change) -> bool {
    !matches!(c.key, ObjectKey::Binding { .. }) && c.action != Action::Migrate
}

/// The vhost `before` once `changes` (its own) are applied, as far as
/// routing goes and but its bindings (see [`applied_bindings`]); `None`
/// when they change nothing but bindings: `before` stands as it is.
fn applied(before: &Vhost, changes: &[&Change]) -> Option<Vhost> {
    if !changes.iter().any(|c| beyond_bindings(c)) {
        return None;
    }
    let mut v = routing_part(before);
    for c in changes {
        let gone = c.action == Action::Destroy;
        match (&c.key, &c.declared) {
            (ObjectKey::Vhost(_), _) if gone => v = Vhost::new(&before.name),
            (ObjectKey::Exchange { name, .. }, _) if gone => {
                v.exchanges.remove(name);
            }
            (ObjectKey::Exchange { name, .. }, Some(Declared::Exchange(x))) => {
                v.exchanges.insert(name.clone(), x.clone());
            }
            (ObjectKey::Queue { name, .. }, _) if gone => {
                v.queues.remove(name);
            }
            (ObjectKey::Queue { .. }, Some(Declared::Queue(_))) if c.action == Action::Migrate => {}
            (ObjectKey::Queue { name, .. }, Some(Declared::Queue(q))) => {
                v.queues.insert(name.clone(), q.clone());
            }
            (ObjectKey::Object { name, .. }, _) if gone && is_policy(name) => {
                v.objects.remove(name);
            }
            (ObjectKey::Object { name, .. }, Some(Declared::Object(o))) if is_policy(name) => {
                v.objects.insert(name.clone(), o.body.clone());
            }
            _ => {}
        }
    }
    Some(v)
}

/// The bindings that migrations among `changes` give their new queues, as
/// bindings into the old ones, in order: made before the after side's
/// list, which borrows them.
fn moved(changes: &[&Change]) -> Vec<Binding> {
    let mut out = Vec::new();
    for c in changes {
        if let (ObjectKey::Queue { .. }, Some(Declared::Queue(q)), Action::Migrate) = (&c.key, &c.declared, c.action)
            && let Some(m) = &c.migration
        {
            out.extend(m.added.iter().map(|b| in_place(b, &q.name, &m.replaces)));
        }
    }
    out
}

/// The bindings of vhost `before` once `changes` (its own) are applied, in
/// the order a vhost holds them: the live ones less those removed, and the
/// plan's, found by search rather than by hashing or copying thousands.
/// `moved` is [`moved`] of the same changes.
fn applied_bindings<'a>(before: &'a Vhost, changes: &[&'a Change], moved: &'a [Binding]) -> Vec<&'a Binding> {
    let mut live_gone = false;
    let mut removed: Vec<&Binding> = Vec::new();
    let mut nodes_gone: Vec<Node> = Vec::new();
    let mut added: BTreeSet<&Binding> = BTreeSet::new();
    let mut moved = moved.iter();
    for c in changes {
        let gone = c.action == Action::Destroy;
        match (&c.key, &c.declared) {
            (ObjectKey::Vhost(_), _) if gone => {
                live_gone = true;
                added.clear();
            }
            (ObjectKey::Exchange { name, .. }, _) if gone => {
                let node = Node::Exchange(name.clone());
                added.retain(|b| !b.touches(&node));
                nodes_gone.push(node);
            }
            (ObjectKey::Queue { name, .. }, _) if gone => {
                let node = Node::Queue(name.clone());
                added.retain(|b| !b.touches(&node));
                nodes_gone.push(node);
            }
            (ObjectKey::Queue { .. }, Some(Declared::Queue(_))) if c.action == Action::Migrate => {
                if let Some(m) = &c.migration {
                    for b in &m.dropped {
                        added.remove(b);
                        removed.push(b);
                    }
                    added.extend(moved.by_ref().take(m.added.len()));
                }
            }
            (ObjectKey::Binding { binding, .. }, _) if gone => {
                added.remove(binding);
                removed.push(binding);
            }
            (ObjectKey::Binding { binding, .. }, _) => {
                added.insert(binding);
            }
            _ => {}
        }
    }
    let mut live: Vec<&Binding> = if live_gone { Vec::new() } else { before.bindings.iter().collect() };
    if !nodes_gone.is_empty() {
        live.retain(|b| !nodes_gone.iter().any(|n| b.touches(n)));
    }
    let mut kept = vec![true; live.len()];
    for b in removed {
        if let Ok(i) = live.binary_search(&b) {
            kept[i] = false;
        }
    }
    // Each added binding's place among the live ones (`true`: it is one of
    // them, kept whatever was removed).
    let mut places: Vec<(usize, &Binding)> = Vec::new();
    for b in added {
        match live.binary_search(&b) {
            Ok(i) => kept[i] = true,
            Err(i) => places.push((i, b)),
        }
    }
    let mut out = Vec::with_capacity(live.len() + places.len());
    let mut places = places.into_iter().peekable();
    for (i, b) in live.into_iter().enumerate() {
        while let Some((_, a)) = places.next_if(|(at, _)| *at == i) {
            out.push(a);
        }
        if kept[i] {
            out.push(b);
        }
    }
    out.extend(places.map(|(_, a)| a));
    out
}

/// The refusals of compiled migrations whose end state routes some key to
/// other queues than before (see [`crate::diff::routes_moved`]).
pub(super) fn migrations_checked(steps: &[super::Step], live: &Topology) -> Vec<crate::diff::Problem> {
    let empty = Vhost::default();
    let mut out = Vec::new();
    for s in steps {
        let super::Op::Migrate(m) = &s.op else { continue };
        let before = live.vhosts.get(&m.vhost).unwrap_or(&empty);
        let after = ended(before, m);
        let change = crate::routing::change::compare_kept(before, &after, Version::NEWEST);
        out.extend(crate::diff::routes_moved(&m.vhost, &m.old.name, &m.new.name, &change));
    }
    out
}

/// The vhost once migration `m`'s steps have run, the new queue under the
/// old one's name.
fn ended(before: &Vhost, m: &super::MigrationPlan) -> Vhost {
    use super::MigrationStep as S;
    let mut v = before.clone();
    for (_, step) in &m.steps {
        match step {
            S::DeclareExchange(x) => {
                v.exchanges.insert(x.name.clone(), x.clone());
            }
            S::DeclareQueue(q) => {
                v.queues.insert(q.name.clone(), q.clone());
            }
            S::Bind(b) => {
                v.bindings.insert(b.clone());
            }
            S::Unbind(b) => {
                v.bindings.remove(b);
            }
            S::DeleteExchange(x) => {
                v.exchanges.remove(x);
                v.bindings.retain(|b| !b.touches(&Node::Exchange(x.clone())));
            }
            S::Retire { queue, .. } => {
                v.queues.remove(queue);
                v.bindings.retain(|b| !b.touches(&Node::Queue(queue.clone())));
            }
            S::AwaitDrained { .. } => {}
        }
    }
    v.bindings = v.bindings.iter().map(|b| in_place(b, &m.new.name, &m.old.name)).collect();
    v
}

/// A binding into `new`, as a binding into `old`, whose place it takes.
fn in_place(b: &Binding, new: &str, old: &str) -> Binding {
    if b.destination_kind == DestinationKind::Queue && b.destination == new {
        Binding { destination: old.to_string(), ..b.clone() }
    } else {
        b.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Migration;
    use proptest::prelude::*;

    /// The bindings once `changes` are applied one by one to a copy of
    /// the vhost's: what [`applied_bindings`] must answer without one.
    fn copied(before: &Vhost, changes: &[&Change]) -> Vec<Binding> {
        let mut v = before.bindings.clone();
        for c in changes {
            let gone = c.action == Action::Destroy;
            match (&c.key, &c.declared) {
                (ObjectKey::Vhost(_), _) if gone => v.clear(),
                (ObjectKey::Exchange { name, .. }, _) if gone => {
                    v.retain(|b| !b.touches(&Node::Exchange(name.clone())))
                }
                (ObjectKey::Queue { name, .. }, _) if gone => v.retain(|b| !b.touches(&Node::Queue(name.clone()))),
                (ObjectKey::Queue { .. }, Some(Declared::Queue(q))) if c.action == Action::Migrate => {
                    let m = c.migration.as_ref().unwrap();
                    for b in &m.dropped {
                        v.remove(b);
                    }
                    v.extend(m.added.iter().map(|b| in_place(b, &q.name, &m.replaces)));
                }
                (ObjectKey::Binding { binding, .. }, _) if gone => {
                    v.remove(binding);
                }
                (ObjectKey::Binding { binding, .. }, _) => {
                    v.insert(binding.clone());
                }
                _ => {}
            }
        }
        v.into_iter().collect()
    }

    /// A change of the vhost drawn from two numbers: a binding destroyed
    /// or created (a live one or a new one), an exchange or a queue
    /// destroyed, the vhost destroyed, or a queue migrated.
    fn change(v: &Vhost, kind: usize, i: usize) -> Change {
        let live: Vec<&Binding> = v.bindings.iter().collect();
        let b = live[i % live.len()].clone();
        let fresh = Binding { routing_key: format!("{}.new{}", b.routing_key, i % 3), ..b.clone() };
        let vhost = v.name.clone();
        let binding =
            |binding: Binding, action| Change::new(ObjectKey::Binding { vhost: vhost.clone(), binding }, action, "");
        match kind {
            0 => binding(b, Action::Destroy),
            1 => binding(b, Action::Create),
            2 => binding(fresh, Action::Create),
            3 => binding(fresh, Action::Destroy),
            4 => Change::new(ObjectKey::Exchange { vhost, name: b.source.clone() }, Action::Destroy, ""),
            5 => Change::new(ObjectKey::Queue { vhost, name: format!("bench.q{:05}", i % 40) }, Action::Destroy, ""),
            6 if i.is_multiple_of(7) => Change::new(ObjectKey::Vhost(vhost), Action::Destroy, ""),
            _ => {
                let old = v.queues.keys().nth(i % v.queues.len()).unwrap().clone();
                let mut q = v.queues[&old].clone();
                q.name = format!("{old}.new");
                let into_new =
                    Binding { destination_kind: DestinationKind::Queue, destination: q.name.clone(), ..fresh };
                let mut c = Change::new(ObjectKey::Queue { vhost, name: q.name.clone() }, Action::Migrate, "");
                c.migration = Some(Migration {
                    replaces: old,
                    moved: Vec::new(),
                    dropped: vec![b],
                    added: vec![into_new],
                    changed: Vec::new(),
                    policy_instead: None,
                    leftover_exchanges: Vec::new(),
                });
                c.declared = Some(Declared::Queue(q));
                c
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The live bindings with the changes laid over them are those of a
        /// copy the changes are applied to, in the same order.
        #[test]
        fn the_laid_over_bindings_are_those_of_a_copy(ops in proptest::collection::vec((0usize..8, 0usize..10_000), 0..12)) {
            let topology = crate::testing::large_topology(40, 8, 120);
            let v = topology.vhosts.values().next().unwrap();
            let changes: Vec<Change> = ops.iter().map(|&(k, i)| change(v, k, i)).collect();
            let changes: Vec<&Change> = changes.iter().collect();
            let moved = moved(&changes);
            let laid: Vec<Binding> = applied_bindings(v, &changes, &moved).into_iter().cloned().collect();
            prop_assert_eq!(laid, copied(v, &changes));
        }
    }
}
