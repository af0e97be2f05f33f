//! The live state: a RabbitMQ definitions export (JSON) to a [`Topology`],
//! normalised so that it compares equal to the desired topology when nothing
//! changed.
//!
//! Choices, beyond the broker's own defaults (https://www.rabbitmq.com/docs/definitions,
//! https://www.rabbitmq.com/docs/vhosts#default-queue-type):
//! - A queue's type is its `x-queue-type` argument (removed from the
//!   arguments), else the item's `type` (3.13+), else the vhost's default
//!   queue type, else classic.
//! - Vhost settings are `Some` only when the export says something: a
//!   non-empty description, a known default queue type, at least one limit
//!   (see `vhosts.rs`).
//! - Left out: the default and `amq.*` exchanges, the default exchange's
//!   bindings, federation's upstream exchanges and queues (and their
//!   bindings), the broker's own global parameters and warren's records,
//!   broker-wide or inside vhosts (`model::records`): the inventories
//!   (which become [`Live::ownership`]) and journals (whose in-flight
//!   migrations become [`Live::migrations`]).
//! - Kept, with a note: bindings whose ends the file does not declare,
//!   bindings from `amq.*` exchanges, policies with keys RabbitMQ does not
//!   know, permissions of unlisted users, objects in unlisted vhosts (the
//!   vhost is added).
//! - Skipped, as RabbitMQ's import skips them, each with a warning at its
//!   place in the file (`skipped.rs`): items of a cluster-wide export that
//!   name no vhost, users whose hash is not base64, and their permissions.
//! - Read as no password, with a note: a plaintext `password`. A hash made
//!   with the default algorithm (SHA-256) has `algorithm: None`; one without
//!   `hashing_algorithm` in a file of RabbitMQ 3.0 to 3.5 is MD5 (`users.rs`).
//! - Read by the kind that holds them (`model::kinds`), defaults filled
//!   in as the broker takes them: topic permissions, shovels, federation
//!   upstreams and upstream sets, global parameters.
//! - Not modelled, with a note: other vhost parameters (of plugins warren
//!   has no kind for).

mod answers;
pub(crate) mod definitions;
pub mod narrow;
mod normalise;
pub(crate) mod notes;
mod skipped;
mod users;
mod vhosts;

pub use notes::CODE as NOTE_CODE;
pub use skipped::{Scope, Skipped, Text};
pub use users::DEFAULT_HASHING_ALGORITHM;

use std::collections::BTreeSet;

use definitions::Definitions;

use crate::diagnostic::Diagnostic;
use crate::model::{Ownership, Records, Topology, Vhost};

/// The live state read from a definitions export or the broker.
#[derive(Debug, Clone)]
pub struct Live {
    /// Normalised: compares equal to the desired Topology when nothing changed.
    pub topology: Topology,
    /// Every project's inventory, from global parameter "warren.inventory";
    /// empty if absent.
    pub ownership: Ownership,
    /// Where each project's records were found, for writing them back.
    pub records: Records,
    /// The migrations in flight, from warren's journal (global parameter
    /// "warren.journal"); empty if absent.
    pub migrations: std::collections::BTreeMap<String, crate::journal::Migration>,
    /// Each vhost's last apply, from warren's journals.
    pub last_applies: std::collections::BTreeMap<String, crate::journal::LastApply>,
    /// Warnings (code "live-quirk", no location) for the quirks found; those
    /// about skipped items say where the item is in their message.
    pub notes: Vec<Diagnostic>,
    /// Items RabbitMQ would not load either, left out (see `skipped.rs`).
    pub skipped: Vec<Skipped>,
}

/// The live state of these vhosts on a broker
/// ([`crate::broker::Broker::answers_of`]), read and normalised as a
/// definitions export is. An unreadable answer is a broker error too:
/// callers tell broker errors apart.
pub async fn from_broker(
    broker: &impl crate::broker::Broker,
    vhosts: &[String],
) -> Result<Live, crate::broker::BrokerError> {
    let answers = broker.answers_of(vhosts).await?;
    from_answers(answers, &broker.origin())
}

/// A broker's answers read as [`from_broker`] reads them; the vhosts read
/// by name are marked so ([`crate::model::Vhost::unread`]).
fn from_answers(answers: crate::broker::Answers, origin: &str) -> Result<Live, crate::broker::BrokerError> {
    let unread = answers.unread.clone();
    let defs = answers::read(answers, origin);
    let mut live = defs.and_then(|d| from_parsed(d, Text::None, origin, None, &[])).map_err(broker_error)?;
    narrow::mark(&mut live.topology, &unread);
    Ok(live)
}

/// A live read's diagnostic as a broker error: one about warren's records
/// (code `records`) keeps its help, which says how to delete the record;
/// any other says that the broker's answer cannot be read.
pub fn broker_error(d: Diagnostic) -> crate::broker::BrokerError {
    match d.code {
        "records" => crate::broker::BrokerError::Records { reason: d.message, help: d.help.unwrap_or_default() },
        _ => crate::broker::BrokerError::Unreadable { action: "read the definitions".into(), reason: d.message },
    }
}

/// Reads a cluster-wide export, or a 4.x single-vhost export that names its
/// vhost (`original_vhost_name`). `origin` names the file in messages.
pub fn from_definitions(json: &str, origin: &str) -> Result<Live, Diagnostic> {
    from_vhost_definitions(json, origin, None)
}

/// Reads an export of one vhost (`GET /api/definitions/{vhost}`, whose
/// queues, exchanges and bindings have no `vhost` field) into `vhost`, or into the vhost a 4.x export names
/// when `vhost` is `None`. A cluster-wide export names its own vhosts and is
/// read as [`from_definitions`] reads it.
pub fn from_vhost_definitions(json: &str, origin: &str, vhost: Option<&str>) -> Result<Live, Diagnostic> {
    from_vhost_definitions_only(json, origin, vhost, &[])
}

/// Reads like [`from_vhost_definitions`], but only the vhosts in `only`
/// (every vhost when it is empty) and the users with permissions in them,
/// as `warren import --vhost` writes them: the notes speak of nothing else.
/// The export's other vhosts are there by name only, empty, so that a caller
/// can tell a vhost the export lacks from one left unread.
pub fn from_vhost_definitions_only(
    json: &str,
    origin: &str,
    vhost: Option<&str>,
    only: &[String],
) -> Result<Live, Diagnostic> {
    Export::parse(json, origin)?.read(Text::Held(json), origin, vhost, only)
}

/// A definitions export parsed but not read yet: a caller can ask which
/// vhost it holds before choosing the vhost to read it as.
#[derive(Debug)]
pub struct Export {
    defs: Definitions,
}

impl Export {
    /// Parses `json`; an error says where the file is malformed.
    pub fn parse(json: &str, origin: &str) -> Result<Export, Diagnostic> {
        let mut defs = definitions::parse(json, origin)?;
        // As a live read drops them (`answers::read`): each path once.
        normalise::drop_stale_parts(&mut defs.global_parameters);
        Ok(Export { defs })
    }

    /// The vhost this export is read as when `vhost` is given (or not):
    /// `None` for a cluster-wide export, whose items name their own
    /// vhosts; an error for an export of one vhost that does not say which.
    pub fn vhost(&self, vhost: Option<&str>) -> Result<Option<String>, Diagnostic> {
        single_vhost(&self.defs, "the export", vhost).map(|(v, _)| v)
    }

    /// Reads the export, as [`from_vhost_definitions_only`] does; `text` is
    /// the text it was parsed from.
    pub fn read(self, text: Text, origin: &str, vhost: Option<&str>, only: &[String]) -> Result<Live, Diagnostic> {
        from_parsed(self.defs, text, origin, vhost, only)
    }
}

/// [`from_vhost_definitions_only`] of an export already parsed from `text`.
fn from_parsed(
    mut defs: Definitions,
    text: Text,
    origin: &str,
    vhost: Option<&str>,
    only: &[String],
) -> Result<Live, Diagnostic> {
    let (single, renamed) = single_vhost(&defs, origin, vhost)?;
    // A single-vhost export holds one vhost: nothing to leave unread.
    let unread = if single.is_none() { keep_only(&mut defs, only) } else { BTreeSet::new() };
    let mut live = normalise::read(defs, origin, single, text)?;
    for name in unread {
        live.topology.vhosts.entry(name.clone()).or_insert_with(|| Vhost::new(&name));
    }
    if let Some(note) = renamed {
        live.notes.insert(0, note);
    }
    Ok(live)
}

/// Drops the items of vhosts not in `only` (none when it is empty), and the
/// users left without permissions; returns the vhosts dropped. Items that
/// name no vhost stay, for the reader to report.
fn keep_only(defs: &mut Definitions, only: &[String]) -> BTreeSet<String> {
    let mut unread = BTreeSet::new();
    if only.is_empty() {
        return unread;
    }
    let mut keep = |vhost: Option<&String>| match vhost {
        Some(v) if !only.contains(v) => {
            unread.insert(v.clone());
            false
        }
        _ => true,
    };
    if let Some(list) = &mut defs.vhosts {
        list.retain(|v| keep(Some(&v.name)));
    }
    defs.queues.retain(|i| keep(i.vhost.as_ref()));
    defs.exchanges.retain(|i| keep(i.vhost.as_ref()));
    defs.bindings.retain(|i| keep(i.vhost.as_ref()));
    defs.policies.retain(|i| keep(i.vhost.as_ref()));
    defs.parameters.retain(|i| keep(i.vhost.as_ref()));
    defs.permissions.retain(|i| keep(i.vhost.as_ref()));
    defs.topic_permissions
        .retain(|i| keep(i.get("vhost").and_then(serde_json::Value::as_str).map(str::to_string).as_ref()));
    let with_permissions: BTreeSet<&String> = defs.permissions.iter().map(|p| &p.user).collect();
    defs.users.retain(|u| with_permissions.contains(&u.name));
    unread
}

/// The vhost of a single-vhost export (`None` for a cluster-wide one), and
/// a note when the caller's name differs from the one the file records.
fn single_vhost(
    defs: &Definitions,
    origin: &str,
    vhost: Option<&str>,
) -> Result<(Option<String>, Option<Diagnostic>), Diagnostic> {
    let single = match defs.rabbitmq_definition_format.as_deref() {
        Some("single_virtual_host") => true,
        Some(_) => false,
        // 3.x single-vhost exports have no format marker: no vhost list, no
        // users, and no queue, exchange or binding names its vhost (3.10.8
        // still writes `vhost` in policies and parameters).
        None => {
            defs.vhosts.is_none()
                && defs.users.is_empty()
                && !names_vhosts(defs)
                && (vhost.is_some() || has_items(defs))
        }
    };
    if !single {
        return Ok((None, None));
    }
    let original = defs.original_vhost_name.as_deref();
    match (vhost, original) {
        (Some(v), Some(o)) if v != o => {
            let note = Diagnostic::warning(
                NOTE_CODE,
                format!("the export was taken from vhost \"{o}\"; read as vhost \"{v}\", as asked"),
            )
            .help("drop the vhost name to read it as the vhost it came from");
            Ok((Some(v.to_string()), Some(note)))
        }
        (Some(v), _) | (None, Some(v)) => Ok((Some(v.to_string()), None)),
        (None, None) => Err(Diagnostic::error(
            "definitions",
            format!("{origin} is the export of a single vhost, and does not say which vhost it came from"),
        )
        .help("name the vhost, e.g. `warren import --state FILE --vhost NAME`")),
    }
}

fn names_vhosts(d: &Definitions) -> bool {
    d.queues.iter().any(|i| i.vhost.is_some())
        || d.exchanges.iter().any(|i| i.vhost.is_some())
        || d.bindings.iter().any(|i| i.vhost.is_some())
        || !d.permissions.is_empty()
}

fn has_items(d: &Definitions) -> bool {
    !(d.queues.is_empty()
        && d.exchanges.is_empty()
        && d.bindings.is_empty()
        && d.policies.is_empty()
        && d.parameters.is_empty())
}

#[cfg(test)]
mod tests;

/// Fills vhost descriptions, default queue types, tags and deletion protection from a `GET
/// /api/vhosts` listing: 3.10-3.12 exports leave them out of definitions.
/// Limits stay as the definitions gave them.
pub fn add_vhost_listing(live: &mut Live, listing: &str, origin: &str) -> Result<(), Diagnostic> {
    let items: Vec<definitions::VhostDef> = serde_json::from_str(listing)
        .map_err(|e| Diagnostic::error("definitions", format!("{origin}: the vhost listing is not readable: {e}")))?;
    let mut notes = notes::Notes::default();
    for item in items {
        if let Some(v) = live.topology.vhosts.get_mut(&item.name) {
            let s = vhosts::settings(&item.fields, &item.name, &mut notes);
            v.settings.description = s.description;
            v.settings.default_queue_type = s.default_queue_type;
            v.settings.tags = s.tags;
            v.settings.protected_from_deletion = s.protected_from_deletion;
        }
    }
    Ok(())
}
