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
use crate::model::{Binding, DestinationKind, Node, ObjectKey, Topology, Vhost};
use crate::routing::Version;
use crate::routing::change::{ExchangeChange, compare};

/// Each vhost's routing change, in vhost order.
pub fn routing_change(live: &Topology, plan: &Plan, version: Version) -> Vec<(String, ExchangeChange)> {
    let touched: BTreeSet<&str> = plan.changes.iter().filter(|c| routes(c)).filter_map(|c| c.key.vhost()).collect();
    let empty = Vhost::default();
    let mut out = Vec::new();
    for v in touched {
        let before = live.vhosts.get(v).unwrap_or(&empty);
        let after = applied(before, plan.changes.iter().filter(|c| routes(c) && c.key.vhost() == Some(v)));
        out.extend(compare(before, &after, version).into_iter().map(|c| (v.to_string(), c)));
    }
    out
}

/// Whether a change can change where messages go.
fn routes(c: &Change) -> bool {
    let acts =
        matches!(c.action, Action::Create | Action::Update | Action::Destroy | Action::Replace | Action::Migrate);
    let kind = matches!(
        c.key,
        ObjectKey::Vhost(_)
            | ObjectKey::Exchange { .. }
            | ObjectKey::Queue { .. }
            | ObjectKey::Binding { .. }
            | ObjectKey::Policy { .. }
    );
    acts && kind
}

/// What of vhost `v` routes: its queues by name alone (their arguments,
/// the most of a large vhost, route nothing here), the rest whole.
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
        bindings: v.bindings.clone(),
        policies: v.policies.clone(),
        objects: Default::default(),
        operator_policies: Default::default(),
        permissions: Default::default(),
        external: v.external.clone(),
        moved: Default::default(),
        services: Default::default(),
    }
}

/// The vhost `before` once `changes` (its own) are applied, as far as
/// routing goes.
fn applied<'a>(before: &Vhost, changes: impl Iterator<Item = &'a Change>) -> Vhost {
    let mut v = routing_part(before);
    for c in changes {
        let gone = c.action == Action::Destroy;
        match (&c.key, &c.declared) {
            (ObjectKey::Vhost(_), _) if gone => v = Vhost::new(&before.name),
            (ObjectKey::Exchange { name, .. }, _) if gone => {
                v.exchanges.remove(name);
                v.bindings.retain(|b| !b.touches(&Node::Exchange(name.clone())));
            }
            (ObjectKey::Exchange { name, .. }, Some(Declared::Exchange(x))) => {
                v.exchanges.insert(name.clone(), x.clone());
            }
            (ObjectKey::Queue { name, .. }, _) if gone => {
                v.queues.remove(name);
                v.bindings.retain(|b| !b.touches(&Node::Queue(name.clone())));
            }
            (ObjectKey::Queue { .. }, Some(Declared::Queue(q))) if c.action == Action::Migrate => {
                if let Some(m) = &c.migration {
                    // The new queue in the old one's place, with the
                    // bindings the migration leaves it.
                    let old = &m.replaces;
                    for b in &m.dropped {
                        v.bindings.remove(b);
                    }
                    v.bindings.extend(m.added.iter().map(|b| in_place(b, &q.name, old)));
                }
            }
            (ObjectKey::Queue { name, .. }, Some(Declared::Queue(q))) => {
                v.queues.insert(name.clone(), q.clone());
            }
            (ObjectKey::Binding { binding, .. }, _) if gone => {
                v.bindings.remove(binding);
            }
            (ObjectKey::Binding { binding, .. }, _) => {
                v.bindings.insert(binding.clone());
            }
            (ObjectKey::Policy { name, .. }, _) if gone => {
                v.policies.remove(name);
            }
            (ObjectKey::Policy { name, .. }, Some(Declared::Policy(p))) => {
                v.policies.insert(name.clone(), p.clone());
            }
            _ => {}
        }
    }
    v
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
