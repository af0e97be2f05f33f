//! What the in-memory broker holds: vhosts with their objects, users,
//! global parameters, the locks, and each queue's messages.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use regex::Regex;
use serde_json::Value as Json;

use crate::model::kinds::Objects;
use crate::model::{BUILTIN_EXCHANGES, Binding, DestinationKind, Exchange, Permission, Policy, QueueType, Table};

/// How messages name the in-memory broker.
pub(super) const ORIGIN: &str = "memory://localhost";

/// The one node of the in-memory broker, as queue leaders name it.
pub(super) const NODE: &str = "rabbit@memory";

/// The version `check` reports unless a test sets another.
pub(super) const VERSION: &str = "3.13.7";

pub(super) struct State {
    pub version: String,
    /// The plugins enabled: a runtime parameter of another component is refused.
    pub plugins: std::collections::BTreeSet<String>,
    pub vhosts: BTreeMap<String, VhostState>,
    pub users: BTreeMap<String, UserState>,
    pub global_parameters: BTreeMap<String, Json>,
    /// Objects of the broker-wide kinds of `model::kinds`.
    pub objects: Objects,
    /// The lock of each vhost where one is held.
    pub locks: BTreeMap<String, LockEntry>,
    /// The last id given to a message or a lock.
    pub last_id: u64,
}

pub(super) struct VhostState {
    /// `""` for none, as RabbitMQ stores it.
    pub description: String,
    pub default_queue_type: Option<QueueType>,
    pub limits: BTreeMap<String, i64>,
    pub tags: Vec<String>,
    /// The broker's own exchanges included.
    pub exchanges: BTreeMap<String, Exchange>,
    pub queues: BTreeMap<String, QueueState>,
    pub bindings: BTreeSet<Binding>,
    pub policies: BTreeMap<String, PolicyState>,
    pub operator_policies: BTreeMap<String, PolicyState>,
    /// Keyed by user name.
    pub permissions: BTreeMap<String, Permission>,
    /// Objects of the vhost kinds of `model::kinds`.
    pub objects: Objects,
}

pub(super) struct QueueState {
    pub kind: QueueType,
    pub durable: bool,
    pub auto_delete: bool,
    /// As declared (`x-queue-type` included when it was given or injected).
    pub arguments: Table,
    pub ready: VecDeque<Message>,
    /// Set by tests: delivered to a consumer, not acknowledged yet.
    pub unacked: u64,
    pub consumers: u64,
    /// Replicated queues: whether a leader answers (a test takes it away).
    pub leader: bool,
    /// Set by tests: (ready, unacknowledged) that the next readings take
    /// from the queue totals instead of the queue's, as totals listed
    /// before the queue's last change report them, and how many readings.
    pub lagging: Option<((u64, u64), usize)>,
}

/// A message as a queue holds it; `id` is unique per broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: u64,
    pub exchange: String,
    pub routing_key: String,
    pub headers: Table,
    pub body: String,
}

pub(super) struct PolicyState {
    pub policy: Policy,
    /// `policy.pattern`, compiled when the policy was set.
    pub pattern: Regex,
}

pub(super) struct UserState {
    /// `""` for a user without a password.
    pub password_hash: String,
    pub hashing_algorithm: String,
    pub tags: Vec<String>,
    pub limits: BTreeMap<String, i64>,
}

impl UserState {
    pub(super) fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// A held lock: the exclusive queue of one connection.
pub(super) struct LockEntry {
    pub id: u64,
    /// Cleared when the connection is cut or the lock released.
    pub connected: Arc<AtomicBool>,
}

impl State {
    pub(super) fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }
}

impl VhostState {
    /// A new vhost with the exchanges RabbitMQ declares in every vhost.
    pub(super) fn new(description: String, default_queue_type: Option<QueueType>) -> VhostState {
        let mut exchanges = BTreeMap::new();
        let builtin = |name: &str, kind: &str, internal: bool| Exchange {
            name: name.to_string(),
            kind: kind.to_string(),
            durable: true,
            auto_delete: false,
            internal,
            arguments: Table::new(),
        };
        exchanges.insert(String::new(), builtin("", "direct", false));
        for name in BUILTIN_EXCHANGES {
            let (kind, internal) = crate::model::builtin_exchange(name).expect("a builtin exchange");
            exchanges.insert(name.to_string(), builtin(name, kind, internal));
        }
        VhostState {
            description,
            default_queue_type,
            limits: BTreeMap::new(),
            tags: Vec::new(),
            exchanges,
            queues: BTreeMap::new(),
            bindings: BTreeSet::new(),
            policies: BTreeMap::new(),
            operator_policies: BTreeMap::new(),
            permissions: BTreeMap::new(),
            objects: Objects::new(),
        }
    }

    /// The policy the broker applies to exchange `name`: the highest
    /// priority among those that match it and apply to exchanges (of equal
    /// priorities, the first by name; RabbitMQ leaves that undetermined).
    /// Operator policies apply to queues only.
    pub(super) fn exchange_policy(&self, name: &str) -> Option<&Policy> {
        let mut best: Option<&Policy> = None;
        for p in self.policies.values() {
            if p.policy.apply_to.matches_exchanges()
                && p.pattern.is_match(name)
                && best.is_none_or(|b| p.policy.priority > b.priority)
            {
                best = Some(&p.policy);
            }
        }
        best
    }

    /// Whether a binding's destination exists.
    pub(super) fn destination_exists(&self, kind: DestinationKind, name: &str) -> bool {
        match kind {
            DestinationKind::Queue => self.queues.contains_key(name),
            DestinationKind::Exchange => self.exchanges.contains_key(name),
        }
    }
}
