//! What a vhost's services publish to and consume, as edges of its routing
//! graph (`warren graph --services`, and a plan's picture of the services
//! whose permissions change): a service to each exchange it publishes to,
//! labelled with its keys (or the headers it publishes with); each queue it
//! consumes to the service.

use crate::model::{Value, Vhost};

/// One edge between a service and an exchange or a queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceRoute {
    pub service: String,
    /// From the service (it publishes), or to it (it consumes).
    pub publishes: bool,
    /// The other end is a queue (or an exchange).
    pub queue: bool,
    pub end: String,
    pub label: String,
}

/// The edges of the services of `v`. Publishing to the default exchange
/// goes straight to the queue each key names, as the broker delivers it;
/// a key that names no queue of the files (or no key) draws nothing: it
/// reaches no queue the picture could show.
pub fn service_routes(v: &Vhost) -> Vec<ServiceRoute> {
    let mut out = Vec::new();
    for s in v.services.values() {
        let service = || s.name.clone();
        for p in &s.publishes {
            if p.exchange.is_empty() {
                for k in p.keys.iter().filter(|k| v.queues.contains_key(*k)) {
                    let label = format!("{k} (default exchange)");
                    out.push(ServiceRoute { service: service(), publishes: true, queue: true, end: k.clone(), label });
                }
                continue;
            }
            // A headers exchange's edge shows the headers of each kind of message.
            let headers =
                p.headers.iter().map(|h| crate::toml_text::value(&Value::Table(h.clone())).unwrap_or_default());
            let label = p.keys.iter().cloned().chain(headers).collect::<Vec<_>>().join(", ");
            out.push(ServiceRoute {
                service: service(),
                publishes: true,
                queue: false,
                end: p.exchange.clone(),
                label,
            });
        }
        for q in &s.consumes {
            let end = q.clone();
            out.push(ServiceRoute { service: service(), publishes: false, queue: true, end, label: String::new() });
        }
    }
    out
}
