//! `replaces` compiled into a live expand-and-contract migration (pure).
//!
//! For each exchange X bound to the old queue P, an internal exchange X2 of
//! X's type is interposed (X -> X2 -> P), declared with the argument
//! `alternate-exchange` = AE, an exchange that does not exist yet (a missing
//! alternate exchange is skipped, and X2 routes everything to P then). The
//! new queue Q is declared, and AE, bound to Q on P's keys. Unbinding X2
//! from P then sends every new message through AE to Q: routing computes a
//! set of queues, so each message reaches exactly one of P and Q at any
//! moment, and never none. Once P is drained, X2 is bound to Q, AE goes, X
//! is bound to Q directly, X2 goes, and finally P is deleted: the point of
//! no return. Every step can be repeated.
//!
//! The argument, not a policy: an argument takes effect as the exchange is
//! declared and wins over any policy, where each policy change makes the
//! broker match every policy of the vhost against all its exchanges and
//! queues, one change at a time (hundreds of migrations waited minutes for
//! their policies).

use std::fmt;

use crate::model::scaffold::{self, ALTERNATE_ARGUMENT, Source};
use crate::model::{Binding, DestinationKind, Exchange, Queue, QueueType, Table, Value};

/// What a migration does, in order; a rollback is made of the same steps.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    DeclareExchange(Exchange),
    DeclareQueue(Queue),
    Bind(Binding),
    Unbind(Binding),
    /// Wait until the old queue holds nothing (ready and unacknowledged),
    /// with no consumers left on it: they are to move to `successor`.
    AwaitDrained {
        queue: String,
        kind: QueueType,
        successor: String,
    },
    DeleteExchange(String),
    /// Delete `queue` once it is empty and unused, as read right before:
    /// a migration's old queue (the point of no return), or a rollback's
    /// new queue.
    Retire {
        queue: String,
        kind: QueueType,
        if_busy: IfBusy,
    },
}

/// What a retirement does with a queue that still holds messages or has
/// consumers right before its deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfBusy {
    /// The migration pauses with everything in place; a later apply
    /// retires the old queue.
    Pause,
    /// The queue stays for its consumers, and the run says why: nothing
    /// routes to a rolled-back migration's new queue any more.
    Keep,
}

/// The compiled migration of one queue.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationPlan {
    pub vhost: String,
    pub old: Queue,
    pub new: Queue,
    pub sources: Vec<Source>,
    /// The new queue's bindings with no counterpart on the old one.
    pub added: Vec<Binding>,
    /// The old queue's bindings with no counterpart on the new one.
    pub dropped: Vec<Binding>,
    /// Scaffolding exchanges an interrupted run left with no source
    /// routing through them any more: deleted at teardown.
    pub leftover_exchanges: Vec<String>,
    pub steps: Vec<(Stage, Step)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Bootstrap,
    Swap,
    Teardown,
    Retire,
}

impl MigrationPlan {
    /// Index of the step after which there is no way back.
    pub fn point_of_no_return(&self) -> usize {
        self.steps.iter().position(|(_, s)| matches!(s, Step::Retire { .. })).unwrap_or(self.steps.len())
    }

    /// Index of the drain wait: a resumed run that finds every source
    /// already swapped starts here.
    pub fn drain_step(&self) -> usize {
        self.steps.iter().position(|(_, s)| matches!(s, Step::AwaitDrained { .. })).unwrap_or(0)
    }
}

/// Compiles the migration of `old` into `new`. `moved` are the old queue's
/// bindings that move (destination: old queue), grouped here by source;
/// `exchange` looks up a live source exchange; `leftovers` are the
/// exchanges of an interrupted run to delete.
#[allow(clippy::too_many_arguments)] // the parts of one migration, each named
pub fn compile(
    vhost: &str,
    old: &Queue,
    new: &Queue,
    moved: &[Binding],
    added: &[Binding],
    dropped: &[Binding],
    leftovers: &[String],
    exchange: impl Fn(&str) -> Option<Exchange>,
) -> MigrationPlan {
    let sources = sources_of(old, moved, exchange);
    let steps = steps(&sources, old, new, added, dropped, leftovers);
    MigrationPlan {
        vhost: vhost.to_string(),
        old: old.clone(),
        new: new.clone(),
        sources,
        added: added.to_vec(),
        dropped: dropped.to_vec(),
        leftover_exchanges: leftovers.to_vec(),
        steps,
    }
}

/// The old queue's sources: its moved bindings grouped by their live source
/// exchange, with the names of that source's scaffolding.
fn sources_of(old: &Queue, moved: &[Binding], exchange: impl Fn(&str) -> Option<Exchange>) -> Vec<Source> {
    let p = old.name.as_str();
    let mut sources: Vec<Source> = Vec::new();
    for b in moved {
        let Some(x) = exchange(&b.source) else { continue };
        match sources.iter_mut().find(|s| s.exchange == x.name) {
            Some(s) => s.bindings.push(b.clone()),
            None => sources.push(Source {
                interposed: scaffold::interposed(p, &x.name),
                alternate: scaffold::alternate(p, &x.name),
                exchange: x.name,
                kind: x.kind,
                bindings: vec![b.clone()],
            }),
        }
    }
    sources.sort_by(|a, b| a.exchange.cmp(&b.exchange));
    sources
}

/// The steps of the migration, stage by stage: the expand-and-contract
/// recipe, whose order is what keeps every message routed exactly once.
fn steps(
    sources: &[Source],
    old: &Queue,
    new: &Queue,
    added: &[Binding],
    dropped: &[Binding],
    leftovers: &[String],
) -> Vec<(Stage, Step)> {
    let (p, q) = (old.name.as_str(), new.name.as_str());
    let via = |b: &Binding, source: &str, kind: DestinationKind, dest: &str| Binding {
        source: source.to_string(),
        destination_kind: kind,
        destination: dest.to_string(),
        ..b.clone()
    };
    use DestinationKind::{Exchange as E, Queue as Q};
    use Stage::*;
    let mut steps = Vec::new();
    // Bootstrap: X -> X2 -> P beside X -> P, then X -> P goes.
    for s in sources {
        let x = &s.exchange;
        steps.push((Bootstrap, Step::DeclareExchange(interposed(s))));
        for b in &s.bindings {
            steps.push((Bootstrap, Step::Bind(via(b, x, E, &s.interposed))));
            steps.push((Bootstrap, Step::Bind(via(b, &s.interposed, Q, p))));
        }
        for b in &s.bindings {
            steps.push((Bootstrap, Step::Unbind(b.clone())));
        }
    }
    // Swap: Q and its alternate path exist before X2 lets go of P.
    steps.push((Swap, Step::DeclareQueue(new.clone())));
    for b in added {
        steps.push((Swap, Step::Bind(b.clone())));
    }
    for s in sources {
        steps.push((Swap, Step::DeclareExchange(internal(&s.alternate, &s.kind))));
        for b in &s.bindings {
            steps.push((Swap, Step::Bind(via(b, &s.alternate, Q, q))));
        }
    }
    for s in sources {
        for b in &s.bindings {
            steps.push((Swap, Step::Unbind(via(b, &s.interposed, Q, p))));
        }
    }
    for b in dropped {
        steps.push((Swap, Step::Unbind(b.clone())));
    }
    steps.push((Swap, Step::AwaitDrained { queue: p.to_string(), kind: old.kind, successor: q.to_string() }));
    for s in sources {
        for b in &s.bindings {
            steps.push((Swap, Step::Bind(via(b, &s.interposed, Q, q))));
        }
        steps.push((Swap, Step::DeleteExchange(s.alternate.clone())));
    }
    // Teardown: X -> Q directly, then the interposed path goes.
    for s in sources {
        let x = &s.exchange;
        for b in &s.bindings {
            steps.push((Teardown, Step::Bind(via(b, x, Q, q))));
        }
        for b in &s.bindings {
            steps.push((Teardown, Step::Unbind(via(b, x, E, &s.interposed))));
            steps.push((Teardown, Step::Unbind(via(b, &s.interposed, Q, q))));
        }
        steps.push((Teardown, Step::DeleteExchange(s.interposed.clone())));
    }
    // Nothing routes through them.
    for name in leftovers {
        steps.push((Teardown, Step::DeleteExchange(name.clone())));
    }
    steps.push((Retire, Step::Retire { queue: p.to_string(), kind: old.kind, if_busy: IfBusy::Pause }));
    steps
}

/// A source's interposed exchange, naming its alternate exchange.
pub(super) fn interposed(s: &Source) -> Exchange {
    let mut x2 = internal(&s.interposed, &s.kind);
    x2.arguments.insert(ALTERNATE_ARGUMENT.into(), Value::String(s.alternate.clone()));
    x2
}

/// An internal exchange warren owns: the interposed and alternate ones.
pub(super) fn internal(name: &str, kind: &str) -> Exchange {
    Exchange {
        name: name.to_string(),
        kind: kind.to_string(),
        durable: true,
        auto_delete: false,
        internal: true,
        arguments: Table::new(),
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::DeclareExchange(x) => {
                write!(f, "declare internal {} exchange \"{}\"", x.kind, x.name)?;
                match x.arguments.get(ALTERNATE_ARGUMENT) {
                    Some(Value::String(ae)) => write!(f, " with alternate exchange \"{ae}\""),
                    _ => Ok(()),
                }
            }
            Step::DeclareQueue(q) => write!(f, "declare {} queue \"{}\"", q.kind, q.name),
            Step::Bind(b) => write!(f, "bind {b}"),
            Step::Unbind(b) => write!(f, "unbind {b}"),
            // The texts of a migration's steps are in the journal's records
            // and their fingerprint: they stay as they were.
            Step::AwaitDrained { .. } => write!(f, "wait until the old queue is drained (ready 0, unacknowledged 0)"),
            Step::DeleteExchange(x) => write!(f, "delete exchange \"{x}\""),
            Step::Retire { if_busy: IfBusy::Pause, .. } => {
                write!(f, "delete the old queue, once drained and without consumers")
            }
            Step::Retire { queue, if_busy: IfBusy::Keep, .. } => {
                write!(f, "delete queue \"{queue}\" if it is empty and unused")
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::Vhost;

    pub(in crate::plan) fn queue(name: &str, kind: QueueType) -> Queue {
        Queue { name: name.into(), kind, durable: true, auto_delete: false, arguments: Table::new(), replaces: None }
    }

    pub(in crate::plan) fn binding(source: &str, kind: DestinationKind, dest: &str, key: &str) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: kind,
            destination: dest.into(),
            routing_key: key.into(),
            arguments: Table::new(),
        }
    }

    fn plan() -> MigrationPlan {
        let x = Exchange {
            name: "shop".into(),
            kind: "topic".into(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments: Table::new(),
        };
        let moved = [
            binding("shop", DestinationKind::Queue, "orders", "order.*"),
            binding("shop", DestinationKind::Queue, "orders", "order.#.eu"),
        ];
        let new = queue("orders.v2", QueueType::Quorum);
        let live = |name: &str| Some(x.clone()).filter(|_| name == "shop");
        compile("/", &queue("orders", QueueType::Classic), &new, &moved, &[], &[], &[], live)
    }

    fn at(m: &MigrationPlan, f: impl Fn(&Step) -> bool) -> usize {
        m.steps.iter().position(|(_, s)| f(s)).expect("the step is there")
    }

    #[test]
    fn add_before_remove_and_the_alternate_path_before_the_swap() {
        let m = &plan();
        let x2 = "warren.migrate.orders.shop";
        let bind = |src: &str, dest: &str| {
            at(
                m,
                |s| matches!(s, Step::Bind(b) if b.source == src && b.destination == dest && b.routing_key == "order.*"),
            )
        };
        let unbind = |src: &str, dest: &str| {
            at(
                m,
                |s| matches!(s, Step::Unbind(b) if b.source == src && b.destination == dest && b.routing_key == "order.*"),
            )
        };
        assert!(bind("shop", x2) < unbind("shop", "orders"), "X -> X2 before X -> P goes");
        assert!(bind(x2, "orders") < unbind("shop", "orders"), "X2 -> P before X -> P goes");
        let declare_q = at(m, |s| matches!(s, Step::DeclareQueue(q) if q.name == "orders.v2"));
        // The alternate exchange is in force once it is declared and bound
        // to Q: X2 names it from its own declaration on.
        let in_force = bind(&format!("{x2}.ae"), "orders.v2");
        assert!(declare_q < in_force);
        assert!(in_force < unbind(x2, "orders"), "the alternate exchange is in force before X2 lets go of P");
        assert!(unbind(x2, "orders") < m.drain_step() && m.drain_step() < bind(x2, "orders.v2"));
        assert!(bind("shop", "orders.v2") < unbind("shop", x2), "X -> Q before X -> X2 goes");
        assert_eq!(m.point_of_no_return(), m.steps.len() - 1, "deleting the old queue is the last step");
    }

    #[test]
    fn the_step_texts_and_so_the_fingerprint_stay_as_the_journal_records_them() {
        // A journal's record resumes by its count of steps done only while
        // the fingerprint of the step texts is the same.
        let m = plan();
        let text = |i: usize| m.steps[i].1.to_string();
        assert_eq!(text(m.drain_step()), "wait until the old queue is drained (ready 0, unacknowledged 0)");
        assert_eq!(text(m.point_of_no_return()), "delete the old queue, once drained and without consumers");
        assert_eq!(crate::apply::migration_fingerprint(&m), "664f36449ad32b32");
    }

    #[test]
    fn the_interposed_exchange_names_its_alternate_exchange_by_argument() {
        let m = plan();
        let s = &m.sources[0];
        assert_eq!(m.steps[0].1, Step::DeclareExchange(interposed(s)));
        assert_eq!(
            m.steps[0].1.to_string(),
            "declare internal topic exchange \"warren.migrate.orders.shop\" with alternate exchange \"warren.migrate.orders.shop.ae\""
        );
    }

    #[test]
    fn a_run_resumes_at_the_drain_once_every_source_is_swapped() {
        let m = plan();
        let mut live = Vhost::new("/");
        assert_eq!(crate::apply::migrate::resume_point(&m, &live), 0);
        let s = &m.sources[0];
        live.exchanges.insert(s.interposed.clone(), interposed(s));
        assert_eq!(crate::apply::migrate::resume_point(&m, &live), 0, "no alternate exchange yet");
        live.exchanges.insert(s.alternate.clone(), internal(&s.alternate, "topic"));
        assert_eq!(crate::apply::migrate::resume_point(&m, &live), m.drain_step());
        live.exchanges.clear();
        for b in &s.bindings {
            live.bindings.insert(binding("shop", DestinationKind::Queue, "orders.v2", &b.routing_key));
        }
        assert_eq!(crate::apply::migrate::resume_point(&m, &live), m.point_of_no_return());
    }

    #[test]
    fn a_journal_record_moves_the_start_only_for_the_same_steps_of_a_begun_migration() {
        use crate::apply::migrate::start_step;
        let m = plan();
        let mut record = crate::apply::migration_record(&m, None, "now");
        record.done = 3;
        let mut live = Vhost::new("/");
        // Nothing of it is live (the vhost was deleted and made again).
        assert_eq!(start_step(&m, &live, Some(&record)), 0);
        let s = &m.sources[0];
        live.exchanges.insert(s.interposed.clone(), internal(&s.interposed, "topic"));
        assert_eq!(start_step(&m, &live, Some(&record)), 3, "begun: the record knows more than the live state");
        assert_eq!(start_step(&m, &live, None), 0);
        record.fingerprint = "other steps".into();
        assert_eq!(start_step(&m, &live, Some(&record)), 0, "a record of other steps");
        record.fingerprint = crate::apply::migration_fingerprint(&m);
        record.done = m.steps.len() + 5;
        assert_eq!(start_step(&m, &live, Some(&record)), m.steps.len(), "never past the end");
    }
}
