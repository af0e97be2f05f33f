//! `warren apply`: plan against the broker, show the plan, ask, carry it
//! out, and record what warren now manages.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use super::plan::{compute, errors, print, print_invalid};
use super::{live_side, saved_plan};
use crate::apply::{self, migrate::Failure};
use crate::broker::BrokerError;
use crate::cli::Connection;
use crate::diagnostic::render as render_diagnostics;
use crate::diff::REFUSALS;
use crate::exit::Exit;
use crate::model::Password;
use crate::output::Output;
use crate::plan::Op;
use crate::render::Format;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub auto_approve: bool,
    pub allow_destroy: bool,
    pub replace: Vec<String>,
    /// How long a migration waits for the old queue to drain in this run.
    pub drain_timeout: std::time::Duration,
}

pub fn run(path: &Path, options: &Options, connection: &Connection, out: Output) -> Exit {
    // The files at `path`, or those of a saved plan with its --replace list.
    let input = match saved_plan::apply_input(path, &options.replace, out) {
        Ok(i) => i,
        Err(exit) => return exit,
    };
    let (desired, path, replace) = (input.desired, input.path.as_path(), &input.replace);
    if desired.has_errors() {
        return print_invalid(&desired, path, &live_side::describe(connection), Format::Human, out);
    }
    let broker = match live_side::connect(connection) {
        Ok(b) => b,
        Err(d) => return fail(&[d], &desired.sources, out),
    };
    let rt = live_side::runtime();
    let live = match rt.block_on(live_side::read(&broker, &desired.topology)) {
        Ok(l) => l,
        Err(e) => return fail(&[e.diagnostic()], &desired.sources, out),
    };
    let planned = compute(desired, path, live, replace);
    if let Some(saved) = &input.saved
        && let Err(exit) = saved_plan::check(saved, &planned)
    {
        return exit;
    }
    print(&planned, Format::Human, out);
    let (plan, doc) = (&planned.plan, &planned.document);

    // Everything is checked before the first write.
    if !doc.errors.is_empty() {
        if doc.errors.iter().all(|e| REFUSALS.contains(&e.code.as_str())) {
            eprintln!("Refused: the migration's pre-flight checks failed (above). Nothing was changed.");
            return Exit::Refused;
        }
        eprintln!("Nothing was changed: {} must be fixed first.", errors(doc.errors.len()));
        return Exit::Error;
    }
    if plan.is_empty() {
        return record_only(&broker, &rt, &planned, out);
    }
    if doc.summary.requires_allow_destroy && !options.allow_destroy {
        eprintln!("Refused: this plan can lose messages or routes, and --allow-destroy was not given. It would:");
        for c in plan.changes.iter().filter(|c| c.requires_allow_destroy) {
            eprintln!("  {} {}: {}", c.action.symbol(), c.key, c.reason);
        }
        eprintln!("Nothing was changed. Re-run with --allow-destroy if that is what you want.");
        return Exit::Refused;
    }
    for s in &plan.steps {
        if let Op::PutUser { user } = &s.op
            && let Password::Env(var) = &user.password
            && !planned.passwords.contains_key(&user.name)
        {
            eprintln!(
                "Nothing was changed: the password of user \"{}\" comes from ${var}, which is not set.",
                user.name
            );
            return Exit::Error;
        }
    }
    if !options.auto_approve {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "Nothing was changed: there is no terminal to confirm on; pass --auto-approve to apply unattended."
            );
            return Exit::Error;
        }
        eprint!(
            "\nDo you want to perform these actions on {}?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ",
            planned.live.origin
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if answer.trim() != "yes" {
            eprintln!("\nApply cancelled. Nothing was changed.");
            return Exit::Error;
        }
    }

    let before =
        apply::inventory_claim(&planned.live.inventory, &planned.desired.topology, &planned.live.topology, plan);
    if let Err(e) = rt.block_on(broker.write_inventory(&before)) {
        eprintln!("Nothing was changed: {e}.");
        return Exit::Error;
    }
    let verbose = out.verbose;
    let ctx = apply::Context {
        guard_deletes: !options.allow_destroy,
        passwords: planned.passwords.clone(),
        live: std::sync::Arc::new(planned.live.topology.clone()),
        drain: apply::migrate::Drain { timeout: options.drain_timeout, ..Default::default() },
    };
    let outcome = rt.block_on(apply::execute(&broker, plan, &ctx, |step, r| {
        if verbose && r.is_ok() {
            eprintln!("  done: {}", step.op);
        }
    }));
    let after = apply::inventory_after(&before, plan, &outcome.done);
    let recorded = rt.block_on(broker.write_inventory(&after));

    let s = plan.summary();
    match &outcome.failed {
        None => {
            println!(
                "\nApply complete! {} added, {} changed, {} destroyed, {} migrated.",
                s.add, s.change, s.destroy, s.migrate
            );
        }
        Some((i, Failure::Paused(why))) => {
            eprintln!("\nApply paused: {} waits: {why}", plan.steps[*i].op);
            eprintln!("Running apply again later resumes it where it stands.");
            report_progress(plan, &outcome);
        }
        Some((i, Failure::Refused(why))) => {
            eprintln!("\nApply refused to {}: {why}", plan.steps[*i].op);
            report_progress(plan, &outcome);
        }
        Some((i, Failure::Broker(e))) => {
            eprintln!("\nApply stopped: could not {}:\n  {e}\n  {}", plan.steps[*i].op, e.help());
            report_progress(plan, &outcome);
        }
    }
    if let Err(e) = recorded {
        eprintln!("warren could not record its inventory: {e}. Run apply again to record it.");
        return Exit::Error;
    }
    match &outcome.failed {
        None => Exit::Ok,
        Some((_, Failure::Paused(_))) => Exit::Paused,
        Some((_, Failure::Refused(_) | Failure::Broker(BrokerError::Unsafe { .. }))) => Exit::Refused,
        Some(_) => Exit::Error,
    }
}

/// Nothing to change on the broker, but the inventory may still be behind:
/// objects the files declare that already matched them become warren's
/// (so removing them from the files later destroys them), and entries for
/// objects no longer live are dropped.
fn record_only(
    broker: &crate::broker::Broker,
    rt: &tokio::runtime::Runtime,
    planned: &super::plan::Planned,
    out: Output,
) -> Exit {
    let known = &planned.live.inventory;
    let now = apply::inventory_before(known, &planned.desired.topology, &planned.live.topology);
    if now == *known {
        return Exit::Ok;
    }
    if let Err(e) = rt.block_on(broker.write_inventory(&now)) {
        eprintln!("warren could not record its inventory: {e}.");
        return Exit::Error;
    }
    let adopted = now.objects.difference(&known.objects).count();
    if adopted > 0 && !out.quiet {
        let objects = if adopted == 1 { "1 object".to_string() } else { format!("{adopted} objects") };
        eprintln!("warren now manages {objects} that already matched the files.");
    }
    Exit::Ok
}

/// Which changes were carried out in full and which were not.
fn report_progress(plan: &crate::plan::Plan, outcome: &apply::Outcome) {
    let mut done = vec![0usize; plan.changes.len()];
    let mut total = vec![0usize; plan.changes.len()];
    for (i, s) in plan.steps.iter().enumerate() {
        total[s.change] += 1;
        if outcome.done.contains(&i) {
            done[s.change] += 1;
        }
    }
    let list = |title: &str, pick: &dyn Fn(usize) -> bool| {
        let picked: Vec<usize> = (0..plan.changes.len()).filter(|c| total[*c] > 0 && pick(*c)).collect();
        if picked.is_empty() {
            return;
        }
        eprintln!("{title} ({}):", picked.len());
        for c in picked.iter().take(20) {
            eprintln!("  {} {}", plan.changes[*c].action.symbol(), plan.changes[*c].key);
        }
        if picked.len() > 20 {
            eprintln!("  … and {} more", picked.len() - 20);
        }
    };
    list("Carried out", &|c| done[c] == total[c]);
    list("Not carried out", &|c| done[c] < total[c]);
    eprintln!("Run plan to see what remains; apply again to finish once the cause is fixed.");
}

fn fail(diags: &[crate::diagnostic::Diagnostic], sources: &crate::source::Sources, out: Output) -> Exit {
    eprint!("{}", render_diagnostics(diags, sources, out.diagnostic_style()));
    eprintln!("Nothing was changed.");
    Exit::Error
}
