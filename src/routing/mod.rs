//! Where messages go: one model of RabbitMQ's routing, used by lint, the
//! in-memory broker, `warren route`, routing tests and the plan's routing
//! change, and checked against real brokers by the conformance test
//! (`tests/suite/routing_conformance.rs`).
//!
//! The broker's own modules are the authority: `rabbit_exchange:route/2`
//! (exchange-to-exchange bindings, alternate exchanges), one
//! `rabbit_exchange_type_*` module per type, `rabbit_dead_letter` (the keys
//! and the cycles of dead letters) and `rabbit_policy` (which policy sets an
//! exchange's alternate exchange or a queue's dead-letter exchange).
//!
//! A message's keys may be a class of keys rather than one key: "any key"
//! is what a fanout binding takes, a topic pattern is the class of keys it
//! takes. Routed as a class, the answer is every queue that some key of
//! the class reaches, which is what questions such as "can a dead letter
//! come back to its queue" ask.

pub mod change;
mod classes;
mod dead_letters;
pub mod headers;
mod inside;
mod memo;
mod message;
mod policies;
mod reasons;
mod route;
mod router;
pub mod topic;
mod witness;

pub use dead_letters::{DeadLetter, Decision, Reason, Setting};
pub use memo::{DeadLetterRoutes, Landing};
pub use message::{Keys, Message};
pub use policies::Applied;
pub use route::{CannotTell, Dropped, Hop, Route, Why};
pub use router::Router;

/// The broker version, where versions route differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// What the model assumes when no broker tells its version (files and
    /// exports without one): the newest release line warren is checked on.
    pub const NEWEST: Version = Version { major: 4, minor: 0 };

    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    /// From a version string such as `3.10.8`; [`Version::NEWEST`] when it
    /// cannot be read.
    pub fn parse(version: Option<&str>) -> Self {
        let mut parts = version.unwrap_or_default().split('.').map(str::parse::<u32>);
        match (parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Version { major, minor },
            _ => Version::NEWEST,
        }
    }

    pub(crate) fn compares_headers_exactly(self) -> bool {
        self.major >= 4
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
