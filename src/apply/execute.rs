//! Runs a plan's steps against the broker: phase by phase, the steps of a
//! phase concurrently (bounded), stopping at the first refusal.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::broker::{Broker, BrokerError};
use crate::plan::{Plan, Step};

/// How many requests are in flight at once within a phase.
pub const CONCURRENCY: usize = 32;

/// What happened to each step.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Indices of steps that were carried out.
    pub done: Vec<usize>,
    /// The first step that failed, and why.
    pub failed: Option<(usize, BrokerError)>,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.failed.is_none()
    }
}

/// Carries out `plan`'s steps in order. `passwords` holds, per user, the
/// password read from the environment.
pub async fn execute(
    broker: &Broker,
    plan: &Plan,
    guard_deletes: bool,
    passwords: &BTreeMap<String, String>,
    mut progress: impl FnMut(&Step, &Result<(), BrokerError>),
) -> Outcome {
    let mut outcome = Outcome::default();
    let limit = Arc::new(Semaphore::new(CONCURRENCY));
    let mut i = 0;
    while i < plan.steps.len() {
        // One phase at a time: a phase only starts when the previous one
        // has fully succeeded, so every intermediate state is valid.
        let phase = plan.steps[i].phase;
        let end = (i..plan.steps.len()).find(|j| plan.steps[*j].phase != phase).unwrap_or(plan.steps.len());
        let mut set = JoinSet::new();
        for index in i..end {
            let (broker, step, limit) = (broker.clone(), plan.steps[index].clone(), limit.clone());
            let password = password_of(&step, passwords);
            set.spawn(async move {
                let _permit = limit.acquire_owned().await.expect("the semaphore is never closed");
                let result = broker.run(&step.op, guard_deletes, password.as_deref()).await;
                (index, result)
            });
        }
        let mut results = Vec::new();
        while let Some(joined) = set.join_next().await {
            results.push(joined.expect("a step task does not panic"));
        }
        results.sort_by_key(|(index, _)| *index);
        for (index, result) in results {
            progress(&plan.steps[index], &result);
            match result {
                Ok(()) => outcome.done.push(index),
                Err(e) if outcome.failed.is_none() => outcome.failed = Some((index, e)),
                Err(_) => {}
            }
        }
        if outcome.failed.is_some() {
            break;
        }
        i = end;
    }
    outcome
}

fn password_of(step: &Step, passwords: &BTreeMap<String, String>) -> Option<String> {
    match &step.op {
        crate::plan::Op::PutUser { user } => passwords.get(&user.name).cloned(),
        _ => None,
    }
}
