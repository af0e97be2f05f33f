//! Carries out the rollback of a migration in flight (see
//! `plan::rollback`): for `warren abort` and for an apply of the files from
//! before the migration alike. Each step is recorded in the journal before
//! the next; messages the new queue already holds stay in it for its
//! consumers, and it is deleted only when empty and unused.

use tokio::sync::Semaphore;

use super::failure::Failure;
use super::migrate::{self, Emptiness};
use super::recorder::Recorder;
use crate::broker::Broker;
use crate::model::{Queue, QueueType};
use crate::plan::{MigrationStep as Step, Op, RollbackPlan};

/// Runs the rollback's steps, each holding a permit of `limit` but the
/// wait for a policy, then deletes the new queue when it is empty and
/// unused, and drops the migration from the journal. Says why the new
/// queue was kept, if it was.
pub async fn run<B: Broker>(
    broker: &B,
    r: &RollbackPlan,
    limit: &Semaphore,
    recorder: &Recorder<B>,
) -> Result<Option<String>, Failure> {
    // Not the migration's own record: its count of steps done stays as it
    // was until the rollback is complete.
    let record = format!("{}.abort", r.id);
    for (i, step) in r.steps.iter().enumerate() {
        recorder.check()?;
        let waits = matches!(step, Step::VerifyPolicy { .. });
        let _permit = if waits { None } else { Some(limit.acquire().await.expect("the semaphore is never closed")) };
        migrate::topology_step(broker, &r.vhost, step).await?;
        let what = format!("roll back migration {}: step {} of {}: {step}", r.id, i + 1, r.steps.len());
        recorder.migration_step(&record, i, &what).await?;
    }
    let kept = match &r.new_queue {
        Some(q) => retire_new(broker, &r.vhost, q).await,
        None => None,
    };
    recorder.note(|j| {
        j.migrations.remove(&r.id);
    });
    Ok(kept)
}

/// Deletes the new queue when it is empty and unused (the same look as
/// before retiring an old queue); otherwise says why it stays.
async fn retire_new(broker: &impl Broker, vhost: &str, q: &Queue) -> Option<String> {
    let kept = |why: String| Some(format!("Queue \"{}\" was kept: {why}", q.name));
    match migrate::empty_and_unused(broker, vhost, &q.name, q.kind).await {
        Ok(Emptiness::Empty) => {
            let op = Op::DeleteQueue { vhost: vhost.into(), name: q.name.clone(), kind: q.kind };
            match super::op::run(broker, &op, q.kind == QueueType::Classic, None).await {
                Ok(()) => None,
                Err(e) => kept(format!("{e}.")),
            }
        }
        Ok(Emptiness::Busy(r)) => kept(format!(
            "it holds {} ready and {} unacknowledged message(s) that arrived during the migration, and has {} consumer(s). Nothing routes to it any more; delete it once its consumers have drained it.",
            r.ready, r.unacked, r.consumers
        )),
        Ok(Emptiness::Leaderless(why)) => kept(format!(
            "it is a quorum queue without a leader ({why}), so its reading of 0 messages proves nothing. Nothing routes to it any more; delete it once it is back and empty."
        )),
        Ok(Emptiness::Gone) => None,
        Err(e) => kept(format!("could not read its counts: {e}.")),
    }
}
