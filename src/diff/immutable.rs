//! Properties the broker never changes in place (https://www.rabbitmq.com/docs/queues#property-equivalence):
//! which of them differ. What a user who changed one is told is in
//! `refusals/immutable_change.rs`.

use crate::model::{Exchange, Queue};

/// How the reason of a difference that no broker can make in place ends,
/// when two topologies are compared.
pub const NOT_IN_PLACE: &str = "which cannot change in place";

/// Names of the queue properties that differ: `type`, `arguments.x-…`.
pub(super) fn queue_fields(have: &Queue, want: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    if have.kind != want.kind {
        out.push("type".to_string());
    }
    if have.durable != want.durable {
        out.push("durable".to_string());
    }
    if have.auto_delete != want.auto_delete {
        out.push("auto_delete".to_string());
    }
    let keys: std::collections::BTreeSet<&String> = have.arguments.keys().chain(want.arguments.keys()).collect();
    for k in keys {
        if have.arguments.get(k) != want.arguments.get(k) {
            out.push(format!("arguments.{k}"));
        }
    }
    out
}

/// Names of the exchange properties that differ.
pub(super) fn exchange_fields(have: &Exchange, want: &Exchange) -> Vec<String> {
    let mut out = Vec::new();
    for (name, differs) in [
        ("type", have.kind != want.kind),
        ("durable", have.durable != want.durable),
        ("auto_delete", have.auto_delete != want.auto_delete),
        ("internal", have.internal != want.internal),
        ("arguments", have.arguments != want.arguments),
    ] {
        if differs {
            out.push(name.to_string());
        }
    }
    out
}
