//! What RabbitMQ accepts as queue arguments and policy keys, per queue type
//! (rabbitmq-reference.md sections 2 and 3). The validator and the planner
//! both read these tables, so the knowledge lives in one place.

use super::topology::QueueType::{self, Classic, Quorum, Stream};
use super::value::Value;

/// The shape a value must have.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// An integer within the inclusive range.
    Int(i64, i64),
    Bool,
    /// Any string.
    Str,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// One of these integers.
    IntOneOf(&'static [i64]),
    /// A duration like `7D`, `12h`, `30m`: digits then one of Y M D h m s.
    Age,
}

impl Expect {
    /// Describes the accepted values, for a help line.
    pub fn describe(self) -> String {
        match self {
            Expect::Int(lo, hi) if hi == i64::MAX => format!("an integer of at least {lo}"),
            Expect::Int(lo, hi) => format!("an integer from {lo} to {hi}"),
            Expect::Bool => "true or false".into(),
            Expect::Str => "a string".into(),
            Expect::OneOf(v) => format!("one of {}", quote_all(v)),
            Expect::IntOneOf(v) => {
                format!("one of {}", v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
            }
            Expect::Age => "a string of digits and a unit: Y, M, D, h, m or s (e.g. \"7D\")".into(),
        }
    }
}

fn quote_all(v: &[&str]) -> String {
    v.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
}

/// What RabbitMQ accepts for one `x-…` queue argument.
#[derive(Debug, Clone, Copy)]
pub struct ArgumentRule {
    pub name: &'static str,
    pub expect: Expect,
    /// The queue types that know this argument.
    pub types: &'static [QueueType],
    /// The policy key that sets the same thing, if any.
    pub policy_key: Option<&'static str>,
}

const ANY: i64 = i64::MAX;

const fn rule(
    name: &'static str,
    expect: Expect,
    types: &'static [QueueType],
    policy_key: Option<&'static str>,
) -> ArgumentRule {
    ArgumentRule { name, expect, types, policy_key }
}

/// Every queue argument RabbitMQ 3.10 to 4.x checks.
pub const QUEUE_ARGUMENTS: &[ArgumentRule] = &[
    rule("x-message-ttl", Expect::Int(0, ANY), &[Classic, Quorum], Some("message-ttl")),
    rule("x-expires", Expect::Int(1, ANY), &[Classic, Quorum], Some("expires")),
    rule("x-max-length", Expect::Int(0, ANY), &[Classic, Quorum], Some("max-length")),
    rule("x-max-length-bytes", Expect::Int(0, ANY), &[Classic, Quorum, Stream], Some("max-length-bytes")),
    rule(
        "x-overflow",
        Expect::OneOf(&["drop-head", "reject-publish", "reject-publish-dlx"]),
        &[Classic, Quorum],
        Some("overflow"),
    ),
    rule("x-dead-letter-exchange", Expect::Str, &[Classic, Quorum], Some("dead-letter-exchange")),
    rule("x-dead-letter-routing-key", Expect::Str, &[Classic, Quorum], Some("dead-letter-routing-key")),
    rule(
        "x-dead-letter-strategy",
        Expect::OneOf(&["at-most-once", "at-least-once"]),
        &[Quorum],
        Some("dead-letter-strategy"),
    ),
    rule("x-max-priority", Expect::Int(1, 255), &[Classic], None),
    rule("x-delivery-limit", Expect::Int(-1, ANY), &[Quorum], Some("delivery-limit")),
    rule("x-single-active-consumer", Expect::Bool, &[Classic, Quorum], None),
    rule("x-queue-mode", Expect::OneOf(&["default", "lazy"]), &[Classic], Some("queue-mode")),
    rule("x-queue-version", Expect::IntOneOf(&[1, 2]), &[Classic], Some("queue-version")),
    rule(
        "x-queue-master-locator",
        Expect::OneOf(&["min-masters", "client-local", "random"]),
        &[Classic],
        Some("queue-master-locator"),
    ),
    rule(
        "x-queue-leader-locator",
        Expect::OneOf(&["client-local", "balanced"]),
        &[Quorum, Stream],
        Some("queue-leader-locator"),
    ),
    rule("x-quorum-initial-group-size", Expect::Int(1, ANY), &[Quorum], None),
    rule("x-max-in-memory-length", Expect::Int(0, ANY), &[Quorum], Some("max-in-memory-length")),
    rule("x-max-in-memory-bytes", Expect::Int(0, ANY), &[Quorum], Some("max-in-memory-bytes")),
    rule("x-max-age", Expect::Age, &[Stream], Some("max-age")),
    rule("x-stream-max-segment-size-bytes", Expect::Int(1, ANY), &[Stream], Some("stream-max-segment-size-bytes")),
    rule("x-stream-filter-size-bytes", Expect::Int(16, 255), &[Stream], Some("stream-filter-size-bytes")),
    rule("x-initial-cluster-size", Expect::Int(1, ANY), &[Stream], Some("initial-cluster-size")),
    rule("x-consumer-timeout", Expect::Int(0, ANY), &[Quorum, Classic], Some("consumer-timeout")),
];

/// The rule for a queue argument, if RabbitMQ knows it.
pub fn argument_rule(name: &str) -> Option<&'static ArgumentRule> {
    QUEUE_ARGUMENTS.iter().find(|r| r.name == name)
}

/// Whether a string is a stream age such as `7D`.
pub fn is_age(s: &str) -> bool {
    let Some(unit) = s.chars().last() else {
        return false;
    };
    let digits = &s[..s.len() - unit.len_utf8()];
    "YMDhms".contains(unit) && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// What is wrong with `value` for `expect`, as the end of a sentence.
pub fn check_expect(expect: Expect, value: &Value) -> Option<String> {
    let bad_kind = || Some(format!("must be {}, not {}", expect.describe(), value.kind()));
    match expect {
        Expect::Int(lo, hi) => match value.as_int() {
            Some(i) if i < lo || i > hi => Some(format!("cannot be {i}")),
            Some(_) => None,
            None => bad_kind(),
        },
        Expect::IntOneOf(allowed) => match value.as_int() {
            Some(i) if !allowed.contains(&i) => Some(format!("cannot be {i}")),
            Some(_) => None,
            None => bad_kind(),
        },
        Expect::Bool => (!matches!(value, Value::Bool(_))).then(bad_kind).flatten(),
        Expect::Str => value.as_str().is_none().then(bad_kind).flatten(),
        Expect::OneOf(allowed) => match value.as_str() {
            Some(s) if !allowed.contains(&s) => Some(format!("cannot be \"{s}\"")),
            Some(_) => None,
            None => bad_kind(),
        },
        Expect::Age => match value.as_str() {
            Some(s) if !is_age(s) => Some(format!("cannot be \"{s}\"")),
            Some(_) => None,
            None => bad_kind(),
        },
    }
}
