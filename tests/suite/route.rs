//! `warren route`: where a message goes by each exchange type, through
//! exchange-to-exchange bindings, alternate exchanges, internal and
//! default exchanges, and where a queue's dead letters go; offline from
//! the files or an export, and read only from a live broker.

use serde_json::Value as Json;

use crate::common::routing::shop;
use crate::common::{Case, Run, warren, warren_env};

/// One vhost with an exchange of each type, an exchange-to-exchange hop,
/// alternate exchanges (one missing), an internal exchange, a plugin's
/// exchange type, and queues that dead-letter for different reasons; after
/// the head all routing tests share ([`shop`]).
const TOPOLOGY: &str = r#"[exchanges.eu]
type = "direct"

[exchanges.events]
type = "fanout"

[exchanges.by-header]
type = "headers"

[exchanges.lost]
type = "direct"
arguments = { alternate-exchange = "nowhere" }

[exchanges.hidden]
type = "fanout"
internal = true

[exchanges.hash]
type = "x-consistent-hash"

[exchanges.dlx]
type = "topic"

[queues."orders.audit"]
type = "classic"
arguments = { x-dead-letter-exchange = "dlx", x-message-ttl = 60000 }

[queues."orders.shipping.eu"]
type = "quorum"
arguments = { x-dead-letter-exchange = "dlx", x-dead-letter-routing-key = "dead.shipping", x-delivery-limit = 5 }

[queues."orders.parked"]
type = "classic"

[queues."orders.dead"]
type = "classic"

[queues."orders.loop"]
type = "classic"
arguments = { x-dead-letter-exchange = "dlx", x-max-length = 10 }

[exchanges.by-reason]
type = "headers"

[queues."orders.sorted"]
type = "classic"
arguments = { x-dead-letter-exchange = "by-reason", x-message-ttl = 1000 }

[[bindings]]
source = "by-reason"
queue = "orders.dead"
arguments = { x-match = "all-with-x", x-first-death-reason = "expired" }

[queues."orders.plain"]
type = "classic"

[queues.hashed]
type = "classic"

[[bindings]]
source = "orders"
queue = "orders.audit"
routing_key = "order.#"

[[bindings]]
source = "orders"
exchange = "eu"
routing_key = "order.*.eu"

[[bindings]]
source = "eu"
queue = "orders.shipping.eu"
routing_key = "order.created.eu"

[[bindings]]
source = "unrouted"
queue = "orders.parked"

[[bindings]]
source = "events"
queue = "orders.audit"

[[bindings]]
source = "events"
queue = "orders.parked"

[[bindings]]
source = "by-header"
queue = "orders.audit"
arguments = { x-match = "all", region = "eu", priority = 1 }

[[bindings]]
source = "by-header"
queue = "orders.parked"
arguments = { x-match = "any", urgent = true, late = true }

[[bindings]]
source = "hidden"
queue = "orders.parked"

[[bindings]]
source = "hash"
queue = "hashed"
routing_key = "1"

[[bindings]]
source = "dlx"
queue = "orders.dead"
routing_key = "dead.#"

[[bindings]]
source = "dlx"
queue = "orders.dead"
routing_key = "order.#"

[[bindings]]
source = "dlx"
queue = "orders.loop"
routing_key = "loop.#"

[[bindings]]
source = "orders"
queue = "orders.loop"
routing_key = "loop.#"
"#;

/// `warren route DIR ARGS` over [`TOPOLOGY`] (written into a fresh
/// directory), with the directory kept alive for the run.
fn route(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("topology.toml"), shop(TOPOLOGY)).unwrap();
    let path = dir.path().display().to_string();
    let mut all = vec!["route", path.as_str()];
    all.extend_from_slice(args);
    warren(&all)
}

/// The JSON document of `warren route ... --format json`, checked against
/// its schema.
fn json(args: &[&str]) -> Json {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let run = route(&all);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: Json = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_schema(&doc);
    doc
}

fn assert_schema(doc: &Json) {
    crate::common::assert_schema(doc, "docs/schema/route.schema.json");
}

/// The last line of the human output.
fn summary(run: &Run) -> &str {
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run.stdout.lines().last().unwrap_or_default()
}

#[test]
fn a_topic_exchange_and_an_exchange_to_exchange_hop() {
    let run = route(&["--exchange", "orders", "--key", "order.created.eu"]);
    assert_eq!(summary(&run), "Reaches orders.audit, orders.shipping.eu.", "{}", run.stdout);
    assert!(
        run.stdout.contains(r#"exchange "orders" -> queue "orders.audit" (binding key "order.#")"#),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(r#"exchange "orders" -> exchange "eu" (binding key "order.*.eu")"#), "{}", run.stdout);
    assert!(
        run.stdout.contains(r#"exchange "eu" -> queue "orders.shipping.eu" (binding key "order.created.eu")"#),
        "{}",
        run.stdout
    );
    let doc = json(&["--exchange", "orders", "--key", "order.created.eu"]);
    assert_eq!(doc["route"]["queues"], serde_json::json!(["orders.audit", "orders.shipping.eu"]));
    assert_eq!(doc["route"]["path"][1]["destination_kind"], "exchange");
    assert_eq!(doc["version_from"], "assumed");
    assert_eq!(doc["version"], "4.0");
}

#[test]
fn a_direct_exchange_takes_its_key_only() {
    let run = route(&["--exchange", "orders", "--key", "order.shipped.eu"]);
    assert_eq!(summary(&run), "Reaches orders.audit.", "{}", run.stdout);
    // `eu` took the message on, and routed it nowhere: said, not hidden.
    assert!(run.stdout.contains(r#"dropped: no binding of exchange "eu" matched"#), "{}", run.stdout);
}

#[test]
fn a_fanout_exchange_takes_every_key() {
    let run = route(&["--exchange", "events", "--key", "anything"]);
    assert_eq!(summary(&run), "Reaches orders.audit, orders.parked.");
    assert!(run.stdout.contains(r#"exchange "events" -> queue "orders.parked" (binding)"#), "{}", run.stdout);
}

#[test]
fn a_headers_exchange_by_typed_headers() {
    let all = route(&["--exchange", "by-header", "--header", "region=eu", "--header", "priority=1"]);
    assert_eq!(summary(&all), "Reaches orders.audit.");
    // A string "1" is not the integer 1.
    let string = route(&["--exchange", "by-header", "--header", "region=eu", "--header", r#"priority:="1""#]);
    assert!(summary(&string).starts_with("Reaches no queue: no binding of exchange \"by-header\" matched"));
    let any = route(&["--exchange", "by-header", "--header", "late=true"]);
    assert_eq!(summary(&any), "Reaches orders.parked.");
    let none = route(&["--exchange", "by-header", "--no-headers"]);
    assert!(summary(&none).starts_with("Reaches no queue"), "{}", none.stdout);
    let unknown = route(&["--exchange", "by-header"]);
    assert_eq!(
        summary(&unknown),
        "Cannot tell where it goes: exchange \"by-header\": it is a headers exchange, and the message's headers are not given."
    );
    let doc = json(&["--exchange", "by-header", "--header", "region=eu", "--header", "priority=1"]);
    assert_eq!(doc["message"]["headers"], serde_json::json!({"priority": 1, "region": "eu"}));
    let bad = route(&["--exchange", "by-header", "--header", "region"]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("give k=v"), "{}", bad.stderr);
}

#[test]
fn an_alternate_exchange_takes_what_no_binding_took() {
    let run = route(&["--exchange", "orders", "--key", "payment.refunded"]);
    assert_eq!(summary(&run), "Reaches orders.parked.");
    assert!(
        run.stdout.contains(r#"exchange "orders" -> alternate exchange "unrouted" (no binding matched)"#),
        "{}",
        run.stdout
    );
    let missing = route(&["--exchange", "lost", "--key", "x"]);
    assert_eq!(
        summary(&missing),
        "Reaches no queue: no binding of exchange \"lost\" matched, and its alternate exchange \"nowhere\" does not exist."
    );
    let doc = json(&["--exchange", "lost", "--key", "x"]);
    assert_eq!(doc["route"]["dropped"][0]["reason"], "alternate_missing");
    assert_eq!(doc["route"]["dropped"][0]["alternate"], "nowhere");
}

#[test]
fn an_internal_exchange_takes_no_client_message() {
    let run = route(&["--exchange", "hidden"]);
    assert_eq!(summary(&run), "Reaches no queue: exchange \"hidden\" is internal: clients cannot publish to it.");
    assert_eq!(json(&["--exchange", "hidden"])["route"]["dropped"][0]["reason"], "internal");
}

#[test]
fn the_default_exchange_routes_to_the_queue_the_key_names() {
    let run = route(&["--exchange", "", "--key", "orders.plain"]);
    assert_eq!(summary(&run), "Reaches orders.plain.");
    assert!(
        run.stdout.contains(r#"the default exchange -> queue "orders.plain" (the key names it)"#),
        "{}",
        run.stdout
    );
    let amq = route(&["--exchange", "amq.default", "--key", "orders.plain"]);
    assert_eq!(summary(&amq), "Reaches orders.plain.");
    let none = route(&["--exchange", "", "--key", "no.such.queue"]);
    assert_eq!(
        summary(&none),
        "Reaches no queue: the default exchange routes by the key to the queue it names: no queue \"no.such.queue\"."
    );
}

#[test]
fn cc_and_bcc_keys_route_with_the_key() {
    let run = route(&["--exchange", "", "--key", "orders.plain", "--cc", "orders.parked", "--bcc", "hashed"]);
    assert_eq!(summary(&run), "Reaches hashed, orders.parked, orders.plain.");
    assert!(run.stdout.contains(r#"CC "orders.parked", BCC "hashed""#), "{}", run.stdout);
}

#[test]
fn a_plugins_exchange_type_cannot_be_told() {
    let run = route(&["--exchange", "hash", "--key", "k"]);
    assert!(summary(&run).starts_with("Cannot tell where it goes: exchange \"hash\": its type `x-consistent-hash`"));
    assert!(json(&["--exchange", "hash"])["route"]["cannot_tell"][0]["why"].as_str().unwrap().contains("plugin"));
}

#[test]
fn dead_letters_by_reason() {
    let run = route(&["--dead-letters", "orders.audit"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(r#"They go to exchange "dlx" with the keys they carried"#), "{}", run.stdout);
    assert!(run.stdout.contains("rejected: a consumer rejects"), "{}", run.stdout);
    assert!(run.stdout.contains("expired: a message outlives its message-ttl 60000 (argument x-message-ttl)"));
    // Its fanout binding takes any key, and a dead letter keeps it: some reach the loop.
    assert!(run.stdout.contains("any key"), "{}", run.stdout);
    assert!(run.stdout.contains("  Reaches orders.dead, orders.loop."), "{}", run.stdout);
    let one = route(&["--dead-letters", "orders.audit", "--key", "order.placed", "--reason", "expired"]);
    assert!(one.stdout.contains("with the keys they carried: key \"order.placed\"."), "{}", one.stdout);
    assert!(one.stdout.ends_with("  Reaches orders.dead.\n"), "{}", one.stdout);
    assert!(run.stdout.contains("Not dead-lettered as:\n  maxlen: it sets no max-length"), "{}", run.stdout);
    assert!(run.stdout.contains("  delivery-limit: only quorum queues have a delivery limit"), "{}", run.stdout);
    // A dead-letter routing key replaces the keys; a quorum queue's delivery limit.
    let quorum = json(&["--dead-letters", "orders.shipping.eu", "--reason", "delivery-limit"]);
    let d = &quorum["dead_letters"];
    assert_eq!(d["routing_key"], "dead.shipping");
    assert_eq!(d["reasons"].as_array().unwrap().len(), 1);
    assert_eq!(d["reasons"][0]["reason"], "delivery_limit");
    assert_eq!(d["reasons"][0]["applies"], true);
    assert_eq!(d["reasons"][0]["route"]["queues"], serde_json::json!(["orders.dead"]));
    // Asked for a reason it does not dead-letter for: why not.
    let expired = route(&["--dead-letters", "orders.shipping.eu", "--reason", "expired"]);
    assert!(expired.stdout.contains("expired: it sets no message-ttl"), "{}", expired.stdout);
    let none = route(&["--dead-letters", "orders.plain", "-q"]);
    assert!(none.stdout.contains("It has no dead-letter exchange"), "{}", none.stdout);
}

#[test]
fn dead_letters_carry_the_headers_of_their_death() {
    let unknown = route(&["--dead-letters", "orders.sorted", "--reason", "expired", "-q"]);
    assert!(
        unknown
            .stdout
            .starts_with("expired: cannot tell where it goes: exchange \"by-reason\": it is a headers exchange"),
        "{}",
        unknown.stdout
    );
    let known = route(&["--dead-letters", "orders.sorted", "--no-headers", "-q"]);
    assert!(known.stdout.contains("expired: reaches orders.dead.\n"), "{}", known.stdout);
    // One message, as it was published.
    let one = route(&[
        "--dead-letters",
        "orders.sorted",
        "--exchange",
        "orders",
        "--key",
        "k",
        "--bcc",
        "b",
        "--header",
        "a=1",
        "--reason",
        "expired",
        "--format",
        "json",
    ]);
    let doc: Json = serde_json::from_str(&one.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", one.stdout, one.stderr));
    assert_schema(&doc);
    assert_eq!(doc["dead_letters"]["keys"][0]["keys"], serde_json::json!(["k", "b"]));
    assert_eq!(doc["dead_letters"]["reasons"][0]["route"]["queues"], serde_json::json!(["orders.dead"]));
    assert!(
        known.stdout.contains("rejected: reaches no queue: no binding of exchange \"by-reason\" matched"),
        "{}",
        known.stdout
    );
}

#[test]
fn a_dead_letter_back_to_its_queue_is_dropped_unless_rejected() {
    let doc = json(&["--dead-letters", "orders.loop", "--key", "loop.x"]);
    let reasons = doc["dead_letters"]["reasons"].as_array().unwrap();
    let of = |r: &str| reasons.iter().find(|x| x["reason"] == r).unwrap().clone();
    assert_eq!(of("rejected")["route"]["queues"], serde_json::json!(["orders.loop"]));
    assert_eq!(of("maxlen")["route"]["queues"], serde_json::json!([]));
    assert_eq!(of("maxlen")["route"]["dropped"][0]["reason"], "cycle");
}

#[test]
fn what_is_not_there_is_an_error_that_says_what_to_do() {
    let run = route(&["--exchange", "order", "--key", "k"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains(r#"no exchange "order" in vhost "shop" of "#), "{}", run.stderr);
    assert!(run.stderr.contains(r#"did you mean "orders"?"#), "{}", run.stderr);
    let vhost = route(&["--vhost", "nope", "--exchange", "orders"]);
    assert_eq!(vhost.code, 1);
    assert!(vhost.stderr.contains(r#"no vhost "nope" in "#) && vhost.stderr.contains(r#""shop""#), "{}", vhost.stderr);
    let queue = route(&["--dead-letters", "orders.audt"]);
    assert_eq!(queue.code, 1);
    assert!(queue.stderr.contains(r#"did you mean "orders.audit"?"#), "{}", queue.stderr);
    let no_url =
        warren_env(&["route", "examples/shop", "--live", "--exchange", "shop.orders"], &[("WARREN_URL", None)]);
    assert_eq!(no_url.code, 1);
    assert!(no_url.stderr.contains("no broker given"), "{}", no_url.stderr);
    let no_env = warren_env(
        &["route", "examples/environments", "--live", "--env", "staging", "--exchange", "x"],
        &[("SHIPMENTS_STAGING_URL", None)],
    );
    assert_eq!(no_env.code, 1);
    assert!(no_env.stderr.contains("$SHIPMENTS_STAGING_URL is not set"), "{}", no_env.stderr);
    let neither = route(&["--key", "k"]);
    assert_eq!(neither.code, 1, "an argument missing: {}", neither.stderr);
}

#[test]
fn quiet_prints_the_answer_alone() {
    let run = route(&["-q", "--exchange", "orders", "--key", "order.created.eu"]);
    assert_eq!(run.stdout, "Reaches orders.audit, orders.shipping.eu.\n");
}

#[test]
fn from_a_definitions_export_and_an_environment() {
    let export = |args: &[&str]| warren(&[&["route", "--state", "tests/definitions/4.x-cluster.json"], args].concat());
    let run = export(&["--vhost", "orders", "--exchange", "orders.events", "--key", "order.placed.pl"]);
    assert_eq!(summary(&run), "Reaches orders.history, orders.invoicing.", "{}", run.stderr);
    assert!(run.stdout.contains("(definitions file tests/definitions/4.x-cluster.json)"), "{}", run.stdout);
    let doc = export(&["--vhost", "orders", "--exchange", "orders.events", "--format", "json"]);
    let doc: Json = serde_json::from_str(&doc.stdout).unwrap();
    assert_schema(&doc);
    assert_eq!((doc["version"].as_str(), doc["version_from"].as_str()), (Some("4.0"), Some("export")));
    let several = export(&["--exchange", "orders.events"]);
    assert_eq!(several.code, 1);
    assert!(several.stderr.contains("holds several vhosts: name one with --vhost"), "{}", several.stderr);
    // An export of one vhost that does not say which: named by --vhost.
    let single =
        |args: &[&str]| warren(&[&["route", "--state", "tests/definitions/3.10-vhost-orders.json"], args].concat());
    let unnamed = single(&["--exchange", "orders.events"]);
    assert_eq!(unnamed.code, 1);
    assert!(unnamed.stderr.contains("name it with --vhost NAME"), "{}", unnamed.stderr);
    let named = single(&["--vhost", "orders", "--exchange", "orders.events", "--key", "order.placed"]);
    assert_eq!(summary(&named), "Reaches orders.audit, orders.invoicing.", "{}", named.stderr);
    let args = ["--exchange", "shipments.events", "--key", "shipment.created"];
    let base = warren(&[&["route", "examples/environments"], &args[..]].concat());
    let staging = warren(&[&["route", "examples/environments", "--env", "staging"], &args[..]].concat());
    assert_eq!(base.code, 0, "{}", base.stderr);
    assert_eq!(staging.code, 0, "{}", staging.stderr);
    // Staging's tap takes a copy of every event: in its vhost, not the base's.
    assert!(!summary(&base).contains("shipments.tap"), "{}", base.stdout);
    assert!(summary(&staging).contains("shipments.tap"), "{}", staging.stdout);
    assert!(staging.stdout.contains(r#"vhost "shipments-staging""#), "{}", staging.stdout);
}

/// Against the broker: the same answer as the files, the broker's version
/// said, and nothing published: every queue holds what it held.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn live_reads_the_broker_and_never_publishes() {
    let case = Case::policymaker("warren-route-live");
    case.topology(
        &shop(TOPOLOGY)
            .replace(r#"vhosts = ["shop"]"#, r#"vhosts = ["{V}"]"#)
            .replace("[exchanges.hash]\ntype = \"x-consistent-hash\"\n", "[exchanges.hash]\ntype = \"direct\"\n"),
    );
    case.apply_ok(&[], &[]);
    case.publish("orders.plain", 3);
    case.publish("orders.audit", 2);
    let before: Vec<Option<u64>> =
        ["orders.plain", "orders.audit", "orders.shipping.eu"].map(|q| case.messages(q)).to_vec();
    let dir = case.path();
    let ask = |extra: &[&str]| {
        let mut all = vec!["route", dir.as_str(), "--live", "--vhost", case.vhost.as_str()];
        all.extend_from_slice(extra);
        case.warren(&all, &[])
    };
    let run = ask(&["--exchange", "orders", "--key", "order.created.eu", "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: Json = serde_json::from_str(&run.stdout).unwrap();
    assert_schema(&doc);
    assert_eq!(doc["route"]["queues"], serde_json::json!(["orders.audit", "orders.shipping.eu"]));
    assert_eq!(doc["version_from"], "broker");
    let (major, minor) = case.broker.version();
    assert_eq!(doc["version"], format!("{major}.{minor}"));
    assert!(doc["source"].as_str().unwrap().starts_with("http"), "{doc}");
    let dead = ask(&["--dead-letters", "orders.audit"]);
    assert_eq!(dead.code, 0, "{}", dead.stderr);
    assert!(dead.stdout.contains("Reaches orders.dead, orders.loop."), "{}", dead.stdout);
    let missing = ask(&["--exchange", "nope"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains(r#"no exchange "nope" in vhost"#), "{}", missing.stderr);
    // The queue totals are fresh for classic queues; quorum ones tick, so wait past a tick.
    std::thread::sleep(std::time::Duration::from_secs(6));
    let after: Vec<Option<u64>> =
        ["orders.plain", "orders.audit", "orders.shipping.eu"].map(|q| case.messages(q)).to_vec();
    assert_eq!(before, after, "warren route published nothing");
    assert_eq!(before[..2], [Some(3), Some(2)]);
}
