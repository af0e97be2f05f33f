//! `warren lint --live` against the private test broker: the shared-queue
//! incident reproduced (two services reading one queue), found in the files
//! and on the broker, and ended by the fix lint prints; and the broker's
//! version raising a rule.

use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::common::traffic::{Traffic, amqp_url_on};
use crate::common::{Case, TestBroker, seg};

const VHOST: &str = "warren-lint-shared";
const USERS: [&str; 2] = ["lint-audit", "lint-billing"];

/// The findings of `warren lint ARGS --format json` of one code.
fn of_code(broker: &TestBroker, args: &[&str], code: &str) -> Vec<Json> {
    let mut all = vec!["lint"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let run = broker.warren(&all, &[]);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    let doc: Json = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    doc["findings"].as_array().unwrap().iter().filter(|f| f["code"] == code).cloned().collect()
}

/// Polls `lint --live` until `done` holds of its findings of `code` (or
/// 30 s pass): the broker lists a new or cancelled consumer within moments.
fn live_until(broker: &TestBroker, dir: &str, code: &str, done: impl Fn(&[Json]) -> bool) -> Vec<Json> {
    let start = Instant::now();
    loop {
        let found = of_code(broker, &[dir, "--live"], code);
        if done(&found) || start.elapsed() > Duration::from_secs(30) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

const TOPOLOGY: &str = r#"vhosts = ["warren-lint-shared"]

[exchanges.orders]
type = "topic"

[queues."orders.created"]
type = "quorum"
lint_allow = ["quorum-without-dlx"]

[[bindings]]
source = "orders"
queue = "orders.created"
routing_key = "order.created"

[queues."orders.audit"]
type = "quorum"
lint_allow = ["quorum-without-dlx"]

[[bindings]]
source = "orders"
queue = "orders.audit"
routing_key = "order.#"
"#;

const USERS_FILE: &str = r#"[users.lint-audit]
password_env = "LINT_AUDIT_PASSWORD"

[users.lint-billing]
password_env = "LINT_BILLING_PASSWORD"
"#;

const PERMISSIONS: &str = r#"vhosts = ["warren-lint-shared"]

[permissions.lint-audit]
configure = "^$"
write = "^$"
read = "^orders\\."

[permissions.lint-billing]
configure = "^$"
write = "^$"
read = "^orders\\.created$"
"#;

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_shared_queue_incident_is_found_in_the_files_and_on_the_broker_and_the_printed_fix_ends_it() {
    let case = Case::admin(VHOST).with_users(&USERS);
    let broker = &case.broker;
    let path = case.path();
    case.file("shop.toml", TOPOLOGY);
    case.file("users.toml", USERS_FILE);
    case.file("permissions.toml", PERMISSIONS);
    let passwords = [("LINT_AUDIT_PASSWORD", Some("audit-secret")), ("LINT_BILLING_PASSWORD", Some("billing-secret"))];
    case.apply_ok(&[], &passwords);

    // In the files: both users may read the queue.
    let found = of_code(broker, &[&path], "shared-queue");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["file"], format!("{path}/shop.toml"));
    assert_eq!(found[0]["line"], 6);
    assert!(found[0]["message"].as_str().unwrap().contains("\"lint-audit\", \"lint-billing\""), "{found:?}");

    // On the broker: a consumer under each user.
    let base = broker.amqp().expect("WARREN_TEST_AMQP_URL is set").to_string();
    let as_user = |user: &str, password: &str| {
        let mut url = url::Url::parse(&amqp_url_on(&base, VHOST)).unwrap();
        url.set_username(user).unwrap();
        url.set_password(Some(password)).unwrap();
        url.to_string()
    };
    let mut audit = Traffic::consumers(&as_user("lint-audit", "audit-secret"));
    audit.add_consumer("orders.created", Duration::ZERO);
    // Audit also reads a queue of its own, which the fix must leave it.
    audit.add_consumer("orders.audit", Duration::ZERO);
    let mut billing = Traffic::consumers(&as_user("lint-billing", "billing-secret"));
    let billing_old = billing.add_consumer("orders.created", Duration::ZERO);
    let consumed = |f: &Json| f["message"].as_str().unwrap().contains("is consumed by");
    let live = live_until(broker, &path, "shared-queue", |f| f.iter().any(consumed));
    let on_broker: Vec<&Json> = live.iter().filter(|f| consumed(f)).collect();
    assert_eq!(on_broker.len(), 1, "{live:?}");
    let message = on_broker[0]["message"].as_str().unwrap();
    assert!(message.contains("user \"lint-audit\"") && message.contains("user \"lint-billing\""), "{message}");
    // At the queue's declaration: the files declare it.
    assert_eq!(on_broker[0]["line"], 6, "{on_broker:?}");

    // The printed fix: a queue of its own for billing, and each user
    // reading its own queue only.
    let help = on_broker[0]["help"].as_str().unwrap();
    let (add, permissions) = help
        .split_once("# put in place of these users' [permissions]:\n")
        .unwrap_or_else(|| panic!("the fix says which permissions to replace: {help}"));
    assert!(permissions.contains(r"orders\.audit"), "audit keeps the queue it consumes: {permissions}");
    let add = add.split_once("# add to the files:\n").unwrap().1;
    assert!(add.contains("[queues.\"orders.created.lint-billing\"]"), "{add}");
    case.file("fix.toml", &format!("vhosts = [\"{VHOST}\"]\n\n{add}"));
    case.file("permissions.toml", &format!("vhosts = [\"{VHOST}\"]\n\n{permissions}"));
    // Each user then reads its own queue only: access taken, so asked for.
    case.apply_ok(&["--allow-destroy"], &passwords);
    billing.stop_consumer(billing_old);
    billing.add_consumer("orders.created.lint-billing", Duration::ZERO);
    // Under the new permissions, audit still may consume its own queue.
    audit.try_add_consumer("orders.audit", Duration::ZERO, 10).expect("the fix leaves audit its own queue");

    assert_eq!(of_code(broker, &[&path], "shared-queue"), Vec::<Json>::new());
    let live = live_until(broker, &path, "shared-queue", |f| f.is_empty());
    assert!(live.is_empty(), "{live:?}");
    drop((audit, billing));
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_brokers_version_sets_the_severity_of_version_rules() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let version = broker.version();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("shop.toml"),
        "vhosts = [\"warren-lint-version\"]\n\n[queues.orders]\ntype = \"quorum\"\n",
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    let offline = of_code(&broker, &[path], "quorum-without-dlx");
    assert_eq!(offline[0]["severity"], "warning");
    let live = of_code(&broker, &[path, "--live"], "quorum-without-dlx");
    // Before 4.0 quorum queues have no delivery limit: nothing is dropped.
    let expected = if version < (4, 0) { "info" } else { "warning" };
    assert_eq!(live[0]["severity"], expected, "{live:?}");
    let deprecated = of_code(&broker, &[path, "--live"], "deprecated-feature-used");
    if version < (3, 13) {
        assert_eq!(deprecated.len(), 1, "{deprecated:?}");
        assert!(deprecated[0]["message"].as_str().unwrap().contains("cannot list the deprecated features"));
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_quorum_queue_replacing_a_priority_queue_is_found_at_its_replaces() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let vhost = crate::common::traffic::TestVhost::new("warren-lint-priority");
    broker.put(
        &format!("queues/{}/jobs", seg(&vhost.name)),
        serde_json::json!({"durable": true, "arguments": {"x-max-priority": 10}}),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jobs.toml"),
        "vhosts = [\"warren-lint-priority\"]\n\n[queues.\"jobs.v2\"]\ntype = \"quorum\"\nreplaces = \"jobs\"\nlint_allow = [\"quorum-without-dlx\"]\n",
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    assert_eq!(of_code(&broker, &[path], "priority-on-quorum"), Vec::<Json>::new(), "the files alone cannot tell");
    let found = of_code(&broker, &[path, "--live"], "priority-on-quorum");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["line"], 5);
    let message = found[0]["message"].as_str().unwrap();
    if broker.version() < (4, 0) {
        assert!(message.contains("quorum queues ignore message priorities"), "{message}");
    } else {
        assert!(message.contains("two: normal (0 to 4) and high"), "{message}");
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_consumed_queue_no_project_owns_is_found_until_the_files_say_whose_it_is() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let vhost = crate::common::traffic::TestVhost::new("warren-lint-unmanaged");
    vhost.queue("jobs");
    vhost.queue("idle");
    let mut traffic = Traffic::consumers(&vhost.amqp_url());
    traffic.add_consumer("jobs", Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shop.toml");
    std::fs::write(&file, "vhosts = [\"warren-lint-unmanaged\"]\n").unwrap();
    let path = dir.path().to_str().unwrap();
    let found = live_until(&broker, path, "unmanaged-consumer-queue", |f| !f.is_empty());
    // The consumed one, not the idle one.
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("queue \"jobs\" in vhost \"warren-lint-unmanaged\" has 1 consumer(s)"),
        "{found:?}"
    );
    std::fs::write(&file, "vhosts = [\"warren-lint-unmanaged\"]\n\n[external]\nqueues = [\"jobs\"]\n").unwrap();
    assert_eq!(of_code(&broker, &[path, "--live"], "unmanaged-consumer-queue"), Vec::<Json>::new());
    drop(traffic);
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_deprecated_feature_in_use_is_named_where_the_broker_can_say() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    if broker.version() < (3, 13) {
        return; // the_brokers_version_sets_the_severity_of_version_rules covers what 3.10 says
    }
    let vhost = crate::common::traffic::TestVhost::new("warren-lint-deprecated");
    broker.put(&format!("queues/{}/transient", seg(&vhost.name)), serde_json::json!({"durable": false}));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shop.toml"), "vhosts = [\"warren-lint-deprecated\"]\n").unwrap();
    let found = of_code(&broker, &[dir.path().to_str().unwrap(), "--live"], "deprecated-feature-used");
    assert!(
        found.iter().any(|f| f["message"].as_str().unwrap().contains("\"transient_nonexcl_queues\" in use")),
        "{found:?}"
    );
}
