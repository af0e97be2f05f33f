//! Each write to a vhost as RabbitMQ carries it out (checked on 3.10.8 against
//! RabbitMQ's management API and `rabbit_amqqueue`): what it refuses, in the broker's words, and
//! what it takes along (bindings, auto-delete exchanges).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use regex::Regex;

use super::state::{PolicyState, QueueState, UserState, VhostState};
use crate::model::{
    Binding, DestinationKind, Exchange, Expect, Policy, QueueType, Table, Value, argument_rule, is_age, policy_key,
};

/// Why the broker refused a write; the caller says it with its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Why {
    /// HTTP 400, with the broker's reason.
    Refused(String),
    /// HTTP 404.
    NotFound,
    /// HTTP 401 "Access refused." (the broker's own objects).
    Forbidden,
    /// A guarded delete the broker refused: the queue is not empty or in use.
    Unsafe(String),
}

// The exchange types every broker has.
use crate::model::kinds::exchanges::BUILT_IN as EXCHANGE_TYPES;

/// The arguments each queue type checks on a redeclare (and refuses, at
/// creation, when they belong to another type): `rabbit_amqqueue:check_declare_arguments`.
const CLASSIC: &[&str] = &[
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-queue-version",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-master-locator",
];
const QUORUM: &[&str] = &[
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-dead-letter-strategy",
    "x-expires",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
    "x-overflow",
    "x-single-active-consumer",
    "x-queue-type",
    "x-quorum-initial-group-size",
    "x-delivery-limit",
    "x-message-ttl",
    "x-queue-leader-locator",
];
const STREAM: &[&str] = &[
    "x-max-length-bytes",
    "x-queue-type",
    "x-max-age",
    "x-stream-max-segment-size-bytes",
    "x-initial-cluster-size",
    "x-queue-leader-locator",
];

fn checked(kind: QueueType) -> &'static [&'static str] {
    match kind {
        QueueType::Classic => CLASSIC,
        QueueType::Quorum => QUORUM,
        QueueType::Stream => STREAM,
    }
}

/// The broker's name for a queue type's module, as its refusals say it.
fn module(kind: QueueType) -> &'static str {
    match kind {
        QueueType::Classic => "rabbit_classic_queue",
        QueueType::Quorum => "rabbit_quorum_queue",
        QueueType::Stream => "rabbit_stream_queue",
    }
}

/// A value as the broker quotes it: `'1000'`, `'ae'`.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The AMQP type a value sent over HTTP gets.
fn amqp_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "void",
        Value::Bool(_) => "bool",
        Value::Int(_) => "long",
        Value::Float(_) => "double",
        Value::String(_) => "longstr",
        Value::List(_) => "array",
        Value::Table(_) => "table",
    }
}

/// `inequivalent arg …` for a redeclare that differs from what is there.
fn inequivalent(field: &str, what: &str, vhost: &str, received: Option<&Value>, current: Option<&Value>) -> Why {
    let typed = |v: &Value| format!("the value '{}' of type '{}'", shown(v), amqp_type(v));
    let told = match (received, current) {
        (Some(r), Some(c)) => format!("received '{}' but current is '{}'", shown(r), shown(c)),
        (None, Some(c)) => format!("received none but current is {}", typed(c)),
        (Some(r), None) => format!("received {} but current is none", typed(r)),
        (None, None) => "received none but current is none".to_string(),
    };
    Why::Refused(format!("inequivalent arg '{field}' for {what} in vhost '{vhost}': {told}"))
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.cloned().map(Value::normalised) == b.cloned().map(Value::normalised)
}

fn is_builtin(name: &str) -> bool {
    name.is_empty() || name.starts_with("amq.")
}

pub(super) fn declare_exchange(v: &mut VhostState, vhost: &str, x: &Exchange) -> Result<(), Why> {
    if !EXCHANGE_TYPES.contains(&x.kind.as_str()) {
        return Err(Why::Refused(format!("unknown exchange type '{}'", x.kind)));
    }
    let Some(have) = v.exchanges.get(&x.name) else {
        // The broker's own names are reserved, but redeclaring one as it is works.
        if is_builtin(&x.name) {
            return Err(Why::Forbidden);
        }
        v.exchanges.insert(x.name.clone(), x.clone());
        return Ok(());
    };
    let what = format!("exchange '{}'", x.name);
    let flag = |b: bool| Value::String(b.to_string());
    let fields = [
        ("type", Value::String(x.kind.clone()), Value::String(have.kind.clone())),
        ("durable", flag(x.durable), flag(have.durable)),
        ("auto_delete", flag(x.auto_delete), flag(have.auto_delete)),
        ("internal", flag(x.internal), flag(have.internal)),
    ];
    for (field, received, current) in fields {
        if received != current {
            return Err(inequivalent(field, &what, vhost, Some(&received), Some(&current)));
        }
    }
    // The only argument the broker compares; others are ignored, not stored.
    let (received, current) = (x.arguments.get("alternate-exchange"), have.arguments.get("alternate-exchange"));
    if !same(received, current) {
        return Err(inequivalent("alternate-exchange", &what, vhost, received, current));
    }
    Ok(())
}

/// Deletes an exchange with the bindings from and to it; one already gone
/// is no refusal.
pub(super) fn delete_exchange(v: &mut VhostState, name: &str) -> Result<(), Why> {
    if is_builtin(name) {
        return Err(Why::Forbidden);
    }
    if v.exchanges.remove(name).is_some() {
        drop_bindings(v, |b| {
            b.source == name || (b.destination_kind == DestinationKind::Exchange && b.destination == name)
        });
    }
    Ok(())
}

/// Declares a queue of `kind` given its arguments as sent (`x-queue-type`
/// among them, or none for the vhost's default type).
pub(super) fn declare_queue(
    v: &mut VhostState,
    vhost: &str,
    name: &str,
    (durable, auto_delete): (bool, bool),
    arguments: &Table,
) -> Result<(), Why> {
    if name.starts_with("amq.") {
        return Err(Why::Forbidden);
    }
    let at = format!("queue '{name}' in vhost '{vhost}'");
    let mut arguments = arguments.clone();
    let kind = match arguments.get("x-queue-type") {
        Some(Value::String(t)) => QueueType::parse(t).ok_or_else(|| {
            Why::Refused(format!("invalid arg 'x-queue-type' for {at}: \"unsupported queue type '{t}'\""))
        })?,
        Some(other) => {
            return Err(Why::Refused(format!(
                "invalid arg 'x-queue-type' for {at}: {{unacceptable_type,{}}}",
                amqp_type(other)
            )));
        }
        None => match v.default_queue_type {
            // The vhost's default type is written into the arguments.
            Some(t) => {
                arguments.insert("x-queue-type".into(), Value::String(t.as_str().into()));
                t
            }
            None => QueueType::Classic,
        },
    };
    if let Some(have) = v.queues.get(name) {
        return equivalent(have, name, vhost, (durable, auto_delete), kind, &arguments);
    }
    if kind.is_replicated() && !durable {
        return Err(Why::Refused(format!("invalid property 'non-durable' for {at}")));
    }
    if kind.is_replicated() && auto_delete {
        return Err(Why::Refused(format!("invalid property 'auto-delete' for {at}")));
    }
    let own = checked(kind);
    for (k, value) in &arguments {
        let known_elsewhere = [CLASSIC, QUORUM, STREAM].iter().any(|l| l.contains(&k.as_str()));
        if known_elsewhere && !own.contains(&k.as_str()) {
            return Err(Why::Refused(format!("invalid arg '{k}' for {at} of queue type {}", module(kind))));
        }
        if let Some(problem) = argument_rule(k).and_then(|r| unacceptable(r.expect, value)) {
            return Err(Why::Refused(format!("invalid arg '{k}' for {at}: {problem}")));
        }
    }
    if let Some(max) = v.limits.get("max-queues")
        && *max >= 0
        && v.queues.len() as i64 >= *max
    {
        return Err(Why::Refused(format!(
            "cannot declare queue '{name}': queue limit in vhost '{vhost}' ({max}) is reached"
        )));
    }
    let queue = QueueState {
        kind,
        durable,
        auto_delete,
        arguments,
        ready: VecDeque::new(),
        unacked: 0,
        consumers: 0,
        leader: true,
        lagging: None,
    };
    v.queues.insert(name.to_string(), queue);
    Ok(())
}

/// A redeclare: the properties, the type, then the arguments the existing
/// queue's type checks (others are accepted and ignored, not stored).
fn equivalent(
    have: &QueueState,
    name: &str,
    vhost: &str,
    (durable, auto_delete): (bool, bool),
    kind: QueueType,
    arguments: &Table,
) -> Result<(), Why> {
    let what = format!("queue '{name}'");
    let flag = |b: bool| Value::String(b.to_string());
    for (field, received, current) in
        [("durable", durable, have.durable), ("auto_delete", auto_delete, have.auto_delete)]
    {
        if received != current {
            return Err(inequivalent(field, &what, vhost, Some(&flag(received)), Some(&flag(current))));
        }
    }
    if kind != have.kind {
        let (received, current) = (arguments.get("x-queue-type"), Value::String(have.kind.as_str().into()));
        return Err(inequivalent("x-queue-type", &what, vhost, received, Some(&current)));
    }
    for k in checked(have.kind).iter().filter(|k| **k != "x-queue-type") {
        let (received, current) = (arguments.get(*k), have.arguments.get(*k));
        if !same(received, current) {
            return Err(inequivalent(k, &what, vhost, received, current));
        }
    }
    Ok(())
}

/// Why a value does not fit what the broker expects of it, in its words.
fn unacceptable(expect: Expect, value: &Value) -> Option<String> {
    let wrong_type = || Some(format!("{{unacceptable_type,{}}}", amqp_type(value)));
    match expect {
        Expect::Int(lo, hi) => match value.as_int() {
            None => wrong_type(),
            Some(i) if i < lo && lo == 0 => Some(format!("{{value_negative,{i}}}")),
            Some(i) if i < lo || i > hi => Some(format!("{{value_out_of_range,{i}}}")),
            Some(_) => None,
        },
        Expect::Bool => {
            (!matches!(value, Value::Bool(_))).then(|| format!("{{unacceptable_type,{}}}", amqp_type(value)))
        }
        Expect::Str => value.as_str().is_none().then(|| format!("{{unacceptable_type,{}}}", amqp_type(value))),
        Expect::OneOf(allowed) => match value.as_str() {
            None => wrong_type(),
            Some(s) if allowed.contains(&s) => None,
            Some(s) => Some(format!("{{unacceptable_value,<<\"{s}\">>}}")),
        },
        Expect::IntOneOf(allowed) => match value.as_int() {
            None => wrong_type(),
            Some(i) if allowed.contains(&i) => None,
            Some(i) => Some(format!("{{unacceptable_value,{i}}}")),
        },
        Expect::Age => match value.as_str() {
            Some(s) if is_age(s) => None,
            _ => Some(format!("{{invalid_max_age,{}}}", shown(value))),
        },
    }
}

/// Deletes a queue with its bindings; one already gone is no refusal.
/// `guarded`: the `if-empty` and `if-unused` flags, which classic queues
/// honour, quorum queues refuse and streams ignore (`rabbit_quorum_queue:delete/4`, `rabbit_stream_queue:delete/4`).
pub(super) fn delete_queue(v: &mut VhostState, vhost: &str, name: &str, guarded: bool) -> Result<(), Why> {
    let Some(q) = v.queues.get(name) else { return Ok(()) };
    if guarded {
        match q.kind {
            QueueType::Classic if !q.ready.is_empty() => {
                return Err(Why::Unsafe(format!("queue '{name}' in vhost '{vhost}' not empty")));
            }
            QueueType::Classic if q.consumers > 0 => {
                return Err(Why::Unsafe(format!("queue '{name}' in vhost '{vhost}' in use")));
            }
            QueueType::Quorum => {
                return Err(Why::Refused(format!(
                    "cannot delete queue '{name}' in vhost '{vhost}'. queue.delete operations with if-unused flag set are not supported by quorum queues"
                )));
            }
            _ => {}
        }
    }
    v.queues.remove(name);
    drop_bindings(v, |b| b.destination_kind == DestinationKind::Queue && b.destination == name);
    Ok(())
}

pub(super) fn bind(v: &mut VhostState, b: &Binding) -> Result<(), Why> {
    // The default exchange takes no bindings, as source or destination.
    let default = |name: &str| name.is_empty() || name == "amq.default";
    if default(&b.source) || (b.destination_kind == DestinationKind::Exchange && default(&b.destination)) {
        return Err(Why::Forbidden);
    }
    if !v.exchanges.contains_key(&b.source) || !v.destination_exists(b.destination_kind, &b.destination) {
        return Err(Why::NotFound);
    }
    v.bindings.insert(b.clone());
    Ok(())
}

pub(super) fn unbind(v: &mut VhostState, b: &Binding) {
    drop_bindings(v, |have| have == b);
}

/// Removes the bindings `gone` picks; a source left without bindings is
/// deleted when it is an auto-delete exchange, as the broker does.
fn drop_bindings(v: &mut VhostState, gone: impl Fn(&Binding) -> bool) {
    let mut sources = BTreeSet::new();
    v.bindings.retain(|b| {
        let drop = gone(b);
        if drop {
            sources.insert(b.source.clone());
        }
        !drop
    });
    for s in sources {
        let unused = !v.bindings.iter().any(|b| b.source == s);
        if unused && v.exchanges.get(&s).is_some_and(|x| x.auto_delete) {
            let _ = delete_exchange(v, &s);
        }
    }
}

/// Sets a policy or an operator policy, validated as the broker does.
pub(super) fn put_policy(set: &mut BTreeMap<String, PolicyState>, p: &Policy, operator: bool) -> Result<(), Why> {
    let failed = |why: String| Why::Refused(format!("Validation failed: {why}"));
    if p.definition.is_empty() {
        return Err(failed("no policy provided".into()));
    }
    let unknown: Vec<String> = p
        .definition
        .iter()
        .filter(|(k, _)| policy_key(k).is_none_or(|key| operator && !key.operator))
        .map(|(k, v)| format!("{{<<\"{k}\">>,{}}}", erlang(v)))
        .collect();
    if !unknown.is_empty() {
        return Err(failed(format!("[{}] are not recognised policy settings", unknown.join(","))));
    }
    for (k, value) in &p.definition {
        let expect = match k.as_str() {
            "alternate-exchange" | "dead-letter-exchange" | "dead-letter-routing-key" => Some(Expect::Str),
            _ => argument_rule(&format!("x-{k}")).map(|r| r.expect),
        };
        if expect.is_some_and(|e| unacceptable(e, value).is_some()) {
            return Err(failed(format!("{} is not a valid {}", erlang(value), k.replace('-', " "))));
        }
    }
    let pattern = Regex::new(&p.pattern)
        .map_err(|e| failed(format!("pattern should be regular expression but is invalid: {e}")))?;
    set.insert(p.name.clone(), PolicyState { policy: p.clone(), pattern });
    Ok(())
}

/// A value as the broker's validation messages print it.
fn erlang(v: &Value) -> String {
    match v {
        Value::String(s) => format!("<<\"{s}\">>"),
        other => other.to_string(),
    }
}

/// The vhost limits the broker knows.
pub(super) const LIMITS: [&str; 2] = ["max-connections", "max-queues"];
/// The user limits the broker knows.
pub(super) const USER_LIMITS: [&str; 2] = ["max-connections", "max-channels"];

pub(super) fn set_limit(v: &mut VhostState, name: &str, value: i64) -> Result<(), Why> {
    if !LIMITS.contains(&name) {
        return Err(Why::Refused(format!(
            "Validation failed: Unrecognised terms [{{<<\"{name}\">>,{value}}}] in limits"
        )));
    }
    v.limits.insert(name.to_string(), value);
    Ok(())
}

/// Sets a user's limit, as `PUT /api/user-limits/{user}/{name}` does.
pub(super) fn set_user_limit(u: &mut UserState, name: &str, value: i64) -> Result<(), Why> {
    if !USER_LIMITS.contains(&name) {
        return Err(Why::Refused(format!("Unrecognised terms [{{<<\"{name}\">>,{value}}}] in user-limits")));
    }
    u.limits.insert(name.to_string(), value);
    Ok(())
}
