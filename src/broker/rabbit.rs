//! A broker reached over its management HTTP API, and AMQP for what that
//! API cannot do (the lock, fresh queue counts).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value as Json;

use super::amqp::Amqp;
use super::clients;
use super::endpoint::{Endpoint, segment};
use super::error::BrokerError;
use super::http::Http;
use super::lock::{LOCK_QUEUE, Lock};
use super::named::{self, Named, Size, Wanted};
use super::records::RecordStore;
use super::{
    Answer, Answers, Broker, Clients, Consumer, DeprecatedFeature, Freshness, Leadership, Listing, Reading, ops,
    vhost_names,
};
use crate::model::kinds::{KINDS, Kind, Name, Object};
use crate::model::{
    Binding, Exchange, Permission, Policy, Queue, QueueCounts, QueueType, RECORD_ARGUMENT, User, VhostSettings,
};

/// How many single-object reads a read by name has under way at once.
const NAMED_AT_ONCE: usize = 16;

/// The columns of a queue that warren reads, in a listing or alone.
const QUEUE_COLUMNS: &str = "name,type,durable,auto_delete,exclusive,arguments";

/// The columns of an exchange that warren reads, in a listing or alone.
const EXCHANGE_COLUMNS: &str = "name,type,durable,auto_delete,internal,arguments";

/// The columns of a binding that warren reads: a vhost's listing of
/// 100,000 queues' bindings is a third smaller without the vhost and the
/// properties key in each.
const BINDING_COLUMNS: &str = "source,destination,destination_type,routing_key,arguments";

/// Every vhost with the settings warren reads.
const VHOST_LISTING: &str =
    "vhosts?disable_stats=true&columns=name,description,tags,default_queue_type,metadata,protected_from_deletion";

/// A connection to one broker's management API (and its AMQP listener).
#[derive(Clone)]
pub struct Rabbit {
    http: Http,
    amqp: Amqp,
    /// Shared by clones, so that concurrent drain waits share listings.
    totals: Arc<SharedTotals>,
    /// Whether the user has the `administrator` tag, asked once.
    administrator: Arc<tokio::sync::OnceCell<bool>>,
    /// The version, object totals and cluster name of `/api/overview`,
    /// asked once: a plan needs the first two, an apply asks for the
    /// version first. A failure is kept too: the callers that waited on the
    /// one request get its error, rather than each asking again a broker
    /// that did not answer.
    overview: Arc<tokio::sync::OnceCell<Result<Overview, BrokerError>>>,
}

/// What warren reads of the broker's overview.
struct Overview {
    version: String,
    totals: Option<Size>,
    /// The name every node of a cluster reports: one broker, whichever
    /// address reaches it.
    cluster: String,
}

/// Each vhost's listings, and each vhost's runtime parameters as a JSON list.
type Listed = (Vec<(String, Listing, String)>, Vec<(String, String)>);

/// The runtime parameters of vhost `v` in the broker-wide listing `all`,
/// as a JSON list: what an export of the vhost gives as its `parameters`.
fn parameters_of(all: &Json, v: &str) -> String {
    let mine = all.as_array().into_iter().flatten().filter(|p| p["vhost"] == v);
    Json::Array(mine.cloned().collect()).to_string()
}

/// From this many queues and exchanges in the broker, an administrator's
/// whole read of a vhost is its listings, not its export: the export
/// (`rabbit_mgmt_wm_definitions`, 3.10 to 4.0) keeps each binding to a
/// queue after looking the queue up in a list of every exported queue,
/// which grows as queues times bindings. A vhost of 10,000 queues and
/// 20,000 bindings: export 2.1 s, its listings one after another 1.5 s
/// (3.10.8); of 100,000 queues and 200,000 bindings on 4.0.5, listings
/// 10.8 s and 12.0 s, the export more than 20 minutes. Below it, one
/// export is one request.
const LISTINGS_FROM: u64 = 2_000;

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

/// The path of vhost `v`'s listing, with only the fields warren reads
/// where the API can leave the others out.
fn listing_path(listing: Listing, v: &str) -> String {
    let v = segment(v);
    match listing {
        Listing::Exchanges => format!("exchanges/{v}?columns={EXCHANGE_COLUMNS}"),
        Listing::Queues => format!("queues/{v}?disable_stats=true&columns={QUEUE_COLUMNS}"),
        Listing::Bindings => format!("bindings/{v}?columns={BINDING_COLUMNS}"),
        Listing::Policies => format!("policies/{v}"),
        Listing::OperatorPolicies => format!("operator-policies/{v}"),
    }
}

impl Rabbit {
    /// `amqp_url`: `--amqp-url`, or `None` for the broker's own AMQP
    /// listener, as the management API reports it. Either way every AMQP
    /// connection is checked to reach the management API's broker.
    pub fn new(endpoint: Endpoint, amqp_url: Option<&str>) -> Result<Rabbit, BrokerError> {
        let http = Http::new(endpoint)?;
        let amqp = Amqp::new(amqp_url, http.clone())?;
        Ok(Rabbit { http, amqp, totals: Arc::default(), administrator: Arc::default(), overview: Arc::default() })
    }

    /// The name of the broker's cluster: two addresses reach one broker
    /// when they give the same name.
    pub async fn cluster_name(&self) -> Result<String, BrokerError> {
        Ok(self.overview().await?.cluster.clone())
    }

    /// The broker's version and object totals, from one `/api/overview`
    /// asked once per connection.
    async fn overview(&self) -> Result<&Overview, BrokerError> {
        let read = self
            .overview
            .get_or_init(|| async {
                // Without statistics: their message and queue totals cost a broker
                // of 100,000 queues 0.34 s, the version and object totals nothing.
                let o = self.http.get_json("overview?disable_stats=true", "read the broker overview").await?;
                let version = o["rabbitmq_version"].as_str().unwrap_or("unknown").to_string();
                let totals = &o["object_totals"];
                let totals = match (totals["queues"].as_u64(), totals["exchanges"].as_u64()) {
                    (Some(queues), Some(exchanges)) => Some(Size { queues, exchanges }),
                    _ => None,
                };
                let cluster = o["cluster_name"].as_str().unwrap_or_default().to_string();
                Ok(Overview { version, totals, cluster })
            })
            .await;
        read.as_ref().map_err(Clone::clone)
    }

    /// In two rounds: the objects named with their bindings, warren's
    /// records (a name-filtered listing), the policies and parameters;
    /// then the objects at the bindings' other ends, without theirs.
    async fn named_in(&self, vhost: &str, wanted: &Wanted) -> Result<Named, BrokerError> {
        let admin = Broker::is_administrator(self).await?;
        let v = segment(vhost);
        let records =
            format!("exchanges/{v}?columns={EXCHANGE_COLUMNS}&use_regex=true&name={}", segment(named::RECORDS));
        let listing = |l: Listing| async move {
            let action = format!("list the {} of vhost \"{vhost}\"", l.what());
            self.get_text(&listing_path(l, vhost), &action).await.map(|t| (l, t))
        };
        let parameters = async {
            match admin {
                true => {
                    let all = self.http.get_json("parameters", "list the runtime parameters").await?;
                    Ok(Some(parameters_of(&all, vhost)))
                }
                false => Ok(None),
            }
        };
        let operator = async {
            match admin {
                true => Ok(None),
                false => listing(Listing::OperatorPolicies).await.map(Some),
            }
        };
        let records_action = format!("read warren's records in vhost \"{vhost}\"");
        let (first, records, policies, operator, parameters) = tokio::join!(
            self.named_objects(vhost, &wanted.queues, &wanted.exchanges, true, &wanted.pairs),
            self.paged(&records, &records_action),
            listing(Listing::Policies),
            operator,
            parameters,
        );
        let (mut queues, mut exchanges, bindings) = first?;
        exchanges.extend(records?);
        let bindings = named::distinct_bindings(bindings);
        let (mut more_q, mut more_x) = named::missing_ends(&bindings, &wanted.queues, &wanted.exchanges);
        more_q.extend(wanted.referenced_queues.difference(&wanted.queues).cloned());
        more_x.extend(wanted.referenced_exchanges.difference(&wanted.exchanges).cloned());
        let (q, x, _) = self.named_objects(vhost, &more_q, &more_x, false, &BTreeSet::new()).await?;
        queues.extend(q);
        exchanges.extend(x);
        let names = |list: &[Json]| -> BTreeSet<String> {
            list.iter()
                .filter_map(|j| j["name"].as_str())
                .filter(|n| !named::is_builtin_exchange(n))
                .map(str::to_string)
                .collect()
        };
        let read = Size { queues: names(&queues).len() as u64, exchanges: names(&exchanges).len() as u64 };
        let mut listings = vec![
            (Listing::Exchanges, Json::Array(exchanges).to_string()),
            (Listing::Queues, Json::Array(queues).to_string()),
            (Listing::Bindings, Json::Array(bindings).to_string()),
            policies?,
        ];
        listings.extend(operator?);
        Ok(Named { listings, parameters: parameters?, read })
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

    pub fn endpoint(&self) -> &Endpoint {
        self.http.endpoint()
    }

    /// A vhost's listing of `kind` (`consumers`, `channels`), with `query`.
    async fn vhost_listing(&self, vhost: &str, kind: &str, query: &str) -> Result<Json, BrokerError> {
        let v = segment(vhost);
        let path = match kind {
            "consumers" => format!("consumers/{v}{query}"),
            _ => format!("vhosts/{v}/{kind}{query}"),
        };
        self.http.get_json(&path, &format!("list the {kind} of vhost \"{vhost}\"")).await
    }

    async fn connections(&self, vhost: &str) -> Result<Json, BrokerError> {
        let query = "?columns=name,user,user_provided_name,client_properties";
        self.vhost_listing(vhost, "connections", query).await
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

    /// An administrator's read of each vhost as listings: its exchanges,
    /// queues, bindings and policies, and its runtime parameters (limits,
    /// operator policies, the kinds' parameters) from the broker-wide
    /// listing, as a read by name takes them.
    async fn admin_listings(&self, vhosts: &[String]) -> Result<Listed, BrokerError> {
        const OBJECTS: [Listing; 4] = [Listing::Exchanges, Listing::Queues, Listing::Bindings, Listing::Policies];
        // No vhost (a read of the records alone): nothing to ask.
        if vhosts.is_empty() {
            return Ok(Listed::default());
        }
        let (listings, parameters) = tokio::join!(
            self.listings(vhosts, &OBJECTS),
            self.http.get_json("parameters", "list the runtime parameters")
        );
        let (listings, parameters) = (listings?, parameters?);
        let per_vhost = vhosts.iter().map(|v| (v.clone(), parameters_of(&parameters, v))).collect();
        Ok((listings, per_vhost))
    }

    /// Whether the broker holds [`LISTINGS_FROM`] queues and exchanges or
    /// more, as its overview counts them (`WARREN_TEST_LISTINGS_FROM`, a
    /// hidden switch, lowers the bar for tests).
    async fn large(&self) -> Result<bool, BrokerError> {
        let from =
            std::env::var("WARREN_TEST_LISTINGS_FROM").ok().and_then(|v| v.parse().ok()).unwrap_or(LISTINGS_FROM);
        Ok(self.overview().await?.totals.is_none_or(|s| s.total() >= from))
    }

    /// The user warren logs in as, and whether it has the `administrator` tag.
    pub async fn whoami(&self) -> Result<(String, bool), BrokerError> {
        let (name, tags) = self.whoami_tags().await?;
        Ok((name, tags.iter().any(|t| t == "administrator")))
    }

    /// The user warren logs in as, and its tags.
    async fn whoami_tags(&self) -> Result<(String, Vec<String>), BrokerError> {
        let me = self.http.get_json("whoami", "read which user warren logs in as").await?;
        // 3.10 gives the tags as a list; older versions as one comma-separated string.
        let tags = match &me["tags"] {
            serde_json::Value::Array(list) => list.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
            other => other.as_str().unwrap_or_default().split(',').map(|t| t.trim().to_string()).collect::<Vec<_>>(),
        };
        Ok((me["name"].as_str().unwrap_or_default().to_string(), tags))
    }

    /// The listing of each kind that has one, for an administrator.
    async fn kind_listings(&self, admin: bool) -> Result<Vec<(&'static Kind, String)>, BrokerError> {
        let mut reads = tokio::task::JoinSet::new();
        for (kind, path) in KINDS.iter().filter_map(|k| Some((*k, k.listing?))).filter(|_| admin) {
            let broker = self.clone();
            reads.spawn(async move {
                let action = format!("list the {}", kind.table.replace('_', " "));
                broker.get_text(path, &action).await.map(|text| (kind, text))
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = reads.join_next().await {
            out.push(joined.expect("reading a listing does not panic")?);
        }
        out.sort_by_key(|(kind, _)| kind.table);
        Ok(out)
    }

    /// Each vhost's listings of exchanges, queues, bindings, policies and
    /// operator policies: for a user without the `administrator` tag.
    async fn listings(
        &self,
        vhosts: &[String],
        which: &[Listing],
    ) -> Result<Vec<(String, Listing, String)>, BrokerError> {
        let mut reads = tokio::task::JoinSet::new();
        for v in vhosts {
            for &listing in which {
                let broker = self.clone();
                let v = v.clone();
                reads.spawn(async move {
                    let action = format!("list the {} of vhost \"{v}\"", listing.what());
                    broker.get_text(&listing_path(listing, &v), &action).await.map(|l| (v, listing, l))
                });
            }
        }
        let mut out = Vec::new();
        while let Some(joined) = reads.join_next().await {
            out.push(joined.expect("reading a listing does not panic")?);
        }
        Ok(out)
    }

    /// [`Broker::queue_counts`] of some queues, each asked by name (its
    /// statistics: the totals are a listing's alone).
    async fn queue_counts_of(
        &self,
        vhost: &str,
        names: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, QueueCounts>, BrokerError> {
        let v = segment(vhost);
        let paths = names
            .iter()
            .map(|q| {
                let path = format!("queues/{v}/{}?columns=name,type,messages,consumers", segment(q));
                (q.clone(), path, format!("read the counts of queue \"{q}\""))
            })
            .collect();
        let mut out = BTreeMap::new();
        for (name, answer) in self.get_many(paths).await? {
            let Some(q) = answer else { continue };
            let consumers = q["consumers"].as_u64().or((q["type"] == "classic").then_some(0));
            out.insert(name, QueueCounts { messages: q["messages"].as_u64(), consumers });
        }
        Ok(out)
    }

    /// A GET whose 404 is `None`: an object read by name that is not there.
    async fn get_found(&self, path: &str, action: &str) -> Result<Option<Json>, BrokerError> {
        match self.http.get_json(path, action).await {
            Err(BrokerError::NotFound { .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Many GETs of single objects or their bindings, [`NAMED_AT_ONCE`] at
    /// a time: (the path's key, the answer; `None` for a 404).
    async fn get_many<K: Send + 'static>(
        &self,
        paths: Vec<(K, String, String)>,
    ) -> Result<Vec<(K, Option<Json>)>, BrokerError> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        stream::iter(paths)
            .map(|(key, path, action)| async move { self.get_found(&path, &action).await.map(|j| (key, j)) })
            .buffer_unordered(NAMED_AT_ONCE)
            .try_collect()
            .await
    }

    /// Every page of a name-filtered listing (a page holds at most 500).
    async fn paged(&self, path: &str, action: &str) -> Result<Vec<Json>, BrokerError> {
        let mut out = Vec::new();
        for page in 1.. {
            let Some(answer) = self.get_found(&format!("{path}&page={page}&page_size=500"), action).await? else {
                break;
            };
            if let Some(Json::Array(items)) = answer.get("items") {
                out.extend(items.iter().cloned());
            }
            if answer["page_count"].as_u64().is_none_or(|n| page >= n) {
                break;
            }
        }
        Ok(out)
    }

    /// The objects named, and for those read with their bindings, the
    /// bindings: (queues, exchanges, bindings' listings).
    async fn named_objects(
        &self,
        vhost: &str,
        queues: &BTreeSet<String>,
        exchanges: &BTreeSet<String>,
        with_bindings: bool,
        pairs: &BTreeSet<(String, bool, String)>,
    ) -> Result<(Vec<Json>, Vec<Json>, Vec<Json>), BrokerError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Got {
            Queue,
            Exchange,
            Bindings,
        }
        let v = segment(vhost);
        let mut paths = Vec::new();
        for q in queues {
            let (n, action) = (segment(q), format!("read queue \"{q}\" of vhost \"{vhost}\""));
            paths.push((
                Got::Queue,
                format!("queues/{v}/{n}?disable_stats=true&columns={QUEUE_COLUMNS}"),
                action.clone(),
            ));
            if with_bindings {
                paths.push((Got::Bindings, format!("queues/{v}/{n}/bindings"), action));
            }
        }
        for x in exchanges {
            let (n, action) = (segment(x), format!("read exchange \"{x}\" of vhost \"{vhost}\""));
            paths.push((Got::Exchange, format!("exchanges/{v}/{n}?columns={EXCHANGE_COLUMNS}"), action.clone()));
            if with_bindings {
                paths.push((Got::Bindings, format!("exchanges/{v}/{n}/bindings/source"), action.clone()));
                paths.push((Got::Bindings, format!("exchanges/{v}/{n}/bindings/destination"), action));
            }
        }
        for (source, to_exchange, destination) in pairs {
            let kind = if *to_exchange { "e" } else { "q" };
            let action = format!("read the bindings from \"{source}\" to \"{destination}\" in vhost \"{vhost}\"");
            paths.push((
                Got::Bindings,
                format!("bindings/{v}/e/{}/{kind}/{}", segment(source), segment(destination)),
                action,
            ));
        }
        let (mut q, mut x, mut b) = (Vec::new(), Vec::new(), Vec::new());
        for (got, answer) in self.get_many(paths).await? {
            match (got, answer) {
                (_, None) => {}
                (Got::Queue, Some(j)) => q.push(j),
                (Got::Exchange, Some(j)) => x.push(j),
                (Got::Bindings, Some(j)) => b.push(j),
            }
        }
        Ok((q, x, b))
    }

    async fn plugins_by_extension(&self) -> Result<Option<BTreeSet<String>>, BrokerError> {
        const BY_EXTENSION: &[(&str, &str)] =
            &[("shovel.js", "rabbitmq_shovel"), ("federation.js", "rabbitmq_federation")];
        let listed = match self.http.get_json("extensions", "list the management extensions").await {
            Err(BrokerError::Forbidden { .. }) => return Ok(None),
            other => other?,
        };
        let scripts: Vec<&str> =
            listed.as_array().into_iter().flatten().filter_map(|e| e["javascript"].as_str()).collect();
        let found = BY_EXTENSION.iter().filter(|(script, _)| scripts.contains(script));
        Ok(Some(found.map(|(_, plugin)| plugin.to_string()).collect()))
    }
}

impl Broker for Rabbit {
    fn origin(&self) -> String {
        self.http.endpoint().to_string()
    }

    fn user(&self) -> String {
        self.http.endpoint().user.clone()
    }

    /// A queue's counters, fresh: ready and consumers from an AMQP
    /// passive declare, the queue's own answer; ready and unacknowledged
    /// from the queue totals (not the stats view, which lags more), which
    /// lag up to one statistics interval. With the time the totals were
    /// asked for, the older source. `None` when the queue does not exist.
    async fn read_queue(
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
        Ok(Some((at, Reading { ready: ready.max(ready_now), unacked, consumers, own_ready: ready_now })))
    }

    /// A queue's leader, members and online members, from the queue's own
    /// record rather than the stats view (`disable_stats`). `None` when the
    /// queue does not exist.
    async fn queue_leadership(&self, vhost: &str, queue: &str) -> Result<Option<Leadership>, BrokerError> {
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
    async fn exchange_policy(&self, vhost: &str, exchange: &str) -> Result<Option<String>, BrokerError> {
        let path = format!("exchanges/{}/{}", segment(vhost), segment(exchange));
        let x = self.http.get_json(&path, &format!("read exchange \"{exchange}\"")).await?;
        Ok(x["policy"].as_str().map(str::to_string))
    }

    /// Checks that the broker answers and accepts the credentials; returns
    /// its RabbitMQ version.
    async fn check(&self) -> Result<String, BrokerError> {
        Ok(self.overview().await?.version.clone())
    }

    async fn object_totals(&self) -> Result<Option<Size>, BrokerError> {
        Ok(self.overview().await?.totals)
    }

    /// The whole broker's definitions export, as text, in one request.
    async fn definitions(&self) -> Result<String, BrokerError> {
        let action = "read the broker's definitions";
        let (_, text) = self.http.send(Method::GET, "definitions", None, action).await?;
        Ok(text)
    }

    /// What the live state of the given vhosts is read from, with warren's
    /// broker-wide records, all requested at once: cheaper than the whole
    /// broker's export when it holds other large vhosts. A user with the
    /// `administrator` tag reads the users and the permissions, and each
    /// vhost as one export on a broker of fewer than [`LISTINGS_FROM`]
    /// queues and exchanges, as its listings and runtime parameters on a
    /// larger one; any other user each vhost's listings that its
    /// permissions open, and no users or permissions, which need the
    /// administrator tag to read.
    async fn answers_of(&self, vhosts: &[String]) -> Result<Answers, BrokerError> {
        let admin = self.is_administrator().await?;
        let by_listings = admin && self.large().await?;
        let listing = self.vhosts().await?;
        // Only vhosts that exist: the export of a missing one is a 400.
        let listed = vhost_names(&listing)?;
        let present: Vec<String> = vhosts.iter().filter(|v| listed.contains(v)).cloned().collect();
        let only_admin = |path: &'static str, action: &'static str| async move {
            if admin { self.get_text(path, action).await.map(Some) } else { Ok(None) }
        };
        let parameters = async {
            // A policymaker's; a user with fewer tags may not list them.
            match admin {
                true => Ok(None),
                false => match self.get_text("parameters", "list the runtime parameters").await {
                    Err(BrokerError::Forbidden { .. }) => Ok(None),
                    other => other.map(Some),
                },
            }
        };
        let (users, permissions, records, objects, read, parameters) = tokio::join!(
            only_admin("users", "list the users"),
            only_admin("permissions", "list the permissions"),
            // An administrator's listing of global parameters holds them.
            async { if admin { Ok(Vec::new()) } else { self.broker_records().await } },
            self.kind_listings(admin),
            async {
                if by_listings {
                    self.admin_listings(&present).await.map(|(l, p)| (Vec::new(), l, p))
                } else if admin {
                    self.exports(&present).await.map(|e| (e, Vec::new(), Vec::new()))
                } else {
                    self.listings(&present, &Listing::ALL).await.map(|l| (Vec::new(), l, Vec::new()))
                }
            },
            parameters,
        );
        let (exports, listings, vhost_parameters) = read?;
        let (users, permissions, records, objects, parameters) =
            (users?, permissions?, records?, objects?, parameters?);
        Ok(Answers {
            vhosts: listing,
            users,
            permissions,
            records,
            objects,
            exports,
            listings,
            parameters,
            vhost_parameters,
            ..Answers::default()
        })
    }

    async fn read_named(&self, vhost: &str, wanted: &Wanted) -> Result<Named, BrokerError> {
        // A vhost that does not exist (one the files add) answers its
        // listings 404: nothing of it is there to read.
        match self.named_in(vhost, wanted).await {
            Err(BrokerError::NotFound { .. }) => Ok(Named::default()),
            other => other,
        }
    }

    /// Whether the user warren logs in as has the `administrator` tag:
    /// without it, definitions exports and the users and permissions are
    /// out of reach, and warren reads each vhost's listings instead.
    async fn is_administrator(&self) -> Result<bool, BrokerError> {
        self.administrator.get_or_try_init(|| async { Ok(self.whoami().await?.1) }).await.copied()
    }

    /// Every vhost with its metadata, as text (one request).
    async fn vhosts(&self) -> Result<String, BrokerError> {
        self.get_text(VHOST_LISTING, "list the vhosts").await
    }

    /// Each consumer of a vhost's queues, with its user and the name its
    /// client gave its connection (two requests).
    async fn consumers(&self, vhost: &str) -> Result<Vec<Consumer>, BrokerError> {
        let (consumers, connections) =
            tokio::join!(self.vhost_listing(vhost, "consumers", ""), self.connections(vhost));
        let (consumers, connections) = match (consumers, connections) {
            (Err(BrokerError::NotFound { .. }), _) | (_, Err(BrokerError::NotFound { .. })) => return Ok(Vec::new()),
            (c, n) => (c?, n?),
        };
        Ok(clients::consumers(&consumers, &clients::client_names(&connections)))
    }

    /// A vhost's consumers, connections and channels (three requests).
    async fn clients(&self, vhost: &str) -> Result<Clients, BrokerError> {
        let (consumers, connections, channels) = tokio::join!(
            self.vhost_listing(vhost, "consumers", ""),
            self.connections(vhost),
            self.vhost_listing(vhost, "channels", "?columns=name,connection_details,message_stats"),
        );
        let (consumers, connections, channels) = match (consumers, connections, channels) {
            (Err(BrokerError::NotFound { .. }), _, _)
            | (_, Err(BrokerError::NotFound { .. }), _)
            | (_, _, Err(BrokerError::NotFound { .. })) => return Ok(Clients::default()),
            (c, n, h) => (c?, n?, h?),
        };
        let names = clients::client_names(&connections);
        Ok(Clients {
            consumers: clients::consumers(&consumers, &names),
            connections: clients::connections(&connections, &channels, &names),
        })
    }

    /// The management API lists every user's connections, channels and
    /// consumers to the `monitoring` and `administrator` tags only; to the
    /// others, their own.
    async fn sees_every_client(&self) -> Result<bool, BrokerError> {
        let (_, tags) = self.whoami_tags().await?;
        Ok(tags.iter().any(|t| t == "monitoring" || t == "administrator"))
    }

    async fn channel_details_kept(&self) -> Result<bool, BrokerError> {
        let overview = self.http.get_json("overview?columns=rates_mode", "read the statistics mode").await?;
        Ok(overview["rates_mode"] == "detailed")
    }

    async fn published_to(&self, channel: &str) -> Result<BTreeSet<String>, BrokerError> {
        let path = format!("channels/{}", segment(channel));
        match self.http.get_json(&path, &format!("read channel \"{channel}\"")).await {
            Err(BrokerError::NotFound { .. }) => Ok(BTreeSet::new()),
            other => Ok(clients::exchanges(&other?)),
        }
    }

    /// A user with the `monitoring` or `administrator` tag reads each
    /// node's running applications; any other user the management UI's
    /// extensions, which name a plugin by its management part
    /// (`rabbitmq_shovel_management` serves `shovel.js`), or nothing.
    async fn plugins(&self) -> Result<Option<BTreeSet<String>>, BrokerError> {
        let path = "nodes?columns=name,enabled_plugins,applications";
        let nodes = match self.http.get_json(path, "list the nodes' plugins").await {
            Err(BrokerError::Forbidden { .. }) => return self.plugins_by_extension().await,
            other => other?,
        };
        // The plugins enabled by name, and the applications running: the
        // first leaves out a plugin enabled as another's dependency. A
        // node's statistics come some seconds after it starts: until then
        // it has neither, and the extensions tell. A management part's
        // plugin is enabled with it.
        let on_node = |n: &Json| -> Option<BTreeSet<String>> {
            let enabled = n["enabled_plugins"].as_array().into_iter().flatten().filter_map(Json::as_str);
            let running = n["applications"].as_array().into_iter().flatten().filter_map(|a| a["name"].as_str());
            let names: BTreeSet<&str> = enabled.chain(running).collect();
            let parts = names.iter().filter_map(|p| p.strip_suffix("_management"));
            let all: BTreeSet<String> = names.iter().copied().chain(parts).map(str::to_string).collect();
            (!all.is_empty()).then_some(all)
        };
        let each: Option<Vec<BTreeSet<String>>> = nodes.as_array().into_iter().flatten().map(on_node).collect();
        match each.filter(|e| !e.is_empty()) {
            None => self.plugins_by_extension().await,
            Some(mut sets) => {
                let first = sets.pop().unwrap_or_default();
                Ok(Some(sets.into_iter().fold(first, |all, n| all.intersection(&n).cloned().collect())))
            }
        }
    }

    async fn deprecated_features_used(&self) -> Result<Option<Vec<DeprecatedFeature>>, BrokerError> {
        let listed = match self.http.get_json("deprecated-features/used", "list the deprecated features in use").await {
            Err(BrokerError::NotFound { .. }) => return Ok(None),
            other => other?,
        };
        let features = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                Some(DeprecatedFeature {
                    name: f["name"].as_str()?.to_string(),
                    phase: f["deprecation_phase"].as_str().unwrap_or_default().to_string(),
                    doc_url: f["doc_url"].as_str().filter(|u| !u.is_empty()).map(str::to_string),
                })
            })
            .collect();
        Ok(Some(features))
    }

    /// Message and consumer counts of a vhost's queues, in two requests.
    /// A count the broker has not reported yet is `None` (destroying the
    /// queue then needs --allow-destroy).
    ///
    /// The stats view lags about 5 s and shows no counts at all for a queue
    /// younger than that (https://www.rabbitmq.com/docs/management#statistics-interval),
    /// so messages come from the queue
    /// totals as well, which classic queues give fresh (quorum queues once
    /// per Ra tick), and the higher of the two counts. Consumers come only
    /// from the stats view: when a classic queue has none there yet, it
    /// counts as unused, since its delete is guarded by `if-unused`.
    async fn queue_counts(
        &self,
        vhost: &str,
        only: Option<&BTreeSet<String>>,
    ) -> Result<BTreeMap<String, QueueCounts>, BrokerError> {
        if let Some(names) = only {
            return self.queue_counts_of(vhost, names).await;
        }
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
    async fn close(&self) {
        self.amqp.close_probes().await;
    }

    async fn put_vhost(&self, name: &str, settings: &VhostSettings, remove_limits: &[String]) -> Answer<()> {
        ops::put_vhost(&self.http, name, settings, remove_limits).await
    }

    async fn delete_vhost(&self, name: &str) -> Answer<()> {
        ops::delete_vhost(&self.http, name).await
    }

    async fn put_user(&self, user: &User, password: Option<&str>, remove_limits: &[String]) -> Answer<()> {
        ops::put_user(&self.http, user, password, remove_limits).await
    }

    async fn delete_user(&self, name: &str) -> Answer<()> {
        ops::delete_user(&self.http, name).await
    }

    async fn declare_exchange(&self, vhost: &str, exchange: &Exchange) -> Answer<()> {
        ops::declare_exchange(&self.http, vhost, exchange).await
    }

    async fn delete_exchange(&self, vhost: &str, name: &str) -> Answer<()> {
        ops::delete_exchange(&self.http, vhost, name).await
    }

    async fn declare_queue(&self, vhost: &str, queue: &Queue) -> Answer<()> {
        ops::declare_queue(&self.http, vhost, queue).await
    }

    async fn delete_queue(&self, vhost: &str, name: &str, kind: QueueType, guarded: bool) -> Answer<()> {
        ops::delete_queue(&self.http, vhost, name, kind, guarded).await
    }

    async fn bind(&self, vhost: &str, binding: &Binding) -> Answer<()> {
        ops::bind(&self.http, vhost, binding).await
    }

    async fn unbind(&self, vhost: &str, binding: &Binding) -> Answer<()> {
        ops::unbind(&self.http, vhost, binding).await
    }

    async fn put_policy(&self, vhost: &str, policy: &Policy) -> Answer<()> {
        ops::put_policy(&self.http, vhost, policy).await
    }

    async fn delete_policy(&self, vhost: &str, name: &str) -> Answer<()> {
        ops::delete_policy(&self.http, vhost, name).await
    }

    async fn put_permission(&self, vhost: &str, permission: &Permission) -> Answer<()> {
        ops::put_permission(&self.http, vhost, permission).await
    }

    async fn delete_permission(&self, vhost: &str, user: &str) -> Answer<()> {
        ops::delete_permission(&self.http, vhost, user).await
    }

    async fn put_object(&self, vhost: Option<&str>, kind: &'static Kind, object: &Object) -> Answer<()> {
        ops::put_object(&self.http, vhost, kind, object).await
    }

    async fn delete_object(&self, vhost: Option<&str>, name: &Name) -> Answer<()> {
        ops::delete_object(&self.http, vhost, name).await
    }

    async fn global_parameter(&self, name: &str) -> Answer<Option<Json>> {
        let path = format!("global-parameters/{}", segment(name));
        match self.http.get_json(&path, &format!("read global parameter \"{name}\"")).await {
            Ok(p) => Ok(Some(p["value"].clone())),
            Err(BrokerError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn put_global_parameter(&self, name: &str, value: &Json) -> Answer<()> {
        let body = serde_json::json!({ "name": name, "value": value });
        let path = format!("global-parameters/{}", segment(name));
        ops::put(&self.http, &path, body, &format!("record warren's records (global parameter \"{name}\")")).await
    }

    async fn delete_global_parameter(&self, name: &str) -> Answer<()> {
        let path = format!("global-parameters/{}", segment(name));
        ops::delete(&self.http, &path, &format!("delete warren's older record part (global parameter \"{name}\")"))
            .await
    }

    async fn put_record(&self, vhost: &str, name: &str, value: &Json) -> Answer<()> {
        let body = serde_json::json!({
            "type": "fanout", "durable": true, "auto_delete": false, "internal": true,
            "arguments": { RECORD_ARGUMENT: value.to_string() },
        });
        let path = format!("exchanges/{}/{}", segment(vhost), segment(name));
        let action = format!("record warren's records in vhost \"{vhost}\" (exchange \"{name}\")");
        ops::put(&self.http, &path, body, &action).await
    }

    async fn delete_record(&self, vhost: &str, name: &str) -> Answer<()> {
        let path = format!("exchanges/{}/{}", segment(vhost), segment(name));
        ops::delete(&self.http, &path, &format!("delete warren's older record \"{name}\" in vhost \"{vhost}\"")).await
    }

    async fn record_exchanges(&self, vhost: Option<&str>) -> Answer<Vec<(String, String, String)>> {
        // Filtered by name on the broker (a paged listing): a vhost may
        // hold many exchanges, and only warren's records are wanted.
        let only = format!("columns=name,vhost,arguments&use_regex=true&name={}", segment(named::RECORDS));
        let (path, action) = match vhost {
            Some(v) => (format!("exchanges/{}?{only}", segment(v)), format!("read warren's records in vhost \"{v}\"")),
            None => (format!("exchanges?{only}"), "read warren's records".to_string()),
        };
        let listing = self.paged(&path, &action).await?;
        let mut out = Vec::new();
        for x in &listing {
            let (Some(name), Some(text)) = (x["name"].as_str(), x["arguments"][RECORD_ARGUMENT].as_str()) else {
                continue;
            };
            if let Some(at) = vhost.or(x["vhost"].as_str()) {
                out.push((at.to_string(), name.to_string(), text.to_string()));
            }
        }
        Ok(out)
    }

    async fn try_lock(&self, vhost: Option<&str>, holder: &str) -> Answer<Option<Lock>> {
        self.amqp.try_lock(vhost.unwrap_or(self.amqp.lock_vhost()), holder).await
    }

    async fn lock_held(&self, vhost: Option<&str>) -> Answer<bool> {
        let vhost = vhost.unwrap_or(self.amqp.lock_vhost());
        let path = format!("queues/{}/{}?columns=name", segment(vhost), segment(LOCK_QUEUE));
        match self.http.get_json(&path, "look for the apply lock").await {
            Ok(_) => Ok(true),
            Err(BrokerError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version and the object totals wait on one overview: a broker
    /// that does not answer it is asked once, and both get its error.
    #[tokio::test]
    async fn an_overview_that_failed_is_not_asked_again() {
        let (address, seen) = super::super::http::tests::silent_server().await;
        let mut endpoint = Endpoint::parse(&address, Default::default()).unwrap();
        endpoint.timeout = Some(Duration::from_millis(300));
        let rabbit = Rabbit::new(endpoint, None).unwrap();
        let (version, totals) = tokio::join!(rabbit.check(), rabbit.object_totals());
        assert!(matches!(version, Err(BrokerError::TimedOut { .. })), "{version:?}");
        assert!(matches!(totals, Err(BrokerError::TimedOut { .. })), "{totals:?}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once");
    }
}
