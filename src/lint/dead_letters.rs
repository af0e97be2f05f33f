//! Where dead letters go: to an exchange that exists, on to some queue, and
//! not round in a circle the broker cuts by dropping them.

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use rustc_hash::FxHashMap;

use super::view::{From, View};
use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, QueueType, Value};
use crate::routing::{DeadLetterRoutes, Keys, Message, Reason};

/// A queue's dead-lettering, as its argument and policy resolve.
struct DeadLetters<'a> {
    queue: &'a str,
    exchange: &'a str,
    from: From<'a>,
    /// The key dead letters are published with; `None`: their own keys.
    key: Option<&'a str>,
    /// Messages leave the queue by expiring, not only by a consumer's reject.
    expires_messages: bool,
}

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        let view = &ctx.views[vname.as_str()];
        let mut letters = Vec::new();
        for q in vhost.queues.values() {
            let applied = view.queue_policies(q);
            if q.kind == QueueType::Quorum {
                let strategy = View::setting(q, applied, "x-dead-letter-strategy", "dead-letter-strategy");
                let overflow = View::setting(q, applied, "x-overflow", "overflow");
                if let Some((Value::String(s), from)) = strategy
                    && s == "at-least-once"
                    && overflow.is_none_or(|(v, _)| v.as_str() != Some("reject-publish"))
                {
                    let d = finding(
                        "at-least-once-without-reject-publish",
                        format!("quorum queue \"{}\" dead-letters at-least-once, but its overflow is not `reject-publish`", q.name),
                    )
                    .help("RabbitMQ then dead-letters at most once, as if the strategy were not set: set `x-overflow = \"reject-publish\"` (or the policy key `overflow`) on the queue");
                    found.push((from.place(vname, &q.name, "x-dead-letter-strategy", "dead-letter-strategy"), d));
                }
            }
            let Some((Value::String(exchange), from)) =
                View::setting(q, applied, "x-dead-letter-exchange", "dead-letter-exchange")
            else {
                continue;
            };
            let routing_key = View::setting(q, applied, "x-dead-letter-routing-key", "dead-letter-routing-key")
                .and_then(|(v, _)| v.as_str());
            let expires = view.router.dead_letters_for(&q.name, Reason::Expired);
            if !view.exchange_known(exchange) {
                let d = finding(
                    "dlx-missing",
                    format!("queue \"{}\" dead-letters to exchange \"{exchange}\", which is declared nowhere in vhost \"{vname}\"", q.name),
                )
                .label("no exchange of this name")
                .help(format!(
                    "RabbitMQ drops dead letters whose exchange is missing: declare [exchanges.\"{exchange}\"], or list it in `[external] exchanges` if another project declares it"
                ));
                found.push((from.place(vname, &q.name, "x-dead-letter-exchange", "dead-letter-exchange"), d));
                // Nowhere to land: no route to judge, no cycle to be part of.
                continue;
            }
            letters.push(DeadLetters { queue: &q.name, exchange, from, key: routing_key, expires_messages: expires });
        }
        if !ctx.routing {
            continue;
        }
        let landing = landings(view, vname, &letters, &mut found);
        cycles(vname, &letters, &landing, &mut found);
    }
    for ((key, field), d) in found {
        ctx.report(&key, Some(&field), d);
    }
}

/// Where each queue's dead letters land, as a reject sends them (any
/// reason routes alike; a reject's is not cut at the queue it left);
/// `dlx-unroutable` where they land nowhere.
fn landings<'a>(
    view: &View<'a>,
    vname: &str,
    letters: &[DeadLetters<'a>],
    found: &mut Vec<((ObjectKey, String), Diagnostic)>,
) -> FxHashMap<&'a str, Vec<&'a str>> {
    let mut routes = DeadLetterRoutes::new(&view.router);
    let mut landing: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
    for l in letters {
        let Some(letter) = routes.of(l.queue) else { continue };
        if letter.nowhere() {
            let exchange = if l.exchange.is_empty() {
                "the default exchange".into()
            } else {
                format!("exchange \"{}\"", l.exchange)
            };
            let how = match l.key {
                Some(k) => format!("{exchange} routes their key \"{k}\" to no queue"),
                None => format!("{exchange} routes none of the keys they carry to a queue"),
            };
            let d = finding("dlx-unroutable", format!("the dead letters of queue \"{}\" are lost: {how}", l.queue))
            .help("bind a queue to the dead-letter exchange for those keys, or set `x-dead-letter-routing-key` to a key it routes: RabbitMQ drops dead letters that route nowhere");
            found.push((l.from.place(vname, l.queue, "x-dead-letter-exchange", "dead-letter-exchange"), d));
        }
        let mut reached = letter.queues.clone();
        // Where a headers exchange could not tell, the headers of the
        // queue's own bindings can.
        if l.expires_messages && letter.cannot_tell {
            reached.extend(by_headers(view, l.queue));
        }
        landing.insert(l.queue, reached);
    }
    landing
}

/// Where dead letters of `queue` that came in through a headers binding
/// go: the model routes them with the headers that binding takes (which
/// they carry), where with unknown headers it could not tell. Only the
/// vhost's own queues, by the names it holds (a cycle runs through them).
fn by_headers<'a>(view: &View<'a>, queue: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for headers in view.router.headers_into(queue) {
        // The exchange they were published to names only their death.
        let message = Message { exchange: String::new(), keys: Keys::Any, headers: Some(headers) };
        if let Some(letter) = view.router.dead_letters(queue, Reason::Rejected, Some(&message)) {
            let held = letter.route.queues.iter().filter_map(|q| view.vhost.queues.get_key_value(q.as_str()));
            out.extend(held.map(|(name, _)| name.as_str()));
        }
    }
    out
}

/// Cycles of queues whose messages expire into each other's dead-letter
/// exchanges: the broker drops a message that comes back to a queue when
/// no consumer rejected it on the way.
fn cycles(
    vname: &str,
    letters: &[DeadLetters],
    landing: &FxHashMap<&str, Vec<&str>>,
    found: &mut Vec<((ObjectKey, String), Diagnostic)>,
) {
    let expiring: FxHashMap<&str, &DeadLetters> =
        letters.iter().filter(|l| l.expires_messages).map(|l| (l.queue, l)).collect();
    let mut graph: DiGraph<&str, ()> = DiGraph::new();
    let mut index = FxHashMap::default();
    for q in expiring.keys() {
        index.insert(*q, graph.add_node(*q));
    }
    for (q, to) in landing {
        let Some(&from) = index.get(q) else { continue };
        for t in to {
            if let Some(&target) = index.get(t) {
                graph.add_edge(from, target, ());
            }
        }
    }
    for component in tarjan_scc(&graph) {
        let first = graph[component[0]];
        let looped = component.len() > 1 || graph.contains_edge(component[0], component[0]);
        if !looped {
            continue;
        }
        let mut names: Vec<&str> = component.iter().map(|n| graph[*n]).collect();
        names.sort_unstable();
        let path = if names.len() == 1 {
            format!("queue \"{first}\" dead-letters expired messages back into itself")
        } else {
            format!("queues {} dead-letter expired messages into each other", quoted(&names))
        };
        for q in names {
            let l = expiring[q];
            let d = finding("dlx-cycle", format!("{path}: RabbitMQ drops a message the second time round"))
                .help("a message that comes back to a queue with no consumer's reject on the way is dropped: break the cycle, or let a consumer reject (retry queues dead-letter back to a queue whose consumers reject)");
            found.push((l.from.place(vname, q, "x-dead-letter-exchange", "dead-letter-exchange"), d));
        }
    }
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}
