//! Every lint rule: its stable code, default severity and one line on what
//! it finds. `docs/lint.md` has a section per code; a test keeps the two
//! in step.
//!
//! The checks that find what the broker would refuse (`dangling-binding`,
//! `argument-for-other-type`, …) are not rules: no setting can let such
//! files through.

use crate::diagnostic::Severity;

/// Where a rule looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The files alone.
    Files,
    /// The live broker (`warren lint --live`).
    Broker,
    /// Both: the files, and more precisely the broker.
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
    pub reads: Reads,
    pub summary: &'static str,
}

const fn rule(code: &'static str, severity: Severity, reads: Reads, summary: &'static str) -> Rule {
    Rule { code, severity, reads, summary }
}

use Reads::{Both, Broker, Files};
use Severity::{Error, Info, Warning};

pub const RULES: &[Rule] = &[
    rule("dlx-missing", Warning, Files, "a dead-letter exchange declared nowhere and not external"),
    rule("dlx-unroutable", Warning, Files, "a dead-letter exchange that routes the queue's dead letters nowhere"),
    rule("dlx-cycle", Warning, Files, "dead letters that come back to their queue with nothing rejecting them"),
    rule("quorum-without-dlx", Warning, Files, "a quorum queue with no dead-letter exchange"),
    rule(
        "at-least-once-without-reject-publish",
        Warning,
        Files,
        "`dead-letter-strategy = at-least-once` without `overflow = reject-publish`",
    ),
    rule("ae-missing", Warning, Files, "an alternate exchange declared nowhere and not external"),
    rule("unroutable-exchange", Warning, Files, "an exchange with no binding and no alternate exchange"),
    rule("queue-mode-removed", Warning, Files, "`x-queue-mode` or `x-queue-version = 1`, refused by RabbitMQ 4.3"),
    rule("transient-queue", Warning, Files, "a queue that is not durable, refused by RabbitMQ 4.3"),
    rule("ha-policy", Warning, Files, "classic queue mirroring (`ha-*` policy keys), removed in RabbitMQ 4"),
    rule("priority-on-quorum", Warning, Broker, "a quorum queue that replaces a priority queue"),
    rule("stream-unbounded", Warning, Files, "a stream with neither a maximum age nor a maximum size"),
    rule("expires-on-declared", Warning, Files, "a queue expiry on a durable queue the files declare"),
    rule("policy-matches-nothing", Info, Files, "a policy whose pattern matches no declared object"),
    rule("policy-tie", Warning, Files, "two policies of equal priority match one object"),
    rule("policy-shadows", Warning, Files, "the winning policy hides keys of a lower-priority one"),
    rule("policy-overrides-argument", Warning, Files, "a policy key that a queue argument also sets"),
    rule("broad-permissions", Warning, Files, "a non-administrator with `.*` to configure, write and read"),
    rule(
        "topic-permission-not-topic",
        Warning,
        Files,
        "a topic permission on an exchange that is not a topic exchange",
    ),
    rule("guest-user", Warning, Files, "the `guest` user declared or given permissions"),
    rule("shared-queue", Warning, Both, "one queue read by more than one service"),
    rule("publish-unroutable", Error, Files, "a service publishes what reaches no queue: the broker drops it"),
    rule("publish-to-internal", Error, Files, "a service publishes to an internal exchange, which refuses it"),
    rule("queue-without-consumer", Warning, Files, "a queue no service consumes and nothing dead-letters into"),
    rule("consumer-unreachable", Warning, Files, "a service consumes a queue that nothing a service publishes reaches"),
    rule("deprecated-feature-used", Warning, Broker, "the broker reports a deprecated feature in use"),
    rule("unmanaged-consumer-queue", Warning, Broker, "a queue with consumers that no project owns"),
    rule(
        "foreign-consumer",
        Warning,
        Broker,
        "a consumer of a service's queue from a user no service consuming it connects as",
    ),
    rule(
        "publish-undeclared",
        Warning,
        Broker,
        "a service's user publishes to an exchange none of its services declares",
    ),
    rule("service-idle", Info, Broker, "a declared service whose user has no connection to the vhost"),
];

/// The rule of this code.
pub fn rule_of(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code == code)
}

/// What a project sets a rule to in `[lint]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Info,
    Off,
}

impl Level {
    pub const NAMES: [&str; 4] = ["error", "warning", "info", "off"];

    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "error" => Some(Level::Error),
            "warning" => Some(Level::Warning),
            "info" => Some(Level::Info),
            "off" => Some(Level::Off),
            _ => None,
        }
    }

    /// The severity findings get at this level; `None` when silenced.
    pub fn severity(self) -> Option<Severity> {
        match self {
            Level::Error => Some(Severity::Error),
            Level::Warning => Some(Severity::Warning),
            Level::Info => Some(Severity::Info),
            Level::Off => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RULES {
            assert!(seen.insert(r.code), "{} twice", r.code);
            assert!(r.code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{}", r.code);
            // Only a certain loss or refusal fails the files by default
            // (docs/lint.md says why for each).
            let certain = ["publish-unroutable", "publish-to-internal"];
            assert!(
                r.severity != Severity::Error || certain.contains(&r.code),
                "{}: fails the files by default",
                r.code
            );
        }
    }
}
