//! A vhost read by name ([`super::Broker::read_named`]): the objects a
//! project declares, owns or references, the bindings that touch them and
//! the objects at those bindings' other ends, and nothing else, so that a
//! plan's reads grow with the project rather than with the vhost.

use std::collections::BTreeSet;

use serde_json::Value as Json;

use super::Listing;

/// The objects of one vhost to read by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Read with every binding to them.
    pub queues: BTreeSet<String>,
    /// Read with every binding from them and to them.
    pub exchanges: BTreeSet<String>,
    /// Bindings whose ends are not read above, by their ends: (source,
    /// whether the destination is an exchange, destination).
    pub pairs: BTreeSet<(String, bool, String)>,
    /// Queues read alone, without their bindings: another's that the
    /// project references (its bindings to the project's objects come with
    /// those objects).
    pub referenced_queues: BTreeSet<String>,
    /// Exchanges read alone, likewise.
    pub referenced_exchanges: BTreeSet<String>,
}

impl Wanted {
    /// How many names: what the read costs, in objects.
    pub fn len(&self) -> usize {
        self.queues.len()
            + self.exchanges.len()
            + self.pairs.len()
            + self.referenced_queues.len()
            + self.referenced_exchanges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How many queues and exchanges, beside the broker's own exchanges (the
/// default exchange and `amq.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    pub queues: u64,
    pub exchanges: u64,
}

impl Size {
    pub fn total(&self) -> u64 {
        self.queues + self.exchanges
    }
}

/// A vhost read by name, as listings in the shape of the vhost's own.
#[derive(Debug, Default)]
pub struct Named {
    /// Its exchanges, queues, bindings and policies; and its operator
    /// policies for a user without the `administrator` tag.
    pub listings: Vec<(Listing, String)>,
    /// For an administrator: the vhost's runtime parameters (limits,
    /// operator policies, shovels...) as its export gives them.
    pub parameters: Option<String>,
    /// How many of its queues and exchanges (not the broker's own) were read.
    pub read: Size,
}

/// The broker's own exchanges, in every vhost: not counted in a [`Size`].
pub(super) fn is_builtin_exchange(name: &str) -> bool {
    name.is_empty() || name.starts_with("amq.")
}

/// The regular expression that finds warren's record exchanges in a vhost.
pub(super) const RECORDS: &str = "^warren\\.";

/// The ends of these bindings that `read` lacks: (queues, exchanges).
pub(super) fn missing_ends(
    bindings: &[Json],
    queues: &BTreeSet<String>,
    exchanges: &BTreeSet<String>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut q, mut x) = (BTreeSet::new(), BTreeSet::new());
    for b in bindings {
        if let Some(s) = b["source"].as_str().filter(|s| !is_builtin_exchange(s) && !exchanges.contains(*s)) {
            x.insert(s.to_string());
        }
        let Some(d) = b["destination"].as_str() else { continue };
        match b["destination_type"].as_str() {
            Some("queue") if !queues.contains(d) => {
                q.insert(d.to_string());
            }
            Some("exchange") if !is_builtin_exchange(d) && !exchanges.contains(d) => {
                x.insert(d.to_string());
            }
            _ => {}
        }
    }
    (q, x)
}

/// Bindings from several listings, each once (a binding between two
/// objects read is in both their listings), without the default
/// exchange's, which exports leave out.
pub(super) fn distinct_bindings(lists: impl IntoIterator<Item = Json>) -> Vec<Json> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for b in lists.into_iter().flat_map(|l| match l {
        Json::Array(items) => items,
        _ => Vec::new(),
    }) {
        if b["source"].as_str().is_none_or(str::is_empty) {
            continue;
        }
        let key = (
            b["source"].to_string(),
            b["destination_type"].to_string(),
            b["destination"].to_string(),
            b["routing_key"].to_string(),
            b["arguments"].to_string(),
        );
        if seen.insert(key) {
            out.push(b);
        }
    }
    out
}

/// Whether a binding touches what `wanted` names: what a read by name
/// returns of a vhost's bindings.
pub(super) fn touches(b: &Json, wanted: &Wanted) -> bool {
    let (s, d) = (b["source"].as_str().unwrap_or_default(), b["destination"].as_str().unwrap_or_default());
    let to_exchange = b["destination_type"].as_str() == Some("exchange");
    !s.is_empty()
        && (wanted.exchanges.contains(s)
            || (to_exchange && wanted.exchanges.contains(d))
            || (!to_exchange && wanted.queues.contains(d))
            || wanted.pairs.contains(&(s.to_string(), to_exchange, d.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_other_ends_of_the_bindings_read_are_read_too() {
        let bindings = distinct_bindings([
            json!([
                {"source": "", "destination": "q", "destination_type": "queue", "routing_key": "q", "arguments": {}},
                {"source": "theirs", "destination": "q", "destination_type": "queue", "routing_key": "k", "arguments": {}},
            ]),
            json!([
                {"source": "ours", "destination": "q", "destination_type": "queue", "routing_key": "k", "arguments": {}},
                {"source": "theirs", "destination": "q", "destination_type": "queue", "routing_key": "k", "arguments": {}},
                {"source": "ours", "destination": "amq.topic", "destination_type": "exchange", "routing_key": "", "arguments": {}},
                {"source": "ours", "destination": "other", "destination_type": "queue", "routing_key": "", "arguments": {}},
            ]),
        ]);
        assert_eq!(bindings.len(), 4, "the default exchange's left out, the one in both listings once: {bindings:?}");
        let (q, x) = missing_ends(&bindings, &["q".to_string()].into(), &["ours".to_string()].into());
        assert_eq!(q, ["other".to_string()].into());
        assert_eq!(x, ["theirs".to_string()].into(), "amq.* exchanges are the broker's own");
        let wanted = Wanted { queues: ["q".into()].into(), ..Wanted::default() };
        assert!(touches(&bindings[0], &wanted));
        assert!(!touches(&bindings[3], &wanted), "from an exchange not asked for to a queue not asked for");
    }
}
