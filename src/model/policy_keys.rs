//! Policy definition keys RabbitMQ recognises, what they apply to, and who
//! wins when a queue argument sets the same thing (rabbit_amqqueue_process:process_args_policy,
//! rabbit_quorum_queue and rabbit_stream_queue in RabbitMQ's source).

use super::kinds::Finding;
use super::topology::QueueType::{self, Classic, Quorum, Stream};
use super::{QUEUE_ARGUMENTS, Table, check_expect, did_you_mean};

/// How the broker combines a policy value with the queue's own argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The lower of the two values is used.
    Min,
    /// The queue argument wins.
    Argument,
    /// The policy wins.
    Policy,
}

/// One recognised policy key.
#[derive(Debug, Clone, Copy)]
pub struct PolicyKey {
    pub name: &'static str,
    /// Queue types the key applies to (empty: exchanges only, or none).
    pub queue_types: &'static [QueueType],
    pub exchanges: bool,
    /// Allowed in an operator policy.
    pub operator: bool,
    /// Classic mirroring, removed in RabbitMQ 4.
    pub mirroring: bool,
}

const fn key(name: &'static str, queue_types: &'static [QueueType], operator: bool) -> PolicyKey {
    PolicyKey { name, queue_types, exchanges: false, operator, mirroring: false }
}

const fn ha(name: &'static str) -> PolicyKey {
    PolicyKey { name, queue_types: &[Classic], exchanges: false, operator: false, mirroring: true }
}

const fn exchange_key(name: &'static str, queues: bool) -> PolicyKey {
    const Q: &[QueueType] = &[Classic, Quorum, Stream];
    PolicyKey { name, queue_types: if queues { Q } else { &[] }, exchanges: true, operator: false, mirroring: false }
}

/// Every key RabbitMQ 3.10 to 4.x (with federation) accepts in a policy.
pub const POLICY_KEYS: &[PolicyKey] = &[
    key("message-ttl", &[Classic, Quorum], true),
    key("expires", &[Classic, Quorum], true),
    key("max-length", &[Classic, Quorum], true),
    key("max-length-bytes", &[Classic, Quorum, Stream], true),
    key("overflow", &[Classic, Quorum], true),
    key("dead-letter-exchange", &[Classic, Quorum], false),
    key("dead-letter-routing-key", &[Classic, Quorum], false),
    key("dead-letter-strategy", &[Quorum], false),
    key("delivery-limit", &[Quorum], true),
    key("queue-mode", &[Classic], false),
    key("queue-version", &[Classic], true),
    key("queue-leader-locator", &[Quorum, Stream], false),
    key("queue-master-locator", &[Classic], false),
    key("max-in-memory-length", &[Quorum], true),
    key("max-in-memory-bytes", &[Quorum], true),
    key("max-age", &[Stream], false),
    key("stream-max-segment-size-bytes", &[Stream], false),
    key("stream-filter-size-bytes", &[Stream], false),
    key("initial-cluster-size", &[Stream], false),
    key("target-group-size", &[Quorum], true),
    key("consumer-timeout", &[Classic, Quorum], false),
    exchange_key("alternate-exchange", false),
    exchange_key("federation-upstream", true),
    exchange_key("federation-upstream-set", true),
    exchange_key("federation-upstream-pattern", true),
    ha("ha-mode"),
    ha("ha-params"),
    ha("ha-sync-mode"),
    ha("ha-sync-batch-size"),
    ha("ha-promote-on-shutdown"),
    ha("ha-promote-on-failure"),
];

/// The recognised policy key of that name.
pub fn policy_key(name: &str) -> Option<&'static PolicyKey> {
    POLICY_KEYS.iter().find(|k| k.name == name)
}

/// Who wins when both `policy_key` and the matching queue argument are set
/// on a queue of `kind` (the broker's code, not its docs:
/// `rabbit_amqqueue_process:process_args_policy`, `rabbit_quorum_queue:gather_policy_config`).
pub fn resolution(policy_key: &str, kind: QueueType) -> Resolution {
    use Resolution::*;
    match (policy_key, kind) {
        ("max-length-bytes", Stream) => Policy,
        (_, Stream) => Policy,
        ("overflow", Quorum) => Policy,
        ("overflow", Classic) => Argument,
        ("message-ttl" | "expires" | "max-length" | "max-length-bytes" | "delivery-limit", _) => Min,
        ("max-in-memory-length" | "max-in-memory-bytes" | "consumer-timeout", _) => Min,
        ("queue-leader-locator", _) => Policy,
        _ => Argument,
    }
}

/// Whether a queue of `kind` on a broker of major version `major` refuses
/// a policy with `key`: the broker skips such a policy for the queue
/// (`rabbit_queue_type:is_policy_applicable`), whatever else it sets. The
/// lists are the queue types' `unsupported_policies` capabilities
/// (`rabbit_classic_queue`, `rabbit_quorum_queue`, `rabbit_stream_queue`,
/// as of 3.10.8 and 4.0.5): a key not listed, one for exchanges
/// (`alternate-exchange`) or for another queue type included, keeps the
/// policy applicable.
pub fn unsupported_by(key: &str, kind: QueueType, major: u32) -> bool {
    const CLASSIC: &[&str] =
        &["max-age", "stream-max-segment-size-bytes", "initial-cluster-size", "delivery-limit", "dead-letter-strategy"];
    // 3.x classic queues refuse queue-leader-locator; 4.x ones take it and
    // refuse quorum queues' memory limits and group size instead.
    const CLASSIC_3: &[&str] = &["queue-leader-locator"];
    const CLASSIC_4: &[&str] = &["max-in-memory-length", "max-in-memory-bytes", "target-group-size"];
    const QUORUM: &[&str] = &[
        "max-priority",
        "queue-mode",
        "single-active-consumer",
        "ha-mode",
        "ha-params",
        "ha-sync-mode",
        "ha-promote-on-shutdown",
        "ha-promote-on-failure",
        "queue-master-locator",
        "max-age",
        "stream-max-segment-size-bytes",
        "initial-cluster-size",
    ];
    const STREAM: &[&str] = &[
        "expires",
        "message-ttl",
        "dead-letter-exchange",
        "dead-letter-routing-key",
        "max-length",
        "max-in-memory-length",
        "max-in-memory-bytes",
        "max-priority",
        "overflow",
        "queue-mode",
        "single-active-consumer",
        "delivery-limit",
        "ha-mode",
        "ha-params",
        "ha-sync-mode",
        "ha-promote-on-shutdown",
        "ha-promote-on-failure",
        "queue-master-locator",
        "dead-letter-strategy",
    ];
    const STREAM_4: &[&str] = &["target-group-size"];
    let lists: [&[&str]; 2] = match (kind, major >= 4) {
        (Classic, false) => [CLASSIC, CLASSIC_3],
        (Classic, true) => [CLASSIC, CLASSIC_4],
        (Quorum, _) => [QUORUM, &[]],
        (Stream, false) => [STREAM, &[]],
        (Stream, true) => [STREAM, STREAM_4],
    };
    lists.iter().any(|list| list.contains(&key))
}

/// What RabbitMQ refuses in a policy's `definition` (with `operator`, an
/// operator policy's): a key it does not know, one an operator policy may
/// not set, a value of the wrong type. RabbitMQ rejects the whole policy.
pub fn definition_findings(definition: &Table, operator: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = |key: &str| vec!["definition".to_string(), key.to_string()];
    for (key, value) in definition {
        let Some(known) = policy_key(key) else {
            let help = match did_you_mean(key, POLICY_KEYS.iter().map(|p| p.name)) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "see https://www.rabbitmq.com/docs/policies for the keys a policy can set".into(),
            };
            out.push(Finding {
                path: at(key),
                at_key: true,
                code: "unknown-policy-key",
                message: format!("`{key}` is not a policy key RabbitMQ knows"),
                label: Some("RabbitMQ rejects the whole policy".into()),
                help,
            });
            continue;
        };
        if operator && !known.operator {
            let allowed: Vec<&str> = POLICY_KEYS.iter().filter(|p| p.operator).map(|p| p.name).collect();
            out.push(Finding {
                path: at(key),
                at_key: true,
                code: "operator-policy-key",
                message: format!("`{key}` cannot be set by an operator policy"),
                label: None,
                help: format!("move it to a regular policy; operator policies accept only: {}", allowed.join(", ")),
            });
            continue;
        }
        let rule = QUEUE_ARGUMENTS.iter().find(|r| r.policy_key == Some(key));
        if let Some(rule) = rule
            && let Some(problem) = check_expect(rule.expect, value)
        {
            out.push(Finding {
                path: at(key),
                at_key: false,
                code: "bad-value",
                message: format!("policy key `{key}` {problem}"),
                label: None,
                help: format!("set `{key}` to {}", rule.expect.describe()),
            });
        }
    }
    out
}
