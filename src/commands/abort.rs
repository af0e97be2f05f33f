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
use crate::error::{self, Done, Error};
use crate::journal::{Journal, RunOutcome};
use crate::model::Place;
use crate::output::Output;
use crate::plan::compile_rollback;

pub fn run(
    id: &str,
    auto_approve: bool,
    lock_timeout: Duration,
    connection: &Connection,
    out: Output,
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
    out: Output,
) -> error::Result {
    let rt = live_side::runtime();
    // The lock and the journal of the records that hold the migration.
    let place = rt.block_on(place_of(broker, id)).map_err(super::unchanged)?;
    session::locked(&rt, broker, place, lock_timeout, &format!("aborting migration {id}"), |recorder| {
        rt.block_on(locked(id, auto_approve, broker, recorder, out))
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
    out: Output,
) -> (error::Result, Ended) {
    let Some(m) = recorder.journal().migrations.get(id).cloned() else {
        eprintln!(
            "error: no migration \"{id}\" is in flight\n  help: `warren status` lists the in-flight migrations and their ids"
        );
        return (Err(Error::Invalid), None);
    };
    if m.done > m.point_of_no_return {
        eprintln!(
            "Refused: migration {id} is past its point of no return: queue \"{}\" was deleted at step {}. Run apply to finish it.",
            m.old,
            m.point_of_no_return + 1
        );
        return (Err(Error::Refused), None);
    }
    let vhost = match read_vhost(broker, &m.vhost).await {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}\nNothing was changed.");
            return (Err(Error::Broker(e)), None);
        }
    };
    let r = match compile_rollback(&vhost, &m) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("Refused: {why}.");
            return (Err(Error::Refused), None);
        }
    };
    println!(
        "warren will roll back migration {id} in vhost \"{}\": queue \"{}\" >> \"{}\", back to \"{}\".",
        m.vhost, m.old, m.new, m.old
    );
    for (i, s) in r.steps_back().iter().enumerate() {
        println!("  {:>2}. {s}", i + 1);
    }
    println!(
        "  then delete queue \"{}\" if it is empty and unused; messages it holds stay in it for its consumers.",
        m.new
    );
    if !auto_approve && !confirm(broker) {
        return (Err(Error::Declined), None);
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
            eprintln!(
                "\nAbort stopped: {why}\nRun `warren abort {id}` again to finish rolling back, or `warren apply` to go forward."
            );
            return (Err(Error::Stopped(e)), Some((RunOutcome::Failed, Some(why))));
        }
    };
    println!("\nAbort complete: traffic for \"{}\" goes to \"{}\" again, as before the migration.", m.old, m.old);
    if let Some(why) = &kept {
        println!("{why}");
    }
    if !out.quiet {
        println!(
            "The files still declare \"{}\" replacing \"{}\": change them, or the next apply starts the migration again.",
            m.new, m.old
        );
    }
    (Ok(Done::Ok), Some((RunOutcome::Aborted, kept)))
}

async fn read_vhost(broker: &impl Broker, vhost: &str) -> Result<crate::model::Vhost, BrokerError> {
    let mut l = crate::live::from_broker(broker, &[vhost.to_string()]).await?;
    l.topology.vhosts.remove(vhost).ok_or_else(|| BrokerError::NotFound { action: format!("read vhost \"{vhost}\"") })
}

fn confirm(broker: &impl Broker) -> bool {
    super::confirm::confirm(&format!("Do you want to roll this migration back on {}?", broker.origin()), "abort")
}
