//! Which queues a message published to an exchange reaches, as RabbitMQ
//! routes it (reference section 5): each exchange by its type, bindings to
//! exchanges followed with each exchange visited once, and, when an
//! exchange's own type matches nothing, its alternate exchange (the
//! argument before the policy), again and again until something routes.

use std::collections::{BTreeSet, VecDeque};

use super::state::VhostState;
use crate::model::{DestinationKind, Table, Value};

/// The queues the message reaches, each once.
pub fn route(v: &VhostState, exchange: &str, routing_key: &str, headers: &Table) -> BTreeSet<String> {
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
                if matches(&x.kind, &b.routing_key, &b.arguments, routing_key, headers) {
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

/// Whether a binding of an exchange of `kind` takes the message.
fn matches(kind: &str, binding_key: &str, arguments: &Table, routing_key: &str, headers: &Table) -> bool {
    match kind {
        "direct" => binding_key == routing_key,
        "fanout" => true,
        "topic" => topic_matches(binding_key, routing_key),
        "headers" => headers_match(arguments, headers),
        _ => false,
    }
}

/// `*` stands for one word, `#` for zero or more; words are split at dots.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('.').collect();
    let key: Vec<&str> = key.split('.').collect();
    words_match(&pattern, &key)
}

fn words_match(pattern: &[&str], key: &[&str]) -> bool {
    match pattern.split_first() {
        None => key.is_empty(),
        Some((&"#", rest)) => (0..=key.len()).any(|skip| words_match(rest, &key[skip..])),
        Some((word, rest)) => {
            key.split_first().is_some_and(|(k, others)| (*word == "*" || word == k) && words_match(rest, others))
        }
    }
}

/// A headers binding: `x-match` `all` (the default) or `any` of the other
/// arguments, those starting with `x-` left out unless it is `all-with-x`
/// or `any-with-x`. An argument without a value (`null`) asks only that
/// the header be there.
pub fn headers_match(arguments: &Table, headers: &Table) -> bool {
    let mode = arguments.get("x-match").and_then(Value::as_str).unwrap_or("all");
    let (any, with_x) = match mode {
        "any" => (true, false),
        "all-with-x" => (false, true),
        "any-with-x" => (true, true),
        _ => (false, false),
    };
    let mut wanted = arguments.iter().filter(|(k, _)| *k != "x-match" && (with_x || !k.starts_with("x-")));
    let fits = |(k, want): (&String, &Value)| match (headers.get(k), want) {
        (Some(_), Value::Null) => true,
        (Some(have), want) => have.clone().normalised() == want.clone().normalised(),
        (None, _) => false,
    };
    if any { wanted.any(fits) } else { wanted.all(fits) }
}
