//! The routing model (`src/routing`) checked against RabbitMQ, not against
//! itself: topologies generated from a seed are declared on the test
//! broker, messages are published to them, and where each message landed
//! (after its dead letters settled) must be where the model says.
//!
//! A run uses [`SEED`], so that whether it passes is the code's doing and
//! not the draw's; `WARREN_ROUTING_SEED=random` draws one, which is how
//! the model's gaps are found, and `WARREN_ROUTING_SEED=N` replays one.
//! Each run prints its seed. A
//! mismatch prints the seed, the topology (as definitions JSON), the
//! message, the broker's queues and the model's.
//!
//! What a topology holds: exchanges of the four types, internal ones,
//! alternate exchanges by argument and by policy, exchange-to-exchange
//! bindings (cycles included), the broker's `amq.*` exchanges, headers
//! bindings of the four `x-match` modes with typed values (strings, ints,
//! floats, booleans, void), classic and quorum queues, message TTLs and
//! dead-letter exchanges and keys by argument and by policy (policies with
//! priorities, apply-to and keys some queue types refuse; operator policies
//! with a TTL). Messages go to those exchanges and the default one, with CC
//! and BCC keys and headers; one goes to an internal exchange, which the
//! broker refuses.
//!
//! Dead letters: a queue with a TTL (0 or 5 ms) dead-letters all it gets;
//! after that settles, every queue is drained with basic.get, and some of
//! what came out is rejected (basic.reject or basic.nack, no requeue)
//! rather than acked: those dead letters are checked in a second round.
//! The model answers one hop (`Router::dead_letters`); this test follows
//! a dead letter from hop to hop with its death history, dropping it at a
//! queue it already died in with no reject since, as `rabbit_dead_letter`
//! does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, BasicRejectOptions, ConfirmSelectOptions,
    ExchangeBindOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldArray, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use serde_json::{Value as Json, json};
use warren::model::{ApplyTo, Binding, DestinationKind, Exchange, Policy, Queue, QueueType, Table, Value, Vhost};
use warren::routing::{Hop, Keys, Message, Reason, Router, Version, Why};

use crate::common::traffic::amqp_url_on;
use crate::common::{TestBroker, seg, share};

/// The seed of every run that does not ask for another: one that passes on
/// 3.10 and 4.0. A random one found a gap this way (see
/// docs/development.md); a seed that found a gap joins the tests as a unit
/// test of the model once the model is mended.
const SEED: u64 = 1796470553437964969;

/// Topologies per run, messages per topology, topologies set up at once.
const TOPOLOGIES: usize = 24;
const MESSAGES: usize = 100;
const AT_ONCE: usize = 6;
/// How long the dead letters of one round may take to settle.
const SETTLE: Duration = Duration::from_secs(20);

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_model_routes_messages_as_rabbitmq_does() {
    let _turn = share();
    let broker = TestBroker::from_env();
    let (major, minor) = broker.version();
    let version = Version::new(major, minor);
    let seed = match std::env::var("WARREN_ROUTING_SEED").ok().as_deref() {
        None => SEED,
        Some("random") => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
        Some(n) => n.parse::<u64>().expect("WARREN_ROUTING_SEED is a number or `random`"),
    };
    eprintln!("routing conformance on RabbitMQ {major}.{minor}: seed {seed} (WARREN_ROUTING_SEED={seed} replays it)");
    let started = Instant::now();
    let worlds: Vec<World> = (0..TOPOLOGIES).map(|i| World::generate(seed, i, version)).collect();
    let base = broker.amqp().expect("WARREN_TEST_AMQP_URL is set").to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcomes: Vec<Outcome> = runtime.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, world) in worlds.into_iter().enumerate() {
            let (gate, base) = (gate.clone(), base.clone());
            tasks.spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                (i, check(world, seed, version, &base).await)
            });
        }
        let mut all = tasks.join_all().await;
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, o)| o).collect()
    });
    let pairs: usize = outcomes.iter().map(|o| o.pairs).sum();
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    eprintln!(
        "routing conformance on RabbitMQ {major}.{minor}: {pairs} (topology, message) pairs in {:.1} s, {} mismatch(es), seed {seed}",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (case, n) in outcomes.iter().flat_map(|o| &o.seen) {
        *seen.entry(case).or_default() += n;
    }
    eprintln!("cases covered: {seen:?}");
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(failures.is_empty(), "{} mismatch(es) with seed {seed}: see above", failures.len());
    assert!(pairs >= 2_000, "only {pairs} pairs");
}

/// xorshift64*: small, seeded, the same on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const BUILTIN: [&str; 4] = ["amq.direct", "amq.fanout", "amq.topic", "amq.headers"];
const KINDS: [&str; 4] = ["direct", "fanout", "topic", "headers"];
const KEYS: [&str; 10] = ["a", "b", "c", "", "a.b", "a..b", "x.b", "a.b.c", "b.a", "."];
const PATTERNS: [&str; 14] =
    ["#", "*", "a.*", "*.b", "a.#", "#.b", "a..b", "", "a", "*.*", "#.a.#", "a.b.c", "#.#", "*.#"];
const PATTERNS_OF_POLICIES: [&str; 9] =
    ["^q", "^x", "^q[02]$", "^x[13]$", "^amq\\.", ".*", "1$", "^(x0|q1)$", "^(q|x)2"];
/// A policy key that does not route but that some queue types refuse,
/// which makes the broker skip the whole policy for such a queue
/// (`expires`: one that every type but streams takes).
fn refused_by_some(rng: &mut Rng) -> (&'static str, Value) {
    match rng.below(4) {
        0 => ("delivery-limit", Value::Int(50)),
        1 => ("max-age", Value::String("1D".into())),
        2 => ("max-in-memory-length", Value::Int(1000)),
        _ => ("expires", Value::Int(3_600_000)),
    }
}

/// One message as published: its id is its body.
#[derive(Debug, Clone)]
struct Publish {
    id: usize,
    exchange: String,
    key: String,
    cc: Vec<String>,
    bcc: Vec<String>,
    headers: Table,
}

impl Publish {
    /// The message as the model takes it: its keys with CC and BCC.
    fn message(&self) -> Message {
        let keys = std::iter::once(&self.key).chain(&self.cc).chain(&self.bcc).cloned().collect();
        Message { exchange: self.exchange.clone(), keys: Keys::Exact(keys), headers: Some(self.headers.clone()) }
    }
}

/// One generated topology in its own vhost, and the messages for it.
struct World {
    index: usize,
    vhost: Vhost,
    messages: Vec<Publish>,
}

impl World {
    fn generate(seed: u64, index: usize, version: Version) -> World {
        let mut rng = Rng::new(seed ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let mut vhost = Vhost::new(&format!("routing-conformance-{seed}-{index}"));
        let xs: Vec<String> = (0..4 + rng.below(5)).map(|i| format!("x{i}")).collect();
        let qs: Vec<String> = (0..3 + rng.below(4)).map(|i| format!("q{i}")).collect();
        let mut targets: Vec<String> = xs.iter().cloned().chain(BUILTIN.map(String::from)).collect();
        targets.push("missing".into());
        for name in &xs {
            let mut arguments = Table::new();
            if rng.chance(25) {
                arguments.insert("alternate-exchange".into(), Value::String(rng.pick(&targets).clone()));
            }
            let kind = rng.pick(&KINDS).to_string();
            let internal = rng.chance(15);
            let x = Exchange { name: name.clone(), kind, durable: true, auto_delete: false, internal, arguments };
            vhost.exchanges.insert(name.clone(), x);
        }
        let mut dead_letter_targets = targets.clone();
        dead_letter_targets.push(String::new());
        let mut quorum = 0;
        for name in &qs {
            let kind = if quorum < 2 && rng.chance(25) { QueueType::Quorum } else { QueueType::Classic };
            quorum += usize::from(kind == QueueType::Quorum);
            let mut arguments = Table::new();
            if rng.chance(25) {
                arguments.insert("x-message-ttl".into(), Value::Int(*rng.pick(&[0, 5])));
            }
            if rng.chance(15) {
                // Back to itself through the default exchange: a cycle.
                arguments.insert("x-dead-letter-exchange".into(), Value::String(String::new()));
                arguments.insert("x-dead-letter-routing-key".into(), Value::String(name.clone()));
            } else if rng.chance(40) {
                arguments
                    .insert("x-dead-letter-exchange".into(), Value::String(rng.pick(&dead_letter_targets).clone()));
                if rng.chance(35) {
                    let key = if rng.chance(50) { rng.pick(&qs).clone() } else { rng.pick(&KEYS).to_string() };
                    arguments.insert("x-dead-letter-routing-key".into(), Value::String(key));
                }
            }
            let q = Queue { name: name.clone(), kind, durable: true, auto_delete: false, arguments, replaces: None };
            vhost.queues.insert(name.clone(), q);
        }
        let mut priorities: Vec<i64> = (0..10).collect();
        for i in 0..rng.below(4) {
            let at = rng.below(priorities.len());
            let priority = priorities.remove(at);
            let policy = policy(&mut rng, i, priority, version, &targets, &dead_letter_targets, &qs);
            vhost.set_policy(&policy);
        }
        if rng.chance(30) {
            // An operator policy can give a queue a TTL, not a dead-letter
            // exchange; with a key a queue type refuses, it skips that type.
            let mut definition = Table::new();
            definition.insert("message-ttl".into(), Value::Int(*rng.pick(&[0, 5])));
            if rng.chance(40) {
                let (key, value) = *rng.pick(&[("delivery-limit", 50), ("max-in-memory-length", 1000)]);
                definition.insert(key.into(), Value::Int(value));
            }
            let pattern = rng.pick(&PATTERNS_OF_POLICIES).to_string();
            let apply_to = *rng.pick(&[ApplyTo::All, ApplyTo::Queues]);
            let op = Policy { name: "op".into(), pattern, apply_to, priority: 0, definition };
            vhost.objects.extend(warren::model::kinds::operator_policies::objects([&op]));
        }
        let sources: Vec<String> = xs.iter().cloned().chain(BUILTIN.map(String::from)).collect();
        for _ in 0..8 + rng.below(12) {
            let source = rng.pick(&sources).clone();
            let (destination_kind, destination) = if rng.chance(30) {
                (DestinationKind::Exchange, rng.pick(&xs).clone())
            } else {
                (DestinationKind::Queue, rng.pick(&qs).clone())
            };
            let kind = vhost.exchanges.get(&source).map_or(source.trim_start_matches("amq."), |x| x.kind.as_str());
            let (routing_key, arguments) = match kind {
                "topic" => (rng.pick(&PATTERNS).to_string(), Table::new()),
                "headers" => (String::new(), headers_binding(&mut rng, &qs, &xs)),
                _ => (rng.pick(&KEYS).to_string(), Table::new()),
            };
            vhost.bindings.insert(Binding { source, destination_kind, destination, routing_key, arguments });
        }
        let mut entries: Vec<String> = xs.iter().filter(|x| !vhost.exchanges[*x].internal).cloned().collect();
        entries.extend(BUILTIN.map(String::from));
        entries.push(String::new());
        let mut queue_keys: Vec<String> = qs.clone();
        queue_keys.push("missing".into());
        let messages = (0..MESSAGES)
            .map(|id| {
                let exchange = rng.pick(&entries).clone();
                let pool: Vec<String> =
                    if exchange.is_empty() { queue_keys.clone() } else { KEYS.map(String::from).to_vec() };
                let key = rng.pick(&pool).clone();
                let cc = if rng.chance(20) {
                    (0..1 + rng.below(2)).map(|_| rng.pick(&pool).clone()).collect()
                } else {
                    vec![]
                };
                let bcc = if rng.chance(15) { vec![rng.pick(&pool).clone()] } else { vec![] };
                let mut headers = Table::new();
                for _ in 0..rng.below(4) {
                    let k = *rng.pick(&["h1", "h2", "x-a"]);
                    headers.insert(k.into(), header_value(&mut rng));
                }
                Publish { id, exchange, key, cc, bcc, headers }
            })
            .collect();
        World { index, vhost, messages }
    }

    /// The topology as a definitions file shows it, for a mismatch's report.
    fn definitions(&self) -> Json {
        let table = |t: &Table| Json::Object(t.iter().map(|(k, v)| (k.clone(), json_value(v))).collect());
        let exchanges: Vec<Json> = self
            .vhost
            .exchanges
            .values()
            .map(|x| json!({"name": x.name, "type": x.kind, "internal": x.internal, "arguments": table(&x.arguments)}))
            .collect();
        let queues: Vec<Json> = self
            .vhost
            .queues
            .values()
            .map(|q| json!({"name": q.name, "type": q.kind.as_str(), "arguments": table(&q.arguments)}))
            .collect();
        let bindings: Vec<Json> = self.vhost.bindings.iter().map(|b| json!({"source": b.source, "destination_type": b.destination_kind.as_str(), "destination": b.destination, "routing_key": b.routing_key, "arguments": table(&b.arguments)})).collect();
        let named = |p: &Policy| {
            let mut j = policy_json(p);
            j["name"] = json!(p.name);
            j
        };
        let policies: Vec<Json> = self.vhost.policies().into_iter().map(named).collect();
        let operator = warren::model::kinds::operator_policies::typed(&self.vhost.objects);
        let operator_policies: Vec<Json> = operator.values().map(named).collect();
        json!({"vhost": self.vhost.name, "exchanges": exchanges, "queues": queues, "bindings": bindings, "policies": policies, "operator_policies": operator_policies})
    }
}

fn policy(
    rng: &mut Rng,
    i: usize,
    priority: i64,
    version: Version,
    targets: &[String],
    dead_letter_targets: &[String],
    qs: &[String],
) -> Policy {
    let mut applies = vec![ApplyTo::All, ApplyTo::Queues, ApplyTo::Exchanges];
    if version.major >= 4 {
        applies.extend([ApplyTo::ClassicQueues, ApplyTo::QuorumQueues]);
    }
    let mut definition = Table::new();
    if rng.chance(45) {
        definition.insert("alternate-exchange".into(), Value::String(rng.pick(targets).clone()));
    }
    if rng.chance(45) {
        definition.insert("dead-letter-exchange".into(), Value::String(rng.pick(dead_letter_targets).clone()));
    }
    if rng.chance(30) {
        let key = if rng.chance(50) { rng.pick(qs).clone() } else { rng.pick(&KEYS).to_string() };
        definition.insert("dead-letter-routing-key".into(), Value::String(key));
    }
    if rng.chance(30) {
        definition.insert("message-ttl".into(), Value::Int(*rng.pick(&[0, 5])));
    }
    if rng.chance(35) || definition.is_empty() {
        let (key, value) = refused_by_some(rng);
        definition.insert(key.to_string(), value);
    }
    Policy {
        name: format!("p{i}"),
        pattern: rng.pick(&PATTERNS_OF_POLICIES).to_string(),
        apply_to: *rng.pick(&applies),
        priority,
        definition,
    }
}

fn header_value(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => Value::String("v".into()),
        1 => Value::String("w".into()),
        2 => Value::Int(1),
        3 => Value::Float(1.0),
        4 => Value::Float(1.5),
        5 => Value::Bool(true),
        6 => Value::Null,
        _ => Value::Int(2),
    }
}

fn headers_binding(rng: &mut Rng, qs: &[String], xs: &[String]) -> Table {
    let mut arguments = Table::new();
    if let Some(mode) = *rng.pick(&[None, Some("all"), Some("any"), Some("all-with-x"), Some("any-with-x")]) {
        arguments.insert("x-match".into(), Value::String(mode.into()));
    }
    for _ in 0..1 + rng.below(3) {
        // The death headers the broker adds, which bindings `with-x` see.
        let exchange = if rng.chance(25) { String::new() } else { rng.pick(xs).clone() };
        let (key, value) = match rng.below(8) {
            0 | 1 => ("h1", header_value(rng)),
            2 => ("h2", header_value(rng)),
            3 => ("x-a", header_value(rng)),
            4 => ("x-first-death-reason", Value::String(rng.pick(&["expired", "rejected"]).to_string())),
            5 => ("x-first-death-exchange", Value::String(exchange)),
            6 => ("x-last-death-reason", Value::String(rng.pick(&["expired", "rejected"]).to_string())),
            _ => ("x-last-death-queue", Value::String(rng.pick(qs).clone())),
        };
        arguments.insert(key.into(), value);
    }
    arguments
}

fn policy_json(p: &Policy) -> Json {
    let definition = Json::Object(p.definition.iter().map(|(k, v)| (k.clone(), json_value(v))).collect());
    json!({"pattern": p.pattern, "apply-to": p.apply_to.as_str(), "priority": p.priority, "definition": definition})
}

fn json_value(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::String(s) => json!(s),
        Value::List(l) => Json::Array(l.iter().map(json_value).collect()),
        Value::Table(t) => Json::Object(t.iter().map(|(k, v)| (k.clone(), json_value(v))).collect()),
    }
}

fn amqp_value(v: &Value) -> AMQPValue {
    match v {
        Value::Null => AMQPValue::Void,
        Value::Bool(b) => AMQPValue::Boolean(*b),
        Value::Int(i) => AMQPValue::LongLongInt(*i),
        Value::Float(f) => AMQPValue::Double(*f),
        Value::String(s) => AMQPValue::LongString(s.as_str().into()),
        Value::List(l) => AMQPValue::FieldArray(FieldArray::from(l.iter().map(amqp_value).collect::<Vec<_>>())),
        Value::Table(t) => AMQPValue::FieldTable(field_table(t)),
    }
}

fn field_table(t: &Table) -> FieldTable {
    let mut out = FieldTable::default();
    for (k, v) in t.iter() {
        out.insert(k.as_str().into(), amqp_value(v));
    }
    out
}

/// A copy of a message resting in a queue, as the model follows it: the
/// message as it sits there and its death history, newest first.
#[derive(Debug, Clone)]
struct Copy {
    queue: String,
    message: Message,
    history: Vec<(String, Reason)>,
}

/// The model, followed from hop to hop, and how often each case worth
/// covering came up.
struct Follow<'a> {
    router: Router<'a>,
    seen: BTreeMap<&'static str, usize>,
}

impl Follow<'_> {
    fn saw(&mut self, case: &'static str) {
        *self.seen.entry(case).or_default() += 1;
    }

    /// Where `message` rests once every TTL it meets ran out.
    fn arrivals(&mut self, message: &Message) -> Vec<Copy> {
        let route = self.router.route(message);
        if route.queues.is_empty() {
            self.saw("messages routed to no queue");
        }
        if route.path.iter().any(|h| matches!(h, Hop::Alternate { .. })) {
            self.saw("messages through an alternate exchange");
        }
        if route.path.iter().any(|h| matches!(h, Hop::Binding { destination_kind: "exchange", .. })) {
            self.saw("messages through an exchange-to-exchange binding");
        }
        let mut out = Vec::new();
        for q in route.queues {
            self.settle(&q, message.clone(), Vec::new(), &mut out);
        }
        out
    }

    fn settle(&mut self, queue: &str, message: Message, history: Vec<(String, Reason)>, out: &mut Vec<Copy>) {
        if self.router.dead_letters_for(queue, Reason::Expired) {
            self.die(queue, Reason::Expired, &message, history, out);
        } else {
            out.push(Copy { queue: queue.to_string(), message, history });
        }
    }

    /// The message leaves `queue` for `reason`: one hop by the model, then on.
    fn die(
        &mut self,
        queue: &str,
        reason: Reason,
        message: &Message,
        history: Vec<(String, Reason)>,
        out: &mut Vec<Copy>,
    ) {
        let mut history: Vec<(String, Reason)> =
            history.into_iter().filter(|(q, r)| !(q == queue && *r == reason)).collect();
        history.insert(0, (queue.to_string(), reason));
        assert!(history.len() < 32, "a dead letter chain that does not end: {history:?}");
        self.saw(if reason == Reason::Expired {
            "copies dead-lettered by TTL"
        } else {
            "copies dead-lettered by reject"
        });
        let Some(letter) = self.router.dead_letters(queue, reason, Some(message)) else { return };
        if letter.routing_key.is_none() && matches!(&message.keys, Keys::Exact(k) if k.len() > 1) {
            self.saw("dead letters routed by their CC and BCC keys");
        }
        if letter.route.dropped.iter().any(|d| matches!(d.why, Why::Cycle { .. })) {
            self.saw("dead letters dropped as back to their queue");
        }
        let next = Message {
            exchange: letter.exchange.clone(),
            keys: letter.keys[0].clone(),
            headers: letter.headers.clone(),
        };
        for q in &letter.route.queues {
            // rabbit_dead_letter: a queue it died in before, with no reject
            // since, drops it (the model drops it at `queue` itself).
            let cycle = history
                .iter()
                .position(|(h, _)| h == q)
                .is_some_and(|at| history[..=at].iter().all(|(_, r)| *r != Reason::Rejected));
            if q != queue && cycle {
                self.saw("dead letters dropped as back to an earlier queue");
                continue;
            }
            self.settle(q, next.clone(), history.clone(), out);
        }
    }
}

/// What one topology's check found.
#[derive(Default)]
struct Outcome {
    pairs: usize,
    failures: Vec<String>,
    seen: BTreeMap<&'static str, usize>,
}

/// (queue, message id) → how many copies.
type Landed = BTreeMap<(String, usize), usize>;

async fn check(world: World, seed: u64, version: Version, base: &str) -> Outcome {
    let name = world.vhost.name.clone();
    let setup = {
        let (name, policies, operator) = (
            name.clone(),
            warren::model::kinds::policies::typed(&world.vhost.objects),
            warren::model::kinds::operator_policies::typed(&world.vhost.objects),
        );
        let user = url::Url::parse(base).unwrap().username().to_string();
        tokio::task::spawn_blocking(move || {
            let broker = TestBroker::from_env();
            let v = seg(&name);
            broker.delete(&format!("vhosts/{v}"));
            broker.put(&format!("vhosts/{v}"), json!({}));
            broker.put(
                &format!("permissions/{v}/{}", seg(&user)),
                json!({"configure": ".*", "write": ".*", "read": ".*"}),
            );
            let sets = [("policies", policies.values()), ("operator-policies", operator.values())];
            for (path, set) in sets {
                for p in set {
                    broker.put(&format!("{path}/{v}/{}", seg(&p.name)), policy_json(p));
                }
            }
        })
    };
    setup.await.expect("the vhost and its policies are set up");
    let outcome = match run(&world, seed, version, base).await {
        Ok(o) => o,
        Err(e) => Outcome {
            failures: vec![format!("seed {seed}, topology {}: {e}\n{}", world.index, world.definitions())],
            ..Outcome::default()
        },
    };
    tokio::task::spawn_blocking(move || TestBroker::from_env().delete(&format!("vhosts/{}", seg(&name))))
        .await
        .unwrap();
    outcome
}

async fn run(world: &World, seed: u64, version: Version, base: &str) -> Result<Outcome, lapin::Error> {
    let connection =
        Connection::connect(&amqp_url_on(base, &world.vhost.name), ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    declare(&channel, &world.vhost).await?;
    let mut follow = Follow { router: Router::new(&world.vhost, version), seen: BTreeMap::new() };
    let publisher = connection.create_channel().await?;
    publisher.confirm_select(ConfirmSelectOptions::default()).await?;
    let mut confirms = Vec::new();
    for m in &world.messages {
        let mut headers = field_table(&m.headers);
        for (name, keys) in [("CC", &m.cc), ("BCC", &m.bcc)] {
            if !keys.is_empty() {
                let keys: Vec<AMQPValue> = keys.iter().map(|k| AMQPValue::LongString(k.as_str().into())).collect();
                headers.insert(name.into(), AMQPValue::FieldArray(keys.into()));
            }
        }
        let properties = BasicProperties::default().with_headers(headers);
        let body = m.id.to_string();
        let confirm = publisher
            .basic_publish(
                m.exchange.as_str().into(),
                m.key.as_str().into(),
                BasicPublishOptions::default(),
                body.as_bytes(),
                properties,
            )
            .await?;
        confirms.push(confirm);
    }
    for c in confirms {
        c.await?;
    }
    let mut outcome = Outcome { pairs: world.messages.len(), ..Outcome::default() };
    // Round one: where the messages rest once their TTLs ran out.
    let mut expected: Vec<(usize, Copy)> = Vec::new();
    for m in &world.messages {
        expected.extend(follow.arrivals(&m.message()).into_iter().map(|c| (m.id, c)));
    }
    let (landed, tags) = settle_and_drain(&channel, world, &count(&expected)).await?;
    if landed != count(&expected) {
        outcome.failures.push(report(world, seed, 1, &landed, &expected, &follow.router));
        outcome.seen = follow.seen;
        return Ok(outcome);
    }
    // Round two: reject some of what came out, ack the rest.
    let mut rng = Rng::new(seed ^ world.index as u64 ^ 0x5EED);
    let mut rejected: BTreeSet<(String, usize)> = BTreeSet::new();
    for ((queue, id), tags) in &tags {
        let reject = rng.chance(50);
        for tag in tags {
            match (reject, rng.chance(50)) {
                (true, true) => channel.basic_reject(*tag, BasicRejectOptions { requeue: false }).await?,
                (true, false) => channel.basic_nack(*tag, BasicNackOptions { multiple: false, requeue: false }).await?,
                (false, _) => channel.basic_ack(*tag, BasicAckOptions::default()).await?,
            }
        }
        if reject {
            rejected.insert((queue.clone(), *id));
        }
    }
    outcome.pairs += rejected.len();
    let mut again: Vec<(usize, Copy)> = Vec::new();
    for (id, copy) in &expected {
        if rejected.contains(&(copy.queue.clone(), *id)) {
            let mut out = Vec::new();
            follow.die(&copy.queue, Reason::Rejected, &copy.message, copy.history.clone(), &mut out);
            again.extend(out.into_iter().map(|c| (*id, c)));
        }
    }
    let (landed, tags) = settle_and_drain(&channel, world, &count(&again)).await?;
    for tags in tags.values() {
        for tag in tags {
            channel.basic_ack(*tag, BasicAckOptions::default()).await?;
        }
    }
    if landed != count(&again) {
        outcome.failures.push(report(world, seed, 2, &landed, &again, &follow.router));
    }
    outcome.seen = follow.seen;
    match publish_to_internal(&connection, world, &follow.router).await {
        Some(Ok(())) => *outcome.seen.entry("publishes to an internal exchange, refused").or_default() += 1,
        Some(Err(failure)) => {
            outcome.failures.push(format!("seed {seed}, topology {}: {failure}\n{}", world.index, world.definitions()))
        }
        None => {}
    }
    let _ = connection.close(200, "done".into()).await;
    Ok(outcome)
}

/// A client's publish to an internal exchange: the broker refuses it and
/// closes the channel (403), which the model says as `Why::Internal`.
async fn publish_to_internal(
    connection: &Connection,
    world: &World,
    router: &Router<'_>,
) -> Option<Result<(), String>> {
    let internal = world.vhost.exchanges.values().find(|x| x.internal)?;
    let message = Message::new(&internal.name, "a");
    let model = router.route(&message).dropped.iter().any(|d| matches!(d.why, Why::Internal));
    let channel = connection.create_channel().await.ok()?;
    channel.confirm_select(ConfirmSelectOptions::default()).await.ok()?;
    let published = channel
        .basic_publish(
            internal.name.as_str().into(),
            "a".into(),
            BasicPublishOptions::default(),
            b"internal",
            BasicProperties::default(),
        )
        .await;
    let refused = match published {
        Err(_) => true,
        Ok(confirm) => confirm.await.is_err(),
    };
    if refused && model {
        return Some(Ok(()));
    }
    let x = &internal.name;
    Some(Err(format!(
        "a publish to internal exchange {x:?}: the broker refused it: {refused}, the model drops it: {model}"
    )))
}

fn count(copies: &[(usize, Copy)]) -> Landed {
    let mut out = Landed::new();
    for (id, c) in copies {
        *out.entry((c.queue.clone(), *id)).or_default() += 1;
    }
    out
}

/// Declares the topology's exchanges, queues and bindings over AMQP (the
/// policies are set before, so that queues start under them): AMQP keeps
/// the types of header values (a void, a float 1.0) that JSON loses.
async fn declare(channel: &Channel, vhost: &Vhost) -> Result<(), lapin::Error> {
    for x in vhost.exchanges.values() {
        let kind = ExchangeKind::Custom(x.kind.clone());
        let options = ExchangeDeclareOptions { durable: true, internal: x.internal, ..Default::default() };
        channel.exchange_declare(x.name.as_str().into(), kind, options, field_table(&x.arguments)).await?;
    }
    for q in vhost.queues.values() {
        let mut arguments = field_table(&q.arguments);
        if q.kind == QueueType::Quorum {
            arguments.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
        }
        let options = QueueDeclareOptions { durable: true, ..Default::default() };
        channel.queue_declare(q.name.as_str().into(), options, arguments).await?;
    }
    for b in &vhost.bindings {
        let (d, s, k, a) = (
            b.destination.as_str().into(),
            b.source.as_str().into(),
            b.routing_key.as_str().into(),
            field_table(&b.arguments),
        );
        match b.destination_kind {
            DestinationKind::Queue => channel.queue_bind(d, s, k, QueueBindOptions::default(), a).await?,
            DestinationKind::Exchange => channel.exchange_bind(d, s, k, ExchangeBindOptions::default(), a).await?,
        }
    }
    Ok(())
}

/// Waits until the queues hold what the model expects and have held it
/// for a while (dead letters settle asynchronously, quorum queues' most of
/// all), or until [`SETTLE`] ran out; then takes every message out with
/// basic.get, unacked. What landed, and the delivery tags by landing.
async fn settle_and_drain(
    channel: &Channel,
    world: &World,
    expected: &Landed,
) -> Result<(Landed, BTreeMap<(String, usize), Vec<u64>>), lapin::Error> {
    let mut want: BTreeMap<&str, u32> = world.vhost.queues.keys().map(|q| (q.as_str(), 0)).collect();
    for ((q, _), n) in expected {
        *want.get_mut(q.as_str()).unwrap() += *n as u32;
    }
    let deadline = Instant::now() + SETTLE;
    let mut same_since: Option<(BTreeMap<&str, u32>, Instant)> = None;
    loop {
        let mut have = BTreeMap::new();
        for q in world.vhost.queues.keys() {
            let passive = QueueDeclareOptions { passive: true, ..Default::default() };
            let n = channel.queue_declare(q.as_str().into(), passive, FieldTable::default()).await?.message_count();
            have.insert(q.as_str(), n);
        }
        let now = Instant::now();
        match &same_since {
            Some((before, since)) if *before == have => {
                if (have == want && now - *since >= Duration::from_millis(400)) || now > deadline {
                    break;
                }
            }
            _ => same_since = Some((have, now)),
        }
        if now > deadline + Duration::from_secs(2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut landed = Landed::new();
    let mut tags: BTreeMap<(String, usize), Vec<u64>> = BTreeMap::new();
    for q in world.vhost.queues.keys() {
        while let Some(m) = channel.basic_get(q.as_str().into(), BasicGetOptions { no_ack: false }).await? {
            let id: usize = String::from_utf8_lossy(&m.delivery.data).parse().expect("a message's body is its id");
            *landed.entry((q.clone(), id)).or_default() += 1;
            tags.entry((q.clone(), id)).or_default().push(m.delivery.delivery_tag);
        }
    }
    Ok((landed, tags))
}

/// A mismatch as the reader needs it to replay and see it.
fn report(world: &World, seed: u64, round: u8, landed: &Landed, expected: &[(usize, Copy)], router: &Router) -> String {
    let want = count(expected);
    let ids: BTreeSet<usize> = landed
        .keys()
        .chain(want.keys())
        .map(|(_, id)| *id)
        .filter(|id| {
            let of = |l: &Landed| {
                l.iter().filter(|((_, i), _)| i == id).map(|((q, _), n)| (q.clone(), *n)).collect::<Vec<_>>()
            };
            of(landed) != of(&want)
        })
        .collect();
    let mut text = format!(
        "MISMATCH seed {seed} (WARREN_ROUTING_SEED={seed}), topology {} ({}), round {round} ({}):\n{}\n",
        world.index,
        world.vhost.name,
        if round == 1 { "as published, after TTLs" } else { "after rejects" },
        serde_json::to_string(&world.definitions()).unwrap()
    );
    for id in ids.iter().take(5) {
        let m = &world.messages[*id];
        let of = |l: &Landed| {
            l.iter().filter(|((_, i), _)| i == id).map(|((q, _), n)| format!("{q}×{n}")).collect::<Vec<_>>().join(", ")
        };
        let route = router.route(&m.message());
        text.push_str(&format!(
            "  message {id}: exchange {:?} key {:?} CC {:?} BCC {:?} headers {}\n    broker: [{}]\n    model:  [{}]\n    model's first hop: {}\n",
            m.exchange,
            m.key,
            m.cc,
            m.bcc,
            json_value(&Value::Table(m.headers.clone())),
            of(landed),
            of(&want),
            serde_json::to_string(&route).unwrap()
        ));
    }
    if ids.len() > 5 {
        text.push_str(&format!("  … and {} more message(s)\n", ids.len() - 5));
    }
    text
}
