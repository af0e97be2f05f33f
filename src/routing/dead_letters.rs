//! Where a queue's dead letters go (`rabbit_dead_letter`): republished to
//! the queue's dead-letter exchange with its dead-letter routing key, or
//! with the keys they carried (the routing key, `CC` and `BCC`: the broker
//! keeps the `BCC` keys with the message and routes by them, though the
//! `x-death` header leaves them out); a dead letter that would come back
//! to the queue it left without a consumer's reject on the way is dropped
//! there.

use serde::Serialize;

use super::{Dropped, Keys, Message, Route, Router, Version, Why};
use crate::model::{Binding, Queue, QueueType, SetBy, Table, Value};

/// Why a message is dead-lettered, as the broker names it in `x-death`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A consumer rejected it (or nacked it) without requeueing.
    Rejected,
    /// Its time to live ran out.
    Expired,
    /// The queue was over its length limit.
    Maxlen,
    /// A quorum queue delivered it more often than its delivery limit.
    DeliveryLimit,
}

impl Reason {
    pub const ALL: [Reason; 4] = [Reason::Rejected, Reason::Expired, Reason::Maxlen, Reason::DeliveryLimit];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Rejected => "rejected",
            Reason::Expired => "expired",
            Reason::Maxlen => "maxlen",
            Reason::DeliveryLimit => "delivery_limit",
        }
    }

    pub fn parse(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s || r.as_str().replace('_', "-") == s)
    }
}

/// A setting that decides whether a queue dead-letters: its argument and
/// policy key, its value, and where it is set (argument or policy).
#[derive(Debug, Clone, Copy)]
pub struct Setting<'a> {
    pub argument: &'static str,
    pub key: &'static str,
    pub value: &'a Value,
    pub by: SetBy<'a>,
}

/// What decides whether a queue dead-letters for a reason.
#[derive(Debug, Clone, Copy)]
pub enum Decision<'a> {
    /// A stream never dead-letters.
    Stream,
    /// A consumer's reject (or nack) without requeueing: always.
    Rejected,
    /// Its message TTL, when it sets one.
    Ttl(Option<Setting<'a>>),
    /// Its length limit (`max-length`, else `max-length-bytes`) and what
    /// it does when full (`overflow`, `drop-head` when unset).
    Maxlen { limit: Option<Setting<'a>>, overflow: Option<Setting<'a>> },
    /// Only quorum queues have a delivery limit.
    NotQuorum,
    /// A quorum queue's delivery limit; from RabbitMQ 4 there is one by
    /// default.
    DeliveryLimit { limit: Option<Setting<'a>>, version: Version },
}

impl Decision<'_> {
    /// Whether the queue dead-letters.
    pub fn dead_letters(&self) -> bool {
        match self {
            Decision::Stream | Decision::NotQuorum => false,
            Decision::Rejected => true,
            Decision::Ttl(ttl) => ttl.is_some(),
            Decision::Maxlen { limit, overflow } => {
                let overflow = overflow.as_ref().and_then(|o| o.value.as_str());
                limit.is_some() && overflow.is_none_or(|o| matches!(o, "drop-head" | "reject-publish-dlx"))
            }
            Decision::DeliveryLimit { limit, version } => limit.is_some() || version.major >= 4,
        }
    }
}

/// A queue's dead letters for one reason: the message as republished and
/// where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadLetter {
    pub queue: String,
    pub reason: Reason,
    pub exchange: String,
    /// The dead-letter routing key, when the queue sets one.
    pub routing_key: Option<String>,
    /// The classes of keys the dead letters carry; routed, each of them.
    pub keys: Vec<Keys>,
    /// The headers of the dead letter as routed, when the original's were
    /// given: theirs and the death headers the broker adds.
    pub headers: Option<Table>,
    pub route: Route,
}

impl<'a> Router<'a> {
    /// The queue's dead-letter exchange and routing key, as set by its
    /// arguments and policies; `None` when it dead-letters nowhere.
    pub fn dead_letter_exchange(&self, queue: &str) -> Option<(&'a str, Option<&'a str>)> {
        self.dead_letter_exchange_of(self.vhost.queues.get(queue)?)
    }

    /// [`Router::dead_letter_exchange`] of `q`, one of the vhost's queues,
    /// without looking it up by name: for callers that ask of each queue.
    pub fn dead_letter_exchange_of(&self, q: &'a Queue) -> Option<(&'a str, Option<&'a str>)> {
        let (Value::String(exchange), _) =
            self.policies.setting(q, "x-dead-letter-exchange", "dead-letter-exchange")?
        else {
            return None;
        };
        let key = self.policies.setting(q, "x-dead-letter-routing-key", "dead-letter-routing-key");
        Some((exchange, key.and_then(|(v, _)| v.as_str())))
    }

    /// Whether a queue's settings make it dead-letter for `reason` (a
    /// publisher's per-message TTL aside): streams never dead-letter.
    pub fn dead_letters_for(&self, queue: &str, reason: Reason) -> bool {
        self.dead_letter_decision(queue, reason).is_some_and(|d| d.dead_letters())
    }

    /// What decides whether `queue` dead-letters for `reason`: the one
    /// decision behind [`Router::dead_letters_for`] and its words in
    /// [`Router::dead_letter_reasons`]. `None` for a queue the vhost does
    /// not hold.
    pub fn dead_letter_decision(&self, queue: &str, reason: Reason) -> Option<Decision<'a>> {
        let q = self.vhost.queues.get(queue)?;
        let set = |argument: &'static str, key: &'static str| {
            self.policies.setting(q, argument, key).map(|(value, by)| Setting { argument, key, value, by })
        };
        Some(match (q.kind, reason) {
            (QueueType::Stream, _) => Decision::Stream,
            (_, Reason::Rejected) => Decision::Rejected,
            (_, Reason::Expired) => Decision::Ttl(set("x-message-ttl", "message-ttl")),
            (_, Reason::Maxlen) => Decision::Maxlen {
                limit: set("x-max-length", "max-length").or_else(|| set("x-max-length-bytes", "max-length-bytes")),
                overflow: set("x-overflow", "overflow"),
            },
            (QueueType::Quorum, Reason::DeliveryLimit) => {
                Decision::DeliveryLimit { limit: set("x-delivery-limit", "delivery-limit"), version: self.version }
            }
            (_, Reason::DeliveryLimit) => Decision::NotQuorum,
        })
    }

    /// Where the dead letters of `queue` for `reason` go. `original`: the
    /// message that was dead-lettered, as it was published (its exchange,
    /// its routing key with its `CC` and `BCC` keys: the broker routes a
    /// dead letter by all of them, though its `x-death` names no `BCC`
    /// key); `None` for every message the queue can hold (the keys its
    /// bindings take).
    pub fn dead_letters(&self, queue: &str, reason: Reason, original: Option<&Message>) -> Option<DeadLetter> {
        let (exchange, routing_key) = self.dead_letter_exchange(queue)?;
        let keys = match (routing_key, original) {
            (Some(k), _) => vec![Keys::one(k)],
            (None, Some(m)) => vec![m.keys.clone()],
            (None, None) => self.keys_into(queue),
        };
        let headers = original
            .and_then(|m| Some((m, m.headers.as_ref()?)))
            .map(|(m, h)| with_death(h, queue, &m.exchange, reason, self.version));
        let mut route = Route::default();
        for k in &keys {
            let message = Message { exchange: exchange.to_string(), keys: k.clone(), headers: headers.clone() };
            merge(&mut route, self.route_from(&message, false, true));
        }
        // The broker drops a dead letter where it would come back without a
        // reject on the way; the queue it left is in its `x-death`.
        if reason != Reason::Rejected && route.queues.remove(queue) {
            route
                .dropped
                .push(Dropped { exchange: exchange.to_string(), why: Why::Cycle { queue: queue.to_string() } });
        }
        Some(DeadLetter {
            queue: queue.to_string(),
            reason,
            exchange: exchange.to_string(),
            routing_key: routing_key.map(str::to_string),
            keys,
            headers,
            route,
        })
    }

    /// The classes of keys the messages in `queue` carry: what its bindings
    /// take, and its name (a publish to the default exchange).
    pub fn keys_into(&self, queue: &str) -> Vec<Keys> {
        fn kind<'b>(vhost: &'b crate::model::Vhost, b: &'b Binding) -> &'b str {
            match vhost.exchanges.get(&b.source) {
                Some(x) => x.kind.as_str(),
                None if b.source.starts_with("amq.") => b.source.trim_start_matches("amq."),
                None => "unknown",
            }
        }
        let kind = |b: &'a Binding| kind(self.vhost, b);
        // Any key takes in every other class.
        if self.bindings_into(queue).iter().any(|b| !matches!(kind(b), "direct" | "topic")) {
            return vec![Keys::Any];
        }
        let mut keys = vec![Keys::one(queue)];
        for b in self.bindings_into(queue) {
            // A direct binding's key, or a topic binding's pattern.
            let class = if kind(b) == "topic" && b.routing_key.contains(['*', '#']) {
                Keys::Matching(b.routing_key.clone())
            } else {
                Keys::one(&b.routing_key)
            };
            if !keys.contains(&class) {
                keys.push(class);
            }
        }
        keys
    }
}

/// The headers of a dead letter as a headers exchange sees them (with
/// `x-match` `all-with-x` or `any-with-x`): the message's, with the
/// `x-first-death-*` headers the broker adds on its first death and, from
/// RabbitMQ 4, the `x-last-death-*` ones it sets on each (`mc:record_death`
/// keeps them as annotations, which `mc:routing_headers` includes).
/// `exchange` is the one the message was published to before it died.
fn with_death(headers: &Table, queue: &str, exchange: &str, reason: Reason, version: Version) -> Table {
    let mut out = headers.clone();
    let mut set = |which: &str| {
        out.insert(format!("x-{which}-death-reason"), Value::String(reason.as_str().into()));
        out.insert(format!("x-{which}-death-queue"), Value::String(queue.into()));
        out.insert(format!("x-{which}-death-exchange"), Value::String(exchange.into()));
    };
    if !headers.contains_key("x-first-death-reason") {
        set("first");
    }
    if version.major >= 4 {
        set("last");
    }
    out
}

fn merge(into: &mut Route, from: Route) {
    into.queues.extend(from.queues);
    into.path.extend(from.path);
    for c in from.cannot_tell {
        if !into.cannot_tell.contains(&c) {
            into.cannot_tell.push(c);
        }
    }
    for d in from.dropped {
        if !into.dropped.contains(&d) {
            into.dropped.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApplyTo, Binding, DestinationKind, Policy, Vhost};
    use crate::testing::objects::{exchange, queue, table};

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn bind(source: &str, queue: &str, key: &str, arguments: Table) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: queue.into(),
            routing_key: key.into(),
            arguments,
        }
    }

    fn policy(name: &str, pattern: &str, priority: i64, definition: Table) -> Policy {
        Policy { name: name.into(), pattern: pattern.into(), apply_to: ApplyTo::All, priority, definition }
    }

    /// Queue `q` (classic, `q-quorum` quorum) and a fanout `dlx` into `sink`.
    fn vhost(policies: Vec<Policy>) -> Vhost {
        let mut v = Vhost::new("v");
        v.exchanges.insert("dlx".into(), exchange("dlx", "fanout"));
        for (name, kind) in [("q", QueueType::Classic), ("q-quorum", QueueType::Quorum), ("sink", QueueType::Classic)] {
            v.queues.insert(name.into(), queue(name, kind, Table::new()));
        }
        v.bindings.insert(bind("dlx", "sink", "", Table::new()));
        v.objects.extend(crate::model::kinds::policies::objects(&policies));
        v
    }

    /// Conformance seed 1796470049694757230 and others on 3.10.8 and 4.0.5:
    /// a policy with an exchange's key (`alternate-exchange`) beside
    /// `dead-letter-exchange` applies to queues; the model skipped it.
    #[test]
    fn a_policy_with_an_exchange_key_still_applies_to_queues() {
        let v = vhost(vec![policy(
            "p",
            ".*",
            0,
            table(&[("alternate-exchange", s("ae")), ("dead-letter-exchange", s("dlx"))]),
        )]);
        for version in [Version::new(3, 10), Version::new(4, 0)] {
            let router = Router::new(&v, version);
            assert_eq!(router.dead_letter_exchange("q"), Some(("dlx", None)), "{version}");
            assert_eq!(router.dead_letter_exchange("q-quorum"), Some(("dlx", None)), "{version}");
        }
    }

    /// A key the queue's type refuses skips the policy for that queue,
    /// and which keys a type refuses changed in 4.0: classic queues took
    /// `max-in-memory-length` on 3.10 and refuse it on 4.0.
    #[test]
    fn a_key_the_queue_type_refuses_skips_the_policy_by_version() {
        let limit = table(&[("dead-letter-exchange", s("dlx")), ("max-in-memory-length", Value::Int(1000))]);
        let v = vhost(vec![policy("p", ".*", 0, limit)]);
        assert_eq!(Router::new(&v, Version::new(3, 10)).dead_letter_exchange("q"), Some(("dlx", None)));
        assert_eq!(Router::new(&v, Version::new(4, 0)).dead_letter_exchange("q"), None);
        // Quorum queues take it on both.
        assert!(Router::new(&v, Version::new(4, 0)).dead_letter_exchange("q-quorum").is_some());
        // `delivery-limit` is quorum queues' alone: a classic queue skips the
        // policy, and a lower one applies instead.
        let limit = table(&[("dead-letter-exchange", s("dlx")), ("delivery-limit", Value::Int(5))]);
        let v = vhost(vec![
            policy("high", ".*", 5, limit),
            policy("low", ".*", 1, table(&[("dead-letter-exchange", s(""))])),
        ]);
        let router = Router::new(&v, Version::new(3, 10));
        assert_eq!(router.dead_letter_exchange("q"), Some(("", None)));
        assert_eq!(router.dead_letter_exchange("q-quorum"), Some(("dlx", None)));
    }

    /// A dead letter's `x-first-death-exchange` is the exchange the message
    /// was published to, not the dead-letter exchange; RabbitMQ 4 also sets
    /// `x-last-death-*`, which `with-x` bindings see (seen on 4.0.5).
    #[test]
    fn death_headers_name_the_exchange_the_message_died_from() {
        let mut v = vhost(Vec::new());
        v.exchanges.insert("dlx".into(), exchange("dlx", "headers"));
        v.bindings.clear();
        let first = table(&[("x-match", s("all-with-x")), ("x-first-death-exchange", s("orders"))]);
        let last = table(&[("x-match", s("any-with-x")), ("x-last-death-queue", s("q"))]);
        v.bindings.insert(bind("dlx", "sink", "", first));
        v.bindings.insert(bind("dlx", "q-quorum", "", last));
        v.queues.get_mut("q").unwrap().arguments = table(&[("x-dead-letter-exchange", s("dlx"))]);
        let message = Message { exchange: "orders".into(), keys: Keys::one("k"), headers: Some(Table::new()) };
        let on = |version| {
            let router = Router::new(&v, version);
            router
                .dead_letters("q", Reason::Rejected, Some(&message))
                .unwrap()
                .route
                .queues
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(on(Version::new(3, 10)), ["sink"]);
        assert_eq!(on(Version::new(4, 0)), ["q-quorum", "sink"]);
    }

    /// The broker routes a dead letter by every key it was published with,
    /// `BCC` ones included (seen on 3.10.8: a `BCC` key reached the queue the
    /// dead-letter exchange binds with it): the caller gives them all.
    #[test]
    fn a_dead_letter_goes_on_with_all_its_keys() {
        let mut v = vhost(Vec::new());
        v.exchanges.insert("dlx".into(), exchange("dlx", "direct"));
        v.bindings.clear();
        v.bindings.insert(bind("dlx", "sink", "bcc-key", Table::new()));
        v.queues.get_mut("q").unwrap().arguments = table(&[("x-dead-letter-exchange", s("dlx"))]);
        let keys = Keys::Exact(vec!["q".into(), "bcc-key".into()]);
        let message = Message { exchange: String::new(), keys, headers: Some(Table::new()) };
        let router = Router::new(&v, Version::NEWEST);
        let letter = router.dead_letters("q", Reason::Expired, Some(&message)).unwrap();
        assert_eq!(letter.route.queues.into_iter().collect::<Vec<_>>(), ["sink"]);
    }
}
