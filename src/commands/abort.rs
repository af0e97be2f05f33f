//! `warren abort ID`: roll an in-flight migration back to the topology it
//! started from, under the lock, while traffic flows (see
//! `plan::rollback`). Messages the new queue already holds stay in it for
//! its consumers; the new queue is deleted only when empty and unused.

use std::time::Duration;

use super::{live_side, session};
use crate::apply::Recorder;
use crate::apply::migrate::{self, Emptiness};
use crate::broker::Broker;
use crate::cli::Connection;
use crate::exit::Exit;
use crate::journal::Migration;
use crate::model::{QueueType, binding_from};
use crate::output::Output;
use crate::plan::{MigrationStep, Op, RollbackSource, rollback};

pub fn run(id: &str, auto_approve: bool, lock_timeout: Duration, connection: &Connection, out: Output) -> Exit {
    let broker = match live_side::connect(connection) {
        Ok(b) => b,
        Err(d) => {
            eprintln!("error: {}", d.message);
            return Exit::Error;
        }
    };
    let rt = live_side::runtime();
    let session = match rt.block_on(session::begin(&broker, lock_timeout, &format!("aborting migration {id}"))) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let (exit, ended) = rt.block_on(locked(id, auto_approve, &broker, &session.recorder, out));
    if let Err(e) = rt.block_on(session::end(session.recorder, ended)) {
        eprintln!("warren could not record how this run ended in its journal: {e}.");
    }
    exit
}

type Ended = Option<(&'static str, Option<String>)>;

async fn locked(id: &str, auto_approve: bool, broker: &Broker, recorder: &Recorder, out: Output) -> (Exit, Ended) {
    let Some(m) = recorder.journal().migrations.get(id).cloned() else {
        eprintln!(
            "error: no migration \"{id}\" is in flight\n  help: `warren status` lists the in-flight migrations and their ids"
        );
        return (Exit::Error, None);
    };
    if m.done > m.point_of_no_return {
        eprintln!(
            "Refused: migration {id} is past its point of no return: queue \"{}\" was deleted at step {}. Run apply to finish it.",
            m.old,
            m.point_of_no_return + 1
        );
        return (Exit::Refused, None);
    }
    let vhost = match read_vhost(broker, &m.vhost).await {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}\nNothing was changed.");
            return (Exit::Error, None);
        }
    };
    let (sources, added, dropped) = match parts(&m) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: the journal's record of migration {id} is unreadable: {e}\nNothing was changed.");
            return (Exit::Error, None);
        }
    };
    let steps = match rollback(&vhost, &m.old, &m.new, &sources, &added, &dropped) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("Refused: {why}.");
            return (Exit::Refused, None);
        }
    };
    println!(
        "warren will roll back migration {id} in vhost \"{}\": queue \"{}\" >> \"{}\", back to \"{}\".",
        m.vhost, m.old, m.new, m.old
    );
    for (i, s) in steps.iter().enumerate() {
        println!("  {:>2}. {s}", i + 1);
    }
    println!(
        "  then delete queue \"{}\" if it is empty and unused; messages it holds stay in it for its consumers.",
        m.new
    );
    if !auto_approve && !confirm(broker) {
        return (Exit::Error, None);
    }
    recorder.note(|j| {
        if let Some(r) = &mut j.current {
            r.vhosts = vec![m.vhost.clone()];
            r.summary = format!("abort migration {id} (\"{}\" >> \"{}\")", m.old, m.new);
            r.steps_total = steps.len();
        }
    });
    if let Err(e) = roll_back(broker, recorder, id, &m.vhost, &steps).await {
        let why = match &e {
            migrate::Failure::Broker(b) => b.to_string(),
            migrate::Failure::Paused(w) | migrate::Failure::Refused(w) => w.clone(),
            migrate::Failure::LockLost => "the lock's connection closed".into(),
        };
        eprintln!(
            "\nAbort stopped: {why}\nRun `warren abort {id}` again to finish rolling back, or `warren apply` to go forward."
        );
        return (Exit::Error, Some(("failed", Some(why))));
    }
    let kept = match vhost.queues.get(&m.new) {
        Some(q) => retire_new(broker, &m.vhost, q).await,
        None => None,
    };
    recorder.note(|j| {
        j.migrations.remove(id);
    });
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
    (Exit::Ok, Some(("aborted", kept)))
}

/// The rollback's steps, each recorded in the journal (as `ID.abort`)
/// before the next, under the lock.
async fn roll_back(
    broker: &Broker,
    recorder: &Recorder,
    id: &str,
    vhost: &str,
    steps: &[MigrationStep],
) -> Result<(), migrate::Failure> {
    let record = format!("{id}.abort");
    for (i, step) in steps.iter().enumerate() {
        recorder.check()?;
        migrate::topology_step(broker, vhost, step).await?;
        recorder.migration_step(&record, i, &format!("abort {id}: step {} of {}: {step}", i + 1, steps.len())).await?;
    }
    Ok(())
}

/// Deletes the new queue when it is empty and unused (the same look as
/// before retiring an old queue); otherwise says why it stays.
async fn retire_new(broker: &Broker, vhost: &str, q: &crate::model::Queue) -> Option<String> {
    let kept = |why: String| Some(format!("Queue \"{}\" was kept: {why}", q.name));
    match migrate::empty_and_unused(broker, vhost, &q.name, q.kind).await {
        Ok(Emptiness::Empty) => {
            let op = Op::DeleteQueue { vhost: vhost.into(), name: q.name.clone(), kind: q.kind };
            match broker.run(&op, q.kind == QueueType::Classic, None).await {
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

async fn read_vhost(broker: &Broker, vhost: &str) -> Result<crate::model::Vhost, String> {
    let mut l = broker.live_of(&[vhost.to_string()]).await.map_err(|e| e.to_string())?;
    l.topology.vhosts.remove(vhost).ok_or_else(|| format!("vhost \"{vhost}\" does not exist"))
}

type Parts = (Vec<RollbackSource>, Vec<crate::model::Binding>, Vec<crate::model::Binding>);

fn parts(m: &Migration) -> Result<Parts, String> {
    let bindings = |list: &[serde_json::Value]| list.iter().map(binding_from).collect::<Result<Vec<_>, _>>();
    let sources = m
        .sources
        .iter()
        .map(|s| {
            Ok(RollbackSource {
                exchange: s.exchange.clone(),
                kind: s.kind.clone(),
                interposed: s.interposed.clone(),
                alternate: s.alternate.clone(),
                policy: s.policy.clone(),
                bindings: bindings(&s.bindings)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((sources, bindings(&m.added)?, bindings(&m.dropped)?))
}

fn confirm(broker: &Broker) -> bool {
    super::confirm::confirm(&format!("Do you want to roll this migration back on {}?", broker.endpoint()), "abort")
}
