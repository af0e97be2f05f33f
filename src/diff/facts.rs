//! What was read from the broker for a diff.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::QueueCounts;

/// The facts read from the live broker and from warren's records on it,
/// for one diff: nothing in it is the user's choice (those are
/// [`Options`](super::Options)). Offline (`--state`, `diff OLD NEW`) most
/// are unknown, and the diff assumes the worst of what it cannot know.
#[derive(Debug, Clone, Default)]
pub struct BrokerFacts {
    /// The live broker's version (major, minor), when known: some changes
    /// are ignored or refused by some versions.
    pub broker_version: Option<(u32, u32)>,
    /// The plugins enabled on the live broker, when known: a kind that
    /// needs one it lacks is refused before any write.
    pub plugins: Option<BTreeSet<String>>,
    /// Message and consumer counts of live queues, keyed by (vhost, name),
    /// when read from a broker; `None` offline (counts unknown).
    pub queue_counts: Option<BTreeMap<(String, String), QueueCounts>>,
    /// The migrations in flight, by id, from warren's journal.
    pub in_flight: BTreeMap<String, crate::journal::Migration>,
    /// Each vhost's last apply, from warren's journals: when the objects
    /// changed outside warren were last as it left them.
    pub last_applies: BTreeMap<String, crate::journal::LastApply>,
    /// The user warren connects as, when read from a broker: its own
    /// access is guarded (see `access.rs`).
    pub connected_user: Option<String>,
    /// Users whose password, read from the environment, does not match the
    /// live hash.
    pub stale_passwords: BTreeSet<String>,
}
