//! The contract between services, checked on the routing model: each
//! queue read by one service, what each service publishes reaching some
//! queue and not refused, each queue consumed, and each consumed queue
//! reached by something a service publishes.
//!
//! Files without services (most of them, and the 10,000-queue benchmark)
//! have no contract: the check returns before it looks at a queue.

use std::collections::{BTreeMap, BTreeSet};

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::view::View;
use super::{Context, LISTED, describe_exchange, finding, listed};
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::services::{Publish, Service};
use crate::model::{DestinationKind, ObjectKey, Queue, Table, Value, Vhost};
use crate::routing::{DeadLetterRoutes, Keys, Landing, Message, Route, Why};

/// What the rules ask of one vhost's routes, each answer worked out once.
struct Reach<'v, 'a> {
    vhost: &'a Vhost,
    view: &'v View<'a>,
    routes: DeadLetterRoutes<'v, 'a>,
    /// Each queue's landing, and the exchange to walk where the model
    /// cannot tell: every queue is asked once for all of them, and the
    /// queues publishes reach (thousands) again.
    asked: FxHashMap<&'a str, Option<Asked<'a>>>,
    /// The queues the vhost holds (declared or external), hashed: a walk
    /// asks of each binding it follows, and a search of the ordered map
    /// compares a name with a dozen others.
    held: FxHashSet<&'a str>,
}

/// Where one queue's dead letters land, and their exchange when the model
/// cannot tell.
#[derive(Clone)]
struct Asked<'a> {
    landing: Rc<Landing<'a>>,
    pending: Option<&'a str>,
}

impl<'a> Reach<'_, 'a> {
    /// Adds to `out` where the dead letters of `queue` land, as the model
    /// names them; where it cannot tell, their exchange waits in `seen`
    /// for [`Reach::walk`]. Thousands of queues share a landing: each is
    /// added once.
    /// (`held`: the queue itself, when the caller has it.)
    fn dead_letters(&mut self, queue: &'a str, held: Option<&'a Queue>, seen: &mut Seen<'a>, out: &mut Vec<&'a str>) {
        let Some(asked) = self.asked(queue, held) else { return };
        if seen.landings.insert(Rc::as_ptr(&asked.landing)) {
            out.extend(asked.landing.queues.iter().copied());
        }
        if let Some(exchange) = asked.pending {
            seen.pending.push(exchange.to_string());
        }
    }

    /// `queue`'s [`Asked`], worked out on its first question.
    fn asked(&mut self, queue: &'a str, held: Option<&'a Queue>) -> Option<Asked<'a>> {
        if let Some(known) = self.asked.get(queue) {
            return known.clone();
        }
        let router = &self.view.router;
        let exchange = match held {
            Some(q) => router.dead_letter_exchange_of(q),
            None => router.dead_letter_exchange(queue),
        };
        let asked = exchange.map(|(exchange, key)| {
            let landing = self.routes.of_exchange(queue, exchange, key);
            let pending = landing.cannot_tell.then_some(exchange);
            Asked { landing, pending }
        });
        self.asked.insert(queue, asked.clone());
        asked
    }

    /// Adds to `out` every queue a message at the exchanges waiting in
    /// `seen` may reach, whatever its keys and headers: each binding
    /// followed, and each alternate exchange, each exchange once over all
    /// the walks (a walk per exchange went over the vhost's bindings once
    /// for each of a hundred headers exchanges).
    fn walk(&self, seen: &mut Seen<'a>, out: &mut Vec<&'a str>) {
        let mut work: Vec<String> = seen.pending.drain(..).filter(|x| seen.walked.insert(x.clone())).collect();
        while let Some(x) = work.pop() {
            for b in self.view.router.bindings_from(&x) {
                match b.destination_kind {
                    DestinationKind::Queue => out.extend(self.held.get(b.destination.as_str())),
                    DestinationKind::Exchange => {
                        if seen.walked.insert(b.destination.clone()) {
                            work.push(b.destination.clone());
                        }
                    }
                }
            }
            if let Some(ae) = self.view.router.alternate(&x)
                && seen.walked.insert(ae.to_string())
            {
                work.push(ae.to_string());
            }
        }
    }
}

/// The landings added, the exchanges walked, and those waiting to be.
#[derive(Default)]
struct Seen<'a> {
    landings: FxHashSet<*const Landing<'a>>,
    walked: FxHashSet<String>,
    pending: Vec<String>,
}

/// Where a finding goes: at a queue (whose `lint_allow` excuses it), or at
/// a field of a service (`consumes.N`, `publishes.N`).
enum Place {
    Queue(String),
    Service(String, String),
}

type Found = Vec<(Place, Diagnostic)>;

pub(super) fn check(ctx: &mut Context) {
    if !ctx.routing || ctx.topology.vhosts.values().all(|v| v.services.is_empty()) {
        return;
    }
    let mut found: Vec<(&str, Found)> = Vec::new();
    for (vname, vhost) in ctx.topology.vhosts.iter().filter(|(_, v)| !v.services.is_empty()) {
        let view = &ctx.views[vname.as_str()];
        let mut out = Found::new();
        shared(vhost, view, &mut out);
        let held = vhost.queues.keys().chain(&vhost.external.queues).map(String::as_str).collect();
        let mut reach =
            Reach { vhost, view, routes: DeadLetterRoutes::new(&view.router), asked: FxHashMap::default(), held };
        let (published, seen) = published(&mut reach, &mut out);
        let dead_lettered = dead_lettered(&mut reach);
        unconsumed(ctx, vname, vhost, &dead_lettered, &mut out);
        unreachable(&mut reach, published, seen, &mut out);
        found.push((vname, out));
    }
    for (vname, out) in found {
        for (place, d) in out {
            match place {
                Place::Queue(q) => ctx.report(&ObjectKey::Queue { vhost: vname.to_string(), name: q }, None, d),
                Place::Service(s, field) => ctx.report_service(vname, &s, &field, d),
            }
        }
    }
}

/// The queues of `vhost` that more than one service consumes, with those
/// services in name order: `shared-queue` says so here, and the check of
/// who may read each queue (`access.rs`) leaves them to it.
pub(super) fn consumed_by_several(vhost: &Vhost) -> BTreeMap<&str, Vec<&str>> {
    // Hashed, then the few shared ones put in order: 500 services consume
    // 10,000 queues, nearly all by one service each.
    let mut by_queue: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
    for s in vhost.services.values() {
        for q in s.consumes.iter().collect::<BTreeSet<_>>() {
            by_queue.entry(q).or_default().push(&s.name);
        }
    }
    by_queue.into_iter().filter(|(_, services)| services.len() > 1).collect()
}

/// `shared-queue`: two services consuming one queue. An error: the files
/// say both consume it, and a queue hands each message to one consumer.
fn shared(vhost: &Vhost, view: &View, out: &mut Found) {
    for (queue, services) in consumed_by_several(vhost) {
        let listed = services.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ");
        let mut d = finding(
            "shared-queue",
            format!(
                "queue \"{queue}\" is consumed by {} services, {listed}: each gets only part of its messages",
                services.len()
            ),
        )
        .help(shared_fix(vhost, view, queue, &services));
        d.severity = Severity::Error;
        // A queue of another project has no place here: the second
        // service's `consumes` entry names it.
        let place = if vhost.queues.contains_key(queue) {
            Place::Queue(queue.to_string())
        } else {
            let second = &vhost.services[services[1]];
            let i = second.consumes.iter().position(|q| q == queue).unwrap_or_default();
            Place::Service(second.name.clone(), format!("consumes.{i}"))
        };
        out.push((place, d));
    }
}

/// The fix for `queue`, consumed by `services`, as TOML: the first keeps
/// it, each other gets a queue of its own of the same type and arguments,
/// bound by the same bindings, and consumes that instead.
fn shared_fix(vhost: &Vhost, view: &View, queue: &str, services: &[&str]) -> String {
    let bindings = view.router.bindings_into(queue);
    let model = vhost.queues.get(queue);
    let mut out = String::from(
        "a queue hands each message to one consumer: give each other service a queue of its own, bound like this one (an exchange copies a message to each queue whose binding takes it).\n# add to the files:\n",
    );
    for s in &services[1..] {
        out += &super::live::queue_like(&super::live::own_queue(queue, s), model, bindings);
    }
    if bindings.is_empty() {
        out += &format!(
            "# publishers address \"{queue}\" by name: publish to a fanout exchange bound to each service's queue instead\n"
        );
    }
    out += "# and put in place of these services' `consumes`:\n";
    for s in &services[1..] {
        let own = super::live::own_queue(queue, s);
        let consumes: Vec<String> = vhost.services[*s]
            .consumes
            .iter()
            .map(|q| if q == queue { own.clone() } else { q.clone() })
            .map(|q| crate::toml_text::string(&q))
            .collect();
        out += &format!("[services.{}]\nconsumes = [{}]\n", crate::toml_text::key(s), consumes.join(", "));
    }
    super::live::spaced(out)
}

/// What each service publishes, routed: `publish-to-internal` where the
/// exchange refuses it, `publish-unroutable` where it reaches no queue.
/// Returns every queue some publish may reach, by the names the vhost holds
/// (where the model cannot tell, every queue below), and what was walked.
fn published<'a>(reach: &mut Reach<'_, 'a>, out: &mut Found) -> (FxHashSet<&'a str>, Seen<'a>) {
    let (vhost, view) = (reach.vhost, reach.view);
    let mut reached: FxHashSet<&'a str> = FxHashSet::default();
    let mut seen = Seen::default();
    // Services often publish alike (to one exchange with the same keys):
    // each such publish is routed once, and what it reaches added once.
    let mut routed: FxHashMap<(&str, &[String]), Rc<Vec<Routed<'a>>>> = FxHashMap::default();
    // The names reached, each looked up among the vhost's once at the end.
    let mut names: FxHashSet<&'a str> = FxHashSet::default();
    for s in vhost.services.values() {
        for (i, p) in s.publishes.iter().enumerate() {
            let place = || Place::Service(s.name.clone(), format!("publishes.{i}"));
            let exchange = describe_exchange(&p.exchange);
            // A publish with headers is its own: they are rarely alike.
            let cached = p.headers.is_empty().then(|| routed.get(&(p.exchange.as_str(), p.keys.as_slice()))).flatten();
            let routes = match cached {
                Some(r) => Rc::clone(r),
                None => {
                    let routes = Rc::new(routes(view, p));
                    if p.headers.is_empty() {
                        routed.insert((&p.exchange, &p.keys), Rc::clone(&routes));
                    }
                    for r in routes.iter() {
                        names.extend(r.queues.iter().copied());
                        seen.pending.extend(r.route.cannot_tell.iter().map(|c| c.exchange.clone()));
                    }
                    routes
                }
            };
            if routes.iter().any(|r| r.route.dropped.iter().any(|d| d.why == Why::Internal && d.exchange == p.exchange))
            {
                let d = finding(
                    "publish-to-internal",
                    format!("service \"{}\" publishes to {exchange}, which is internal: the broker refuses it", s.name),
                )
                .help("clients cannot publish to an internal exchange (the broker closes the channel, 403): publish to the exchange bound to it, or make it not internal");
                out.push((place(), d));
                continue;
            }
            if let Some(d) = unroutable(s, &exchange, &routes) {
                out.push((place(), d));
            }
        }
    }
    reached.extend(names.into_iter().filter_map(|q| reach.held.get(q).copied()));
    let mut below = Vec::new();
    reach.walk(&mut seen, &mut below);
    reached.extend(below);
    (reached, seen)
}

/// One message of a publish, routed: the queues it reaches apart from the
/// rest of its route.
struct Routed<'a> {
    sent: Sent,
    queues: Vec<&'a str>,
    route: Route,
}

impl Routed<'_> {
    /// Nothing reached and nothing the model cannot tell (as [`Route::nowhere`]).
    fn nowhere(&self) -> bool {
        self.queues.is_empty() && self.route.cannot_tell.is_empty()
    }
}

/// What one publish sends, as its messages are routed: a class of keys,
/// with the headers the service gives (`None`: not given, any headers).
struct Sent {
    keys: Keys,
    headers: Option<Table>,
}

impl Sent {
    fn describe(&self) -> String {
        let Some(headers) = &self.headers else { return self.keys.describe() };
        let headers = crate::toml_text::value(&Value::Table(headers.clone())).unwrap_or_default();
        match self.keys {
            Keys::Any => format!("headers {headers}"),
            _ => format!("{} with headers {headers}", self.keys.describe()),
        }
    }
}

/// The messages of publish `p`: each class of its keys, with each set of
/// headers it gives (or headers not known, when it gives none).
fn sent(view: &View, p: &Publish) -> Vec<Sent> {
    let classes = classes(view, &p.exchange, &p.keys);
    if p.headers.is_empty() {
        return classes.into_iter().map(|keys| Sent { keys, headers: None }).collect();
    }
    let sets = p.headers.iter();
    sets.flat_map(|h| classes.iter().map(|k| Sent { keys: k.clone(), headers: Some(h.clone()) })).collect()
}

/// Each message of publish `p`, routed.
fn routes<'a>(view: &View<'a>, p: &Publish) -> Vec<Routed<'a>> {
    let route = |sent: Sent| {
        let message = Message { exchange: p.exchange.clone(), keys: sent.keys.clone(), headers: sent.headers.clone() };
        let (queues, route) = view.router.reach_without_path(&message);
        Routed { sent, queues, route }
    };
    sent(view, p).into_iter().map(route).collect()
}

/// The classes of keys a publish to `exchange` sends: each key (a topic
/// pattern on a topic exchange as the class of keys it takes), or any key
/// when it lists none.
fn classes(view: &View, exchange: &str, keys: &[String]) -> Vec<Keys> {
    if keys.is_empty() {
        return vec![Keys::Any];
    }
    let topic = view.router.kind_of(exchange) == Some("topic");
    keys.iter()
        .map(
            |k| {
                if topic && k.split('.').any(|w| w == "*" || w == "#") {
                    Keys::Matching(k.clone())
                } else {
                    Keys::one(k)
                }
            },
        )
        .collect()
}

/// `publish-unroutable` for the classes of `routes` that reach no queue
/// and pass nowhere the model cannot tell. An error: the broker drops
/// what it cannot route (or returns it, to a publisher that asked).
fn unroutable(s: &Service, exchange: &str, routes: &[Routed]) -> Option<Diagnostic> {
    let lost: Vec<&Routed> = routes.iter().filter(|r| r.nowhere()).collect();
    let first = &lost.first()?.route;
    let (what, them) = match lost.as_slice() {
        [Routed { sent: Sent { keys: Keys::Any, headers: None }, .. }] => (String::new(), "what it publishes"),
        [r] => (format!(" {}", r.sent.describe()), "it"),
        _ => {
            let named: Vec<String> = lost.iter().take(LISTED).map(|r| r.sent.describe()).collect();
            let more = lost.len().saturating_sub(LISTED);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            (format!(" {}{more}", named.join(", ")), "them")
        }
    };
    let why = first.dropped.first().map(|d| Route::explain(&d.why, &d.exchange)).unwrap_or_default();
    let help = if lost.iter().any(|r| r.sent.headers.is_some()) {
        "the broker drops a message that reaches no queue: bind a queue whose arguments match these headers (`x-match` `all` or `any`), give the exchange an alternate exchange, or take the header set out of `headers` if the service does not publish it; if another project binds to it, say so with `lint_allow = [\"publish-unroutable\"]` on the service"
    } else if exchange == describe_exchange("") {
        "the broker drops a message that reaches no queue, and the default exchange delivers to the queue its key names: publish with the queue's name as the key, or take the key out of `keys` if the service does not publish it"
    } else {
        "the broker drops a message that reaches no queue: bind a queue that takes them, give the exchange an alternate exchange, or take the keys out of `keys` if the service does not publish them; if another project binds to it, say so with `lint_allow = [\"publish-unroutable\"]` on the service"
    };
    let mut d = finding(
        "publish-unroutable",
        format!("service \"{}\" publishes{what} to {exchange}, which routes {them} to no queue: {why}", s.name),
    )
    .help(help);
    d.severity = Severity::Error;
    Some(d)
}

/// The queues some queue's dead letters may land in.
fn dead_lettered<'a>(reach: &mut Reach<'_, 'a>) -> FxHashSet<&'a str> {
    let (mut seen, mut out) = (Seen::default(), Vec::new());
    for q in reach.vhost.queues.values() {
        reach.dead_letters(&q.name, Some(q), &mut seen, &mut out);
    }
    reach.walk(&mut seen, &mut out);
    out.into_iter().collect()
}

/// `queue-without-consumer`: a declared queue that no service consumes,
/// nothing dead-letters into, no shovel of the vhost moves on, and whose
/// name is not one a service declares for itself. A warning: its messages
/// pile up rather than vanish. Queues alike are one finding, at the first;
/// one with its own `lint_allow` is left to its own (allowed) finding.
fn unconsumed(ctx: &Context, vname: &str, vhost: &Vhost, dead_lettered: &FxHashSet<&str>, out: &mut Found) {
    let consumed: FxHashSet<&str> = vhost.services.values().flat_map(|s| &s.consumes).map(String::as_str).collect();
    let shovelled: FxHashSet<&str> = vhost
        .objects
        .iter()
        .filter(|(n, _)| n.kind.table == "shovels")
        .filter_map(|(_, body)| body.get("src-queue").and_then(Value::as_str))
        .collect();
    let prefixes: Vec<&str> = vhost.services.values().flat_map(|s| &s.declares.prefixes).map(String::as_str).collect();
    let mut alike = Vec::new();
    for q in vhost.queues.keys().map(String::as_str) {
        if consumed.contains(q)
            || dead_lettered.contains(q)
            || shovelled.contains(q)
            || prefixes.iter().any(|p| q.starts_with(p))
        {
            continue;
        }
        let key = ObjectKey::Queue { vhost: vname.to_string(), name: q.to_string() };
        if super::allowance(ctx.locations, &key, "queue-without-consumer").is_some() {
            out.push((Place::Queue(q.to_string()), unconsumed_finding(&[q])));
        } else {
            alike.push(q);
        }
    }
    if let Some(first) = alike.first() {
        out.push((Place::Queue(first.to_string()), unconsumed_finding(&alike)));
    }
}

fn unconsumed_finding(queues: &[&str]) -> Diagnostic {
    let what = match queues {
        [q] => format!("queue \"{q}\" is consumed by no service"),
        _ => format!("{} queues ({}) are consumed by no service", queues.len(), listed(queues)),
    };
    finding("queue-without-consumer", format!("{what}, and nothing dead-letters into it: its messages pile up"))
        .help("add the queue to the `consumes` of the service that reads it, or delete the queue if nothing does; if a consumer outside these services reads it, say so with `lint_allow = [\"queue-without-consumer\"]` on the queue")
}

/// `consumer-unreachable`: a service consumes declared queues that nothing
/// a service publishes reaches, directly or as a dead letter. A warning:
/// publishers outside the services may feed them. One finding per
/// service, at the first such queue of its `consumes`.
fn unreachable<'a>(reach: &mut Reach<'_, 'a>, mut reached: FxHashSet<&'a str>, mut seen: Seen<'a>, out: &mut Found) {
    let vhost = reach.vhost;
    // Dead letters of a reached queue reach where they land, and on.
    let mut work: Vec<&str> = reached.iter().copied().collect();
    let mut next = Vec::new();
    loop {
        while let Some(q) = work.pop() {
            reach.dead_letters(q, None, &mut seen, &mut next);
            work.extend(next.drain(..).filter(|n| reached.insert(n)));
        }
        if seen.pending.is_empty() {
            break;
        }
        reach.walk(&mut seen, &mut next);
        work.extend(next.drain(..).filter(|n| reached.insert(n)));
    }
    for s in vhost.services.values() {
        let lost: Vec<(usize, &str)> = (s.consumes.iter().enumerate())
            .filter(|(_, q)| vhost.queues.contains_key(*q) && !reached.contains(q.as_str()))
            .map(|(i, q)| (i, q.as_str()))
            .collect();
        let Some((first, _)) = lost.first() else { continue };
        let names: Vec<&str> = lost.iter().map(|(_, q)| *q).collect();
        let what = match names.as_slice() {
            [q] => format!("queue \"{q}\", which"),
            _ => format!("{} queues ({}), which", names.len(), listed(&names)),
        };
        let d = finding(
            "consumer-unreachable",
            format!("service \"{}\" consumes {what} nothing a service publishes reaches: it waits for messages no service sends", s.name),
        )
        .help("declare the service that publishes to it (its `publishes`, with the keys that reach the queue), bind the queue to the exchange the publishers use, or stop consuming it; if a publisher outside these services feeds it, say so with `lint_allow = [\"consumer-unreachable\"]` on the service");
        out.push((Place::Service(s.name.clone(), format!("consumes.{first}")), d));
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::diagnostic::{Diagnostic, Severity};

    const CODES: [&str; 5] =
        ["shared-queue", "publish-unroutable", "publish-to-internal", "queue-without-consumer", "consumer-unreachable"];

    /// The findings of the services' rules on `toml`, and those allowed.
    fn found(toml: &str) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        let root = Path::new("/t");
        let desired = crate::desired::load_texts(root, vec![(root.join("t.toml"), toml.to_string())]);
        let others: Vec<_> = desired.diagnostics.iter().filter(|d| d.is_error() && !CODES.contains(&d.code)).collect();
        assert!(others.is_empty(), "{others:?}");
        let f = crate::lint::check(&desired.topology, &desired.locations, &desired.project.lint);
        let ours = |d: &Diagnostic| CODES.contains(&d.code);
        (f.shown.into_iter().filter(ours).collect(), f.allowed.into_iter().map(|a| a.finding).filter(ours).collect())
    }

    fn codes(found: &[Diagnostic]) -> Vec<&str> {
        found.iter().map(|d| d.code).collect()
    }

    const USERS: &str = "[users.shop]\npassword_env = \"A\"\n[users.billing]\npassword_env = \"B\"\n[users.audit]\npassword_env = \"C\"\n";

    const SHARED: &str = r#"vhosts = ["shop"]
[exchanges.orders]
type = "topic"
[queues."orders.created"]
type = "quorum"
arguments = { x-delivery-limit = 5 }
lint_allow = ["quorum-without-dlx"]
[[bindings]]
source = "orders"
queue = "orders.created"
routing_key = "order.*"
[services.storefront]
user = "shop"
publishes = [{ exchange = "orders", keys = ["order.created"] }]
[services.audit]
user = "audit"
consumes = ["orders.created"]
[services.billing]
user = "billing"
consumes = ["orders.created"]
"#;

    #[test]
    fn files_without_services_have_no_contract_to_break() {
        let toml = format!("vhosts = [\"shop\"]\n[queues.lonely]\ntype = \"classic\"\n{USERS}");
        assert_eq!(found(&toml).0, vec![]);
        let topology = crate::testing::large_topology(200, 12, 500);
        let found = crate::lint::check(&topology, &Default::default(), &Default::default());
        assert!(found.shown.iter().all(|d| !CODES.contains(&d.code) || d.code == "shared-queue"));
    }

    #[test]
    fn two_services_on_one_queue_are_one_error_whose_printed_fix_ends_it() {
        let toml = format!("{SHARED}{USERS}");
        let (shown, _) = found(&toml);
        assert_eq!(codes(&shown), ["shared-queue"], "one finding, not one more from the users' permissions");
        let d = &shown[0];
        assert_eq!(d.severity, Severity::Error);
        assert!(!d.message.contains("more queue"), "{}", d.message);
        let help = d.help.as_deref().unwrap();
        let (add, consumes) = help.split_once("# add to the files:\n").unwrap().1.split_once("# and put").unwrap();
        assert!(add.contains("arguments = { x-delivery-limit = 5 }"), "same type and arguments: {add}");
        assert!(add.contains("routing_key = \"order.*\""), "bound alike: {add}");
        // Applied as printed: the new queue added, billing's `consumes` replaced.
        let line = consumes.lines().find(|l| l.starts_with("consumes = ")).unwrap();
        let billing = "[services.billing]\nuser = \"billing\"\n";
        let fixed = toml.replace(&format!("{billing}consumes = [\"orders.created\"]"), &format!("{billing}{line}"));
        let fixed = format!("{fixed}{add}");
        assert_eq!(codes(&found(&fixed).0), Vec::<&str>::new(), "{fixed}");
    }

    #[test]
    fn a_shared_queue_of_another_project_is_at_the_second_services_entry() {
        let toml = format!(
            "vhosts = [\"shop\"]\n[external]\nqueues = [\"jobs\"]\n[services.audit]\nuser = \"audit\"\nconsumes = [\"jobs\"]\n[services.billing]\nuser = \"billing\"\nconsumes = [\"x\", \"jobs\"]\n[queues.x]\ntype = \"classic\"\n{USERS}"
        );
        let (shown, _) = found(&toml);
        let shared: Vec<_> = shown.iter().filter(|d| d.code == "shared-queue").collect();
        assert_eq!(shared.len(), 1);
        let at = shared[0].location.as_ref().unwrap();
        assert_eq!(&toml[at.span.clone()], "\"jobs\"");
        assert!(toml[..at.span.start].contains("[services.billing]"));
        assert!(shared[0].help.as_deref().unwrap().contains("publishers address \"jobs\" by name"));
    }

    fn publishing(exchange: &str, binding: &str, keys: &str) -> String {
        format!(
            "vhosts = [\"shop\"]\n[exchanges.orders]\ntype = \"{exchange}\"\n[queues.q]\ntype = \"classic\"\n[[bindings]]\nsource = \"orders\"\nqueue = \"q\"\n{binding}\n[services.s]\nuser = \"shop\"\npublishes = [{{ exchange = \"orders\"{keys} }}]\n[services.c]\nuser = \"billing\"\nconsumes = [\"q\"]\n{USERS}"
        )
    }

    #[test]
    fn a_topic_pattern_is_routed_as_the_class_of_its_keys() {
        // "order.*" reaches q through "order.placed", though most of its
        // keys do not: some key of the pattern is routed.
        let toml = publishing("topic", "routing_key = \"order.placed\"", ", keys = [\"order.*\"]");
        assert_eq!(codes(&found(&toml).0), Vec::<&str>::new());
        // No key of "refund.#" meets "order.#".
        let toml = publishing("topic", "routing_key = \"order.#\"", ", keys = [\"refund.#\", \"order.x\"]");
        let (shown, _) = found(&toml);
        assert_eq!(codes(&shown), ["publish-unroutable"]);
        assert!(shown[0].message.contains("keys matching \"refund.#\" to exchange \"orders\""), "{}", shown[0].message);
        assert!(!shown[0].message.contains("order.x"), "{}", shown[0].message);
    }

    #[test]
    fn a_headers_exchange_whose_headers_are_not_given_may_reach_each_bound_queue() {
        let toml = publishing("headers", "arguments = { x-match = \"all\", kind = \"created\" }", "");
        assert_eq!(codes(&found(&toml).0), Vec::<&str>::new(), "nothing lost, nothing unreachable");
    }

    #[test]
    fn each_set_of_headers_a_service_gives_is_routed_and_those_reaching_nothing_are_named() {
        let binding = "arguments = { x-match = \"any\", kind = \"created\", region = \"eu\" }";
        // One table is one set; a set matching one `any` argument reaches q.
        let toml = publishing("headers", binding, ", headers = { region = \"eu\", n = 1 }");
        assert_eq!(codes(&found(&toml).0), Vec::<&str>::new());
        let sets = ", headers = [{ kind = \"created\" }, { kind = \"paid\", region = \"us\" }, { flag = true }]";
        let (shown, _) = found(&publishing("headers", binding, sets));
        assert_eq!(codes(&shown), ["publish-unroutable"]);
        let m = &shown[0].message;
        assert!(
            m.contains("publishes headers { kind = \"paid\", region = \"us\" }, headers { flag = true } to"),
            "{m}"
        );
        assert!(!m.contains("created"), "the set that reaches q is not named: {m}");
        assert!(shown[0].help.as_deref().unwrap().contains("whose arguments match these headers"));
    }

    #[test]
    fn a_float_header_stays_a_float_which_rabbitmq_4_tells_from_an_integer() {
        // The model routes at the newest version: `1.0` is not the binding's 1.
        let binding = "arguments = { x-match = \"all\", n = 1 }";
        let (shown, _) = found(&publishing("headers", binding, ", headers = [{ n = 1.0 }, { n = 1 }]"));
        assert_eq!(codes(&shown), ["publish-unroutable"]);
        assert!(shown[0].message.contains("headers { n = 1.0 }"), "{}", shown[0].message);
    }

    #[test]
    fn headers_that_reach_no_consumed_queue_leave_its_consumer_unreachable() {
        // Without headers the model cannot tell, and takes q as reached;
        // with them it can, and nothing reaches q.
        let binding = "arguments = { x-match = \"all\", kind = \"created\" }";
        let toml = publishing("headers", binding, ", headers = [{ kind = \"paid\" }]");
        let (shown, _) = found(&toml);
        assert_eq!(codes(&shown), ["publish-unroutable", "consumer-unreachable"]);
    }

    #[test]
    fn a_service_allows_a_finding_at_its_own_place() {
        let toml = publishing("direct", "routing_key = \"a\"", ", keys = [\"b\"]")
            .replace("[services.s]\n", "[services.s]\nlint_allow = [\"publish-unroutable\"]\n")
            .replace("[services.c]\n", "[services.c]\nlint_allow = [\"consumer-unreachable\"]\n");
        let (shown, allowed) = found(&toml);
        assert_eq!(codes(&shown), Vec::<&str>::new());
        assert_eq!(codes(&allowed), ["publish-unroutable", "consumer-unreachable"]);
    }

    #[test]
    fn queues_no_service_consumes_are_one_finding_and_one_that_allows_it_its_own() {
        let mut toml = format!("vhosts = [\"shop\"]\n[services.s]\nuser = \"shop\"\n{USERS}");
        for i in 0..5 {
            toml += &format!("[queues.q{i}]\ntype = \"classic\"\n");
        }
        toml += "[queues.kept]\ntype = \"classic\"\nlint_allow = [\"queue-without-consumer\"]\n";
        let (shown, allowed) = found(&toml);
        assert_eq!(codes(&shown), ["queue-without-consumer"]);
        assert!(shown[0].message.starts_with("5 queues (\"q0\", \"q1\", \"q2\" and 2 more)"), "{}", shown[0].message);
        assert_eq!(codes(&allowed), ["queue-without-consumer"]);
        assert!(allowed[0].message.contains("\"kept\""));
    }

    #[test]
    fn a_user_who_may_read_a_queue_a_service_consumes_still_shares_it() {
        // The services' users are looked up by what they consume, not
        // matched: a hand-written reader of the same queue is still found.
        let toml = format!(
            "vhosts = [\"shop\"]\n[queues.jobs]\ntype = \"classic\"\n[services.billing]\nuser = \"billing\"\nconsumes = [\"jobs\"]\n[permissions.audit]\nconfigure = \"^$\"\nwrite = \"^$\"\nread = \"^jo\"\n{USERS}"
        );
        let (shown, _) = found(&toml);
        let shared: Vec<_> = shown.iter().filter(|d| d.code == "shared-queue").collect();
        assert_eq!(shared.len(), 1, "{shown:?}");
        assert!(shared[0].message.contains("\"audit\", \"billing\""), "{}", shared[0].message);
        assert_eq!(shared[0].severity, Severity::Warning, "may read, by permissions: a warning");
    }
}
