//! The only module that talks to RabbitMQ: a transport that knows the
//! model and nothing above it. [`Broker`] is every call warren makes;
//! [`Rabbit`] makes them over the management API and AMQP; [`Memory`] is a
//! broker in memory that answers them as RabbitMQ does, for fast tests.

mod access;
mod amqp;
mod clients;
mod endpoint;
mod error;
mod http;
mod lock;
mod memory;
mod named;
mod ops;
mod rabbit;
mod records;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Instant;

use serde_json::Value as Json;

pub use endpoint::{Endpoint, REQUEST_TIMEOUT, Tls, segment};
pub use error::BrokerError;
pub use http::ClientsShared;
pub use lock::{LOCK_QUEUE, Lock};
pub use memory::{Memory, Message};
pub use named::{Named, Size, Wanted};
pub use rabbit::Rabbit;
pub use records::{FoundJournal, JournalSlot, RecordStore};

use crate::model::kinds::{Kind, Name, Object};
use crate::model::{Binding, Exchange, Permission, Policy, Queue, QueueCounts, QueueType, User, VhostSettings};

/// A broker's answers for the live state of some vhosts, as it sent them:
/// `live` reads each once.
#[derive(Debug, Default, Clone)]
pub struct Answers {
    /// The vhost listing.
    pub vhosts: String,
    /// With the administrator tag: the users and the permissions.
    pub users: Option<String>,
    pub permissions: Option<String>,
    /// warren's broker-wide records, each a global parameter.
    pub records: Vec<String>,
    /// With the administrator tag: the listing of each kind that has one
    /// (`model::kinds`), in the form of its definitions list's items.
    pub objects: Vec<(&'static Kind, String)>,
    /// With the administrator tag: each vhost's definitions export.
    pub exports: Vec<(String, String)>,
    /// Without it: each vhost's listings.
    pub listings: Vec<(String, Listing, String)>,
    /// Without it: the runtime parameters of the vhosts the user may see
    /// (shovels, federation upstreams), when it may list them (the
    /// `policymaker` tag).
    pub parameters: Option<String>,
    /// With it, for each vhost read by name ([`Broker::read_named`]): the
    /// vhost's runtime parameters as its export gives them (limits,
    /// operator policies, the kinds' parameters), a JSON list.
    pub vhost_parameters: Vec<(String, String)>,
    /// The vhosts read by name, each with how many of its queues and
    /// exchanges were left unread.
    pub unread: Vec<(String, Size)>,
}

/// One listing of a vhost's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Exchanges,
    Queues,
    Bindings,
    Policies,
    OperatorPolicies,
}

impl Listing {
    pub const ALL: [Listing; 5] =
        [Listing::Exchanges, Listing::Queues, Listing::Bindings, Listing::Policies, Listing::OperatorPolicies];

    pub fn what(self) -> &'static str {
        match self {
            Listing::Exchanges => "exchanges",
            Listing::Queues => "queues",
            Listing::Bindings => "bindings",
            Listing::Policies => "policies",
            Listing::OperatorPolicies => "operator policies",
        }
    }
}

/// How fresh the queue totals behind a [`Reading`] must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Listed for this reading: the check right before a deletion.
    Now,
    /// A listing of the vhost up to 500 ms old, shared with other readings.
    Shared,
}

/// A reading of one queue, for drain detection and the last look before a
/// deletion. Two sources: the queue itself (a passive declare), which
/// answers fresh but counts only ready messages and consumers, and the
/// queue totals, which count unacknowledged messages too but lag up to one
/// statistics interval (5 s, https://www.rabbitmq.com/docs/management#statistics-interval)
/// or Ra tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The higher of the queue's own count and the totals'.
    pub ready: u64,
    /// From the totals.
    pub unacked: u64,
    /// The queue's own count.
    pub consumers: u64,
    /// Ready messages as the queue itself counts them now. With no ready
    /// message and no consumer there, nothing is unacknowledged but what a
    /// `basic.get` holds: a closed consumer's unacknowledged messages go
    /// back to the queue as ready ones.
    pub own_ready: u64,
}

impl Reading {
    /// What the queue itself answers: nothing ready, no consumer.
    pub fn idle_by_its_own_count(&self) -> bool {
        self.own_ready == 0 && self.consumers == 0
    }

    /// Both sources say empty.
    pub fn empty(&self) -> bool {
        self.ready == 0 && self.unacked == 0
    }
}

/// Who leads a replicated queue, as the broker works it out when asked
/// (not from the statistics, which stop updating when the leader is gone).
/// A field the broker did not report is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leadership {
    /// The leader's node; `None` also when the broker reports `""`, as
    /// 3.10-3.12 do when the leader's process is not alive.
    pub leader: Option<String>,
    pub members: Option<Vec<String>>,
    /// 3.10-3.12: members whose process is alive; 3.13+: members on
    /// running nodes.
    pub online: Option<Vec<String>>,
    /// 3.13+: `running`, `minority` or `down`; 3.10: the queue record's
    /// state (`live`).
    pub state: Option<String>,
}

/// One consumer of a queue, and who it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Consumer {
    pub queue: String,
    /// The user its connection logged in as.
    pub user: String,
    /// The broker's name of its connection (`10.0.0.5:41234 -> 10.0.0.2:5672`).
    pub connection: String,
    /// The name the client gave its connection (`connection_name`), if any.
    pub client_name: Option<String>,
}

/// A client connection to a vhost: who it is, and what its channels
/// published, as the management statistics (up to one statistics interval
/// old) count it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Client {
    /// The broker's name of the connection (`10.0.0.5:41234 -> 10.0.0.2:5672`),
    /// which names its peer.
    pub connection: String,
    /// The user it logged in as.
    pub user: String,
    /// The name the client gave it (`connection_name`), if any.
    pub client_name: Option<String>,
    /// Messages its channels published.
    pub published: u64,
    /// The names of its channels that published, to ask which exchanges
    /// they published to ([`Broker::published_to`]).
    pub publishing_channels: Vec<String>,
}

/// What a vhost's clients do: each consumer, and each connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clients {
    pub consumers: Vec<Consumer>,
    pub connections: Vec<Client>,
}

/// A deprecated feature the broker reports in use (3.13 and later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeprecatedFeature {
    pub name: String,
    /// How far along its removal is: `permitted_by_default`,
    /// `denied_by_default`, `disconnected`, `removed`.
    pub phase: String,
    /// The broker's page about it, when it names one.
    pub doc_url: Option<String>,
}

/// The names in a vhost listing.
pub fn vhost_names(listing: &str) -> Answer<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let listed: Vec<Named> = serde_json::from_str(listing).map_err(|e| BrokerError::Unreadable {
        action: "list the vhosts".into(),
        reason: format!("it is not a list of vhosts: {e}"),
    })?;
    Ok(listed.into_iter().map(|v| v.name).collect())
}

/// The answer of a broker call.
pub type Answer<T> = Result<T, BrokerError>;

/// Every call warren makes to a broker, typed. Writes of what is there
/// already, and deletes of what is gone, succeed: repeating one is safe.
/// Clones share one connection to the same broker.
pub trait Broker: Clone + Send + Sync + 'static {
    /// The broker without credentials, as messages name it.
    fn origin(&self) -> String;
    /// The user warren logs in as.
    fn user(&self) -> String;

    // Reads.

    /// Checks that the broker answers and accepts the credentials; returns
    /// its RabbitMQ version.
    fn check(&self) -> impl Future<Output = Answer<String>> + Send;
    /// How many queues and exchanges the broker holds in all, as its
    /// overview counts them for this user (the broker's own exchanges
    /// included); `None` when it does not say. Asked once with
    /// [`Broker::check`]'s version: a bound on every vhost's size.
    fn object_totals(&self) -> impl Future<Output = Answer<Option<Size>>> + Send;
    /// Whether the user warren logs in as has the `administrator` tag:
    /// without it, definitions exports and the users and permissions are
    /// out of reach, and warren reads each vhost's listings instead.
    fn is_administrator(&self) -> impl Future<Output = Answer<bool>> + Send;
    /// The whole broker's definitions export, as text.
    fn definitions(&self) -> impl Future<Output = Answer<String>> + Send;
    /// Every vhost with its settings, as the vhost listing gives them.
    fn vhosts(&self) -> impl Future<Output = Answer<String>> + Send;
    /// What the live state of the given vhosts is read from, with warren's
    /// broker-wide records.
    fn answers_of(&self, vhosts: &[String]) -> impl Future<Output = Answer<Answers>> + Send;
    /// The objects of a vhost that `wanted` names and every binding that
    /// touches them, each read by name, with the objects at the other ends
    /// of those bindings, warren's records in the vhost, and its policies
    /// and operator policies (and, for an administrator, its runtime
    /// parameters) whole: a read that grows with the project, not the vhost.
    fn read_named(&self, vhost: &str, wanted: &Wanted) -> impl Future<Output = Answer<Named>> + Send;
    /// Message and consumer counts of a vhost's queues (of those in `only`,
    /// each asked by name, when given); a count the broker has not
    /// reported yet is `None`.
    fn queue_counts(
        &self,
        vhost: &str,
        only: Option<&BTreeSet<String>>,
    ) -> impl Future<Output = Answer<BTreeMap<String, QueueCounts>>> + Send;
    /// A queue's counters from fresh sources, with the time of the older
    /// one; `None` when the queue does not exist.
    fn read_queue(
        &self,
        vhost: &str,
        queue: &str,
        freshness: Freshness,
    ) -> impl Future<Output = Answer<Option<(Instant, Reading)>>> + Send;
    /// A replicated queue's leader and members; `None` when the queue does
    /// not exist.
    fn queue_leadership(&self, vhost: &str, queue: &str) -> impl Future<Output = Answer<Option<Leadership>>> + Send;
    /// The consumers of a vhost's queues, each with who consumes.
    fn consumers(&self, vhost: &str) -> impl Future<Output = Answer<Vec<Consumer>>> + Send;
    /// The consumers and client connections of a vhost, each with who it
    /// is (one listing each of consumers, connections and channels).
    fn clients(&self, vhost: &str) -> impl Future<Output = Answer<Clients>> + Send;
    /// Whether the listings of clients show every user's, or only those of
    /// the user warren logs in as.
    fn sees_every_client(&self) -> impl Future<Output = Answer<bool>> + Send;
    /// Whether the management plugin keeps per-exchange statistics of each
    /// channel (`management.rates_mode = detailed`): without them
    /// [`Broker::published_to`] knows nothing.
    fn channel_details_kept(&self) -> impl Future<Output = Answer<bool>> + Send;
    /// The exchanges channel `channel` published to, by the per-exchange
    /// statistics (empty without them, or when the channel is gone).
    fn published_to(&self, channel: &str) -> impl Future<Output = Answer<BTreeSet<String>>> + Send;
    /// The deprecated features in use; `None` where the broker cannot say
    /// (before RabbitMQ 3.13).
    /// The plugins enabled on every node, when the user can tell: a kind
    /// that needs one the broker lacks is refused before any write.
    fn plugins(&self) -> impl Future<Output = Answer<Option<BTreeSet<String>>>> + Send;
    fn deprecated_features_used(&self) -> impl Future<Output = Answer<Option<Vec<DeprecatedFeature>>>> + Send;
    /// The name of the policy the broker applies to an exchange, if any.
    fn exchange_policy(&self, vhost: &str, exchange: &str) -> impl Future<Output = Answer<Option<String>>> + Send;

    // Writes, one per change to an object.

    /// Creates or updates a vhost with `settings`, and removes the limits named.
    fn put_vhost(
        &self,
        name: &str,
        settings: &VhostSettings,
        remove_limits: &[String],
    ) -> impl Future<Output = Answer<()>> + Send;
    fn delete_vhost(&self, name: &str) -> impl Future<Output = Answer<()>> + Send;
    /// Creates or updates a user with its limits, and removes the limits
    /// named; `password` is the value read from the environment for a user
    /// whose password comes from there.
    fn put_user(
        &self,
        user: &User,
        password: Option<&str>,
        remove_limits: &[String],
    ) -> impl Future<Output = Answer<()>> + Send;
    fn delete_user(&self, name: &str) -> impl Future<Output = Answer<()>> + Send;
    fn declare_exchange(&self, vhost: &str, exchange: &Exchange) -> impl Future<Output = Answer<()>> + Send;
    fn delete_exchange(&self, vhost: &str, name: &str) -> impl Future<Output = Answer<()>> + Send;
    fn declare_queue(&self, vhost: &str, queue: &Queue) -> impl Future<Output = Answer<()>> + Send;
    /// Deletes a queue; `guarded`, a classic one only if it is empty and
    /// unused ([`BrokerError::Unsafe`] when it is not). Quorum queues and
    /// streams take no guard: the caller checks them first.
    fn delete_queue(
        &self,
        vhost: &str,
        name: &str,
        kind: QueueType,
        guarded: bool,
    ) -> impl Future<Output = Answer<()>> + Send;
    fn bind(&self, vhost: &str, binding: &Binding) -> impl Future<Output = Answer<()>> + Send;
    fn unbind(&self, vhost: &str, binding: &Binding) -> impl Future<Output = Answer<()>> + Send;
    fn put_policy(&self, vhost: &str, policy: &Policy) -> impl Future<Output = Answer<()>> + Send;
    fn delete_policy(&self, vhost: &str, name: &str) -> impl Future<Output = Answer<()>> + Send;
    fn put_permission(&self, vhost: &str, permission: &Permission) -> impl Future<Output = Answer<()>> + Send;
    fn delete_permission(&self, vhost: &str, user: &str) -> impl Future<Output = Answer<()>> + Send;
    /// Creates or updates an object of `kind` (see `model::kinds`).
    fn put_object(
        &self,
        vhost: Option<&str>,
        kind: &'static Kind,
        object: &Object,
    ) -> impl Future<Output = Answer<()>> + Send;
    fn delete_object(&self, vhost: Option<&str>, name: &Name) -> impl Future<Output = Answer<()>> + Send;

    // warren's records and its lock (see [`RecordStore`]).

    /// A global parameter's value; `None` when it is not set.
    fn global_parameter(&self, name: &str) -> impl Future<Output = Answer<Option<Json>>> + Send;
    fn put_global_parameter(&self, name: &str, value: &Json) -> impl Future<Output = Answer<()>> + Send;
    /// Clears a global parameter; one not set is cleared already.
    fn delete_global_parameter(&self, name: &str) -> impl Future<Output = Answer<()>> + Send;
    /// Declares record exchange `name` in `vhost` holding `value`.
    fn put_record(&self, vhost: &str, name: &str, value: &Json) -> impl Future<Output = Answer<()>> + Send;
    fn delete_record(&self, vhost: &str, name: &str) -> impl Future<Output = Answer<()>> + Send;
    /// The exchanges of one vhost, or of every vhost this user can see,
    /// that carry a record: (vhost, name, the record's text).
    fn record_exchanges(
        &self,
        vhost: Option<&str>,
    ) -> impl Future<Output = Answer<Vec<(String, String, String)>>> + Send;
    /// Tries once to take the lock in `vhost` (`None`: where the
    /// broker-wide records' lock lives); `None` while another holds it.
    fn try_lock(&self, vhost: Option<&str>, holder: &str) -> impl Future<Output = Answer<Option<Lock>>> + Send;
    /// Whether some run holds the lock in `vhost` now.
    fn lock_held(&self, vhost: Option<&str>) -> impl Future<Output = Answer<bool>> + Send;

    /// Gives back what the calls kept open.
    fn close(&self) -> impl Future<Output = ()> + Send;
}
