//! Services: who publishes to which exchanges, with which routing keys,
//! and who consumes which queues. A service's user gets exactly the
//! permissions that takes, derived here: nothing else it could read, write
//! or declare.
//!
//! RabbitMQ checks a user's three expressions against resource names
//! (`rabbit_access_control:check_resource_access`): `configure` to declare
//! or delete a queue or exchange, `write` to publish to an exchange or bind
//! to a queue, `read` to consume from a queue or bind from an exchange. A
//! topic permission narrows the routing keys a user publishes with to one
//! topic exchange (`check_topic_access`).

use std::collections::{BTreeMap, BTreeSet};

use super::{Exchange, Permission, Table};

/// One service of a vhost, as the files declare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    /// The broker user it connects as.
    pub user: String,
    pub publishes: Vec<Publish>,
    /// The queues it consumes from.
    pub consumes: Vec<String>,
    /// What it declares for itself at run time.
    pub declares: Declares,
}

/// What a service publishes to one exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publish {
    pub exchange: String,
    /// The routing keys it publishes with, or topic patterns of them; empty
    /// when the exchange ignores keys (fanout, headers) or the service does
    /// not say.
    pub keys: Vec<String>,
    /// The headers of its messages to a headers exchange, one table per
    /// kind of message; empty when the service does not say (any headers).
    pub headers: Vec<Table>,
}

/// The queues a service declares for itself: server-named ones (reply
/// queues, `amq.gen-…`) and ones whose name starts with a prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declares {
    pub server_named: bool,
    pub prefixes: Vec<String>,
}

/// What a user is granted in a vhost for its services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub permission: Permission,
    /// Each topic exchange it publishes to with keys, and the expression
    /// those keys must match.
    pub topic: BTreeMap<String, String>,
    /// The services that asked, by name.
    pub services: BTreeSet<String>,
}

/// The name RabbitMQ checks `write` against when a message is published
/// to the default exchange (`""`).
pub const DEFAULT_EXCHANGE: &str = "amq.default";

/// The grant of each user that a service of `services` connects as, in a
/// vhost whose exchanges are `exchanges` (a topic permission is made for a
/// topic exchange only: RabbitMQ checks no other's keys).
pub fn grants(services: &BTreeMap<String, Service>, exchanges: &BTreeMap<String, Exchange>) -> BTreeMap<String, Grant> {
    let mut by_user: BTreeMap<&str, Vec<&Service>> = BTreeMap::new();
    for s in services.values() {
        by_user.entry(s.user.as_str()).or_default().push(s);
    }
    by_user.into_iter().map(|(user, services)| (user.to_string(), grant(user, &services, exchanges))).collect()
}

fn grant(user: &str, services: &[&Service], exchanges: &BTreeMap<String, Exchange>) -> Grant {
    let own: BTreeSet<String> = services.iter().flat_map(|s| declared(&s.declares)).collect();
    let published = services.iter().flat_map(|s| &s.publishes).map(|p| exchange_name(&p.exchange));
    let consumed = services.iter().flat_map(|s| &s.consumes).map(|q| regex::escape(q));
    let permission = Permission {
        user: user.to_string(),
        configure: any_of(own.iter().cloned()),
        write: any_of(published.map(|x| regex::escape(&x)).chain(own.iter().cloned())),
        read: any_of(consumed.chain(own.iter().cloned())),
    };
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in services.iter().flat_map(|s| &s.publishes) {
        let kind =
            exchanges.get(&p.exchange).map(|x| x.kind.as_str()).or(super::builtin_exchange(&p.exchange).map(|b| b.0));
        let topic = kind == Some("topic");
        if topic && !p.keys.is_empty() {
            keys.entry(p.exchange.clone()).or_default().extend(p.keys.iter().map(|k| topic_regex(k)));
        }
    }
    let topic = keys.into_iter().map(|(x, k)| (x, any_of(k.into_iter()))).collect();
    Grant { permission, topic, services: services.iter().map(|s| s.name.clone()).collect() }
}

/// The name publishing to `exchange` is checked against.
fn exchange_name(exchange: &str) -> String {
    if exchange.is_empty() { DEFAULT_EXCHANGE.to_string() } else { exchange.to_string() }
}

/// The expressions (unanchored) of the queues a service declares itself.
fn declared(d: &Declares) -> Vec<String> {
    let mut out: Vec<String> = d.prefixes.iter().map(|p| format!("{}.*", regex::escape(p))).collect();
    if d.server_named {
        out.push(r"amq\.gen-.*".to_string());
    }
    out
}

/// An anchored expression matching exactly one of `parts` (themselves
/// expressions), or nothing at all (`^$`: no queue or exchange is named
/// "", and the default exchange is checked as `amq.default`).
pub fn any_of(parts: impl Iterator<Item = String>) -> String {
    let parts: BTreeSet<String> = parts.collect();
    match parts.len() {
        0 => "^$".to_string(),
        1 => format!("^{}$", parts.into_iter().next().expect("one")),
        _ => format!("^(?:{})$", parts.into_iter().collect::<Vec<_>>().join("|")),
    }
}

/// The expression (unanchored) of the routing keys a topic pattern names:
/// `*` one word, `#` none or more, as a topic binding matches them.
pub fn topic_regex(pattern: &str) -> String {
    let words: Vec<&str> = pattern.split('.').collect();
    let mut out = String::new();
    let mut after_hash_start = false;
    for (i, w) in words.iter().enumerate() {
        let sep = if i == 0 || after_hash_start { "" } else { r"\." };
        after_hash_start = false;
        match *w {
            "#" if words.len() == 1 => out.push_str(".*"),
            "#" if i == 0 => {
                out.push_str(r"(?:.*\.)?");
                after_hash_start = true;
            }
            "#" => out.push_str(r"(?:\..*)?"),
            "*" => {
                out.push_str(sep);
                out.push_str("[^.]*");
            }
            word => {
                out.push_str(sep);
                out.push_str(&regex::escape(word));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::objects::exchange;

    fn matches(expression: &str, text: &str) -> bool {
        regex::Regex::new(expression).unwrap().is_match(text)
    }

    #[test]
    fn a_topic_pattern_becomes_the_expression_of_the_keys_it_matches() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("order.placed", &["order.placed"], &["order.placedx", "order", "xorder.placed"]),
            ("order.*", &["order.eu", "order."], &["order", "order.eu.x"]),
            ("order.#", &["order", "order.eu", "order.eu.x"], &["orders", "x.order"]),
            ("#.eu", &["eu", "order.eu", "a.b.eu"], &["xeu", "eu.x"]),
            ("a.#.b", &["a.b", "a.x.b", "a.x.y.b"], &["ab", "a.x"]),
            ("#", &["", "a", "a.b"], &[]),
        ];
        for (pattern, yes, no) in cases {
            let e = format!("^{}$", topic_regex(pattern));
            for k in *yes {
                assert!(matches(&e, k), "{pattern} ({e}) matches {k}");
            }
            for k in *no {
                assert!(!matches(&e, k), "{pattern} ({e}) does not match {k}");
            }
        }
    }

    #[test]
    fn each_user_gets_what_its_services_take_and_nothing_else() {
        let service = |name: &str, user: &str, publishes: Vec<Publish>, consumes: &[&str]| Service {
            name: name.into(),
            user: user.into(),
            publishes,
            consumes: consumes.iter().map(|q| q.to_string()).collect(),
            declares: Declares::default(),
        };
        let publish = |x: &str, keys: &[&str]| Publish {
            exchange: x.into(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            headers: Vec::new(),
        };
        let mut services = BTreeMap::new();
        services.insert("shop".into(), service("shop", "shop", vec![publish("shop.orders", &["order.placed"])], &[]));
        let mut billing = service("billing", "billing", vec![publish("", &["audit"])], &["billing.orders"]);
        billing.declares = Declares { server_named: true, prefixes: vec!["billing.tmp.".into()] };
        services.insert("billing".into(), billing);
        let exchanges = [("shop.orders".to_string(), exchange("shop.orders", "topic"))].into();
        let g = grants(&services, &exchanges);
        let shop = &g["shop"];
        assert_eq!(
            (shop.permission.configure.as_str(), shop.permission.write.as_str(), shop.permission.read.as_str()),
            ("^$", r"^shop\.orders$", "^$")
        );
        assert_eq!(shop.topic["shop.orders"], r"^order\.placed$");
        let b = &g["billing"].permission;
        assert_eq!(b.configure, r"^(?:amq\.gen-.*|billing\.tmp\..*)$");
        assert_eq!(b.write, r"^(?:amq\.default|amq\.gen-.*|billing\.tmp\..*)$");
        assert_eq!(b.read, r"^(?:amq\.gen-.*|billing\.orders|billing\.tmp\..*)$");
        assert!(g["billing"].topic.is_empty(), "the default exchange is direct: no topic permission");
        for (e, yes, no) in
            [(&b.read, "billing.orders", "billing.ordersx"), (&b.configure, "amq.gen-Xy", "shop.orders")]
        {
            assert!(matches(e, yes) && !matches(e, no), "{e}");
        }
    }
}
