//! The AMQP connection (the apply lock, drain readings) reaches the broker
//! of the management API, or warren refuses before it takes the lock.
//!
//! Reads `WARREN_TEST_URL` / `WARREN_TEST_AMQP_URL` (the home node) and
//! `WARREN_TEST_RESTART_URL` / `WARREN_TEST_RESTART_AMQP_URL` (another
//! private node, a different broker) as `scripts/test` sets them; fails
//! without.

use crate::common::{Case, Run, TestBroker};
use serde_json::Value as Json;

/// What an apply could change: every definition and global parameter.
fn state(broker: &TestBroker) -> (Json, Json) {
    let mut defs = broker.definitions();
    // The broker's own fields, not warren's doing.
    for k in ["rabbit_version", "rabbitmq_version", "product_name", "product_version"] {
        defs.as_object_mut().unwrap().remove(k);
    }
    (defs, broker.get("global-parameters"))
}

fn cluster_name(broker: &TestBroker) -> String {
    broker.get("overview")["cluster_name"].as_str().expect("the overview names the cluster").to_string()
}

fn no_password(run: &Run) {
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains(":guest@"), "a password was shown:\n{text}");
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn an_amqp_url_of_another_broker_is_refused_and_neither_broker_changes() {
    // It compares whole brokers before and after: alone on the node.
    let case = Case::admin("t-amqp-other-broker");
    let home = &case.broker;
    let other = TestBroker::from_vars("WARREN_TEST_RESTART_");
    let other_amqp = other.amqp().expect("WARREN_TEST_RESTART_AMQP_URL is set").to_string();
    let (home_name, other_name) = (cluster_name(home), cluster_name(&other));
    assert_ne!(home_name, other_name, "the two test nodes must have distinct cluster names");
    case.topology("vhosts = [\"{V}\"]\n[queues.q]\ntype = \"classic\"\n");
    let path = case.path();
    let before = (state(home), state(&other));

    let env = [("WARREN_AMQP_URL", Some(other_amqp.as_str()))];
    for args in [vec!["apply", path.as_str(), "--auto-approve"], vec!["abort", "1", "--auto-approve"]] {
        let run = case.warren(&args, &env);
        let said = &run.stderr;
        assert_eq!(run.code, 1, "{args:?}\n{}\n{}", run.stdout, run.stderr);
        assert!(said.contains(&format!("\"{home_name}\"")), "{args:?}: {said}");
        assert!(said.contains(&format!("\"{other_name}\"")), "{args:?}: {said}");
        assert!(said.contains("different brokers"), "{args:?}: {said}");
        assert!(said.contains("Nothing was changed"), "{args:?}: {said}");
        no_password(&run);
    }

    assert!(state(home) == before.0, "the management API's broker changed");
    assert!(state(&other) == before.1, "the AMQP URL's broker changed");
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn without_an_amqp_url_the_broker_s_own_listener_is_used() {
    // It compares whole brokers before and after: alone on the node.
    let case = Case::admin("t-amqp-default-listener");
    let no_amqp_url = [("WARREN_AMQP_URL", None)];
    let before = "[exchanges.x]\ntype = \"direct\"\n[queues.old]\ntype = \"classic\"\n\
                  [[bindings]]\nsource = \"x\"\nqueue = \"old\"\nrouting_key = \"k\"\n";
    case.topology(&format!("vhosts = [\"{{V}}\"]\n{before}"));
    let first = case.apply(&[], &no_amqp_url);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);

    // A live migration: the lock and the drain readings both need AMQP.
    let after = "[exchanges.x]\ntype = \"direct\"\n[queues.new]\ntype = \"quorum\"\nreplaces = \"old\"\n\
                 [[bindings]]\nsource = \"x\"\nqueue = \"new\"\nrouting_key = \"k\"\n";
    case.topology(&format!("vhosts = [\"{{V}}\"]\n{after}"));
    let migrated = case.apply(&[], &no_amqp_url);
    assert_eq!(migrated.code, 0, "{}\n{}", migrated.stdout, migrated.stderr);
    no_password(&migrated);
    assert!(case.exists("queues/{V}/new"));
    assert!(!case.exists("queues/{V}/old"));
}
