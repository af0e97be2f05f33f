//! What every writing command (apply, adopt, abort) does first and last:
//! take the lock, waiting for another holder up to a timeout, take over the
//! journal, and at the end record how the run ended and give the lock back.

use std::time::{Duration, Instant};

use crate::apply::Recorder;
use crate::broker::{Broker, BrokerError, Lock, RecordStore};
use crate::error::{self, Error, Kind};
use crate::journal::{Journal, Run, RunOutcome, actor, now};
use crate::model::Place;
use crate::writer::Writer;

/// Takes the lock of the records at `place` (waiting up to `timeout`), then
/// records this run as the current one: the recorder it returns holds the
/// lock until [`end`] gives it back. Says why it waits; its error says
/// what went wrong.
pub(super) async fn begin<B: Broker>(
    broker: &B,
    place: Place,
    timeout: Duration,
    doing: &str,
    out: &Writer,
) -> Result<Recorder<B>, Error> {
    // The management API first: its errors say most about a wrong URL or
    // user, and the lock is pointless without it.
    broker.check().await.map_err(super::unchanged)?;
    let by = actor();
    let lock = take_lock(broker, &place, &by, timeout, out).await?;
    let read = broker.read_journal(&place).await.map(|(v, progress, slot)| (Journal::from_json(v), progress, slot));
    let (mut journal, slot) = match read {
        Ok((Ok(mut j), progress, slot)) => {
            crate::journal::add_progress(&mut j.migrations, &progress);
            (j, slot)
        }
        Ok((Err(e), _, _)) => {
            let remove = match &place {
                Place::Broker => format!("`rabbitmqctl clear_global_parameter {}`", crate::model::JOURNAL_PARAMETER),
                Place::Vhosts { project, home } => format!(
                    "`rabbitmqctl delete_exchange --vhost {home} {}` (each generation)",
                    crate::model::RecordKind::Journal.exchange(project, 0).trim_end_matches('0')
                ),
            };
            lock.release().await;
            return Err(Error::new(Kind::Records).line(format!(
                "error: warren's journal ({}) is unreadable: {e}\n  help: it records in-flight migrations; if none is in flight, remove it with {remove}",
                describe(&place)
            )));
        }
        Err(e) => {
            lock.release().await;
            return Err(super::unchanged(e));
        }
    };
    let started = now();
    let interrupted = journal.take_over(&started);
    journal.current = Some(Run {
        id: journal.next_run_id(),
        by,
        version: env!("CARGO_PKG_VERSION").into(),
        started,
        origin: broker.origin(),
        doing: doing.into(),
        ..Run::default()
    });
    let recorder = Recorder::new(broker.clone(), place, Some(lock), (journal, slot));
    if let Err(e) = recorder.update(|_| {}).await {
        recorder.release().await;
        return Err(super::unchanged(e));
    }
    if let Some(dead) = &interrupted {
        out.errln(format!(
            "An earlier apply (run {}, by {}, started {}) was interrupted while it was doing: {}. This run picks up from the live state and the journal.",
            dead.id, dead.by, dead.started, dead.doing
        ));
    }
    Ok(recorder)
}

/// The lock of the records at `place`, taken for `by`; waits up to
/// `timeout` for another holder, saying who holds it.
async fn take_lock<B: Broker>(
    broker: &B,
    place: &Place,
    by: &str,
    timeout: Duration,
    out: &Writer,
) -> Result<Lock, Error> {
    let deadline = Instant::now() + timeout;
    let mut shown: Option<String> = None;
    loop {
        match broker.take_lock(place, by).await {
            Ok(Some(lock)) => return Ok(lock),
            Ok(None) => {}
            Err(e) => return Err(super::unchanged(e)),
        }
        let holder = holder(broker, place).await;
        if shown.as_ref() != Some(&holder) {
            out.errln(format!("Another apply holds the lock: {holder}. Waiting up to {}…", seconds(timeout)));
            shown = Some(holder.clone());
        }
        if Instant::now() >= deadline {
            return Err(Error::new(Kind::Locked).line(format!(
                "The lock was not released within --lock-timeout {} (held by {holder}). Nothing was changed.",
                seconds(timeout)
            )));
        }
        tokio::time::sleep(Duration::from_millis(500).min(deadline - Instant::now())).await;
    }
}

/// What every writing command does around its work: takes the lock of the
/// records at `place` ([`begin`]), does `work` while it holds it, records how
/// the run ended and gives the lock back ([`end`]). Ends as `work` says, or
/// as taking the lock failed.
pub async fn locked<B: Broker>(
    broker: &B,
    place: Place,
    timeout: Duration,
    doing: &str,
    out: &Writer,
    work: impl AsyncFnOnce(&Recorder<B>) -> (error::Result, Ended),
) -> error::Result {
    let recorder = begin(broker, place, timeout, doing, out).await?;
    let (result, ended) = work(&recorder).await;
    end(recorder, ended, out).await;
    result
}

/// How a run ends in the history, with why; `None` when it changed nothing.
pub type Ended = Option<(RunOutcome, Option<String>)>;

/// Ends the run: into the history with its outcome, or, when it changed
/// nothing, out of the journal without a trace. Then gives the lock back,
/// and says when the journal could not be written.
pub(super) async fn end<B: Broker>(recorder: Recorder<B>, outcome: Ended, out: &Writer) {
    if let Err(e) = ended(recorder, outcome).await {
        out.errln(format!("warren could not record how this run ended in its journal: {e}."));
    }
}

async fn ended<B: Broker>(recorder: Recorder<B>, outcome: Ended) -> Result<(), BrokerError> {
    let at = now();
    let written = recorder
        .update(|j| match outcome {
            Some((o, detail)) => j.finish(o, detail, &at),
            None => j.current = None,
        })
        .await;
    // The journal now holds every count the progress records kept.
    let cleared = match &written {
        Ok(()) => recorder.clear_progress().await,
        Err(_) => Ok(()),
    };
    recorder.release().await;
    written.and(cleared)
}

/// Who holds the lock, as the journal says: `user@host since T (doing)`.
async fn holder(broker: &impl Broker, place: &Place) -> String {
    let journal = broker.read_journal(place).await.ok().and_then(|(v, _, _)| Journal::from_json(v).ok());
    let current = journal.and_then(|j| j.current);
    match current {
        Some(r) => format!("{} since {} ({})", r.by, r.started, if r.doing.is_empty() { "starting" } else { &r.doing }),
        None => "an apply that has not recorded itself yet".into(),
    }
}

/// Where the journal at `place` is, in words.
pub fn describe(place: &Place) -> String {
    match place {
        Place::Broker => format!("global parameter `{}`", crate::model::JOURNAL_PARAMETER),
        Place::Vhosts { project, home } => format!("project \"{project}\"'s, in vhost \"{home}\""),
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs())
}
