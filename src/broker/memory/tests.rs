//! The in-memory broker routes and refuses as RabbitMQ does (the same cases
//! run against a real node in tests/suite/broker_behaviour.rs).

use super::*;
use crate::model::{ApplyTo, Password};
use crate::testing::objects::{exchange, queue, table, text, to_exchange, to_queue};

fn policy(name: &str, pattern: &str, priority: i64, definition: Table) -> Policy {
    crate::testing::objects::policy(name, pattern, ApplyTo::Exchanges, priority, definition)
}

const V: &str = "v";

async fn broker(queues: &[&str]) -> Memory {
    let m = Memory::new();
    m.put_vhost(V, &VhostSettings::default(), &[]).await.unwrap();
    for q in queues {
        m.declare_queue(V, &queue(q, QueueType::Classic, Table::new())).await.unwrap();
    }
    m
}

/// Publishes `body` with no headers.
fn send(m: &Memory, x: &str, key: &str, body: &str) -> bool {
    m.publish(V, x, key, &Table::new(), body).unwrap()
}

/// The bodies a queue holds, taken.
fn drain(m: &Memory, q: &str) -> Vec<String> {
    std::iter::from_fn(|| m.get(V, q)).map(|msg| msg.body).collect()
}

fn refusal(e: BrokerError) -> String {
    match e {
        BrokerError::Refused { status: 400, reason, .. } => reason,
        other => panic!("not a 400 refusal: {other:?}"),
    }
}

#[tokio::test]
async fn each_exchange_type_routes_by_its_rule() {
    let m = broker(&["q1", "q2"]).await;
    for (x, kind) in [("d", "direct"), ("f", "fanout"), ("t", "topic")] {
        m.declare_exchange(V, &exchange(x, kind)).await.unwrap();
    }
    m.bind(V, &to_queue("d", "q1", "k")).await.unwrap();
    m.bind(V, &to_queue("f", "q1", "ignored")).await.unwrap();
    m.bind(V, &to_queue("f", "q2", "")).await.unwrap();
    m.bind(V, &to_queue("t", "q2", "a.*")).await.unwrap();
    assert!(send(&m, "d", "k", "direct"));
    assert!(!send(&m, "d", "k2", "lost"));
    assert!(send(&m, "f", "anything", "fanout"));
    assert!(send(&m, "t", "a.b", "topic"));
    assert!(!send(&m, "t", "a.b.c", "lost"));
    assert!(send(&m, "", "q1", "default"), "the default exchange routes by queue name");
    assert!(send(&m, "amq.default", "q2", "default2"));
    assert!(!send(&m, "", "nope", "lost"));
    assert_eq!(drain(&m, "q1"), ["direct", "fanout", "default"]);
    assert_eq!(drain(&m, "q2"), ["fanout", "topic", "default2"]);

    let mut h = exchange("h", "headers");
    h.name = "h".into();
    m.declare_exchange(V, &h).await.unwrap();
    let b = Binding { arguments: table(&[("x-match", text("any")), ("k", Value::Int(1))]), ..to_queue("h", "q1", "") };
    m.bind(V, &b).await.unwrap();
    assert!(m.publish(V, "h", "", &table(&[("k", Value::Int(1))]), "headers").unwrap());
    assert!(!m.publish(V, "h", "", &table(&[("k", Value::Int(2))]), "lost").unwrap());
    assert_eq!(drain(&m, "q1"), ["headers"]);
}

#[tokio::test]
async fn exchange_to_exchange_bindings_deliver_once_and_cut_cycles() {
    let m = broker(&["q"]).await;
    for x in ["a", "b", "c"] {
        m.declare_exchange(V, &exchange(x, "fanout")).await.unwrap();
    }
    m.bind(V, &to_exchange("a", "b", "")).await.unwrap();
    m.bind(V, &to_exchange("b", "c", "")).await.unwrap();
    m.bind(V, &to_exchange("c", "a", "")).await.unwrap();
    m.bind(V, &to_queue("a", "q", "")).await.unwrap();
    m.bind(V, &to_queue("c", "q", "")).await.unwrap();
    m.bind(V, &to_queue("c", "q", "other")).await.unwrap();
    assert!(send(&m, "b", "", "one"));
    let got: Vec<Message> = std::iter::from_fn(|| m.get(V, "q")).collect();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].exchange.as_str(), got[0].body.as_str()), ("b", "one"));
}

#[tokio::test]
async fn the_alternate_exchange_argument_wins_over_the_policy() {
    let m = broker(&["by-arg", "by-policy", "routed"]).await;
    for (x, q) in [("ae-arg", "by-arg"), ("ae-policy", "by-policy")] {
        m.declare_exchange(V, &exchange(x, "fanout")).await.unwrap();
        m.bind(V, &to_queue(x, q, "")).await.unwrap();
    }
    let mut src = exchange("src", "direct");
    src.arguments = table(&[("alternate-exchange", text("ae-arg"))]);
    m.declare_exchange(V, &src).await.unwrap();
    m.declare_exchange(V, &exchange("plain", "direct")).await.unwrap();
    m.bind(V, &to_queue("src", "routed", "k")).await.unwrap();
    let ae = table(&[("alternate-exchange", text("ae-policy"))]);
    m.put_policy(V, &policy("ae", "^(src|plain)$", 0, ae)).await.unwrap();

    assert!(send(&m, "src", "k", "matched"));
    assert!(send(&m, "src", "nomatch", "to-arg"));
    assert!(send(&m, "plain", "x", "to-policy"));
    assert_eq!(drain(&m, "routed"), ["matched"]);
    assert_eq!(drain(&m, "by-arg"), ["to-arg"]);
    assert_eq!(drain(&m, "by-policy"), ["to-policy"]);
}

#[tokio::test]
async fn the_alternate_exchange_fires_only_for_its_own_exchange_and_chains() {
    let m = broker(&["caught"]).await;
    let mut src = exchange("src", "direct");
    src.arguments = table(&[("alternate-exchange", text("ae1"))]);
    m.declare_exchange(V, &src).await.unwrap();
    m.declare_exchange(V, &exchange("hop", "direct")).await.unwrap();
    m.bind(V, &to_exchange("src", "hop", "kk")).await.unwrap();
    // ae1 routes nothing itself: its own alternate exchange takes over.
    let mut ae1 = exchange("ae1", "direct");
    ae1.arguments = table(&[("alternate-exchange", text("ae2"))]);
    m.declare_exchange(V, &ae1).await.unwrap();
    m.declare_exchange(V, &exchange("ae2", "fanout")).await.unwrap();
    m.bind(V, &to_queue("ae2", "caught", "")).await.unwrap();
    assert!(!send(&m, "src", "kk", "lost"), "hop routes nothing, and src's AE is not inherited");
    assert!(send(&m, "src", "other", "chained"));
    assert_eq!(drain(&m, "caught"), ["chained"]);
    // A missing alternate exchange is skipped.
    let mut dangling = exchange("dangling", "direct");
    dangling.arguments = table(&[("alternate-exchange", text("nowhere"))]);
    m.declare_exchange(V, &dangling).await.unwrap();
    assert!(!send(&m, "dangling", "k", "lost"));
}

#[tokio::test]
async fn publishing_to_an_internal_or_missing_exchange_is_refused() {
    let m = broker(&[]).await;
    let mut internal = exchange("int", "fanout");
    internal.internal = true;
    m.declare_exchange(V, &internal).await.unwrap();
    let reason = refusal(m.publish(V, "int", "", &Table::new(), "x").unwrap_err());
    assert_eq!(reason, "403 ACCESS_REFUSED - cannot publish to internal exchange 'int' in vhost 'v'");
    assert!(matches!(m.publish(V, "nope", "", &Table::new(), "x"), Err(BrokerError::NotFound { .. })));
    assert!(matches!(m.publish("nope", "", "", &Table::new(), "x"), Err(BrokerError::NotFound { .. })));
}

#[tokio::test]
async fn redeclaring_differently_is_refused_in_the_broker_s_words() {
    let m = broker(&[]).await;
    let mut x = exchange("x", "topic");
    x.arguments = table(&[("alternate-exchange", text("ae"))]);
    m.declare_exchange(V, &x).await.unwrap();
    let reason = refusal(m.declare_exchange(V, &exchange("x", "direct")).await.unwrap_err());
    assert_eq!(
        reason,
        "inequivalent arg 'type' for exchange 'x' in vhost 'v': received 'direct' but current is 'topic'"
    );
    let reason = refusal(m.declare_exchange(V, &exchange("x", "topic")).await.unwrap_err());
    assert!(reason.ends_with("received none but current is the value 'ae' of type 'longstr'"), "{reason}");
    // Other arguments are not compared, and not stored.
    x.arguments.insert("x-foo".into(), Value::Int(1));
    m.declare_exchange(V, &x).await.unwrap();
    assert!(!m.lock_state().vhosts[V].exchanges["x"].arguments.contains_key("x-foo"));

    let mut q = queue("q", QueueType::Classic, Table::new());
    q.arguments = table(&[("x-message-ttl", Value::Int(1000))]);
    m.declare_queue(V, &q).await.unwrap();
    let mut other = q.clone();
    other.arguments = table(&[("x-message-ttl", Value::Int(2000))]);
    let reason = refusal(m.declare_queue(V, &other).await.unwrap_err());
    assert_eq!(
        reason,
        "inequivalent arg 'x-message-ttl' for queue 'q' in vhost 'v': received '2000' but current is '1000'"
    );
    let reason = refusal(m.declare_queue(V, &queue("q", QueueType::Quorum, Table::new())).await.unwrap_err());
    assert!(reason.contains("inequivalent arg 'x-queue-type'"), "{reason}");
    let reason = refusal(m.declare_queue(V, &Queue { durable: false, ..q.clone() }).await.unwrap_err());
    assert!(reason.contains("inequivalent arg 'durable'"), "{reason}");
    other.arguments = table(&[("x-message-ttl", Value::Int(1000)), ("x-delivery-limit", Value::Int(5))]);
    m.declare_queue(V, &other).await.unwrap();
}

#[tokio::test]
async fn declarations_the_broker_refuses() {
    let m = broker(&[]).await;
    let reason = refusal(m.declare_exchange(V, &exchange("x", "x-foo")).await.unwrap_err());
    assert_eq!(reason, "unknown exchange type 'x-foo'");
    assert!(matches!(m.declare_exchange(V, &exchange("amq.mine", "direct")).await, Err(BrokerError::Forbidden { .. })));
    m.declare_exchange(V, &exchange("amq.direct", "direct")).await.unwrap();
    let reason = refusal(
        m.declare_queue(V, &Queue { durable: false, ..queue("qq", QueueType::Quorum, Table::new()) })
            .await
            .unwrap_err(),
    );
    assert_eq!(reason, "invalid property 'non-durable' for queue 'qq' in vhost 'v'");
    let mut q = queue("c", QueueType::Classic, Table::new());
    q.arguments = table(&[("x-delivery-limit", Value::Int(3))]);
    let reason = refusal(m.declare_queue(V, &q).await.unwrap_err());
    assert_eq!(reason, "invalid arg 'x-delivery-limit' for queue 'c' in vhost 'v' of queue type rabbit_classic_queue");
    assert!(matches!(
        m.declare_queue("nope", &queue("q", QueueType::Classic, Table::new())).await,
        Err(BrokerError::NotFound { .. })
    ));
}

#[tokio::test]
async fn bindings_need_both_ends_and_go_with_them() {
    let m = broker(&["q"]).await;
    m.declare_exchange(V, &exchange("x", "direct")).await.unwrap();
    m.declare_exchange(V, &exchange("y", "direct")).await.unwrap();
    for b in [to_queue("x", "nope", "k"), to_queue("nope", "q", "k"), to_exchange("x", "nope", "k")] {
        assert!(matches!(m.bind(V, &b).await, Err(BrokerError::NotFound { .. })), "{b}");
    }
    assert!(matches!(m.bind(V, &to_queue("", "q", "k")).await, Err(BrokerError::Forbidden { .. })));
    m.bind(V, &to_queue("x", "q", "k")).await.unwrap();
    m.bind(V, &to_queue("x", "q", "k")).await.unwrap();
    m.bind(V, &to_exchange("y", "x", "k")).await.unwrap();
    m.bind(V, &to_queue("y", "q", "k")).await.unwrap();
    assert_eq!(m.lock_state().vhosts[V].bindings.len(), 3, "binding twice makes one");
    m.delete_exchange(V, "x").await.unwrap();
    assert_eq!(m.lock_state().vhosts[V].bindings.iter().collect::<Vec<_>>(), [&to_queue("y", "q", "k")]);
    m.delete_queue(V, "q", QueueType::Classic, false).await.unwrap();
    assert!(m.lock_state().vhosts[V].bindings.is_empty());

    // Deletes of what is gone succeed.
    m.delete_exchange(V, "x").await.unwrap();
    m.delete_queue(V, "q", QueueType::Classic, true).await.unwrap();
    m.unbind(V, &to_queue("x", "q", "k")).await.unwrap();
    m.delete_policy(V, "nope").await.unwrap();
    m.delete_exchange("nope", "x").await.unwrap();
    m.delete_vhost("nope").await.unwrap();
    m.delete_user("nope").await.unwrap();
    m.delete_permission(V, "nope").await.unwrap();
}

#[tokio::test]
async fn an_auto_delete_exchange_goes_with_its_last_binding() {
    let m = broker(&["q"]).await;
    let ad = Exchange { auto_delete: true, ..exchange("ad", "fanout") };
    m.declare_exchange(V, &ad).await.unwrap();
    m.bind(V, &to_queue("ad", "q", "")).await.unwrap();
    m.delete_queue(V, "q", QueueType::Classic, false).await.unwrap();
    assert!(!m.lock_state().vhosts[V].exchanges.contains_key("ad"));
}

#[tokio::test]
async fn a_guarded_delete_keeps_a_classic_queue_that_is_in_use() {
    let m = broker(&["full", "used"]).await;
    assert!(send(&m, "", "full", "kept"));
    let e = m.delete_queue(V, "full", QueueType::Classic, true).await.unwrap_err();
    assert!(
        matches!(&e, BrokerError::Unsafe { reason, .. } if reason == "queue 'full' in vhost 'v' not empty"),
        "{e:?}"
    );
    assert_eq!(drain(&m, "full"), ["kept"]);
    m.set_consumers(V, "used", 1).unwrap();
    let e = m.delete_queue(V, "used", QueueType::Classic, true).await.unwrap_err();
    assert!(matches!(&e, BrokerError::Unsafe { reason, .. } if reason.ends_with("in use")), "{e:?}");

    // Quorum queues refuse the flags, and are sent none by a caller that knows their type.
    m.declare_queue(V, &queue("qq", QueueType::Quorum, Table::new())).await.unwrap();
    assert!(send(&m, "", "qq", "x"));
    let reason = refusal(m.delete_queue(V, "qq", QueueType::Classic, true).await.unwrap_err());
    assert!(reason.contains("not supported by quorum queues"), "{reason}");
    m.delete_queue(V, "qq", QueueType::Quorum, true).await.unwrap();
    assert!(m.read_queue(V, "qq", Freshness::Now).await.unwrap().is_none());
}

#[tokio::test]
async fn deleting_a_vhost_takes_everything_in_it() {
    let m = broker(&["q"]).await;
    let lock = m.try_lock(Some(V), "me").await.unwrap().unwrap();
    m.delete_vhost(V).await.unwrap();
    assert!(!lock.held(), "its connections close");
    m.put_vhost(V, &VhostSettings::default(), &[]).await.unwrap();
    let s = m.lock_state();
    assert!(s.vhosts[V].queues.is_empty());
    assert_eq!(s.vhosts[V].permissions.keys().collect::<Vec<_>>(), ["guest"], "the creator's, made anew");
}

#[tokio::test]
async fn the_highest_priority_policy_applies_to_an_exchange() {
    let m = broker(&[]).await;
    m.declare_exchange(V, &exchange("x", "direct")).await.unwrap();
    let def = table(&[("alternate-exchange", text("ae"))]);
    m.put_policy(V, &policy("low", ".*", 1, def.clone())).await.unwrap();
    m.put_policy(V, &policy("high", "^x$", 5, def.clone())).await.unwrap();
    let queues_only =
        Policy { apply_to: ApplyTo::Queues, ..policy("queues", ".*", 9, table(&[("max-length", Value::Int(1))])) };
    m.put_policy(V, &queues_only).await.unwrap();
    assert_eq!(m.exchange_policy(V, "x").await.unwrap().as_deref(), Some("high"));
    m.delete_policy(V, "high").await.unwrap();
    assert_eq!(m.exchange_policy(V, "x").await.unwrap().as_deref(), Some("low"));
    assert!(matches!(m.exchange_policy(V, "nope").await, Err(BrokerError::NotFound { .. })));

    let reason =
        refusal(m.put_policy(V, &policy("bad", ".*", 0, table(&[("foo-bar", Value::Int(1))]))).await.unwrap_err());
    assert_eq!(reason, "Validation failed: [{<<\"foo-bar\">>,1}] are not recognised policy settings");
    let reason = refusal(m.put_policy(V, &policy("bad", ".*", 0, Table::new())).await.unwrap_err());
    assert_eq!(reason, "Validation failed: no policy provided");
    let reason = refusal(m.put_policy(V, &policy("bad", "(", 0, def.clone())).await.unwrap_err());
    assert!(reason.starts_with("Validation failed: pattern should be regular expression"), "{reason}");
    let dlx = table(&[("dead-letter-exchange", text("d"))]);
    use crate::model::kinds::operator_policies;
    let op = operator_policies::object(&policy("op", ".*", 0, dlx));
    assert!(m.put_object(Some(V), &operator_policies::KIND, &op).await.is_err(), "not an operator policy key");
}

#[tokio::test]
async fn the_lock_has_one_holder_and_frees_on_release_drop_or_cut() {
    let m = broker(&[]).await;
    let first = m.try_lock(Some(V), "a").await.unwrap().expect("free");
    assert!(first.held() && m.lock_held(Some(V)).await.unwrap());
    assert!(m.try_lock(Some(V), "b").await.unwrap().is_none(), "held by a");
    assert!(m.try_lock(None, "b").await.unwrap().is_some(), "another vhost's lock is another lock");
    first.release().await;
    assert!(!m.lock_held(Some(V)).await.unwrap());
    let second = m.try_lock(Some(V), "b").await.unwrap().expect("free again");
    drop(second);
    let third = m.try_lock(Some(V), "c").await.unwrap().expect("freed by drop");
    assert!(m.cut_lock(Some(V)));
    assert!(!third.held());
    let fourth = m.try_lock(Some(V), "d").await.unwrap().expect("freed by the cut");
    drop(third);
    assert!(fourth.held() && m.lock_held(Some(V)).await.unwrap(), "the cut holder's drop frees nothing of another's");
    assert!(matches!(m.try_lock(Some("nope"), "e").await, Err(BrokerError::AmqpUnreachable { .. })));
}

#[tokio::test]
async fn a_user_without_the_administrator_tag_reads_listings() {
    let m = broker(&["q"]).await;
    let dev =
        User { name: "dev".into(), password: Password::None, tags: ["management".to_string()].into(), limits: None };
    m.put_user(&dev, None, &[]).await.unwrap();
    m.put_permission(V, &full_permission("dev")).await.unwrap();
    let as_dev = m.as_user("dev");
    assert!(!as_dev.is_administrator().await.unwrap());
    assert!(matches!(as_dev.global_parameter("warren.journal").await, Err(BrokerError::Forbidden { .. })));
    assert!(matches!(as_dev.put_vhost("x", &VhostSettings::default(), &[]).await, Err(BrokerError::Forbidden { .. })));
    let a = as_dev.answers_of(&[V.to_string(), "/".to_string()]).await.unwrap();
    assert!(a.users.is_none() && a.permissions.is_none() && a.exports.is_empty() && a.records.is_empty());
    assert_eq!(a.listings.len(), Listing::ALL.len(), "only the vhost it has permissions in");
    assert!(a.vhosts.contains("\"v\"") && !a.vhosts.contains("\"/\""), "{}", a.vhosts);
    assert!(matches!(m.as_user("nobody").check().await, Err(BrokerError::BadCredentials { .. })));
    // Permissions are regular expressions on names.
    m.put_permission(V, &Permission { configure: "^dev\\.".into(), ..full_permission("dev") }).await.unwrap();
    as_dev.declare_exchange(V, &exchange("dev.x", "direct")).await.unwrap();
    assert!(matches!(
        as_dev.declare_exchange(V, &exchange("ops.x", "direct")).await,
        Err(BrokerError::Forbidden { .. })
    ));
}

#[tokio::test]
async fn a_quorum_queue_without_a_leader_reads_empty() {
    let m = broker(&[]).await;
    m.declare_queue(V, &queue("qq", QueueType::Quorum, Table::new())).await.unwrap();
    assert!(send(&m, "", "qq", "x"));
    let l = m.queue_leadership(V, "qq").await.unwrap().unwrap();
    assert_eq!(l.leader.as_deref(), Some(NODE));
    m.set_leader(V, "qq", false).unwrap();
    let (_, r) = m.read_queue(V, "qq", Freshness::Now).await.unwrap().unwrap();
    assert_eq!((r.ready, r.consumers), (0, 0));
    assert!(m.queue_leadership(V, "qq").await.unwrap().unwrap().leader.is_none());
    assert_eq!(m.queue_counts(V, None).await.unwrap()["qq"].messages, Some(1), "the totals still count it");
}
