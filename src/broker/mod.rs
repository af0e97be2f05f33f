//! The only module that talks to RabbitMQ.

mod amqp;
mod endpoint;
mod error;
mod http;
mod lock;
mod ops;
mod records;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;

pub use amqp::Amqp;
pub use endpoint::{Endpoint, Tls, segment};
pub use error::BrokerError;
pub use http::Http;
pub use lock::{LOCK_QUEUE, Lock};
pub use records::{FoundJournal, JournalSlot};

use crate::model::QueueCounts;

/// Every vhost with the settings warren reads.
const VHOST_LISTING: &str = "vhosts?columns=name,description,tags,default_queue_type,metadata";

/// A broker's answers for the live state of some vhosts, as it sent them:
/// `live` reads each once.
#[derive(Debug, Default)]
pub struct Answers {
    /// The vhost listing.
    pub vhosts: String,
    /// With the administrator tag: the users and the permissions.
    pub users: Option<String>,
    pub permissions: Option<String>,
    /// warren's broker-wide records, each a global parameter.
    pub records: Vec<String>,
    /// With the administrator tag: each vhost's definitions export.
    pub exports: Vec<(String, String)>,
    /// Without it: each vhost's listings.
    pub listings: Vec<(String, Listing, String)>,
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
    const ALL: [Listing; 5] =
        [Listing::Exchanges, Listing::Queues, Listing::Bindings, Listing::Policies, Listing::OperatorPolicies];

    /// The path of vhost `v`'s listing, with only the fields warren reads
    /// where the API can leave the others out.
    fn path(self, v: &str) -> String {
        let v = segment(v);
        match self {
            Listing::Exchanges => format!("exchanges/{v}?columns=name,type,durable,auto_delete,internal,arguments"),
            Listing::Queues => {
                format!("queues/{v}?disable_stats=true&columns=name,type,durable,auto_delete,exclusive,arguments")
            }
            Listing::Bindings => format!("bindings/{v}"),
            Listing::Policies => format!("policies/{v}"),
            Listing::OperatorPolicies => format!("operator-policies/{v}"),
        }
    }

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

/// A connection to one broker's management API.
#[derive(Clone)]
pub struct Broker {
    http: Http,
    amqp: Amqp,
    /// Shared by clones, so that concurrent drain waits share listings.
    totals: Arc<SharedTotals>,
    /// Whether the user has the `administrator` tag, asked once.
    administrator: Arc<tokio::sync::OnceCell<bool>>,
}

/// How old a vhost's queue totals may be when a drain wait reads them: one
/// listing then serves every wait of that vhost, instead of one listing per
/// wait, each asking every queue of the vhost for its counts.
const TOTALS_MAX_AGE: Duration = Duration::from_millis(500);

/// Queue name -> (ready, unacknowledged), from the queue totals.
type Totals = BTreeMap<String, (u64, u64)>;

/// The latest totals listing per vhost and when it was asked for. The async
/// lock per vhost is held while listing, so waits that arrive meanwhile take
/// that listing rather than asking too.
type TotalsSlot = Arc<tokio::sync::Mutex<Option<(Instant, Arc<Totals>)>>>;

#[derive(Default)]
struct SharedTotals(Mutex<HashMap<String, TotalsSlot>>);

/// How fresh the queue totals behind a [`Reading`] must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Listed for this reading: the check right before a deletion.
    Now,
    /// A listing of the vhost up to 500 ms old, shared with other readings.
    Shared,
}

/// A fresh reading of one queue, for drain detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub ready: u64,
    pub unacked: u64,
    pub consumers: u64,
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

impl Broker {
    /// `amqp_url`: `--amqp-url`, or `None` for the broker's own AMQP
    /// listener, as the management API reports it. Either way every AMQP
    /// connection is checked to reach the management API's broker.
    pub fn new(endpoint: Endpoint, amqp_url: Option<&str>) -> Result<Broker, BrokerError> {
        let http = Http::new(endpoint)?;
        let amqp = Amqp::new(amqp_url, http.clone())?;
        Ok(Broker { http, amqp, totals: Arc::default(), administrator: Arc::default() })
    }

    /// A queue's counters from fresh sources (reference 1.6): ready and
    /// unacknowledged from the queue totals (not the stats view, which lags
    /// about 5 s), ready and consumers from an AMQP passive declare. With
    /// the time the totals were asked for, the older source. `None` when the
    /// queue does not exist.
    pub async fn read_queue(
        &self,
        vhost: &str,
        queue: &str,
        freshness: Freshness,
    ) -> Result<Option<(Instant, Reading)>, BrokerError> {
        let action = format!("read the counters of queue \"{queue}\"");
        let (at, totals) = match freshness {
            Freshness::Now => (Instant::now(), Arc::new(self.list_totals(vhost, &action).await?)),
            Freshness::Shared => self.shared_totals(vhost, &action).await?,
        };
        let Some((ready, unacked)) = totals.get(queue).copied() else {
            return Ok(None);
        };
        let (ready_now, consumers) = self.amqp.queue_state(vhost, queue).await?;
        Ok(Some((at, Reading { ready: ready.max(ready_now), unacked, consumers })))
    }

    /// The vhost's totals listing if it is at most [`TOTALS_MAX_AGE`] old,
    /// else a new one, made once for every wait that asks meanwhile.
    async fn shared_totals(&self, vhost: &str, action: &str) -> Result<(Instant, Arc<Totals>), BrokerError> {
        let slot = {
            let mut slots = self.totals.0.lock().unwrap_or_else(|e| e.into_inner());
            slots.entry(vhost.to_string()).or_default().clone()
        };
        let mut latest = slot.lock().await;
        if let Some((at, totals)) = latest.as_ref()
            && at.elapsed() <= TOTALS_MAX_AGE
        {
            return Ok((*at, totals.clone()));
        }
        let at = Instant::now();
        let totals = Arc::new(self.list_totals(vhost, action).await?);
        *latest = Some((at, totals.clone()));
        Ok((at, totals))
    }

    /// Ready and unacknowledged messages of every queue of a vhost, from
    /// the queue totals, in one request.
    async fn list_totals(&self, vhost: &str, action: &str) -> Result<Totals, BrokerError> {
        let path = format!(
            "queues/{}?disable_stats=true&enable_queue_totals=true&columns=name,messages_ready,messages_unacknowledged",
            segment(vhost)
        );
        let list = self.http.get_json(&path, action).await?;
        let n = |q: &serde_json::Value, k: &str| q[k].as_u64().unwrap_or(0);
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| {
                Some((q["name"].as_str()?.to_string(), (n(q, "messages_ready"), n(q, "messages_unacknowledged"))))
            })
            .collect())
    }

    /// A queue's leader, members and online members, from the queue's own
    /// record rather than the stats view (`disable_stats`). `None` when the
    /// queue does not exist.
    pub async fn queue_leadership(&self, vhost: &str, queue: &str) -> Result<Option<Leadership>, BrokerError> {
        let path = format!("queues/{}/{}?disable_stats=true", segment(vhost), segment(queue));
        let q = match self.http.get_json(&path, &format!("read the leader of queue \"{queue}\"")).await {
            Err(BrokerError::NotFound { .. }) => return Ok(None),
            other => other?,
        };
        let text = |k: &str| q[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let nodes = |k: &str| {
            q[k].as_array().map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_string)).collect::<Vec<_>>())
        };
        Ok(Some(Leadership {
            leader: text("leader"),
            members: nodes("members"),
            online: nodes("online"),
            state: text("state"),
        }))
    }

    /// The name of the policy the broker applies to an exchange, if any.
    pub async fn exchange_policy(&self, vhost: &str, exchange: &str) -> Result<Option<String>, BrokerError> {
        let path = format!("exchanges/{}/{}", segment(vhost), segment(exchange));
        let x = self.http.get_json(&path, &format!("read exchange \"{exchange}\"")).await?;
        Ok(x["policy"].as_str().map(str::to_string))
    }

    pub fn endpoint(&self) -> &Endpoint {
        self.http.endpoint()
    }

    /// Checks that the broker answers and accepts the credentials; returns
    /// its RabbitMQ version.
    pub async fn check(&self) -> Result<String, BrokerError> {
        let o = self.http.get_json("overview", "read the broker overview").await?;
        Ok(o["rabbitmq_version"].as_str().unwrap_or("unknown").to_string())
    }

    /// The whole broker's definitions export, as text, in one request.
    pub async fn definitions(&self) -> Result<String, BrokerError> {
        let action = "read the broker's definitions";
        let (_, text) = match self.http.send(Method::GET, "definitions", None, action).await {
            // The broker closes idle keep-alive connections: try once more.
            Err(BrokerError::Unreachable { .. }) => self.http.send(Method::GET, "definitions", None, action).await?,
            other => other?,
        };
        Ok(text)
    }

    /// What the live state of the given vhosts is read from, with warren's
    /// broker-wide records, all requested at once: cheaper than the whole
    /// broker's export when it holds other large vhosts. A user with the
    /// `administrator` tag reads one export per vhost, the users and the
    /// permissions; any other user each vhost's listings that its
    /// permissions open, and no users or permissions, which need the
    /// administrator tag to read.
    pub async fn answers_of(&self, vhosts: &[String]) -> Result<Answers, BrokerError> {
        let admin = self.is_administrator().await?;
        let listing = self.get_text(VHOST_LISTING, "list the vhosts").await?;
        // Only vhosts that exist: the export of a missing one is a 400.
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
        }
        let listed: Vec<Named> = serde_json::from_str(&listing).map_err(|e| BrokerError::Unreadable {
            action: "list the vhosts".into(),
            reason: format!("it is not a list of vhosts: {e}"),
        })?;
        let present: Vec<String> = vhosts.iter().filter(|v| listed.iter().any(|x| x.name == **v)).cloned().collect();
        let only_admin = |path: &'static str, action: &'static str| async move {
            if admin { self.get_text(path, action).await.map(Some) } else { Ok(None) }
        };
        let (users, permissions, records, read) = tokio::join!(
            only_admin("users", "list the users"),
            only_admin("permissions", "list the permissions"),
            self.broker_records(),
            async {
                if admin {
                    self.exports(&present).await.map(|e| (e, Vec::new()))
                } else {
                    self.listings(&present).await.map(|l| (Vec::new(), l))
                }
            },
        );
        let (exports, listings) = read?;
        Ok(Answers { vhosts: listing, users: users?, permissions: permissions?, records: records?, exports, listings })
    }

    /// GET, the answer as text.
    async fn get_text(&self, path: &str, action: &str) -> Result<String, BrokerError> {
        self.http.send(Method::GET, path, None, action).await.map(|(_, text)| text)
    }

    /// Each vhost's definitions export: (vhost, export); none for a vhost
    /// deleted meanwhile.
    async fn exports(&self, vhosts: &[String]) -> Result<Vec<(String, String)>, BrokerError> {
        let mut exports = tokio::task::JoinSet::new();
        for v in vhosts {
            let broker = self.clone();
            let v = v.clone();
            exports.spawn(async move {
                let path = format!("definitions/{}", segment(&v));
                match broker.get_text(&path, &format!("read the definitions of vhost \"{v}\"")).await {
                    Err(BrokerError::NotFound { .. }) => Ok(None),
                    other => other.map(|d| Some((v, d))),
                }
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = exports.join_next().await {
            out.extend(joined.expect("reading an export does not panic")?);
        }
        Ok(out)
    }

    /// Whether the user warren logs in as has the `administrator` tag:
    /// without it, definitions exports and the users and permissions are
    /// out of reach, and warren reads each vhost's listings instead.
    pub async fn is_administrator(&self) -> Result<bool, BrokerError> {
        self.administrator.get_or_try_init(|| async { Ok(self.whoami().await?.1) }).await.copied()
    }

    /// The user warren logs in as, and whether it has the `administrator` tag.
    pub async fn whoami(&self) -> Result<(String, bool), BrokerError> {
        let me = self.http.get_json("whoami", "read which user warren logs in as").await?;
        // 3.10 gives the tags as a list; older versions as one comma-separated string.
        let tags = match &me["tags"] {
            serde_json::Value::Array(list) => list.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
            other => other.as_str().unwrap_or_default().split(',').map(|t| t.trim().to_string()).collect::<Vec<_>>(),
        };
        let name = me["name"].as_str().unwrap_or_default().to_string();
        Ok((name, tags.iter().any(|t| t == "administrator")))
    }

    /// Each vhost's listings of exchanges, queues, bindings, policies and
    /// operator policies: for a user without the `administrator` tag.
    async fn listings(&self, vhosts: &[String]) -> Result<Vec<(String, Listing, String)>, BrokerError> {
        let mut reads = tokio::task::JoinSet::new();
        for v in vhosts {
            for listing in Listing::ALL {
                let broker = self.clone();
                let v = v.clone();
                reads.spawn(async move {
                    let action = format!("list the {} of vhost \"{v}\"", listing.what());
                    broker.get_text(&listing.path(&v), &action).await.map(|l| (v, listing, l))
                });
            }
        }
        let mut out = Vec::new();
        while let Some(joined) = reads.join_next().await {
            out.push(joined.expect("reading a listing does not panic")?);
        }
        Ok(out)
    }

    /// Every vhost with its metadata, as text (one request).
    pub async fn vhosts(&self) -> Result<String, BrokerError> {
        let path = VHOST_LISTING;
        let (_, text) = self.http.send(Method::GET, path, None, "list the vhosts").await?;
        Ok(text)
    }

    /// Message and consumer counts of a vhost's queues, in two requests.
    /// A count the broker has not reported yet is `None` (destroying the
    /// queue then needs --allow-destroy).
    ///
    /// The stats view lags about 5 s and shows no counts at all for a queue
    /// younger than that (reference 1.6), so messages come from the queue
    /// totals as well, which classic queues give fresh (quorum queues once
    /// per Ra tick), and the higher of the two counts. Consumers come only
    /// from the stats view: when a classic queue has none there yet, it
    /// counts as unused, since its delete is guarded by `if-unused`.
    pub async fn queue_counts(&self, vhost: &str) -> Result<BTreeMap<String, QueueCounts>, BrokerError> {
        let v = segment(vhost);
        let action = format!("list the queues of vhost \"{vhost}\"");
        let totals_path = format!("queues/{v}?disable_stats=true&enable_queue_totals=true&columns=name,type,messages");
        let stats_path = format!("queues/{v}?columns=name,messages,consumers");
        let (totals, stats) =
            tokio::join!(self.http.get_json(&totals_path, &action), self.http.get_json(&stats_path, &action));
        let totals = match totals {
            Err(BrokerError::NotFound { .. }) => return Ok(BTreeMap::new()),
            other => other?,
        };
        let stats = stats?;
        let by_name = |list: &serde_json::Value| -> BTreeMap<String, serde_json::Value> {
            list.as_array()
                .into_iter()
                .flatten()
                .filter_map(|q| Some((q["name"].as_str()?.to_string(), q.clone())))
                .collect()
        };
        let stats = by_name(&stats);
        let mut out = BTreeMap::new();
        for (name, t) in by_name(&totals) {
            let s = stats.get(&name).cloned().unwrap_or_default();
            let messages = match (t["messages"].as_u64(), s["messages"].as_u64()) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            let consumers = s["consumers"].as_u64().or((t["type"] == "classic").then_some(0));
            out.insert(name, QueueCounts { messages, consumers });
        }
        Ok(out)
    }

    /// Closes the AMQP connections kept for drain readings.
    pub async fn close(&self) {
        self.amqp.close_probes().await;
    }
}
