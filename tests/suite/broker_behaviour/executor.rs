//! The executor on the in-memory broker, in milliseconds: an apply as
//! `warren apply` runs it (lock, journal, live state, plan, records,
//! steps), a live migration under traffic that must deliver every message
//! exactly once, runs stopped part-way at every step and resumed by a new
//! plan, and `warren abort`'s rollback of a migration in flight.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::Semaphore;
use warren::apply::migrate::{self, Drain};
use warren::apply::{self, Context, Event, Events, Failure, Outcome, Recorder};
use warren::broker::{Memory, RecordStore};
use warren::commands::live_side;
use warren::commands::planned::{Planned, compute};
use warren::journal::{self, Journal, MigrationState, Run, RunOutcome};
use warren::model::{Binding, DestinationKind, Inventory, Place, QueueType, RecordWrite, Records, Table, Vhost};
use warren::plan::{MigrationPlan, MigrationStep, Op, Plan};

use crate::common::{MigrationCase, migration};

const V: &str = "shop";
const OLD: &str = "orders.v1";
const NEW: &str = "orders.v2";
const KEYS: [&str; 2] = ["order.created", "order.paid"];

/// A drain confirmed over 5 ms of readings 1 ms apart.
const DRAIN: Drain =
    Drain { timeout: Duration::from_secs(5), interval: Duration::from_millis(1), settle: Duration::from_millis(5) };

/// The old queue, bound to a topic exchange on two keys, and its quorum
/// replacement by live migration (`tests/migrations/topic-to-quorum`), in
/// vhost [`V`].
static CASE: LazyLock<MigrationCase> = LazyLock::new(|| migration("topic-to-quorum").in_vhost(V));

/// The files, planned against the broker as `warren plan` does.
async fn plan(m: &Memory, files: &str) -> Planned {
    let root = Path::new("/beh");
    let desired = warren::desired::load_texts(root, vec![(root.join("topology.toml"), files.to_string())]);
    assert!(!desired.has_errors(), "{:?}", desired.diagnostics);
    let live = live_side::read(m, &desired.topology, Some(desired.project.name())).await.unwrap();
    compute(desired, &PathBuf::from("/beh"), live, &[])
}

/// Takes the lock and the journal as every writing command does.
async fn begin(m: &Memory, place: Place) -> Recorder<Memory> {
    let lock = m.take_lock(&place, "test").await.unwrap().expect("the lock is free");
    let (value, progress, slot) = m.read_journal(&place).await.unwrap();
    let mut journal = Journal::from_json(value).unwrap();
    journal::add_progress(&mut journal.migrations, &progress);
    let now = journal::now();
    journal.take_over(&now);
    let id = journal.next_run_id();
    journal.current = Some(Run { id, by: "test".into(), started: now, doing: "applying".into(), ..Run::default() });
    let recorder = Recorder::new(m.clone(), place, Some(lock), (journal, slot));
    recorder.update(|_| {}).await.unwrap();
    recorder
}

/// Records how the run ended and gives the lock back.
async fn end(recorder: Recorder<Memory>, outcome: RunOutcome, detail: Option<String>) {
    recorder.update(|j| j.finish(outcome, detail, &journal::now())).await.unwrap();
    recorder.release().await;
}

/// The writes that make `inventory` the project's records, from the
/// records as they stand (`now`).
fn records(planned: &Planned, now: &Records, inventory: &Inventory, recorder: &Recorder<Memory>) -> Vec<RecordWrite> {
    let project = &planned.desired.project.name();
    let after = planned.live.ownership.with(project, inventory.clone());
    now.writes(&after, project, recorder.place())
}

/// An apply up to its first step: the lock and journal taken, the plan
/// made from the live state, the objects claimed and the plan recorded.
struct Prepared {
    recorder: Recorder<Memory>,
    planned: Planned,
    before: Inventory,
    /// The records once the claim is written.
    claimed: Records,
}

async fn prepare(m: &Memory, files: &str) -> Prepared {
    let recorder = begin(m, Place::Broker).await;
    let mut planned = plan(m, files).await;
    recorder.note(|j| j.forget_finished(&planned.live.topology));
    if !recorder.journal().migrations.is_empty() {
        // Planned again with the journal as the lock holder has it.
        planned.live.migrations = recorder.journal().migrations.clone();
        let desired = planned.desired;
        planned = compute(desired, &PathBuf::from("/beh"), planned.live, &[]);
    }
    assert!(planned.document.errors.is_empty(), "{:?}", planned.document.errors);
    let mine = planned.live.ownership.of(planned.desired.project.name());
    let before = apply::inventory_claim(mine, &planned.desired.topology, &planned.live.topology, &planned.plan);
    let claim = records(&planned, &planned.live.records, &before, &recorder);
    m.write_records(&claim).await.unwrap();
    let claimed = planned.live.records.written(&claim);
    let at = journal::now();
    recorder
        .update(|j| {
            for m in migrations(&planned.plan) {
                let id = journal::migration_id(&m.vhost, &m.old.name, &m.new.name);
                let record = apply::migration_record(m, j.migrations.get(&id), &at);
                j.migrations.insert(id, record);
            }
        })
        .await
        .unwrap();
    Prepared { recorder, planned, before, claimed }
}

/// The rest of the apply: its steps, with `events` told as it works, then
/// the records and the journal as the steps left them.
async fn carry_out(m: &Memory, p: Prepared, events: Events, drain: Drain) -> Outcome {
    let Prepared { recorder, planned, before, claimed } = p;
    let plan = &planned.plan;
    let ctx = Context {
        guard_deletes: true,
        passwords: planned.passwords.clone(),
        live: Arc::new(planned.live.topology.clone()),
        drain,
        recorder: recorder.clone(),
        events,
    };
    let outcome = apply::execute(m, plan, &ctx).await;
    let after = apply::inventory_after(&before, plan, &outcome.done, &planned.desired.topology);
    m.write_records(&records(&planned, &claimed, &after, &recorder)).await.unwrap();
    recorder.note(|j| {
        for (i, step) in plan.steps.iter().enumerate() {
            let Op::Migrate(m) = &step.op else { continue };
            let id = journal::migration_id(&m.vhost, &m.old.name, &m.new.name);
            if outcome.done.contains(&i) {
                j.migrations.remove(&id);
            } else if let Some(r) = j.migrations.get_mut(&id) {
                r.state = match &outcome.failed {
                    Some((f, Failure::Paused(_))) if *f == i => MigrationState::Paused,
                    _ => MigrationState::Stopped,
                };
            }
        }
    });
    let (ended, detail) = match &outcome.failed {
        None => (RunOutcome::Complete, None),
        Some((_, f)) => (f.run_outcome(), Some(f.why())),
    };
    end(recorder, ended, detail).await;
    outcome
}

/// One `warren apply --auto-approve` of `files`, as commands/apply.rs
/// runs it.
async fn apply_files(m: &Memory, files: &str, events: Events) -> (Plan, Outcome) {
    apply_with(m, files, events, DRAIN).await
}

/// [`apply_files`] with its own drain settings.
async fn apply_with(m: &Memory, files: &str, events: Events, drain: Drain) -> (Plan, Outcome) {
    let prepared = prepare(m, files).await;
    let plan = prepared.planned.plan.clone();
    (plan, carry_out(m, prepared, events, drain).await)
}

fn migrations(plan: &Plan) -> impl Iterator<Item = &MigrationPlan> {
    plan.steps.iter().filter_map(|s| match &s.op {
        Op::Migrate(m) => Some(&**m),
        _ => None,
    })
}

/// The one migration a plan carries.
fn the_migration(plan: &Plan) -> MigrationPlan {
    let found: Vec<&MigrationPlan> = migrations(plan).collect();
    assert_eq!(found.len(), 1, "{plan:?}");
    found[0].clone()
}

/// Steps to stop a run after: the first and last of each stage, and those
/// around the drain wait (every step would take seconds).
fn several(m: &MigrationPlan) -> BTreeSet<usize> {
    let mut ks = BTreeSet::from([0, m.steps.len() - 1]);
    for (i, pair) in m.steps.windows(2).enumerate() {
        if pair[0].0 != pair[1].0 {
            ks.extend([i, i + 1]);
        }
    }
    let d = m.drain_step();
    ks.extend([d - 1, d, d + 1]);
    ks
}

async fn journal_of(m: &Memory) -> Journal {
    let (value, progress, _) = m.read_journal(&Place::Broker).await.unwrap();
    let mut journal = Journal::from_json(value).unwrap();
    journal::add_progress(&mut journal.migrations, &progress);
    journal
}

async fn live(m: &Memory) -> Vhost {
    let live = warren::live::from_broker(m, &[V.to_string()]).await.unwrap();
    assert!(live.notes.is_empty(), "{:?}", live.notes);
    live.topology.vhosts[V].clone()
}

fn bound_to(queue: &str) -> BTreeSet<Binding> {
    KEYS.iter()
        .map(|k| Binding {
            source: "events".into(),
            destination_kind: DestinationKind::Queue,
            destination: queue.into(),
            routing_key: k.to_string(),
            arguments: Table::new(),
        })
        .collect()
}

/// The vhost holds `queue` alone, bound as the files say, and no
/// scaffolding: no other exchange, no policy.
async fn assert_settled(m: &Memory, queue: &str) {
    let v = live(m).await;
    assert_eq!(v.queues.keys().collect::<Vec<_>>(), [queue]);
    assert_eq!(v.exchanges.keys().collect::<Vec<_>>(), ["events"]);
    assert_eq!(v.bindings, bound_to(queue));
    assert!(v.policies().is_empty(), "{:?}", v.policies());
}

/// A publisher of numbered messages to `events` and a consumer taking
/// them from the old and the new queue, each on a thread of its own while
/// the executor works.
struct Traffic {
    stop: Arc<AtomicBool>,
    publisher: JoinHandle<(u64, Vec<u64>)>,
    consumer: JoinHandle<()>,
    received: Arc<Mutex<BTreeMap<u64, Vec<&'static str>>>>,
    broker: Memory,
}

impl Traffic {
    fn start(m: &Memory) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let received: Arc<Mutex<BTreeMap<u64, Vec<&'static str>>>> = Arc::default();
        let (b, done) = (m.clone(), stop.clone());
        let publisher = std::thread::spawn(move || {
            let (mut sent, mut unroutable) = (0u64, Vec::new());
            while !done.load(Ordering::SeqCst) {
                sent += 1;
                let key = KEYS[(sent % 2) as usize];
                if !b.publish(V, "events", key, &Table::new(), &sent.to_string()).unwrap() {
                    unroutable.push(sent);
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            (sent, unroutable)
        });
        let (b, done, got) = (m.clone(), stop.clone(), received.clone());
        // Slower than the publisher: the old queue holds a backlog to drain.
        let consumer = std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                take_one(&b, &got);
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        Traffic { stop, publisher, consumer, received, broker: m.clone() }
    }

    /// Stops, takes what the queues still hold, and checks that every
    /// message arrived exactly once and none was unroutable. Returns how
    /// many each queue delivered.
    fn finish(self) -> BTreeMap<&'static str, usize> {
        self.stop.store(true, Ordering::SeqCst);
        let (sent, unroutable) = self.publisher.join().unwrap();
        self.consumer.join().unwrap();
        while take_one(&self.broker, &self.received) {}
        assert!(unroutable.is_empty(), "unroutable: {unroutable:?}");
        let received = self.received.lock().unwrap();
        let twice: Vec<_> = received.iter().filter(|(_, qs)| qs.len() > 1).collect();
        assert!(twice.is_empty(), "delivered more than once: {twice:?}");
        let missing: Vec<u64> = (1..=sent).filter(|n| !received.contains_key(n)).collect();
        assert!(missing.is_empty(), "lost {} of {sent}: {missing:?}", missing.len());
        let mut per_queue = BTreeMap::new();
        for qs in received.values() {
            *per_queue.entry(qs[0]).or_default() += 1;
        }
        per_queue
    }
}

/// Takes one message from each queue; whether either held one.
fn take_one(m: &Memory, got: &Mutex<BTreeMap<u64, Vec<&'static str>>>) -> bool {
    let mut any = false;
    for q in [OLD, NEW] {
        if let Some(msg) = m.get(V, q) {
            got.lock().unwrap().entry(msg.body.parse().unwrap()).or_default().push(q);
            any = true;
        }
    }
    any
}

/// Events that cut the lock's connection once migration step `k`
/// (counted from 0) has ended, and keep every event.
fn cut_after(m: &Memory, k: Option<usize>, seen: Arc<Mutex<Vec<Event>>>) -> Events {
    let m = m.clone();
    Events::new(move |e| {
        if let (Some(k), Event::Ended { step, .. }) = (k, e)
            && step.starts_with("migrate queue")
            && step.contains(&format!(": step {} of ", k + 1))
        {
            m.cut_lock(None);
        }
        seen.lock().unwrap().push(e.clone());
    })
}

/// A broker with the old topology applied, and traffic flowing.
async fn before_migration() -> (Memory, Traffic) {
    let m = Memory::new();
    let (_, outcome) = apply_files(&m, &CASE.v1, Events::ignored()).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    let traffic = Traffic::start(&m);
    // A backlog on the old queue.
    tokio::time::sleep(Duration::from_millis(10)).await;
    (m, traffic)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_apply_creates_the_topology_and_records_its_run() {
    let m = Memory::new();
    let (plan, outcome) = apply_files(&m, &CASE.v1, Events::ignored()).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.done.len(), plan.steps.len());
    assert_settled(&m, OLD).await;
    let j = journal_of(&m).await;
    let run = j.history.last().expect("the run in the history");
    assert_eq!(run.outcome, Some(RunOutcome::Complete));
    assert_eq!(run.steps.len(), plan.steps.len());
    let (again, _) = apply_files(&m, &CASE.v1, Events::ignored()).await;
    assert!(again.is_empty(), "nothing left to do: {:?}", again.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_under_traffic_delivers_every_message_once() {
    let (m, traffic) = before_migration().await;
    let (plan, outcome) = apply_files(&m, &CASE.v2, Events::ignored()).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    let migration = the_migration(&plan);
    assert_eq!((migration.old.kind, migration.new.kind), (QueueType::Classic, QueueType::Quorum));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let per_queue = traffic.finish();
    assert!(per_queue.get(OLD).is_some_and(|n| *n > 0) && per_queue.get(NEW).is_some_and(|n| *n > 0), "{per_queue:?}");
    assert_settled(&m, NEW).await;
    let j = journal_of(&m).await;
    assert!(j.migrations.is_empty(), "finished: {:?}", j.migrations);
    let run = j.history.last().unwrap();
    assert_eq!(run.outcome, Some(RunOutcome::Complete));
    assert!(run.doing.is_empty() && j.current.is_none());
}

/// The run stops when the lock's connection is cut after step `k`; the
/// journal records how far it got; the next apply resumes from there.
async fn stopped_after_step(k: usize) {
    let (m, traffic) = before_migration().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (plan, outcome) = apply_files(&m, &CASE.v2, cut_after(&m, Some(k), seen.clone())).await;
    let migration = the_migration(&plan);
    let total = migration.steps.len();
    assert!(matches!(outcome.failed, Some((_, Failure::LockLost))), "k={k}: {outcome:?}");
    let j = journal_of(&m).await;
    let id = journal::migration_id(V, OLD, NEW);
    let record = &j.migrations[&id];
    assert_eq!(record.done, k + 1, "k={k}: the journal records each step before the next");
    assert_eq!(record.steps, migration.steps.iter().map(|(_, s)| s.to_string()).collect::<Vec<_>>());
    assert_eq!(record.state, MigrationState::Stopped);
    assert_eq!(j.history.last().unwrap().outcome, Some(RunOutcome::LockLost));

    let seen = Arc::new(Mutex::new(Vec::new()));
    let (again, outcome) = apply_files(&m, &CASE.v2, cut_after(&m, None, seen.clone())).await;
    assert!(outcome.succeeded(), "k={k}: {outcome:?}");
    let resumed = seen.lock().unwrap().iter().find_map(|e| match e {
        Event::Resuming { at, .. } => Some(*at),
        _ => None,
    });
    // Once the old queue has no binding left to move, the files compile to
    // another, shorter migration, which starts over (each step is safe to
    // repeat); the same steps resume right after the one recorded.
    let same = migrations(&again).next().is_some_and(|again| again.steps == migration.steps);
    if same && k + 1 < total {
        assert_eq!(resumed, Some(k + 2), "k={k}: resumed right after the step recorded");
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    traffic.finish();
    assert_settled(&m, NEW).await;
    assert!(journal_of(&m).await.migrations.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_stopped_part_way_is_resumed_by_the_next() {
    let m = Memory::new();
    apply_files(&m, &CASE.v1, Events::ignored()).await;
    let migration = the_migration(&plan(&m, &CASE.v2).await.plan);
    let mut runs = tokio::task::JoinSet::new();
    for k in several(&migration) {
        runs.spawn(stopped_after_step(k));
    }
    while let Some(run) = runs.join_next().await {
        run.unwrap();
    }
}

/// A run that died after taking `k` steps and recording none of them (its
/// process killed): the next apply takes over and finds where to start
/// from the live state.
async fn unrecorded_steps(k: usize) {
    let (m, traffic) = before_migration().await;
    let dying = prepare(&m, &CASE.v2).await;
    let migration = the_migration(&dying.planned.plan);
    for (_, step) in &migration.steps[..k] {
        migrate::carry_out(&m, V, step, DRAIN, &Events::ignored()).await.unwrap();
    }
    // Its connection closes with it, and the lock with it.
    drop(dying);
    let (_, outcome) = apply_files(&m, &CASE.v2, Events::ignored()).await;
    assert!(outcome.succeeded(), "k={k}: {outcome:?}");
    traffic.finish();
    assert_settled(&m, NEW).await;
    let history = journal_of(&m).await.history;
    let outcomes: Vec<_> = history.iter().filter_map(|r| r.outcome.clone()).collect();
    assert_eq!(outcomes, [RunOutcome::Complete, RunOutcome::Interrupted, RunOutcome::Complete], "k={k}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn steps_taken_without_a_record_are_resumed_from_the_live_state() {
    let m = Memory::new();
    apply_files(&m, &CASE.v1, Events::ignored()).await;
    let migration = the_migration(&plan(&m, &CASE.v2).await.plan);
    assert!(matches!(migration.steps[migration.drain_step()].1, MigrationStep::AwaitDrained { .. }));
    let mut runs = tokio::task::JoinSet::new();
    for k in several(&migration).into_iter().filter(|k| *k <= migration.drain_step()) {
        runs.spawn(unrecorded_steps(k));
    }
    while let Some(run) = runs.join_next().await {
        run.unwrap();
    }
}

/// `warren abort` of a migration stopped after step `k`: the rollback
/// (`plan::compile_rollback`, `apply::rollback::run`) under the lock.
async fn aborted_after_step(k: usize) {
    let (m, traffic) = before_migration().await;
    let (plan, _) = apply_files(&m, &CASE.v2, cut_after(&m, Some(k), Arc::default())).await;
    let migration = the_migration(&plan);
    let id = journal::migration_id(V, OLD, NEW);

    let recorder = begin(&m, Place::Broker).await;
    let record = recorder.journal().migrations[&id].clone();
    assert!(record.done <= record.point_of_no_return, "k={k}: past the point of no return");
    let r = warren::plan::compile_rollback(&live(&m).await, &record).unwrap();
    let kept = apply::rollback::run(&m, &r, &Semaphore::new(1), &recorder).await.unwrap();
    end(recorder, RunOutcome::Aborted, kept.clone()).await;

    // Traffic goes to the old queue again.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let per_queue = traffic.finish();
    assert!(per_queue.get(OLD).is_some_and(|n| *n > 0), "{per_queue:?}");
    let v = live(&m).await;
    assert_eq!(v.bindings, bound_to(OLD), "k={k}");
    assert_eq!(v.exchanges.keys().collect::<Vec<_>>(), ["events"], "k={k}: the scaffolding is gone");
    assert!(v.policies().is_empty());
    assert!(v.queues.contains_key(OLD));
    // The new queue goes when it was empty; kept, it says why.
    assert_eq!(v.queues.contains_key(NEW), kept.is_some(), "k={k}: {kept:?}");
    let j = journal_of(&m).await;
    assert!(!j.migrations.contains_key(&id), "k={k}: the journal forgets it");
    assert_eq!(j.history.last().unwrap().outcome, Some(RunOutcome::Aborted));
    assert!(k < migration.point_of_no_return());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_takes_a_migration_in_flight_back_without_loss() {
    let m = Memory::new();
    apply_files(&m, &CASE.v1, Events::ignored()).await;
    let migration = the_migration(&plan(&m, &CASE.v2).await.plan);
    let mut runs = tokio::task::JoinSet::new();
    for k in several(&migration).into_iter().filter(|k| *k < migration.point_of_no_return()) {
        runs.spawn(aborted_after_step(k));
    }
    while let Some(run) = runs.join_next().await {
        run.unwrap();
    }
}

/// Why an apply paused, or a panic when it did not.
fn paused(outcome: &Outcome) -> &str {
    match &outcome.failed {
        Some((_, Failure::Paused(why))) => why,
        other => panic!("not paused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_waits_for_unacknowledged_messages_consumers_and_a_leader() {
    let m = Memory::new();
    apply_files(&m, &CASE.v1, Events::ignored()).await;
    let short = Drain { timeout: Duration::from_millis(30), ..DRAIN };
    // Consumers hold messages unacknowledged: the drain times out.
    m.set_consumers(V, OLD, 1).unwrap();
    m.set_unacked(V, OLD, 2).unwrap();
    let (_, outcome) = apply_with(&m, &CASE.v2, Events::ignored(), short).await;
    assert!(paused(&outcome).contains("0 ready and 2 unacknowledged"), "{}", paused(&outcome));
    let id = journal::migration_id(V, OLD, NEW);
    assert_eq!(journal_of(&m).await.migrations[&id].state, MigrationState::Paused);
    // Acknowledged, but the consumer stays on the old queue.
    m.set_unacked(V, OLD, 0).unwrap();
    let (_, outcome) = apply_with(&m, &CASE.v2, Events::ignored(), short).await;
    assert!(paused(&outcome).contains("1 consumer(s) are still attached"), "{}", paused(&outcome));
    m.set_consumers(V, OLD, 0).unwrap();
    let (_, outcome) = apply_with(&m, &CASE.v2, Events::ignored(), short).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_settled(&m, NEW).await;

    // A quorum queue without a leader reads empty: that proves nothing.
    let back = CASE.v2.replace("orders.v2", "orders.v3").replace("\"orders.v1\"", "\"orders.v2\"");
    m.set_leader(V, NEW, false).unwrap();
    let (_, outcome) = apply_with(&m, &back, Events::ignored(), short).await;
    assert!(paused(&outcome).contains("has no leader"), "{}", paused(&outcome));
    m.set_leader(V, NEW, true).unwrap();
    let (_, outcome) = apply_with(&m, &back, Events::ignored(), short).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(live(&m).await.queues.keys().collect::<Vec<_>>(), ["orders.v3"]);
}

/// Issue 27, item 9, for a queue dropped from the files: the plan found a
/// quorum queue empty and unused from counts that lag, so it deletes it
/// without --allow-destroy, but the broker does not guard that deletion
/// (quorum queues refuse if-empty): the queue itself is asked right
/// before, and a message that arrived since keeps it.
#[tokio::test]
async fn a_quorum_queue_that_took_a_message_since_the_plan_is_not_deleted_without_allow_destroy() {
    let m = Memory::new();
    let files = |extra: &str| format!("vhosts = [\"{V}\"]\n[queues.keep]\ntype = \"classic\"\n{extra}");
    let (_, first) = apply_files(&m, &files("[queues.\"q.gone\"]\ntype = \"quorum\"\n"), Events::ignored()).await;
    assert!(first.succeeded(), "{:?}", first.failed);
    let dropped = prepare(&m, &files("")).await;
    let deletes = |name: &str| matches!(name, "q.gone");
    assert!(
        dropped.planned.plan.steps.iter().any(|s| matches!(&s.op, Op::DeleteQueue { name, .. } if deletes(name))),
        "the plan does not delete it"
    );
    assert!(!dropped.planned.document.summary.requires_allow_destroy, "empty and unused when planned");
    assert!(m.publish(V, "", "q.gone", &Table::new(), "late").unwrap());
    let outcome = carry_out(&m, dropped, Events::ignored(), DRAIN).await;
    match outcome.failed {
        Some((_, Failure::Broker(e @ warren::broker::BrokerError::Unsafe { .. }))) => {
            assert!(e.to_string().contains("1 ready"), "{e}");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert!(live(&m).await.queues.contains_key("q.gone"), "deleted with a message in it");

    // Empty again: the next apply deletes it.
    assert!(m.get(V, "q.gone").is_some());
    let (_, last) = apply_files(&m, &files(""), Events::ignored()).await;
    assert!(last.succeeded(), "{:?}", last.failed);
    assert!(!live(&m).await.queues.contains_key("q.gone"));
}
