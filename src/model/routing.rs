//! How an exchange's binding takes a message, by the exchange's type
//! (`rabbit_exchange:route/3`;
//! https://www.rabbitmq.com/docs/e2e, https://www.rabbitmq.com/docs/ae): for the in-memory broker's routing and for lint's
//! questions about where dead letters go.

use super::value::{Table, Value};

/// Whether a binding of an exchange of `kind` takes the message.
pub fn binding_matches(kind: &str, binding_key: &str, arguments: &Table, routing_key: &str, headers: &Table) -> bool {
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
