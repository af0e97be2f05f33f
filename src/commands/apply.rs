//! `warren apply`: plan against the broker, show the plan, ask, carry it
//! out, and record what warren now manages.

use std::path::Path;

use super::live_side;
use super::plan::{print, print_diagnostics, print_invalid};
use super::planned::{Planned, compute};
use super::refusal;
use super::saved_plan::{self, ApplyInput};
use super::session::{self, Ended};
use crate::apply::{self, Failure};
use crate::broker::{Broker, RecordStore};
use crate::cli::Connection;
use crate::desired;
use crate::error::{self, Done, Error, Kind};
use crate::fingerprint;
use crate::journal::RunOutcome;
use crate::model::{Inventory, RecordWrite, Records};
use crate::progress::Progress;
use crate::render::Format;
use crate::render::human::summary_line;
use crate::writer::Writer;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub auto_approve: bool,
    pub allow_destroy: bool,
    /// Allow changes that take the connected user's own access away.
    pub allow_lockout: bool,
    pub replace: Vec<String>,
    /// How long a migration waits for the old queue to drain in this run.
    pub drain_timeout: std::time::Duration,
    /// How long to wait for another apply's lock.
    pub lock_timeout: std::time::Duration,
    /// `warren destroy`: remove everything the project owns in its files'
    /// vhosts, instead of what the files declare.
    pub destroy: bool,
    /// `--target`: only the changes of these objects and what they need.
    pub targets: Vec<crate::diff::target::Target>,
}

pub fn run(path: &Path, options: &Options, connection: &Connection, out: &Writer) -> error::Result {
    // The files at `path`, or those of a saved plan with its --replace list.
    let mut input = saved_plan::apply_input(path, &options.replace, out)?;
    if input.saved.is_some() && !options.targets.is_empty() {
        return Err(Error::invalid()
            .line("Nothing was changed: --target cannot be given with a saved plan, which records its own."));
    }
    // A saved plan's findings are its files'.
    let out = &match &input.saved {
        Some(saved) => out.for_findings(super::findings::lists_of(&saved.path, &[]), false),
        None => out.clone(),
    };
    if input.desired.has_errors() {
        return Err(print_invalid(&input.desired, &input.path, &live_side::describe(connection), Format::Human, out));
    }

    if let Err(d) = input.desired.project.resolve(connection.project.as_deref(), true) {
        return Err(before_any_write(d, &input.desired.sources, Kind::Invalid));
    }
    let broker = match live_side::connect(connection) {
        Ok(b) => b,
        Err(d) => return Err(before_any_write(d, &input.desired.sources, Kind::Invalid)),
    };
    super::block_on(apply(&broker, input, options, out))
}

/// Applies valid input to `broker`.
pub async fn apply<B: Broker>(broker: &B, input: ApplyInput, options: &Options, out: &Writer) -> error::Result {
    let mut desired = if options.destroy { input.desired.destroyed() } else { input.desired };
    // A saved plan's own targets came with its files.
    if input.saved.is_none() {
        desired.targets.clone_from(&options.targets);
    }
    let path = input.path.as_path();
    let run = Request { path, replace: &input.replace, saved: input.saved.as_ref(), options };
    let place = place(broker, &desired).await?;
    // The lock comes before the live read: a waiting apply plans against
    // the state the holder left, which is usually "no changes".
    session::locked(broker, place, options.lock_timeout, "planning", out, async |recorder| {
        locked(desired, &run, broker, recorder, out).await
    })
    .await
}

/// Where `desired`'s project keeps its records on `broker`, and so its
/// lock.
pub(super) async fn place<B: Broker>(broker: &B, desired: &desired::Desired) -> Result<crate::model::Place, Error> {
    let vhosts: Vec<String> = desired.topology.vhosts.keys().cloned().collect();
    let place = broker.place_of(desired.project.name(), &vhosts).await;
    place.map_err(|e| before_any_write(live_side::diagnostic(&e), &desired.sources, Kind::Broker(e)))
}

/// What to apply, besides the files.
pub(super) struct Request<'a> {
    pub path: &'a Path,
    pub replace: &'a [String],
    pub saved: Option<&'a crate::saved_plan::SavedPlan>,
    pub options: &'a Options,
}

/// Everything apply does while it holds the lock: reads and plans, then
/// carries the plan out.
async fn locked<B: Broker>(
    desired: desired::Desired,
    run: &Request<'_>,
    broker: &B,
    recorder: &apply::Recorder<B>,
    out: &Writer,
) -> (error::Result, Ended) {
    let live = match read_locked(broker, &desired, recorder, out).await {
        Ok(l) => l,
        Err(e) => return (Err(e), None),
    };
    let planned = compute(desired, run.path, live, run.replace);
    if let Some(saved) = run.saved
        && let Err(e) = saved_plan::check(saved, &planned)
    {
        return (Err(e), None);
    }
    carry_out(&planned, run, broker, recorder, out).await
}

/// The live side to plan against, read while `recorder` holds the lock:
/// the topology as it stands, and the migrations as the lock holder's
/// journal has them. Refused when another project's journal holds a
/// migration of the files' queues.
pub(super) async fn read_locked<B: Broker>(
    broker: &B,
    desired: &desired::Desired,
    recorder: &apply::Recorder<B>,
    out: &Writer,
) -> Result<super::live_side::LiveSide, Error> {
    let mut live = match live_side::read(broker, &desired.topology, Some(desired.project.name())).await {
        Ok(l) => l,
        Err(e) => return Err(before_any_write(live_side::diagnostic(&e), &desired.sources, Kind::Broker(e))),
    };
    // Before the journal forgets anything: a migration it holds is this run's.
    let journal = recorder.journal().migrations;
    let at = session::describe(recorder.place());
    if let Some(r) = refusal::of_journals(&live.migrations, &journal, &desired.topology, at) {
        return Err(r.error());
    }
    // A run that died right after deleting an old queue left its migration
    // in the journal: finished, as the live state shows.
    recorder.note(|j| j.forget_finished(&live.topology));
    // An administrator's listing holds every vhost: a migration in none of
    // them went with its vhost, and would otherwise stay in the journal.
    if broker.is_administrator().await.unwrap_or(false) {
        let mut gone = Vec::new();
        recorder.note(|j| gone = j.forget_vanished(&live.topology));
        if !out.quiet() {
            for m in gone {
                out.errln(format!(
                    "note: migration {} (queue \"{}\" to \"{}\") forgotten: its vhost \"{}\" no longer exists.",
                    m.id, m.old, m.new, m.vhost
                ));
            }
        }
    }
    // The journal as the lock holder has it, not as read beside the topology.
    live.migrations = recorder.journal().migrations.clone();
    Ok(live)
}

/// Shows the plan, checks it, asks, and carries it out, while `recorder`
/// holds the lock it was planned under. The order of its checks and
/// writes is an apply's safety (nothing is written before every check
/// passed, the journal knows the plan before the first step, the
/// inventory is written whatever the steps did): read best as one piece.
pub(super) async fn carry_out<B: Broker>(
    planned: &Planned,
    run: &Request<'_>,
    broker: &B,
    recorder: &apply::Recorder<B>,
    out: &Writer,
) -> (error::Result, Ended) {
    let options = run.options;
    // With -q, no plan: its errors, and the summary of what was done.
    if out.quiet() {
        print_diagnostics(planned, out);
    } else {
        print(planned, Format::Human, out);
    }
    let (plan, doc) = (&planned.plan, &planned.document);

    // Everything is checked before the first write.
    if let Some(r) = refusal::of_plan(planned, options.allow_destroy, options.allow_lockout) {
        return (Err(r.error()), None);
    }
    if plan.is_empty() {
        if out.quiet() {
            out.outln(summary_line(doc));
        }
        return (record_only(broker, planned, recorder, out).await, None);
    }
    if !options.auto_approve {
        let mut question = format!("Do you want to perform these actions on {}?", planned.live.origin);
        if out.quiet() {
            // With no plan shown, what is asked for at least.
            question = format!("{}\n{question}", summary_line(doc));
        }
        if !out.confirm(&question, "apply") {
            return (Err(Error::new(Kind::Declined)), None);
        }
    }

    // With -v, where the run's time goes besides its steps (each phase's
    // time is told as it ends).
    let mut clock = super::Clock::new(out);
    // The exchanges the files rename are kept and owned, with their
    // forwarding bindings, as the plan has them.
    let desired = crate::diff::moved::expand(&planned.desired.topology, &planned.live.topology);
    let mut before = apply::inventory_claim(mine(planned), &desired, &planned.live.topology, plan);
    not_targeted(&mut before, planned);
    let claim = records(planned, &planned.live.records, &before, recorder);
    if let Err(e) = broker.write_records(&claim).await {
        return (Err(Error::new(Kind::Records).line(format!("Nothing was changed: {e}."))), None);
    }
    // The journal says what this run will do before its first step.
    let vhosts = planned.desired.topology.vhosts.keys().cloned().collect();
    clock.lap("claim the files' objects in the records");
    if let Err(e) = recorder.plan_started(plan, fingerprint::plan(doc), vhosts).await {
        let line = format!("Nothing was changed: warren could not record the plan in its journal: {e}.");
        return (Err(Error::new(Kind::Records).line(line)), None);
    }
    clock.lap("record the plan in the journal");
    let ctx = apply::Context {
        guard_deletes: !options.allow_destroy,
        passwords: planned.passwords.clone(),
        live: std::sync::Arc::new(planned.live.topology.clone()),
        drain: apply::migrate::Drain { timeout: options.drain_timeout, ..Default::default() },
        recorder: recorder.clone(),
        events: Progress::new(out).events(),
    };
    let outcome = apply::execute(broker, plan, &ctx).await;
    clock.lap("carry out the steps");
    let mut after = apply::inventory_after(&before, plan, &outcome.done, &planned.desired.topology);
    if planned.desired.destroy {
        after = apply::released(after, plan, &outcome.done, &destroyed_vhosts(planned));
    }
    let claimed = planned.live.records.written(&claim);
    let recorded = broker.write_records(&records(planned, &claimed, &after, recorder)).await;
    clock.lap("record the inventory");
    recorder.migrations_ended(plan, &outcome.done, outcome.failed.as_ref());

    let ended = report(plan, &outcome, out);
    if let Err(e) = recorded {
        let line = format!("warren could not record its inventory: {e}. Run apply again to record it.");
        return (Err(Error::new(Kind::Records).line(line)), ended);
    }
    (outcome.failed.map_or(Ok(Done::Ok), |(_, f)| Err(Error::new(Kind::Stopped(f)))), ended)
}

/// Says how the run ended, below the plan, and how the history records it.
fn report(plan: &crate::plan::Plan, outcome: &apply::Outcome, out: &Writer) -> Ended {
    let Some((i, failure)) = &outcome.failed else {
        let s = plan.summary();
        let rolled_back = if s.rollback > 0 { format!(", {} rolled back", s.rollback) } else { String::new() };
        // Below the plan, a blank line apart; alone with -q.
        out.outln(format!(
            "{}Apply complete! {} added, {} changed, {} destroyed, {} migrated{rolled_back}.",
            if out.quiet() { "" } else { "\n" },
            s.add,
            s.change,
            s.destroy,
            s.migrate
        ));
        return Some((RunOutcome::Complete, None));
    };
    let step = &plan.steps[*i].op;
    match failure {
        Failure::Paused(why) => {
            out.errln(format!("\nApply paused: {step} waits: {why}"));
            out.errln("Running apply again later resumes it where it stands.");
        }
        Failure::Refused(why) => out.errln(format!("\nApply refused to {step}: {why}")),
        Failure::LockLost => out.errln(format!(
            "\nApply stopped before {step}: the lock's connection to the broker closed, so another apply may hold it now."
        )),
        Failure::Broker(e) => out.errln(format!("\nApply stopped: could not {step}:\n  {e}\n  {}", e.help())),
    }
    report_progress(plan, outcome, out);
    let detail = match failure {
        Failure::LockLost => None,
        other => Some(other.why()),
    };
    Some((failure.run_outcome(), detail))
}

/// The applying project's inventory as the broker records it.
fn mine(planned: &Planned) -> &Inventory {
    planned.live.ownership.of(planned.desired.project.name())
}

/// The writes that replace the applying project's inventory in the
/// broker's records (as they stand, `now`), kept where this run keeps them.
fn records<B: Broker>(
    planned: &Planned,
    now: &Records,
    inventory: &Inventory,
    recorder: &apply::Recorder<B>,
) -> Vec<RecordWrite> {
    let project = &planned.desired.project.name();
    let after = planned.live.ownership.with(project, inventory.clone());
    now.writes(&after, project, recorder.place())
}

/// With `--target`, the records claim nothing of what the plan left out
/// but what the project had and is there: the rest was not made by this
/// run.
fn not_targeted(inventory: &mut Inventory, planned: &Planned) {
    if planned.left_out.is_empty() {
        return;
    }
    let (known, live) = (mine(planned), &planned.live.topology);
    inventory.objects.retain(|k| !planned.left_out.contains(k) || (known.contains(k) && live.has(k)));
    inventory.scopes.retain(|k, _| inventory.objects.contains(k));
}

/// The vhosts `warren destroy` empties: those the files declare.
fn destroyed_vhosts(planned: &Planned) -> std::collections::BTreeSet<String> {
    planned.desired.topology.vhosts.keys().cloned().collect()
}

/// Nothing to change on the broker, but the inventory may still be behind:
/// objects the files declare that already matched them become warren's
/// (so removing them from the files later destroys them), and entries for
/// objects no longer live are dropped.
async fn record_only<B: Broker>(
    broker: &B,
    planned: &Planned,
    recorder: &apply::Recorder<B>,
    out: &Writer,
) -> error::Result {
    let known = mine(planned);
    let mut now = apply::inventory_matched(known, &planned.desired.topology, &planned.live.topology);
    if planned.desired.destroy {
        now = apply::released(now, &planned.plan, &[], &destroyed_vhosts(planned));
    }
    not_targeted(&mut now, planned);
    let writes = records(planned, &planned.live.records, &now, recorder);
    if writes.is_empty() {
        return Ok(Done::Ok);
    }
    if let Err(e) = broker.write_records(&writes).await {
        return Err(Error::new(Kind::Records).line(format!("warren could not record its inventory: {e}.")));
    }
    let adopted = now.objects.iter().filter(|k| !known.objects.contains(k)).count();
    if adopted > 0 && !out.quiet() {
        let objects = if adopted == 1 { "1 object".to_string() } else { format!("{adopted} objects") };
        out.errln(format!("warren now manages {objects} that already matched the files."));
    }
    Ok(Done::Ok)
}

/// Which changes were carried out in full and which were not.
fn report_progress(plan: &crate::plan::Plan, outcome: &apply::Outcome, out: &Writer) {
    let (done, not_done) = outcome.changes(plan);
    let list = |title: &str, picked: &[usize]| {
        if picked.is_empty() {
            return;
        }
        out.errln(format!("{title} ({}):", picked.len()));
        for c in picked.iter().take(20) {
            out.errln(format!("  {} {}", plan.changes[*c].action.symbol(), plan.changes[*c].key));
        }
        if picked.len() > 20 {
            out.errln(format!("  … and {} more", picked.len() - 20));
        }
    };
    list("Carried out", &done);
    list("Not carried out", &not_done);
    out.errln("Run plan to see what remains; apply again to finish once the cause is fixed.");
}

/// An error met before the first write: `d` says why.
fn before_any_write(d: crate::diagnostic::Diagnostic, sources: &crate::source::Sources, kind: Kind) -> Error {
    Error::new(kind).drawn([d], sources).line("Nothing was changed.")
}
