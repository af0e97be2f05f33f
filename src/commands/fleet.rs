//! `--env`: a command over some of a project's environments, each its
//! topology (the base with its overlays) on its own broker. `plan` reads
//! every chosen broker at once and prints one report.

use std::path::Path;

use rayon::prelude::*;

use super::Show;
use super::live_side::{self, LiveSide};
use super::planned::{Planned, compute};
use super::saved_plan::saved;
use crate::cli::Connection;
use crate::desired::{self, Desired};
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error, Kind};
use crate::project::Environment;
use crate::render::fleet::{self, EnvironmentDoc, FleetDocument};
use crate::render::{DiagnosticDoc, Format, PlanDocument};
use crate::saved_plan::{self, FleetShown, SavedPlans};
use crate::writer::Writer;

/// The environments `--env` picks, and the base they share.
pub struct Chosen {
    /// The base's files as read, before the whole-topology checks, which
    /// run on each environment's merged topology.
    pub base: Desired,
    /// The base's own diagnostics, shown once.
    pub shown: Vec<Diagnostic>,
    /// What the whole-topology checks found in the base.
    pub findings: Vec<Diagnostic>,
    pub environments: Vec<Environment>,
}

/// Reads the base and picks the environments; a base with errors, or a
/// pattern that picks none, is said and ends the command.
pub fn choose(path: &Path, patterns: &[String], out: &Writer) -> Result<Chosen, Error> {
    let mut base = desired::load_unchecked(path);
    base.without_environment_problems();
    let mut checked = base.clone();
    let findings = desired::lint(&checked);
    checked.add_findings(findings.clone());
    if checked.has_errors() {
        // No document is made: they are drawn whatever the format.
        super::findings::shown(&checked.diagnostics, &checked.sources, out);
        return Err(Error::invalid().line(format!("{} is not valid: no environment was planned.", path.display())));
    }
    // Each environment's plan holds them in its document.
    super::findings::show(&checked.diagnostics, &checked.sources, out);
    match base.project.select(patterns) {
        Ok(picked) => {
            let environments = picked.into_iter().cloned().collect();
            Ok(Chosen { base, shown: checked.diagnostics, findings, environments })
        }
        Err(d) => Err(Error::invalid().drawn([d], &checked.sources)),
    }
}

/// The environments a command that reaches a broker runs on: those `envs`
/// names, else the project's `default_env`. A project with environments
/// and neither is an error that lists them: its base files alone, against
/// whatever WARREN_URL says, are no environment of it.
pub fn against_broker(path: &Path, envs: Vec<String>, out: &Writer) -> Result<Vec<String>, Error> {
    if !envs.is_empty() {
        return Ok(envs);
    }
    let project = crate::project::read(path);
    if project.environments.is_empty() {
        return Ok(envs);
    }
    if let Some(env) = project.default_env {
        out.note(format!("Environment \"{env}\" (default_env in warren.toml)."));
        return Ok(vec![env]);
    }
    let names: Vec<&str> = project.environments.iter().map(|e| e.name.as_str()).collect();
    Err(Error::invalid().line(format!(
        "error: this project has environments ({}): choose one with --env NAME, several with a glob or `--env all`\n  help: or name the one to use without --env as default_env under [project] in warren.toml",
        names.join(", ")
    )))
}

/// The topology of the one environment `patterns` must pick, checked; its
/// own diagnostics are shown (the base's were, by [`choose`]).
pub fn one(path: &Path, patterns: &[String], out: &Writer) -> Result<(Environment, Desired), Error> {
    let chosen = choose(path, patterns, out)?;
    single(&chosen, &chosen.environments, path, &mut chosen.shown.clone(), out)
}

/// The two environments `a` and `b` name (`diff --env A --env B`), each
/// checked: the base's diagnostics are shown once, then each one's own.
/// Gives them with every diagnostic shown.
pub fn two(path: &Path, a: &str, b: &str, out: &Writer) -> Result<Pair, Error> {
    let chosen = choose(path, &[a.to_string(), b.to_string()], out)?;
    let mut shown = chosen.shown.clone();
    let mut pick = |pattern: &str| {
        let picked = chosen.base.project.select(&[pattern.to_string()]).map_err(|_| Error::invalid())?;
        let picked: Vec<Environment> = picked.into_iter().cloned().collect();
        single(&chosen, &picked, path, &mut shown, out)
    };
    let first = pick(a)?;
    let second = pick(b)?;
    Ok(Pair { first, second, shown })
}

/// The two environments of [`two`], and the diagnostics shown of them.
pub struct Pair {
    pub first: (Environment, Desired),
    pub second: (Environment, Desired),
    pub shown: Vec<Diagnostic>,
}

/// The topology of the one environment of `picked`, checked, with its
/// diagnostics that are not among `shown` shown (and added to it).
fn single(
    chosen: &Chosen,
    picked: &[Environment],
    path: &Path,
    shown: &mut Vec<Diagnostic>,
    out: &Writer,
) -> Result<(Environment, Desired), Error> {
    let [env] = picked else {
        let names: Vec<&str> = picked.iter().map(|e| e.name.as_str()).collect();
        return Err(Error::invalid()
            .line(format!("error: this command takes one environment; `--env` picked {}", names.join(", "))));
    };
    let desired = desired::environment(&chosen.base, path, env);
    let own = desired.beyond(shown);
    // Files with errors get no document: their errors are drawn.
    if desired.has_errors() {
        super::findings::shown(&own, &desired.sources, out);
    } else {
        super::findings::show(&own, &desired.sources, out);
    }
    shown.extend(own);
    Ok((env.clone(), desired))
}

fn show(diagnostics: &[Diagnostic], desired: &Desired, out: &Writer) {
    super::validate::show(diagnostics, &desired.sources, out);
}

/// The connection to an environment's broker: its URLs from the variables
/// it names, the TLS files from the command line.
pub fn connection(env: &Environment, shared: &Connection) -> Result<Connection, Diagnostic> {
    if let Some(problem) = env.problems.first() {
        return Err(problem.clone());
    }
    let read = |variable: &str, what: &str| {
        std::env::var(variable).ok().filter(|v| !v.is_empty()).ok_or_else(|| {
            Diagnostic::error(
                "environment",
                format!("${variable} is not set: it holds the {what} of environment \"{}\"", env.name),
            )
            .help(format!(
                "export {variable}=https://user:password@host:port (credentials live in the variable, never in files)"
            ))
        })
    };
    let url = read(&env.url_env, "management API URL")?;
    let amqp_url = match &env.amqp_url_env {
        Some(v) => Some(read(v, "AMQP URL")?),
        None => None,
    };
    Ok(Connection { url: Some(url), amqp_url, ..shared.clone() })
}

/// One environment's part of a plan: its document, and the diagnostics of
/// its own to show (those the base does not have).
struct Part<H> {
    doc: EnvironmentDoc,
    own: Vec<Diagnostic>,
    /// The environment's files, to show its diagnostics against, when it
    /// has no plan (which holds them).
    desired: Option<Desired>,
    planning: Planning<H>,
}

/// An environment's plan, or the kind of error that kept it from one; and
/// what the read of its broker left held (a rollout's lock), whether or
/// not the environment could be planned.
pub struct Planning<H> {
    pub planned: Result<Box<Planned>, Kind>,
    pub held: Option<H>,
}

/// How an environment's broker is read for its plan: as it stands (`plan`),
/// or under the environment's lock, which a rollout keeps to apply what it
/// planned. Called on a thread of its own, inside the run's runtime.
pub trait Read: Sync {
    /// What the read leaves held, given back with the plan.
    type Held: Send;
    fn read(&self, env: &Environment, c: &Connection, desired: &Desired) -> Result<(LiveSide, Self::Held), Error>;
}

/// The broker as it stands: nothing is held.
struct AsItStands;

impl Read for AsItStands {
    type Held = ();
    fn read(&self, _: &Environment, c: &Connection, desired: &Desired) -> Result<(LiveSide, ()), Error> {
        let read = super::block_on(live_side::from_broker(c, &desired.topology, desired.project.name()));
        read.map(|live| (live, ())).map_err(|d| Error::invalid().drawn([d], &Default::default()))
    }
}

/// `warren plan --env ...`: one report for every chosen environment; with
/// `save`, also one saved plan of them all.
pub fn plan(
    path: &Path,
    patterns: &[String],
    save: Option<&Path>,
    show_as: &Show,
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    let mut chosen = choose(path, patterns, out)?;
    if let Err(d) = chosen.base.project.resolve(shared.project.as_deref(), true) {
        return Err(Error::invalid().drawn([d], &chosen.base.sources));
    }
    let (doc, planning) = plan_all(&chosen, path, shared, (&show_as.replace, &show_as.targets), &AsItStands, out);
    // Never freed: the run ends with this command, and freeing every
    // environment's plan took a tenth of a twelve-broker plan's
    // instructions, on one thread, after the report was ready.
    let planning = std::mem::ManuallyDrop::new(planning);
    let planned: Vec<Option<&Planned>> = planning.iter().map(|p| p.planned.as_deref().ok()).collect();
    print(&doc, show_as.format, out);
    let done = if doc.has_errors() {
        Err(Error::new(Kind::Environments))
    } else if show_as.detailed_exitcode && doc.has_changes() {
        Ok(Done::Changes)
    } else {
        Ok(Done::Ok)
    };
    let Some(file) = save else { return done };
    if done.is_err() || doc.environments.iter().any(|e| e.plan.as_ref().is_some_and(|p| !p.errors.is_empty())) {
        out.errln(format!("No saved plan was written to {}: not every environment has a plan.", file.display()));
        return Err(done.err().unwrap_or(Error::invalid()));
    }
    let environments = chosen
        .environments
        .iter()
        .zip(planned.iter())
        .filter_map(|(env, p)| p.as_ref().map(|p| saved(p, path, &show_as.replace, Some(&env.name))))
        .collect();
    let origins = planned.iter().flatten().map(|p| p.document.origin.clone()).collect();
    let shown = FleetShown { document: doc.clone(), origins };
    let plans = SavedPlans { warren_saved_plan: saved_plan::FORMAT_VERSION, environments, shown };
    match saved_plan::write(&plans, file) {
        Ok(()) => {
            out.note(format!(
                "Saved the plans of {} environments to {}. `warren apply {}` rolls out exactly these plans, \
                     each refused if its broker has changed by then.",
                plans.environments.len(),
                file.display(),
                file.display()
            ));
            done
        }
        Err(d) => Err(Error::invalid().drawn([d], &chosen.base.sources)),
    }
}

/// Prints the report on stdout; with -q, in the human format, its last line.
pub fn print(doc: &FleetDocument, format: Format, out: &Writer) {
    if out.quiet() && format == Format::Human {
        out.outln(fleet::summary_line(doc));
    } else {
        out.out(fleet::render(doc, format, out.color() && format == Format::Human));
    }
    if format == Format::Github {
        super::findings::step_summary(&fleet::render(doc, Format::Markdown, false), out);
    }
}

/// Plans every chosen environment, its broker read by `read` at once with
/// the others'; each environment's own diagnostics are shown on stderr.
pub fn plan_all<R: Read>(
    chosen: &Chosen,
    path: &Path,
    shared: &Connection,
    (replace, targets): (&[String], &[crate::diff::target::Target]),
    read: &R,
    out: &Writer,
) -> (FleetDocument, Vec<Planning<R::Held>>) {
    // Each environment's files, its connection, then every broker at once
    // beside the checks of the files (a plan's time is mostly the
    // brokers'), then each plan.
    let started: Vec<Started> = chosen
        .environments
        .par_iter()
        .map(|env| Started {
            env,
            desired: Desired { targets: targets.to_vec(), ..desired::environment_unchecked(&chosen.base, path, env) },
            connection: connection(env, shared),
        })
        .collect();
    // Taken here: rayon may run the reads on one of its threads, which has
    // no runtime of its own to find.
    let runtime = tokio::runtime::Handle::current();
    let (found, lives) = rayon::join(
        || started.par_iter().map(|s| findings(chosen, s)).collect::<Vec<_>>(),
        || {
            let _entered = runtime.enter();
            read_all(&started, read, usize::from(shared.parallelism))
        },
    );
    let parts: Vec<Part<R::Held>> = started
        .into_par_iter()
        .zip(found)
        .zip(lives)
        .map(|((s, found), live)| plan_one(chosen, path, s, found, live, replace))
        .collect();
    // The machine formats' document holds them.
    for (env, part) in chosen.environments.iter().zip(&parts).filter(|_| !out.output().documented) {
        let planned = part.planning.planned.as_ref().ok();
        let Some(desired) = part.desired.as_ref().or(planned.map(|p| &p.desired)) else { continue };
        if part.own.iter().any(|d| !out.quiet() || d.is_error()) {
            out.errln(format!("In environment {}:", env.name));
            show(&part.own, desired, out);
        }
    }
    let (docs, planning) = parts.into_iter().map(|p| (p.doc, p.planning)).unzip();
    (FleetDocument::new(&path.display().to_string(), docs), planning)
}

/// An environment's files as read, unchecked, and how to reach its broker.
struct Started<'a> {
    env: &'a Environment,
    desired: Desired,
    connection: Result<Connection, Diagnostic>,
}

/// What the whole-topology checks find in an environment's files. With no
/// overlays the environment is the base, checked already.
fn findings(chosen: &Chosen, s: &Started) -> Vec<Diagnostic> {
    if s.env.overlays.is_empty() { chosen.findings.clone() } else { desired::lint(&s.desired) }
}

/// Every environment's broker, read by `read` at most `at_once`
/// (--parallelism) at a time, each on a thread of its own (its answers are
/// parsed beside the others'), in the environments' order: one slow
/// broker holds up only its own environment. None for files with errors,
/// which get no plan, and for an environment without a connection.
fn read_all<R: Read>(started: &[Started<'_>], read: &R, at_once: usize) -> Vec<Option<LiveRead<R::Held>>> {
    let mut lives: Vec<Option<LiveRead<R::Held>>> = started.iter().map(|_| None).collect();
    let work = |s: &Started| match &s.connection {
        Ok(c) if !s.desired.has_errors() => Some(read.read(s.env, c, &s.desired)),
        _ => None,
    };
    super::each_on_threads(started.iter().collect(), at_once, work, |i, live| lives[i] = live);
    lives
}

/// What the read of an environment's broker gave.
type LiveRead<H> = Result<(LiveSide, H), Error>;

/// The plan of one environment, or why there is none.
fn plan_one<H>(
    chosen: &Chosen,
    path: &Path,
    started: Started,
    found: Vec<Diagnostic>,
    live: Option<LiveRead<H>>,
    replace: &[String],
) -> Part<H> {
    let Started { env, mut desired, connection } = started;
    desired.add_findings(found);
    let broker = connection.as_ref().map(live_side::describe).unwrap_or_default();
    // Whatever the read left held goes back with the part, planned or not.
    let (live, held) = match live {
        Some(Ok((live, held))) => (Some(Ok(live)), Some(held)),
        Some(Err(e)) => (Some(Err(e)), None),
        None => (None, None),
    };
    let failed = |errors: &[Diagnostic], desired: Desired, kind: Kind, held: Option<H>| {
        let docs = errors.iter().map(|d| DiagnosticDoc::new(d, &desired.sources)).collect();
        let warnings = desired.diagnostics.iter().filter(|d| !d.is_error());
        let warnings = warnings.map(|d| DiagnosticDoc::new(d, &desired.sources)).collect();
        let doc = EnvironmentDoc::failed(&env.name, &broker, docs, warnings);
        let planning = Planning { planned: Err(kind), held };
        Part { doc, own: desired.beyond(&chosen.shown), desired: Some(desired), planning }
    };
    if let Err(d) = connection {
        return failed(&[d], desired, Kind::Invalid, held);
    }
    if desired.has_errors() {
        let errors: Vec<Diagnostic> = desired.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        return failed(&errors, desired, Kind::Invalid, held);
    }
    let live = match live.expect("read when the files have no errors") {
        Ok(l) => l,
        Err(e) => return failed(&[for_environment(said(&e), env)], desired, e.kind, held),
    };
    let mut planned: Planned = compute(desired, path, live, replace);
    planned.document.origin.environment = Some(env.name.clone());
    let doc: PlanDocument = planned.document.clone();
    let mut doc = EnvironmentDoc::planned(&env.name, &broker, doc);
    doc.never_applied = never_applied(&planned);
    let own = planned.desired.beyond(&chosen.shown);
    Part { doc, own, desired: None, planning: Planning { planned: Ok(Box::new(planned)), held } }
}

/// An error that kept an environment from its plan, as one diagnostic of
/// the report: a broker's with its help, else its own first diagnostic,
/// else its lines (the help after "help:"), without "Nothing was changed",
/// which the command says once.
fn said(e: &Error) -> Diagnostic {
    if let Kind::Broker(b) = &e.kind {
        return live_side::diagnostic(b);
    }
    if let Some(d) = e.diagnostics.first() {
        return d.clone();
    }
    let text = e.lines.join("\n");
    let text = text.replace("Nothing was changed.", "");
    let (message, help) = match text.split_once("\n  help: ") {
        Some((m, h)) => (m, Some(h.trim())),
        None => (text.as_str(), None),
    };
    let message = message.trim().trim_start_matches("error: ");
    let code = if e.kind == Kind::Locked { "lock" } else { "environment" };
    let d = Diagnostic::error(code, message.trim());
    match help {
        Some(h) => d.help(h),
        None => d,
    }
}

/// Whether warren never applied the project to the broker it planned
/// against: the records hold nothing of the project. (The journal is no
/// witness: an administrator's is the whole broker's, and names another
/// project's applies to the same vhosts.)
fn never_applied(planned: &Planned) -> bool {
    planned.live.ownership.of(planned.desired.project.name()).objects.is_empty()
}

/// A broker error's help names the environment's variable, not `--url`.
fn for_environment(mut d: Diagnostic, env: &Environment) -> Diagnostic {
    let variable = format!("${}", env.url_env);
    d.help = d.help.map(|h| h.replace("--url (or WARREN_URL)", &variable).replace("--url or WARREN_URL", &variable));
    d
}

/// `warren status --env ...`: each environment's broker in turn, under a
/// heading; one that cannot be read does not keep the others from view.
pub fn status(path: &Path, patterns: &[String], shared: &Connection, out: &Writer) -> error::Result {
    each_broker(path, patterns, shared, out, |broker| super::status::status_of(broker, out))
}

/// `warren history --env ...`: each environment's runs in turn, of
/// `vhosts` only when given (the vhosts as the broker names them).
pub fn history(
    path: &Path,
    patterns: &[String],
    vhosts: &[String],
    shared: &Connection,
    out: &Writer,
) -> error::Result {
    each_broker(path, patterns, shared, out, |broker| super::status::history_of(broker, vhosts, out))
}

/// Runs `read` on each environment's broker in turn, under a heading that
/// names the environment and its broker; an environment whose broker
/// cannot be reached does not stop the others.
fn each_broker(
    path: &Path,
    patterns: &[String],
    shared: &Connection,
    out: &Writer,
    read: impl Fn(&crate::broker::Rabbit) -> error::Result,
) -> error::Result {
    // Only the project file matters here: the topology is not read.
    let project = crate::project::read(path);
    let picked = match project.select(patterns) {
        Ok(p) => p,
        Err(d) => return Err(Error::invalid().drawn([d], &Default::default())),
    };
    let mut failed = false;
    for (i, env) in picked.into_iter().enumerate() {
        let connection = connection(env, shared);
        let broker = connection.as_ref().map_or(String::new(), |c| format!(" ({})", live_side::describe(c)));
        out.outln(format!("{}Environment {}{broker}:", if i > 0 { "\n" } else { "" }, env.name));
        let ended = match connection {
            Ok(c) => live_side::open(&c).and_then(|b| read(&b)),
            Err(d) => Err(Error::invalid().drawn([d], &Default::default())),
        };
        // Said under its heading: the next environment's follows.
        if let Err(e) = &ended {
            out.error(e);
        }
        failed |= ended.is_err();
    }
    if failed { Err(Error::new(Kind::Environments)) } else { Ok(Done::Ok) }
}
