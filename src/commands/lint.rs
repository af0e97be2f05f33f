//! `warren lint`: every rule over the files and, with `--live`, over the
//! broker the plan would read; each environment's merged topology with
//! `--env`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use super::{fleet, live_side};
use crate::broker::{Broker, BrokerError, Clients};
use crate::cli::Connection;
use crate::desired::{self, Desired};
use crate::diagnostic::{Diagnostic, Severity, render};
use crate::error::{self, Done, Error, Kind};
use crate::lint::{self, Allowed, Findings};
use crate::render::lint::{self as report, LintDocument, LintFormat};
use crate::source::Location;
use crate::writer::Writer;

#[derive(Debug, Clone)]
pub struct Options {
    pub live: bool,
    pub format: LintFormat,
    /// `--deny warnings`: warnings count as errors.
    pub deny_warnings: bool,
}

/// What one run lints: the base files, or an environment's merged topology
/// and broker.
struct Target<'a> {
    environment: Option<&'a str>,
    desired: Desired,
    connection: Result<Connection, Diagnostic>,
}

pub fn run(path: &Path, envs: &[String], options: &Options, connection: &Connection, out: &Writer) -> error::Result {
    let unchecked = desired::load_unchecked(path);
    let mut targets = Vec::new();
    let mut picked: Vec<crate::project::Environment> = Vec::new();
    if !envs.is_empty() {
        picked = match unchecked.project.select(envs) {
            Ok(p) => p.into_iter().cloned().collect(),
            Err(d) => {
                return Err(Error::invalid().drawn([d], &unchecked.sources));
            }
        };
    }
    for env in &picked {
        targets.push(Target {
            environment: Some(&env.name),
            desired: desired::environment_unchecked(&unchecked, path, env),
            connection: fleet::connection(env, connection),
        });
    }
    // The base files, unless each environment is linted against its own
    // broker: then only the environments are.
    if picked.is_empty() || !options.live {
        targets.insert(0, Target { environment: None, desired: unchecked, connection: Ok(connection.clone()) });
    }
    let mut doc = LintDocument::new();
    let mut text = String::new();
    // What the base showed and allowed: an environment shows what its
    // overlays add to it.
    let mut base: HashSet<(Option<Location>, String)> = HashSet::new();
    for t in &targets {
        let (mut shown, mut allowed) =
            if options.live { lint_broker(&t.desired, t.connection.clone()) } else { lint_files(&t.desired, None) };
        let key = |d: &Diagnostic| (d.location.clone(), d.message.clone());
        if t.environment.is_none() {
            base.extend(shown.iter().chain(allowed.iter().map(|a| &a.finding)).map(key));
        } else if !options.live {
            shown.retain(|d| !base.contains(&key(d)));
            allowed.retain(|a| !base.contains(&key(&a.finding)));
        }
        if options.deny_warnings {
            for d in shown.iter_mut().filter(|d| d.severity == Severity::Warning) {
                d.severity = Severity::Error;
            }
        }
        crate::diagnostic::sort(&mut shown);
        // Drawn for people only: the machine formats are the document.
        if options.format == LintFormat::Human {
            if let Some(env) = t.environment {
                text += &format!("environment {env}:\n");
            }
            let visible: Vec<Diagnostic> = shown.iter().filter(|d| !out.quiet() || d.is_error()).cloned().collect();
            text += &render(&visible, &t.desired.sources, out.style());
        }
        doc.add(t.environment, &shown, &allowed, &t.desired.sources);
    }
    match options.format {
        LintFormat::Human => {
            out.out(text);
            if doc.summary.allowed > 0 && !out.quiet() {
                out.outln(format!(
                    "{} finding(s) allowed by `lint_allow` or [lint]: `--format json` lists them.",
                    doc.summary.allowed
                ));
            }
            out.outln(report::summary_line(&doc.summary));
        }
        format => super::findings::print(&doc, format, path, "warren lint", out),
    }
    if doc.summary.errors > 0 { Err(Error::new(Kind::Findings)) } else { Ok(Done::Ok) }
}

/// `warren lint --rules`.
pub fn rules(format: LintFormat, out: &Writer) -> error::Result {
    out.out(report::rules(format != LintFormat::Human));
    Ok(Done::Ok)
}

/// The files' own problems and every static rule's findings; for a broker
/// of `version`, at the severity that version calls for.
fn lint_files(d: &Desired, version: Option<(u32, u32)>) -> (Vec<Diagnostic>, Vec<Allowed>) {
    let Findings { shown, allowed } = desired::findings_for(d, version);
    let mut all = d.diagnostics.clone();
    all.extend(shown);
    (all, allowed)
}

/// The static rules at the broker's version, and the live rules over what
/// it reports; a broker that cannot be read is an error finding.
fn lint_broker(d: &Desired, connection: Result<Connection, Diagnostic>) -> (Vec<Diagnostic>, Vec<Allowed>) {
    let observed = connection.and_then(|c| {
        let broker = live_side::connect(&c)?;
        super::block_on(observe(&broker, d)).map_err(|e| live_side::diagnostic(&e))
    });
    match observed {
        Err(e) => {
            let (mut shown, allowed) = lint_files(d, None);
            shown.push(e);
            (shown, allowed)
        }
        Ok(observed) => {
            let (mut shown, mut allowed) = lint_files(d, observed.version);
            let live = lint::live::check(&d.topology, &d.locations, &d.project.lint, &observed);
            shown.extend(live.shown);
            allowed.extend(live.allowed);
            (shown, allowed)
        }
    }
}

/// What the live rules read: the live state of the declared vhosts, every
/// project's inventory, each vhost's consumers and connections (and, in a
/// vhost with services, its channels), the deprecated features
/// in use and, where the broker keeps per-exchange statistics, the details
/// of each channel of a service's user that published.
async fn observe(broker: &impl Broker, d: &Desired) -> Result<lint::live::Observed, BrokerError> {
    // Independent requests, at once; no queue counts, which no rule reads.
    let clients = async {
        let mut out = BTreeMap::new();
        for (vhost, v) in &d.topology.vhosts {
            // Connections and channels only where services make a contract.
            let clients = match v.services.is_empty() {
                true => Clients { consumers: broker.consumers(vhost).await?, connections: Vec::new() },
                false => broker.clients(vhost).await?,
            };
            out.insert(vhost.clone(), clients);
        }
        Ok::<_, BrokerError>(out)
    };
    let with_services = d.topology.vhosts.values().any(|v| !v.services.is_empty());
    let details = async {
        if !with_services {
            return Ok((false, true));
        }
        tokio::try_join!(broker.channel_details_kept(), broker.sees_every_client())
    };
    let (state, clients, deprecated, details) = tokio::join!(
        live_side::read_state(broker, &d.topology, Some(d.project.name())),
        clients,
        broker.deprecated_features_used(),
        details
    );
    let (live, version, _) = state?;
    let clients = clients?;
    let (kept, every_client) = details?;
    let published_to = match kept && every_client {
        true => Some(published_to(broker, d, &clients).await?),
        false => None,
    };
    let (consumers, connections) =
        clients.into_iter().map(|(v, c)| ((v.clone(), c.consumers), (v, c.connections))).unzip();
    Ok(lint::live::Observed {
        version: live_side::major_minor(&version),
        topology: live.topology,
        ownership: live.ownership,
        consumers,
        deprecated: deprecated?,
        connections,
        published_to,
        every_client,
    })
}

/// The exchanges each channel that published, of a connection of a
/// service's user, published to: one request per such channel, eight at a
/// time.
async fn published_to(
    broker: &impl Broker,
    d: &Desired,
    clients: &BTreeMap<String, Clients>,
) -> Result<BTreeMap<String, BTreeSet<String>>, BrokerError> {
    use futures_util::{StreamExt, TryStreamExt};
    let mut channels: Vec<&String> = Vec::new();
    for (vname, v) in &d.topology.vhosts {
        let users: BTreeSet<&str> = v.services.values().map(|s| s.user.as_str()).collect();
        let Some(c) = clients.get(vname) else { continue };
        let of_services = c.connections.iter().filter(|c| users.contains(c.user.as_str()));
        channels.extend(of_services.flat_map(|c| &c.publishing_channels));
    }
    futures_util::stream::iter(channels)
        .map(|ch| async move { broker.published_to(ch).await.map(|x| (ch.clone(), x)) })
        .buffer_unordered(8)
        .try_collect()
        .await
}
