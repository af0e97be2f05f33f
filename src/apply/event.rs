//! What apply tells whoever watches it while it works. Apply computes every
//! figure here (durations, counts, step numbers); the watcher
//! (`crate::progress`) only prints them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::failure::Failure;
use crate::journal::StepOutcome;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A step starts: a plan step, or one step of a migration.
    Started { step: String },
    /// It ended, after `took`.
    Ended { step: String, outcome: StepOutcome, took: Duration },
    /// A migration picks up where an earlier run left it: at step `at`
    /// (counted from 1) of `total`, which does `step`.
    Resuming { vhost: String, old: String, new: String, at: usize, total: usize, step: String },
    /// One reading of a drain wait.
    Draining(DrainReading),
    /// The drain wait of `old` is over, drained or not.
    DrainOver { vhost: String, old: String },
    /// A phase's `steps` steps all ended, the last after `took` from the
    /// phase's start.
    PhaseEnded { phase: &'static str, steps: usize, took: Duration },
    /// What the user must hear whatever the verbosity: why a step left the
    /// broker as it is.
    Said(String),
}

/// How the old queue of a migration stands while apply waits for it.
#[derive(Debug, Clone, PartialEq)]
pub struct DrainReading {
    pub vhost: String,
    pub old: String,
    pub ready: u64,
    pub unacked: u64,
    pub consumers: u64,
    /// Messages leaving per second over the last few readings.
    pub rate: f64,
    /// Why these readings prove nothing (a quorum queue without a leader).
    pub leaderless: Option<String>,
    pub elapsed: Duration,
    pub timeout: Duration,
}

/// Where a run's events go; cloned into every task of the run.
#[derive(Clone)]
pub struct Events(Arc<dyn Fn(&Event) + Send + Sync>);

impl Events {
    pub fn new(watch: impl Fn(&Event) + Send + Sync + 'static) -> Events {
        Events(Arc::new(watch))
    }

    /// Nobody watches.
    pub fn ignored() -> Events {
        Events::new(|_| {})
    }

    pub fn send(&self, event: Event) {
        (self.0)(&event)
    }

    /// Runs one step between its `Started` and `Ended` events.
    pub async fn step<F>(&self, step: String, work: F) -> Result<(), Failure>
    where
        F: Future<Output = Result<(), Failure>>,
    {
        self.send(Event::Started { step: step.clone() });
        let began = Instant::now();
        let result = work.await;
        let outcome = result.as_ref().err().map_or(StepOutcome::Done, Failure::outcome);
        self.send(Event::Ended { step, outcome, took: began.elapsed() });
        result
    }
}
