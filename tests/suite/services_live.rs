//! The services' contract checked on a live broker (`warren lint --live`):
//! a consumer of a service's queue from a user no service consuming it
//! connects as, a service's user publishing to an exchange its services do
//! not declare, and a service with no connection, each found with the user
//! and connection named, from real AMQP clients.

use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

use crate::common::traffic::{Publish, Traffic, amqp_url_on};
use crate::common::{Case, seg};

const SHOP: &str = r##"
vhosts = ["{V}"]

[exchanges."shop.orders"]
type = "topic"

[exchanges."shop.audit"]
type = "fanout"

[queues."billing.orders"]
[queues."audit.all"]

[[bindings]]
source = "shop.orders"
queue = "billing.orders"
routing_key = "order.placed"

[[bindings]]
source = "shop.audit"
queue = "audit.all"

[users."t-live-shop"]
password_env = "T_LIVE_SHOP_PW"
[users."t-live-billing"]
password_env = "T_LIVE_BILLING_PW"
[users."t-live-idle"]
password_env = "T_LIVE_IDLE_PW"

[services.storefront]
user = "t-live-shop"
publishes = [{ exchange = "shop.orders", keys = ["order.placed"] }]

[services.billing]
user = "t-live-billing"
consumes = ["billing.orders"]

[services.reports]
user = "t-live-idle"
consumes = ["audit.all"]
lint_allow = ["consumer-unreachable"]
"##;

const USERS: [&str; 4] = ["t-live-shop", "t-live-billing", "t-live-idle", "t-live-intruder"];
const PASSWORDS: [&str; 4] = ["live-shop-pw-3", "live-billing-pw-3", "live-idle-pw-3", "live-intruder-pw-3"];

/// `warren lint DIR --live --format json`'s findings of the services' live
/// codes, polled until `done` holds of them or 30 s pass: the management
/// statistics list a new connection, consumer or publish within one
/// statistics interval (5 s by default).
fn live_findings(case: &Case, done: impl Fn(&[Json]) -> bool) -> Vec<Json> {
    let path = case.path();
    let start = Instant::now();
    loop {
        let run = case.warren(&["lint", &path, "--live", "--format", "json"], &[]);
        assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
        let doc: Json =
            serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
        let codes = ["foreign-consumer", "publish-undeclared", "service-idle"];
        let found: Vec<Json> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| codes.iter().any(|c| f["code"] == *c))
            .cloned()
            .collect();
        if done(&found) || start.elapsed() > Duration::from_secs(30) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn of<'a>(found: &'a [Json], code: &str) -> Vec<&'a Json> {
    found.iter().filter(|f| f["code"] == code).collect()
}

fn message(f: &Json) -> &str {
    f["message"].as_str().unwrap()
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn lint_live_names_the_foreign_consumer_the_undeclared_publisher_and_the_idle_service() {
    let case = Case::admin("t-services-live").with_users(&USERS);
    for (var, pw) in ["T_LIVE_SHOP_PW", "T_LIVE_BILLING_PW", "T_LIVE_IDLE_PW"].iter().zip(PASSWORDS) {
        case.set_env(var, Some(pw));
    }
    case.topology(SHOP);
    case.apply_ok(&[], &[]);
    let v = seg(&case.vhost);
    // Drift, as before the generated permissions are applied: billing's
    // user may write anywhere, and a user the files do not know may read.
    let all = json!({"configure": "^$", "write": ".*", "read": ".*"});
    case.broker.put(&format!("permissions/{v}/t-live-billing"), all.clone());
    case.broker.put("users/t-live-intruder", json!({"password": PASSWORDS[3], "tags": ""}));
    case.broker.put(&format!("permissions/{v}/t-live-intruder"), all);
    let detailed = case.broker.get("overview")["rates_mode"] == "detailed";

    let as_user = |i: usize| {
        let base = case.amqp().replacen("guest:guest@", &format!("{}:{}@", USERS[i], PASSWORDS[i]), 1);
        amqp_url_on(&base, &case.vhost)
    };
    let storefront = Traffic::start(&as_user(0), Publish::new("shop.orders", &["order.placed"]).rate(20));
    let mut billing = Traffic::consumers(&as_user(1));
    billing.add_consumer("billing.orders", Duration::ZERO);
    billing.add_publisher(Publish::new("shop.audit", &[""]).rate(20));
    let mut intruder = Traffic::consumers(&as_user(3));
    intruder.add_consumer("billing.orders", Duration::ZERO);

    let found = live_findings(&case, |f| {
        let idle = of(f, "service-idle");
        !of(f, "foreign-consumer").is_empty()
            && of(f, "publish-undeclared").iter().any(|d| message(d).contains("t-live-billing"))
            && idle.len() == 1
            && message(idle[0]).contains("\"reports\"")
    });
    let topology = case.path_of("topology.toml");

    let foreign = of(&found, "foreign-consumer");
    assert_eq!(foreign.len(), 1, "{found:#?}");
    let m = message(foreign[0]);
    for part in [
        "queue \"billing.orders\"",
        "user \"t-live-intruder\", of no service",
        "\"warren-traffic consumer billing.orders\" (127.0.0.1:",
        "service \"billing\" (user \"t-live-billing\")",
    ] {
        assert!(m.contains(part), "{part} is not in: {m}");
    }
    assert_eq!(foreign[0]["severity"], "warning");
    // At billing's `consumes` entry.
    assert_eq!((foreign[0]["file"].as_str(), foreign[0]["line"].as_u64()), (Some(topology.as_str()), Some(35)));

    // The files say who reads the queue: the broker's `shared-queue` of
    // two users leaves it to `foreign-consumer`.
    let shared = case.warren(&["lint", &case.path(), "--live", "--format", "json"], &[]);
    let shared: Json = serde_json::from_str(&shared.stdout).unwrap();
    let shared: Vec<&Json> =
        shared["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "shared-queue").collect();
    assert!(shared.is_empty(), "{shared:#?}");

    let published = of(&found, "publish-undeclared");
    let located: Vec<&&Json> = published.iter().filter(|f| !f["line"].is_null()).collect();
    assert_eq!(located.len(), 1, "one finding, billing's user: {found:#?}");
    let m = message(located[0]);
    assert!(m.contains("user \"t-live-billing\" of service \"billing\""), "{m}");
    assert!(m.contains("\"warren-traffic publisher 0\" (127.0.0.1:"), "{m}");
    let note: Vec<&&Json> = published.iter().filter(|f| f["line"].is_null()).collect();
    if detailed {
        assert!(m.contains("exchange \"shop.audit\""), "{m}");
        assert!(note.is_empty(), "{note:?}");
    } else {
        // The broker says that billing's user published, not where: enough
        // for a service that declares no publish at all. Said once.
        assert!(m.contains("exchanges the broker does not name") && m.contains("message(s)"), "{m}");
        assert_eq!(note.len(), 1, "{found:#?}");
        assert_eq!(note[0]["severity"], "info");
        assert!(message(note[0]).contains("management.rates_mode"), "{note:?}");
    }

    let idle = of(&found, "service-idle");
    assert_eq!(idle.len(), 1, "{found:#?}");
    assert!(message(idle[0]).contains("service \"reports\" (user \"t-live-idle\") has no connection"), "{idle:?}");
    assert_eq!(idle[0]["severity"], "info");

    // Once the intruder and billing's publisher stop, and billing's user
    // is back to its generated permissions, only the idle service is left.
    drop(intruder);
    drop(billing);
    // Putting billing's permissions back takes what was given by hand.
    case.apply_ok(&["--allow-destroy"], &[]);
    let mut billing = Traffic::consumers(&as_user(1));
    billing.add_consumer("billing.orders", Duration::ZERO);
    let found = live_findings(&case, |f| {
        let located: Vec<&Json> = f.iter().filter(|d| !d["line"].is_null()).collect();
        located.len() == 1 && message(located[0]).contains("\"reports\"")
    });
    let located: Vec<&Json> = found.iter().filter(|d| !d["line"].is_null()).collect();
    assert_eq!(located.len(), 1, "{found:#?}");
    assert_eq!(located[0]["code"], "service-idle");
    assert!(message(located[0]).contains("\"reports\""), "{found:#?}");
    drop((storefront, billing));
}
