//! Where a plan's live side comes from: a definitions export, or the broker
//! (one definitions request, and one queue listing per declared vhost),
//! with warren's records: the inventory and the journal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::broker::{Broker, BrokerError, Endpoint, Rabbit, Tls};
use crate::cli::Connection;
use crate::diagnostic::Diagnostic;
use crate::live::{self, Export, Live, Text};
use crate::model::{Ownership, QueueCounts, Records, Topology};

/// The live side of a comparison.
#[derive(Debug, Clone)]
pub struct LiveSide {
    pub topology: Topology,
    /// Every project's records.
    pub ownership: Ownership,
    /// Where each project's records were found.
    pub records: Records,
    /// The migrations in flight, by id, from warren's journal.
    pub migrations: BTreeMap<String, crate::journal::Migration>,
    /// Each vhost's last apply, from warren's journals.
    pub last_applies: BTreeMap<String, crate::journal::LastApply>,
    /// How the plan names it: `definitions file x.json`, `http://host:15672`.
    pub origin: String,
    pub notes: Vec<Diagnostic>,
    /// Known only when read from a broker.
    pub queue_counts: Option<BTreeMap<(String, String), QueueCounts>>,
    /// The broker's RabbitMQ version (major, minor), when read from one.
    pub broker_version: Option<(u32, u32)>,
    /// The user warren connects as, when read from a broker.
    pub user: Option<String>,
    /// The plugins enabled on the broker, when read from one whose plugins
    /// the files' kinds need and the user can tell.
    pub plugins: Option<BTreeSet<String>>,
    /// How each declared vhost was read (whole, or by name) and why, for `-v`.
    pub reads: Vec<String>,
}

/// A definitions export to plan against: `plan --state FILE [--vhost NAME]`.
#[derive(Debug, Clone, Copy)]
pub struct StateFile<'a> {
    pub path: &'a Path,
    /// The vhost an export of one vhost is read as.
    pub vhost: Option<&'a str>,
}

/// An export read; or one of a single vhost that does not say which, to be
/// read once the files are loaded ([`StateRead::finish`]).
/// The live side and the parsed export are boxed: both are large.
pub enum StateRead {
    Read(Box<LiveSide>),
    Unnamed { export: Box<Export>, path: PathBuf },
}

/// Reads the export. It is read beside the files, so an export of one vhost
/// that does not say which, without `--vhost`, waits for them.
pub fn from_state(state: StateFile) -> Result<StateRead, Diagnostic> {
    let path = state.path;
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::error("read", format!("cannot read {}: {e}", path.display()))
            .help("give --state the path of a RabbitMQ definitions export")
    })?;
    let origin = path.display().to_string();
    let export = Export::parse(&text, &origin)?;
    // The text is as large as the rest of the export together: it goes
    // before the export is read, and is read again in the rare case that
    // a skipped item's place is wanted.
    drop(text);
    let mut notes = Vec::new();
    match (export.vhost(state.vhost), state.vhost) {
        (Err(_), None) => return Ok(StateRead::Unnamed { export: Box::new(export), path: path.to_path_buf() }),
        (Ok(None), Some(v)) => notes.push(
            Diagnostic::warning(
                live::NOTE_CODE,
                format!("--vhost \"{v}\" is ignored: {origin} is a cluster-wide export, whose items name their vhosts"),
            )
            .help("--vhost names the vhost of an export of one vhost (GET /api/definitions/{vhost}); drop it here"),
        ),
        _ => {}
    }
    let live = export.read(Text::File(path), &origin, state.vhost, &[])?;
    Ok(StateRead::Read(Box::new(side(live, path, notes))))
}

impl StateRead {
    /// The live side: an export of one vhost that does not say which is
    /// read as the one vhost the files declare, and said so.
    pub fn finish(self, desired: &Topology) -> Result<LiveSide, Diagnostic> {
        let (export, path) = match self {
            StateRead::Read(side) => return Ok(*side),
            StateRead::Unnamed { export, path } => (export, path),
        };
        let origin = path.display().to_string();
        let declared: Vec<&String> = desired.vhosts.keys().collect();
        let [vhost] = declared.as_slice() else {
            let files = if declared.is_empty() {
                "the files declare no vhost".to_string()
            } else {
                let names: Vec<String> = declared.iter().map(|v| format!("\"{}\"", v.escape_debug())).collect();
                format!("the files declare vhosts {}", names.join(", "))
            };
            return Err(Diagnostic::error(
                "definitions",
                format!("{origin} is the export of a single vhost, and does not say which vhost it came from"),
            )
            .help(format!("name it: `warren plan PATH --state FILE --vhost NAME` ({files})")));
        };
        let note = Diagnostic::warning(
            live::NOTE_CODE,
            format!(
                "{origin} is the export of a single vhost and does not say which; read as vhost \"{}\", the only vhost the files declare",
                vhost.escape_debug()
            ),
        )
        .help("give --vhost NAME to read it as another vhost");
        let live = export.read(Text::File(&path), &origin, Some(vhost), &[])?;
        Ok(side(live, &path, vec![note]))
    }
}

/// The live side of an export at `path`, with `notes` before its own.
fn side(l: Live, path: &Path, mut notes: Vec<Diagnostic>) -> LiveSide {
    notes.extend(l.notes);
    LiveSide {
        topology: l.topology,
        ownership: l.ownership,
        records: l.records,
        migrations: l.migrations,
        last_applies: l.last_applies,
        origin: format!("definitions file {}", path.display()),
        notes,
        queue_counts: None,
        broker_version: None,
        user: None,
        plugins: None,
        reads: Vec::new(),
    }
}

/// A broker error as a diagnostic: what went wrong, and what to do.
pub fn diagnostic(e: &BrokerError) -> Diagnostic {
    Diagnostic::error("broker", e.to_string()).help(e.help())
}

/// The management API's address without credentials, for messages.
pub fn describe(c: &Connection) -> String {
    let parsed = c.url.as_deref().map(|url| Endpoint::parse(url, Tls::default()));
    parsed.and_then(Result::ok).map(|e| e.to_string()).unwrap_or_else(|| "the broker".into())
}

/// Why a command that needs a broker has none: warren never picks one.
pub fn no_broker() -> Diagnostic {
    Diagnostic::error("broker", "no broker given: warren has no default broker, and never picks one for you")
        .help("name the management API of the broker to use with --url or WARREN_URL, as http(s)://user:password@host:port; to plan without a broker, give a definitions export with --state FILE")
}

pub fn connect(c: &Connection) -> Result<Rabbit, Diagnostic> {
    let tls = Tls { ca_cert: c.ca_cert.clone(), client_cert: c.client_cert.clone(), client_key: c.client_key.clone() };
    let url = c.url.as_deref().ok_or_else(no_broker)?;
    let mut endpoint = Endpoint::parse(url, tls).map_err(|e| {
        Diagnostic::error("broker", e).help("set --url or WARREN_URL to http(s)://user:password@host:port")
    })?;
    endpoint.timeout = Some(c.request_timeout).filter(|t| !t.is_zero());
    Rabbit::new(endpoint, c.amqp_url.as_deref()).map_err(|e| diagnostic(&e))
}

/// [`connect`] for a command that says only why not.
pub fn open(c: &Connection) -> Result<Rabbit, crate::error::Error> {
    connect(c).map_err(|d| crate::error::Error::invalid().line(format!("error: {}", d.message)))
}

/// The live side of the broker `c` reaches, for the files' topology of
/// `project`.
pub async fn from_broker(c: &Connection, desired: &Topology, project: &str) -> Result<LiveSide, Diagnostic> {
    let broker = connect(c)?;
    read(&broker, desired, Some(project)).await.map_err(|e| diagnostic(&e))
}

/// Reads the broker's topology as a definitions export gives it (one
/// definitions request), with the vhost settings that 3.10-3.12 exports
/// leave out taken from the vhost listing (one more request), and the
/// broker's version. Only the vhosts in `only` are read, when it is not
/// empty (see [`live::from_vhost_definitions_only`]).
pub async fn read_definitions(broker: &impl Broker, only: &[String]) -> Result<(Live, String), BrokerError> {
    let version = broker.check().await?;
    let origin = broker.origin();
    // Independent requests, at once: the broker's time is most of a plan's.
    let (text, listing) = tokio::join!(broker.definitions(), broker.vhosts());
    let mut l = live::from_vhost_definitions_only(&text?, &origin, None, only).map_err(live::broker_error)?;
    live::add_vhost_listing(&mut l, &listing?, &origin).map_err(live::broker_error)?;
    Ok((l, version))
}

/// [`read_definitions`] for a command that needs nothing else from the broker.
pub fn definitions_from_broker(c: &Connection, only: &[String]) -> Result<Live, Diagnostic> {
    let broker = connect(c)?;
    super::block_on(read_definitions(&broker, only)).map(|(l, _)| l).map_err(|e| diagnostic(&e))
}

/// Reads the live state of the broker for `project` (`None`: every
/// declared vhost whole), with counts for the
/// desired vhosts' queues. A broker error is returned as such so callers
/// can tell kinds apart.
pub async fn read(broker: &impl Broker, desired: &Topology, project: Option<&str>) -> Result<LiveSide, BrokerError> {
    let (l, version, reads) = read_state(broker, desired, project).await?;
    // Asked only when the files need a plugin: most projects do not.
    let plugins = match desired.kind_objects().any(|(_, n, _)| n.kind.plugin.is_some()) {
        true => broker.plugins().await?,
        false => None,
    };
    let origin = broker.origin();
    // Counts matter only where a queue may be destroyed: a live queue the
    // files no longer declare. Listing queues is as slow as the export.
    let mut counts = BTreeMap::new();
    for (name, want) in &desired.vhosts {
        let Some(have) = l.topology.vhosts.get(name) else { continue };
        let replaced: Vec<&str> = want.queues.values().filter_map(|q| q.replaces.as_deref()).collect();
        let absent: BTreeSet<String> = have
            .queues
            .keys()
            .filter(|q| !want.queues.contains_key(*q) && !replaced.contains(&q.as_str()))
            .cloned()
            .collect();
        if !absent.is_empty() {
            // A vhost read by name has its queues' counts read by name too.
            let only = have.unread.is_some().then_some(&absent);
            for (queue, c) in broker.queue_counts(name, only).await? {
                counts.insert((name.clone(), queue), c);
            }
        }
    }
    Ok(LiveSide {
        topology: l.topology,
        ownership: l.ownership,
        records: l.records,
        migrations: l.migrations,
        last_applies: l.last_applies,
        origin,
        notes: l.notes,
        queue_counts: Some(counts),
        broker_version: major_minor(&version),
        user: Some(broker.user()),
        plugins,
        reads,
    })
}

/// The live state of the declared vhosts (each read whole or by name for
/// `project`, [`live::narrow`]; `None`: whole), the broker's version, and how each vhost
/// was read, as [`read`] reads them, without the queue counts.
pub async fn read_state(
    broker: &impl Broker,
    desired: &Topology,
    project: Option<&str>,
) -> Result<(Live, String, Vec<String>), BrokerError> {
    // At once: with 10,000 queues the overview takes the broker 30-70 ms,
    // for nothing the reads need. Its error, if any, is the one said.
    let (version, l) = tokio::join!(broker.check(), live::narrow::from_broker(broker, desired, project));
    let (version, (l, reads)) = (version?, l?);
    if !broker.is_administrator().await? {
        beyond_vhosts(desired, &l.topology, broker)?;
    }
    Ok((l, version, reads))
}

/// A user without the `administrator` tag can plan only objects inside
/// vhosts that exist and that it has permissions on: not vhosts, their
/// settings, users or permissions, which it can neither read nor write.
fn beyond_vhosts(desired: &Topology, live: &Topology, broker: &impl Broker) -> Result<(), BrokerError> {
    let needs = |what: String| BrokerError::Forbidden {
        user: broker.user(),
        action: what,
        needs: Some("the `administrator` tag".into()),
    };
    if let Some(u) = desired.user_names().next() {
        return Err(needs(format!("read or manage users (the files declare user \"{u}\")")));
    }
    for (name, v) in &desired.vhosts {
        if let Some(u) = v.permission_users().next() {
            return Err(needs(format!(
                "read or manage permissions (the files declare permissions of \"{u}\" in vhost \"{name}\")"
            )));
        }
        if v.settings != Default::default() {
            return Err(needs(format!("read or manage vhost settings (the files set [vhost] for \"{name}\")")));
        }
        if !live.vhosts.contains_key(name) {
            return Err(needs(format!(
                "create vhost \"{name}\" (it does not exist, or this user has no permissions on it)"
            )));
        }
    }
    Ok(())
}

/// `3.10.8` -> `(3, 10)`.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}
