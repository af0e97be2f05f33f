//! warren's journal: what the apply holding the lock is doing, the
//! migrations in flight and how far each got, and a bounded history of
//! runs. It lives in the broker as one global parameter with a fixed name
//! (each name becomes an Erlang atom, `rabbit_runtime_parameters`), written only by the
//! lock holder, since the broker offers no compare-and-set.
//!
//! A migration's steps are counted apart from it, in a small progress
//! record per migration (`model::RecordKind::Progress`) written after each
//! step: the journal holds every migration in flight, and rewriting it
//! after every step of each made a step's cost grow with their number. The
//! journal's own count is brought up to date as the run ends.
//!
//! This module is the record's shape and the pure changes to it; writing
//! it is `apply::recorder`'s job.

mod actor;
mod time;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::scaffold::Source;
use crate::model::{Binding, Progress, RECORD_FORMAT, RecordError, RecordKind, exported_bindings};

pub use actor::actor;
pub use time::now;

/// Runs kept in the history, oldest dropped first.
pub const HISTORY_LIMIT: usize = 30;
/// Steps kept per run in the history; the rest are counted.
pub const STEP_LIMIT: usize = 60;

/// The journal; its JSON carries [`RECORD_FORMAT`] too (see [`Journal::to_json`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// Bumped by every apply that takes the lock.
    pub generation: u64,
    /// The run holding the lock, or one that died holding it.
    pub current: Option<Run>,
    /// Migrations started and not finished, by id.
    pub migrations: BTreeMap<String, Migration>,
    /// Finished runs, oldest first.
    pub history: Vec<Run>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    /// user@host
    pub by: String,
    pub version: String,
    pub started: String,
    pub ended: Option<String>,
    /// The broker, without credentials.
    pub origin: String,
    /// The plan's fingerprint.
    pub plan: String,
    pub vhosts: Vec<String>,
    /// "2 to add, 1 to change, 0 to destroy, 1 to migrate"
    pub summary: String,
    pub steps_total: usize,
    pub steps_done: usize,
    /// The step being carried out, in words.
    pub doing: String,
    /// Each step's outcome, the first [`STEP_LIMIT`] of them.
    pub steps: Vec<StepRecord>,
    pub outcome: Option<RunOutcome>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub what: String,
    pub outcome: StepOutcome,
}

/// An enum stored as a word; a word this warren does not write is a
/// malformed record.
macro_rules! words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;

            fn try_from(word: String) -> Result<Self, String> {
                match word.as_str() {
                    $($word => Ok($name::$variant),)+
                    _ => Err(format!("unknown {} \"{word}\"", stringify!($name))),
                }
            }
        }

        impl From<$name> for String {
            fn from(o: $name) -> String {
                o.as_str().to_string()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

words! {
    /// How one step of a run ended.
    StepOutcome {
        Done => "done",
        /// It waits (a migration's drain); a later apply resumes it.
        Paused => "paused",
        /// A check right before it refused it.
        Refused => "refused",
        Failed => "failed",
        /// The lock's connection closed before it could finish.
        LockLost => "lock lost",
    }
}

words! {
    /// How a run ended.
    RunOutcome {
        Complete => "complete",
        /// A migration waits; a later apply resumes it.
        Paused => "paused",
        Refused => "refused",
        Failed => "failed",
        LockLost => "lock lost",
        /// It died holding the lock; the next run took over.
        Interrupted => "interrupted",
        Aborted => "aborted",
        Adopted => "adopted",
    }
}

words! {
    /// Where a migration in flight stands.
    #[derive(Default)]
    MigrationState {
        #[default]
        Running => "running",
        /// It waits for its old queue to drain; a later apply resumes it.
        Paused => "paused",
        /// Its run stopped (a failure, or another step's).
        Stopped => "stopped",
    }
}

/// One migration in flight: enough to resume it, show it, and roll it back
/// without the files that declared it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    pub id: String,
    pub vhost: String,
    pub old: String,
    pub new: String,
    /// Of the compiled steps: a later run resumes by `done` only when it
    /// compiles the same steps.
    pub fingerprint: String,
    pub steps: Vec<String>,
    /// How many steps are known to be done, in order.
    pub done: usize,
    /// Index of the step that deletes the old queue.
    pub point_of_no_return: usize,
    /// The exchanges that routed to the old queue, with their scaffolding,
    /// as the migration was compiled.
    pub sources: Vec<Source>,
    /// The new queue's bindings with no counterpart on the old one, and
    /// the old one's with none on the new.
    #[serde(with = "exported_bindings")]
    pub added: Vec<Binding>,
    #[serde(with = "exported_bindings")]
    pub dropped: Vec<Binding>,
    /// The new queue as the files declared it ([`declaration`]): files
    /// that declare it otherwise change the migration.
    pub queue: serde_json::Value,
    pub started: String,
    pub updated: String,
    pub state: MigrationState,
    pub detail: Option<String>,
}

impl Journal {
    /// Reads the broker's value; `None` (no journal yet) is an empty one.
    pub fn from_json(value: Option<serde_json::Value>) -> Result<Journal, RecordError> {
        match value {
            None => Ok(Journal::default()),
            Some(v) => {
                RecordError::check_format(RecordKind::Journal, &v)?;
                Ok(serde_json::from_value::<Journal>(v).map_err(|e| e.to_string())?)
            }
        }
    }

    /// The record's JSON: the journal, with the format it is written in.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::to_value(self).expect("the journal always serialises");
        out["format"] = RECORD_FORMAT.into();
        out
    }

    /// A new holder of the lock: a run the last holder left behind ended
    /// when that holder died.
    pub fn take_over(&mut self, now: &str) -> Option<Run> {
        self.generation += 1;
        let mut dead = self.current.take()?;
        dead.ended = Some(now.to_string());
        dead.outcome = Some(RunOutcome::Interrupted);
        dead.detail = Some(format!("the apply stopped during: {}", dead.doing));
        for m in self.migrations.values_mut().filter(|m| m.state == MigrationState::Running) {
            m.state = MigrationState::Stopped;
            m.detail = Some("the apply that ran it was interrupted".into());
        }
        self.push_history(dead.clone());
        Some(dead)
    }

    /// The number of the run that takes the lock now: the one after the
    /// newest run in the history. A run that changes nothing leaves no
    /// trace and so takes no number, and the history's runs follow one
    /// another.
    pub fn next_run_id(&self) -> String {
        let last = self.history.iter().rev().find_map(|r| r.id.parse::<u64>().ok()).unwrap_or(0);
        (last + 1).to_string()
    }

    /// A run ends: it goes to the history, which keeps the newest runs.
    pub fn finish(&mut self, outcome: RunOutcome, detail: Option<String>, now: &str) {
        if let Some(mut run) = self.current.take() {
            run.ended = Some(now.to_string());
            run.outcome = Some(outcome);
            run.detail = detail;
            run.doing.clear();
            self.push_history(run);
        }
    }

    /// Drops migrations the live state shows finished (old queue gone, new
    /// one there): a run that died right after the deletion left them.
    /// Vhosts `live` does not hold are left alone.
    pub fn forget_finished(&mut self, live: &crate::model::Topology) {
        self.migrations.retain(|_, m| !m.finished(live));
    }

    /// Drops the migrations whose vhost `live` does not list, and returns
    /// them: deleting a vhost deletes both queues, their messages and the
    /// migration's progress records, so nothing is left to go on with or
    /// roll back. Only for a listing of every vhost (an administrator's):
    /// other users' listings leave out the vhosts they have no permissions on.
    pub fn forget_vanished(&mut self, live: &crate::model::Topology) -> Vec<Migration> {
        let (gone, kept) =
            std::mem::take(&mut self.migrations).into_iter().partition(|(_, m)| !live.vhosts.contains_key(&m.vhost));
        self.migrations = kept;
        gone.into_values().collect()
    }

    fn push_history(&mut self, run: Run) {
        self.history.push(run);
        let excess = self.history.len().saturating_sub(HISTORY_LIMIT);
        self.history.drain(..excess);
    }
}

/// The last apply that reached a vhost: who ran it and when it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastApply {
    pub by: String,
    pub at: String,
}

impl Journal {
    /// For each vhost, the newest run in the history that applied to it
    /// and recorded what it applied (an interrupted run recorded nothing).
    pub fn last_applies(&self) -> BTreeMap<String, LastApply> {
        let mut out = BTreeMap::new();
        let applied = |r: &&Run| {
            matches!(
                r.outcome,
                Some(RunOutcome::Complete | RunOutcome::Paused | RunOutcome::Refused | RunOutcome::Failed)
            )
        };
        for run in self.history.iter().filter(applied) {
            let at = run.ended.clone().unwrap_or_else(|| run.started.clone());
            for v in &run.vhosts {
                out.insert(v.clone(), LastApply { by: run.by.clone(), at: at.clone() });
            }
        }
        out
    }
}

/// `into` with each vhost's newer apply of `more`: several journals (one
/// per project) may each know of one.
pub fn newest_applies(into: &mut BTreeMap<String, LastApply>, more: BTreeMap<String, LastApply>) {
    for (v, a) in more {
        if into.get(&v).is_none_or(|old| old.at < a.at) {
            into.insert(v, a);
        }
    }
}

/// Brings the migrations' counts of steps done up to their progress
/// records. A record counts only for the very migration that wrote it: the
/// same vhost, start and steps.
pub fn add_progress<'a>(
    migrations: &mut BTreeMap<String, Migration>,
    progress: impl IntoIterator<Item = &'a Progress>,
) {
    for p in progress {
        if let Some(m) = migrations.get_mut(&p.id)
            && m.vhost == p.vhost
            && m.started == p.started
            && m.fingerprint == p.fingerprint
            && p.done > m.done
        {
            m.done = p.done.min(m.steps.len());
            m.updated = p.updated.clone();
        }
    }
}

impl Migration {
    /// Whether the live state shows it finished: the old queue gone, the
    /// new one there. Unknown (false) when `live` lacks its vhost.
    pub fn finished(&self, live: &crate::model::Topology) -> bool {
        live.vhosts
            .get(&self.vhost)
            .is_some_and(|v| !v.queues.contains_key(&self.old) && v.queues.contains_key(&self.new))
    }
}

/// What the journal keeps of a migration's new queue, to tell whether the
/// files still declare the same one.
pub fn declaration(q: &crate::model::Queue) -> serde_json::Value {
    let arguments = serde_json::Value::from(&crate::model::Value::Table(q.arguments.clone()));
    serde_json::json!({ "type": q.kind.as_str(), "durable": q.durable, "auto_delete": q.auto_delete, "arguments": arguments })
}

impl Run {
    /// Records a step's outcome, keeping at most [`STEP_LIMIT`] of them.
    pub fn record(&mut self, what: String, outcome: StepOutcome) {
        if outcome == StepOutcome::Done {
            self.steps_done += 1;
        }
        if self.steps.len() < STEP_LIMIT {
            self.steps.push(StepRecord { what, outcome });
        }
    }
}

/// A short, stable id for the migration of `old` into `new`: what
/// `warren abort` takes.
pub fn migration_id(vhost: &str, old: &str, new: &str) -> String {
    use sha2::{Digest, Sha256};
    let sum = Sha256::digest(format!("{vhost}\n{old}\n{new}").as_bytes());
    sum.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> Run {
        Run { id: id.into(), doing: "step 3".into(), ..Run::default() }
    }

    #[test]
    fn a_dead_holders_run_becomes_interrupted_history() {
        let mut j = Journal::from_json(None).unwrap();
        j.current = Some(run("r1"));
        j.migrations.insert("m".into(), Migration { state: MigrationState::Running, ..Migration::default() });
        let dead = j.take_over("t").expect("there was a run");
        assert_eq!(dead.outcome, Some(RunOutcome::Interrupted));
        assert_eq!(j.generation, 1);
        assert!(j.current.is_none());
        assert_eq!(j.history.len(), 1);
        assert_eq!(j.migrations["m"].state, MigrationState::Stopped);
        assert!(j.take_over("t").is_none(), "nothing left behind the second time");
        assert_eq!(j.generation, 2);
    }

    #[test]
    fn runs_are_numbered_one_after_another_in_the_history() {
        let mut j = Journal::default();
        assert_eq!(j.next_run_id(), "1");
        // A run that changed nothing leaves the history as it was: the next
        // run takes the same number.
        j.take_over("t");
        j.current = Some(run(&j.next_run_id()));
        j.current = None;
        j.take_over("t");
        assert_eq!(j.next_run_id(), "1");
        j.current = Some(run(&j.next_run_id()));
        j.finish(RunOutcome::Complete, None, "t");
        // One that died holding the lock keeps its number; the next follows.
        j.take_over("t");
        j.current = Some(run(&j.next_run_id()));
        j.take_over("t");
        j.current = Some(run(&j.next_run_id()));
        j.finish(RunOutcome::Complete, None, "t");
        let ids: Vec<&str> = j.history.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3"]);
        assert_eq!(j.generation, 4, "the lock's generation still counts every holder");
    }

    #[test]
    fn the_history_and_each_runs_steps_are_bounded() {
        let mut j = Journal::from_json(None).unwrap();
        for i in 0..HISTORY_LIMIT + 5 {
            let mut r = run(&i.to_string());
            for s in 0..STEP_LIMIT + 10 {
                r.record(format!("step {s}"), StepOutcome::Done);
            }
            j.current = Some(r);
            j.finish(RunOutcome::Complete, None, "t");
        }
        assert_eq!(j.history.len(), HISTORY_LIMIT);
        assert_eq!(j.history[0].id, "5", "the oldest went first");
        assert_eq!(j.history[0].steps.len(), STEP_LIMIT);
        assert_eq!(j.history[0].steps_done, STEP_LIMIT + 10, "every step is counted");
        let back = Journal::from_json(Some(j.to_json())).unwrap();
        assert_eq!(back, j, "round trip");
    }

    #[test]
    fn a_migration_is_forgotten_once_the_live_state_shows_it_finished() {
        use crate::model::{Queue, QueueType, Topology, Vhost};
        let queue = |n: &str| Queue {
            name: n.into(),
            kind: QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: None,
        };
        let mut j = Journal::default();
        let m = |v: &str| Migration { vhost: v.into(), old: "p".into(), new: "q".into(), ..Migration::default() };
        j.migrations.insert("done".into(), m("v"));
        j.migrations.insert("elsewhere".into(), m("w"));
        let mut v = Vhost::new("v");
        v.queues.insert("q".into(), queue("q"));
        let mut live = Topology::default();
        live.vhosts.insert("v".into(), v.clone());
        j.forget_finished(&live);
        assert_eq!(j.migrations.keys().collect::<Vec<_>>(), ["elsewhere"], "unread vhosts are kept");
        v.queues.insert("p".into(), queue("p"));
        live.vhosts.insert("v".into(), v);
        j.migrations.insert("going".into(), m("v"));
        j.forget_finished(&live);
        assert!(j.migrations.contains_key("going"), "the old queue is still there");
    }

    #[test]
    fn a_migration_is_forgotten_once_its_vhost_is_gone() {
        use crate::model::{Topology, Vhost};
        let mut j = Journal::default();
        let m = |v: &str| Migration { vhost: v.into(), old: "p".into(), new: "q".into(), ..Migration::default() };
        j.migrations.insert("deleted".into(), m("gone"));
        j.migrations.insert("listed".into(), m("v"));
        let mut live = Topology::default();
        live.vhosts.insert("v".into(), Vhost::new("v"));
        let gone = j.forget_vanished(&live);
        assert_eq!(gone.iter().map(|m| m.vhost.as_str()).collect::<Vec<_>>(), ["gone"]);
        assert_eq!(
            j.migrations.keys().collect::<Vec<_>>(),
            ["listed"],
            "a listed vhost's migration stays, empty or not"
        );
    }

    #[test]
    fn step_outcomes_are_words_and_unknown_words_are_refused() {
        let step = |outcome: &str| serde_json::json!({"what": "bind", "outcome": outcome});
        let read = |outcome: &str| serde_json::from_value::<StepRecord>(step(outcome)).map(|s| s.outcome);
        assert_eq!(read("paused").unwrap(), StepOutcome::Paused);
        assert!(read("not run").unwrap_err().to_string().contains("unknown StepOutcome \"not run\""));
        let paused = StepRecord { what: "bind".into(), outcome: StepOutcome::Paused };
        assert_eq!(serde_json::to_value(&paused).unwrap(), step("paused"));
        assert_eq!(StepOutcome::LockLost.to_string(), "lock lost");
    }

    #[test]
    fn a_journal_of_another_format_is_refused_before_anything_else_in_it_is_read() {
        // As warren wrote journals before records shared one format, and one of a later format.
        for (format, history) in [(1, serde_json::json!([{"id": "12"}])), (4, serde_json::json!("anything"))] {
            let v = serde_json::json!({"format": format, "generation": 1, "current": null, "history": history});
            let e = Journal::from_json(Some(v)).unwrap_err();
            assert_eq!(e, RecordError::OtherFormat { kind: RecordKind::Journal, found: Some(format.to_string()) });
            let said = format!("record format {format}, and this warren reads format {RECORD_FORMAT}: finish or abort");
            assert!(e.to_string().contains(&said), "{e}");
        }
        let j = Journal::from_json(None).unwrap();
        assert_eq!(j.to_json()["format"], RECORD_FORMAT);
        let mut v = j.to_json();
        v.as_object_mut().unwrap().remove("history");
        let e = Journal::from_json(Some(v)).unwrap_err();
        assert!(matches!(&e, RecordError::Malformed(m) if m.contains("missing field `history`")), "{e}");
    }

    #[test]
    fn a_migration_record_reads_back_as_written() {
        // A source's exchange by name and type, its bindings as an export has them.
        let written = serde_json::json!({
            "id": "ab12cd34", "vhost": "v", "old": "p", "new": "q", "fingerprint": "0011223344556677",
            "steps": ["declare internal topic exchange \"warren.migrate.p.x\""], "done": 1, "point_of_no_return": 9,
            "sources": [{
                "exchange": "x", "kind": "topic", "interposed": "warren.migrate.p.x",
                "alternate": "warren.migrate.p.x.ae",
                "bindings": [{"source": "x", "destination": "p", "destination_type": "queue", "routing_key": "k.#", "arguments": {"x-match": "all"}}]
            }],
            "added": [{"source": "y", "destination": "q", "destination_type": "queue", "routing_key": "", "arguments": {}}],
            "dropped": [],
            "queue": {"type": "quorum", "durable": true, "auto_delete": false, "arguments": {}},
            "started": "t0", "updated": "t1", "state": "paused", "detail": "waiting"
        });
        let m: Migration = serde_json::from_value(written.clone()).unwrap();
        let s = &m.sources[0];
        assert_eq!((s.exchange.as_str(), s.kind.as_str(), s.bindings[0].routing_key.as_str()), ("x", "topic", "k.#"));
        assert_eq!(serde_json::to_value(&m).unwrap(), written, "written back as it was read");
    }

    #[test]
    fn a_progress_record_counts_only_for_the_migration_that_wrote_it() {
        let m = Migration {
            id: "m".into(),
            vhost: "v".into(),
            steps: vec!["a".into(); 5],
            done: 1,
            started: "t0".into(),
            fingerprint: "f".into(),
            ..Migration::default()
        };
        let p = |done: usize, started: &str, fingerprint: &str| Progress {
            vhost: "v".into(),
            id: "m".into(),
            done,
            started: started.into(),
            fingerprint: fingerprint.into(),
            updated: "t9".into(),
        };
        let mut migrations = BTreeMap::from([("m".to_string(), m)]);
        add_progress(&mut migrations, &[p(4, "t-earlier", "f"), p(4, "t0", "other steps")]);
        assert_eq!(migrations["m"].done, 1, "left by another migration with the same id");
        add_progress(&mut migrations, &[p(3, "t0", "f"), p(0, "t0", "f")]);
        assert_eq!((migrations["m"].done, migrations["m"].updated.as_str()), (3, "t9"));
        add_progress(&mut migrations, &[p(2, "t0", "f"), p(9, "t0", "f")]);
        assert_eq!(migrations["m"].done, 5, "never fewer, never more than its steps");
        let back = Progress::from_json("v", "m", 3, p(3, "t0", "f").to_json()).unwrap();
        assert_eq!(back, p(3, "t0", "f"), "round trip");
    }

    #[test]
    fn migration_ids_are_short_and_stable() {
        let a = migration_id("v", "p", "q");
        assert_eq!(a.len(), 8);
        assert_eq!(a, migration_id("v", "p", "q"));
        assert_ne!(a, migration_id("v", "q", "p"));
    }
}
