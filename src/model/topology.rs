//! The topology: one type for the desired state (from TOML) and the live
//! state (from the broker or a definitions export), so that diffing is a
//! comparison of like with like.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::kinds::users;
use super::value::Table;

/// Everything warren knows about one broker: vhosts and cluster-wide users.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    pub vhosts: BTreeMap<String, Vhost>,
    /// Objects of the broker-wide kinds of `model::kinds`, its users among
    /// them ([`Topology::users`]).
    pub objects: super::kinds::Objects,
    /// Objects to stop managing without deleting them (desired only: the
    /// files' `[removed]`).
    pub removed: BTreeSet<super::ObjectKey>,
}

impl Topology {
    /// Every object of the kinds of `model::kinds`: its vhost (`None` for a
    /// broker-wide one), name and body.
    pub fn kind_objects(&self) -> impl Iterator<Item = (Option<&str>, &super::kinds::Name, &Table)> {
        let in_vhosts =
            self.vhosts.iter().flat_map(|(v, vh)| vh.objects.iter().map(move |(n, b)| (Some(v.as_str()), n, b)));
        in_vhosts.chain(self.objects.iter().map(|(n, b)| (None, n, b)))
    }

    /// The users (the objects of `kinds::users`), typed, by name.
    pub fn users(&self) -> BTreeMap<String, User> {
        users::typed(&self.objects)
    }

    /// The names of the users, in order.
    pub fn user_names(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().filter(|n| n.kind == &users::KIND).map(|n| n.id[0].as_str())
    }

    /// The user `name`, typed.
    pub fn user(&self, name: &str) -> Option<User> {
        users::user(name, self.objects.get(&users::name(name))?)
    }

    pub fn has_user(&self, name: &str) -> bool {
        self.objects.contains_key(&users::name(name))
    }

    /// Sets `user` as one of the objects: whether it replaced one.
    pub fn set_user(&mut self, user: &User) -> bool {
        let o = users::object(user);
        self.objects.insert(users::name(&user.name), o.body).is_some()
    }

    /// Removes the user `name`: whether there was one.
    pub fn remove_user(&mut self, name: &str) -> bool {
        self.objects.remove(&users::name(name)).is_some()
    }

    /// Keeps only the users whose names `keep` takes.
    pub fn retain_users(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.objects.retain(|n, _| n.kind != &users::KIND || keep(&n.id[0]));
    }

    /// Whether the object `key` names exists in this topology.
    pub fn has(&self, key: &super::ObjectKey) -> bool {
        use super::ObjectKey as K;
        let v = |name: &str| self.vhosts.get(name);
        match key {
            K::Vhost(n) => v(n).is_some(),
            K::Exchange { vhost, name } => v(vhost).is_some_and(|x| x.exchanges.contains_key(name)),
            K::Queue { vhost, name } => v(vhost).is_some_and(|x| x.queues.contains_key(name)),
            K::Binding { vhost, binding } => v(vhost).is_some_and(|x| x.bindings.contains(binding)),
            K::Object { vhost: None, name } => self.objects.contains_key(name),
            K::Object { vhost: Some(vhost), name } => v(vhost).is_some_and(|x| x.objects.contains_key(name)),
        }
    }
}

/// One virtual host and the objects that live in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vhost {
    pub name: String,
    pub settings: VhostSettings,
    pub exchanges: BTreeMap<String, Exchange>,
    pub queues: BTreeMap<String, Queue>,
    pub bindings: BTreeSet<Binding>,
    /// Objects of the vhost kinds of `model::kinds`: its policies and
    /// operator policies ([`Vhost::policies`]) and its users' permissions
    /// ([`Vhost::permissions`]) among them.
    pub objects: super::kinds::Objects,
    /// Objects referenced by bindings but owned by someone else (desired only).
    pub external: External,
    /// Exchanges renamed in the files' `[moved]`: each old name to its new
    /// one (desired only).
    pub moved: BTreeMap<String, String>,
    /// Who publishes and consumes what, by service name (desired only):
    /// their users' permissions are derived from them (`services::grants`).
    pub services: BTreeMap<String, super::services::Service>,
    /// Typed views of its objects that the routing model borrows.
    pub views: super::views::Views,
    /// Live only: `Some` when the vhost was read by name, not whole. It
    /// then holds only what the project declares, owns or references and
    /// what touches those; an object absent from it may still be on the
    /// broker, so nothing may read an absence here as "gone" but for the
    /// names that were asked (the diff destroys only objects present).
    pub unread: Option<Unread>,
}

/// What a read by name left out of a vhost: at most how many of its queues
/// and exchanges (beside the broker's own) it did not read. A bound, the
/// broker's totals less those read: counting one vhost's queues costs the
/// broker a listing of them all, about as much as the read it spares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unread {
    pub queues_at_most: u64,
    pub exchanges_at_most: u64,
}

impl Vhost {
    pub fn new(name: &str) -> Self {
        Vhost { name: name.to_string(), ..Vhost::default() }
    }
}

/// Vhost metadata; `None` means "not managed" in the desired state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VhostSettings {
    pub description: Option<String>,
    pub default_queue_type: Option<QueueType>,
    /// `max-queues`, `max-connections`.
    pub limits: Option<BTreeMap<String, i64>>,
    pub tags: Option<BTreeSet<String>>,
    /// RabbitMQ 4.1+: the vhost cannot be deleted until this is unset.
    pub protected_from_deletion: Option<bool>,
}

/// Names of objects that bindings may use but warren does not manage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct External {
    pub exchanges: BTreeSet<String>,
    pub queues: BTreeSet<String>,
    /// Users made elsewhere (a directory, another tool) that the files give
    /// permissions or services in the vhost: never created or changed.
    pub users: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub name: String,
    /// direct, fanout, topic, headers, or a plugin's `x-…` type.
    pub kind: String,
    pub durable: bool,
    pub auto_delete: bool,
    pub internal: bool,
    pub arguments: Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    Classic,
    Quorum,
    Stream,
}

impl QueueType {
    pub const ALL: [QueueType; 3] = [QueueType::Classic, QueueType::Quorum, QueueType::Stream];

    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Classic => "classic",
            QueueType::Quorum => "quorum",
            QueueType::Stream => "stream",
        }
    }

    pub fn parse(s: &str) -> Option<QueueType> {
        QueueType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Quorum queues and streams are replicated: they must be durable.
    pub fn is_replicated(self) -> bool {
        self != QueueType::Classic
    }
}

impl fmt::Display for QueueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub name: String,
    pub kind: QueueType,
    pub durable: bool,
    pub auto_delete: bool,
    /// Arguments other than `x-queue-type`, which is `kind`.
    pub arguments: Table,
    /// The live queue this one takes over by migration (desired only).
    pub replaces: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DestinationKind {
    Queue,
    Exchange,
}

impl DestinationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DestinationKind::Queue => "queue",
            DestinationKind::Exchange => "exchange",
        }
    }

    /// The inverse of [`DestinationKind::as_str`].
    pub fn parse(s: &str) -> Option<DestinationKind> {
        match s {
            "queue" => Some(DestinationKind::Queue),
            "exchange" => Some(DestinationKind::Exchange),
            _ => None,
        }
    }
}

/// A binding has no name: it is identified by all of its fields.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Binding {
    pub source: String,
    pub destination_kind: DestinationKind,
    pub destination: String,
    pub routing_key: String,
    pub arguments: Table,
}

impl Binding {
    /// Whether `node` is this binding's source or destination.
    pub fn touches(&self, node: &super::Node) -> bool {
        match node {
            super::Node::Exchange(x) => {
                self.source == *x || (self.destination_kind == DestinationKind::Exchange && self.destination == *x)
            }
            super::Node::Queue(q) => self.destination_kind == DestinationKind::Queue && self.destination == *q,
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, d) = (&self.source, &self.destination);
        write!(f, "{s} -> {} {d} key {:?}", self.destination_kind.as_str(), self.routing_key)?;
        if !self.arguments.is_empty() {
            write!(f, " arguments {}", super::Value::Table(self.arguments.clone()))?;
        }
        Ok(())
    }
}

/// What a policy applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyTo {
    All,
    Queues,
    Exchanges,
    ClassicQueues,
    QuorumQueues,
    Streams,
}

impl ApplyTo {
    pub const ALL: [ApplyTo; 6] = [
        ApplyTo::All,
        ApplyTo::Queues,
        ApplyTo::Exchanges,
        ApplyTo::ClassicQueues,
        ApplyTo::QuorumQueues,
        ApplyTo::Streams,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApplyTo::All => "all",
            ApplyTo::Queues => "queues",
            ApplyTo::Exchanges => "exchanges",
            ApplyTo::ClassicQueues => "classic_queues",
            ApplyTo::QuorumQueues => "quorum_queues",
            ApplyTo::Streams => "streams",
        }
    }

    pub fn parse(s: &str) -> Option<ApplyTo> {
        ApplyTo::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// Whether a policy with this `apply-to` can match a queue of `kind`.
    pub fn matches_queue(self, kind: QueueType) -> bool {
        match self {
            ApplyTo::All | ApplyTo::Queues => true,
            ApplyTo::Exchanges => false,
            ApplyTo::ClassicQueues => kind == QueueType::Classic,
            ApplyTo::QuorumQueues => kind == QueueType::Quorum,
            ApplyTo::Streams => kind == QueueType::Stream,
        }
    }

    /// Whether a policy with this `apply-to` can match some queue.
    pub fn matches_queue_of_some_type(self) -> bool {
        self != ApplyTo::Exchanges
    }

    pub fn matches_exchanges(self) -> bool {
        matches!(self, ApplyTo::All | ApplyTo::Exchanges)
    }
}

/// A policy or an operator policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: String,
    pub pattern: String,
    pub apply_to: ApplyTo,
    pub priority: i64,
    pub definition: Table,
}

/// How a user's password is given; a plaintext password is never stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Password {
    /// Read from this environment variable at apply time.
    Env(String),
    /// A RabbitMQ password hash, with its algorithm when not the default.
    Hash { hash: String, algorithm: Option<String> },
    /// The user has no password (certificate or external auth only).
    None,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub password: Password,
    pub tags: BTreeSet<String>,
    /// `max-connections`, `max-channels`; `None` means "not managed" in the
    /// desired state, and none set in the live state.
    pub limits: Option<BTreeMap<String, i64>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub user: String,
    pub configure: String,
    pub write: String,
    pub read: String,
}

/// The broker's own exchanges: always there, never declared.
pub const BUILTIN_EXCHANGES: [&str; 6] =
    ["amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match", "amq.rabbitmq.trace"];

/// The type of one of the broker's own exchanges, and whether it is
/// internal (the trace exchange: the broker publishes to it, no client).
pub fn builtin_exchange(name: &str) -> Option<(&'static str, bool)> {
    Some(match name {
        "amq.direct" => ("direct", false),
        "amq.fanout" => ("fanout", false),
        "amq.topic" => ("topic", false),
        "amq.headers" | "amq.match" => ("headers", false),
        "amq.rabbitmq.trace" => ("topic", true),
        _ => return None,
    })
}

/// A live queue's message and consumer counts, as the broker last reported;
/// `None` when the broker has not reported one yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub messages: Option<u64>,
    pub consumers: Option<u64>,
}

impl QueueCounts {
    /// Known to hold nothing and to have no consumer.
    pub fn is_idle(&self) -> bool {
        self.messages == Some(0) && self.consumers == Some(0)
    }

    /// What is known, for a plan: `it holds 3 message(s) and has 0 consumer(s)`.
    pub fn describe(&self) -> String {
        let messages = match self.messages {
            Some(n) => format!("it holds {n} message(s)"),
            None => "its message count is not known yet".to_string(),
        };
        let consumers = match self.consumers {
            Some(n) => format!("has {n} consumer(s)"),
            None => "its consumers are not known yet (the broker reports them about 5 s late)".to_string(),
        };
        match self.consumers {
            Some(_) => format!("{messages} and {consumers}"),
            None => format!("{messages}; {consumers}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Password, QueueCounts, Topology, User};
    use crate::model::kinds::users;

    /// Users are the topology's broker-wide objects of their kind, one
    /// store, read and written through their typed view.
    #[test]
    fn users_are_kept_as_objects_and_read_typed() {
        let user = |name: &str, password| User { name: name.into(), password, tags: ["m".into()].into(), limits: None };
        let mut t = Topology::default();
        assert!(!t.set_user(&user("b", Password::Env("B_PASSWORD".into()))));
        assert!(!t.set_user(&user("a", Password::None)));
        assert!(t.set_user(&user("a", Password::Hash { hash: "aGFzaA==".into(), algorithm: None })));
        assert_eq!(t.objects.keys().collect::<Vec<_>>(), [&users::name("a"), &users::name("b")]);
        assert_eq!(t.user_names().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(t.user("b"), Some(user("b", Password::Env("B_PASSWORD".into()))));
        assert_eq!(t.users().into_values().collect::<Vec<_>>(), [t.user("a").unwrap(), t.user("b").unwrap()]);
        assert!(t.has_user("a") && t.has(&users::key("a")) && !t.has_user("c"));
        t.retain_users(|n| n != "b");
        assert!(t.remove_user("a") && !t.remove_user("a"));
        assert!(t.objects.is_empty());
    }

    #[test]
    fn queue_counts_say_what_is_known() {
        let c = |m, c| QueueCounts { messages: m, consumers: c };
        assert!(c(Some(0), Some(0)).is_idle());
        assert!(!c(Some(0), None).is_idle() && !c(None, Some(0)).is_idle() && !c(Some(1), Some(0)).is_idle());
        assert_eq!(c(Some(3), Some(0)).describe(), "it holds 3 message(s) and has 0 consumer(s)");
        assert_eq!(
            c(Some(2), None).describe(),
            "it holds 2 message(s); its consumers are not known yet (the broker reports them about 5 s late)"
        );
    }
}
