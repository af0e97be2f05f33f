//! Migrations in flight (warren's journal) against the files. The files
//! that started one resume it; the files from before it (the old queue
//! declared, the new one not) roll it back, as `warren abort` does; any
//! other change to it is refused (`refusals/in_flight.rs`).

use std::collections::BTreeSet;

use super::change::{Action, Change, InFlight};
use super::differ::Differ;
use super::{Problem, refusals};
use crate::journal::{self, Migration as Record};
use crate::model::{Binding, DestinationKind, ObjectKey, Vhost};

/// What the rollbacks of a vhost take care of, so that the rest of the
/// diff leaves it alone: the new queues they delete (when empty and
/// unused), and the bindings they put back or take away.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub queues: BTreeSet<String>,
    pub bindings: BTreeSet<Binding>,
}

/// What the files mean for one migration in flight.
enum Verdict {
    /// The files still declare it as it started: apply resumes it.
    Resume,
    RollBack(Box<Change>, BTreeSet<Binding>),
    Refuse(Box<Problem>),
}

impl Differ<'_> {
    /// The migrations in flight in vhost `v`, against the files: each is
    /// listed, and rolled back or refused as the files say; what a
    /// rollback handles is returned.
    pub(super) fn in_flight(&mut self, v: &str, want: &Vhost, live: &Vhost) -> Held {
        let mut held = Held::default();
        let finished = |r: &Record| !live.queues.contains_key(&r.old) && live.queues.contains_key(&r.new);
        for r in self.facts.in_flight.values().filter(|r| r.vhost == v && !finished(r)) {
            self.out.in_flight.push(InFlight::of(r));
            match judge(r, want, live) {
                Verdict::Resume => {}
                Verdict::RollBack(c, bindings) => {
                    held.queues.insert(r.new.clone());
                    held.bindings.extend(bindings);
                    self.push(*c);
                }
                Verdict::Refuse(p) => self.out.problems.push(*p),
            }
        }
        held
    }
}

/// What the files mean for migration `r`, given vhost `live`.
fn judge(r: &Record, want: &Vhost, live: &Vhost) -> Verdict {
    let (old, new) = (&r.old, &r.new);
    let moved: Vec<Binding> = r.sources.iter().flat_map(|s| s.bindings.iter().cloned()).collect();
    let (added, dropped) = (&r.added, &r.dropped);
    let to_new = |b: &Binding| Binding { destination: new.clone(), ..b.clone() };
    match (want.queues.get(new), want.queues.get(old)) {
        (Some(q), None) if q.replaces.as_ref() == Some(old) => {
            let same_queue = r.queue == journal::declaration(q);
            let declared: BTreeSet<Binding> = want
                .bindings
                .iter()
                .filter(|b| b.destination_kind == DestinationKind::Queue && b.destination == *new)
                .cloned()
                .collect();
            let started: BTreeSet<Binding> = moved.iter().map(to_new).chain(added.iter().cloned()).collect();
            match (same_queue, declared == started) {
                (true, true) => Verdict::Resume,
                (false, _) => {
                    refuse(r, want, &format!("queue \"{new}\" is declared otherwise than when it started"), false)
                }
                (true, false) => refuse(
                    r,
                    want,
                    &format!("the bindings of queue \"{new}\" differ from those it started with"),
                    false,
                ),
            }
        }
        (None, Some(q)) if q.replaces.is_none() => {
            if !live.queues.contains_key(old) {
                return refuse(
                    r,
                    want,
                    &format!(
                        "it passed its point of no return (queue \"{old}\" is deleted), so there is no going back"
                    ),
                    true,
                );
            }
            let mut c = Change::new(
                ObjectKey::Queue { vhost: r.vhost.clone(), name: new.clone() },
                Action::Rollback,
                format!(
                    "the files declare queue \"{old}\" again and no longer \"{new}\": migration {} goes back to \"{old}\" as `warren abort {}` does; \"{new}\" is deleted if empty and unused, and messages it holds stay in it for its consumers",
                    r.id, r.id
                ),
            );
            c.rollback = Some(r.clone());
            let mut bindings: BTreeSet<Binding> = moved
                .iter()
                .flat_map(|b| [b.clone(), to_new(b)])
                .chain(added.iter().cloned())
                .chain(dropped.iter().cloned())
                .collect();
            // Whatever else binds the new queue goes with it, or stays with it.
            bindings.extend(
                live.bindings
                    .iter()
                    .filter(|b| b.destination_kind == DestinationKind::Queue && b.destination == *new)
                    .cloned(),
            );
            Verdict::RollBack(Box::new(c), bindings)
        }
        (Some(_), Some(_)) => refuse(r, want, &format!("the files declare both \"{old}\" and \"{new}\""), false),
        (Some(_), None) => refuse(r, want, &format!("queue \"{new}\" no longer replaces \"{old}\""), false),
        (None, Some(_)) => refuse(r, want, &format!("queue \"{old}\" now replaces another queue"), false),
        (None, None) => refuse(r, want, &format!("the files declare neither \"{old}\" nor \"{new}\""), false),
    }
}

/// The refusal of `r`, whose change the files make as `what` says.
fn refuse(r: &Record, want: &Vhost, what: &str, past_no_return: bool) -> Verdict {
    Verdict::Refuse(Box::new(refusals::in_flight(r, want, what, past_no_return)))
}

#[cfg(test)]
mod tests {
    use super::super::{BrokerFacts, Options, diff};
    use super::*;
    use crate::model::scaffold::Source;
    use crate::model::{Exchange, Inventory, Ownership, Queue, QueueType, Table, Topology, scaffold};

    fn queue(name: &str, replaces: Option<&str>) -> Queue {
        Queue {
            name: name.into(),
            kind: QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments: Table::new(),
            replaces: replaces.map(Into::into),
        }
    }

    fn exchange(name: &str, internal: bool) -> Exchange {
        Exchange {
            name: name.into(),
            kind: "direct".into(),
            durable: true,
            auto_delete: false,
            internal,
            arguments: Table::new(),
        }
    }

    fn bind(source: &str, kind: DestinationKind, dest: &str) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: kind,
            destination: dest.into(),
            routing_key: "k".into(),
            arguments: Table::new(),
        }
    }

    /// Files from before the migration of "old" into "new" (`v1`), or
    /// those that started it (`v2`).
    fn files(v2: bool) -> Vhost {
        let mut v = Vhost::new("v");
        v.exchanges.insert("shop".into(), exchange("shop", false));
        let q = if v2 { queue("new", Some("old")) } else { queue("old", None) };
        v.bindings.insert(bind("shop", DestinationKind::Queue, &q.name));
        v.queues.insert(q.name.clone(), q);
        v
    }

    /// Paused at the drain: the new queue takes every message through the
    /// interposed exchange's alternate exchange.
    fn paused() -> (Vhost, Record) {
        let (x2, ae) = (scaffold::interposed("old", "shop"), scaffold::alternate("old", "shop"));
        let mut v = Vhost::new("v");
        for (name, internal) in [("shop", false), (x2.as_str(), true), (ae.as_str(), true)] {
            v.exchanges.insert(name.into(), exchange(name, internal));
        }
        let named = crate::model::Value::String(ae.clone());
        v.exchanges.get_mut(&x2).expect("just put").arguments.insert("alternate-exchange".into(), named);
        v.queues.insert("old".into(), queue("old", None));
        v.queues.insert("new".into(), queue("new", None));
        v.bindings.insert(bind("shop", DestinationKind::Exchange, &x2));
        v.bindings.insert(bind(&ae, DestinationKind::Queue, "new"));
        let record = Record {
            id: "m1".into(),
            vhost: "v".into(),
            old: "old".into(),
            new: "new".into(),
            steps: vec!["a step".into(); 20],
            done: 12,
            point_of_no_return: 19,
            sources: vec![Source {
                exchange: "shop".into(),
                kind: "direct".into(),
                interposed: x2,
                alternate: ae,
                bindings: vec![bind("shop", DestinationKind::Queue, "old")],
            }],
            queue: journal::declaration(&queue("new", None)),
            state: crate::journal::MigrationState::Paused,
            ..Record::default()
        };
        (v, record)
    }

    fn plan_of(want: Vhost) -> crate::plan::Plan {
        let (live, record) = paused();
        let topology =
            |v: Vhost| Topology { vhosts: [("v".to_string(), v)].into_iter().collect(), ..Default::default() };
        let mut inventory = Inventory::of(&topology(live.clone()));
        inventory.objects.insert(ObjectKey::Queue { vhost: "v".into(), name: "new".into() });
        let facts = BrokerFacts { in_flight: [("m1".to_string(), record)].into_iter().collect(), ..Default::default() };
        let (want, live) = (topology(want), topology(live));
        let d = diff(&want, &live, &Ownership::single("default", inventory), "default", &Options::default(), &facts);
        crate::plan::build(d, &live)
    }

    #[test]
    fn the_files_from_before_a_migration_in_flight_roll_it_back_and_nothing_else() {
        let plan = plan_of(files(false));
        assert!(plan.problems.is_empty(), "{:?}", plan.problems);
        let acting: Vec<(Action, String)> = plan
            .changes
            .iter()
            .filter(|c| c.action != Action::Unmanaged)
            .map(|c| (c.action, c.key.to_string()))
            .collect();
        assert_eq!(
            acting,
            [(Action::Rollback, "queue \"new\" in vhost \"v\"".to_string())],
            "no other create or destroy"
        );
        assert_eq!(plan.steps.len(), 1);
        let crate::plan::Op::Rollback(r) = &plan.steps[0].op else { panic!("{:?}", plan.steps[0].op) };
        assert_eq!((r.id.as_str(), r.old.as_str()), ("m1", "old"));
        assert!(
            matches!(r.steps.last(), Some(crate::plan::MigrationStep::Retire { queue, if_busy: crate::plan::IfBusy::Keep, .. }) if queue == "new"),
            "the rollback's last step deletes the new queue, if empty and unused: {:?}",
            r.steps
        );
        let direct = bind("shop", DestinationKind::Queue, "old");
        assert!(r.steps.contains(&crate::plan::MigrationStep::Bind(direct)), "{:?}", r.steps);
        assert_eq!(plan.summary().rollback, 1);
        assert_eq!(plan.in_flight.len(), 1);
        assert_eq!((plan.in_flight[0].done, plan.in_flight[0].total), (12, 20));
    }

    #[test]
    fn the_files_that_started_a_migration_in_flight_resume_it() {
        let plan = plan_of(files(true));
        assert!(!plan.problems.iter().any(|p| p.diagnostic.is_error()), "{:?}", plan.problems);
        assert!(plan.changes.iter().any(|c| c.action == Action::Migrate));
        assert!(!plan.changes.iter().any(|c| c.action == Action::Rollback));
    }

    #[test]
    fn files_that_change_a_migration_in_flight_otherwise_are_refused() {
        let mut limited = files(true);
        let q = limited.queues.get_mut("new").unwrap();
        q.arguments.insert("x-max-length".into(), crate::model::Value::Int(10));
        let mut rebound = files(true);
        rebound.bindings.insert(Binding { routing_key: "other".into(), ..bind("shop", DestinationKind::Queue, "new") });
        let mut neither = files(false);
        neither.queues.clear();
        neither.bindings.clear();
        for (want, at) in [(limited, "new"), (rebound, "new"), (neither, "new")] {
            let plan = plan_of(want);
            let p = plan.problems.iter().find(|p| p.diagnostic.code == refusals::IN_FLIGHT).expect("refused");
            assert_eq!(p.key, ObjectKey::Queue { vhost: "v".into(), name: at.into() });
            let help = p.diagnostic.help.as_deref().unwrap_or_default();
            assert!(help.contains("warren abort m1") && help.contains("replaces = \"old\""), "{help}");
            assert!(!plan.changes.iter().any(|c| c.action == Action::Rollback));
        }
    }
}
