//! The only module that talks to RabbitMQ.

mod endpoint;
mod error;
mod http;
mod ops;

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::json;

pub use endpoint::{Endpoint, Tls, segment};
pub use error::BrokerError;
pub use http::Http;

use crate::model::{INVENTORY_PARAMETER, Inventory, QueueCounts};
use crate::plan::Op;

/// A connection to one broker's management API.
#[derive(Clone)]
pub struct Broker {
    http: Http,
}

impl Broker {
    pub fn new(endpoint: Endpoint) -> Result<Broker, BrokerError> {
        Ok(Broker { http: Http::new(endpoint)? })
    }

    pub fn endpoint(&self) -> &Endpoint {
        self.http.endpoint()
    }

    /// Checks that the broker answers and accepts the credentials; returns
    /// its RabbitMQ version.
    pub async fn check(&self) -> Result<String, BrokerError> {
        let o = self.http.get_json("overview", "read the broker overview").await?;
        Ok(o["rabbitmq_version"].as_str().unwrap_or("unknown").to_string())
    }

    /// The whole broker's definitions export, as text, in one request.
    pub async fn definitions(&self) -> Result<String, BrokerError> {
        let (_, text) = self.http.send(Method::GET, "definitions", None, "read the broker's definitions").await?;
        Ok(text)
    }

    /// Every vhost with its metadata, as text (one request).
    pub async fn vhosts(&self) -> Result<String, BrokerError> {
        let path = "vhosts?columns=name,description,tags,default_queue_type,metadata";
        let (_, text) = self.http.send(Method::GET, path, None, "list the vhosts").await?;
        Ok(text)
    }

    /// Message and consumer counts of a vhost's queues, in one request.
    pub async fn queue_counts(&self, vhost: &str) -> Result<BTreeMap<String, QueueCounts>, BrokerError> {
        let path = format!("queues/{}?columns=name,messages,consumers", segment(vhost));
        let list = match self.http.get_json(&path, &format!("list the queues of vhost \"{vhost}\"")).await {
            Err(BrokerError::NotFound { .. }) => return Ok(BTreeMap::new()),
            other => other?,
        };
        let mut out = BTreeMap::new();
        for q in list.as_array().into_iter().flatten() {
            let n = |k: &str| q[k].as_u64().unwrap_or(0);
            if let Some(name) = q["name"].as_str() {
                out.insert(name.to_string(), QueueCounts { messages: n("messages"), consumers: n("consumers") });
            }
        }
        Ok(out)
    }

    /// Carries out one plan operation.
    pub async fn run(&self, op: &Op, guard_deletes: bool, password: Option<&str>) -> Result<(), BrokerError> {
        ops::run(&self.http, op, guard_deletes, password).await
    }

    /// Records what warren manages.
    pub async fn write_inventory(&self, inventory: &Inventory) -> Result<(), BrokerError> {
        let body = json!({ "name": INVENTORY_PARAMETER, "value": inventory.to_json() });
        let path = format!("global-parameters/{}", segment(INVENTORY_PARAMETER));
        self.http.send(Method::PUT, &path, Some(&body), "record warren's inventory").await.map(|_| ())
    }
}
