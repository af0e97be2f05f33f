//! Routing tests (`*.test.toml`, read by `crate::desired::expect`): their
//! names checked against a topology, and each expectation judged by the
//! one routing model ([`crate::routing`]) over the files' topology or a
//! broker's. One [`Router`] per vhost serves every test of a run.

mod outcome;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use outcome::{Actual, Failure, Outcome, path, subject};

use crate::desired::Desired;
use crate::desired::expect::{Expectation, Named, Subject};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::model::Topology;
use crate::project::{Environment, Project};
use crate::routing::{Reason, Router, Version};
use crate::source::Sources;

/// The test files of a project, each with its expectations.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    pub files: Vec<(PathBuf, Vec<Expectation>)>,
    /// Every environment's overlay directories: the tests below one hold
    /// for that environment alone.
    overlays: Vec<PathBuf>,
}

impl Suite {
    /// Reads the test files below `root` into `sources`; their problems go
    /// to `diagnostics`.
    pub fn load(root: &Path, project: &Project, sources: &mut Sources, diagnostics: &mut Vec<Diagnostic>) -> Suite {
        let files = crate::desired::expect::load(root, sources, diagnostics);
        Suite { files, overlays: project.overlay_dirs(root, None) }
    }

    /// The test files below `root`, beside the topology `desired` read
    /// from there: their texts join its sources, their problems its
    /// diagnostics.
    pub fn beside(root: &Path, desired: &mut Desired) -> Suite {
        let mut problems = Vec::new();
        let suite = Suite::load(root, &desired.project, &mut desired.sources, &mut problems);
        desired.add_findings(problems);
        suite
    }

    /// How many expectations there are, in every file.
    pub fn len(&self) -> usize {
        self.files.iter().map(|(_, e)| e.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The expectations that hold for `env` (the base files when `None`):
    /// those of the files outside every overlay, and those below `env`'s
    /// own overlays, as topology files are merged.
    pub fn for_target<'s>(&'s self, root: &Path, env: Option<&Environment>) -> Vec<&'s Expectation> {
        let overlays: Vec<PathBuf> = match env {
            Some(e) => e.overlays.iter().map(|o| root.join(o)).collect(),
            None => Vec::new(),
        };
        self.files
            .iter()
            .filter(|(file, _)| !self.in_any_overlay(file) || overlays.iter().any(|o| file.starts_with(o)))
            .flat_map(|(_, e)| e)
            .collect()
    }

    fn in_any_overlay(&self, file: &Path) -> bool {
        self.overlays.iter().any(|o| file.starts_with(o))
    }
}

/// The vhosts' routers of one topology, and how an environment renamed
/// its vhosts (the base's name to its own).
pub struct Routers<'t> {
    topology: &'t Topology,
    renamed: &'t BTreeMap<String, String>,
    routers: BTreeMap<&'t str, Router<'t>>,
}

impl<'t> Routers<'t> {
    pub fn new(topology: &'t Topology, renamed: &'t BTreeMap<String, String>, version: Version) -> Self {
        let routers = topology.vhosts.iter().map(|(name, v)| (name.as_str(), Router::new(v, version))).collect();
        Routers { topology, renamed, routers }
    }

    /// The router of the vhost a test names, or why there is none.
    fn of(&self, e: &Expectation) -> Result<(&str, &Router<'t>), Diagnostic> {
        let Some(named) = &e.vhost else {
            return match self.routers.iter().next() {
                Some((name, router)) if self.routers.len() == 1 => Ok((name, router)),
                _ => Err(Diagnostic::error(
                    "missing-key",
                    format!("the topology has {} vhosts: this test must say which it is about", self.routers.len()),
                )
                .at(e.at.clone())
                .label("no `vhost`")
                .help("add `vhost = \"NAME\"` to the test, or once at the top of the file")),
            };
        };
        let name = self.renamed.get(&named.name).unwrap_or(&named.name);
        match self.routers.get_key_value(name.as_str()) {
            Some((name, router)) => Ok((name, router)),
            None => Err(unknown("vhost", named, self.topology.vhosts.keys().map(String::as_str))),
        }
    }

    /// The vhost `e` is about, or what is wrong with the names it uses: a
    /// vhost, exchange or queue the topology does not have, an unknown reason.
    pub fn check(&self, e: &Expectation) -> Result<String, Vec<Diagnostic>> {
        let (vhost, router) = self.of(e).map_err(|d| vec![d])?;
        let v = &self.topology.vhosts[vhost];
        let queues = || v.queues.keys().map(String::as_str);
        let mut out = Vec::new();
        match &e.subject {
            Subject::Route { exchange, .. } if !router.exchange_exists(&exchange.name) => {
                out.push(unknown("exchange", exchange, v.exchanges.keys().map(String::as_str)));
            }
            Subject::DeadLetters { queue, reason, .. } => {
                if !router.queue_exists(&queue.name) {
                    out.push(unknown("queue", queue, queues()));
                }
                if Reason::parse(&reason.name).is_none() {
                    out.push(bad_reason(reason));
                }
            }
            Subject::Route { .. } => {}
        }
        for want in &e.wants {
            for q in want.queues.iter().filter(|q| !router.queue_exists(&q.name)) {
                out.push(unknown("queue", q, queues()));
            }
        }
        if out.is_empty() { Ok(vhost.to_string()) } else { Err(out) }
    }

    /// Where the message or dead letters of `e` go in `vhost` (as
    /// [`Routers::check`] found it), judged against what `e` states. Names
    /// this topology lacks (a broker's, that the files declare) route
    /// nowhere.
    pub fn judge(&self, e: &Expectation, vhost: &str) -> Outcome {
        match self.routers.get(vhost) {
            Some(router) => Outcome::judge(e, vhost, router),
            None => Outcome::nowhere(e, vhost, format!("no vhost \"{vhost}\"")),
        }
    }
}

/// The names the tests for `env` (the base when `None`) use, checked
/// against `desired`'s topology; nothing when the topology files have
/// errors of their own, which come first (a test with errors of its own
/// is not in the suite).
pub fn check(suite: &Suite, root: &Path, env: Option<&Environment>, desired: &Desired) -> Vec<Diagnostic> {
    if topology_has_errors(desired) {
        return Vec::new();
    }
    let routers = Routers::new(&desired.topology, &desired.renamed, Version::NEWEST);
    suite.for_target(root, env).into_iter().flat_map(|e| routers.check(e).err().unwrap_or_default()).collect()
}

/// A name the topology does not have, at its place, with the closest one.
fn unknown<'a>(kind: &str, named: &Named, known: impl Iterator<Item = &'a str> + Clone) -> Diagnostic {
    let d = Diagnostic::error("unknown-name", format!("no {kind} \"{}\" in the topology", named.name))
        .at(named.at.clone())
        .label(format!("unknown {kind}"));
    match did_you_mean(&named.name, known) {
        Some(close) => d.help(format!("did you mean \"{close}\"?")),
        None => d.help(format!("name a {kind} the topology files declare")),
    }
}

fn bad_reason(reason: &Named) -> Diagnostic {
    let all: Vec<String> = Reason::ALL.iter().map(|r| format!("\"{}\"", r.as_str())).collect();
    Diagnostic::error("bad-value", format!("\"{}\" is not a reason a message is dead-lettered for", reason.name))
        .at(reason.at.clone())
        .help(format!("the reasons are {}", all.join(", ")))
}

/// Whether the topology files (not the test files) have errors: the names
/// of tests are checked only against a topology read whole.
pub fn topology_has_errors(desired: &Desired) -> bool {
    let in_topology = |d: &Diagnostic| {
        d.location.as_ref().is_none_or(|l| !crate::desired::expect::is_test_file(&desired.sources.get(l.file).path))
    };
    desired.diagnostics.iter().any(|d| d.is_error() && in_topology(d))
}
