//! One vhost as the rules ask about it: which policy applies to a queue or
//! an exchange, what a queue's setting comes out as from its argument and
//! its policy, and where a message published to an exchange goes.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::model::{
    BUILTIN_EXCHANGES, Binding, DestinationKind, Matcher, ObjectKey, Policy, Queue, Resolution, Table, Value, Vhost,
    binding_matches, resolution,
};
use crate::model::{applied_to_queue, precedence};
use crate::source::Locations;

pub(crate) struct View<'a> {
    pub vhost: &'a Vhost,
    by_source: FxHashMap<&'a str, Vec<&'a Binding>>,
    into_queue: FxHashMap<&'a str, Vec<&'a Binding>>,
    policies: Vec<Matcher<'a>>,
    /// The policy and operator policy applied to each queue, by its name.
    applied: FxHashMap<&'a str, Applied<'a>>,
    /// Exchanges and queues declared with errors: declared all the same.
    failed_exchanges: FxHashSet<&'a str>,
    failed_queues: FxHashSet<&'a str>,
}

/// The policy and the operator policy the broker applies to a queue.
pub(crate) type Applied<'a> = (Option<&'a Policy>, Option<&'a Policy>);

/// Where a queue's setting comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum From<'a> {
    /// Its `x-…` argument.
    Argument,
    /// The named policy (or operator policy) that applies to it.
    Policy(&'a Policy, bool),
}

/// Where messages published to an exchange with one key end up.
#[derive(Debug, Default)]
pub(crate) struct Reached {
    pub queues: BTreeSet<String>,
    /// Some path leads where the files cannot tell (an external exchange, a
    /// headers exchange, a plugin's type): it may route somewhere.
    pub unknown: bool,
}

impl From<'_> {
    /// Where a finding about a setting of `queue` goes: at its argument
    /// (`arguments.ARGUMENT`), or at the policy key that sets it.
    pub(crate) fn place(self, vhost: &str, queue: &str, argument: &str, policy_key: &str) -> (ObjectKey, String) {
        let queue = ObjectKey::Queue { vhost: vhost.to_string(), name: queue.to_string() };
        self.place_of(queue, argument, policy_key)
    }

    /// [`From::place`] for any object: `object` when its argument sets it.
    pub(crate) fn place_of(self, object: ObjectKey, argument: &str, policy_key: &str) -> (ObjectKey, String) {
        match self {
            From::Argument => (object, format!("arguments.{argument}")),
            From::Policy(p, operator) => {
                let (vhost, name) = (object.vhost().unwrap_or_default().to_string(), p.name.clone());
                let key = if operator {
                    ObjectKey::OperatorPolicy { vhost, name }
                } else {
                    ObjectKey::Policy { vhost, name }
                };
                (key, format!("definition.{policy_key}"))
            }
        }
    }
}

impl Reached {
    pub(crate) fn nowhere(&self) -> bool {
        self.queues.is_empty() && !self.unknown
    }
}

impl<'a> View<'a> {
    pub(crate) fn new(name: &'a str, vhost: &'a Vhost, locations: &'a Locations) -> Self {
        let mut by_source: FxHashMap<&str, Vec<&Binding>> = FxHashMap::default();
        let mut into_queue: FxHashMap<&str, Vec<&Binding>> = FxHashMap::default();
        for b in &vhost.bindings {
            by_source.entry(b.source.as_str()).or_default().push(b);
            if b.destination_kind == DestinationKind::Queue {
                into_queue.entry(b.destination.as_str()).or_default().push(b);
            }
        }
        let (mut failed_exchanges, mut failed_queues) = (FxHashSet::default(), FxHashSet::default());
        for key in &locations.named {
            match key {
                ObjectKey::Exchange { vhost: v, name: n } if v == name => {
                    failed_exchanges.insert(n.as_str());
                }
                ObjectKey::Queue { vhost: v, name: n } if v == name => {
                    failed_queues.insert(n.as_str());
                }
                _ => {}
            }
        }
        let policies: Vec<Matcher> = vhost.policies.values().map(Matcher::new).collect();
        let operator_policies: Vec<Matcher> = vhost.operator_policies.values().map(Matcher::new).collect();
        let applied = vhost
            .queues
            .values()
            .map(|q| (q.name.as_str(), (applied_to_queue(&policies, q), applied_to_queue(&operator_policies, q))))
            .collect();
        View { vhost, by_source, into_queue, policies, applied, failed_exchanges, failed_queues }
    }

    /// The bindings whose source is `exchange`.
    pub(crate) fn bindings_from(&self, exchange: &str) -> &[&'a Binding] {
        self.by_source.get(exchange).map_or(&[], Vec::as_slice)
    }

    /// Whether an exchange of this name exists for the files: declared
    /// (cleanly or not), external, or the broker's own.
    pub(crate) fn exchange_known(&self, name: &str) -> bool {
        name.is_empty()
            || self.vhost.exchanges.contains_key(name)
            || self.vhost.external.exchanges.contains(name)
            || BUILTIN_EXCHANGES.contains(&name)
            || self.failed_exchanges.contains(name)
    }

    pub(crate) fn queue_known(&self, name: &str) -> bool {
        self.vhost.queues.contains_key(name)
            || self.vhost.external.queues.contains(name)
            || self.failed_queues.contains(name)
    }

    /// The policy and the operator policy the broker applies to `queue`.
    pub(crate) fn queue_policies(&self, queue: &Queue) -> Applied<'a> {
        self.applied.get(queue.name.as_str()).copied().unwrap_or_default()
    }

    /// The policy the broker applies to exchange `name`.
    pub(crate) fn exchange_policy(&self, name: &str) -> Option<&'a Policy> {
        self.policies.iter().filter(|m| m.matches_exchange(name)).map(|m| m.policy).min_by(|a, b| precedence(a, b))
    }

    /// A queue's setting from argument `argument` and policy key `key`, as
    /// the broker resolves the two (`applied`: the queue's policies), with
    /// where the value comes from.
    pub(crate) fn setting(
        queue: &'a Queue,
        applied: Applied<'a>,
        argument: &str,
        key: &str,
    ) -> Option<(&'a Value, From<'a>)> {
        let by_argument = queue.arguments.get(argument).map(|v| (v, From::Argument));
        let (policy, operator) = applied;
        let by_policy = policy
            .and_then(|p| Some((p.definition.get(key)?, From::Policy(p, false))))
            .or_else(|| operator.and_then(|p| Some((p.definition.get(key)?, From::Policy(p, true)))));
        match (by_argument, by_policy, resolution(key, queue.kind)) {
            (Some(a), Some(p), Resolution::Min) => {
                Some(if p.0.as_int().zip(a.0.as_int()).is_some_and(|(p, a)| p < a) { p } else { a })
            }
            (Some(a), Some(_), Resolution::Argument) => Some(a),
            (Some(_), Some(p), Resolution::Policy) => Some(p),
            (a, p, _) => a.or(p),
        }
    }

    /// An exchange's alternate exchange: its argument, else its policy's.
    pub(crate) fn alternate(&self, exchange: &str) -> Option<(&'a str, From<'a>)> {
        let x = self.vhost.exchanges.get(exchange)?;
        if let Some(Value::String(ae)) = x.arguments.get("alternate-exchange") {
            return Some((ae, From::Argument));
        }
        let p = self.exchange_policy(exchange)?;
        match p.definition.get("alternate-exchange") {
            Some(Value::String(ae)) => Some((ae, From::Policy(p, false))),
            _ => None,
        }
    }

    /// Where a message published to `exchange` with `key` (and unknown
    /// headers) goes: each exchange by its type, exchange-to-exchange
    /// bindings followed once, an alternate exchange when its exchange
    /// routes nothing.
    pub(crate) fn route(&self, exchange: &str, key: &str) -> Reached {
        let mut out = Reached::default();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut work = vec![exchange];
        let no_headers = Table::new();
        while let Some(name) = work.pop() {
            if !seen.insert(name) {
                continue;
            }
            if name.is_empty() {
                // The default exchange: the queue the key names.
                if self.queue_known(key) {
                    out.queues.insert(key.to_string());
                }
                continue;
            }
            let kind = match self.vhost.exchanges.get(name) {
                Some(x) => x.kind.as_str(),
                None => {
                    // External, failed or the broker's own: not known here.
                    out.unknown |= self.exchange_known(name);
                    continue;
                }
            };
            let bindings = self.bindings_from(name);
            let known_kind = matches!(kind, "direct" | "fanout" | "topic");
            if !known_kind && !bindings.is_empty() {
                out.unknown = true;
            }
            let mut matched = false;
            for b in bindings
                .iter()
                .filter(|b| known_kind && binding_matches(kind, &b.routing_key, &b.arguments, key, &no_headers))
            {
                matched = true;
                match b.destination_kind {
                    DestinationKind::Queue => {
                        out.queues.insert(b.destination.clone());
                    }
                    DestinationKind::Exchange => work.push(&b.destination),
                }
            }
            if !matched && let Some((ae, _)) = self.alternate(name) {
                work.push(ae);
            }
        }
        out
    }

    /// The routing keys a queue's messages carry: those it is bound with;
    /// with no binding, its name (a publish to the default exchange).
    /// `None` when a binding takes any key (fanout, headers, a plugin's
    /// type, `*` or `#`).
    pub(crate) fn keys_into(&self, queue: &'a str) -> Option<BTreeSet<&'a str>> {
        let bindings = self.into_queue.get(queue).map_or(&[][..], Vec::as_slice);
        if bindings.is_empty() {
            return Some(BTreeSet::from([queue]));
        }
        let mut keys = BTreeSet::new();
        for b in bindings {
            let kind = self.vhost.exchanges.get(&b.source).map_or("unknown", |x| x.kind.as_str());
            if !matches!(kind, "direct" | "topic") || b.routing_key.contains(['*', '#']) {
                return None;
            }
            keys.insert(b.routing_key.as_str());
        }
        Some(keys)
    }
}
