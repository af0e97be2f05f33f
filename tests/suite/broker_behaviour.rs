//! One set of behavioural cases, each written once over the [`Broker`]
//! calls and a client's traffic, run against the in-memory broker
//! ([`Memory`]) and a real RabbitMQ node: where the two answer differently,
//! the in-memory broker is wrong. Then the executor itself on the
//! in-memory broker, fast (`executor.rs`).
//!
//! Each case works in its own vhost, `t-beh-<case>`, made fresh at its
//! start and deleted at its end, so the cases run in parallel. The real
//! node is the private test broker (`WARREN_TEST_URL`,
//! `WARREN_TEST_AMQP_URL`, as `scripts/test` sets them); without it those
//! tests fail, and the in-memory ones still run.

mod client;
mod executor;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use client::Traffic;
use serde_json::{Value as Json, json};
use warren::apply::migrate::without_leader;
use warren::broker::{Broker, BrokerError, Freshness, Listing, RecordStore};
use warren::model::kinds::{Name, Object, by_table, operator_policies};
use warren::model::{
    ApplyTo, Binding, Exchange, Inventory, JOURNAL_PARAMETER, ObjectKey, Password, Permission, Place, Progress, Queue,
    QueueType, RecordKind, RecordWrite, SplitIndex, Table, User, Value, Vhost, VhostSettings, join,
};
use warren::testing::objects::{exchange, policy, queue, table, text, to_exchange, to_queue};

/// Each case as a test on both brokers: `memory::<case>` and `rabbitmq::<case>`.
macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        mod memory {
            use warren::broker::Broker;
            $(
                #[tokio::test]
                async fn $case() {
                    let b = warren::broker::Memory::new();
                    let v = super::fresh(&b, stringify!($case)).await;
                    super::$case(&b, &v).await;
                    b.delete_vhost(&v).await.unwrap();
                }
            )*
        }
        mod rabbitmq {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs a broker: scripts/test runs it"]
                async fn $case() {
                    let _turn = crate::common::share();
                    let b = super::client::rabbit();
                    let v = super::fresh(&b, stringify!($case)).await;
                    let _gone = super::Gone(v.clone());
                    super::$case(&b, &v).await;
                }
            )*
        }
    };
}

cases!(
    routing_by_exchange_type,
    exchange_to_exchange_bindings,
    alternate_exchange_by_argument,
    alternate_exchange_by_policy,
    policy_priority,
    redeclaring_differently_is_refused,
    binding_to_what_is_missing,
    deletes_of_what_is_gone,
    deletes_take_their_bindings,
    guarded_delete_keeps_a_queue_in_use,
    the_lock_is_exclusive,
    records_round_trip,
    records_in_parts_round_trip,
    live_state_round_trip,
    broker_wide_objects_round_trip,
    user_limits_round_trip,
    a_user_without_the_administrator_tag,
    counts_and_leaders,
);

/// The case's vhost, `t-beh-<case>`, made afresh with no settings.
async fn fresh<B: Broker>(b: &B, case: &str) -> String {
    let v = format!("t-beh-{}", case.replace('_', "-"));
    b.delete_vhost(&v).await.unwrap();
    b.put_vhost(&v, &VhostSettings::default(), &[]).await.unwrap();
    v
}

/// Deletes a real node's case vhost when the case ends, passed or not.
struct Gone(String);

impl Drop for Gone {
    fn drop(&mut self) {
        client::api().delete(&format!("vhosts/{}", crate::common::seg(&self.0)));
    }
}

fn with_args(mut x: Exchange, arguments: Table) -> Exchange {
    x.arguments = arguments;
    x
}

fn classic(name: &str) -> Queue {
    queue(name, QueueType::Classic, Table::new())
}

fn alternate(ae: &str) -> Table {
    table(&[("alternate-exchange", text(ae))])
}

/// Publishes `body` without headers; whether a queue took it.
async fn send<B: Traffic>(b: &B, v: &str, x: &str, key: &str, body: &str) -> bool {
    b.send(v, x, key, &Table::new(), body).await.unwrap()
}

/// Every body a queue holds, taken in order.
async fn drain<B: Traffic>(b: &B, v: &str, q: &str) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(body) = b.take(v, q).await {
        out.push(body);
    }
    out
}

/// The reason of a 400 refusal.
fn refusal(r: Result<(), BrokerError>) -> String {
    match r {
        Err(BrokerError::Refused { status: 400, reason, .. }) => reason,
        other => panic!("not a refusal (HTTP 400): {other:?}"),
    }
}

/// The policy the broker applies to an exchange once it is `want`: the
/// real broker applies policies a few seconds late. Gives up after 10 s.
async fn policy_becomes<B: Broker>(b: &B, v: &str, x: &str, want: Option<&str>) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = b.exchange_policy(v, x).await.unwrap();
        if now.as_deref() == want || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The vhost as warren reads it, with no notes. Notes about other vhosts
/// are not the case's: the user and permission listings are the whole
/// node's, read while other cases add and remove theirs.
async fn live_vhost<B: Broker>(b: &B, v: &str) -> Vhost {
    let live = warren::live::from_broker(b, &[v.to_string()]).await.unwrap();
    let elsewhere = |m: &str| m.contains("vhost \"") && !m.contains(&format!("vhost \"{v}\""));
    let notes: Vec<&String> = live.notes.iter().map(|n| &n.message).filter(|m| !elsewhere(m)).collect();
    assert!(notes.is_empty(), "notes: {notes:?}");
    live.topology.vhosts[v].clone()
}

async fn routing_by_exchange_type<B: Traffic>(b: &B, v: &str) {
    for (x, kind) in [("x.direct", "direct"), ("x.fanout", "fanout"), ("x.topic", "topic"), ("x.headers", "headers")] {
        b.declare_exchange(v, &exchange(x, kind)).await.unwrap();
        b.declare_queue(v, &classic(&x.replace("x.", "q."))).await.unwrap();
    }
    b.bind(v, &to_queue("x.direct", "q.direct", "k")).await.unwrap();
    b.bind(v, &to_queue("x.fanout", "q.fanout", "ignored")).await.unwrap();
    b.bind(v, &to_queue("x.topic", "q.topic", "a.*.c")).await.unwrap();
    b.bind(v, &to_queue("x.topic", "q.topic", "x.#")).await.unwrap();
    let any = table(&[("x-match", text("any")), ("h1", text("v1")), ("h2", Value::Int(2))]);
    b.bind(v, &Binding { arguments: any, ..to_queue("x.headers", "q.headers", "") }).await.unwrap();
    let all = table(&[("h1", text("v1")), ("h3", text("v3"))]);
    b.bind(v, &Binding { arguments: all, ..to_queue("x.headers", "q.headers", "all") }).await.unwrap();

    assert!(send(b, v, "x.direct", "k", "d1").await);
    assert!(!send(b, v, "x.direct", "k.other", "lost").await);
    assert!(send(b, v, "x.fanout", "anything", "f1").await);
    for (key, routed) in [("a.b.c", true), ("a.c", false), ("a.b.b.c", false), ("x", true), ("x.y.z", true)] {
        assert_eq!(send(b, v, "x.topic", key, key).await, routed, "topic key {key}");
    }
    for (headers, routed, body) in [
        (table(&[("h1", text("v1"))]), true, "h-any"),
        (table(&[("h2", Value::Int(2)), ("h3", text("no"))]), true, "h-any2"),
        (table(&[("h1", text("no"))]), false, "lost"),
        (table(&[("h1", text("v1")), ("h3", text("v3"))]), true, "h-all"),
    ] {
        assert_eq!(b.send(v, "x.headers", "", &headers, body).await.unwrap(), routed, "{body}");
    }
    assert!(send(b, v, "", "q.direct", "default").await, "the default exchange routes by queue name");
    assert!(!send(b, v, "", "q.nope", "lost").await);

    assert_eq!(drain(b, v, "q.direct").await, ["d1", "default"]);
    assert_eq!(drain(b, v, "q.fanout").await, ["f1"]);
    assert_eq!(drain(b, v, "q.topic").await, ["a.b.c", "x", "x.y.z"]);
    assert_eq!(drain(b, v, "q.headers").await, ["h-any", "h-any2", "h-all"], "one copy of h-all, matched twice");
}

async fn exchange_to_exchange_bindings<B: Traffic>(b: &B, v: &str) {
    for x in ["a", "b", "c"] {
        b.declare_exchange(v, &exchange(x, "fanout")).await.unwrap();
    }
    b.declare_queue(v, &classic("q")).await.unwrap();
    // A cycle, and three paths to q.
    b.bind(v, &to_exchange("a", "b", "")).await.unwrap();
    b.bind(v, &to_exchange("b", "c", "")).await.unwrap();
    b.bind(v, &to_exchange("c", "a", "")).await.unwrap();
    b.bind(v, &to_queue("a", "q", "")).await.unwrap();
    b.bind(v, &to_queue("c", "q", "")).await.unwrap();
    b.bind(v, &to_queue("c", "q", "other")).await.unwrap();
    assert!(send(b, v, "b", "", "once").await);
    assert_eq!(drain(b, v, "q").await, ["once"]);

    // Keys filter at each hop.
    b.declare_exchange(v, &exchange("d1", "direct")).await.unwrap();
    b.declare_exchange(v, &exchange("t2", "topic")).await.unwrap();
    b.declare_queue(v, &classic("q2")).await.unwrap();
    b.bind(v, &to_exchange("d1", "t2", "order.created")).await.unwrap();
    b.bind(v, &to_queue("t2", "q2", "order.*")).await.unwrap();
    assert!(send(b, v, "d1", "order.created", "hop").await);
    assert!(!send(b, v, "d1", "order.paid", "lost").await);
    assert_eq!(drain(b, v, "q2").await, ["hop"]);
}

async fn alternate_exchange_by_argument<B: Traffic>(b: &B, v: &str) {
    b.declare_exchange(v, &exchange("ae", "fanout")).await.unwrap();
    b.declare_queue(v, &classic("q.ae")).await.unwrap();
    b.bind(v, &to_queue("ae", "q.ae", "")).await.unwrap();
    b.declare_exchange(v, &with_args(exchange("src", "direct"), alternate("ae"))).await.unwrap();
    b.declare_queue(v, &classic("q.main")).await.unwrap();
    b.bind(v, &to_queue("src", "q.main", "k")).await.unwrap();
    assert!(send(b, v, "src", "k", "matched").await);
    assert!(send(b, v, "src", "other", "caught").await, "routed through the alternate exchange");
    assert_eq!(drain(b, v, "q.main").await, ["matched"]);
    assert_eq!(drain(b, v, "q.ae").await, ["caught"]);

    // Not inherited along an exchange-to-exchange binding: src2 routes to
    // hop, which routes nowhere, so src2's alternate exchange stays out.
    b.declare_exchange(v, &with_args(exchange("src2", "direct"), alternate("ae"))).await.unwrap();
    b.declare_exchange(v, &exchange("hop", "direct")).await.unwrap();
    b.bind(v, &to_exchange("src2", "hop", "kk")).await.unwrap();
    assert!(!send(b, v, "src2", "kk", "lost").await);
    // An alternate exchange that does not exist is skipped.
    b.declare_exchange(v, &with_args(exchange("src3", "direct"), alternate("nowhere"))).await.unwrap();
    assert!(!send(b, v, "src3", "k", "lost").await);
    assert!(drain(b, v, "q.ae").await.is_empty());
}

async fn alternate_exchange_by_policy<B: Traffic>(b: &B, v: &str) {
    for (ae, q) in [("ae.policy", "q.policy"), ("ae.arg", "q.arg")] {
        b.declare_exchange(v, &exchange(ae, "fanout")).await.unwrap();
        b.declare_queue(v, &classic(q)).await.unwrap();
        b.bind(v, &to_queue(ae, q, "")).await.unwrap();
    }
    b.declare_exchange(v, &exchange("src", "direct")).await.unwrap();
    b.declare_exchange(v, &with_args(exchange("src.arg", "direct"), alternate("ae.arg"))).await.unwrap();
    let p = policy("ae", "^src", ApplyTo::Exchanges, 0, alternate("ae.policy"));
    b.put_policy(v, &p).await.unwrap();
    for x in ["src", "src.arg"] {
        assert_eq!(policy_becomes(b, v, x, Some("ae")).await.as_deref(), Some("ae"), "{x}");
    }
    assert!(send(b, v, "src", "k", "by-policy").await);
    assert!(send(b, v, "src.arg", "k", "by-argument").await, "the argument wins over the policy");
    assert_eq!(drain(b, v, "q.policy").await, ["by-policy"]);
    assert_eq!(drain(b, v, "q.arg").await, ["by-argument"]);
}

async fn policy_priority<B: Traffic>(b: &B, v: &str) {
    b.declare_exchange(v, &exchange("x", "direct")).await.unwrap();
    b.put_policy(v, &policy("low", ".*", ApplyTo::All, 1, alternate("a1"))).await.unwrap();
    b.put_policy(v, &policy("high", "^x$", ApplyTo::Exchanges, 5, alternate("a2"))).await.unwrap();
    let queues = policy("queues", ".*", ApplyTo::Queues, 9, table(&[("max-length", Value::Int(1))]));
    b.put_policy(v, &queues).await.unwrap();
    assert_eq!(policy_becomes(b, v, "x", Some("high")).await.as_deref(), Some("high"));
    b.delete_policy(v, "high").await.unwrap();
    assert_eq!(policy_becomes(b, v, "x", Some("low")).await.as_deref(), Some("low"));
    b.delete_policy(v, "low").await.unwrap();
    assert_eq!(policy_becomes(b, v, "x", None).await, None);
    assert!(matches!(b.exchange_policy(v, "nope").await, Err(BrokerError::NotFound { .. })));

    let bad = |name: &str, definition: Table| policy(name, ".*", ApplyTo::All, 0, definition);
    let reason = refusal(b.put_policy(v, &bad("p", table(&[("foo-bar", Value::Int(1))]))).await);
    assert_eq!(reason, "Validation failed: [{<<\"foo-bar\">>,1}] are not recognised policy settings");
    assert_eq!(refusal(b.put_policy(v, &bad("p", Table::new())).await), "Validation failed: no policy provided");
    let dlx = table(&[("dead-letter-exchange", text("d"))]);
    let op = operator_policies::object(&bad("op", dlx));
    let reason = refusal(b.put_object(Some(v), &operator_policies::KIND, &op).await);
    assert!(reason.ends_with("are not recognised policy settings"), "an operator policy's keys are few: {reason}");
}

async fn redeclaring_differently_is_refused<B: Traffic>(b: &B, v: &str) {
    let x = with_args(exchange("x", "topic"), alternate("ae"));
    b.declare_exchange(v, &x).await.unwrap();
    let said = |what: &str| format!("inequivalent arg {what} for exchange 'x' in vhost '{v}': ");
    let reason = refusal(b.declare_exchange(v, &with_args(exchange("x", "direct"), alternate("ae"))).await);
    assert_eq!(reason, format!("{}received 'direct' but current is 'topic'", said("'type'")));
    let reason = refusal(b.declare_exchange(v, &exchange("x", "topic")).await);
    assert_eq!(
        reason,
        format!("{}received none but current is the value 'ae' of type 'longstr'", said("'alternate-exchange'"))
    );
    let reason = refusal(b.declare_exchange(v, &Exchange { durable: false, ..x.clone() }).await);
    assert_eq!(reason, format!("{}received 'false' but current is 'true'", said("'durable'")));
    // Other arguments are neither compared nor stored.
    let mut more = x.clone();
    more.arguments.insert("x-foo".into(), Value::Int(1));
    b.declare_exchange(v, &more).await.unwrap();
    assert_eq!(live_vhost(b, v).await.exchanges["x"].arguments, alternate("ae"));

    let ttl = |ms: i64| table(&[("x-message-ttl", Value::Int(ms))]);
    b.declare_queue(v, &queue("q", QueueType::Classic, ttl(1000))).await.unwrap();
    let said = |what: &str| format!("inequivalent arg '{what}' for queue 'q' in vhost '{v}': ");
    let reason = refusal(b.declare_queue(v, &queue("q", QueueType::Classic, ttl(2000))).await);
    assert_eq!(reason, format!("{}received '2000' but current is '1000'", said("x-message-ttl")));
    let reason = refusal(b.declare_queue(v, &queue("q", QueueType::Classic, Table::new())).await);
    assert_eq!(
        reason,
        format!("{}received none but current is the value '1000' of type 'long'", said("x-message-ttl"))
    );
    let reason = refusal(b.declare_queue(v, &queue("q", QueueType::Quorum, ttl(1000))).await);
    assert_eq!(reason, format!("{}received 'quorum' but current is 'classic'", said("x-queue-type")));
    let reason =
        refusal(b.declare_queue(v, &Queue { durable: false, ..queue("q", QueueType::Classic, ttl(1000)) }).await);
    assert_eq!(reason, format!("{}received 'false' but current is 'true'", said("durable")));
    // Arguments the queue's type does not check are accepted and ignored.
    let mut extra = ttl(1000);
    extra.insert("x-delivery-limit".into(), Value::Int(5));
    b.declare_queue(v, &queue("q", QueueType::Classic, extra)).await.unwrap();
    b.declare_queue(v, &queue("qq", QueueType::Quorum, Table::new())).await.unwrap();
    let reason =
        refusal(b.declare_queue(v, &queue("qq", QueueType::Quorum, table(&[("x-max-length", Value::Int(3))]))).await);
    assert_eq!(
        reason,
        format!(
            "inequivalent arg 'x-max-length' for queue 'qq' in vhost '{v}': received the value '3' of type 'long' but current is none"
        )
    );

    // What a declaration may not be at all.
    assert_eq!(refusal(b.declare_exchange(v, &exchange("y", "x-foo")).await), "unknown exchange type 'x-foo'");
    let reason =
        refusal(b.declare_queue(v, &Queue { durable: false, ..queue("q5", QueueType::Quorum, Table::new()) }).await);
    assert_eq!(reason, format!("invalid property 'non-durable' for queue 'q5' in vhost '{v}'"));
    let reason = refusal(
        b.declare_queue(v, &queue("q3", QueueType::Classic, table(&[("x-delivery-limit", Value::Int(3))]))).await,
    );
    assert_eq!(
        reason,
        format!("invalid arg 'x-delivery-limit' for queue 'q3' in vhost '{v}' of queue type rabbit_classic_queue")
    );
    let reason = refusal(b.declare_queue(v, &queue("q4", QueueType::Stream, ttl(5))).await);
    assert_eq!(
        reason,
        format!("invalid arg 'x-message-ttl' for queue 'q4' in vhost '{v}' of queue type rabbit_stream_queue")
    );
    assert!(matches!(b.declare_exchange(v, &exchange("amq.mine", "direct")).await, Err(BrokerError::Forbidden { .. })));
    b.declare_exchange(v, &exchange("amq.direct", "direct")).await.unwrap();
}

async fn binding_to_what_is_missing<B: Traffic>(b: &B, v: &str) {
    b.declare_exchange(v, &exchange("x", "direct")).await.unwrap();
    b.declare_queue(v, &classic("q")).await.unwrap();
    for missing in [to_queue("x", "nope", "k"), to_queue("nope", "q", "k"), to_exchange("x", "nope", "k")] {
        assert!(matches!(b.bind(v, &missing).await, Err(BrokerError::NotFound { .. })), "{missing}");
    }
    assert!(matches!(b.bind("t-beh-nowhere", &to_queue("x", "q", "k")).await, Err(BrokerError::NotFound { .. })));
    let from_default = to_queue("amq.default", "q", "k");
    assert!(matches!(b.bind(v, &from_default).await, Err(BrokerError::Forbidden { .. })));
    // Binding twice makes one binding.
    b.bind(v, &to_queue("x", "q", "k")).await.unwrap();
    b.bind(v, &to_queue("x", "q", "k")).await.unwrap();
    assert_eq!(live_vhost(b, v).await.bindings, BTreeSet::from([to_queue("x", "q", "k")]));
}

async fn deletes_of_what_is_gone<B: Traffic>(b: &B, v: &str) {
    b.declare_exchange(v, &exchange("x", "direct")).await.unwrap();
    b.delete_exchange(v, "nope").await.unwrap();
    b.delete_queue(v, "nope", QueueType::Classic, true).await.unwrap();
    b.delete_queue(v, "nope", QueueType::Classic, false).await.unwrap();
    b.delete_queue(v, "nope", QueueType::Quorum, true).await.unwrap();
    b.unbind(v, &to_queue("x", "nope", "k")).await.unwrap();
    b.unbind(v, &to_queue("nope", "nope", "k")).await.unwrap();
    b.delete_policy(v, "nope").await.unwrap();
    let nope = Name { kind: &operator_policies::KIND, id: vec!["nope".into()] };
    b.delete_object(Some(v), &nope).await.unwrap();
    b.delete_permission(v, "t-beh-nobody").await.unwrap();
    b.delete_record(v, "warren.records.nope.1").await.unwrap();
    b.delete_user("t-beh-nobody").await.unwrap();
    b.delete_vhost("t-beh-nowhere").await.unwrap();
    b.delete_exchange("t-beh-nowhere", "x").await.unwrap();
    b.delete_queue("t-beh-nowhere", "q", QueueType::Classic, true).await.unwrap();
    assert!(b.read_queue(v, "nope", Freshness::Now).await.unwrap().is_none());
    assert!(b.queue_leadership(v, "nope").await.unwrap().is_none());
}

async fn deletes_take_their_bindings<B: Traffic>(b: &B, v: &str) {
    for (x, kind) in [("x", "direct"), ("y", "fanout"), ("z", "direct")] {
        b.declare_exchange(v, &exchange(x, kind)).await.unwrap();
    }
    for q in ["q1", "q2"] {
        b.declare_queue(v, &classic(q)).await.unwrap();
    }
    let kept = [to_queue("y", "q2", ""), to_queue("z", "q2", "k")];
    for binding in
        [to_queue("x", "q1", "k"), to_exchange("x", "y", "k"), to_exchange("z", "x", "k")].iter().chain(&kept)
    {
        b.bind(v, binding).await.unwrap();
    }
    b.delete_exchange(v, "x").await.unwrap();
    assert_eq!(live_vhost(b, v).await.bindings, BTreeSet::from(kept.clone()), "those from and to x went with it");
    b.delete_queue(v, "q2", QueueType::Classic, false).await.unwrap();
    assert!(live_vhost(b, v).await.bindings.is_empty(), "those to q2 went with it");
    assert!(!send(b, v, "z", "k", "lost").await);
}

async fn guarded_delete_keeps_a_queue_in_use<B: Traffic>(b: &B, v: &str) {
    b.declare_queue(v, &classic("full")).await.unwrap();
    assert!(send(b, v, "", "full", "m1").await && send(b, v, "", "full", "m2").await);
    match b.delete_queue(v, "full", QueueType::Classic, true).await {
        Err(BrokerError::Unsafe { reason, .. }) => assert_eq!(reason, format!("queue 'full' in vhost '{v}' not empty")),
        other => panic!("not refused as unsafe: {other:?}"),
    }
    assert_eq!(drain(b, v, "full").await, ["m1", "m2"], "it keeps its messages");
    b.delete_queue(v, "full", QueueType::Classic, true).await.unwrap();

    b.declare_queue(v, &classic("used")).await.unwrap();
    let consumer = b.consume(v, "used").await;
    match b.delete_queue(v, "used", QueueType::Classic, true).await {
        Err(BrokerError::Unsafe { reason, .. }) => assert_eq!(reason, format!("queue 'used' in vhost '{v}' in use")),
        other => panic!("not refused as unsafe: {other:?}"),
    }
    drop(consumer);

    // Quorum queues refuse the guard; a caller that knows the type sends none.
    b.declare_queue(v, &queue("qq", QueueType::Quorum, Table::new())).await.unwrap();
    assert!(send(b, v, "", "qq", "m").await);
    let reason = refusal(b.delete_queue(v, "qq", QueueType::Classic, true).await);
    assert!(reason.contains("not supported by quorum queues"), "{reason}");
    b.delete_queue(v, "qq", QueueType::Quorum, true).await.unwrap();
    assert!(b.read_queue(v, "qq", Freshness::Now).await.unwrap().is_none());
}

async fn the_lock_is_exclusive<B: Traffic>(b: &B, v: &str) {
    let first = b.try_lock(Some(v), "first").await.unwrap().expect("a free lock");
    assert!(first.held() && b.lock_held(Some(v)).await.unwrap());
    assert!(b.try_lock(Some(v), "second").await.unwrap().is_none(), "held by the first");
    first.release().await;
    // The broker deletes the exclusive queue as the connection closes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.lock_held(Some(v)).await.unwrap() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let second = b.try_lock(Some(v), "second").await.unwrap().expect("freed on release");
    assert!(second.held());
    second.release().await;
    assert!(matches!(b.try_lock(Some("t-beh-nowhere"), "x").await, Err(BrokerError::AmqpUnreachable { .. })));
}

async fn records_round_trip<B: Traffic>(b: &B, v: &str) {
    // Inside a vhost: each write a new generation, the older ones deleted.
    let place = Place::Vhosts { project: "beh".into(), home: v.to_string() };
    let (none, _, mut slot) = b.read_journal(&place).await.unwrap();
    assert!(none.is_none());
    for n in 1..=2 {
        b.write_journal(&place, &json!({ "n": n, "nested": [1, { "b": null }] }), &mut slot).await.unwrap();
        let (read, _, _) = b.read_journal(&place).await.unwrap();
        assert_eq!(read, Some(json!({ "n": n, "nested": [1, { "b": null }] })));
    }
    let names: Vec<String> = b.record_exchanges(Some(v)).await.unwrap().into_iter().map(|(_, n, _)| n).collect();
    assert_eq!(names, [RecordKind::Journal.exchange("beh", 2)]);
    let found = b.journals().await.unwrap();
    assert!(found.iter().any(|f| f.place == place && f.value["n"] == 2), "{found:?}");
    // A migration's progress: each write the next generation, those older
    // than the one before it deleted; read with a journal that has a
    // migration in the vhost.
    let progress = |done: usize| Progress {
        vhost: v.to_string(),
        id: "ab12cd34".into(),
        done,
        started: "t0".into(),
        fingerprint: "f".into(),
        updated: format!("t{done}"),
    };
    let mut generations = BTreeSet::new();
    for done in 1..=3 {
        b.write_progress(&progress(done), &mut generations).await.unwrap();
    }
    let journal = json!({ "migrations": { "ab12cd34": { "vhost": v } } });
    b.write_journal(&place, &journal, &mut slot).await.unwrap();
    let (_, read, slot_read) = b.read_journal(&place).await.unwrap();
    assert_eq!(read, [progress(2), progress(3)]);
    assert_eq!(slot_read.progress[&(v.to_string(), "ab12cd34".to_string())], BTreeSet::from([2, 3]));
    let found = b.journals().await.unwrap();
    assert!(found.iter().any(|f| f.place == place && f.progress == [progress(2), progress(3)]), "{found:?}");
    b.delete_progress(v, "ab12cd34", &generations).await.unwrap();
    assert!(b.read_journal(&place).await.unwrap().1.is_empty());
    // A record's argument cannot change on a redeclare: the first stays.
    let name = RecordKind::Inventory.exchange("beh", 1);
    b.put_record(v, &name, &json!({ "first": true })).await.unwrap();
    b.put_record(v, &name, &json!({ "first": false })).await.unwrap();
    let records = b.record_exchanges(Some(v)).await.unwrap();
    let text = &records.iter().find(|(_, n, _)| *n == name).expect("the record").2;
    assert_eq!(serde_json::from_str::<serde_json::Value>(text).unwrap(), json!({ "first": true }));
    assert!(b.record_exchanges(Some("t-beh-nowhere")).await.unwrap().is_empty());

    // Broker-wide records are global parameters: any JSON round-trips.
    let name = "t-beh-records";
    let value = json!({ "a": [1, { "b": null }], "s": "x", "f": 1.5 });
    b.put_global_parameter(name, &value).await.unwrap();
    let read = b.global_parameter(name).await.unwrap();
    b.restore_global(name, None).await;
    assert_eq!(read, Some(value));
    // warren's broker-wide journal is one for every test on a real node
    // (tests/migrate.rs writes it while it runs): written only where the
    // case has the broker to itself.
    let (previous, _, mut slot) = b.read_journal(&Place::Broker).await.unwrap();
    if B::SHARED {
        return;
    }
    assert_eq!(previous, None);
    let mut journal = warren::journal::Journal::from_json(None).unwrap();
    journal.generation = 7;
    b.write_journal(&Place::Broker, &journal.to_json(), &mut slot).await.unwrap();
    let (read, _, _) = b.read_journal(&Place::Broker).await.unwrap();
    assert_eq!(read, Some(journal.to_json()));
    assert_eq!(b.global_parameter(JOURNAL_PARAMETER).await.unwrap(), Some(journal.to_json()));
    let found = b.journals().await.unwrap();
    assert!(found.iter().any(|f| f.place == Place::Broker && f.value == journal.to_json()), "{found:?}");
}

async fn records_in_parts_round_trip<B: Traffic>(b: &B, v: &str) {
    // An inventory over 1 MB inside a vhost: parts of its generation, then
    // the generation's exchange with their index; read back whole.
    let q = |name: String| ObjectKey::Queue { vhost: v.to_string(), name };
    let mut objects: warren::model::KeySet =
        (0..40_000).map(|i| q(format!("a.queue.with.a.long.name.{i:06}"))).collect();
    objects.insert(ObjectKey::Vhost(v.to_string()));
    let large = Inventory { objects, ..Inventory::default() };
    let write = |next: u64, inventory: &Inventory, stale: Vec<(u64, usize)>| RecordWrite::Vhost {
        vhost: v.to_string(),
        project: "beh".into(),
        next,
        inventory: Some(inventory.clone()),
        stale,
    };
    b.write_records(&[write(1, &large, vec![])]).await.unwrap();
    let exchanges = record_values(b, v).await;
    let names: Vec<&str> = exchanges.keys().map(String::as_str).collect();
    assert_eq!(names, ["warren.records.beh.1", "warren.records.beh.1.part-1", "warren.records.beh.1.part-2"]);
    let index = SplitIndex::of_exchange(&exchanges["warren.records.beh.1"]).unwrap().unwrap();
    let joined = join("warren.records.beh.1", &index, |p| exchanges.get(p)).unwrap();
    assert!(Inventory::from_json(&joined).unwrap() == large, "the parts join into the inventory written");
    let live = warren::live::from_broker(b, &[v.to_string()]).await.unwrap();
    let read = &live.records.in_vhosts[&(v.to_string(), "beh".to_string())];
    assert!(read.newest == large, "a live read joins them");
    assert_eq!((read.found.len(), read.parts.clone()), (1, BTreeMap::from([(1, 2)])));
    assert!(live.topology.vhosts[v].exchanges.is_empty(), "records, not topology");

    // The next generation, small, is one exchange again; the parts go.
    let small = Inventory { objects: [q("orders".into())].into(), ..Inventory::default() };
    b.write_records(&[write(2, &small, vec![(1, 2)])]).await.unwrap();
    assert_eq!(record_values(b, v).await.into_keys().collect::<Vec<_>>(), ["warren.records.beh.2"]);
}

/// warren's record exchanges in `v` (parts too), by name, with their values.
async fn record_values<B: Broker>(b: &B, v: &str) -> BTreeMap<String, Json> {
    let records = b.record_exchanges(Some(v)).await.unwrap();
    records.into_iter().map(|(_, n, text)| (n, serde_json::from_str(&text).unwrap())).collect()
}

async fn live_state_round_trip<B: Traffic>(b: &B, v: &str) {
    // Settings are given at creation (3.10 ignores a new default queue type later).
    b.delete_vhost(v).await.unwrap();
    let settings = VhostSettings {
        description: Some("behaviour".into()),
        default_queue_type: Some(QueueType::Quorum),
        limits: Some(BTreeMap::from([("max-queues".to_string(), 50)])),
        tags: Some(["orders".to_string(), "team-a".to_string()].into()),
        protected_from_deletion: None,
    };
    b.put_vhost(v, &settings, &[]).await.unwrap();
    let user = User {
        name: "t-beh-live-user".into(),
        password: Password::None,
        tags: ["management".to_string()].into(),
        limits: None,
    };
    b.put_user(&user, None, &[]).await.unwrap();
    let reader =
        Permission { user: user.name.clone(), configure: "^beh".into(), write: ".*".into(), read: ".*".into() };
    b.put_permission(v, &reader).await.unwrap();

    let mut want = Vhost::new(v);
    want.settings = settings;
    for x in [
        with_args(exchange("orders", "topic"), alternate("unrouted")),
        exchange("unrouted", "fanout"),
        exchange("by-header", "headers"),
        Exchange { internal: true, ..exchange("dead", "fanout") },
    ] {
        want.exchanges.insert(x.name.clone(), x);
    }
    let dead_letters = table(&[("x-message-ttl", Value::Int(60000)), ("x-dead-letter-exchange", text("dead"))]);
    for q in [
        queue("orders.created", QueueType::Classic, dead_letters),
        queue("orders.audit", QueueType::Quorum, table(&[("x-delivery-limit", Value::Int(5))])),
        queue("orders.log", QueueType::Stream, table(&[("x-max-age", text("1D"))])),
    ] {
        want.queues.insert(q.name.clone(), q);
    }
    let region = table(&[("x-match", text("all")), ("region", text("eu"))]);
    want.bindings = BTreeSet::from([
        to_queue("orders", "orders.created", "order.created"),
        to_queue("orders", "orders.audit", "#"),
        to_exchange("orders", "by-header", "order.*"),
        Binding { arguments: region, ..to_queue("by-header", "orders.log", "") },
        to_queue("unrouted", "orders.audit", ""),
    ]);
    let ttl = policy("ttl", "^orders\\.created$", ApplyTo::Queues, 1, table(&[("max-length", Value::Int(1000))]));
    let cap = policy("cap", ".*", ApplyTo::Queues, 0, table(&[("max-length", Value::Int(5000))]));
    want.set_policy(&ttl);
    want.objects.extend(operator_policies::objects([&cap]));
    for p in [full("guest"), reader.clone()] {
        want.set_permission(&p);
    }

    for x in want.exchanges.values() {
        b.declare_exchange(v, x).await.unwrap();
    }
    for q in want.queues.values() {
        b.declare_queue(v, q).await.unwrap();
    }
    for binding in &want.bindings {
        b.bind(v, binding).await.unwrap();
    }
    for p in want.policies() {
        b.put_policy(v, p).await.unwrap();
    }
    for p in operator_policies::typed(&want.objects).values() {
        b.put_object(Some(v), &operator_policies::KIND, &operator_policies::object(p)).await.unwrap();
    }

    // An object of a kind of `model::kinds`: a topic permission.
    let topic = Object {
        id: vec!["guest".into(), "orders".into()],
        body: table(&[("read", text(".*")), ("write", text("^order\\."))]),
    };
    let kind = by_table("topic_permissions").unwrap();
    b.put_object(Some(v), kind, &topic).await.unwrap();
    want.objects.insert(Name { kind, id: topic.id.clone() }, topic.body.clone());

    let read = live_vhost(b, v).await;
    b.delete_user(&user.name).await.unwrap();
    assert_eq!(read, want);

    // The whole broker's export, with the vhost listing, reads the same.
    let only = [v.to_string()];
    let mut live =
        warren::live::from_vhost_definitions_only(&b.definitions().await.unwrap(), "test", None, &only).unwrap();
    warren::live::add_vhost_listing(&mut live, &b.vhosts().await.unwrap(), "test").unwrap();
    let mut from_export = live.topology.vhosts[v].clone();
    from_export.remove_permission(&user.name);
    want.remove_permission(&user.name);
    assert_eq!(from_export, want);

    // Deleted, and deleted again (what is gone is no error).
    for _ in 0..2 {
        b.delete_object(Some(v), &Name { kind, id: topic.id.clone() }).await.unwrap();
    }
    assert!(live_vhost(b, v).await.objects.keys().all(|n| n.kind != kind), "the operator policy alone is left");
}

async fn broker_wide_objects_round_trip<B: Traffic>(b: &B, v: &str) {
    let kind = by_table("global_parameters").unwrap();
    let name = Name { kind, id: vec![format!("{v}-setting")] };
    let value = table(&[("team", text("orders")), ("tier", Value::Int(2))]);
    let object = Object { id: name.id.clone(), body: table(&[("value", Value::Table(value))]) };
    b.put_object(None, kind, &object).await.unwrap();
    let live = warren::live::from_broker(b, &[v.to_string()]).await.unwrap();
    let read = live.topology.objects.get(&name).cloned();
    b.delete_object(None, &name).await.unwrap();
    assert_eq!(read, Some(object.body));
    let names: Vec<String> = live.topology.objects.keys().map(|n| n.id[0].clone()).collect();
    assert!(!names.iter().any(|n| n == "internal_cluster_id" || n.starts_with("warren.")), "{names:?}");
    let gone = warren::live::from_broker(b, &[v.to_string()]).await.unwrap();
    assert!(!gone.topology.objects.contains_key(&name));
}

/// The limits of the user `name` as warren reads them, from the users'
/// listing and from the whole broker's export.
async fn user_limits<B: Traffic>(b: &B, v: &str, name: &str) -> (Option<BTreeMap<String, i64>>, Json) {
    let live = warren::live::from_broker(b, &[v.to_string()]).await.unwrap();
    let export: Json = serde_json::from_str(&b.definitions().await.unwrap()).unwrap();
    let exported = export["users"].as_array().unwrap().iter().find(|u| u["name"] == name).unwrap()["limits"].clone();
    (live.topology.user(name).unwrap().limits, exported)
}

async fn user_limits_round_trip<B: Traffic>(b: &B, v: &str) {
    let limits = |pairs: &[(&str, i64)]| Some(pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect());
    let mut user = User {
        name: format!("{v}-user"),
        password: Password::None,
        tags: BTreeSet::new(),
        limits: limits(&[("max-connections", 10), ("max-channels", 20)]),
    };
    b.put_user(&user, None, &[]).await.unwrap();
    let read = user_limits(b, v, &user.name).await;
    assert_eq!(read, (user.limits.clone(), json!({"max-connections": 10, "max-channels": 20})));

    // A user's PUT without limits keeps them; -1 is "no limit"; a limit
    // named is removed.
    let unmanaged = User { limits: None, tags: ["management".to_string()].into(), ..user.clone() };
    b.put_user(&unmanaged, None, &[]).await.unwrap();
    assert_eq!(user_limits(b, v, &user.name).await.0, user.limits);
    user.limits = limits(&[("max-connections", -1)]);
    b.put_user(&user, None, &["max-channels".to_string()]).await.unwrap();
    assert_eq!(user_limits(b, v, &user.name).await, (user.limits.clone(), json!({"max-connections": -1})));
    // Removing what is gone is no error.
    b.put_user(&user, None, &["max-channels".to_string()]).await.unwrap();

    // A limit the broker does not know is refused, with its reason.
    let odd = User { limits: limits(&[("max-queues", 5)]), ..user.clone() };
    let refused = refusal(b.put_user(&odd, None, &[]).await);
    b.delete_user(&user.name).await.unwrap();
    assert!(refused.contains("Unrecognised terms") && refused.contains("max-queues"), "{refused}");
}

fn full(user: &str) -> Permission {
    Permission { user: user.into(), configure: ".*".into(), write: ".*".into(), read: ".*".into() }
}

async fn a_user_without_the_administrator_tag<B: Traffic>(b: &B, v: &str) {
    let name = "t-beh-dev";
    let dev = User {
        name: name.into(),
        password: Password::Env("UNUSED".into()),
        tags: ["management".to_string()].into(),
        limits: None,
    };
    b.put_user(&dev, Some("dev-password"), &[]).await.unwrap();
    b.put_permission(v, &full(name)).await.unwrap();
    b.declare_exchange(v, &exchange("x", "topic")).await.unwrap();
    b.declare_queue(v, &classic("q")).await.unwrap();
    b.bind(v, &to_queue("x", "q", "k.#")).await.unwrap();
    b.put_policy(v, &policy("p", "^q$", ApplyTo::Queues, 0, table(&[("max-length", Value::Int(9))]))).await.unwrap();
    let as_admin = live_vhost(b, v).await;

    let view = b.login(name, "dev-password");
    let checks = async {
        assert!(!view.is_administrator().await.unwrap());
        assert!(matches!(view.global_parameter(JOURNAL_PARAMETER).await, Err(BrokerError::Forbidden { .. })));
        let settings = VhostSettings::default();
        assert!(matches!(view.put_vhost("t-beh-dev-vhost", &settings, &[]).await, Err(BrokerError::Forbidden { .. })));
        let a = view.answers_of(&[v.to_string(), "/".to_string()]).await.unwrap();
        assert!(a.users.is_none() && a.permissions.is_none() && a.exports.is_empty() && a.records.is_empty());
        let read: BTreeSet<(&str, &str)> = a.listings.iter().map(|(at, l, _)| (at.as_str(), l.what())).collect();
        assert_eq!(read, Listing::ALL.iter().map(|l| (v, l.what())).collect(), "only its own vhost's listings");
        // Everything but the permissions, which it cannot read.
        let mut want = as_admin.clone();
        want.retain_permissions(|_| false);
        assert_eq!(live_vhost(&view, v).await, want);
        view.declare_exchange(v, &exchange("dev.x", "direct")).await.unwrap();
    };
    checks.await;
    b.delete_user(name).await.unwrap();
}

async fn counts_and_leaders<B: Traffic>(b: &B, v: &str) {
    assert!(!b.check().await.unwrap().is_empty());
    assert!(b.is_administrator().await.unwrap());
    b.declare_queue(v, &classic("q")).await.unwrap();
    b.declare_queue(v, &queue("qq", QueueType::Quorum, Table::new())).await.unwrap();
    for body in ["a", "b"] {
        assert!(send(b, v, "", "q", body).await);
    }
    let (_, r) = b.read_queue(v, "q", Freshness::Now).await.unwrap().expect("the queue");
    assert_eq!((r.ready, r.unacked, r.consumers, r.own_ready), (2, 0, 0, 2));
    // A stream answers the passive declare too, which a deletion without
    // --allow-destroy asks right before, as it asks quorum queues (3.10
    // answers 0 ready for a stream whatever it holds: only its totals
    // count its messages).
    b.declare_queue(v, &queue("s", QueueType::Stream, Table::new())).await.unwrap();
    assert!(send(b, v, "", "s", "a").await);
    let (_, r) = b.read_queue(v, "s", Freshness::Now).await.unwrap().expect("the stream");
    assert_eq!(r.consumers, 0);
    let counts = b.queue_counts(v, None).await.unwrap();
    assert_eq!((counts["q"].messages, counts["q"].consumers), (Some(2), Some(0)));
    assert!(counts.contains_key("qq"));
    assert!(b.queue_counts("t-beh-nowhere", None).await.unwrap().is_empty());
    let leadership = b.queue_leadership(v, "qq").await.unwrap().expect("the queue");
    assert!(leadership.leader.is_some() && leadership.members.as_ref().is_some_and(|m| !m.is_empty()));
    assert_eq!(without_leader(&leadership), None);
}
