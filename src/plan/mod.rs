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

pub use migration::{IfBusy, MigrationPlan, Stage, Step as MigrationStep, compile as compile_migration};
pub use op::{Op, Phase};
pub use rollback::{RollbackPlan, compile as compile_rollback, rollback};

use crate::diff::{Action, Change, Declared, Diff, InFlight, Problem};
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
            }
        }
        s
    }

    /// True when apply would do nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
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
    Plan { changes, steps, problems: diff.problems, in_flight: diff.in_flight, outside: diff.outside }
}

/// The operations of one change, each with its phase: the object it puts
/// on the broker is the one the change carries ([`Change::declared`]); the
/// live state gives what the operations keep or remove.
fn ops(c: &Change, live: &Topology) -> Vec<(Phase, Op)> {
    let with_phase = |op: Op| (op.phase(), op);
    // By reference: cloning a vhost per change made large plans quadratic.
    static EMPTY: std::sync::LazyLock<Vhost> = std::sync::LazyLock::new(Vhost::default);
    let vhost_of = |v: &str| -> &Vhost { live.vhosts.get(v).unwrap_or(&EMPTY) };
    let declared = c.declared.as_ref();
    match (&c.key, c.action) {
        (_, Action::Unmanaged | Action::OtherProject) => vec![],
        (ObjectKey::Vhost(name), Action::Create | Action::Update) => {
            let want = match declared {
                Some(Declared::Vhost(s)) => s.clone(),
                _ => VhostSettings::default(),
            };
            let have = vhost_of(name).settings.clone();
            let remove_limits = match (&want.limits, &have.limits) {
                (Some(w), Some(h)) => h.keys().filter(|k| !w.contains_key(*k)).cloned().collect(),
                _ => Vec::new(),
            };
            let settings = VhostSettings {
                description: want.description.or(have.description),
                default_queue_type: want.default_queue_type.or(have.default_queue_type),
                limits: want.limits.or(have.limits),
            };
            vec![with_phase(Op::PutVhost { name: name.clone(), settings, remove_limits })]
        }
        (ObjectKey::Vhost(name), _) => vec![with_phase(Op::DeleteVhost { name: name.clone() })],
        (ObjectKey::User(name), Action::Destroy) => {
            vec![with_phase(Op::DeleteUser { name: name.clone() })]
        }
        (ObjectKey::User(_), _) => match declared {
            Some(Declared::User(user)) => vec![with_phase(Op::PutUser { user: user.clone() })],
            _ => vec![],
        },
        (ObjectKey::Exchange { vhost, name }, action) => {
            let mut out = Vec::new();
            if matches!(action, Action::Destroy | Action::Replace) {
                let op = Op::DeleteExchange { vhost: vhost.clone(), name: name.clone() };
                out.push((if action == Action::Replace { Phase::DeleteReplaced } else { op.phase() }, op));
            }
            if let (Action::Create | Action::Replace, Some(Declared::Exchange(x))) = (action, declared) {
                out.push(with_phase(Op::DeclareExchange { vhost: vhost.clone(), exchange: x.clone() }));
            }
            out.extend(c.rebind.iter().map(|b| with_phase(Op::Bind { vhost: vhost.clone(), binding: b.clone() })));
            out
        }
        (ObjectKey::Queue { vhost, .. }, Action::Migrate) => {
            let have = vhost_of(vhost);
            let (Some(m), Some(Declared::Queue(new))) = (&c.migration, declared) else { return vec![] };
            let old = have.queues[&m.replaces].clone();
            let compiled =
                migration::compile(vhost, &old, new, &m.moved, &m.added, &m.dropped, &m.leftover_exchanges, |x| {
                    have.exchanges.get(x).cloned()
                });
            vec![with_phase(Op::Migrate(Box::new(compiled)))]
        }
        (ObjectKey::Queue { vhost, .. }, Action::Rollback) => {
            // The diff refuses a record that gives no way back.
            let Some(r) = &c.rollback else { return vec![] };
            match rollback::compile(vhost_of(vhost), r) {
                Ok(r) => vec![with_phase(Op::Rollback(Box::new(r)))],
                Err(_) => vec![],
            }
        }
        (ObjectKey::Queue { vhost, name }, action) => {
            let mut out = Vec::new();
            if matches!(action, Action::Destroy | Action::Replace) {
                let kind = vhost_of(vhost).queues.get(name).map_or(QueueType::Classic, |q| q.kind);
                let op = Op::DeleteQueue { vhost: vhost.clone(), name: name.clone(), kind };
                out.push((if action == Action::Replace { Phase::DeleteReplaced } else { op.phase() }, op));
            }
            if let (Action::Create | Action::Replace, Some(Declared::Queue(q))) = (action, declared) {
                out.push(with_phase(Op::DeclareQueue { vhost: vhost.clone(), queue: q.clone() }));
            }
            out.extend(c.rebind.iter().map(|b| with_phase(Op::Bind { vhost: vhost.clone(), binding: b.clone() })));
            out
        }
        (ObjectKey::Binding { vhost, binding }, Action::Destroy) => {
            vec![with_phase(Op::Unbind { vhost: vhost.clone(), binding: binding.clone() })]
        }
        (ObjectKey::Binding { vhost, binding }, _) => {
            vec![with_phase(Op::Bind { vhost: vhost.clone(), binding: binding.clone() })]
        }
        (ObjectKey::Policy { vhost, name }, action) | (ObjectKey::OperatorPolicy { vhost, name }, action) => {
            let operator = matches!(c.key, ObjectKey::OperatorPolicy { .. });
            if action == Action::Destroy {
                return vec![with_phase(Op::DeletePolicy { vhost: vhost.clone(), name: name.clone(), operator })];
            }
            match declared {
                Some(Declared::Policy(p)) => {
                    vec![with_phase(Op::PutPolicy { vhost: vhost.clone(), policy: p.clone(), operator })]
                }
                _ => vec![],
            }
        }
        (ObjectKey::Permission { vhost, user }, Action::Destroy) => {
            vec![with_phase(Op::DeletePermission { vhost: vhost.clone(), user: user.clone() })]
        }
        (ObjectKey::Permission { vhost, .. }, _) => match declared {
            Some(Declared::Permission(p)) => {
                vec![with_phase(Op::PutPermission { vhost: vhost.clone(), permission: p.clone() })]
            }
            _ => vec![],
        },
    }
}
