//! `warren abort ID`: roll an in-flight migration back to the topology it
//! started from, under the lock, while traffic flows (see
//! `plan::rollback`), with the steps an apply of the files from before the
//! migration takes (`apply::rollback`). Messages the new queue already
//! holds stay in it for its consumers; the new queue is deleted only when
//! empty and unused.

use std::time::Duration;

use tokio::sync::Semaphore;

use super::live_side;
use super::session::{self, Ended};
use crate::apply::Recorder;
use crate::apply::rollback;
use crate::broker::{Broker, BrokerError, RecordStore};
use crate::cli::Connection;
use crate::error::{self, Done, Error, Kind};
use crate::journal::{Journal, RunOutcome};
use crate::model::Place;
use crate::plan::compile_rollback;
use crate::writer::Writer;

pub fn run(
    id: &str,
    auto_approve: bool,
    lock_timeout: Duration,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    let broker = live_side::open(connection)?;
    abort(&broker, id, auto_approve, lock_timeout, out)
}

/// Rolls migration `id` back on `broker`.
pub fn abort<B: Broker>(
    broker: &B,
    id: &str,
    auto_approve: bool,
    lock_timeout: Duration,
    out: &Writer,
) -> error::Result {
    super::block_on(async {
        // The lock and the journal of the records that hold the migration.
        let place = place_of(broker, id).await.map_err(super::unchanged)?;
        let doing = format!("aborting migration {id}");
        session::locked(broker, place, lock_timeout, &doing, out, async |recorder| {
            locked(id, auto_approve, broker, recorder, out).await
        })
        .await
    })
}

/// Where the journal that records migration `id` is; broker-wide when no
/// journal this user reads has it (the run then says it is not in flight).
async fn place_of(broker: &impl Broker, id: &str) -> Result<Place, BrokerError> {
    let found = broker
        .journals()
        .await?
        .into_iter()
        .find(|f| Journal::from_json(Some(f.value.clone())).is_ok_and(|j| j.migrations.contains_key(id)));
    Ok(found.map_or(Place::Broker, |f| f.place))
}

async fn locked<B: Broker>(
    id: &str,
    auto_approve: bool,
    broker: &B,
    recorder: &Recorder<B>,
    out: &Writer,
) -> (error::Result, Ended) {
    let Some(m) = recorder.journal().migrations.get(id).cloned() else {
        let error = Error::invalid().line(format!(
            "error: no migration \"{id}\" is in flight\n  help: `warren status` lists the in-flight migrations and their ids"
        ));
        return (Err(error), None);
    };
    if m.done > m.point_of_no_return {
        let error = Error::new(Kind::Refused).line(format!(
            "Refused: migration {id} is past its point of no return: queue \"{}\" was deleted at step {}. Run apply to finish it.",
            m.old,
            m.point_of_no_return + 1
        ));
        return (Err(error), None);
    }
    let vhost = match read_vhost(broker, &m.vhost).await {
        Ok(v) => v,
        Err(e) => {
            let line = format!("error: {e}\nNothing was changed.");
            return (Err(Error::new(Kind::Broker(e)).line(line)), None);
        }
    };
    let r = match compile_rollback(&vhost, &m) {
        Ok(r) => r,
        Err(why) => return (Err(Error::new(Kind::Refused).line(format!("Refused: {why}."))), None),
    };
    out.outln(format!(
        "warren will roll back migration {id} in vhost \"{}\": queue \"{}\" >> \"{}\", back to \"{}\".",
        m.vhost, m.old, m.new, m.old
    ));
    for (i, s) in r.steps_back().iter().enumerate() {
        out.outln(format!("  {:>2}. {s}", i + 1));
    }
    out.outln(format!(
        "  then delete queue \"{}\" if it is empty and unused; messages it holds stay in it for its consumers.",
        m.new
    ));
    if !auto_approve
        && !out.confirm(&format!("Do you want to roll this migration back on {}?", broker.origin()), "abort")
    {
        return (Err(Error::new(Kind::Declined)), None);
    }
    recorder.note(|j| {
        if let Some(run) = &mut j.current {
            run.vhosts = vec![m.vhost.clone()];
            run.summary = format!("abort migration {id} (\"{}\" >> \"{}\")", m.old, m.new);
            run.steps_total = r.steps.len();
        }
    });
    let kept = match rollback::run(broker, &r, &Semaphore::new(1), recorder).await {
        Ok(kept) => kept,
        Err(e) => {
            let why = e.why();
            let error = Error::new(Kind::Stopped(e)).line(format!(
                "\nAbort stopped: {why}\nRun `warren abort {id}` again to finish rolling back, or `warren apply` to go forward."
            ));
            return (Err(error), Some((RunOutcome::Failed, Some(why))));
        }
    };
    out.outln(format!(
        "\nAbort complete: traffic for \"{}\" goes to \"{}\" again, as before the migration.",
        m.old, m.old
    ));
    if let Some(why) = &kept {
        out.outln(why);
    }
    if !out.quiet() {
        out.outln(format!(
            "The files still declare \"{}\" replacing \"{}\": change them, or the next apply starts the migration again.",
            m.new, m.old
        ));
    }
    (Ok(Done::Ok), Some((RunOutcome::Aborted, kept)))
}

async fn read_vhost(broker: &impl Broker, vhost: &str) -> Result<crate::model::Vhost, BrokerError> {
    let mut l = crate::live::from_broker(broker, &[vhost.to_string()]).await?;
    l.topology.vhosts.remove(vhost).ok_or_else(|| BrokerError::NotFound { action: format!("read vhost \"{vhost}\"") })
}
