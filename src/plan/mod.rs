//! Changes -> an ordered plan of operations. Pure and deterministic: the
//! same inputs give the same plan, byte for byte.
//!
//! Order: every intermediate state is valid and nothing routable becomes
//! briefly unroutable: additions first (vhosts, exchanges and queues, then
//! policies, bindings and permissions), then migrations and rollbacks, then removals in
//! the reverse order. A recreated exchange or queue is the one exception
//! (it is lossy and needs --allow-destroy): deleted right before it is
//! declared again, its bindings put back with the other bindings.

mod migration;
mod op;
mod rollback;
mod routing;

use std::collections::BTreeMap;

pub use migration::{IfBusy, MigrationPlan, Stage, Step as MigrationStep, compile as compile_migration};
pub use op::{Op, Phase};
pub use rollback::{RollbackPlan, compile as compile_rollback, rollback};
pub use routing::routing_change;

use crate::diff::{Action, Change, Declared, Diff, InFlight, Problem};
use crate::model::kinds::{permissions, users};
use crate::model::{Node, ObjectKey, QueueType, Topology, Vhost, VhostSettings};

/// One operation, with the change it carries out.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub op: Op,
    /// Index into [`Plan::changes`].
    pub change: usize,
    /// Order key; see [`Phase`]. Deletes of recreated objects come just
    /// before their declaration.
    pub phase: Phase,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// In the order apply reaches them; unmanaged objects last.
    pub changes: Vec<Change>,
    pub steps: Vec<Step>,
    pub problems: Vec<Problem>,
    /// The migrations in flight in the vhosts the files declare.
    pub in_flight: Vec<InFlight>,
    /// The objects that differ because they changed outside warren.
    pub outside: Vec<crate::diff::Outside>,
}

/// Counts for the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
    pub migrate: usize,
    pub rollback: usize,
    pub unmanaged: usize,
    pub other_project: usize,
    pub forget: usize,
}

impl Plan {
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for c in &self.changes {
            match c.action {
                Action::Create => s.add += 1,
                Action::Update => s.change += 1,
                Action::Destroy => s.destroy += 1,
                Action::Replace => {
                    s.add += 1;
                    s.destroy += 1
                }
                Action::Migrate => s.migrate += 1,
                Action::Rollback => s.rollback += 1,
                Action::Unmanaged => s.unmanaged += 1,
                Action::OtherProject => s.other_project += 1,
                Action::Forget => s.forget += 1,
            }
        }
        s
    }

    /// True when apply would do nothing: no step, and nothing to forget.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && !self.changes.iter().any(|c| c.action == Action::Forget)
    }
}

/// Orders the diff's changes into steps: each change carries the object it
/// puts on the broker ([`Change::declared`]); `live` supplies what the
/// operations keep or remove.
pub fn build(diff: Diff, live: &Topology) -> Plan {
    // A recreated exchange or queue takes its bindings with it when it is
    // deleted: removing them again later would be a step on a missing object.
    let recreated: Vec<(&str, Node)> = diff
        .changes
        .iter()
        .filter(|c| c.action == Action::Replace)
        .filter_map(|c| match &c.key {
            ObjectKey::Exchange { vhost, name } => Some((vhost.as_str(), Node::Exchange(name.clone()))),
            ObjectKey::Queue { vhost, name } => Some((vhost.as_str(), Node::Queue(name.clone()))),
            _ => None,
        })
        .collect();
    let gone_with_recreated = |op: &Op| match op {
        Op::Unbind { vhost, binding } => recreated.iter().any(|(v, n)| v == vhost && binding.touches(n)),
        _ => false,
    };
    let mut steps = Vec::new();
    for (i, c) in diff.changes.iter().enumerate() {
        for (phase, op) in ops(c, live) {
            if !gone_with_recreated(&op) {
                steps.push(Step { op, change: i, phase });
            }
        }
    }
    // Stable sort: within a phase, the diff's deterministic order stands;
    // then by object, so that output never depends on discovery order.
    steps.sort_by(|a, b| {
        (a.phase, &diff.changes[a.change].key, a.change).cmp(&(b.phase, &diff.changes[b.change].key, b.change))
    });
    // Changes in the order their first step runs; unmanaged ones after.
    let mut order: Vec<usize> = Vec::new();
    let mut placed = vec![false; diff.changes.len()];
    for s in &steps {
        if !placed[s.change] {
            placed[s.change] = true;
            order.push(s.change);
        }
    }
    let mut rest: Vec<usize> = (0..diff.changes.len()).filter(|i| !placed[*i]).collect();
    rest.sort_by(|a, b| diff.changes[*a].key.cmp(&diff.changes[*b].key));
    order.extend(rest);
    let position: Vec<usize> = {
        let mut p = vec![0; order.len()];
        for (new, old) in order.iter().enumerate() {
            p[*old] = new;
        }
        p
    };
    for s in &mut steps {
        s.change = position[s.change];
    }
    let mut slots: Vec<Option<Change>> = diff.changes.into_iter().map(Some).collect();
    let changes = order.iter().map(|i| slots[*i].take().expect("each change is placed once")).collect();
    let mut problems = diff.problems;
    problems.extend(routing::migrations_checked(&steps, live));
    Plan { changes, steps, problems, in_flight: diff.in_flight, outside: diff.outside }
}

/// The operations of one change, each with its phase: the object it puts
/// on the broker is the one the change carries ([`Change::declared`]); the
/// live state gives what the operations keep or remove.
fn ops(c: &Change, live: &Topology) -> Vec<(Phase, Op)> {
    // By reference: cloning a vhost per change made large plans quadratic.
    static EMPTY: std::sync::LazyLock<Vhost> = std::sync::LazyLock::new(Vhost::default);
    let vhost_of = |v: &str| -> &Vhost { live.vhosts.get(v).unwrap_or(&EMPTY) };
    let declared = c.declared.as_ref();
    let one = |op: Option<Op>| op.map(phased).into_iter().collect();
    match (&c.key, c.action) {
        // Forgetting is the inventory's business alone (`apply::inventory_before`).
        (_, Action::Unmanaged | Action::OtherProject | Action::Forget) => vec![],
        (ObjectKey::Vhost(name), Action::Create | Action::Update) => {
            vec![phased(put_vhost(name, declared, vhost_of(name)))]
        }
        (ObjectKey::Vhost(name), _) => vec![phased(Op::DeleteVhost { name: name.clone() })],
        // A user's object: its own operations, which remove the limits the
        // files dropped.
        (ObjectKey::Object { vhost: None, name }, Action::Destroy) if name.kind == &users::KIND => {
            vec![phased(Op::DeleteUser { name: name.id[0].clone() })]
        }
        (ObjectKey::Object { vhost: None, name }, _) if name.kind == &users::KIND => one(match declared {
            Some(Declared::User(user)) => {
                let live = live.user(&name.id[0]).and_then(|u| u.limits);
                Some(Op::PutUser {
                    user: user.clone(),
                    remove_limits: removed_limits(user.limits.as_ref(), live.as_ref()),
                })
            }
            _ => None,
        }),
        (ObjectKey::Exchange { vhost, name }, _) => {
            let delete = Op::DeleteExchange { vhost: vhost.clone(), name: name.clone() };
            let declare = match declared {
                Some(Declared::Exchange(x)) => Some(Op::DeclareExchange { vhost: vhost.clone(), exchange: x.clone() }),
                _ => None,
            };
            declare_or_delete(c, vhost, delete, declare)
        }
        (ObjectKey::Queue { vhost, .. }, Action::Migrate) => one(migrate_op(c, vhost, vhost_of(vhost))),
        (ObjectKey::Queue { vhost, .. }, Action::Rollback) => one(rollback_op(c, vhost_of(vhost))),
        (ObjectKey::Queue { vhost, name }, _) => {
            let kind = vhost_of(vhost).queues.get(name).map_or(QueueType::Classic, |q| q.kind);
            let delete = Op::DeleteQueue { vhost: vhost.clone(), name: name.clone(), kind };
            let declare = match declared {
                Some(Declared::Queue(q)) => Some(Op::DeclareQueue { vhost: vhost.clone(), queue: q.clone() }),
                _ => None,
            };
            declare_or_delete(c, vhost, delete, declare)
        }
        (ObjectKey::Binding { vhost, binding }, Action::Destroy) => {
            vec![phased(Op::Unbind { vhost: vhost.clone(), binding: binding.clone() })]
        }
        (ObjectKey::Binding { vhost, binding }, _) => {
            vec![phased(Op::Bind { vhost: vhost.clone(), binding: binding.clone() })]
        }
        // Permissions before the generic arm, which must never take them.
        (key, Action::Destroy) if let Some((vhost, user)) = permissions::name_of(key) => {
            vec![phased(Op::DeletePermission { vhost: vhost.into(), user: user.into() })]
        }
        (key, _) if let Some((vhost, _)) = permissions::name_of(key) => one(match declared {
            Some(Declared::Permission(p)) => Some(Op::PutPermission { vhost: vhost.into(), permission: p.clone() }),
            _ => None,
        }),
        (ObjectKey::Object { vhost, name }, action) => {
            let delete = Op::DeleteObject { vhost: vhost.clone(), name: name.clone() };
            let put = match declared {
                Some(Declared::Object(o)) => {
                    Some(Op::PutObject { vhost: vhost.clone(), name: name.clone(), object: o.clone() })
                }
                _ => None,
            };
            match action {
                Action::Destroy => vec![phased(delete)],
                Action::Replace => [(Phase::DeleteReplaced, delete)].into_iter().chain(put.map(phased)).collect(),
                _ => one(put),
            }
        }
    }
}

/// An operation in the phase of its kind.
fn phased(op: Op) -> (Phase, Op) {
    (op.phase(), op)
}

/// The live limits that the files' `limits` do not list; none when the files
/// do not manage limits.
fn removed_limits(want: Option<&BTreeMap<String, i64>>, have: Option<&BTreeMap<String, i64>>) -> Vec<String> {
    match (want, have) {
        (Some(w), Some(h)) => h.keys().filter(|k| !w.contains_key(*k)).cloned().collect(),
        _ => Vec::new(),
    }
}

/// The vhost a create or an update puts: the files' settings over the live
/// ones (a vhost's PUT replaces its description and tags, on 3.10.8 as on
/// 4.0.5), and the live limits the files no longer set removed.
fn put_vhost(name: &str, declared: Option<&Declared>, have: &Vhost) -> Op {
    let want = match declared {
        Some(Declared::Vhost(s)) => s.clone(),
        _ => VhostSettings::default(),
    };
    let have = have.settings.clone();
    let remove_limits = removed_limits(want.limits.as_ref(), have.limits.as_ref());
    let settings = VhostSettings {
        description: want.description.or(have.description),
        default_queue_type: want.default_queue_type.or(have.default_queue_type),
        limits: want.limits.or(have.limits),
        tags: want.tags.or(have.tags),
        protected_from_deletion: want.protected_from_deletion.or(have.protected_from_deletion),
    };
    Op::PutVhost { name: name.to_string(), settings, remove_limits }
}

/// The operations of an exchange's or a queue's change: `delete` when it
/// goes or is recreated (right before its declaration then), `declare` when
/// it comes or is recreated, and the bindings a recreation puts back.
fn declare_or_delete(c: &Change, vhost: &str, delete: Op, declare: Option<Op>) -> Vec<(Phase, Op)> {
    let mut out = Vec::new();
    if matches!(c.action, Action::Destroy | Action::Replace) {
        out.push((if c.action == Action::Replace { Phase::DeleteReplaced } else { delete.phase() }, delete));
    }
    if let (Action::Create | Action::Replace, Some(op)) = (c.action, declare) {
        out.push(phased(op));
    }
    out.extend(c.rebind.iter().map(|b| phased(Op::Bind { vhost: vhost.to_string(), binding: b.clone() })));
    out
}

/// A queue's live migration, compiled against the live vhost `have`.
fn migrate_op(c: &Change, vhost: &str, have: &Vhost) -> Option<Op> {
    let (Some(m), Some(Declared::Queue(new))) = (&c.migration, c.declared.as_ref()) else { return None };
    let old = have.queues[&m.replaces].clone();
    let compiled = migration::compile(vhost, &old, new, &m.moved, &m.added, &m.dropped, &m.leftover_exchanges, |x| {
        have.exchanges.get(x).cloned()
    });
    Some(Op::Migrate(Box::new(compiled)))
}

/// The way back from a queue's migration, compiled against the live vhost
/// `have`; the diff refuses a record that gives no way back.
fn rollback_op(c: &Change, have: &Vhost) -> Option<Op> {
    let r = rollback::compile(have, c.rollback.as_ref()?).ok()?;
    Some(Op::Rollback(Box::new(r)))
}
