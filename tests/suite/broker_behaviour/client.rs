//! What a case does beside warren's own calls, as a client of either
//! broker: publish, get, consume, log in as another user. The in-memory
//! broker does it with its test methods; the real node through the
//! management API (publish, get) and AMQP (a consumer).

use std::sync::OnceLock;

use serde_json::{Value as Json, json};
use warren::broker::{Answer, Broker, BrokerError, Endpoint, Freshness, Memory, Rabbit, Tls};
use warren::model::{Table, Value};

use crate::common::{TestBroker, seg};

/// A test's side of the traffic, and its other logins.
pub(super) trait Traffic: Broker {
    /// Whether other tests share the broker's global parameters (warren's
    /// broker-wide journal among them): a case must not write those.
    const SHARED: bool;

    /// Publishes `body` with `headers`; whether a queue took it.
    async fn send(&self, vhost: &str, exchange: &str, key: &str, headers: &Table, body: &str) -> Answer<bool>;
    /// Takes the oldest ready message's body, acknowledged.
    async fn take(&self, vhost: &str, queue: &str) -> Option<String>;
    /// A consumer on `queue` while the value lives.
    async fn consume(&self, vhost: &str, queue: &str) -> Box<dyn Send>;
    /// The same broker, as another user logs in.
    fn login(&self, user: &str, password: &str) -> Self;
    /// Puts a global parameter back as it was before a case (`None`: unset).
    async fn restore_global(&self, name: &str, previous: Option<Json>);
}

impl Traffic for Memory {
    /// Each case has a broker of its own.
    const SHARED: bool = false;

    async fn send(&self, vhost: &str, exchange: &str, key: &str, headers: &Table, body: &str) -> Answer<bool> {
        self.publish(vhost, exchange, key, headers, body)
    }

    async fn take(&self, vhost: &str, queue: &str) -> Option<String> {
        self.get(vhost, queue).map(|m| m.body)
    }

    async fn consume(&self, vhost: &str, queue: &str) -> Box<dyn Send> {
        let now = consumers(self, vhost, queue).await;
        self.set_consumers(vhost, queue, now + 1).unwrap();
        Box::new(Consumer { broker: self.clone(), vhost: vhost.into(), queue: queue.into() })
    }

    fn login(&self, user: &str, _password: &str) -> Self {
        self.as_user(user)
    }

    /// Each case has a broker of its own: nothing to put back.
    async fn restore_global(&self, _name: &str, _previous: Option<Json>) {}
}

async fn consumers(m: &Memory, vhost: &str, queue: &str) -> u64 {
    m.read_queue(vhost, queue, Freshness::Now).await.unwrap().map_or(0, |(_, r)| r.consumers)
}

/// A consumer of the in-memory broker: it leaves when dropped.
struct Consumer {
    broker: Memory,
    vhost: String,
    queue: String,
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let now = futures_lite::future::block_on(consumers(&self.broker, &self.vhost, &self.queue));
        let _ = self.broker.set_consumers(&self.vhost, &self.queue, now.saturating_sub(1));
    }
}

/// The test node's management API (`WARREN_TEST_URL`), for what warren
/// does not do itself.
pub(super) fn api() -> &'static TestBroker {
    static API: OnceLock<TestBroker> = OnceLock::new();
    API.get_or_init(TestBroker::from_env)
}

/// The test node's AMQP URL, with other credentials when given.
fn amqp_url(login: Option<(&str, &str)>) -> String {
    let url = std::env::var("WARREN_TEST_AMQP_URL")
        .expect("WARREN_TEST_AMQP_URL is not set: run the tests with scripts/test, which starts the private broker");
    let mut url = url::Url::parse(&url).expect("WARREN_TEST_AMQP_URL is a URL");
    if let Some((user, password)) = login {
        url.set_username(user).unwrap();
        url.set_password(Some(password)).unwrap();
    }
    url.to_string()
}

/// The test node as warren reaches it, logged in as the test's admin.
pub(super) fn rabbit() -> Rabbit {
    let endpoint = Endpoint::parse(&api().url, Tls::default()).expect("WARREN_TEST_URL is a broker URL");
    Rabbit::new(endpoint, Some(&amqp_url(None))).expect("the test node's URLs are valid")
}

/// A management API request, off the async workers (ureq blocks).
async fn request(method: &'static str, path: String, body: Json) -> crate::common::broker::Answer {
    tokio::task::spawn_blocking(move || api().request(method, &path, Some(&body))).await.unwrap()
}

impl Traffic for Rabbit {
    const SHARED: bool = true;

    /// `POST /api/exchanges/{vhost}/{exchange}/publish`; the default
    /// exchange is `amq.default` there.
    async fn send(&self, vhost: &str, exchange: &str, key: &str, headers: &Table, body: &str) -> Answer<bool> {
        let x = if exchange.is_empty() { "amq.default" } else { exchange };
        let path = format!("exchanges/{}/{}/publish", seg(vhost), seg(x));
        let message = json!({
            "routing_key": key, "payload": body, "payload_encoding": "string",
            "properties": { "headers": Json::from(&Value::Table(headers.clone())) },
        });
        let a = request("POST", path, message).await;
        let action = format!("publish to exchange \"{exchange}\" in vhost \"{vhost}\"");
        let reason = || serde_json::from_str::<Json>(&a.body).ok().and_then(|j| j["reason"].as_str().map(String::from));
        match a.status {
            200 => Ok(a.json()["routed"].as_bool().expect("the answer says whether it was routed")),
            404 => Err(BrokerError::NotFound { action }),
            // The channel's refusal, as a 400 with the AMQP code in its reason.
            400 if reason().is_some_and(|r| r.starts_with("404 NOT_FOUND")) => Err(BrokerError::NotFound { action }),
            status => Err(BrokerError::Refused { action, status, reason: reason().unwrap_or(a.body) }),
        }
    }

    async fn take(&self, vhost: &str, queue: &str) -> Option<String> {
        let path = format!("queues/{}/{}/get", seg(vhost), seg(queue));
        let a = request("POST", path, json!({ "count": 1, "ackmode": "ack_requeue_false", "encoding": "auto" })).await;
        if a.status == 404 {
            return None;
        }
        assert_eq!(a.status, 200, "get from {queue}: {}", a.body);
        a.json().as_array()?.first().map(|m| m["payload"].as_str().expect("a string payload").to_string())
    }

    async fn consume(&self, vhost: &str, queue: &str) -> Box<dyn Send> {
        use lapin::options::BasicConsumeOptions;
        use lapin::types::FieldTable;
        let url = crate::common::traffic::amqp_url_on(&amqp_url(None), vhost);
        let connection = lapin::Connection::connect(&url, lapin::ConnectionProperties::default()).await.unwrap();
        let channel = connection.create_channel().await.unwrap();
        let options = BasicConsumeOptions::default();
        let consumer =
            channel.basic_consume(queue.into(), "t-beh".into(), options, FieldTable::default()).await.unwrap();
        Box::new((connection, channel, consumer))
    }

    fn login(&self, user: &str, password: &str) -> Self {
        let endpoint = Endpoint::parse(&api().url_as(user, password), Tls::default()).unwrap();
        Rabbit::new(endpoint, Some(&amqp_url(Some((user, password))))).unwrap()
    }

    async fn restore_global(&self, name: &str, previous: Option<Json>) {
        let path = format!("global-parameters/{}", seg(name));
        match previous {
            Some(value) => assert!(request("PUT", path, json!({ "value": value })).await.status < 300),
            None => {
                tokio::task::spawn_blocking(move || api().delete(&path)).await.unwrap();
            }
        }
    }
}
