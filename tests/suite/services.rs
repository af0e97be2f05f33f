//! Services against a real broker: each service's user, with the
//! permissions warren made from the files, can do what its service
//! declares over AMQP and is refused (ACCESS_REFUSED) everything else.

use lapin::options::{BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection, ConnectionProperties};

use crate::common::Case;
use crate::common::traffic::amqp_url_on;

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
publishes = [{ exchange = "shop.match" }]
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
}
