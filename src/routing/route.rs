//! The answer of the model: where a message went and how.

use std::collections::BTreeSet;

use serde::Serialize;

/// The queues a message (or some message of a class) reaches, the path it
/// took, and where the model cannot tell or the broker drops it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Route {
    pub queues: BTreeSet<String>,
    /// Each step taken, in the order the broker takes them.
    pub path: Vec<Hop>,
    /// Exchanges whose routing the model does not know: the message may
    /// reach more queues through them.
    pub cannot_tell: Vec<CannotTell>,
    /// Where the broker drops the message, and why.
    pub dropped: Vec<Dropped>,
}

/// One step of a route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hop {
    /// A binding of `exchange` took the message to a queue or an exchange.
    Binding { exchange: String, key: String, destination_kind: &'static str, destination: String },
    /// The default exchange took it to the queue its key names.
    Default { queue: String },
    /// `exchange` routed it nowhere, so its alternate exchange took it.
    Alternate { exchange: String, alternate: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CannotTell {
    pub exchange: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The exchange that routed it nowhere ("" the default exchange).
    pub exchange: String,
    pub why: Why,
}

/// Why the broker drops a message at an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Why {
    /// No binding took it and the exchange has no alternate exchange.
    NoBindingMatched,
    /// The exchange does not exist (published to, or bound to by name).
    NoSuchExchange,
    /// The default exchange's key names no queue.
    NoSuchQueue { queue: String },
    /// Clients cannot publish to an internal exchange: the broker closes
    /// the channel (403).
    Internal,
    /// The alternate exchange does not exist.
    AlternateMissing { alternate: String },
    /// A dead letter would come back to the queue it left without a
    /// consumer's reject on the way (`rabbit_dead_letter`'s cycle check).
    Cycle { queue: String },
}

impl Route {
    /// Nothing reached and nothing unknown: the message is lost.
    pub fn nowhere(&self) -> bool {
        self.queues.is_empty() && self.cannot_tell.is_empty()
    }

    /// Why nothing was reached, as a user reads it.
    pub fn explain(why: &Why, exchange: &str) -> String {
        let x =
            if exchange.is_empty() { "the default exchange".to_string() } else { format!("exchange \"{exchange}\"") };
        match why {
            Why::NoBindingMatched => format!("no binding of {x} matched, and it has no alternate exchange"),
            Why::NoSuchExchange => format!("{x} does not exist"),
            Why::NoSuchQueue { queue } => format!("{x} routes by the key to the queue it names: no queue \"{queue}\""),
            Why::Internal => format!("{x} is internal: clients cannot publish to it"),
            Why::AlternateMissing { alternate } => {
                format!("no binding of {x} matched, and its alternate exchange \"{alternate}\" does not exist")
            }
            Why::Cycle { queue } => format!(
                "a dead letter coming back to queue \"{queue}\" with no consumer's reject on the way is dropped"
            ),
        }
    }
}
