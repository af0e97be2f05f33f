//! `warren abort`: the steps that take an in-flight migration back to the
//! topology it started from, computed from the live state alone, so that
//! an abort cut short is finished by running abort again.
//!
//! It is the migration's own method run backwards: every source's traffic
//! goes to exactly one of the two queues at any moment. Where traffic
//! already reaches the new queue Q, the interposed exchange X2 is put back
//! (or kept), an alternate exchange bound to the old queue P (the one X2's
//! argument names) catches the gap while X2 lets go of Q, and then X2 binds
//! to P; once X2 routes to P alone, the direct bindings X -> P return before
//! the scaffolding goes.
//! Messages already in Q stay there for Q's consumers: nothing moves them
//! back, and Q is deleted only when empty and unused: the last step, which
//! keeps it otherwise and says why.

use super::migration::{self, IfBusy, Step, internal};
use crate::model::scaffold::Source;
use crate::model::{Binding, DestinationKind, Vhost};

/// The rollback of one migration in flight, as `warren abort` and an apply
/// of the files from before it carry it out.
#[derive(Debug, Clone, PartialEq)]
pub struct RollbackPlan {
    /// The migration's id in the journal.
    pub id: String,
    pub vhost: String,
    pub old: String,
    pub new: String,
    /// The last deletes the new queue if it is empty and unused (when it
    /// is still there).
    pub steps: Vec<Step>,
    /// The scaffolding's exchanges, gone once it is done.
    pub exchanges: Vec<String>,
}

/// The rollback of the journal's record `m`, from the live vhost alone;
/// the reason there is none when the old queue is gone.
pub fn compile(live: &Vhost, m: &crate::journal::Migration) -> Result<RollbackPlan, String> {
    let steps = rollback(live, &m.old, &m.new, &m.sources, &m.added, &m.dropped)?;
    Ok(RollbackPlan {
        id: m.id.clone(),
        vhost: m.vhost.clone(),
        old: m.old.clone(),
        new: m.new.clone(),
        steps,
        exchanges: m.sources.iter().flat_map(|s| [s.interposed.clone(), s.alternate.clone()]).collect(),
    })
}

impl RollbackPlan {
    /// The steps that go back to the old queue: all but the new queue's
    /// retirement, which a plan shows after them in words of its own.
    pub fn steps_back(&self) -> &[Step] {
        match self.steps.split_last() {
            Some((Step::Retire { .. }, before)) => before,
            _ => &self.steps,
        }
    }
}

/// The steps back to the start, or why there is no way back: the last
/// retires the new queue (kept if busy) when it is still there.
pub fn rollback(
    live: &Vhost,
    old: &str,
    new: &str,
    sources: &[Source],
    added: &[Binding],
    dropped: &[Binding],
) -> Result<Vec<Step>, String> {
    if !live.queues.contains_key(old) {
        return Err(format!(
            "queue \"{old}\" no longer exists: the migration passed its point of no return (the old queue is deleted), so there is nothing to go back to; run apply to finish it"
        ));
    }
    use DestinationKind::{Exchange as E, Queue as Q};
    let has = |b: &Binding| live.bindings.contains(b);
    let via = |b: &Binding, source: &str, kind: DestinationKind, dest: &str| Binding {
        source: source.to_string(),
        destination_kind: kind,
        destination: dest.to_string(),
        ..b.clone()
    };
    let mut steps = Vec::new();
    for s in sources {
        let (x, x2, bs) = (&s.exchange, &s.interposed, &s.bindings);
        let interposed = live.exchanges.contains_key(x2);
        let reaches_new = bs.iter().any(|b| has(&via(b, x, Q, new)) || (interposed && has(&via(b, x2, Q, new))));
        if !interposed && !reaches_new {
            // Bootstrap never started here, or an earlier abort finished it.
            steps.extend(bs.iter().map(|b| Step::Bind(b.clone())));
            continue;
        }
        if reaches_new {
            // X -> X2 -> Q alone, whatever part of the swap or teardown ran.
            steps.push(Step::DeclareExchange(migration::interposed(s)));
            steps.extend(bs.iter().map(|b| Step::Bind(via(b, x2, Q, new))));
            steps.extend(bs.iter().map(|b| Step::Bind(via(b, x, E, x2))));
            steps.extend(bs.iter().map(|b| Step::Unbind(via(b, x, Q, new))));
            steps.push(Step::DeleteExchange(s.alternate.clone()));
            // The swap, towards P: the alternate exchange catches the gap.
            steps.push(Step::DeclareExchange(internal(&s.alternate, &s.kind)));
            steps.extend(bs.iter().map(|b| Step::Bind(via(b, &s.alternate, Q, old))));
            steps.extend(bs.iter().map(|b| Step::Unbind(via(b, x2, Q, new))));
        }
        // X2 -> P on every key: from here X2's route set is never empty,
        // so the alternate exchange (if any) catches nothing more.
        steps.extend(bs.iter().map(|b| Step::Bind(via(b, x2, Q, old))));
        steps.push(Step::DeleteExchange(s.alternate.clone()));
        // Direct again, then the interposed path goes.
        steps.extend(bs.iter().map(|b| Step::Bind(b.clone())));
        steps.extend(bs.iter().map(|b| Step::Unbind(via(b, x, E, x2))));
        steps.extend(bs.iter().map(|b| Step::Unbind(via(b, x2, Q, old))));
        steps.push(Step::DeleteExchange(x2.clone()));
    }
    steps.extend(dropped.iter().map(|b| Step::Bind(b.clone())));
    steps.extend(added.iter().map(|b| Step::Unbind(b.clone())));
    if let Some(q) = live.queues.get(new) {
        steps.push(Step::Retire { queue: q.name.clone(), kind: q.kind, if_busy: IfBusy::Keep });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::super::migration::tests::{binding, queue};
    use super::*;
    use crate::model::QueueType;

    fn source() -> Source {
        Source {
            exchange: "x".into(),
            kind: "direct".into(),
            interposed: "x2".into(),
            alternate: "ae".into(),
            bindings: vec![binding("x", DestinationKind::Queue, "p", "k")],
        }
    }

    fn vhost(bindings: &[Binding], exchanges: &[&str], queues: &[&str]) -> Vhost {
        let mut v = Vhost::new("v");
        v.bindings = bindings.iter().cloned().collect();
        for x in exchanges {
            let exchange = if *x == "x2" { migration::interposed(&source()) } else { internal(x, "direct") };
            v.exchanges.insert(x.to_string(), exchange);
        }
        for q in queues {
            v.queues.insert(q.to_string(), queue(q, QueueType::Classic));
        }
        v
    }

    /// Which queue gets a message with key "k" after each step, starting
    /// from `live`: the routes must never reach both, nor neither.
    fn replay(live: &Vhost, steps: &[Step]) -> Vec<Vec<String>> {
        use DestinationKind::{Exchange as E, Queue as Q};
        let mut bindings = live.bindings.clone();
        let mut exchanges: std::collections::BTreeSet<String> = live.exchanges.keys().cloned().collect();
        let argument = |x: &crate::model::Exchange| {
            x.arguments.get("alternate-exchange").and_then(|a| a.as_str()).map(str::to_string)
        };
        let mut argument_ae: Option<String> = live.exchanges.get("x2").and_then(argument);
        let mut seen = Vec::new();
        for step in steps {
            match step {
                Step::Bind(b) => {
                    bindings.insert(b.clone());
                }
                Step::Unbind(b) => {
                    bindings.remove(b);
                }
                Step::DeclareExchange(x) => {
                    // A redeclaration keeps the arguments it was made with.
                    if x.name == "x2" && !exchanges.contains("x2") {
                        argument_ae = argument(x);
                    }
                    exchanges.insert(x.name.clone());
                }
                Step::DeleteExchange(x) => {
                    if x == "x2" {
                        argument_ae = None;
                    }
                    exchanges.remove(x);
                    bindings.retain(|b| b.source != *x && !(b.destination_kind == E && b.destination == *x));
                }
                _ => {}
            }
            // Route "k" from x, following exchange-to-exchange bindings and
            // x2's alternate exchange when its own route set is empty.
            fn route(
                from: &str,
                bindings: &std::collections::BTreeSet<Binding>,
                exchanges: &std::collections::BTreeSet<String>,
                ae: &Option<String>,
                out: &mut std::collections::BTreeSet<String>,
            ) {
                let mut own = std::collections::BTreeSet::new();
                for b in bindings.iter().filter(|b| b.source == from && b.routing_key == "k") {
                    match b.destination_kind {
                        Q => {
                            own.insert(b.destination.clone());
                        }
                        E if exchanges.contains(&b.destination) => {
                            route(&b.destination, bindings, exchanges, ae, &mut own)
                        }
                        E => {}
                    }
                }
                if own.is_empty()
                    && from == "x2"
                    && let Some(ae) = ae
                    && exchanges.contains(ae)
                {
                    route(ae, bindings, exchanges, &None, &mut own);
                }
                out.extend(own);
            }
            let mut reached = std::collections::BTreeSet::new();
            route("x", &bindings, &exchanges, &argument_ae, &mut reached);
            seen.push(reached.into_iter().collect());
        }
        seen
    }

    fn assert_exactly_one_queue(live: &Vhost) -> Vec<Vec<String>> {
        let steps = rollback(live, "p", "q", &[source()], &[], &[]).expect("a way back");
        let routes = replay(live, &steps);
        for (i, r) in routes.iter().enumerate() {
            assert_eq!(r.len(), 1, "after step {} ({}), \"k\" reaches {r:?}", i + 1, steps[i]);
        }
        assert_eq!(routes.last().unwrap(), &vec!["p".to_string()], "it ends at the old queue");
        routes
    }

    #[test]
    fn every_stage_goes_back_to_the_old_queue_with_one_copy_per_message() {
        use DestinationKind::{Exchange as E, Queue as Q};
        let direct = binding("x", Q, "p", "k");
        let x_x2 = binding("x", E, "x2", "k");
        let x2_p = binding("x2", Q, "p", "k");
        let x2_q = binding("x2", Q, "q", "k");
        let ae_q = binding("ae", Q, "q", "k");
        let x_q = binding("x", Q, "q", "k");
        // Mid-bootstrap: both paths to P.
        assert_exactly_one_queue(&vhost(&[direct.clone(), x_x2.clone(), x2_p.clone()], &["x", "x2"], &["p"]));
        // Swapped, draining: X2 routes nowhere, its alternate exchange to Q.
        let draining = vhost(&[x_x2.clone(), ae_q.clone()], &["x", "x2", "ae"], &["p", "q"]);
        let routes = assert_exactly_one_queue(&draining);
        assert_eq!(routes[0], vec!["p".to_string()], "the first step sends traffic back to P");
        // Drained: X2 -> Q, the alternate path gone.
        assert_exactly_one_queue(&vhost(&[x_x2.clone(), x2_q.clone()], &["x", "x2"], &["p", "q"]));
        // Mid-teardown: X -> Q directly beside X -> X2 -> Q.
        assert_exactly_one_queue(&vhost(&[x_q.clone(), x_x2, x2_q], &["x", "x2"], &["p", "q"]));
        // Torn down: X -> Q only, P still there.
        assert_exactly_one_queue(&vhost(&[x_q], &["x"], &["p", "q"]));
    }

    #[test]
    fn the_last_step_retires_the_new_queue_while_it_is_there_keeping_it_if_busy() {
        let direct = [binding("x", DestinationKind::Queue, "q", "k")];
        let steps = rollback(&vhost(&direct, &["x"], &["p", "q"]), "p", "q", &[source()], &[], &[]).unwrap();
        let retire = Step::Retire { queue: "q".into(), kind: QueueType::Classic, if_busy: IfBusy::Keep };
        assert_eq!(steps.last(), Some(&retire));
        assert_eq!(retire.to_string(), "delete queue \"q\" if it is empty and unused");
        let record = crate::journal::Migration {
            id: "m".into(),
            old: "p".into(),
            new: "q".into(),
            sources: vec![source()],
            ..Default::default()
        };
        let r = compile(&vhost(&direct, &["x"], &["p", "q"]), &record).unwrap();
        assert_eq!(r.steps_back(), &r.steps[..r.steps.len() - 1], "a plan lists the retirement apart");
        let gone = compile(&vhost(&direct, &["x"], &["p"]), &record).unwrap();
        assert!(!gone.steps.iter().any(|s| matches!(s, Step::Retire { .. })), "no new queue, nothing to retire");
        assert_eq!(gone.steps_back(), &gone.steps[..]);
    }

    #[test]
    fn no_way_back_once_the_old_queue_is_gone() {
        let e = rollback(&vhost(&[], &["x"], &["q"]), "p", "q", &[source()], &[], &[]).unwrap_err();
        assert!(e.contains("point of no return"), "{e}");
    }

    #[test]
    fn an_abort_run_again_after_it_finished_changes_nothing_but_idempotent_binds() {
        let start = vhost(&[binding("x", DestinationKind::Queue, "p", "k")], &["x"], &["p"]);
        let steps = rollback(&start, "p", "q", &[source()], &[], &[]).unwrap();
        assert_eq!(steps, vec![Step::Bind(binding("x", DestinationKind::Queue, "p", "k"))]);
    }
}
