//! Routing a message through a vhost's exchanges, as
//! `rabbit_exchange:route/2` does: each exchange by its type, bindings to
//! exchanges followed with each exchange visited once, and an exchange
//! that routes nothing handing the message to its alternate exchange.

use std::collections::{BTreeSet, VecDeque};

use rustc_hash::FxHashMap;

use super::policies::{Applied, Policies};
use super::{CannotTell, Dropped, Hop, Keys, Message, Route, Version, Why, headers, topic};
use crate::model::{Binding, DestinationKind, Exchange, Policy, Queue, Vhost};

/// One vhost's routing: its bindings by source, its policies resolved.
pub struct Router<'a> {
    pub(super) vhost: &'a Vhost,
    pub(super) version: Version,
    by_source: FxHashMap<&'a str, Vec<&'a Binding>>,
    /// The vhost's exchanges by name, hashed: a walk asks several times
    /// of each exchange it visits, and a search of the vhost's ordered map
    /// compares a name with a dozen others.
    exchanges: FxHashMap<&'a str, &'a Exchange>,
    pub(super) into_queue: FxHashMap<&'a str, Vec<&'a Binding>>,
    pub(super) policies: Policies<'a>,
    /// The fanout exchanges with bindings, their destinations apart: a
    /// message's walk takes them whatever its keys, and a route through a
    /// fanout hub adds a thousand queues at once rather than binding by
    /// binding (the plan's routing change routes each class of keys from
    /// such a hub on both sides).
    fanouts: FxHashMap<&'a str, Fanout<'a>>,
}

/// Where a fanout exchange sends every message: its queues, and its
/// exchanges in the order of their bindings.
struct Fanout<'a> {
    queues: Vec<&'a str>,
    exchanges: Vec<&'a str>,
}

/// An exchange's type as the router knows it.
#[derive(Clone, Copy)]
enum Kind<'a> {
    Default,
    Typed {
        kind: &'a str,
        internal: bool,
    },
    /// Declared by someone else: its type is not known here.
    External,
}

/// The broker's own exchanges and their types.
use crate::model::builtin_exchange as builtin;

/// Where one exchange sends a message (or class): destinations, each with
/// the key of the binding that took it there (`None`: the default
/// exchange's), and whether some keys of the class are left over for the
/// alternate exchange.
struct Step<'a> {
    to: Vec<(Option<&'a str>, Target<'a>)>,
    leftover: bool,
}

/// A destination of a step: a queue, or an exchange with the class that
/// goes on there (a queue's needs none: the keys are made only for what
/// routes on; `None`: the keys as they came, exact keys going on as they
/// are).
enum Target<'a> {
    Queue(&'a str),
    Exchange(&'a str, Option<Keys>),
}

/// The exchange types the router models, and the rest.
#[derive(Clone, Copy)]
enum Type {
    Direct,
    Fanout,
    Topic,
    Headers,
    Plugin,
}

/// What a binding that takes a message hands on: the class as it came.
fn same(keys: &Keys, _: &str) -> Keys {
    keys.clone()
}

/// The exchanges a walk has yet to visit. A message's keys never change on
/// its way: its walk carries none (`None`: the keys as they came), and
/// visits each exchange once. A class's walk carries its classes, and
/// visits an exchange once per class that reaches it.
struct Walk<'m> {
    own: &'m Keys,
    message_exact: bool,
    seen: BTreeSet<(&'m str, Keys)>,
    /// The exchanges visited, so that a message's next one is told in one
    /// look (not by a scan of `seen`: quadratic in the exchanges a fanout
    /// chain visits).
    visited: rustc_hash::FxHashSet<&'m str>,
    work: VecDeque<(&'m str, Option<Keys>)>,
}

impl<'m> Walk<'m> {
    fn new(start: &'m str, own: &'m Keys) -> Self {
        let message_exact = matches!(own, Keys::Exact(_));
        let mut seen = BTreeSet::new();
        if !message_exact {
            seen.insert((start, own.clone()));
        }
        let visited = rustc_hash::FxHashSet::from_iter([start]);
        Walk { own, message_exact, seen, visited, work: VecDeque::from([(start, None)]) }
    }

    /// Exchange `x` next, with class `k` (`None`: `keys`, those of the
    /// exchange it comes from).
    fn next(&mut self, x: &'m str, k: Option<Keys>, keys: &Keys) {
        let first = self.visited.insert(x) || !matches!(keys, Keys::Exact(_));
        if !first {
            return;
        }
        if self.message_exact {
            self.work.push_back((x, None));
            return;
        }
        let k = k.unwrap_or_else(|| keys.clone());
        if self.seen.insert((x, k.clone())) {
            self.work.push_back((x, Some(k)));
        }
    }
}

/// What a message that went where `route_from` went reached, the queues
/// as the vhost names them (in no order, some more than once) apart from
/// the rest of the route.
pub(super) struct Reached<'a> {
    pub(super) queues: Vec<&'a str>,
    pub(super) route: Route,
}

impl<'a> Router<'a> {
    pub fn new(vhost: &'a Vhost, version: Version) -> Self {
        Self::build(vhost, version, true, vhost.bindings.iter())
    }

    /// A router that only routes messages from exchanges (the plan's
    /// routing change, two per vhost): it leaves out the bindings by queue,
    /// a list for each of thousands of queues that only dead letters and
    /// lint ask for ([`Router::bindings_into`] answers none).
    pub(super) fn for_routes(vhost: &'a Vhost, version: Version) -> Self {
        Self::build(vhost, version, false, vhost.bindings.iter())
    }

    /// [`Router::for_routes`] of `vhost` with `bindings` (ordered as a
    /// vhost orders its own) in place of its own: a plan's side once
    /// applied, its bindings laid over the live vhost's without a copy.
    pub(super) fn for_routes_over(vhost: &'a Vhost, version: Version, bindings: &[&'a Binding]) -> Self {
        Self::build(vhost, version, false, bindings.iter().copied())
    }

    fn build(vhost: &'a Vhost, version: Version, by_queue: bool, bindings: impl Iterator<Item = &'a Binding>) -> Self {
        let mut by_source: FxHashMap<&str, Vec<&Binding>> = FxHashMap::default();
        let mut into_queue: FxHashMap<&str, Vec<&Binding>> =
            FxHashMap::with_capacity_and_hasher(if by_queue { vhost.queues.len() } else { 0 }, Default::default());
        // The bindings are ordered by source: each exchange's are one run,
        // put in the map once (lint makes a router of 20,000 bindings).
        let mut run: Vec<&Binding> = Vec::new();
        for b in bindings {
            if let Some(first) = run.first().filter(|first| first.source != b.source) {
                by_source.insert(first.source.as_str(), std::mem::take(&mut run));
            }
            run.push(b);
            if by_queue && b.destination_kind == DestinationKind::Queue {
                into_queue.entry(b.destination.as_str()).or_default().push(b);
            }
        }
        if let Some(first) = run.first() {
            by_source.insert(first.source.as_str(), run);
        }
        let exchanges: FxHashMap<&str, &Exchange> = vhost.exchanges.iter().map(|(n, x)| (n.as_str(), x)).collect();
        let fanouts = fanouts(&by_source, &exchanges);
        let policies = Policies::new(vhost, version.major);
        Router { vhost, version, by_source, exchanges, into_queue, policies, fanouts }
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// An exchange's type as routing knows it: declared, or that of the
    /// broker's own `amq.*` exchange; `None` for the default exchange and
    /// for one the vhost does not type (declared elsewhere, or not at all).
    pub fn kind_of(&self, name: &str) -> Option<&'a str> {
        match self.exchanges.get(name) {
            Some(x) => Some(&x.kind),
            None => builtin(name).map(|(kind, _)| kind),
        }
    }

    /// The policy and the operator policy the broker applies to `queue`,
    /// matched once for all the vhost's queues.
    pub fn queue_policies(&self, queue: &Queue) -> Applied<'a> {
        self.policies.applied(queue)
    }

    /// The policy the broker applies to exchange `name`.
    pub fn exchange_policy(&self, name: &str) -> Option<&'a Policy> {
        self.policies.exchange_policy(name)
    }

    fn kind(&self, name: &str) -> Option<Kind<'a>> {
        if name.is_empty() || name == "amq.default" {
            return Some(Kind::Default);
        }
        if let Some(x) = self.exchanges.get(name) {
            return Some(Kind::Typed { kind: &x.kind, internal: x.internal });
        }
        if let Some((kind, internal)) = builtin(name) {
            return Some(Kind::Typed { kind, internal });
        }
        self.vhost.external.exchanges.contains(name).then_some(Kind::External)
    }

    /// Whether an exchange of this name exists for the model.
    pub fn exchange_exists(&self, name: &str) -> bool {
        name.is_empty()
            || name == "amq.default"
            || self.exchanges.contains_key(name)
            || builtin(name).is_some()
            || self.vhost.external.exchanges.contains(name)
    }

    pub fn queue_exists(&self, name: &str) -> bool {
        self.vhost.queues.contains_key(name) || self.vhost.external.queues.contains(name)
    }

    /// Each exchange that is the source of some binding, with those
    /// bindings, in no order.
    pub(super) fn sources(&self) -> impl Iterator<Item = (&'a str, &[&'a Binding])> {
        self.by_source.iter().map(|(x, bs)| (*x, bs.as_slice()))
    }

    /// The bindings whose source is `exchange`.
    pub fn bindings_from(&self, exchange: &str) -> &[&'a Binding] {
        self.by_source.get(exchange).map_or(&[], Vec::as_slice)
    }

    /// The bindings into queue `queue`.
    pub fn bindings_into(&self, queue: &str) -> &[&'a Binding] {
        self.into_queue.get(queue).map_or(&[], Vec::as_slice)
    }

    /// An exchange's alternate exchange, its argument before its policy;
    /// a policy gives one to the broker's own `amq.*` exchanges too (the
    /// default exchange routes by name alone: it never has one).
    pub fn alternate(&self, exchange: &str) -> Option<&'a str> {
        match self.exchanges.get(exchange) {
            Some(x) => self.policies.alternate(exchange, Some(&x.arguments)),
            None if builtin(exchange).is_some() => self.policies.alternate(exchange, None),
            None => None,
        }
    }

    /// Where `message`, published by a client, goes: the queues it
    /// reaches, each once, and the path.
    pub fn route(&self, message: &Message) -> Route {
        self.route_from(message, true, true)
    }

    /// [`Router::route`] without the path: for callers that ask only where
    /// hundreds of messages go, and why those that go nowhere are dropped.
    pub fn route_without_path(&self, message: &Message) -> Route {
        self.route_from(message, true, false)
    }

    /// [`Router::route`] for a message the broker publishes itself (a dead
    /// letter), which an internal exchange takes (`client` false); without
    /// the path when `path` is false, for callers that ask only where
    /// thousands of messages go (the path's names are most of the cost).
    pub(super) fn route_from(&self, message: &Message, client: bool, path: bool) -> Route {
        let Reached { mut queues, mut route } = self.reach(message, client, path);
        queues.sort_unstable();
        queues.dedup();
        route.queues = queues.into_iter().map(str::to_string).collect();
        route
    }

    /// Where `message`, published by a client, goes, without the path,
    /// and the queues it reaches apart, by the names of the bindings that
    /// reach them, in no order and perhaps more than once (the route's own
    /// `queues` left empty). For callers that route hundreds of messages
    /// and keep where they go in sets of their own, without a copy of each
    /// name: sorting each route's thousands of names cost them a tenth.
    pub(crate) fn reach_without_path(&self, message: &Message) -> (Vec<&'a str>, Route) {
        let Reached { queues, route } = self.reach(message, true, false);
        (queues, route)
    }

    /// [`Router::route_from`] with the queues reached apart, by the names
    /// the vhost holds: for callers that route thousands of messages and
    /// keep where they went.
    pub(super) fn reach<'m>(&self, message: &'m Message, client: bool, path: bool) -> Reached<'a>
    where
        'a: 'm,
    {
        let mut out = Route::default();
        let mut queues = Vec::new();
        let start = message.exchange.as_str();
        match self.kind(start) {
            None => {
                out.dropped.push(Dropped { exchange: start.to_string(), why: Why::NoSuchExchange });
                return Reached { queues, route: out };
            }
            Some(Kind::Typed { internal: true, .. }) if client => {
                out.dropped.push(Dropped { exchange: start.to_string(), why: Why::Internal });
                return Reached { queues, route: out };
            }
            _ => {}
        }
        let mut walk = Walk::new(start, &message.keys);
        while let Some((name, carried)) = walk.work.pop_front() {
            let keys = carried.as_ref().unwrap_or(walk.own);
            let mut next = |x: &'m str, k: Option<Keys>| walk.next(x, k, keys);
            if !path && self.fanned(name, &mut queues, &mut out, |x| next(x, None)) {
                continue;
            }
            let Some(step) = self.step(name, keys, message, &mut out) else { continue };
            let routed = !step.to.is_empty();
            queues.reserve(step.to.len());
            for (key, target) in step.to {
                match target {
                    Target::Queue(dest) => {
                        if path {
                            out.path.push(hop(name, key, DestinationKind::Queue, dest));
                        }
                        queues.push(dest);
                    }
                    Target::Exchange(dest, k) => {
                        if path {
                            out.path.push(hop(name, key, DestinationKind::Exchange, dest));
                        }
                        if self.kind(dest).is_none() {
                            out.dropped.push(Dropped { exchange: dest.to_string(), why: Why::NoSuchExchange });
                        } else {
                            next(dest, k);
                        }
                    }
                }
            }
            if routed && !step.leftover {
                continue;
            }
            match self.alternate(name) {
                Some(ae) if self.kind(ae).is_some() => {
                    if path {
                        out.path.push(Hop::Alternate { exchange: name.to_string(), alternate: ae.to_string() });
                    }
                    next(ae, None);
                }
                Some(ae) if !routed => out.dropped.push(Dropped {
                    exchange: name.to_string(),
                    why: Why::AlternateMissing { alternate: ae.to_string() },
                }),
                None if !routed && !matches!(self.kind(name), Some(Kind::Default)) => {
                    out.dropped.push(Dropped { exchange: name.to_string(), why: Why::NoBindingMatched })
                }
                _ => {}
            }
        }
        Reached { queues, route: out }
    }

    /// A step through `name` when it is a fanout exchange with bindings,
    /// which routes all it takes (no alternate exchange; the keys, one key
    /// or a class, go on as they came): its queues added at once, each
    /// exchange bound handed to `next`. False for any other exchange.
    fn fanned(&self, name: &str, queues: &mut Vec<&'a str>, out: &mut Route, mut next: impl FnMut(&'a str)) -> bool {
        let Some(f) = self.fanouts.get(name) else { return false };
        queues.extend_from_slice(&f.queues);
        for &dest in &f.exchanges {
            if self.kind(dest).is_none() {
                out.dropped.push(Dropped { exchange: dest.to_string(), why: Why::NoSuchExchange });
            } else {
                next(dest);
            }
        }
        true
    }

    /// What exchange `name` does with `keys`; `None` when it cannot tell
    /// (said in `out`).
    fn step(&self, name: &str, keys: &Keys, message: &Message, out: &mut Route) -> Option<Step<'a>> {
        let cannot =
            |out: &mut Route, why: String| out.cannot_tell.push(CannotTell { exchange: name.to_string(), why });
        let bindings = self.bindings_from(name);
        let (kind, _) = match self.kind(name)? {
            Kind::Default => return Some(self.default_exchange(keys, out)),
            Kind::External => {
                cannot(out, "it is declared outside these files: its type is not known here".into());
                return None;
            }
            Kind::Typed { kind, internal } => (kind, internal),
        };
        // The type told once, not at each binding: a walk meets thousands.
        let typed = match kind {
            "direct" => Type::Direct,
            "fanout" => Type::Fanout,
            "topic" => Type::Topic,
            "headers" => Type::Headers,
            _ => Type::Plugin,
        };
        // A direct or topic exchange most often takes few of its bindings.
        let mut to = Vec::with_capacity(if matches!(typed, Type::Fanout) { bindings.len() } else { 0 });
        // Exact keys go on as they came: no class to make.
        let exact = matches!(keys, Keys::Exact(_));
        let mut leftover = !exact;
        for b in bindings {
            // The class that goes on, when the binding takes the message.
            let through: fn(&Keys, &str) -> Keys = match typed {
                Type::Direct if keys.admits(&b.routing_key) => Keys::through_key,
                Type::Fanout => {
                    leftover = false;
                    same
                }
                Type::Topic if keys.meets_pattern(&b.routing_key) => {
                    if let Keys::Any = keys {
                        leftover &= !topic::covers(&b.routing_key, "#");
                    } else if let Keys::Matching(p) = keys {
                        leftover &= !topic::covers(&b.routing_key, p);
                    }
                    Keys::through_pattern
                }
                Type::Headers => match &message.headers {
                    Some(h) => {
                        leftover = false;
                        if !headers::matches(&b.arguments, h, self.version) {
                            continue;
                        }
                        same
                    }
                    None => {
                        cannot(out, "it is a headers exchange, and the message's headers are not given".into());
                        return None;
                    }
                },
                Type::Direct | Type::Topic => continue,
                Type::Plugin => {
                    cannot(out, format!("its type `{kind}` is a plugin's: warren does not model how it routes"));
                    return None;
                }
            };
            let target = match b.destination_kind {
                DestinationKind::Queue => Target::Queue(&b.destination),
                DestinationKind::Exchange => {
                    Target::Exchange(&b.destination, (!exact).then(|| through(keys, &b.routing_key)))
                }
            };
            to.push((Some(b.routing_key.as_str()), target));
        }
        if !matches!(kind, "direct" | "fanout" | "topic" | "headers") && bindings.is_empty() {
            cannot(out, format!("its type `{kind}` is a plugin's: warren does not model how it routes"));
            return None;
        }
        Some(Step { to, leftover })
    }

    /// The default exchange: the queue each key names.
    fn default_exchange(&self, keys: &Keys, out: &mut Route) -> Step<'a> {
        let named: Vec<&'a str> = match keys {
            Keys::Exact(keys) => {
                let mut named = Vec::new();
                for k in keys {
                    match self.vhost.queues.get_key_value(k.as_str()) {
                        Some((name, _)) => named.push(name.as_str()),
                        None => match self.vhost.external.queues.get(k.as_str()) {
                            Some(name) => named.push(name.as_str()),
                            None => out
                                .dropped
                                .push(Dropped { exchange: String::new(), why: Why::NoSuchQueue { queue: k.clone() } }),
                        },
                    }
                }
                named
            }
            Keys::Any => self.all_queues().collect(),
            Keys::Matching(p) => self.all_queues().filter(|q| topic::matches(p, q)).collect(),
        };
        let to = named.into_iter().map(|q| (None, Target::Queue(q))).collect();
        Step { to, leftover: false }
    }

    fn all_queues(&self) -> impl Iterator<Item = &'a str> {
        self.vhost.queues.keys().chain(self.vhost.external.queues.iter()).map(String::as_str)
    }
}

/// The [`Fanout`] of each fanout exchange (declared, or the broker's own)
/// that has bindings.
fn fanouts<'a>(
    by_source: &FxHashMap<&'a str, Vec<&'a Binding>>,
    exchanges: &FxHashMap<&'a str, &'a Exchange>,
) -> FxHashMap<&'a str, Fanout<'a>> {
    let fanout = |name: &str| match exchanges.get(name) {
        Some(x) => x.kind == "fanout",
        None => builtin(name).is_some_and(|(kind, _)| kind == "fanout"),
    };
    let mut out = FxHashMap::default();
    for (&name, bindings) in by_source.iter().filter(|(name, bs)| !bs.is_empty() && fanout(name)) {
        let mut f = Fanout { queues: Vec::new(), exchanges: Vec::new() };
        for b in bindings {
            match b.destination_kind {
                DestinationKind::Queue => f.queues.push(b.destination.as_str()),
                DestinationKind::Exchange => f.exchanges.push(b.destination.as_str()),
            }
        }
        out.insert(name, f);
    }
    out
}

fn hop(exchange: &str, key: Option<&str>, kind: DestinationKind, destination: &str) -> Hop {
    match key {
        None => Hop::Default { queue: destination.to_string() },
        Some(key) => Hop::Binding {
            exchange: exchange.to_string(),
            key: key.to_string(),
            destination_kind: kind.as_str(),
            destination: destination.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApplyTo, Policy, Table, Value};

    /// Conformance seed 1796470049694757230 on 3.10.8: a policy gives the
    /// broker's own exchanges an alternate exchange too; the model only
    /// looked at exchanges declared in the files.
    #[test]
    fn a_policy_gives_amq_exchanges_an_alternate_exchange() {
        let mut v = Vhost::new("v");
        let definition: Table =
            [("alternate-exchange".to_string(), Value::String("amq.fanout".into()))].into_iter().collect();
        let p = Policy {
            name: "p".into(),
            pattern: "^amq\\.headers$".into(),
            apply_to: ApplyTo::Exchanges,
            priority: 0,
            definition,
        };
        v.set_policy(&p);
        v.bindings.insert(Binding {
            source: "amq.fanout".into(),
            destination_kind: DestinationKind::Queue,
            destination: "q".into(),
            routing_key: String::new(),
            arguments: Table::new(),
        });
        let router = Router::new(&v, Version::NEWEST);
        assert_eq!(router.alternate("amq.headers"), Some("amq.fanout"));
        assert_eq!(router.alternate(""), None);
        let message = Message::new("amq.headers", "k");
        assert_eq!(router.route(&message).queues.into_iter().collect::<Vec<_>>(), ["q"]);
    }
}
