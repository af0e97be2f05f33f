//! Policy definition keys RabbitMQ recognises, what they apply to, and who
//! wins when a queue argument sets the same thing (rabbit_amqqueue_process:process_args_policy,
//! rabbit_quorum_queue and rabbit_stream_queue in RabbitMQ's source).

use super::topology::QueueType::{self, Classic, Quorum, Stream};

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
