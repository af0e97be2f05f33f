//! `warren test`: the routing tests (`*.test.toml`) run against the files'
//! topology, each environment's with `--env`, or the broker's with
//! `--live` (read only: the broker's definitions, never a message
//! published).

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;

use super::{fleet, live_side};
use crate::cli::Connection;
use crate::desired::{self, Desired};
use crate::diagnostic::{Diagnostic, render};
use crate::error::{self, Done, Error, Kind};
use crate::model::Topology;
use crate::project::Environment;
use crate::render::test_report::{TestDocument, TestFormat, summary_line};
use crate::route_test::{Outcome, Routers, Suite};
use crate::routing::Version;
use crate::writer::Writer;

#[derive(Debug, Clone)]
pub struct Options {
    pub live: bool,
    pub format: TestFormat,
}

/// What one run tests on: the base files, or an environment's merged
/// topology (and broker).
struct Target<'a> {
    environment: Option<&'a Environment>,
    desired: Desired,
}

/// `warren test` as the command line gives it: with `--live`, the
/// environments to reach are settled as for every command that reaches a
/// broker.
pub fn given(
    path: &Path,
    envs: Vec<String>,
    live: bool,
    format: TestFormat,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    let envs = if live { fleet::against_broker(path, envs, out)? } else { envs };
    run(path, &envs, &Options { live, format }, connection, out)
}

pub fn run(path: &Path, envs: &[String], options: &Options, connection: &Connection, out: &Writer) -> error::Result {
    let mut base = desired::load_unchecked(path);
    if !envs.is_empty() {
        base.without_environment_problems();
    }
    let suite = Suite::beside(path, &mut base);
    if suite.is_empty() && options.format == TestFormat::Human {
        out.note(format!("No routing tests: `warren test` runs the *.test.toml files below {}.", path.display()));
    }
    let picked: Vec<Environment> = if envs.is_empty() || base.project_unreadable() {
        Vec::new()
    } else {
        match base.project.select(envs) {
            Ok(p) => p.into_iter().cloned().collect(),
            Err(d) => return Err(Error::invalid().drawn([d], &base.sources)),
        }
    };
    let targets: Vec<Target> = if picked.is_empty() {
        let found = desired::lint(&base);
        base.add_findings(found);
        vec![Target { environment: None, desired: base }]
    } else {
        picked
            .iter()
            .map(|env| Target { environment: Some(env), desired: desired::environment(&base, path, env) })
            .collect()
    };
    let mut doc = TestDocument::new(options.live, options.format == TestFormat::Json);
    let mut drawn = Vec::new();
    for t in &targets {
        let env = t.environment.map(|e| e.name.as_str());
        let (errors, failures) = test_one(path, &suite, t, options.live, connection, &mut doc, out);
        if options.format == TestFormat::Human {
            if let Some(env) = env.filter(|_| !errors.is_empty() || !failures.is_empty()) {
                drawn.push(format!("environment {env}:\n"));
            }
            drawn.push(render(&errors, &t.desired.sources, out.style()));
            drawn.push(render(&failures, &t.desired.sources, out.style()));
        }
    }
    print(&doc, options.format, path, &drawn.concat(), out);
    if doc.summary.errors > 0 {
        Err(Error::invalid())
    } else if doc.summary.failed > 0 {
        Err(Error::new(Kind::Findings))
    } else {
        Ok(Done::Ok)
    }
}

/// Runs the tests of one target into `doc`; gives the errors that kept
/// tests from running and the failures, as diagnostics.
fn test_one(
    root: &Path,
    suite: &Suite,
    t: &Target,
    live: bool,
    connection: &Connection,
    doc: &mut TestDocument,
    out: &Writer,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let env = t.environment.map(|e| e.name.as_str());
    let sources = &t.desired.sources;
    let files = Routers::new(&t.desired.topology, &t.desired.renamed, Version::NEWEST);
    let tests = suite.for_target(root, t.environment);
    // The names each test uses, checked once: the vhost it runs in.
    let mut errors: Vec<Diagnostic> = t.desired.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
    let mut vhosts = Vec::new();
    if !crate::route_test::topology_has_errors(&t.desired) {
        for checked in tests.par_iter().map(|e| files.check(e)).collect::<Vec<_>>() {
            match checked {
                Ok(vhost) => vhosts.push(vhost),
                Err(found) => errors.extend(found),
            }
        }
    }
    crate::diagnostic::sort(&mut errors);
    if !errors.is_empty() {
        doc.add_errors(env, &errors, sources);
        return (errors, Vec::new());
    }
    let broker = if live {
        match read_broker(t, connection) {
            Ok(read) => Some(read),
            Err(d) => {
                doc.add_errors(env, std::slice::from_ref(&d), sources);
                return (vec![d], Vec::new());
            }
        }
    } else {
        None
    };
    let none = BTreeMap::new();
    let on_broker = broker.as_ref().map(|(topology, version)| Routers::new(topology, &none, *version));
    let routers = on_broker.as_ref().unwrap_or(&files);
    // Each test alone, over the routers shared by all: on every core.
    let judged: Vec<(Outcome, Vec<Diagnostic>)> = tests
        .par_iter()
        .zip(&vhosts)
        .map(|(e, vhost)| {
            let outcome = routers.judge(e, vhost);
            let failed = outcome.diagnostics(e);
            (outcome, failed)
        })
        .collect();
    let mut failures = Vec::new();
    for (e, (outcome, failed)) in tests.into_iter().zip(judged) {
        if out.verbose() {
            let (line, _) = sources.line_col(&e.at);
            let verdict = if outcome.passed() { "pass" } else { "FAIL" };
            let file = sources.get(e.at.file).path.display();
            let said = format!("{} {}", crate::route_test::subject(e), outcome.actual.describe_for(e));
            out.errln(format!("{verdict} {file}:{line}: {said}"));
        }
        doc.add(env, e, &outcome, &failed, sources);
        failures.extend(failed);
    }
    (Vec::new(), failures)
}

/// The broker's topology of the declared vhosts and its version: read
/// only, the definitions and the version alone.
fn read_broker(t: &Target, shared: &Connection) -> Result<(Topology, Version), Diagnostic> {
    let connection = match t.environment {
        Some(env) => fleet::connection(env, shared)?,
        None => shared.clone(),
    };
    let broker = live_side::connect(&connection)?;
    // Whole: a routing test follows messages through any exchange.
    let (live, version, _) = super::block_on(live_side::read_state(&broker, &t.desired.topology, None))
        .map_err(|e| live_side::diagnostic(&e))?;
    Ok((live.topology, Version::parse(Some(&version))))
}

/// The report in its format: for people, the failures drawn and the
/// summary line; otherwise the document or its CI rendering, the whole of
/// stdout.
fn print(doc: &TestDocument, format: TestFormat, path: &Path, drawn: &str, out: &Writer) {
    let title = format!("warren test {}", path.display());
    let findings = doc.findings();
    match format {
        TestFormat::Human => {
            out.out(drawn);
            out.outln(summary_line(&doc.summary));
        }
        TestFormat::Json => out.out(doc.json()),
        TestFormat::Markdown => out.out(doc.markdown(&title)),
        TestFormat::Gitlab => out.out(crate::render::ci::gitlab(&findings, &path.display().to_string())),
        TestFormat::Sarif => out.out(crate::render::ci::sarif(&findings)),
        TestFormat::Github => {
            out.out(crate::render::ci::github(&findings));
            super::findings::step_summary(&doc.markdown(&title), out);
        }
    }
}
