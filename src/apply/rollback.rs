//! Carries out the rollback of a migration in flight (see
//! `plan::rollback`): for `warren abort` and for an apply of the files from
//! before the migration alike, with the steps a migration is made of. Each
//! step is recorded in the journal before the next; messages the new queue
//! already holds stay in it for its consumers: its retirement, the last
//! step, deletes it only when empty and unused.

use tokio::sync::Semaphore;

use super::event::Events;
use super::failure::Failure;
use super::migrate::{self, Drain, Sequence};
use super::recorder::Recorder;
use crate::broker::Broker;
use crate::plan::RollbackPlan;

/// Runs the rollback's steps, each holding a permit of `limit` but the
/// wait for a policy, and drops the migration from the journal. Says why
/// the new queue was kept, if it was.
pub async fn run<B: Broker>(
    broker: &B,
    r: &RollbackPlan,
    limit: &Semaphore,
    recorder: &Recorder<B>,
) -> Result<Option<String>, Failure> {
    // Not the migration's own record: its count of steps done stays as it
    // was until the rollback is complete.
    let record = format!("{}.abort", r.id);
    let steps = Sequence {
        vhost: &r.vhost,
        label: format!("roll back migration {}", r.id),
        record: &record,
        steps: r.steps.iter().collect(),
    };
    // No drain wait among them; nobody watches them step by step.
    let kept = migrate::run_steps(broker, &steps, 0, Drain::default(), limit, recorder, &Events::ignored()).await?;
    recorder.note(|j| {
        j.migrations.remove(&r.id);
    });
    Ok(kept.into_iter().next())
}
