//! `warren apply --env ...`: one environment is applied as `warren apply`
//! applies a topology; several are rolled out stage by stage in the order
//! of `[deploy]`, the environments of one stage at once, each by a warren
//! process of its own (its own lock, journal and output), and the rollout
//! stops before the next stage when any environment of a stage did not end
//! well. Environments in no stage go last, together.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use super::apply::{self, Options};
use super::fleet::{self, Chosen};
use super::saved_plan::{ApplyInput, is_saved_plans, read_plans, saved_input};
use super::{live_side, plan::print_invalid};
use crate::cli::Connection;
use crate::desired;
use crate::error::{self, Done, Error};
use crate::exit::Exit;
use crate::output::Output;
use crate::project::{Environment, Project};
use crate::render::Format;

pub fn run(path: &Path, patterns: &[String], options: &Options, shared: &Connection, out: Output) -> error::Result {
    if is_saved_plans(path) {
        return run_saved(path, patterns, options, shared, out);
    }
    let chosen = fleet::choose(path, patterns, out)?;
    if let [env] = &chosen.environments[..] {
        return apply_one(&chosen, path, env, options, shared, out);
    }
    let (doc, _) = fleet::plan_all(&chosen, path, shared, &options.replace, out);
    fleet::print(&doc, Format::Human, out);
    if doc.has_errors() {
        eprintln!("Nothing was changed: every chosen environment must be planned before any is applied.");
        return Err(Error::Environments);
    }
    let stages = stages(&chosen.base.project, &chosen.environments);
    let what = "Each plans again under its own lock.";
    if !options.auto_approve && !confirmed(&stages, what) {
        return Err(Error::Declined);
    }
    roll(&stages, path, options, shared, out)
}

/// Asks once for the whole rollout.
fn confirmed(stages: &[Vec<Environment>], what: &str) -> bool {
    let order: Vec<String> =
        stages.iter().map(|s| s.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ")).collect();
    let n: usize = stages.iter().map(Vec::len).sum();
    let question =
        format!("Do you want to apply to {n} environments, stage by stage ({})? {what}", order.join("; then "));
    super::confirm::confirm(&question, "apply")
}

/// `apply PLANFILE` of a saved plan of several environments: each
/// environment's plan applied on its broker, refused there if the broker
/// changed since; stage by stage as a rollout of the files.
fn run_saved(file: &Path, patterns: &[String], options: &Options, shared: &Connection, out: Output) -> error::Result {
    let plans = read_plans(file, out)?;
    if !options.replace.is_empty() {
        eprintln!("Nothing was changed: --replace cannot be given with a saved plan, which records its own.");
        return Err(Error::Invalid);
    }
    let Some(first) = plans.environments.first() else {
        eprintln!("Nothing was changed: {} holds no environment's plan.", file.display());
        return Err(Error::Invalid);
    };
    // The saved plans' findings are those of their files.
    let out = out.for_findings(super::findings::lint_of(&first.path, patterns), false);
    // The project file saved with the plans: its environments and stages.
    let project = desired::load_texts(&first.path, first.texts()).project;
    let saved: Vec<&str> = plans.environments.iter().filter_map(|p| p.environment.as_deref()).collect();
    let picked: Vec<Environment> = if patterns.is_empty() {
        project.environments.iter().filter(|e| saved.contains(&e.name.as_str())).cloned().collect()
    } else {
        match project.select(patterns) {
            Ok(p) => p.into_iter().cloned().collect(),
            Err(d) => {
                eprint!("{}", crate::diagnostic::render(&[d], &Default::default(), out.diagnostic_style()));
                return Err(Error::Invalid);
            }
        }
    };
    if let Some(missing) = picked.iter().find(|e| !saved.contains(&e.name.as_str())) {
        eprintln!(
            "Nothing was changed: {} holds no plan of environment \"{}\"; it holds {}.",
            file.display(),
            missing.name,
            saved.join(", ")
        );
        return Err(Error::Invalid);
    }
    if let [env] = &picked[..] {
        let plan = plans.environments.iter().find(|p| p.environment.as_deref() == Some(&env.name));
        let input = saved_input(file, plan.expect("checked above").clone(), &[], out)?;
        return apply_to(env, input, options, shared, out);
    }
    if !out.quiet {
        eprintln!(
            "Applying the saved plans of {} environments in {}, made {}.",
            picked.len(),
            file.display(),
            first.created
        );
    }
    let stages = stages(&project, &picked);
    let what = "Each is refused if its broker changed since the plan.";
    if !options.auto_approve && !confirmed(&stages, what) {
        return Err(Error::Declined);
    }
    roll(&stages, file, options, shared, out)
}

/// Applies the environments stage by stage, each by `warren apply TARGET
/// --env NAME`; stops after a stage where one did not end well.
fn roll(
    stages: &[Vec<Environment>],
    target: &Path,
    options: &Options,
    shared: &Connection,
    out: Output,
) -> error::Result {
    let mut outcomes: Vec<(String, usize, Option<Exit>)> = Vec::new();
    let mut stopped = false;
    for (n, stage) in stages.iter().enumerate() {
        if stopped {
            outcomes.extend(stage.iter().map(|e| (e.name.clone(), n + 1, None)));
            continue;
        }
        if !out.quiet {
            let names: Vec<&str> = stage.iter().map(|e| e.name.as_str()).collect();
            eprintln!("\nStage {} of {}: {}", n + 1, stages.len(), names.join(", "));
        }
        let printing = Mutex::new(());
        let ended = fleet::at_once(stage, |env| {
            let (exit, text) = child(target, env, options, shared, out);
            let _held = printing.lock().expect("no printer panics");
            println!("\n── environment {}: {} ──\n", env.name, said(Some(exit)));
            print!("{text}");
            exit
        });
        for (env, exit) in stage.iter().zip(ended) {
            stopped |= exit != Exit::Ok;
            outcomes.push((env.name.clone(), n + 1, Some(exit)));
        }
    }
    println!("\nRollout of {} environments:\n", outcomes.len());
    let width = outcomes.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    for (name, stage, exit) in &outcomes {
        println!("  {name:<width$}  stage {stage}  {}", said(*exit));
    }
    if stopped {
        println!("\nThe rollout stopped after the stage that did not end well; run it again to go on.");
    }
    // The rollout ends as its worst environment did.
    let worst = [Exit::Error, Exit::Refused, Exit::Locked, Exit::Paused]
        .into_iter()
        .find(|w| outcomes.iter().any(|(_, _, e)| *e == Some(*w)));
    match worst {
        None => Ok(Done::Ok),
        Some(exit) => Err(Error::Rollout(exit)),
    }
}

/// What an environment's apply ended with, in words.
fn said(exit: Option<Exit>) -> &'static str {
    match exit {
        None => "not started",
        Some(Exit::Ok | Exit::Changes) => "applied",
        Some(Exit::Paused) => "paused: a migration waits (exit 3)",
        Some(Exit::Refused) => "refused (exit 4)",
        Some(Exit::Locked) => "locked by another apply (exit 5)",
        Some(Exit::Error) => "failed (exit 1)",
    }
}

/// The stages of the chosen environments, in `[deploy]` order; those in no
/// stage last, together.
fn stages(project: &Project, chosen: &[Environment]) -> Vec<Vec<Environment>> {
    let stages = &project.stages;
    let find = |name: &str| chosen.iter().find(|e| e.name == name).cloned();
    let mut out: Vec<Vec<Environment>> =
        stages.iter().map(|s| s.iter().filter_map(|n| find(n)).collect::<Vec<_>>()).filter(|s| !s.is_empty()).collect();
    let staged = |e: &Environment| stages.iter().any(|s| s.contains(&e.name));
    let rest: Vec<Environment> = chosen.iter().filter(|e| !staged(e)).cloned().collect();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// One environment's apply in a warren process of its own, confirmed
/// already; its exit, and its output (stdout, then stderr).
fn child(path: &Path, env: &Environment, options: &Options, shared: &Connection, out: Output) -> (Exit, String) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return (Exit::Error, format!("error: cannot start warren again: {e}\n")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("apply").arg(path).args(["--env", &env.name, "--auto-approve", "--color", "never"]);
    // Its plan was shown with the rollout's: the child says what it did.
    cmd.arg(if out.verbose { "-v" } else { "-q" });
    if options.allow_destroy {
        cmd.arg("--allow-destroy");
    }
    if options.allow_lockout {
        cmd.arg("--allow-lockout");
    }
    if let Some(project) = &shared.project {
        cmd.args(["--project", project]);
    }
    for q in &options.replace {
        cmd.args(["--replace", q]);
    }
    cmd.arg(format!("--drain-timeout={}s", options.drain_timeout.as_secs()));
    cmd.arg(format!("--lock-timeout={}s", options.lock_timeout.as_secs()));
    for (flag, file) in
        [("--ca-cert", &shared.ca_cert), ("--client-cert", &shared.client_cert), ("--client-key", &shared.client_key)]
    {
        if let Some(f) = file {
            cmd.arg(flag).arg(f);
        }
    }
    match cmd.output() {
        Ok(o) => {
            let exit = match o.status.code() {
                Some(0) => Exit::Ok,
                Some(2) => Exit::Changes,
                Some(3) => Exit::Paused,
                Some(4) => Exit::Refused,
                Some(5) => Exit::Locked,
                _ => Exit::Error,
            };
            (exit, format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
        }
        Err(e) => (Exit::Error, format!("error: cannot start warren again: {e}\n")),
    }
}

/// `apply --env NAME`: the environment's topology, applied to its broker.
fn apply_one(
    chosen: &Chosen,
    path: &Path,
    env: &Environment,
    options: &Options,
    shared: &Connection,
    out: Output,
) -> error::Result {
    let desired = desired::environment(&chosen.base, path, env);
    let input = ApplyInput { desired, path: path.to_path_buf(), replace: options.replace.clone(), saved: None };
    apply_to(env, input, options, shared, out)
}

/// Applies an environment's input (its files, or its saved plan) to its
/// broker.
fn apply_to(
    env: &Environment,
    input: ApplyInput,
    options: &Options,
    shared: &Connection,
    out: Output,
) -> error::Result {
    let connection = match fleet::connection(env, shared) {
        Ok(c) => c,
        Err(d) => {
            super::validate::show(&[d], &input.desired.sources, out);
            return Err(Error::Invalid);
        }
    };
    if input.desired.has_errors() {
        let origin = live_side::describe(&connection);
        return Err(print_invalid(&input.desired, &input.path, &origin, Format::Human, out));
    }
    let broker = live_side::open(&connection)?;
    apply::apply(&broker, input, options, out)
}
