//! Properties the broker never changes in place (reference section 2), and
//! what to tell a user who changed one.

use crate::diagnostic::Diagnostic;
use crate::model::{Exchange, QUEUE_ARGUMENTS, Queue, Resolution, Value, resolution};

/// Names of the queue properties that differ: `type`, `arguments.x-…`.
pub fn queue_fields(have: &Queue, want: &Queue) -> Vec<String> {
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

pub fn exchange_fields(have: &Exchange, want: &Exchange) -> Vec<String> {
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

/// A policy that would give `have` the behaviour `want` asks for, as TOML,
/// when every difference is an argument a policy can set and would win.
pub fn policy_alternative(have: &Queue, want: &Queue) -> Option<(String, Vec<String>)> {
    if have.kind != want.kind || have.durable != want.durable || have.auto_delete != want.auto_delete {
        return None;
    }
    let mut definition = Vec::new();
    let mut keys = Vec::new();
    for rule in QUEUE_ARGUMENTS {
        let (old, new) = (have.arguments.get(rule.name), want.arguments.get(rule.name));
        if old == new {
            continue;
        }
        let policy_key = rule.policy_key?;
        let new = new?; // a removed argument cannot be undone by a policy
        let wins = match (old, resolution(policy_key, have.kind)) {
            (None, _) | (Some(_), Resolution::Policy) => true,
            (Some(o), Resolution::Min) => {
                matches!((o.as_int(), new.as_int()), (Some(o), Some(n)) if n < o)
            }
            (Some(_), Resolution::Argument) => false,
        };
        if !wins {
            return None;
        }
        definition.push(format!("\"{policy_key}\" = {}", toml_value(new)));
        keys.push(rule.name.to_string());
    }
    // Unknown arguments differing: no policy key covers them.
    let known = |k: &String| QUEUE_ARGUMENTS.iter().any(|r| r.name == k);
    if have
        .arguments
        .keys()
        .chain(want.arguments.keys())
        .any(|k| !known(k) && have.arguments.get(k) != want.arguments.get(k))
    {
        return None;
    }
    if definition.is_empty() {
        return None;
    }
    let name = &want.name;
    let pattern = format!("^{}$", regex::escape(name)).replace('\\', "\\\\");
    let toml = format!(
        "[policies.\"{name}-settings\"]\npattern = \"{pattern}\"\napply_to = \"queues\"\npriority = 10\ndefinition = {{ {} }}",
        definition.join(", ")
    );
    Some((toml, keys))
}

fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// The error for a queue whose immutable properties changed with no way
/// chosen to carry it out: says both ways out.
pub fn queue_problem(have: &Queue, want: &Queue, fields: &[String]) -> Diagnostic {
    let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let mut help = String::new();
    if let Some((policy, _)) = policy_alternative(have, want) {
        help += &format!(
            "either keep the queue's arguments as they are live and set the change by policy:\n\n{policy}\n\nor "
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
