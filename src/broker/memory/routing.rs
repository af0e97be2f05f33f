//! Which queues a message published to an exchange reaches, as RabbitMQ
//! routes it (`rabbit_exchange:route/3` and one
//! `rabbit_exchange_type_*` module per type): each exchange by its type, bindings to
//! exchanges followed with each exchange visited once, and, when an
//! exchange's own type matches nothing, its alternate exchange (the
//! argument before the policy), again and again until something routes.

use std::collections::{BTreeSet, VecDeque};

use super::state::VhostState;
use crate::model::{DestinationKind, Table, Value, binding_matches};

/// The queues the message reaches, each once.
pub(super) fn route(v: &VhostState, exchange: &str, routing_key: &str, headers: &Table) -> BTreeSet<String> {
    let mut queues = BTreeSet::new();
    let mut seen = BTreeSet::from([exchange.to_string()]);
    let mut work = VecDeque::from([exchange.to_string()]);
    while let Some(name) = work.pop_front() {
        let Some(x) = v.exchanges.get(&name) else { continue };
        let mut matched: Vec<(DestinationKind, String)> = Vec::new();
        if name.is_empty() {
            // The default exchange: the queue the key names, bound or not.
            if v.queues.contains_key(routing_key) {
                matched.push((DestinationKind::Queue, routing_key.to_string()));
            }
        } else {
            for b in v.bindings.iter().filter(|b| b.source == name) {
                if binding_matches(&x.kind, &b.routing_key, &b.arguments, routing_key, headers) {
                    matched.push((b.destination_kind, b.destination.clone()));
                }
            }
        }
        if matched.is_empty()
            && let Some(alternate) = alternate_of(v, &name)
        {
            matched.push((DestinationKind::Exchange, alternate));
        }
        for (kind, dest) in matched {
            match kind {
                DestinationKind::Queue => {
                    queues.insert(dest);
                }
                // A missing exchange is skipped; one seen before cuts a cycle.
                DestinationKind::Exchange => {
                    if v.exchanges.contains_key(&dest) && seen.insert(dest.clone()) {
                        work.push_back(dest);
                    }
                }
            }
        }
    }
    queues
}

/// An exchange's alternate exchange: its `alternate-exchange` argument,
/// else the one its policy gives.
fn alternate_of(v: &VhostState, exchange: &str) -> Option<String> {
    let x = v.exchanges.get(exchange)?;
    let by_policy = || v.exchange_policy(exchange)?.definition.get("alternate-exchange").cloned();
    match x.arguments.get("alternate-exchange").cloned().or_else(by_policy) {
        Some(Value::String(name)) => Some(name),
        _ => None,
    }
}
