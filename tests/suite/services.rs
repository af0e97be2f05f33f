//! Services against a real broker: each service's user, with the
//! permissions warren made from the files, can do what its service
//! declares over AMQP and is refused (ACCESS_REFUSED) everything else.

use lapin::options::{BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection, ConnectionProperties};

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::common::Case;
use crate::common::traffic::{Publish, Traffic, amqp_url_on};

const SHOP: &str = r##"
vhosts = ["{V}"]

[exchanges."shop.orders"]
type = "topic"

[exchanges."shop.audit"]
type = "fanout"

[exchanges."shop.match"]
type = "headers"

[queues."billing.orders"]
[queues."shipping.orders"]
[queues."audit.all"]
[queues."fraud.checks"]

[[bindings]]
source = "shop.orders"
queue = "billing.orders"
routing_key = "order.placed"

[[bindings]]
source = "shop.orders"
queue = "shipping.orders"
routing_key = "order.*"

[[bindings]]
source = "shop.audit"
queue = "audit.all"

[[bindings]]
source = "shop.match"
queue = "fraud.checks"
arguments = { x-match = "all", risk = "high" }

[users."t-svc-shop"]
password_env = "T_SVC_SHOP_PW"
[users."t-svc-billing"]
password_env = "T_SVC_BILLING_PW"
[users."t-svc-shipping"]
password_env = "T_SVC_SHIPPING_PW"
[users."t-svc-fraud"]
password_env = "T_SVC_FRAUD_PW"

[services.storefront]
user = "t-svc-shop"
publishes = [{ exchange = "shop.orders", keys = ["order.placed", "order.cancelled"] }, { exchange = "shop.audit" }]

[services.billing]
user = "t-svc-billing"
consumes = ["billing.orders"]
declares = { server_named = true }

[services.shipping]
user = "t-svc-shipping"
consumes = ["shipping.orders"]
declares = { prefixes = ["shipping.tmp."] }

[services.fraud]
user = "t-svc-fraud"
consumes = ["audit.all"]
publishes = [{ exchange = "shop.match", headers = [{ risk = "high" }] }]
"##;

/// What a user tried over AMQP.
enum Try<'a> {
    Publish { exchange: &'a str, key: &'a str, headers: bool },
    Consume(&'a str),
    Declare(&'a str),
}

/// `Ok` when the broker let `user` do it; the broker's reason otherwise.
fn attempt(url: &str, t: &Try) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let connection = Connection::connect(url, ConnectionProperties::default()).await.map_err(|e| e.to_string())?;
        let channel = connection.create_channel().await.map_err(|e| e.to_string())?;
        let done = match t {
            Try::Publish { exchange, key, headers } => {
                channel.confirm_select(ConfirmSelectOptions::default()).await.map_err(|e| e.to_string())?;
                let mut properties = BasicProperties::default();
                if *headers {
                    let mut h = FieldTable::default();
                    h.insert("risk".into(), AMQPValue::LongString("high".into()));
                    properties = properties.with_headers(h);
                }
                let options = BasicPublishOptions::default();
                match channel.basic_publish((*exchange).into(), (*key).into(), options, b"m", properties).await {
                    Ok(confirm) => confirm.await.map(|_| ()).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }
            Try::Consume(q) => {
                let options = BasicConsumeOptions::default();
                channel
                    .basic_consume((*q).into(), "t".into(), options, FieldTable::default())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            Try::Declare(q) => {
                let options = QueueDeclareOptions { exclusive: true, ..QueueDeclareOptions::default() };
                channel
                    .queue_declare((*q).into(), options, FieldTable::default())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        };
        let _ = connection.close(200, "OK".into()).await;
        done
    })
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn each_service_user_may_do_what_its_service_declares_and_nothing_else() {
    let users = ["t-svc-shop", "t-svc-billing", "t-svc-shipping", "t-svc-fraud"];
    let mut case = Case::admin("t-services").with_users(&users);
    let passwords = ["svc-shop-pw-7", "svc-billing-pw-7", "svc-shipping-pw-7", "svc-fraud-pw-7"];
    case.secrets = passwords.iter().map(|p| p.to_string()).collect();
    for (var, pw) in ["T_SVC_SHOP_PW", "T_SVC_BILLING_PW", "T_SVC_SHIPPING_PW", "T_SVC_FRAUD_PW"].iter().zip(passwords)
    {
        case.set_env(var, Some(pw));
    }
    case.topology(SHOP);
    let plan = case.plan(&[], &[]);
    assert!(plan.stdout.contains("# made for services \"storefront\""), "{}", plan.stdout);
    case.apply_ok(&[], &[]);
    assert_eq!(case.plan(&["--detailed-exitcode"], &[]).code, 0, "converged");

    let as_user = |i: usize| {
        let base = case.amqp().replacen("guest:guest@", &format!("{}:{}@", users[i], passwords[i]), 1);
        amqp_url_on(&base, &case.vhost)
    };
    let publish = |exchange, key| Try::Publish { exchange, key, headers: false };
    let allowed: Vec<(usize, Try)> = vec![
        (0, publish("shop.orders", "order.placed")),
        (0, publish("shop.orders", "order.cancelled")),
        (0, publish("shop.audit", "")),
        (1, Try::Consume("billing.orders")),
        (1, Try::Declare("")),
        (2, Try::Consume("shipping.orders")),
        (2, Try::Declare("shipping.tmp.one")),
        (3, Try::Consume("audit.all")),
        (3, Try::Publish { exchange: "shop.match", key: "", headers: true }),
    ];
    for (i, t) in &allowed {
        if let Err(e) = attempt(&as_user(*i), t) {
            panic!("{} was refused what its service declares: {e}", users[*i]);
        }
    }
    let refused: Vec<(usize, Try)> = vec![
        (0, publish("shop.orders", "order.refunded")),
        (0, publish("shop.match", "")),
        (0, publish("", "billing.orders")),
        (0, Try::Consume("billing.orders")),
        (0, Try::Declare("shop.mine")),
        (1, Try::Consume("shipping.orders")),
        (1, Try::Declare("billing.mine")),
        (1, publish("shop.orders", "order.placed")),
        (2, Try::Declare("other.tmp.one")),
        (2, Try::Consume("billing.orders")),
        (3, publish("shop.audit", "")),
        (3, Try::Consume("fraud.checks")),
    ];
    for (i, t) in &refused {
        match attempt(&as_user(*i), t) {
            Ok(()) => panic!("{} was let do what no service of its declares", users[*i]),
            Err(e) => assert!(e.contains("ACCESS_REFUSED") || e.contains("403"), "{}: {e}", users[*i]),
        }
    }
    // The topic permission narrowed the key, not the exchange: the
    // storefront's allowed messages arrived.
    assert!(case.messages("billing.orders").is_some());
    // The headers the fraud service declares reach the queue lint says
    // they reach: its one message rests there.
    assert_eq!(case.messages("fraud.checks"), Some(1));
}

/// The incident the services' `shared-queue` rule is for: a second
/// service pointed at an existing queue "to also receive the events".
const SHARED: &str = r##"
vhosts = ["{V}"]

[exchanges."shop.orders"]
type = "topic"

[queues."orders.created"]
type = "classic"

[[bindings]]
source = "shop.orders"
queue = "orders.created"
routing_key = "order.*"

[users."t-shq-shop"]
password_env = "T_SHQ_SHOP_PW"
[users."t-shq-billing"]
password_env = "T_SHQ_BILLING_PW"
[users."t-shq-audit"]
password_env = "T_SHQ_AUDIT_PW"

[services.storefront]
user = "t-shq-shop"
publishes = [{ exchange = "shop.orders", keys = ["order.created", "order.paid"] }]

[services.audit]
user = "t-shq-audit"
consumes = ["orders.created"]

[services.billing]
user = "t-shq-billing"
consumes = ["orders.created"]
"##;

/// Messages the storefront publishes in each run.
const N: u64 = 200;

/// The fix that `warren lint` prints for the shared queue, as the help of
/// its `shared-queue` finding says it: the TOML to add, and the services'
/// new `consumes` tables. Each of its lines is also in the human output.
fn printed_fix(case: &Case) -> (toml::Table, toml::Table) {
    let path = case.path();
    let human = case.warren_as_printed(&["lint", &path], &[]);
    assert_eq!(human.code, 1, "the shared queue is an error:\n{}\n{}", human.stdout, human.stderr);
    let json = case.warren(&["lint", &path, "--format", "json"], &[]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.stdout));
    let findings = doc["findings"].as_array().unwrap();
    let codes: Vec<&str> = findings.iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["shared-queue"], "{}", json.stdout);
    let help = findings[0]["help"].as_str().unwrap();
    let shown = format!("{}{}", human.stdout, human.stderr);
    for line in help.lines().skip(1).filter(|l| !l.is_empty()) {
        assert!(shown.lines().any(|s| s.trim() == line.trim()), "{line:?} is not printed:\n{shown}");
    }
    let (_, fix) = help.split_once("# add to the files:\n").expect("the fix's first part");
    let toml = format!("# add to the files:\n{fix}");
    let laid_out = warren::format::format(&toml, warren::format::FileKind::Topology).expect("the fix is TOML");
    assert_eq!(toml, laid_out, "the printed fix is in `warren fmt`'s layout");
    let (add, put) = fix.split_once("# and put in place of these services' `consumes`:\n").expect("its second");
    let parse =
        |text: &str| text.parse::<toml::Table>().unwrap_or_else(|e| panic!("the printed fix is TOML: {e}\n{text}"));
    (parse(add), parse(put))
}

/// `into` with `add` added: tables merged, arrays (of tables) extended.
fn merge(into: &mut toml::Table, add: toml::Table) {
    for (k, v) in add {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(t)), toml::Value::Table(a)) => merge(t, a),
            (Some(toml::Value::Array(list)), toml::Value::Array(a)) => list.extend(a),
            (Some(old), v) => panic!("the fix would change {k} from {old} to {v}"),
            (None, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// The topology file with the printed fix applied: its additions added,
/// and each service it names given the `consumes` it prints.
fn apply_fix(case: &Case, add: toml::Table, put: toml::Table) {
    let file = std::path::Path::new(&case.path()).join("topology.toml");
    let mut topology: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    merge(&mut topology, add);
    let services = topology["services"].as_table_mut().unwrap();
    for (name, table) in put["services"].as_table().expect("[services.NAME] tables") {
        let consumes = table["consumes"].clone();
        services[name].as_table_mut().unwrap().insert("consumes".into(), consumes);
    }
    std::fs::write(&file, toml::to_string(&topology).unwrap()).unwrap();
}

/// Runs a consumer for each (user, password, queue), each over its own
/// connection as that user, then publishes [`N`] messages as `publisher`
/// with the keys its service declares, in turn; returns, for each consumer,
/// how many copies of each message number it received. Waits for the
/// consumers to be registered (consume-ok) before publishing, and for
/// `enough` of the counts (bounded) before a quiet second and the end.
fn deliver(
    case: &Case,
    publisher: (&str, &str),
    consumers: &[(&str, &str, &str)],
    enough: impl Fn(&[u64]) -> bool,
) -> Vec<BTreeMap<u64, usize>> {
    let url = |user: &str, pw: &str| {
        amqp_url_on(&case.amqp().replacen("guest:guest@", &format!("{user}:{pw}@"), 1), &case.vhost)
    };
    let mut readers: Vec<Traffic> = Vec::new();
    for (user, pw, queue) in consumers {
        let mut t = Traffic::consumers(&url(user, pw));
        t.add_consumer(queue, Duration::ZERO);
        readers.push(t);
    }
    let topology: toml::Table = std::fs::read_to_string(case.path_of("topology.toml")).unwrap().parse().unwrap();
    let publish = &topology["services"]["storefront"]["publishes"][0];
    let keys: Vec<&str> = publish["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    let exchange = publish["exchange"].as_str().unwrap();
    let mut sending = Traffic::start(&url(publisher.0, publisher.1), Publish::new(exchange, &keys).count(N).rate(1000));
    // Every message answered; no consumer of its own to wait for.
    sending.wait_published();
    sending.stop_publishing();
    let sent = sending.report();
    assert_eq!(sent.confirmed.len() as u64, N, "every message confirmed: {:?}", sent.errors);
    assert!(sent.returned.is_empty() && sent.nacked.is_empty() && sent.errors.is_empty(), "{:?}", sent.errors);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !enough(&readers.iter().map(|t| t.report().deliveries.len() as u64).collect::<Vec<_>>())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    readers
        .into_iter()
        .map(|t| {
            let report = t.finish(Duration::from_secs(10));
            assert!(report.errors.is_empty() && report.cancelled.is_empty(), "{:?}", report.errors);
            report.deliveries.into_iter().map(|(n, copies)| (n, copies.len())).collect()
        })
        .collect()
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn two_services_on_one_queue_split_its_messages_and_the_printed_fix_gives_each_every_one() {
    let users = ["t-shq-shop", "t-shq-billing", "t-shq-audit"];
    let passwords = ["shq-shop-pw-7", "shq-billing-pw-7", "shq-audit-pw-7"];
    let mut case = Case::admin("t-shared-queue").with_users(&users);
    case.secrets = passwords.iter().map(|p| p.to_string()).collect();
    for (var, pw) in ["T_SHQ_SHOP_PW", "T_SHQ_BILLING_PW", "T_SHQ_AUDIT_PW"].iter().zip(passwords) {
        case.set_env(var, Some(pw));
    }
    case.topology(SHARED);
    let (add, put) = printed_fix(&case);

    // The incident: the error allowed, both services on the one queue.
    let allowed = "[queues.\"orders.created\"]\ntype = \"classic\"\nlint_allow = [\"shared-queue\"]\n";
    case.topology(&SHARED.replace("[queues.\"orders.created\"]\ntype = \"classic\"\n", allowed));
    case.apply_ok(&[], &[]);
    let billing = (users[1], passwords[1], "orders.created");
    let audit = (users[2], passwords[2], "orders.created");
    let split = deliver(&case, (users[0], passwords[0]), &[billing, audit], |got| got.iter().sum::<u64>() >= N);
    let counts: Vec<u64> = split.iter().map(|m| m.values().sum::<usize>() as u64).collect();
    assert_eq!(counts.iter().sum::<u64>(), N, "between them, every message once: {counts:?}");
    assert!(counts.iter().all(|c| *c > 0 && *c < N), "each service got part of them: {counts:?}");
    let both: BTreeSet<u64> = split[0].keys().filter(|n| split[1].contains_key(n)).copied().collect();
    assert!(both.is_empty(), "no message reached both: {both:?}");

    // The fix exactly as printed, applied to the files as they were.
    case.topology(SHARED);
    apply_fix(&case, add, put);
    let path = case.path();
    let lint = case.warren(&["lint", &path], &[]);
    assert_eq!(lint.code, 0, "the fix ends the error:\n{}\n{}", lint.stdout, lint.stderr);
    // Billing's user may no longer read the shared queue: the plan says
    // so, and the fix is applied only when asked.
    let plan = case.plan(&[], &[]);
    let lost = "the user loses access: `read` no longer grants queue \"orders.created\"";
    assert!(plan.stdout.contains(lost), "{}", plan.stdout);
    case.apply_ok(&["--allow-destroy"], &[]);
    assert_eq!(case.plan(&["--detailed-exitcode"], &[]).code, 0, "converged");
    let toml: toml::Table = std::fs::read_to_string(case.path_of("topology.toml")).unwrap().parse().unwrap();
    let own = toml["services"]["billing"]["consumes"][0].as_str().unwrap().to_string();
    assert_ne!(own, "orders.created");
    let billing = (users[1], passwords[1], own.as_str());
    let fixed = deliver(&case, (users[0], passwords[0]), &[billing, audit], |got| got.iter().all(|c| *c >= N));
    for (service, got) in ["billing", "audit"].iter().zip(&fixed) {
        let missing: Vec<u64> = (1..=N).filter(|n| !got.contains_key(n)).collect();
        let twice: Vec<(&u64, &usize)> = got.iter().filter(|(_, c)| **c > 1).collect();
        assert!(missing.is_empty(), "{service} missed {} messages: {missing:?}", missing.len());
        assert!(twice.is_empty(), "{service} got some twice: {twice:?}");
        assert_eq!(got.len() as u64, N, "{service} got exactly the messages sent");
    }
}

/// No broker: a service may connect as a user made elsewhere, listed in
/// `[external] users`; warren gives it permissions and never the user, and
/// a plan against an export without that user refuses before any write.
#[test]
fn an_external_user_gets_permissions_and_must_exist_on_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("t");
    std::fs::create_dir_all(&files).unwrap();
    let topology = "vhosts = [\"ext\"]\n\n[external]\nusers = [\"billing\"]\n\n[exchanges.x]\ntype = \"topic\"\n\n\
        [queues.q]\ntype = \"classic\"\n\n[[bindings]]\nsource = \"x\"\nqueue = \"q\"\nrouting_key = \"k\"\n\n\
        [services.billing]\nuser = \"billing\"\npublishes = [{ exchange = \"x\", keys = [\"k\"] }]\nconsumes = [\"q\"]\n";
    std::fs::write(files.join("main.toml"), topology).unwrap();
    let path = files.display().to_string();
    let nowhere = [("WARREN_URL", Some("http://guest:guest@127.0.0.1:9")), ("WARREN_PROJECT", Some("ext"))];
    let run = crate::common::warren_env(&["validate", &path], &nowhere);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    let export = |users: serde_json::Value| {
        let file = dir.path().join("export.json");
        let json = serde_json::json!({"vhosts": [{"name": "ext"}], "users": users, "permissions": []});
        std::fs::write(&file, json.to_string()).unwrap();
        file.display().to_string()
    };
    let without = export(serde_json::json!([]));
    let run = crate::common::warren_env(&["plan", &path, "--state", &without], &nowhere);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("warren::external-user-missing"), "{}", run.stderr);
    let with = export(serde_json::json!([{"name": "billing", "password_hash": "", "tags": []}]));
    let run = crate::common::warren_env(&["plan", &path, "--state", &with, "--format", "json"], &nowhere);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let made: Vec<&str> = (doc["changes"].as_array().unwrap().iter())
        .filter(|c| c["action"] == "create")
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert!(made.contains(&"permissions") && made.contains(&"topic permission"), "{}", run.stdout);
    assert!(!made.contains(&"user"), "the user is never made: {}", run.stdout);
}

/// On a broker: the external user, made by hand, gets the service's
/// permissions and topic permission; the user itself is left as it was.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn an_external_user_is_given_its_services_permissions_on_the_broker() {
    let case = Case::admin("t-svc-external");
    let user = "t-svc-external-user";
    case.broker.put(&format!("users/{user}"), serde_json::json!({"password": "ext-Pw-8814", "tags": "monitoring"}));
    case.topology(&format!(
        "vhosts = [\"{{V}}\"]\n\n[external]\nusers = [\"{user}\"]\n\n[exchanges.x]\ntype = \"topic\"\n\n\
         [queues.q]\ntype = \"classic\"\n\n[[bindings]]\nsource = \"x\"\nqueue = \"q\"\nrouting_key = \"k\"\n\n\
         [services.ext]\nuser = \"{user}\"\npublishes = [{{ exchange = \"x\", keys = [\"k\"] }}]\nconsumes = [\"q\"]\n"
    ));
    case.apply_ok(&[], &[]);
    let p = case.get(&format!("permissions/{{V}}/{user}"));
    assert_eq!(
        (p["configure"].as_str(), p["write"].as_str(), p["read"].as_str()),
        (Some("^$"), Some("^x$"), Some("^q$"))
    );
    assert!(case.exists(&format!("topic-permissions/{{V}}/{user}")));
    assert_eq!(
        case.get(&format!("users/{user}"))["tags"],
        serde_json::json!(["monitoring"]),
        "the user is not warren's"
    );
    case.assert_converged(&[]);
    case.broker.delete(&format!("users/{user}"));
}

/// Adopting services narrows a user's hand-written `.*` to what its
/// service uses: the user's clients lose access, so apply refuses without
/// --allow-destroy and changes nothing; with it, the broker refuses the
/// user the queue the plan named as lost, and grants it its own.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn permissions_narrowed_by_services_need_allow_destroy_and_take_what_the_plan_says() {
    let user = "t-svc-narrow-user";
    let password = "narrow-Pw-5121";
    let mut case = Case::admin("t-svc-narrow").with_users(&[user]);
    case.secrets.push(password.to_string());
    let queues = "vhosts = [\"{V}\"]\n\n[external]\nusers = [\"t-svc-narrow-user\"]\n\n\
        [queues.audit]\ntype = \"classic\"\nlint_allow = [\"queue-without-consumer\"]\n\n[queues.orders]\ntype = \"classic\"\n";
    case.topology(queues);
    case.apply_ok(&[], &[]);
    case.broker.put(&format!("users/{user}"), serde_json::json!({"password": password, "tags": ""}));
    let everything = serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"});
    case.broker.put(&format!("permissions/{}/{user}", case.vhost), everything);

    case.topology(&format!("{queues}\n[services.billing]\nuser = \"{user}\"\nconsumes = [\"orders\"]\n"));
    let plan = case.plan(&[], &[]);
    let lost = "the user loses access: `configure`, `write` and `read` no longer grant queue \"audit\"";
    assert!(plan.stdout.contains(lost), "{}", plan.stdout);
    assert!(plan.stdout.contains("# needs --allow-destroy: access is removed"), "{}", plan.stdout);
    let refused = case.apply(&[], &[]);
    assert_eq!(refused.code, 4, "{}\n{}", refused.stdout, refused.stderr);
    let p = case.get(&format!("permissions/{{V}}/{user}"));
    assert_eq!(p["read"], ".*", "refused: nothing changed");

    case.apply_ok(&["--allow-destroy"], &[]);
    let p = case.get(&format!("permissions/{{V}}/{user}"));
    assert_eq!(
        (p["configure"].as_str(), p["write"].as_str(), p["read"].as_str()),
        (Some("^$"), Some("^$"), Some("^orders$"))
    );
    let url = amqp_url_on(&case.amqp().replacen("guest:guest@", &format!("{user}:{password}@"), 1), &case.vhost);
    assert_eq!(attempt(&url, &Try::Consume("orders")), Ok(()));
    let audit = attempt(&url, &Try::Consume("audit")).expect_err("the queue the plan named as lost");
    assert!(audit.contains("ACCESS_REFUSED") || audit.contains("403"), "{audit}");
    case.assert_converged(&[]);
}
