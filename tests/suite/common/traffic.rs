//! Real traffic for live-migration tests: a publisher of numbered, persistent, mandatory messages
//! with publisher confirms, and consumers on named queues that ack and
//! record each number, so that a test proves every confirmed message arrived
//! exactly once while `warren apply` changes the topology underneath.
//!
//! Sync tests drive it: [`Traffic`] owns a multi-thread tokio runtime whose
//! worker threads publish and consume in the background while the test
//! thread runs the warren binary.
//!
//! ```ignore
//! let vhost = TestVhost::new("t-traffic-example");
//! let publish = Publish::new("x.orders", &["orders.created"]).rate(200);
//! let mut traffic = Traffic::start(&vhost.amqp_url(), publish);
//! traffic.add_consumer("orders.old", Duration::from_millis(5));
//! // ... run warren apply, which moves the binding to orders.new ...
//! traffic.add_consumer("orders.new", Duration::ZERO);
//! let report = traffic.finish(Duration::from_secs(30));
//! report.assert_exactly_once(); // across orders.old and orders.new
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties};
use serde_json::{Value as Json, json};
use tokio::runtime::Runtime;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::MissedTickBehavior;

use super::{TestBroker, seg};

/// Seconds between AMQP heartbeats: a dead peer shows within a test's time.
const HEARTBEAT: u16 = 10;
/// Prefetch for [`Traffic::add_consumer`].
pub(crate) const PREFETCH: u16 = 10;
/// How long stopping a consumer may take to handle what it already holds.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// [`Traffic::finish`] ends once no message was acked for this long (or
/// twice the slowest consumer's delay).
const QUIET: Duration = Duration::from_secs(1);

/// The AMQP URL of `vhost` on the test broker (`WARREN_TEST_AMQP_URL`, as
/// `scripts/broker env` prints it), with heartbeats.
pub(crate) fn amqp_url(vhost: &str) -> String {
    let base = std::env::var("WARREN_TEST_AMQP_URL")
        .expect("WARREN_TEST_AMQP_URL is not set: run the tests with scripts/test, which starts the private broker");
    amqp_url_on(&base, vhost)
}

/// The AMQP URL of `vhost` on the node whose AMQP URL (any vhost) is
/// `base`, with heartbeats.
pub(crate) fn amqp_url_on(base: &str, vhost: &str) -> String {
    let mut url = url::Url::parse(base).expect("an AMQP URL");
    url.set_path(&format!("/{}", seg(vhost)));
    url.set_query(None);
    with_heartbeat(url.as_str())
}

/// `url` with a heartbeat unless it asks for one: lapin's default (0)
/// leaves it to the broker's 60 s.
fn with_heartbeat(url: &str) -> String {
    if url.contains("heartbeat=") {
        url.to_string()
    } else {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}heartbeat={HEARTBEAT}")
    }
}

/// A vhost on the test broker for one test, deleted when dropped (also when
/// an assertion fails), with the declarations a harness test needs.
pub(crate) struct TestVhost {
    pub name: String,
    broker: TestBroker,
}

impl TestVhost {
    /// Creates `name` afresh (removing what an interrupted run left) and
    /// lets the test user, the one in `WARREN_TEST_AMQP_URL`, use it.
    pub(crate) fn new(name: &str) -> TestVhost {
        let vhost = TestVhost::with_settings(name, json!({}));
        let url = vhost.broker.amqp().expect("WARREN_TEST_AMQP_URL is set");
        let user = url::Url::parse(url).expect("WARREN_TEST_AMQP_URL is a URL").username().to_string();
        let all = json!({"configure": ".*", "write": ".*", "read": ".*"});
        vhost.broker.put(&format!("permissions/{}/{}", seg(name), seg(&user)), all);
        vhost
    }

    /// Creates `name` afresh with `settings` (the body of `PUT
    /// /api/vhosts/NAME`: description, default queue type…), with the
    /// permissions the broker grants its creator, the test admin, alone.
    pub(crate) fn with_settings(name: &str, settings: Json) -> TestVhost {
        let broker = TestBroker::from_env();
        let v = seg(name);
        broker.delete(&format!("vhosts/{v}"));
        broker.put(&format!("vhosts/{v}"), settings);
        TestVhost { name: name.to_string(), broker }
    }

    /// The vhost's definitions as the broker exports them
    /// (`GET /api/definitions/VHOST`), as text.
    pub(crate) fn export(&self) -> String {
        let answer = self.broker.request("GET", &format!("definitions/{}", seg(&self.name)), None);
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body
    }

    pub(crate) fn amqp_url(&self) -> String {
        amqp_url(&self.name)
    }

    fn path(&self, kind: &str, name: &str) -> String {
        format!("{kind}/{}/{}", seg(&self.name), seg(name))
    }

    /// A durable exchange of type `kind`.
    pub(crate) fn exchange(&self, name: &str, kind: &str) {
        let body = json!({"type": kind, "durable": true, "auto_delete": false, "internal": false, "arguments": {}});
        self.broker.put(&self.path("exchanges", name), body);
    }

    /// A durable classic queue.
    pub(crate) fn queue(&self, name: &str) {
        let body = json!({"durable": true, "auto_delete": false, "arguments": {}});
        self.broker.put(&self.path("queues", name), body);
    }

    pub(crate) fn bind(&self, exchange: &str, queue: &str, key: &str, arguments: Json) {
        let (v, x, q) = (seg(&self.name), seg(exchange), seg(queue));
        self.broker.post(&format!("bindings/{v}/e/{x}/q/{q}"), json!({"routing_key": key, "arguments": arguments}));
    }

    pub(crate) fn delete_queue(&self, name: &str) {
        self.broker.delete(&self.path("queues", name));
    }
}

impl Drop for TestVhost {
    fn drop(&mut self) {
        self.broker.delete(&format!("vhosts/{}", seg(&self.name)));
    }
}

/// Where message `n` goes: a routing key and, for headers exchanges,
/// headers (string values); to [`Publish::exchange`] unless it names its own.
#[derive(Clone, Debug, Default)]
pub(crate) struct Route {
    pub key: String,
    pub headers: Vec<(String, String)>,
    pub exchange: Option<String>,
}

/// What a publisher sends: to `exchange`, its `i`-th message (from 1)
/// takes `routes[(i - 1) % routes.len()]`, `rate` messages a second, until
/// `count` are sent or [`Traffic::stop_publishing`]. With one publisher,
/// message number `n` is its `n`-th.
#[derive(Clone, Debug)]
pub(crate) struct Publish {
    pub exchange: String,
    pub routes: Vec<Route>,
    pub rate: u32,
    pub count: Option<u64>,
}

impl Publish {
    /// Routing keys in turn; 100 messages a second, no end.
    pub(crate) fn new(exchange: &str, keys: &[&str]) -> Publish {
        let routes = keys.iter().map(|k| Route { key: k.to_string(), ..Route::default() }).collect();
        Publish::routes(exchange, routes)
    }

    /// Header sets in turn (empty routing key), for headers exchanges.
    pub(crate) fn with_headers(exchange: &str, headers: &[&[(&str, &str)]]) -> Publish {
        let routes = headers
            .iter()
            .map(|set| Route {
                key: String::new(),
                headers: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                exchange: None,
            })
            .collect();
        Publish::routes(exchange, routes)
    }

    pub(crate) fn routes(exchange: &str, routes: Vec<Route>) -> Publish {
        assert!(!routes.is_empty(), "Publish needs at least one route");
        Publish { exchange: exchange.to_string(), routes, rate: 100, count: None }
    }

    /// Messages a second (at least 1).
    pub(crate) fn rate(mut self, per_second: u32) -> Publish {
        self.rate = per_second.max(1);
        self
    }

    /// Stop after `n` messages.
    pub(crate) fn count(mut self, n: u64) -> Publish {
        self.count = Some(n);
        self
    }
}

/// What publishers and consumers recorded, shared between their tasks.
#[derive(Default)]
struct State {
    /// Messages 1..=sent were handed to the broker; all publishers draw
    /// their numbers from this one count, so numbers never clash.
    sent: u64,
    /// The numbers each publisher sent, by [`PublisherId`].
    sent_by: BTreeMap<usize, BTreeSet<u64>>,
    confirmed: BTreeSet<u64>,
    returned: Vec<u64>,
    nacked: Vec<u64>,
    /// Number → the queue of each copy acked, in order.
    deliveries: BTreeMap<u64, Vec<String>>,
    received: u64,
    cancelled: Vec<String>,
    errors: Vec<String>,
    /// Number → how many of its acked copies came with the redelivered flag.
    redelivered: BTreeMap<u64, usize>,
    /// Connections lost and made again ([`Traffic::start_reconnecting`]).
    interruptions: Vec<String>,
}

type Shared = Arc<Mutex<State>>;

fn lock(state: &Shared) -> MutexGuard<'_, State> {
    // A panic elsewhere must not hide what was recorded.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A consumer started by [`Traffic::add_consumer`], to stop it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerId(usize);

/// A publisher: [`Traffic::start`]'s is [`Traffic::MAIN`]; more come from
/// [`Traffic::add_publisher`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PublisherId(usize);

struct Publisher {
    stop: Arc<AtomicBool>,
    /// `None` once stopped and awaited.
    task: Option<JoinHandle<()>>,
    /// It ends by itself after this many.
    count: Option<u64>,
}

/// What a consumer does with each message.
#[derive(Clone, Copy, Debug)]
enum Handling {
    /// Acks it `delay` after it arrives and records its number.
    Ack(Duration),
    /// Holds it unacked and records nothing: a stuck consumer. The broker
    /// requeues what it holds when it is stopped (its channel closes).
    Hold,
}

/// A consumer's connection and channel, replaced when it reconnects.
/// Taken when the consumer stops, to close the connection.
type Link = Arc<Mutex<Option<(Connection, Channel)>>>;

struct Consumer {
    link: Link,
    tag: ShortString,
    delay: Duration,
    /// Set before we cancel, so the task tells our stop from the broker's.
    stopping: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

/// The publishers running from [`Traffic::start`] and
/// [`Traffic::add_publisher`] and the consumers added since;
/// [`Traffic::finish`] ends them and gives the [`Report`].
pub(crate) struct Traffic {
    runtime: Runtime,
    url: String,
    /// Whether publishers and consumers connect again after losing their
    /// connection ([`Traffic::start_reconnecting`]).
    reconnect: bool,
    state: Shared,
    publishers: Vec<Publisher>,
    consumers: Vec<Option<Consumer>>,
}

impl Traffic {
    /// The publisher [`Traffic::start`] starts.
    pub(crate) const MAIN: PublisherId = PublisherId(0);

    /// Connects to `url` (see [`amqp_url`]) and starts publishing. Panics
    /// if it cannot connect: the test's setup is wrong.
    pub(crate) fn start(url: &str, publish: Publish) -> Traffic {
        let mut traffic = Traffic::new(url, false);
        traffic.add_publisher(publish);
        traffic
    }

    /// Like [`Traffic::start`], for tests that stop the broker or a node
    /// underneath: a publisher or consumer whose connection is lost
    /// connects again (every 200 ms until it can) and goes on, and a
    /// consumer the broker cancels consumes its queue again unless the
    /// queue is gone. Check the outcome with [`Report::check_at_least_once`]:
    /// a message whose confirm was lost is not sent again, and an ack lost
    /// with its connection means a redelivery.
    pub(crate) fn start_reconnecting(url: &str, publish: Publish) -> Traffic {
        let mut traffic = Traffic::new(url, true);
        traffic.add_publisher(publish);
        traffic
    }

    /// Connects to `url` for consumers alone ([`Traffic::add_consumer`]).
    pub(crate) fn consumers(url: &str) -> Traffic {
        Traffic::new(url, false)
    }

    fn new(url: &str, reconnect: bool) -> Traffic {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("traffic")
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Traffic {
            runtime,
            url: with_heartbeat(url),
            reconnect,
            state: Shared::default(),
            publishers: Vec::new(),
            consumers: Vec::new(),
        }
    }

    /// Starts one more publisher, with its own connection, say one that
    /// addresses a queue by name through the default exchange
    /// (`Publish::new("", &["orders.v1"])`). Its numbers come from the same
    /// count as the others' and are checked the same way; [`Report::sent_by`]
    /// tells them apart. Panics if it cannot connect.
    pub(crate) fn add_publisher(&mut self, publish: Publish) -> PublisherId {
        let id = PublisherId(self.publishers.len());
        let name = format!("warren-traffic publisher {}", id.0);
        let link = self
            .runtime
            .block_on(publisher_link(&self.url, &name))
            .unwrap_or_else(|e| panic!("traffic: publishing through {}: {e}", self.url));
        let stop = Arc::new(AtomicBool::new(false));
        let count = publish.count;
        let redial = self.reconnect.then(|| (self.url.clone(), name));
        let task = self.runtime.spawn(publish_task(id, link, publish, self.state.clone(), stop.clone(), redial));
        self.publishers.push(Publisher { stop, task: Some(task), count });
        id
    }

    /// Consumes `queue`, acking each message `delay` after it arrives, with
    /// [`PREFETCH`]. Panics if the queue cannot be consumed.
    pub(crate) fn add_consumer(&mut self, queue: &str, delay: Duration) -> ConsumerId {
        self.try_add_consumer(queue, delay, PREFETCH).unwrap_or_else(|e| panic!("traffic: {e}"))
    }

    /// Like [`Traffic::add_consumer`] with a prefetch, and an error instead
    /// of a panic (say the queue does not exist yet).
    pub(crate) fn try_add_consumer(
        &mut self,
        queue: &str,
        delay: Duration,
        prefetch: u16,
    ) -> Result<ConsumerId, String> {
        self.consume(queue, Handling::Ack(delay), prefetch)
    }

    /// A stuck consumer on `queue`: unlimited prefetch, it takes every
    /// message the queue gives it and never acks, and records nothing.
    /// [`Traffic::stop_consumer`] closes it, and the broker requeues what it
    /// held for the other consumers. Panics if the queue cannot be consumed.
    pub(crate) fn add_stuck_consumer(&mut self, queue: &str) -> ConsumerId {
        self.consume(queue, Handling::Hold, 0).unwrap_or_else(|e| panic!("traffic: {e}"))
    }

    fn consume(&mut self, queue: &str, handling: Handling, prefetch: u16) -> Result<ConsumerId, String> {
        let id = ConsumerId(self.consumers.len());
        let subscription = Subscription {
            url: self.url.clone(),
            queue: queue.to_string(),
            tag: format!("warren-traffic-{}", id.0).into(),
            prefetch,
        };
        let (connection, channel, consumer) =
            self.runtime.block_on(subscription.subscribe()).map_err(|e| format!("consuming {queue}: {e}"))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let link: Link = Arc::new(Mutex::new(Some((connection, channel))));
        let task = self.runtime.spawn(consume_task(
            consumer,
            subscription.clone(),
            handling,
            self.state.clone(),
            stopping.clone(),
            self.reconnect.then(|| link.clone()),
        ));
        let delay = match handling {
            Handling::Ack(delay) => delay,
            Handling::Hold => Duration::ZERO,
        };
        self.consumers.push(Some(Consumer { link, tag: subscription.tag, delay, stopping, task }));
        Ok(id)
    }

    /// Cancels the consumer, lets it ack what it already holds (so nothing
    /// is left to redeliver as a false duplicate), and closes it. A stuck
    /// consumer acks nothing: closing it requeues what it held.
    pub(crate) fn stop_consumer(&mut self, id: ConsumerId) {
        let Some(c) = self.consumers.get_mut(id.0).and_then(Option::take) else {
            return;
        };
        c.stopping.store(true, SeqCst);
        let state = self.state.clone();
        self.runtime.block_on(async move {
            let channel = c.link.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(_, ch)| ch.clone());
            if let Some(channel) = channel {
                // An error means the broker cancelled it already: the task ends.
                let _ = channel.basic_cancel(c.tag.clone(), BasicCancelOptions::default()).await;
            }
            if tokio::time::timeout(STOP_TIMEOUT, c.task).await.is_err() {
                lock(&state).errors.push(format!("consumer {} did not stop within {STOP_TIMEOUT:?}", c.tag));
            }
            // The connection it ended on, if it reconnected meanwhile.
            let link = c.link.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((connection, _)) = link {
                let _ = connection.close(200, "OK".into()).await;
            }
        });
    }

    /// Stops every consumer, as [`Traffic::stop_consumer`] does.
    pub(crate) fn stop_consumers(&mut self) {
        for id in 0..self.consumers.len() {
            self.stop_consumer(ConsumerId(id));
        }
    }

    /// Stops every publisher and waits for the broker's answer to every
    /// message sent. Does nothing the second time.
    pub(crate) fn stop_publishing(&mut self) {
        for id in 0..self.publishers.len() {
            self.stop_publisher(PublisherId(id));
        }
    }

    /// Stops one publisher and waits for the broker's answer to every
    /// message it sent. Does nothing the second time.
    pub(crate) fn stop_publisher(&mut self, id: PublisherId) {
        let Some(p) = self.publishers.get_mut(id.0) else { return };
        p.stop.store(true, SeqCst);
        if let Some(task) = p.task.take() {
            let _ = self.runtime.block_on(task);
        }
    }

    /// Waits until every publisher with a count has sent them all and had
    /// every one answered.
    pub(crate) fn wait_published(&mut self) {
        for p in &mut self.publishers {
            if p.count.is_some()
                && let Some(task) = p.task.take()
            {
                let _ = self.runtime.block_on(task);
            }
        }
    }

    /// Waits until `total` distinct numbers were received (on any queue);
    /// false if `timeout` passed first.
    pub(crate) fn wait_until_received(&self, total: u64, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout, |s| s.deliveries.len() as u64 >= total)
    }

    fn wait_until(&self, deadline: Instant, done: impl Fn(&State) -> bool) -> bool {
        loop {
            if done(&lock(&self.state)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What was recorded so far.
    pub(crate) fn report(&self) -> Report {
        Report::from(&*lock(&self.state))
    }

    /// Ends the traffic and reports, all within about `timeout`: lets
    /// publishers with a count send them all (those without are stopped),
    /// waits until every confirmed message was received, then until no
    /// message was acked for a quiet second (so slower queues and late
    /// duplicates are seen too), and stops the consumers.
    pub(crate) fn finish(mut self, timeout: Duration) -> Report {
        let deadline = Instant::now() + timeout;
        // A publisher's task ends once every message it sent is answered.
        let counted_done = |t: &Traffic| {
            t.publishers.iter().all(|p| p.count.is_none() || p.task.as_ref().is_none_or(JoinHandle::is_finished))
        };
        while !counted_done(&self) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop_publishing();
        self.wait_until(deadline, |s| s.confirmed.iter().all(|n| s.deliveries.contains_key(n)));
        let slowest = self.consumers.iter().flatten().map(|c| c.delay * 2).max().unwrap_or_default();
        let quiet = QUIET.max(slowest);
        let (mut received, mut since) = (lock(&self.state).received, Instant::now());
        while since.elapsed() < quiet && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            let now = lock(&self.state).received;
            if now != received {
                (received, since) = (now, Instant::now());
            }
        }
        for id in 0..self.consumers.len() {
            self.stop_consumer(ConsumerId(id));
        }
        self.report()
    }
}

async fn connect(url: &str, name: &str) -> lapin::Result<Connection> {
    // Named, so the management UI shows whose connection it is.
    Connection::connect(url, ConnectionProperties::default().with_connection_name(name.into())).await
}

/// Connects, opens a channel in confirm mode: a publisher's link.
async fn publisher_link(url: &str, name: &str) -> lapin::Result<(Connection, Channel)> {
    let connection = connect(url, name).await?;
    let channel = connection.create_channel().await?;
    channel.confirm_select(ConfirmSelectOptions::default()).await?;
    Ok((connection, channel))
}

/// Tries [`publisher_link`] every 200 ms until it works; `None` once told to stop.
async fn redial_publisher(url: &str, name: &str, stop: &AtomicBool) -> Option<(Connection, Channel)> {
    loop {
        if stop.load(SeqCst) {
            return None;
        }
        if let Ok(Ok(link)) = tokio::time::timeout(ATTEMPT, publisher_link(url, name)).await {
            return Some(link);
        }
        tokio::time::sleep(REDIAL).await;
    }
}

/// How long a reconnecting publisher or consumer waits between attempts.
const REDIAL: Duration = Duration::from_millis(200);
/// How long one attempt may take. A connection the node accepts as it
/// stops or starts can stay unanswered in the handshake, and lapin has no
/// connect timeout of its own: without one the attempt waits forever.
const ATTEMPT: Duration = Duration::from_secs(5);

/// `redial` (URL, connection name) makes it reconnect when a publish fails.
async fn publish_task(
    id: PublisherId,
    (mut connection, mut channel): (Connection, Channel),
    spec: Publish,
    state: Shared,
    stop: Arc<AtomicBool>,
    redial: Option<(String, String)>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(spec.rate)));
    // A steady rate: after a stall go on at the rate, not in a burst.
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Each confirm is awaited apart, so a slow one does not slow the rate.
    let mut confirms = JoinSet::new();
    let options = BasicPublishOptions { mandatory: true, ..BasicPublishOptions::default() };
    let reconnecting = redial.is_some();
    for i in 1u64.. {
        if stop.load(SeqCst) || spec.count.is_some_and(|c| i > c) {
            break;
        }
        tick.tick().await;
        // The message's number, from the count all publishers share;
        // counted as sent from here (a failed publish is an error too).
        let n = {
            let mut s = lock(&state);
            s.sent += 1;
            let n = s.sent;
            s.sent_by.entry(id.0).or_default().insert(n);
            n
        };
        let route = &spec.routes[((i - 1) % spec.routes.len() as u64) as usize];
        let mut headers = FieldTable::default();
        for (k, v) in &route.headers {
            headers.insert(k.as_str().into(), AMQPValue::LongString(v.as_str().into()));
        }
        let properties = BasicProperties::default()
            .with_delivery_mode(2) // persistent
            .with_message_id(n.to_string().into())
            .with_headers(headers);
        let body = n.to_string();
        let exchange = route.exchange.as_deref().unwrap_or(&spec.exchange);
        let publishing =
            channel.basic_publish(exchange.into(), route.key.as_str().into(), options, body.as_bytes(), properties);
        // lapin can leave a publish unanswered for good when the node shuts
        // down under it (amqp-rs/lapin#409): one unanswered in ATTEMPT
        // failed, and a reconnecting publisher connects again.
        let published = match tokio::time::timeout(ATTEMPT, publishing).await {
            Ok(published) => published.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer in {ATTEMPT:?}")),
        };
        match published {
            Ok(confirm) => {
                let state = state.clone();
                confirms.spawn(async move {
                    let answer = confirm.await;
                    let mut s = lock(&state);
                    match answer {
                        // An unroutable mandatory message comes back
                        // (basic.return) and is then acked.
                        Ok(Confirmation::Ack(Some(_))) => s.returned.push(n),
                        Ok(Confirmation::Ack(None)) => {
                            s.confirmed.insert(n);
                        }
                        Ok(Confirmation::Nack(_)) => s.nacked.push(n),
                        Ok(Confirmation::NotRequested) => s.errors.push(format!("message {n}: confirms are off")),
                        // Its connection was lost: it stays unconfirmed.
                        Err(_) if reconnecting => {}
                        Err(e) => s.errors.push(format!("message {n}: no confirm: {e}")),
                    }
                });
            }
            Err(e) => {
                let Some((url, name)) = &redial else {
                    // The channel is gone (say the exchange was deleted):
                    // that is for the test to see, not to paper over.
                    lock(&state).errors.push(format!("publishing message {n}: {e}"));
                    break;
                };
                lock(&state).interruptions.push(format!("publisher {}: message {n}: {e}", id.0));
                match redial_publisher(url, name, &stop).await {
                    Some(link) => (connection, channel) = link,
                    None => break,
                }
            }
        }
    }
    while confirms.join_next().await.is_some() {}
    let _ = connection.close(200, "OK".into()).await;
}

/// What a consumer subscribes to, again after a lost connection.
#[derive(Clone)]
struct Subscription {
    url: String,
    queue: String,
    tag: ShortString,
    prefetch: u16,
}

/// The AMQP `not-found` reply.
const NOT_FOUND: u16 = 404;

/// Whether the broker refused because the queue does not exist ("no queue
/// 'q' in vhost 'v'"). The same code also says that a durable queue's node
/// "is down or inaccessible", as while the node stops or starts: the queue
/// is still there, and the consumer tries again.
fn queue_gone(e: &lapin::Error) -> bool {
    matches!(e.kind(), lapin::ErrorKind::ProtocolError(p)
        if p.get_id() == NOT_FOUND && p.get_message().as_str().contains("no queue"))
}

impl Subscription {
    async fn subscribe(&self) -> lapin::Result<(Connection, Channel, lapin::Consumer)> {
        let connection = connect(&self.url, &format!("warren-traffic consumer {}", self.queue)).await?;
        let consuming = async {
            let channel = connection.create_channel().await?;
            channel.basic_qos(self.prefetch, BasicQosOptions::default()).await?;
            let options = BasicConsumeOptions::default();
            let consumer = channel
                .basic_consume(self.queue.as_str().into(), self.tag.clone(), options, FieldTable::default())
                .await?;
            Ok::<_, lapin::Error>((channel, consumer))
        };
        match consuming.await {
            Ok((channel, consumer)) => Ok((connection, channel, consumer)),
            Err(e) => {
                let _ = connection.close(200, "OK".into()).await;
                Err(e)
            }
        }
    }

    /// Subscribes again every 200 ms until it works: `None` once told to
    /// stop or when the queue is gone.
    async fn redial(&self, link: &Link, stopping: &AtomicBool) -> Option<lapin::Consumer> {
        loop {
            if stopping.load(SeqCst) {
                return None;
            }
            let Ok(attempt) = tokio::time::timeout(ATTEMPT, self.subscribe()).await else {
                continue;
            };
            match attempt {
                Ok((connection, channel, consumer)) => {
                    if stopping.load(SeqCst) {
                        let _ = connection.close(200, "OK".into()).await;
                        return None;
                    }
                    *link.lock().unwrap_or_else(|e| e.into_inner()) = Some((connection, channel));
                    return Some(consumer);
                }
                Err(e) if queue_gone(&e) => {
                    return None;
                }
                Err(_) => tokio::time::sleep(REDIAL).await,
            }
        }
    }
}

/// `redial` (the consumer's link) makes it consume again after its
/// connection is lost or the broker cancels it while the queue remains.
async fn consume_task(
    mut consumer: lapin::Consumer,
    subscription: Subscription,
    handling: Handling,
    state: Shared,
    stopping: Arc<AtomicBool>,
    redial: Option<Link>,
) {
    let queue = subscription.queue.clone();
    loop {
        consume_stream(&mut consumer, &queue, handling, &state, redial.is_some()).await;
        // The stream ends when the consumer is cancelled: by stop_consumer,
        // or by the broker, as when its queue is deleted. The latter is a
        // fact for the test to judge (a migration deletes the old queue),
        // not a panic.
        if stopping.load(SeqCst) {
            return;
        }
        let Some(link) = &redial else {
            lock(&state).cancelled.push(queue);
            return;
        };
        lock(&state).interruptions.push(format!("consumer on {queue}: consuming again"));
        match subscription.redial(link, &stopping).await {
            Some(c) => consumer = c,
            None => {
                if !stopping.load(SeqCst) {
                    lock(&state).cancelled.push(queue);
                }
                return;
            }
        }
    }
}

/// Handles deliveries until the stream ends; `lenient` records a lost
/// connection's errors as interruptions, not errors.
async fn consume_stream(
    consumer: &mut lapin::Consumer,
    queue: &str,
    handling: Handling,
    state: &Shared,
    lenient: bool,
) {
    // What a stuck consumer holds, never acked: the broker requeues it all
    // when the channel closes.
    let mut held = Vec::new();
    let problem = |text: String| {
        let mut s = lock(state);
        if lenient { s.interruptions.push(text) } else { s.errors.push(text) }
    };
    // One message at a time, so `delay` makes a drain take real time.
    while let Some(delivery) = consumer.next().await {
        let delivery = match delivery {
            Ok(d) => d,
            Err(e) => {
                problem(format!("consumer on {queue}: {e}"));
                if lenient {
                    break;
                }
                continue;
            }
        };
        let delay = match handling {
            Handling::Ack(delay) => delay,
            Handling::Hold => {
                held.push(delivery);
                continue;
            }
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let number = std::str::from_utf8(&delivery.data).ok().and_then(|s| s.parse::<u64>().ok());
        // lapin can leave an ack unanswered for good when the connection
        // dies under it (as a publish: amqp-rs/lapin#409), and the consumer
        // would wait there forever, attached to nothing. An ack unanswered
        // in ATTEMPT counts as not made, and the consumer consumes again.
        let Ok(acked) = tokio::time::timeout(ATTEMPT, delivery.ack(BasicAckOptions::default())).await else {
            problem(format!("{queue}: message {} not acked: no answer in {ATTEMPT:?}", few(&Vec::from_iter(number))));
            if lenient {
                break;
            }
            continue;
        };
        // Recorded once acked: an unacked message is redelivered, and
        // counting it on arrival would report that as a duplicate.
        match (number, acked) {
            (Some(n), Ok(true)) => {
                let mut s = lock(state);
                s.received += 1;
                s.deliveries.entry(n).or_default().push(queue.to_string());
                if delivery.redelivered {
                    *s.redelivered.entry(n).or_default() += 1;
                }
            }
            (None, _) => {
                let body = String::from_utf8_lossy(&delivery.data).into_owned();
                lock(state).errors.push(format!("{queue}: a message not from the traffic publisher: {body:?}"));
            }
            (Some(n), Ok(false)) => problem(format!("{queue}: message {n} not acked: its channel closed")),
            (Some(n), Err(e)) => problem(format!("{queue}: message {n} not acked: {e}")),
        }
    }
}

/// What happened to the traffic. Numbers run from 1 to `sent`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Report {
    pub sent: u64,
    /// The numbers each publisher sent, by [`PublisherId`].
    sent_by: BTreeMap<usize, BTreeSet<u64>>,
    pub confirmed: BTreeSet<u64>,
    /// Unroutable, came back with basic.return.
    pub returned: Vec<u64>,
    pub nacked: Vec<u64>,
    /// Sent but never answered (the channel closed first).
    pub unconfirmed: Vec<u64>,
    /// Copies acked, over all queues.
    pub received: u64,
    /// Number → the queue of each copy acked.
    pub deliveries: BTreeMap<u64, Vec<String>>,
    /// Received more than once, over all queues, with the queues.
    pub duplicates: Vec<(u64, Vec<String>)>,
    /// Confirmed but received on no queue.
    pub lost: Vec<u64>,
    /// Queues whose consumer the broker cancelled (e.g. queue deleted).
    pub cancelled: Vec<String>,
    pub errors: Vec<String>,
    /// Number → how many of its acked copies came with the redelivered flag.
    pub redelivered: BTreeMap<u64, usize>,
    /// Connections lost and made again ([`Traffic::start_reconnecting`]).
    pub interruptions: Vec<String>,
}

impl From<&State> for Report {
    fn from(s: &State) -> Report {
        let mut returned = s.returned.clone();
        returned.sort();
        let mut nacked = s.nacked.clone();
        nacked.sort();
        let unconfirmed = (1..=s.sent)
            .filter(|n| {
                !s.confirmed.contains(n) && returned.binary_search(n).is_err() && nacked.binary_search(n).is_err()
            })
            .collect();
        let mut report = Report {
            sent: s.sent,
            sent_by: s.sent_by.clone(),
            confirmed: s.confirmed.clone(),
            returned,
            nacked,
            unconfirmed,
            received: s.received,
            deliveries: s.deliveries.clone(),
            cancelled: s.cancelled.clone(),
            errors: s.errors.clone(),
            redelivered: s.redelivered.clone(),
            interruptions: s.interruptions.clone(),
            ..Report::default()
        };
        (report.lost, report.duplicates) = report.tally(|_| true);
        report
    }
}

impl Report {
    /// Lost and duplicated numbers counting only copies on queues that
    /// `counts` accepts.
    #[allow(clippy::type_complexity)]
    fn tally(&self, counts: impl Fn(&str) -> bool) -> (Vec<u64>, Vec<(u64, Vec<String>)>) {
        let copies = |n: &u64| -> Vec<String> {
            self.deliveries.get(n).into_iter().flatten().filter(|q| counts(q)).cloned().collect()
        };
        let lost = self.confirmed.iter().filter(|n| copies(n).is_empty()).copied().collect();
        let duplicates =
            self.deliveries.keys().map(|n| (*n, copies(n))).filter(|(_, queues)| queues.len() > 1).collect();
        (lost, duplicates)
    }

    /// The numbers `publisher` sent.
    pub(crate) fn sent_by(&self, publisher: PublisherId) -> BTreeSet<u64> {
        self.sent_by.get(&publisher.0).cloned().unwrap_or_default()
    }

    /// Copies acked per queue.
    pub(crate) fn per_queue(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for q in self.deliveries.values().flatten() {
            *out.entry(q.clone()).or_default() += 1;
        }
        out
    }

    /// Ok if every confirmed number was received exactly once over all the
    /// queues consumed (e.g. old and new queue together), and nothing was
    /// returned, nacked, unanswered or went wrong.
    pub(crate) fn check_exactly_once(&self) -> Result<(), String> {
        let mut problems = self.traffic_problems();
        problems.extend(self.loss_and_duplicates("all queues", &self.lost, &self.duplicates));
        self.verdict(problems)
    }

    /// Like [`Report::check_exactly_once`], but exactly once within each
    /// set of queues, as when each of several bound queues must get every
    /// message: `&[&["orders.old", "orders.new"], &["audit"]]`. A queue
    /// that received messages must be in some set.
    pub(crate) fn check_exactly_once_per_queue_set(&self, sets: &[&[&str]]) -> Result<(), String> {
        let mut problems = self.traffic_problems();
        for q in self.per_queue().keys() {
            if !sets.iter().any(|set| set.contains(&q.as_str())) {
                problems.push(format!("queue {q} received messages but is in no queue set"));
            }
        }
        for set in sets {
            let (lost, duplicates) = self.tally(|q| set.contains(&q));
            problems.extend(self.loss_and_duplicates(&set.join(" + "), &lost, &duplicates));
        }
        self.verdict(problems)
    }

    /// For traffic through a broker restart or a lost node: every confirmed
    /// number was received (a message whose confirm was lost with its
    /// connection may be missing, since it may never have arrived), and a
    /// number received more than once has a copy with the redelivered flag
    /// for each extra one (an ack lost with its connection); nothing was
    /// returned, nacked or went wrong otherwise.
    pub(crate) fn check_at_least_once(&self) -> Result<(), String> {
        let unexplained: Vec<u64> = self
            .duplicates
            .iter()
            .filter(|(n, queues)| self.redelivered.get(n).copied().unwrap_or(0) < queues.len() - 1)
            .map(|(n, _)| *n)
            .collect();
        self.verdict(self.problems(&[
            ("returned unroutable", &self.returned),
            ("nacked", &self.nacked),
            ("confirmed but never received", &self.lost),
            ("received more than once without being redelivered", &unexplained),
        ]))
    }

    /// Panics with a summary unless [`Report::check_exactly_once`] holds.
    pub(crate) fn assert_exactly_once(&self) {
        if let Err(e) = self.check_exactly_once() {
            panic!("traffic was not delivered exactly once:\n{e}");
        }
    }

    /// Panics unless [`Report::check_exactly_once_per_queue_set`] holds.
    pub(crate) fn assert_exactly_once_per_queue_set(&self, sets: &[&[&str]]) {
        if let Err(e) = self.check_exactly_once_per_queue_set(sets) {
            panic!("traffic was not delivered exactly once per queue set:\n{e}");
        }
    }

    fn traffic_problems(&self) -> Vec<String> {
        self.problems(&[
            ("returned unroutable", &self.returned),
            ("nacked", &self.nacked),
            ("never confirmed", &self.unconfirmed),
        ])
    }

    /// Nothing confirmed, each non-empty list of numbers that must be
    /// empty, and the errors.
    fn problems(&self, lists: &[(&str, &[u64])]) -> Vec<String> {
        let mut out = Vec::new();
        if self.confirmed.is_empty() {
            // Else a test whose traffic never flowed would pass.
            out.push("no message was confirmed, so nothing is proven".to_string());
        }
        for (what, numbers) in lists.iter().filter(|(_, n)| !n.is_empty()) {
            out.push(format!("{} {what}: {}", numbers.len(), few(numbers)));
        }
        out.extend(self.errors.iter().map(|e| format!("error: {e}")));
        out
    }

    fn loss_and_duplicates(&self, queues: &str, lost: &[u64], duplicates: &[(u64, Vec<String>)]) -> Vec<String> {
        let mut out = Vec::new();
        if !lost.is_empty() {
            out.push(format!("{} confirmed but never received on {queues}: {}", lost.len(), few(lost)));
        }
        if !duplicates.is_empty() {
            let shown: Vec<String> =
                duplicates.iter().take(10).map(|(n, qs)| format!("{n} on [{}]", qs.join(", "))).collect();
            let more = duplicates.len().saturating_sub(10);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            out.push(format!("{} received more than once on {queues}: {}{more}", duplicates.len(), shown.join("; ")));
        }
        out
    }

    fn verdict(&self, problems: Vec<String>) -> Result<(), String> {
        if problems.is_empty() { Ok(()) } else { Err(format!("{}\n({self})", problems.join("\n"))) }
    }
}

/// The first few numbers of a list, and how many more.
fn few(numbers: &[u64]) -> String {
    let shown: Vec<String> = numbers.iter().take(10).map(u64::to_string).collect();
    match numbers.len().saturating_sub(10) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let queues: Vec<String> = self.per_queue().iter().map(|(q, n)| format!("{q}: {n}")).collect();
        write!(
            f,
            "sent {}, confirmed {}, returned {}, nacked {}, unconfirmed {}; received {} [{}]; \
             lost {}, duplicated {} ({} redelivered); consumers cancelled by the broker: [{}]; errors {}; \
             connections lost and made again {}",
            self.sent,
            self.confirmed.len(),
            self.returned.len(),
            self.nacked.len(),
            self.unconfirmed.len(),
            self.received,
            queues.join(", "),
            self.lost.len(),
            self.duplicates.len(),
            self.redelivered.values().sum::<usize>(),
            self.cancelled.join(", "),
            self.errors.len(),
            self.interruptions.len(),
        )
    }
}
