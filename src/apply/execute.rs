//! Runs a plan's steps against the broker: phase by phase, the steps of a
//! phase concurrently (bounded), stopping at the first refusal.
//!
//! The bound is on requests in flight: a migration, which mostly waits for
//! its old queue to drain, takes a permit for each request step only (see
//! `migrate::run`), so every migration of a plan waits at once.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::event::{Event, Events};
use super::failure::Failure;
use super::migrate::{self, Drain};
use super::recheck;
use super::recorder::Recorder;
use super::rollback;
use crate::broker::{Broker, BrokerError};
use crate::journal::{StepOutcome, migration_id};
use crate::model::QueueType;
use crate::model::Topology;
use crate::plan::{MigrationPlan, Op, Plan, Step};

/// How many requests are in flight at once within a phase.
pub const CONCURRENCY: usize = 32;

/// What happened to each step.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Indices of steps that were carried out.
    pub done: Vec<usize>,
    /// The first step that failed, and why.
    pub failed: Option<(usize, Failure)>,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.failed.is_none()
    }

    /// The indices of `plan`'s changes with steps whose every step was
    /// carried out, and of those with a step that was not.
    pub fn changes(&self, plan: &Plan) -> (Vec<usize>, Vec<usize>) {
        changes_done(plan, &self.done)
    }
}

/// [`Outcome::changes`] for the steps `done`.
pub(super) fn changes_done(plan: &Plan, done: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut carried = vec![0usize; plan.changes.len()];
    let mut total = vec![0usize; plan.changes.len()];
    for s in &plan.steps {
        total[s.change] += 1;
    }
    for i in done {
        carried[plan.steps[*i].change] += 1;
    }
    (0..plan.changes.len()).filter(|c| total[*c] > 0).partition(|c| carried[*c] == total[*c])
}

/// What the steps need besides the plan.
#[derive(Clone)]
pub struct Context<B: Broker> {
    /// Delete classic queues only if empty and unused.
    pub guard_deletes: bool,
    /// Per user, the password read from the environment.
    pub passwords: BTreeMap<String, String>,
    /// The live state the plan was made from: where migrations resume.
    pub live: Arc<Topology>,
    pub drain: Drain,
    /// Writes the journal and watches the lock.
    pub recorder: Recorder<B>,
    /// Told as steps start and end, and of every drain reading.
    pub events: Events,
}

/// Carries out `plan`'s steps in order.
pub async fn execute<B: Broker>(broker: &B, plan: &Plan, ctx: &Context<B>) -> Outcome {
    let mut outcome = Outcome::default();
    let limit = Arc::new(Semaphore::new(CONCURRENCY));
    let mut i = 0;
    while i < plan.steps.len() {
        // One phase at a time: a phase only starts when the previous one
        // has fully succeeded, so every intermediate state is valid.
        let phase = plan.steps[i].phase;
        let end = (i..plan.steps.len()).find(|j| plan.steps[*j].phase != phase).unwrap_or(plan.steps.len());
        let before = match ctx.recorder.check() {
            Ok(()) => recheck::destructive(broker, &ctx.live, &plan.steps[i..end]).await,
            Err(e) => Err(e),
        };
        if let Err(e) = before {
            outcome.failed = Some((i, e));
            break;
        }
        let began = std::time::Instant::now();
        let results = run_phase(broker, plan, i..end, &limit, ctx).await;
        let recorded = record_phase(plan, &results, end, &ctx.recorder).await;
        ctx.events.send(Event::PhaseEnded { phase: phase.describe(), steps: end - i, took: began.elapsed() });
        for (index, result) in results {
            match result {
                Ok(()) => outcome.done.push(index),
                Err(e) if outcome.failed.is_none() => outcome.failed = Some((index, e)),
                Err(_) => {}
            }
        }
        if outcome.failed.is_some() {
            break;
        }
        if let Err(e) = recorded {
            outcome.failed = Some((i, Failure::Broker(e)));
            break;
        }
        i = end;
    }
    outcome
}

/// What became of each step of a phase, by index into the plan's steps.
type Results = Vec<(usize, Result<(), Failure>)>;

/// Runs `plan`'s steps `phase` (one phase) at once, as far as `limit`
/// allows, and gives their results in the plan's order.
///
/// A step that is one request takes its permit before its task is made,
/// and finished tasks are collected as the phase goes: a task is as large
/// as a request's future until it is joined, and a phase of 200,000
/// bindings made all at once held 200,000 of them (an apply of 100,000
/// queues grew to 10 GB). Migrations and rollbacks, which mostly wait for
/// drains, take permits per request of their own, and all start at once.
async fn run_phase<B: Broker>(
    broker: &B,
    plan: &Plan,
    phase: Range<usize>,
    limit: &Arc<Semaphore>,
    ctx: &Context<B>,
) -> Results {
    let mut set = JoinSet::new();
    let mut results = Vec::new();
    let joined =
        |r: Result<(usize, Result<(), Failure>), tokio::task::JoinError>| r.expect("a step task does not panic");
    for index in phase {
        let step = &plan.steps[index];
        let permit = match step.op {
            Op::Migrate(_) | Op::Rollback(_) => None,
            _ => Some(limit.clone().acquire_owned().await.expect("the semaphore is never closed")),
        };
        while let Some(done) = set.try_join_next() {
            results.push(joined(done));
        }
        let (broker, step, limit, ctx) = (broker.clone(), step.clone(), limit.clone(), ctx.clone());
        set.spawn(async move { (index, run_one(&broker, &step, &limit, permit, &ctx).await) });
    }
    while let Some(done) = set.join_next().await {
        results.push(joined(done));
    }
    results.sort_by_key(|(index, _)| *index);
    results
}

/// Runs one step between its events. A migration or a rollback takes a
/// permit of `limit` for each of its requests; any other step comes with
/// its one `permit`, held until it ends.
async fn run_one<B: Broker>(
    broker: &B,
    step: &Step,
    limit: &Semaphore,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ctx: &Context<B>,
) -> Result<(), Failure> {
    let events = &ctx.events;
    match &step.op {
        Op::Migrate(m) => {
            let (id, from) = start_of(m, ctx);
            let work = async {
                if from > 0 && from < m.steps.len() {
                    events.send(resuming(m, from));
                }
                migrate::run(broker, m, from, ctx.drain, limit, (&ctx.recorder, &id), events).await
            };
            events.step(step.op.to_string(), work).await
        }
        Op::Rollback(r) => {
            let work = async {
                // Why the new queue stays matters even with -q.
                if let Some(why) = rollback::run(broker, r, limit, &ctx.recorder).await? {
                    events.send(Event::Said(why));
                }
                Ok(())
            };
            events.step(step.op.to_string(), work).await
        }
        _ => {
            let _permit = permit;
            // The lock may have gone while this step waited.
            match ctx.recorder.check() {
                Ok(()) => events.step(step.op.to_string(), run_step(broker, step, ctx)).await,
                Err(e) => Err(e),
            }
        }
    }
}

/// Notes a phase's `results` in the journal, with what the phase from step
/// `next` on does, and writes it.
async fn record_phase<B: Broker>(
    plan: &Plan,
    results: &Results,
    next: usize,
    recorder: &Recorder<B>,
) -> Result<(), BrokerError> {
    recorder.note(|j| {
        if let Some(run) = &mut j.current {
            for (index, result) in results {
                let outcome = result.as_ref().err().map_or(StepOutcome::Done, Failure::outcome);
                run.record(plan.steps[*index].op.to_string(), outcome);
            }
            // What the next phase does, for whoever waits for the lock:
            // no record is written while a phase runs but migrations'.
            if next < plan.steps.len() {
                run.doing = super::recorder::doing(plan, next);
            }
        }
    });
    recorder.update(|_| {}).await
}

/// Migration `m`'s journal id and the step to start from
/// ([`migrate::start_step`]).
fn start_of<B: Broker>(m: &MigrationPlan, ctx: &Context<B>) -> (String, usize) {
    let id = migration_id(&m.vhost, &m.old.name, &m.new.name);
    let live = ctx.live.vhosts.get(&m.vhost).cloned().unwrap_or_default();
    let journal = ctx.recorder.journal();
    let start = migrate::start_step(m, &live, journal.migrations.get(&id));
    (id, start)
}

/// A migration picks up at step `from` (counted from 0).
fn resuming(m: &MigrationPlan, from: usize) -> Event {
    Event::Resuming {
        vhost: m.vhost.clone(),
        old: m.old.name.clone(),
        new: m.new.name.clone(),
        at: from + 1,
        total: m.steps.len(),
        step: m.steps[from].1.to_string(),
    }
}

async fn run_step<B: Broker>(broker: &B, step: &Step, ctx: &Context<B>) -> Result<(), Failure> {
    match &step.op {
        // Quorum queues refuse if-empty and if-unused, and streams ignore
        // them (`rabbit_quorum_queue:delete/4` refuses if-empty,
        // `rabbit_stream_queue:delete/4` ignores it): without --allow-destroy, the queue itself
        // says right before whether it is still empty and unused, as the
        // plan found it from counts that lag.
        Op::DeleteQueue { vhost, name, kind } if ctx.guard_deletes && *kind != QueueType::Classic => {
            if let Some(reason) = migrate::busy(broker, vhost, name, *kind, ctx.drain.settle).await? {
                let action = format!("delete queue \"{name}\" in vhost \"{vhost}\"");
                return Err(Failure::Broker(BrokerError::Unsafe { action, reason }));
            }
            Ok(super::op::run(broker, &step.op, ctx.guard_deletes, None).await?)
        }
        Op::PutUser { user, .. } => {
            let password = ctx.passwords.get(&user.name).map(String::as_str);
            Ok(super::op::run(broker, &step.op, ctx.guard_deletes, password).await?)
        }
        op => Ok(super::op::run(broker, op, ctx.guard_deletes, None).await?),
    }
}
