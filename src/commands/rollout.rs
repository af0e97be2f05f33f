//! `warren apply --env ...`: one environment is applied as `warren apply`
//! applies a topology; several are rolled out stage by stage in the order
//! of `[deploy]`, the environments of one stage at once on the run's
//! runtime, each with its own lock, journal and output (a buffer, printed
//! as the environment's section when it ends), and the rollout stops before
//! the next stage when any environment of a stage did not end well.
//! Environments in no stage go last, together.
//!
//! Each environment of a rollout of files is locked before its broker is
//! read for the rollout's plan, and stays locked until its apply ends, as
//! one `apply` holds its lock from its read to its end: what it carries
//! out is the plan shown, made once.

use std::path::Path;
use std::time::Duration;

use super::apply::{self, Options, Request};
use super::fleet::{self, Chosen, Planning, Read};
use super::live_side::{self, LiveSide};
use super::planned::Planned;
use super::saved_plan::{ApplyInput, is_saved_plans, read_plans, saved_input};
use super::{plan::print_invalid, session};
use crate::apply::Recorder;
use crate::broker::Rabbit;
use crate::cli::Connection;
use crate::desired::{self, Desired};
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
    let mut chosen = fleet::choose(path, patterns, out)?;
    if let Err(d) = chosen.base.project.resolve(shared.project.as_deref(), true) {
        return Err(Error::invalid().drawn([d], &chosen.base.sources));
    }
    if let [env] = &chosen.environments[..] {
        return super::block_on(apply_one(&chosen, path, env, options, shared, out));
    }
    let stages = planned_under_locks(&chosen, path, options, shared, out)?;
    let what = "Each is locked, and carries out the plan shown.";
    if !options.auto_approve && !confirmed(&stages, what, out) {
        release(stages.into_iter().flatten().map(|(_, (_, h))| h), out);
        return Err(Error::new(Kind::Declined));
    }
    let options = Options { auto_approve: true, ..options.clone() };
    let request = Request { path, replace: &options.replace, saved: None, options: &options };
    let carry_out = |env: &Environment, (planned, held): (Box<Planned>, Held), buffer: &Writer| {
        super::block_on(async {
            let Held::Locked(recorder) = held else {
                return apply_one(&chosen, path, env, &options, shared, buffer).await;
            };
            let broker = recorder.broker();
            let (result, ended) = apply::carry_out(&planned, &request, broker, &recorder, buffer).await;
            session::end(recorder, ended, buffer).await;
            result
        })
    };
    let not_started = |left: Vec<(Box<Planned>, Held)>| release(left.into_iter().map(|(_, h)| h), out);
    roll(stages, usize::from(shared.parallelism), carry_out, not_started, out)
}

/// Every environment's plan, each made under the environment's lock, in
/// the rollout's stages, once the report of them all is printed; or, when
/// any could not be locked or planned, nothing but every lock given back.
fn planned_under_locks(
    chosen: &Chosen,
    path: &Path,
    options: &Options,
    shared: &Connection,
    out: &Writer,
) -> Result<Stages<(Box<Planned>, Held)>, Error> {
    let project = &chosen.base.project;
    let order: Vec<Environment> = staged(project, &chosen.environments, vec![(); chosen.environments.len()])
        .into_iter()
        .flatten()
        .map(|(e, ())| e)
        .collect();
    let brokers = opened(&order, shared, out);
    // What the journal says the locked environments' run is doing, to an
    // apply that waits for one of them.
    let doing = format!("a rollout of {} environments", chosen.environments.len());
    let read = UnderLock { brokers, timeout: options.lock_timeout, doing, out };
    let (doc, planning) = fleet::plan_all(chosen, path, shared, (&options.replace, &options.targets), &read, out);
    fleet::print(&doc, Format::Human, out);
    let (mut planned, mut failed, mut held) = (Vec::new(), Vec::new(), Vec::new());
    for Planning { planned: p, held: h } in planning {
        match p {
            Ok(p) => planned.push((p, h.expect("a plan's read leaves what it holds"))),
            Err(kind) => {
                failed.push(kind);
                held.extend(h);
            }
        }
    }
    if failed.is_empty() {
        return Ok(staged(project, &chosen.environments, planned));
    }
    held.extend(planned.into_iter().map(|(_, h)| h));
    release(held, out);
    // Another apply's lock says so in the exit (5), as `apply` does.
    let kind = if failed.contains(&Kind::Locked) { Kind::Locked } else { Kind::Environments };
    Err(Error::new(kind).line("Nothing was changed: every chosen environment must be planned before any is applied."))
}

/// A rollout's environments in its stages, each with what it is given.
type Stages<T> = Vec<Vec<(Environment, T)>>;

/// What an environment's read for the rollout's plan leaves held.
enum Held {
    /// Its lock, taken before the read: the run that holds it until its
    /// apply ends, on the broker it was planned against.
    Locked(Recorder<Rabbit>),
    /// Nothing: an environment before it in the rollout holds the lock of
    /// its broker, so it plans again under the lock in its stage.
    Shared,
}

/// A rollout's read of each broker: the environment's lock first (waiting
/// up to `timeout` for another holder), then its live side under it, as
/// `apply` reads it; the lock is kept for the environment's apply.
struct UnderLock<'a> {
    brokers: Vec<Opened>,
    timeout: Duration,
    doing: String,
    out: &'a Writer,
}

impl Read for UnderLock<'_> {
    type Held = Held;

    fn read(&self, env: &Environment, _: &Connection, desired: &Desired) -> Result<(LiveSide, Held), Error> {
        let opened = self.brokers.iter().find(|o| o.env == env.name).expect("every environment is opened");
        let broker = opened.broker.clone()?;
        super::block_on(async {
            if !opened.locked {
                let project = Some(desired.project.name());
                let live = live_side::read(&broker, &desired.topology, project).await.map_err(Error::broker)?;
                return Ok((live, Held::Shared));
            }
            let place = apply::place(&broker, desired).await?;
            // Several environments wait for their locks at once: each
            // says which it is.
            let out = &self.out.labelled(&format!("environment {}", env.name));
            let recorder = session::begin(&broker, place, self.timeout, &self.doing, out).await?;
            match apply::read_locked(&broker, desired, &recorder, out).await {
                Ok(live) => Ok((live, Held::Locked(recorder))),
                Err(e) => {
                    session::end(recorder, None, out).await;
                    Err(e)
                }
            }
        })
    }
}

/// An environment's broker, opened for the rollout's plan.
struct Opened {
    env: String,
    broker: Result<Rabbit, Error>,
    /// Whether the rollout takes the environment's lock for its plan.
    locked: bool,
}

/// Each environment's broker, opened (its overview read, at once with the
/// others'), and whether the rollout takes its lock for the plan:
/// not when an environment before it in `order` (the rollout's) reaches
/// the same broker, by its cluster's name, and so holds the lock that
/// this one would wait for until the end of the rollout. Its lock is
/// taken in its stage, as `apply` takes it.
fn opened(order: &[Environment], shared: &Connection, out: &Writer) -> Vec<Opened> {
    // Each broker, and its cluster's name when it answered.
    type Answered = (Result<Rabbit, Error>, Option<String>);
    let mut brokers: Vec<Option<Answered>> = order.iter().map(|_| None).collect();
    let open = |env: &Environment| {
        let broker = fleet::connection(env, shared).map_err(|d| Error::invalid().drawn([d], &Default::default()));
        let broker = broker.and_then(|c| live_side::open(&c));
        let cluster = broker.as_ref().ok().and_then(|b| super::block_on(b.cluster_name()).ok());
        (broker, cluster)
    };
    super::each_on_threads(order.iter().collect(), usize::from(shared.parallelism), open, |i, b| {
        brokers[i] = Some(b);
    });
    let mut holders: Vec<(String, &str)> = Vec::new();
    let mut opened = Vec::new();
    for (env, (broker, cluster)) in order.iter().zip(brokers.into_iter().flatten()) {
        let holder = cluster.as_ref().and_then(|c| holders.iter().find(|(h, _)| h == c)).map(|(_, e)| *e);
        if let Some(first) = holder {
            out.note(format!(
                "Environment {} reaches the broker of environment {first}, whose lock the rollout holds: it is planned \
                 without its lock, and plans again under it in its stage.",
                env.name
            ));
        } else if let Some(c) = cluster {
            holders.push((c, env.name.as_str()));
        }
        opened.push(Opened { env: env.name.clone(), broker, locked: holder.is_none() });
    }
    opened
}

/// Gives back the locks of environments that will not be applied: their
/// runs leave the journal without a trace.
fn release(held: impl IntoIterator<Item = Held>, out: &Writer) {
    let ends = held.into_iter().filter_map(|h| match h {
        Held::Locked(recorder) => Some(session::end(recorder, None, out)),
        Held::Shared => None,
    });
    super::block_on(futures_util::future::join_all(ends));
}

/// Asks once for the whole rollout.
fn confirmed<T>(stages: &Stages<T>, what: &str, out: &Writer) -> bool {
    let order: Vec<String> =
        stages.iter().map(|s| s.iter().map(|(e, _)| e.name.as_str()).collect::<Vec<_>>().join(", ")).collect();
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
    let stages = staged(&project, &picked, vec![(); picked.len()]);
    let what = "Each is refused if its broker changed since the plan.";
    if !options.auto_approve && !confirmed(&stages, what, out) {
        return Err(Error::new(Kind::Declined));
    }
    let options = Options { auto_approve: true, ..options.clone() };
    let apply_saved = |env: &Environment, (): (), buffer: &Writer| match saved_of(file, &plans, env, buffer) {
        Ok(input) => super::block_on(apply_to(env, input, &options, shared, buffer)),
        Err(e) => Err(e),
    };
    roll(stages, usize::from(shared.parallelism), apply_saved, drop, out)
}

/// Applies the environments stage by stage, each by `apply` with what it
/// is given, as `warren apply TARGET --env NAME --auto-approve` would;
/// stops after a stage where one did not end well, and gives what the
/// stages after it were given to `not_started`.
fn roll<T: Send>(
    stages: Stages<T>,
    at_once: usize,
    apply: impl Fn(&Environment, T, &Writer) -> error::Result + Sync,
    not_started: impl Fn(Vec<T>),
    out: &Writer,
) -> error::Result {
    let mut outcomes: Vec<(String, usize, Option<Exit>)> = Vec::new();
    let mut stopped = false;
    let count = stages.len();
    for (n, stage) in stages.into_iter().enumerate() {
        let names: Vec<String> = stage.iter().map(|(e, _)| e.name.clone()).collect();
        if stopped {
            outcomes.extend(names.into_iter().map(|e| (e, n + 1, None)));
            not_started(stage.into_iter().map(|(_, t)| t).collect());
            continue;
        }
        out.note(format!("\nStage {} of {count}: {}", n + 1, names.join(", ")));
        let mut ended: Vec<Exit> = vec![Exit::Error; names.len()];
        // Each environment on a thread of its own (its apply is CPU too),
        // its section printed as it ends.
        super::each_on_threads(
            stage,
            at_once,
            |(env, t)| environment(&env, t, &apply, out),
            |i, (exit, said_there)| {
                out.outln(format!("\n── environment {}: {} ──\n", names[i], said(Some(exit))));
                out.out(said_there);
                ended[i] = exit;
            },
        );
        for (name, exit) in names.into_iter().zip(ended) {
            stopped |= exit != Exit::Ok;
            outcomes.push((name, n + 1, Some(exit)));
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

/// One environment of a rollout, confirmed already, applied by `apply`:
/// how it ended, and what it said. Its plan was shown with the rollout's,
/// so it says what it did (all of it with -v).
fn environment<T>(
    env: &Environment,
    given: T,
    apply: &impl Fn(&Environment, T, &Writer) -> error::Result,
    out: &Writer,
) -> (Exit, String) {
    let buffer = Writer::buffer(Output { quiet: !out.verbose(), ..out.output() });
    let result = apply(env, given, &buffer);
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

/// The chosen environments, each with what it is given (in their order),
/// in the stages of `[deploy]`; those in no stage last, together.
fn staged<T>(project: &Project, chosen: &[Environment], given: Vec<T>) -> Stages<T> {
    let mut left: Vec<Option<(Environment, T)>> = chosen.iter().cloned().zip(given).map(Some).collect();
    let mut take = |name: &str| {
        let i = chosen.iter().position(|e| e.name == name)?;
        left[i].take()
    };
    let mut out: Vec<Vec<(Environment, T)>> = Vec::new();
    for stage in &project.stages {
        let picked: Vec<(Environment, T)> = stage.iter().filter_map(|n| take(n)).collect();
        if !picked.is_empty() {
            out.push(picked);
        }
    }
    let rest: Vec<(Environment, T)> = left.into_iter().flatten().collect();
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
