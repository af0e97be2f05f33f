//! Topology objects with the defaults tests start from: durable, not
//! auto-deleted, no arguments unless given.

use crate::model::{ApplyTo, Binding, DestinationKind, Exchange, Policy, Queue, QueueType, Table, Value};

pub fn exchange(name: &str, kind: &str) -> Exchange {
    Exchange {
        name: name.into(),
        kind: kind.into(),
        durable: true,
        auto_delete: false,
        internal: false,
        arguments: Table::new(),
    }
}

pub fn queue(name: &str, kind: QueueType, arguments: Table) -> Queue {
    Queue { name: name.into(), kind, durable: true, auto_delete: false, arguments, replaces: None }
}

pub fn to_queue(source: &str, queue: &str, key: &str) -> Binding {
    Binding {
        source: source.into(),
        destination_kind: DestinationKind::Queue,
        destination: queue.into(),
        routing_key: key.into(),
        arguments: Table::new(),
    }
}

pub fn to_exchange(source: &str, exchange: &str, key: &str) -> Binding {
    Binding { destination_kind: DestinationKind::Exchange, ..to_queue(source, exchange, key) }
}

pub fn table(pairs: &[(&str, Value)]) -> Table {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

pub fn text(s: &str) -> Value {
    Value::String(s.into())
}

pub fn policy(name: &str, pattern: &str, apply_to: ApplyTo, priority: i64, definition: Table) -> Policy {
    Policy { name: name.into(), pattern: pattern.into(), apply_to, priority, definition }
}
