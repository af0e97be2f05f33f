//! AMQP 0-9-1, for what the management API only knows late: a queue's
//! ready messages and consumers, fresh, by a passive declare.

use std::collections::HashMap;
use std::sync::Arc;

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use url::Url;

use super::endpoint::{Endpoint, segment};
use super::error::BrokerError;

/// Where to open AMQP connections; credentials never leave this type.
#[derive(Clone)]
pub struct Amqp {
    pub(super) base: Url,
    /// Where the apply lock lives: the URL's vhost, `/` when it names none.
    pub(super) lock_vhost: String,
    /// One connection per vhost for passive declares, made when first
    /// needed and again once lost: a hundred drain waits reading every
    /// second would otherwise open a hundred connections a second.
    probes: Arc<tokio::sync::Mutex<HashMap<String, Connection>>>,
}

impl Amqp {
    /// From `--amqp-url`, or from the management endpoint (same host and
    /// credentials, port 5672) when none is given.
    pub fn new(url: Option<&str>, management: &Endpoint) -> Result<Amqp, BrokerError> {
        let mut base = match url {
            Some(u) => Url::parse(u).map_err(|e| BrokerError::Setup(format!("the AMQP URL is not valid: {e}")))?,
            None => {
                let host = management.base.host_str().unwrap_or("127.0.0.1");
                let mut u = Url::parse(&format!("amqp://{host}:5672/")).expect("a host makes a valid URL");
                let _ = u.set_username(&management.user);
                let _ = u.set_password(Some(management.password()));
                u
            }
        };
        if !matches!(base.scheme(), "amqp" | "amqps") {
            return Err(BrokerError::Setup("the AMQP URL must start with amqp:// or amqps://".into()));
        }
        let named = base.path().trim_start_matches('/');
        let lock_vhost = match percent_encoding::percent_decode_str(named).decode_utf8_lossy().into_owned() {
            v if v.is_empty() => "/".to_string(),
            v => v,
        };
        base.set_path("/");
        base.set_query(None);
        Ok(Amqp { base, lock_vhost, probes: Arc::default() })
    }

    pub(super) fn shown(&self) -> String {
        format!("{}://{}:{}", self.base.scheme(), self.base.host_str().unwrap_or(""), self.base.port().unwrap_or(5672))
    }

    /// Ready messages and consumers of a queue, as the queue itself reports
    /// them now (quorum queues: 0/0 when they have no leader).
    pub async fn queue_state(&self, vhost: &str, queue: &str) -> Result<(u64, u64), BrokerError> {
        let unreachable =
            |e: lapin::Error| BrokerError::AmqpUnreachable { endpoint: self.shown(), detail: e.to_string() };
        // A channel of its own: a declare of a missing queue closes it.
        let channel = {
            let mut probes = self.probes.lock().await;
            if !probes.get(vhost).is_some_and(|c| c.status().connected()) {
                let uri = format!("{}{}?heartbeat=10", self.base, segment(vhost));
                let props = ConnectionProperties::default().with_connection_name("warren (drain readings)".into());
                let conn = Connection::connect(&uri, props).await.map_err(unreachable)?;
                probes.insert(vhost.to_string(), conn);
            }
            probes[vhost].create_channel().await.map_err(unreachable)?
        };
        let options = QueueDeclareOptions { passive: true, ..QueueDeclareOptions::default() };
        let result = channel.queue_declare(queue.into(), options, FieldTable::default()).await;
        if result.is_ok() {
            let _ = channel.close(200, "done".into()).await;
        }
        let q = result.map_err(|e| BrokerError::Refused {
            action: format!("read queue \"{queue}\" in vhost \"{vhost}\" over AMQP"),
            status: 0,
            reason: e.to_string(),
        })?;
        Ok((u64::from(q.message_count()), u64::from(q.consumer_count())))
    }

    /// Closes the connections [`Amqp::queue_state`] kept open.
    pub async fn close_probes(&self) {
        for (_, conn) in self.probes.lock().await.drain() {
            let _ = conn.close(200, "done".into()).await;
        }
    }
}
