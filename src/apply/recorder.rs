//! Writes the journal while an apply runs, and watches the lock.
//!
//! Every change to the journal is made in memory and then written whole;
//! callers share writes: one whose change a later write already carried
//! does not write again. A migration's step is recorded in its own small
//! progress record (`journal::Progress`) before the migration's next step
//! starts, so a run killed at any point is at most one step ahead of its
//! record, and that step is safe to repeat. The journal takes the counts
//! in its next write; once that write is made as the run ends, the
//! progress records are deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::failure::Failure;
use crate::broker::{Broker, BrokerError, JournalSlot, Lock, RecordStore};
use crate::journal::{Journal, MigrationState, migration_id, now};
use crate::model::Place;
use crate::model::Progress;
use crate::plan::{Op, Plan};

/// Progress records written at once, as many as the steps' requests.
const WRITES: usize = 32;

#[derive(Clone)]
pub struct Recorder<B: Broker> {
    inner: Arc<Inner<B>>,
}

struct Inner<B> {
    broker: B,
    /// Where the journal and the lock are.
    place: Place,
    lock: Option<Lock>,
    /// The journal and how many changes were made to it.
    state: Mutex<(Journal, u64)>,
    /// How many changes the broker's copy holds, and where it is.
    written: tokio::sync::Mutex<(u64, JournalSlot)>,
    /// (vhost, migration id) -> the generations of its progress record.
    /// Each migration writes its own, one step after another.
    progress: Mutex<BTreeMap<(String, String), BTreeSet<u64>>>,
    /// Progress records being written at once, at most as many as steps.
    writing: tokio::sync::Semaphore,
    fault: Option<Fault>,
}

/// A test hook (`WARREN_TEST_FAULT`): the process dies right after a
/// migration step, before (`migration-step:K`) or after
/// (`migration-record:K`) its record is written, as a killed pod would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    BeforeRecord(usize),
    AfterRecord(usize),
}

impl Fault {
    fn from_env() -> Option<Fault> {
        let v = std::env::var("WARREN_TEST_FAULT").ok()?;
        let (kind, k) = v.split_once(':')?;
        let k = k.parse().ok()?;
        match kind {
            "migration-step" => Some(Fault::BeforeRecord(k)),
            "migration-record" => Some(Fault::AfterRecord(k)),
            _ => None,
        }
    }
}

impl<B: Broker> Recorder<B> {
    /// `lock` is held for the recorder's life; `None` only where no other
    /// apply can run (tests of the executor alone).
    pub fn new(broker: B, place: Place, lock: Option<Lock>, journal: (Journal, JournalSlot)) -> Recorder<B> {
        let (journal, mut slot) = journal;
        let progress = std::mem::take(&mut slot.progress);
        Recorder {
            inner: Arc::new(Inner {
                broker,
                place,
                lock,
                state: Mutex::new((journal, 0)),
                written: tokio::sync::Mutex::new((0, slot)),
                progress: Mutex::new(progress),
                writing: tokio::sync::Semaphore::new(WRITES),
                fault: Fault::from_env(),
            }),
        }
    }

    /// The journal as it stands in memory.
    pub fn journal(&self) -> Journal {
        self.inner.state.lock().expect("the journal's lock is never poisoned").0.clone()
    }

    /// The broker whose lock this run holds.
    pub fn broker(&self) -> &B {
        &self.inner.broker
    }

    /// Where this run keeps its records.
    pub fn place(&self) -> &Place {
        &self.inner.place
    }

    /// Stops a step from starting once the lock is gone: another apply may
    /// hold it by now.
    pub fn check(&self) -> Result<(), Failure> {
        match &self.inner.lock {
            Some(l) if !l.held() => Err(Failure::LockLost),
            _ => Ok(()),
        }
    }

    /// Changes the journal in memory only: the next write carries it.
    pub fn note(&self, change: impl FnOnce(&mut Journal)) {
        let mut s = self.inner.state.lock().expect("the journal's lock is never poisoned");
        change(&mut s.0);
        s.1 += 1;
    }

    /// Changes the journal and returns once the broker holds the change.
    pub async fn update(&self, change: impl FnOnce(&mut Journal)) -> Result<(), BrokerError> {
        let mine = {
            let mut s = self.inner.state.lock().expect("the journal's lock is never poisoned");
            change(&mut s.0);
            s.1 += 1;
            s.1
        };
        let mut written = self.inner.written.lock().await;
        if written.0 >= mine {
            return Ok(());
        }
        let (value, version) = {
            let s = self.inner.state.lock().expect("the journal's lock is never poisoned");
            (s.0.to_json(), s.1)
        };
        let (_, slot) = &mut *written;
        self.inner.broker.write_journal(&self.inner.place, &value, slot).await?;
        written.0 = version;
        Ok(())
    }

    /// Step `k` of migration `id` took effect: record it before the next,
    /// in the migration's progress record. A sequence with no migration
    /// in the journal (a rollback, which starts over when repeated) is
    /// only noted.
    pub async fn migration_step(&self, id: &str, k: usize, what: &str) -> Result<(), Failure> {
        if self.inner.fault == Some(Fault::BeforeRecord(k)) {
            std::process::abort();
        }
        let now = now();
        let mut progress = None;
        self.note(|j| {
            if let Some(m) = j.migrations.get_mut(id) {
                m.done = m.done.max(k + 1);
                m.updated.clone_from(&now);
                progress = Some(Progress {
                    vhost: m.vhost.clone(),
                    id: m.id.clone(),
                    done: m.done,
                    started: m.started.clone(),
                    fingerprint: m.fingerprint.clone(),
                    updated: now.clone(),
                });
            }
            if let Some(r) = &mut j.current {
                r.doing = what.to_string();
            }
        });
        if let Some(p) = progress {
            let key = (p.vhost.clone(), p.id.clone());
            let mut found = self.progress().remove(&key).unwrap_or_default();
            let permit = self.inner.writing.acquire().await.expect("the semaphore is never closed");
            let written = self.inner.broker.write_progress(&p, &mut found).await;
            drop(permit);
            self.progress().insert(key, found);
            written?;
        }
        if self.inner.fault == Some(Fault::AfterRecord(k)) {
            std::process::abort();
        }
        self.check()
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), BTreeSet<u64>>> {
        self.inner.progress.lock().expect("the progress records' lock is never poisoned")
    }

    /// Deletes the progress records, once the journal written last holds
    /// what they said.
    pub async fn clear_progress(&self) -> Result<(), BrokerError> {
        let found = std::mem::take(&mut *self.progress());
        for ((vhost, id), generations) in &found {
            self.inner.broker.delete_progress(vhost, id, generations).await?;
        }
        Ok(())
    }

    /// Gives the lock back (closing its connection), and closes the
    /// connections kept for drain readings.
    pub async fn release(self) {
        self.inner.broker.close().await;
        if let Ok(inner) = Arc::try_unwrap(self.inner)
            && let Some(lock) = inner.lock
        {
            lock.release().await;
        }
    }

    /// Records what this run will do before its first step: its plan
    /// (`fingerprint`, the vhosts it touches, a summary), and each
    /// migration it starts or resumes.
    pub async fn plan_started(&self, plan: &Plan, fingerprint: String, vhosts: Vec<String>) -> Result<(), BrokerError> {
        let s = plan.summary();
        let mut summary =
            format!("{} to add, {} to change, {} to destroy, {} to migrate", s.add, s.change, s.destroy, s.migrate);
        if s.rollback > 0 {
            summary += &format!(", {} to roll back", s.rollback);
        }
        let at = now();
        self.update(|j| {
            if let Some(run) = &mut j.current {
                run.plan = fingerprint;
                run.vhosts = vhosts;
                run.summary = summary;
                run.steps_total = plan.steps.len();
                run.doing = if plan.steps.is_empty() { "applying".into() } else { doing(plan, 0) };
            }
            for step in &plan.steps {
                if let Op::Migrate(m) = &step.op {
                    let id = migration_id(&m.vhost, &m.old.name, &m.new.name);
                    let record = super::migration_record(m, j.migrations.get(&id), &at);
                    j.migrations.insert(id, record);
                }
            }
        })
        .await
    }

    /// After the steps (those `done`, and the one that `failed`):
    /// finished migrations leave the journal, the others stay, saying why
    /// (written with the run's end).
    pub fn migrations_ended(&self, plan: &Plan, done: &[usize], failed: Option<&(usize, Failure)>) {
        let at = now();
        self.note(|j| {
            for (i, step) in plan.steps.iter().enumerate() {
                let Op::Migrate(m) = &step.op else { continue };
                let id = migration_id(&m.vhost, &m.old.name, &m.new.name);
                if done.contains(&i) {
                    j.migrations.remove(&id);
                } else if let Some(r) = j.migrations.get_mut(&id) {
                    r.updated = at.clone();
                    (r.state, r.detail) = match failed {
                        Some((f, Failure::Paused(why))) if *f == i => (MigrationState::Paused, Some(why.clone())),
                        Some((f, e)) if *f == i => (MigrationState::Stopped, Some(e.why())),
                        _ => (MigrationState::Stopped, Some("the apply stopped at another step".into())),
                    };
                }
            }
        });
    }
}

/// What the phase that starts at step `from` does, in words: its one step,
/// or its kind and how many steps it has.
pub(super) fn doing(plan: &Plan, from: usize) -> String {
    let phase = plan.steps[from].phase;
    let steps = plan.steps[from..].iter().take_while(|s| s.phase == phase).count();
    match steps {
        1 => plan.steps[from].op.to_string(),
        n => format!("{}: {n} steps, such as {}", phase.describe(), plan.steps[from].op),
    }
}
