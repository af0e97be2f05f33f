//! The traffic harness itself (tests/suite/common/traffic.rs) against the private
//! test broker: it must see exactly-once delivery when it happens, and fail
//! when it does not. Each test works in its own `t-traffic-*` vhost.

use std::time::Duration;

use crate::common::traffic::{Publish, TestVhost, Traffic};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// A direct exchange `x` bound to queue `q` with key `k`.
fn direct(vhost: &str) -> TestVhost {
    let v = TestVhost::new(vhost);
    v.exchange("x", "direct");
    v.queue("q");
    v.bind("x", "q", "k", json!({}));
    v
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn one_bound_queue_gets_every_message_exactly_once() {
    let _turn = crate::common::share();
    let v = direct("t-traffic-once");
    let mut traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["k"]).rate(200).count(500));
    traffic.add_consumer("q", Duration::ZERO);
    assert!(traffic.wait_until_received(500, WAIT), "{}", traffic.report());
    let report = traffic.finish(WAIT);
    report.assert_exactly_once();
    assert_eq!((report.sent, report.confirmed.len(), report.received), (500, 500, 500), "{report}");
    assert!(report.returned.is_empty() && report.cancelled.is_empty(), "{report}");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn unroutable_messages_come_back_and_fail_the_check() {
    let _turn = crate::common::share();
    let v = direct("t-traffic-unroutable");
    let mut traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["nowhere"]).rate(200).count(50));
    traffic.add_consumer("q", Duration::ZERO);
    let report = traffic.finish(WAIT);
    assert_eq!(report.returned, (1..=50).collect::<Vec<u64>>(), "{report}");
    assert_eq!(report.received, 0, "{report}");
    let err = report.check_exactly_once().expect_err("returned messages fail the check");
    assert!(err.contains("50 returned unroutable"), "{err}");
    assert!(err.contains("no message was confirmed"), "{err}");
    // The panicking form fails too, with the same summary.
    let panicked = std::panic::catch_unwind(|| report.assert_exactly_once()).expect_err("it panics");
    let message = panicked.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("50 returned unroutable"), "{message}");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn confirmed_messages_nobody_consumes_are_lost() {
    let _turn = crate::common::share();
    let v = direct("t-traffic-lost");
    let traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["k"]).rate(200).count(20));
    // No consumer: the broker confirms each message, and none is received.
    let report = traffic.finish(Duration::from_secs(2));
    assert_eq!(report.lost, (1..=20).collect::<Vec<u64>>(), "{report}");
    let err = report.check_exactly_once().expect_err("lost messages fail the check");
    assert!(err.contains("20 confirmed but never received on all queues: 1, 2, 3"), "{err}");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_queue_bound_twice_gets_one_copy() {
    let _turn = crate::common::share();
    let v = TestVhost::new("t-traffic-twice");
    v.exchange("x", "topic");
    v.queue("q");
    // Both bindings match every key published below.
    v.bind("x", "q", "orders.*", json!({}));
    v.bind("x", "q", "*.created", json!({}));
    let mut traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["orders.created"]).rate(200).count(200));
    traffic.add_consumer("q", Duration::ZERO);
    assert!(traffic.wait_until_received(200, WAIT), "{}", traffic.report());
    let report = traffic.finish(WAIT);
    report.assert_exactly_once();
    assert_eq!(report.received, 200, "{report}");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn two_bound_queues_each_get_every_message() {
    let _turn = crate::common::share();
    let v = direct("t-traffic-two");
    v.queue("q2");
    v.bind("x", "q2", "k", json!({}));
    let mut traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["k"]).rate(200).count(200));
    traffic.add_consumer("q", Duration::ZERO);
    traffic.add_consumer("q2", Duration::from_millis(2));
    let report = traffic.finish(WAIT);
    // Each number on both queues: exactly once per queue...
    report.assert_exactly_once_per_queue_set(&[&["q"], &["q2"]]);
    assert_eq!(report.per_queue().into_iter().collect::<Vec<_>>(), [("q".into(), 200), ("q2".into(), 200)]);
    // ...so twice over the two together, which the plain check calls out.
    let err = report.check_exactly_once().expect_err("two copies of each");
    assert!(err.contains("200 received more than once on all queues: 1 on [q, q2]"), "{err}");
    let err = report.check_exactly_once_per_queue_set(&[&["q", "q2"]]).expect_err("two copies in one set");
    assert!(err.contains("200 received more than once on q + q2"), "{err}");
    let err = report.check_exactly_once_per_queue_set(&[&["q"]]).expect_err("q2 in no set");
    assert!(err.contains("queue q2 received messages but is in no queue set"), "{err}");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn headers_split_traffic_between_two_queues_exactly_once_across_both() {
    let _turn = crate::common::share();
    let v = TestVhost::new("t-traffic-headers");
    v.exchange("x", "headers");
    v.queue("old");
    v.queue("new");
    v.bind("x", "old", "", json!({"x-match": "all", "kind": "a"}));
    v.bind("x", "new", "", json!({"x-match": "all", "kind": "b"}));
    let publish = Publish::with_headers("x", &[&[("kind", "a")], &[("kind", "b")]]).rate(200).count(100);
    let mut traffic = Traffic::start(&v.amqp_url(), publish);
    traffic.add_consumer("old", Duration::ZERO);
    traffic.add_consumer("new", Duration::ZERO);
    let report = traffic.finish(WAIT);
    // As a migration test asserts over the old and the new queue together.
    report.assert_exactly_once();
    assert_eq!(report.deliveries[&1], ["old"], "{report}");
    assert_eq!(report.deliveries[&2], ["new"], "{report}");
    assert_eq!(report.per_queue().into_iter().collect::<Vec<_>>(), [("new".into(), 50), ("old".into(), 50)]);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_consumer_cancelled_by_the_broker_is_recorded() {
    let _turn = crate::common::share();
    // A reconnecting consumer tries again, and stops when the broker says
    // there is no such queue.
    for reconnecting in [false, true] {
        let v = direct(&format!("t-traffic-cancelled-{reconnecting}"));
        let publish = Publish::new("x", &["k"]).rate(200).count(20);
        let mut traffic = if reconnecting {
            Traffic::start_reconnecting(&v.amqp_url(), publish)
        } else {
            Traffic::start(&v.amqp_url(), publish)
        };
        traffic.add_consumer("q", Duration::ZERO);
        assert!(traffic.wait_until_received(20, WAIT), "{}", traffic.report());
        v.delete_queue("q");
        let deadline = std::time::Instant::now() + WAIT;
        while traffic.report().cancelled.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let report = traffic.finish(WAIT);
        assert_eq!(report.cancelled, ["q"], "reconnecting: {reconnecting}: {report}");
        report.assert_exactly_once();
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_second_publisher_and_a_stuck_consumer_are_counted_apart() {
    let _turn = crate::common::share();
    let v = direct("t-traffic-stuck");
    let mut traffic = Traffic::start(&v.amqp_url(), Publish::new("x", &["k"]).rate(200).count(100));
    // Straight to the queue by name, through the default exchange.
    let by_name = traffic.add_publisher(Publish::new("", &["q"]).rate(100).count(50));
    let stuck = traffic.add_stuck_consumer("q");
    let deadline = std::time::Instant::now() + WAIT;
    while traffic.report().confirmed.len() < 150 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The stuck consumer took them all and records nothing.
    let held = traffic.report();
    assert_eq!((held.sent, held.confirmed.len(), held.received), (150, 150, 0), "{held}");
    assert_eq!(held.lost.len(), 150, "{held}");
    // Closed, it gives them back to the queue, for a consumer that acks.
    traffic.stop_consumer(stuck);
    traffic.add_consumer("q", Duration::ZERO);
    let report = traffic.finish(WAIT);
    report.assert_exactly_once();
    assert_eq!(report.received, 150, "{report}");
    let (main, second) = (report.sent_by(Traffic::MAIN), report.sent_by(by_name));
    assert_eq!((main.len(), second.len()), (100, 50), "{report}");
    assert!(main.is_disjoint(&second), "the publishers' numbers clash");
    assert_eq!(main.union(&second).copied().collect::<Vec<u64>>(), (1..=150).collect::<Vec<u64>>());
}
