//! Carries out one compiled migration (see `plan::migration`), resuming
//! where an earlier run stopped, and waiting for the old queue to drain.
//!
//! Where a run starts is read from the live state: every step is safe to
//! repeat, but repeating the bootstrap after the swap would send messages
//! back to the old queue and restart its drain, so a run that finds every
//! source already swapped starts at the drain wait, and one that finds the
//! scaffolding gone starts at the retirement.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::recorder::Recorder;
use crate::broker::{Broker, BrokerError, Reading};
use crate::model::{Binding, DestinationKind, QueueType, Vhost};
use crate::plan::{MigrationPlan, MigrationStep as Step, Op};

/// Why a migration did not finish in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Broker(BrokerError),
    /// It waits; everything stays in place and a later apply resumes it.
    Paused(String),
    /// A check right before a step refused it.
    Refused(String),
    /// The lock's connection closed: another apply may hold the lock now,
    /// so nothing more is done.
    LockLost,
}

impl From<BrokerError> for Failure {
    fn from(e: BrokerError) -> Self {
        Failure::Broker(e)
    }
}

/// How long to wait for a drain, and how often to look.
#[derive(Debug, Clone, Copy)]
pub struct Drain {
    pub timeout: Duration,
    pub interval: Duration,
    /// Zero readings must span at least this long: the broker's counters
    /// can lag one statistics interval (5 s) or Ra tick.
    pub settle: Duration,
}

impl Default for Drain {
    fn default() -> Self {
        Drain { timeout: Duration::from_secs(600), interval: Duration::from_secs(1), settle: Duration::from_secs(6) }
    }
}

/// The first step to run, given the live state when the plan was made.
pub fn resume_point(m: &MigrationPlan, live: &Vhost) -> usize {
    let (p, q) = (&m.old.name, &m.new.name);
    let has = |b: &Binding| live.bindings.contains(b);
    let to = |b: &Binding, source: &str, kind: DestinationKind, dest: &str| Binding {
        source: source.into(),
        destination_kind: kind,
        destination: dest.into(),
        ..b.clone()
    };
    if m.sources.is_empty() {
        return 0;
    }
    let torn_down = m.sources.iter().all(|s| {
        !live.exchanges.contains_key(&s.interposed)
            && s.bindings.iter().all(|b| has(&to(b, &s.exchange.name, DestinationKind::Queue, q)))
    });
    if torn_down {
        return m.point_of_no_return();
    }
    let swapped = m.sources.iter().all(|s| {
        live.exchanges.contains_key(&s.interposed)
            && s.bindings.iter().all(|b| !has(&to(b, &s.interposed, DestinationKind::Queue, p)))
            && (live.policies.contains_key(&s.policy)
                || s.bindings.iter().any(|b| has(&to(b, &s.interposed, DestinationKind::Queue, q))))
    });
    if swapped { m.drain_step() } else { 0 }
}

/// Runs the migration's steps from `from`, recording each in the journal
/// (as migration `id`) before the next starts. Each request step holds a
/// permit of `limit` (requests in flight across the plan); the waits
/// (policy applied, drain) hold none, so that many migrations wait for
/// their drains at once.
pub async fn run(
    broker: &Broker,
    m: &MigrationPlan,
    from: usize,
    drain: Drain,
    limit: &Semaphore,
    journal: (&Recorder, &str),
) -> Result<(), Failure> {
    let (recorder, id) = journal;
    let v = m.vhost.clone();
    for (i, (_, step)) in m.steps.iter().enumerate().skip(from) {
        recorder.check()?;
        let waits = matches!(step, Step::VerifyPolicy { .. } | Step::AwaitDrained);
        let _permit = if waits { None } else { Some(limit.acquire().await.expect("the semaphore is never closed")) };
        match step {
            Step::DeclareExchange(x) => {
                broker.run(&Op::DeclareExchange { vhost: v.clone(), exchange: x.clone() }, false, None).await?
            }
            Step::DeclareQueue(q) => {
                broker.run(&Op::DeclareQueue { vhost: v.clone(), queue: q.clone() }, false, None).await?
            }
            Step::Bind(b) => broker.run(&Op::Bind { vhost: v.clone(), binding: b.clone() }, false, None).await?,
            Step::Unbind(b) => broker.run(&Op::Unbind { vhost: v.clone(), binding: b.clone() }, false, None).await?,
            Step::SetPolicy(p) => {
                broker.run(&Op::PutPolicy { vhost: v.clone(), policy: p.clone(), operator: false }, false, None).await?
            }
            Step::DeletePolicy(name) => {
                let op = Op::DeletePolicy { vhost: v.clone(), name: name.clone(), operator: false };
                broker.run(&op, false, None).await?
            }
            Step::DeleteExchange(name) => {
                broker.run(&Op::DeleteExchange { vhost: v.clone(), name: name.clone() }, false, None).await?
            }
            Step::VerifyPolicy { exchange, policy } => verify_policy(broker, &v, exchange, policy).await?,
            Step::AwaitDrained => await_drained(broker, m, drain).await?,
            Step::Retire { kind } => retire(broker, m, *kind).await?,
        }
        recorder
            .migration_step(
                id,
                i,
                &format!("migrate queue \"{}\": step {} of {}: {step}", m.old.name, i + 1, m.steps.len()),
            )
            .await?;
    }
    Ok(())
}

/// The broker applies policies a few seconds late (reference 3.2): wait for
/// ours, and refuse if another one governs the exchange.
async fn verify_policy(broker: &Broker, vhost: &str, exchange: &str, policy: &str) -> Result<(), Failure> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match broker.exchange_policy(vhost, exchange).await? {
            Some(p) if p == policy => return Ok(()),
            Some(other) if Instant::now() > deadline => {
                return Err(Failure::Refused(format!(
                    "policy \"{other}\" governs exchange \"{exchange}\" instead of warren's \"{policy}\", so the alternate exchange would not catch anything; give it a lower priority or a narrower pattern"
                )));
            }
            _ if Instant::now() > deadline => {
                return Err(Failure::Paused(format!(
                    "the broker has not applied policy \"{policy}\" to exchange \"{exchange}\" after 30 s"
                )));
            }
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// Waits until the old queue holds nothing, by readings from fresh sources
/// that span more than one statistics interval.
async fn await_drained(broker: &Broker, m: &MigrationPlan, drain: Drain) -> Result<(), Failure> {
    let (v, p) = (&m.vhost, &m.old.name);
    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut history: Vec<(Instant, Reading)> = Vec::new();
    loop {
        let Some(r) = broker.read_queue(v, p).await? else {
            // Gone already: an earlier run retired it.
            return Ok(());
        };
        let now = Instant::now();
        history.push((now, r));
        if tty {
            let rate = rate(&history);
            eprint!(
                "\r  draining \"{p}\": {} ready, {} unacknowledged, {} consumer(s), {rate:.1} msg/s   ",
                r.ready, r.unacked, r.consumers
            );
        }
        let zero_since = history.iter().rev().take_while(|(_, x)| x.ready == 0 && x.unacked == 0).last();
        if let Some((since, _)) = zero_since
            && now.duration_since(*since) >= drain.settle
        {
            if tty {
                eprintln!();
            }
            if r.consumers > 0 {
                return Err(Failure::Paused(format!(
                    "\"{p}\" is drained but {} consumer(s) are still attached (a rolling deployment?); everything stays in place: run apply again once they have moved to \"{}\"",
                    r.consumers, m.new.name
                )));
            }
            return Ok(());
        }
        let last3: Vec<Reading> = history.iter().rev().take(3).map(|(_, x)| *x).collect();
        if last3.len() == 3 && last3[0].unacked > last3[1].unacked && last3[1].unacked > last3[2].unacked {
            if tty {
                eprintln!();
            }
            return Err(Failure::Paused(format!(
                "unacknowledged messages on \"{p}\" keep rising ({} now): something still delivers to it; everything stays in place",
                r.unacked
            )));
        }
        if started.elapsed() >= drain.timeout {
            if tty {
                eprintln!();
            }
            let why = if r.consumers == 0 { "it has no consumers" } else { "its consumers do not finish" };
            return Err(Failure::Paused(format!(
                "\"{p}\" still holds {} ready and {} unacknowledged message(s) after {:?} ({why}); everything stays in place: run apply again to go on waiting",
                r.ready, r.unacked, drain.timeout
            )));
        }
        tokio::time::sleep(drain.interval).await;
    }
}

fn rate(history: &[(Instant, Reading)]) -> f64 {
    let (Some((t0, a)), Some((t1, b))) = (history.iter().rev().nth(5).or(history.first()), history.last()) else {
        return 0.0;
    };
    let dt = t1.duration_since(*t0).as_secs_f64();
    let before = (a.ready + a.unacked) as f64;
    let after = (b.ready + b.unacked) as f64;
    if dt > 0.0 { (before - after) / dt } else { 0.0 }
}

/// Deletes the old queue: the point of no return. Checked right before:
/// classic queues by the broker (if-empty, if-unused), others by warren,
/// since quorum queues refuse those flags and streams ignore them.
async fn retire(broker: &Broker, m: &MigrationPlan, kind: QueueType) -> Result<(), Failure> {
    let (v, p) = (&m.vhost, &m.old.name);
    let Some(r) = broker.read_queue(v, p).await? else { return Ok(()) };
    if r.ready > 0 || r.unacked > 0 || r.consumers > 0 {
        return Err(Failure::Paused(format!(
            "\"{p}\" is not empty and unused right before deletion ({} ready, {} unacknowledged, {} consumer(s)); it is kept",
            r.ready, r.unacked, r.consumers
        )));
    }
    let op = Op::DeleteQueue { vhost: v.clone(), name: p.clone(), kind };
    match broker.run(&op, kind == QueueType::Classic, None).await {
        Err(BrokerError::Refused { reason, .. }) if reason.contains("not empty") || reason.contains("in use") => {
            Err(Failure::Paused(format!("the broker kept \"{p}\": {reason}")))
        }
        other => Ok(other?),
    }
}
