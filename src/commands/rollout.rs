//! `warren apply --env ...`: one environment is applied as `warren apply`
//! applies a topology; several are rolled out stage by stage in the order
//! of `[deploy]`, the environments of one stage at once on the run's
//! runtime, each with its own lock, journal and output (a buffer, printed
//! as the environment's section when it ends), and the rollout stops before
//! the next stage when any environment of a stage did not end well.
//! Environments in no stage go last, together.

use std::path::Path;

use super::apply::{self, Options};
use super::fleet::{self, Chosen};
use super::saved_plan::{ApplyInput, is_saved_plans, read_plans, saved_input};
use super::{live_side, plan::print_invalid};
use crate::cli::Connection;
use crate::desired;
use crate::error::{self, Done, Error, Kind};
use crate::exit::Exit;
use crate::output::Output;
use crate::project::{Environment, Project};
use crate::render::Format;
use crate::saved_plan::SavedPlans;
use crate::writer::Writer;

pub fn run(path: &Path, patterns: &[String], options: &Options, shared: &Connection, out: &Writer) -> error::Result {
    if is_saved_plans(path) {
        return run_saved(path, read_plans(path)?, patterns, options, shared, out);
    }
    let chosen = fleet::choose(path, patterns, out)?;
    if let [env] = &chosen.environments[..] {
        return super::block_on(apply_one(&chosen, path, env, options, shared, out));
    }
    let (doc, _) = fleet::plan_all(&chosen, path, shared, (&options.replace, &options.targets), out);
    fleet::print(&doc, Format::Human, out);
    if doc.has_errors() {
        return Err(Error::new(Kind::Environments)
            .line("Nothing was changed: every chosen environment must be planned before any is applied."));
    }
    let stages = stages(&chosen.base.project, &chosen.environments);
    let what = "Each plans again under its own lock.";
    if !options.auto_approve && !confirmed(&stages, what, out) {
        return Err(Error::new(Kind::Declined));
    }
    roll(&stages, path, Source::Files(&chosen), options, shared, out)
}

/// What a rollout applies to each environment: its topology of the files
/// as read for the rollout's plan, or its plan of the saved plans.
#[derive(Clone, Copy)]
enum Source<'a> {
    Files(&'a Chosen),
    Saved(&'a SavedPlans),
}

/// Asks once for the whole rollout.
fn confirmed(stages: &[Vec<Environment>], what: &str, out: &Writer) -> bool {
    let order: Vec<String> =
        stages.iter().map(|s| s.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ")).collect();
    let n: usize = stages.iter().map(Vec::len).sum();
    let question =
        format!("Do you want to apply to {n} environments, stage by stage ({})? {what}", order.join("; then "));
    out.confirm(&question, "apply")
}

/// `apply PLANFILE` of a saved plan of several environments: each
/// environment's plan applied on its broker, refused there if the broker
/// changed since; stage by stage as a rollout of the files.
fn run_saved(
    file: &Path,
    plans: SavedPlans,
    patterns: &[String],
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    if !options.replace.is_empty() || !options.targets.is_empty() {
        return Err(Error::invalid().line(
            "Nothing was changed: --replace and --target cannot be given with a saved plan, which records its own.",
        ));
    }
    let Some(first) = plans.environments.first() else {
        return Err(
            Error::invalid().line(format!("Nothing was changed: {} holds no environment's plan.", file.display()))
        );
    };
    // The saved plans' findings are those of their files.
    let out = &out.for_findings(super::findings::lists_of(&first.path, patterns), false);
    // The project file saved with the plans: its environments and stages.
    let project = desired::load_texts(&first.path, first.texts()).project;
    let saved: Vec<&str> = plans.environments.iter().filter_map(|p| p.environment.as_deref()).collect();
    let picked: Vec<Environment> = if patterns.is_empty() {
        project.environments.iter().filter(|e| saved.contains(&e.name.as_str())).cloned().collect()
    } else {
        match project.select(patterns) {
            Ok(p) => p.into_iter().cloned().collect(),
            Err(d) => return Err(Error::invalid().drawn([d], &Default::default())),
        }
    };
    if let Some(missing) = picked.iter().find(|e| !saved.contains(&e.name.as_str())) {
        return Err(Error::invalid().line(format!(
            "Nothing was changed: {} holds no plan of environment \"{}\"; it holds {}.",
            file.display(),
            missing.name,
            saved.join(", ")
        )));
    }
    if let [env] = &picked[..] {
        let input = saved_of(file, &plans, env, out)?;
        return super::block_on(apply_to(env, input, options, shared, out));
    }
    out.note(format!(
        "Applying the saved plans of {} environments in {}, made {}.",
        picked.len(),
        file.display(),
        first.created
    ));
    let stages = stages(&project, &picked);
    let what = "Each is refused if its broker changed since the plan.";
    if !options.auto_approve && !confirmed(&stages, what, out) {
        return Err(Error::new(Kind::Declined));
    }
    roll(&stages, file, Source::Saved(&plans), options, shared, out)
}

/// Applies the environments stage by stage, each as `warren apply TARGET
/// --env NAME` would; stops after a stage where one did not end well.
fn roll(
    stages: &[Vec<Environment>],
    target: &Path,
    source: Source,
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    let mut outcomes: Vec<(String, usize, Option<Exit>)> = Vec::new();
    let mut stopped = false;
    for (n, stage) in stages.iter().enumerate() {
        if stopped {
            outcomes.extend(stage.iter().map(|e| (e.name.clone(), n + 1, None)));
            continue;
        }
        let names: Vec<&str> = stage.iter().map(|e| e.name.as_str()).collect();
        out.note(format!("\nStage {} of {}: {}", n + 1, stages.len(), names.join(", ")));
        let mut ended: Vec<Exit> = vec![Exit::Error; stage.len()];
        // Each environment on a thread of its own (its plan is CPU), its
        // section printed as it ends.
        super::each_on_threads(
            stage,
            usize::from(shared.parallelism),
            |env| super::block_on(environment(target, source, env, options, shared, out)),
            |i, (exit, said_there)| {
                out.outln(format!("\n── environment {}: {} ──\n", stage[i].name, said(Some(exit))));
                out.out(said_there);
                ended[i] = exit;
            },
        );
        for (env, exit) in stage.iter().zip(ended) {
            stopped |= exit != Exit::Ok;
            outcomes.push((env.name.clone(), n + 1, Some(exit)));
        }
    }
    out.outln(format!("\nRollout of {} environments:\n", outcomes.len()));
    let width = outcomes.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    for (name, stage, exit) in &outcomes {
        out.outln(format!("  {name:<width$}  stage {stage}  {}", said(*exit)));
    }
    if stopped {
        out.outln("\nThe rollout stopped after the stage that did not end well; run it again to go on.");
    }
    // The rollout ends as its worst environment did.
    let worst = [Exit::Error, Exit::Refused, Exit::Locked, Exit::Paused]
        .into_iter()
        .find(|w| outcomes.iter().any(|(_, _, e)| *e == Some(*w)));
    match worst {
        None => Ok(Done::Ok),
        Some(exit) => Err(Error::new(Kind::Rollout(exit))),
    }
}

/// One environment of a rollout, confirmed already, applied as `warren
/// apply TARGET --env NAME --auto-approve` applies it: how it ended, and
/// what it said. Its plan was shown with the rollout's, so it says what it
/// did (all of it with -v).
async fn environment(
    target: &Path,
    source: Source<'_>,
    env: &Environment,
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> (Exit, String) {
    let buffer = Writer::buffer(Output { quiet: !out.verbose(), ..out.output() });
    let options = Options { auto_approve: true, ..options.clone() };
    let result = match source {
        Source::Files(chosen) => apply_one(chosen, target, env, &options, shared, &buffer).await,
        Source::Saved(plans) => match saved_of(target, plans, env, &buffer) {
            Ok(input) => apply_to(env, input, &options, shared, &buffer).await,
            Err(e) => Err(e),
        },
    };
    if let Err(e) = &result {
        buffer.error(e);
    }
    (error::exit(&result), buffer.take())
}

/// Environment `env`'s plan in the saved plans of `file`, as apply's input.
fn saved_of(file: &Path, plans: &SavedPlans, env: &Environment, out: &Writer) -> Result<ApplyInput, Error> {
    let plan = plans.environments.iter().find(|p| p.environment.as_deref() == Some(&env.name));
    let plan = plan.ok_or_else(|| {
        Error::invalid().line(format!(
            "Nothing was changed: {} holds no plan of environment \"{}\".",
            file.display(),
            env.name
        ))
    })?;
    saved_input(file, plan.clone(), &[], out)
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

/// `apply --env NAME`: the environment's topology, applied to its broker.
async fn apply_one(
    chosen: &Chosen,
    path: &Path,
    env: &Environment,
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    let desired = desired::environment(&chosen.base, path, env);
    let input = ApplyInput { desired, path: path.to_path_buf(), replace: options.replace.clone(), saved: None };
    apply_to(env, input, options, shared, out).await
}

/// Applies an environment's input (its files, or its saved plan) to its
/// broker.
async fn apply_to(
    env: &Environment,
    input: ApplyInput,
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    let connection = match fleet::connection(env, shared) {
        Ok(c) => c,
        Err(d) => return Err(Error::invalid().drawn([d], &input.desired.sources)),
    };
    if input.desired.has_errors() {
        let origin = live_side::describe(&connection);
        return Err(print_invalid(&input.desired, &input.path, &origin, Format::Human, out));
    }
    let broker = live_side::open(&connection)?;
    apply::apply(&broker, input, options, out).await
}
