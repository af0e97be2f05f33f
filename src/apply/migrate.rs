//! Carries out one compiled migration (see `plan::migration`), resuming
//! where an earlier run stopped, and waiting for the old queue to drain;
//! and any sequence of migration steps, a rollback's too (`run_steps`).
//!
//! Where a run starts is read from the live state: every step is safe to
//! repeat, but repeating the bootstrap after the swap would send messages
//! back to the old queue and restart its drain, so a run that finds every
//! source already swapped starts at the drain wait, and one that finds the
//! scaffolding gone starts at the retirement.

use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::event::{DrainReading, Event, Events};
use super::failure::Failure;
use super::recorder::Recorder;
use crate::broker::{Broker, BrokerError, Freshness, Leadership, Reading};
use crate::model::{Binding, DestinationKind, QueueType, Vhost};
use crate::plan::{IfBusy, MigrationPlan, MigrationStep as Step, Op};

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

/// Where a run of migration `m` starts: where the live state says it
/// stands, or further where the journal's `record` has more done of the
/// very same steps (the live state cannot tell every step apart). A record
/// counts only while the live state shows the migration begun: one left
/// from a vhost deleted and made again must not skip steps.
pub fn start_step(m: &MigrationPlan, live: &Vhost, record: Option<&crate::journal::Migration>) -> usize {
    let begun =
        live.queues.contains_key(&m.new.name) || m.sources.iter().any(|s| live.exchanges.contains_key(&s.interposed));
    let recorded = record.filter(|r| begun && r.fingerprint == super::migration_fingerprint(m)).map_or(0, |r| r.done);
    resume_point(m, live).max(recorded).min(m.steps.len())
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
            && s.bindings.iter().all(|b| has(&to(b, &s.exchange, DestinationKind::Queue, q)))
    });
    if torn_down {
        return m.point_of_no_return();
    }
    let swapped = m.sources.iter().all(|s| {
        live.exchanges.contains_key(&s.interposed)
            && s.bindings.iter().all(|b| !has(&to(b, &s.interposed, DestinationKind::Queue, p)))
            && (live.exchanges.contains_key(&s.alternate)
                || s.bindings.iter().any(|b| has(&to(b, &s.interposed, DestinationKind::Queue, q))))
    });
    if swapped { m.drain_step() } else { 0 }
}

/// Runs the migration's steps from `from`, as [`run_steps`] does, recorded
/// in the journal as migration `id`.
pub async fn run<B: Broker>(
    broker: &B,
    m: &MigrationPlan,
    from: usize,
    drain: Drain,
    limit: &Semaphore,
    journal: (&Recorder<B>, &str),
    events: &Events,
) -> Result<(), Failure> {
    let (recorder, id) = journal;
    let steps = Sequence {
        vhost: &m.vhost,
        label: format!("migrate queue \"{}\"", m.old.name),
        record: id,
        steps: m.steps.iter().map(|(_, s)| s).collect(),
    };
    // Its retirement pauses on a busy queue: it keeps none.
    run_steps(broker, &steps, from, drain, limit, recorder, events).await.map(|_| ())
}

/// Steps in one vhost, as a migration or a rollback carries them out.
pub struct Sequence<'a> {
    pub vhost: &'a str,
    /// What the steps do, in the words of each step's record:
    /// `migrate queue "orders"`.
    pub label: String,
    /// The journal's migration that counts the steps done.
    pub record: &'a str,
    pub steps: Vec<&'a Step>,
}

/// Runs the steps from `from`, recording each in the journal before the
/// next starts, and telling `events` as each starts and ends. Each request
/// step holds a permit of `limit` (requests in flight across the plan);
/// the drain waits hold none, so that many migrations
/// wait for their drains at once. The records have their own bound (see
/// `Recorder`), so that a step's record never waits behind other steps. Says why each queue a retirement kept
/// was kept.
pub async fn run_steps<B: Broker>(
    broker: &B,
    s: &Sequence<'_>,
    from: usize,
    drain: Drain,
    limit: &Semaphore,
    recorder: &Recorder<B>,
    events: &Events,
) -> Result<Vec<String>, Failure> {
    let mut kept = Vec::new();
    for (i, step) in s.steps.iter().enumerate().skip(from) {
        recorder.check()?;
        let waits = matches!(step, Step::AwaitDrained { .. });
        let _permit = if waits { None } else { Some(limit.acquire().await.expect("the semaphore is never closed")) };
        let what = format!("{}: step {} of {}: {step}", s.label, i + 1, s.steps.len());
        let work = async {
            kept.extend(carry_out(broker, s.vhost, step, drain, events).await?);
            Ok(())
        };
        events.step(what.clone(), work).await?;
        recorder.migration_step(s.record, i, &what).await?;
    }
    Ok(kept)
}

/// Carries out one step in `vhost`; says why the queue a retirement kept
/// was kept.
pub async fn carry_out(
    broker: &impl Broker,
    vhost: &str,
    step: &Step,
    drain: Drain,
    events: &Events,
) -> Result<Option<String>, Failure> {
    let v = vhost.to_string();
    let op = match step {
        Step::DeclareExchange(x) => Op::DeclareExchange { vhost: v, exchange: x.clone() },
        Step::DeclareQueue(q) => Op::DeclareQueue { vhost: v, queue: q.clone() },
        Step::Bind(b) => Op::Bind { vhost: v, binding: b.clone() },
        Step::Unbind(b) => Op::Unbind { vhost: v, binding: b.clone() },
        Step::DeleteExchange(name) => Op::DeleteExchange { vhost: v, name: name.clone() },
        Step::AwaitDrained { queue, kind, successor } => {
            let q = Drained { vhost, queue, kind: *kind, successor };
            return await_drained(broker, &q, drain, events).await.map(|()| None);
        }
        Step::Retire { queue, kind, if_busy: IfBusy::Pause } => {
            return retire(broker, vhost, queue, *kind, drain.settle).await.map(|()| None);
        }
        Step::Retire { queue, kind, if_busy: IfBusy::Keep } => {
            return Ok(retire_or_keep(broker, vhost, queue, *kind, drain.settle).await);
        }
    };
    super::op::run(broker, &op, false, None).await?;
    Ok(None)
}

/// The queue a drain wait is for.
struct Drained<'a> {
    vhost: &'a str,
    queue: &'a str,
    kind: QueueType,
    /// Where its consumers are to move.
    successor: &'a str,
}

/// Waits until the old queue holds nothing, by readings from fresh sources
/// that span more than one statistics interval; `events` gets every reading.
async fn await_drained(broker: &impl Broker, q: &Drained<'_>, drain: Drain, events: &Events) -> Result<(), Failure> {
    let result = drain_wait(broker, q, drain, events).await;
    events.send(Event::DrainOver { vhost: q.vhost.to_string(), old: q.queue.to_string() });
    result
}

async fn drain_wait(broker: &impl Broker, q: &Drained<'_>, drain: Drain, events: &Events) -> Result<(), Failure> {
    let (v, p) = (q.vhost, q.queue);
    let quorum = q.kind == QueueType::Quorum;
    let started = Instant::now();
    let show = |r: &Reading, rate: f64, leaderless: Option<String>| {
        events.send(Event::Draining(DrainReading {
            vhost: v.to_string(),
            old: p.to_string(),
            ready: r.ready,
            unacked: r.unacked,
            consumers: r.consumers,
            rate,
            leaderless,
            elapsed: started.elapsed(),
            timeout: drain.timeout,
        }))
    };
    let mut history: Vec<(Instant, Reading)> = Vec::new();
    loop {
        // Totals shared with the other drain waits of the vhost, up to
        // 500 ms old: `now` is when they were asked for, so the zeros still
        // span `settle` of the queue's own time.
        let Some((now, r)) = broker.read_queue(v, p, Freshness::Shared).await? else {
            // Gone already: an earlier run retired it.
            return Ok(());
        };
        let timed_out = started.elapsed() >= drain.timeout;
        // A quorum queue without a leader reads 0 ready and 0 consumers, and
        // so does one whose leader does not answer within 250 ms, as under
        // load (`rabbit_quorum_queue:stat/2`): a zero reading counts only
        // once the leader is confirmed after it, and the totals (which do
        // not time out) count too. Checked at the timeout too, to say why.
        if quorum && ((r.ready == 0 && r.unacked == 0) || timed_out) {
            let Some(leadership) = broker.queue_leadership(v, p).await? else { return Ok(()) };
            if let Some(why) = without_leader(&leadership) {
                // The zeros before it no longer span a known interval.
                history.clear();
                show(&r, 0.0, Some(why.clone()));
                if timed_out {
                    return Err(Failure::Paused(format!(
                        "quorum queue \"{p}\" has no leader after {:?} ({why}), so its readings of 0 messages prove nothing; everything stays in place: run apply again once a majority of its members is back",
                        drain.timeout
                    )));
                }
                tokio::time::sleep(drain.interval).await;
                continue;
            }
        }
        history.push((now, r));
        show(&r, rate(&history), None);
        if let Some(ended) = verdict(&history, now, &r, q, drain, timed_out) {
            return ended;
        }
        tokio::time::sleep(drain.interval).await;
    }
}

/// What the latest reading `r` of the old queue, taken at `now`, decides
/// given the readings so far: the wait ends (drained, or paused with why),
/// or it goes on (`None`).
fn verdict(
    history: &[(Instant, Reading)],
    now: Instant,
    r: &Reading,
    q: &Drained<'_>,
    drain: Drain,
    timed_out: bool,
) -> Option<Result<(), Failure>> {
    let p = q.queue;
    // Drained: the queue's own count and the totals both at zero for
    // longer than the totals can lag, so that the zeros are fresh
    // facts; the consumers, from the queue itself, as last read. Totals
    // that lag can only make the wait longer: a consumer holding
    // messages keeps its queue from counting as drained, and one that
    // leaves gives its messages back as ready ones, which the queue
    // itself counts at once.
    let zero_since = history.iter().rev().take_while(|(_, x)| x.empty()).last();
    if let Some((since, _)) = zero_since
        && now.duration_since(*since) >= drain.settle
    {
        if r.consumers > 0 {
            return Some(Err(Failure::Paused(format!(
                "\"{p}\" is drained but {} consumer(s) are still attached (a rolling deployment?); everything stays in place: run apply again once they have moved to \"{}\"",
                r.consumers, q.successor
            ))));
        }
        return Some(Ok(()));
    }
    let readings: Vec<Reading> = history.iter().map(|(_, x)| *x).collect();
    if keeps_rising(&readings) {
        return Some(Err(Failure::Paused(format!(
            "unacknowledged messages on \"{p}\" keep rising ({} now): something still delivers to it; everything stays in place",
            r.unacked
        ))));
    }
    if timed_out {
        let why = if r.consumers == 0 { "it has no consumers" } else { "its consumers do not finish" };
        return Some(Err(Failure::Paused(format!(
            "\"{p}\" still holds {} ready and {} unacknowledged message(s) after {:?} ({why}); everything stays in place: run apply again to go on waiting",
            r.ready, r.unacked, drain.timeout
        ))));
    }
    None
}

/// Whether something still delivers to the old queue although nothing
/// routes to it (a publisher naming it, a consumer that never acks): over
/// the last three changes of the unacknowledged count, it rose each time,
/// and the total (ready + unacknowledged) with it.
///
/// Changes, not readings: quorum queue totals move once per Ra tick (5 s),
/// so readings a second apart mostly repeat and three in a row never rose.
/// The total must rise too, else a backlog moving from ready to a consumer
/// with a large prefetch would look like new deliveries.
fn keeps_rising(history: &[Reading]) -> bool {
    let mut changes: Vec<&Reading> = Vec::new();
    for r in history {
        if changes.last().is_none_or(|last| last.unacked != r.unacked) {
            changes.push(r);
        }
    }
    let total = |r: &Reading| r.ready.saturating_add(r.unacked);
    let last: Vec<&&Reading> = changes.iter().rev().take(3).collect();
    last.len() == 3 && last.windows(2).all(|w| w[0].unacked > w[1].unacked && total(w[0]) > total(w[1]))
}

/// Why a quorum queue has no leader now, or `None` when it has one. Without
/// a leader a passive declare reads 0 ready and 0 consumers (`rabbit_quorum_queue`
/// answers 0 and 0 when its leader does not answer within 250 ms), which
/// must not pass for drained. What 3.10 to 4.x report:
/// 3.10-3.12 give `leader` "" when the leader's process is not alive, and
/// `online` the members whose process is; 3.13+ give the recorded leader,
/// `online` the members on running nodes and `state` `minority` or `down`
/// when a majority or the leader's node is not running. A report without
/// a leader does not confirm one.
pub fn without_leader(l: &Leadership) -> Option<String> {
    let Some(leader) = &l.leader else {
        return Some("the broker reports no leader".to_string());
    };
    if let Some(state) = &l.state
        && matches!(state.as_str(), "minority" | "down" | "stopped" | "crashed")
    {
        return Some(format!("its state is \"{state}\""));
    }
    if let Some(online) = &l.online {
        if !online.contains(leader) {
            return Some(format!("its leader {leader} is not online"));
        }
        if let Some(members) = l.members.as_ref().filter(|m| !m.is_empty()) {
            let up = members.iter().filter(|n| online.contains(n)).count();
            if up <= members.len() / 2 {
                return Some(format!("{up} of its {} members are online, not a majority", members.len()));
            }
        }
    }
    None
}

/// Which members of a quorum queue are not online, or `None` when all are
/// (or the broker does not say). Checked right before a deletion: a
/// member whose node is down keeps the queue's Ra log, and when its node
/// returns after the queue was deleted and declared again under the same
/// name (a rollback's new queue, migrated again; a name reused), it can
/// rejoin as that queue's member, even its leader, and replay old
/// messages (rabbitmq-server#12366). The migration waits for it instead.
fn members_down(l: &Leadership) -> Option<String> {
    let (Some(members), Some(online)) = (&l.members, &l.online) else { return None };
    let down: Vec<&str> = members.iter().filter(|m| !online.contains(m)).map(String::as_str).collect();
    match down.as_slice() {
        [] => None,
        [one] => Some(format!("its member {one} is not online")),
        many => Some(format!("its members {} are not online", many.join(", "))),
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

/// Deletes a migration's old queue `p`: the point of no return. Checked
/// right before: classic queues by the broker (if-empty, if-unused),
/// others by warren, since quorum queues refuse those flags and streams
/// ignore them. A busy queue pauses the migration. `settle`: see
/// [`empty_and_unused`].
async fn retire(broker: &impl Broker, v: &str, p: &str, kind: QueueType, settle: Duration) -> Result<(), Failure> {
    match empty_and_unused(broker, v, p, kind, settle).await? {
        Emptiness::Gone => return Ok(()),
        Emptiness::Busy(r) => {
            return Err(Failure::Paused(format!(
                "\"{p}\" is not empty and unused right before deletion ({} ready, {} unacknowledged, {} consumer(s)); it is kept",
                r.ready, r.unacked, r.consumers
            )));
        }
        Emptiness::Leaderless(why) => {
            return Err(Failure::Paused(format!(
                "quorum queue \"{p}\" has no leader right before deletion ({why}), so its reading of 0 messages proves nothing; it is kept: run apply again once a majority of its members is back"
            )));
        }
        Emptiness::MembersDown(why) => {
            return Err(Failure::Paused(format!(
                "quorum queue \"{p}\" is drained but {why} right before deletion; {MEMBER_DOWN_RISK}; it is kept: run apply again once every member is back, or first remove a member whose node will not return (rabbitmq-queues delete_member)"
            )));
        }
        Emptiness::Empty => {}
    }
    let op = Op::DeleteQueue { vhost: v.to_string(), name: p.to_string(), kind };
    match super::op::run(broker, &op, kind == QueueType::Classic, None).await {
        Err(BrokerError::Refused { reason, .. }) if reason.contains("not empty") || reason.contains("in use") => {
            Err(Failure::Paused(format!("the broker kept \"{p}\": {reason}")))
        }
        other => Ok(other?),
    }
}

/// Deletes a rolled-back migration's new queue `q` when it is empty and
/// unused, checked as [`retire`] does; otherwise it stays for its
/// consumers, and this says why.
async fn retire_or_keep(broker: &impl Broker, v: &str, q: &str, kind: QueueType, settle: Duration) -> Option<String> {
    let kept = |why: String| Some(format!("Queue \"{q}\" was kept: {why}"));
    match empty_and_unused(broker, v, q, kind, settle).await {
        Ok(Emptiness::Empty) => {
            let op = Op::DeleteQueue { vhost: v.to_string(), name: q.to_string(), kind };
            match super::op::run(broker, &op, kind == QueueType::Classic, None).await {
                Ok(()) => None,
                Err(e) => kept(format!("{e}.")),
            }
        }
        Ok(Emptiness::Busy(r)) if r.idle_by_its_own_count() => kept(format!(
            "it has no consumer and no ready message, but the queue totals still count {} unacknowledged message(s) a settling interval later: a client holds them (basic.get), or the totals are late. Nothing routes to it any more; delete it once they are acknowledged.",
            r.unacked
        )),
        Ok(Emptiness::Busy(r)) => kept(format!(
            "it holds {} ready and {} unacknowledged message(s) that arrived during the migration, and has {} consumer(s). Nothing routes to it any more; delete it once its consumers have drained it.",
            r.ready, r.unacked, r.consumers
        )),
        Ok(Emptiness::Leaderless(why)) => kept(format!(
            "it is a quorum queue without a leader ({why}), so its reading of 0 messages proves nothing. Nothing routes to it any more; delete it once it is back and empty."
        )),
        Ok(Emptiness::MembersDown(why)) => kept(format!(
            "it is empty, but {why}; {MEMBER_DOWN_RISK}. Nothing routes to it any more; delete it once every member is back."
        )),
        Ok(Emptiness::Gone) => None,
        Err(e) => kept(format!("could not read its counts: {e}.")),
    }
}

/// Why queue `q` of `kind` may not be deleted without --allow-destroy, as
/// it answers right before (see [`empty_and_unused`]); `None` when it is
/// empty and unused, or gone. For the queues whose deletion the broker
/// does not guard: a plan found them empty and unused from counts that lag.
pub async fn busy(
    broker: &impl Broker,
    v: &str,
    q: &str,
    kind: QueueType,
    settle: Duration,
) -> Result<Option<String>, BrokerError> {
    // A plan made by this warren asks --allow-destroy for any stream; one
    // saved by an earlier warren may not have.
    if kind == QueueType::Stream {
        return Ok(broker.read_queue(v, q, Freshness::Now).await?.map(|_| STREAM_UNPROVEN.to_string()));
    }
    Ok(match empty_and_unused(broker, v, q, kind, settle).await? {
        Emptiness::Empty | Emptiness::Gone => None,
        Emptiness::Busy(r) => Some(format!(
            "it holds {} ready and {} unacknowledged message(s) and has {} consumer(s) right before deletion",
            r.ready, r.unacked, r.consumers
        )),
        Emptiness::Leaderless(why) => {
            Some(format!("it has no leader right before deletion ({why}), so its reading of 0 messages proves nothing"))
        }
        Emptiness::MembersDown(why) => Some(format!("{why} right before deletion; {MEMBER_DOWN_RISK}")),
    })
}

/// Why a stream is never deleted without --allow-destroy: its count, even
/// as the stream itself answers a passive declare, is the broker's figure
/// of the last statistics tick (`queue_coarse_metrics`).
const STREAM_UNPROVEN: &str = "it is a stream, whose message count lags by seconds even as the stream itself gives it, so nothing proves it empty right before deletion";

/// Why a quorum queue is never deleted while one of its members is down.
const MEMBER_DOWN_RISK: &str = "a member that is down when its queue is deleted can come back with the queue's old log and deliver its messages again to a queue of the same name (rabbitmq-server#12366)";

/// What the last look before deleting a queue found.
enum Emptiness {
    Empty,
    Gone,
    /// Messages or consumers, as read.
    Busy(Reading),
    /// A quorum queue without a leader: its zeros prove nothing.
    Leaderless(String),
    /// A quorum queue with a member down: deleting it now could bring its
    /// log back (see [`members_down`]).
    MembersDown(String),
}

/// Whether a queue is empty and unused right now, as the queue itself
/// answers (never a shared listing), and for a quorum queue a leader that
/// answered.
///
/// The queue's own answer (a passive declare) is fresh: a message ready or
/// a consumer is busy. Without either, nothing is unacknowledged but what
/// a `basic.get` holds (a closed consumer's messages go back to the queue
/// as ready ones), yet the queue totals, which count unacknowledged
/// messages, lag up to one statistics interval: when they still say
/// messages, the queue was busy a moment ago (or lost its leader), or a
/// `basic.get` holds some. Totals listed `settle` later (more than one
/// interval) count what the queue held since its own answer: they tell.
async fn empty_and_unused(
    broker: &impl Broker,
    v: &str,
    q: &str,
    kind: QueueType,
    settle: Duration,
) -> Result<Emptiness, BrokerError> {
    let mut confirming = false;
    loop {
        let Some((_, r)) = broker.read_queue(v, q, Freshness::Now).await? else { return Ok(Emptiness::Gone) };
        if !r.idle_by_its_own_count() {
            return Ok(Emptiness::Busy(r));
        }
        if kind == QueueType::Quorum {
            let Some(leadership) = broker.queue_leadership(v, q).await? else { return Ok(Emptiness::Gone) };
            if let Some(why) = without_leader(&leadership) {
                return Ok(Emptiness::Leaderless(why));
            }
            if let Some(why) = members_down(&leadership) {
                return Ok(Emptiness::MembersDown(why));
            }
        }
        if r.empty() {
            return Ok(Emptiness::Empty);
        }
        if confirming {
            return Ok(Emptiness::Busy(r));
        }
        confirming = true;
        tokio::time::sleep(settle).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(ready: u64, unacked: u64) -> Reading {
        Reading { ready, unacked, consumers: 1, own_ready: ready }
    }

    fn readings(pairs: &[(u64, u64)]) -> Vec<Reading> {
        pairs.iter().map(|(r, u)| reading(*r, *u)).collect()
    }

    #[test]
    fn unacknowledged_rising_with_the_total_keeps_rising() {
        // A consumer that never acks, fed by a publisher naming the queue.
        assert!(keeps_rising(&readings(&[(0, 10), (0, 25), (0, 40)])));
        assert!(!keeps_rising(&readings(&[(0, 10), (0, 25)])), "two readings are not enough");
    }

    #[test]
    fn repeated_readings_do_not_hide_a_rise() {
        // Quorum queue totals move once per Ra tick: readings repeat.
        let quorum = readings(&[(0, 10), (0, 10), (0, 10), (0, 60), (0, 60), (0, 60), (0, 60), (0, 110)]);
        assert!(keeps_rising(&quorum));
        assert!(!keeps_rising(&quorum[..7]));
    }

    #[test]
    fn a_backlog_moving_to_a_consumer_is_not_a_rise() {
        // Unacknowledged rises, but only as ready falls: nothing new arrives.
        assert!(!keeps_rising(&readings(&[(900, 100), (700, 300), (400, 600)])));
    }

    #[test]
    fn a_normal_drain_is_not_a_rise() {
        assert!(!keeps_rising(&readings(&[(500, 10), (400, 9), (300, 10), (200, 10), (100, 8), (0, 9), (0, 10)])));
        assert!(!keeps_rising(&readings(&[(0, 10), (0, 20), (0, 15), (0, 30)])), "it fell in between");
    }

    const V: &str = "v";

    /// A broker with queue "q" of `kind` in vhost "v", holding `ready` messages.
    async fn with_queue(kind: QueueType, ready: usize) -> crate::broker::Memory {
        let m = crate::broker::Memory::new();
        m.put_vhost(V, &Default::default(), &[]).await.unwrap();
        m.declare_queue(V, &crate::testing::objects::queue("q", kind, Default::default())).await.unwrap();
        for i in 0..ready {
            assert!(m.publish(V, "", "q", &Default::default(), &i.to_string()).unwrap());
        }
        m
    }

    async fn emptiness(m: &crate::broker::Memory, kind: QueueType) -> Emptiness {
        empty_and_unused(m, V, "q", kind, Duration::from_millis(10)).await.unwrap()
    }

    /// Issue 27, item 9: a rolled-back migration's new queue kept as "0
    /// ready and 1 unacknowledged, 0 consumers", from totals that lagged.
    #[tokio::test]
    async fn totals_that_lag_behind_an_empty_unused_queue_do_not_keep_it() {
        for kind in [QueueType::Classic, QueueType::Quorum] {
            let m = with_queue(kind, 0).await;
            m.lag_totals(V, "q", (0, 1), 1).unwrap();
            assert!(matches!(emptiness(&m, kind).await, Emptiness::Empty), "{kind:?}");
            m.lag_totals(V, "q", (3, 0), 1).unwrap();
            assert!(matches!(emptiness(&m, kind).await, Emptiness::Empty), "{kind:?}: stale ready");
        }
    }

    /// A plan saved before streams needed --allow-destroy is still kept
    /// from deleting one: nothing it answers proves it empty.
    #[tokio::test]
    async fn a_stream_is_never_found_empty_right_before_deletion() {
        let m = with_queue(QueueType::Stream, 0).await;
        let settle = Duration::from_millis(10);
        assert_eq!(busy(&m, V, "q", QueueType::Stream, settle).await.unwrap().as_deref(), Some(STREAM_UNPROVEN));
        assert_eq!(busy(&m, V, "gone", QueueType::Stream, settle).await.unwrap(), None, "nothing to delete");
        let m = with_queue(QueueType::Quorum, 0).await;
        assert_eq!(
            busy(&m, V, "q", QueueType::Quorum, settle).await.unwrap(),
            None,
            "a quorum queue's own count is fresh"
        );
    }

    #[tokio::test]
    async fn what_the_queue_itself_counts_keeps_it_whatever_the_totals_say() {
        let m = with_queue(QueueType::Classic, 2).await;
        m.lag_totals(V, "q", (0, 0), 1).unwrap();
        assert!(matches!(emptiness(&m, QueueType::Classic).await, Emptiness::Busy(r) if r.own_ready == 2));
        let m = with_queue(QueueType::Classic, 0).await;
        m.set_consumers(V, "q", 1).unwrap();
        assert!(matches!(emptiness(&m, QueueType::Classic).await, Emptiness::Busy(r) if r.consumers == 1));
    }

    #[tokio::test]
    async fn messages_a_basic_get_holds_keep_the_queue_once_fresh_totals_confirm_them() {
        let m = with_queue(QueueType::Classic, 0).await;
        // No consumer, nothing ready, but unacknowledged: only basic.get.
        m.set_unacked(V, "q", 1).unwrap();
        let Emptiness::Busy(r) = emptiness(&m, QueueType::Classic).await else { panic!("not kept") };
        assert_eq!((r.own_ready, r.unacked, r.consumers), (0, 1, 0));
        let said = retire_or_keep(&m, V, "q", QueueType::Classic, Duration::from_millis(10)).await.unwrap();
        assert!(said.contains("basic.get"), "{said}");
        assert!(m.read_queue(V, "q", Freshness::Now).await.unwrap().is_some(), "deleted");
    }

    #[tokio::test]
    async fn a_quorum_queue_whose_leader_is_gone_is_never_read_as_empty() {
        let m = with_queue(QueueType::Quorum, 1).await;
        m.set_leader(V, "q", false).unwrap();
        assert!(matches!(emptiness(&m, QueueType::Quorum).await, Emptiness::Leaderless(_)));
        let said = retire_or_keep(&m, V, "q", QueueType::Quorum, Duration::from_millis(10)).await.unwrap();
        assert!(said.contains("without a leader"), "{said}");
        m.set_leader(V, "q", true).unwrap();
        assert!(matches!(emptiness(&m, QueueType::Quorum).await, Emptiness::Busy(r) if r.own_ready == 1));
    }

    fn leadership(leader: &str, members: &[&str], online: &[&str], state: Option<&str>) -> Leadership {
        let nodes = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect());
        Leadership {
            leader: Some(leader.to_string()).filter(|l| !l.is_empty()),
            members: nodes(members),
            online: nodes(online),
            state: state.map(str::to_string),
        }
    }

    #[test]
    fn a_queue_with_its_leader_and_a_majority_online_has_a_leader() {
        assert_eq!(without_leader(&leadership("a", &["a"], &["a"], Some("live"))), None, "3.10, one node");
        assert_eq!(without_leader(&leadership("b", &["a", "b", "c"], &["b", "c"], Some("running"))), None);
        let bare = Leadership { leader: Some("a".into()), ..Leadership::default() };
        assert_eq!(without_leader(&bare), None, "only a leader reported");
    }

    #[test]
    fn a_queue_without_a_live_leader_has_none() {
        // 3.10-3.12: the leader's process is not alive.
        assert!(without_leader(&leadership("", &["a", "b", "c"], &["c"], None)).is_some());
        // 3.13+: the recorded leader's node is down, or a majority is.
        let down = without_leader(&leadership("a", &["a", "b", "c"], &["b", "c"], Some("down"))).unwrap();
        assert!(down.contains("down"), "{down}");
        let minority = leadership("a", &["a", "b", "c"], &["a"], Some("minority"));
        assert!(without_leader(&minority).unwrap().contains("minority"));
        // The same, told by the lists alone.
        assert!(without_leader(&leadership("a", &["a", "b", "c"], &["b", "c"], None)).unwrap().contains("not online"));
        let lone = without_leader(&leadership("a", &["a", "b", "c"], &["a"], None)).unwrap();
        assert!(lone.contains("1 of its 3 members"), "{lone}");
        assert!(without_leader(&leadership("a", &["a", "b", "c", "d"], &["a", "b"], None)).is_some(), "2 of 4");
        assert!(without_leader(&Leadership::default()).is_some(), "nothing reported confirms nothing");
    }

    #[test]
    fn a_quorum_queue_is_deleted_only_with_every_member_online() {
        assert_eq!(members_down(&leadership("a", &["a", "b", "c"], &["a", "b", "c"], Some("running"))), None);
        // A majority is enough to read it, not to delete it.
        let one = members_down(&leadership("a", &["a", "b", "c"], &["a", "c"], Some("running"))).unwrap();
        assert_eq!(one, "its member b is not online");
        let two = members_down(&leadership("a", &["a", "b", "c", "d", "e"], &["a", "b", "e"], None)).unwrap();
        assert_eq!(two, "its members c, d are not online");
        assert_eq!(members_down(&Leadership { leader: Some("a".into()), ..Leadership::default() }), None, "not said");
    }
}
