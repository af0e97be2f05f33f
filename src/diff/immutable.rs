//! Properties the broker never changes in place (https://www.rabbitmq.com/docs/queues#property-equivalence), and
//! what to tell a user who changed one.

use super::policy_advice::Advice;
use crate::diagnostic::Diagnostic;
use crate::model::{Exchange, Queue};

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

/// The error for a queue whose immutable properties changed with no way
/// chosen to carry it out: says both ways out, the first being `policy`
/// when one can do it.
pub(super) fn queue_problem(want: &Queue, fields: &[String], policy: Option<Advice>) -> Diagnostic {
    let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let mut help = String::new();
    if let Some(policy) = policy {
        // Said in prose: a comment in the policy would be wrapped.
        let carries = match &policy.carries {
            Some(p) => {
                format!(" (it carries the keys of policy \"{p}\", which applies to the queue today, and wins over it)")
            }
            None => String::new(),
        };
        help += &format!(
            "either keep the queue's arguments as they are live and set the change by policy{carries}:\n\n{}\n\nor ",
            policy.toml
        );
    }
    help += &format!(
        "declare a new queue with `replaces = \"{}\"`: warren moves the messages over by live migration, with no loss (or pass --replace {} to destroy and recreate it, losing its messages)",
        want.name, want.name
    );
    Diagnostic::error(
        "immutable-change",
        format!(
            "queue \"{}\" cannot change {list} in place: RabbitMQ refuses to redeclare it (406 PRECONDITION_FAILED)",
            want.name
        ),
    )
    .help(help)
}
