//! The picture of a change in the pull-request comment: the routing around
//! what the plan changes, the files' side with what the change removes
//! from the live side, each binding, exchange and queue marked by what the
//! change does to it (see [`crate::render::graph::picture`]); and the
//! services whose permissions change, with what they publish to and
//! consume.

use crate::diff::Action;
use crate::model::{ObjectKey, Topology, Vhost, around};
use crate::plan::Plan;
use crate::render::graph::{self, Mark, Marks, Picture, VhostMarks};
use crate::render::routing::RoutingDoc;

/// The most nodes a pull-request comment's picture of a change draws: past
/// that it is no picture anyone reads (`warren graph` draws all).
const PICTURED: usize = 60;

/// The routing around what the plan changes, from `live` to `desired`;
/// none when nothing routed changes or when there is too much of it to
/// draw.
pub(super) fn of_change(desired: &Topology, live: &Topology, plan: &Plan, routing: &[RoutingDoc]) -> Option<Picture> {
    let changes = || plan.changes.iter().filter(|c| !matches!(c.action, Action::Unmanaged | Action::OtherProject));
    let keys: Vec<ObjectKey> = changes().map(|c| c.key.clone()).collect();
    // Each changed exchange and queue on either side is drawn: past the
    // limit, no need to pick the part at all.
    let drawn = keys.iter().filter(|k| {
        matches!(k, ObjectKey::Exchange { .. } | ObjectKey::Queue { .. }) && (desired.has(k) || live.has(k))
    });
    if drawn.count() > PICTURED {
        return None;
    }
    let mut part = around(desired, &keys);
    // What the change deletes, with the bindings that go with it.
    let gone: Vec<ObjectKey> = changes().filter(|c| c.action == Action::Destroy).map(|c| c.key.clone()).collect();
    add(&mut part, around(live, &gone));
    let served = services_changed(plan);
    add_services(&mut part, desired, live, &served);
    let nodes: usize = part.vhosts.values().map(|v| v.exchanges.len() + v.queues.len() + v.services.len()).sum();
    let mut marks = marks(&part, desired, live, routing);
    mark_services(&mut marks, &part, desired, live, &served);
    (nodes > 0 && nodes <= PICTURED).then(|| graph::picture(&part, &marks))
}

/// The services whose permissions or topic permissions the plan changes,
/// by vhost.
fn services_changed(plan: &Plan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = plan
        .changes
        .iter()
        .filter_map(|c| c.key.vhost().map(|v| (v, &c.services)))
        .flat_map(|(v, services)| services.iter().map(move |s| (v.to_string(), s.clone())))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each of `served` into `part`, with the exchanges and queues it
/// publishes to and consumes; what it did on the live side (the old
/// topology of `diff OLD NEW`: a broker has no services) too, so that a
/// picture shows what it stops doing.
fn add_services(part: &mut Topology, desired: &Topology, live: &Topology, served: &[(String, String)]) {
    let empty = Vhost::default();
    for (name, service) in served {
        let Some(v) = desired.vhosts.get(name) else { continue };
        let Some(s) = v.services.get(service) else { continue };
        let was = live.vhosts.get(name).unwrap_or(&empty);
        let mut s = s.clone();
        if let Some(old) = was.services.get(service) {
            s.publishes.extend(old.publishes.iter().filter(|p| !s.publishes.contains(p)).cloned().collect::<Vec<_>>());
            s.consumes.extend(old.consumes.iter().filter(|q| !s.consumes.contains(q)).cloned().collect::<Vec<_>>());
        }
        let into = part.vhosts.entry(name.clone()).or_insert_with(|| Vhost::new(name));
        for p in &s.publishes {
            if let Some(x) = v.exchanges.get(&p.exchange).or_else(|| was.exchanges.get(&p.exchange)) {
                into.exchanges.entry(p.exchange.clone()).or_insert_with(|| x.clone());
            }
        }
        let sent = s.publishes.iter().filter(|p| p.exchange.is_empty()).flat_map(|p| &p.keys);
        for q in s.consumes.iter().chain(sent) {
            if let Some(queue) = v.queues.get(q).or_else(|| was.queues.get(q)) {
                into.queues.entry(q.clone()).or_insert_with(|| queue.clone());
            }
        }
        into.services.insert(service.clone(), s);
    }
}

/// Each of `served` changed, and each of its routes in `part` that only
/// the files have added, that only the live side has removed.
fn mark_services(marks: &mut Marks, part: &Topology, desired: &Topology, live: &Topology, served: &[(String, String)]) {
    for (v, service) in served {
        marks.vhosts.entry(v.clone()).or_default().services.insert(service.clone(), Mark::Changed);
    }
    for (name, v) in part.vhosts.iter().filter(|(_, v)| !v.services.is_empty()) {
        let routes = |t: &Topology| t.vhosts.get(name).map(graph::service_routes).unwrap_or_default();
        let (now, was) = (routes(desired), routes(live));
        let m = marks.vhosts.entry(name.clone()).or_default();
        for r in graph::service_routes(v) {
            match (now.contains(&r), was.contains(&r)) {
                (true, false) if !was.is_empty() => m.service_routes.insert(r, Mark::Added),
                (false, true) => m.service_routes.insert(r, Mark::Removed),
                _ => None,
            };
        }
    }
}

/// `more` into `part`: what `part` holds already stays as it is.
fn add(part: &mut Topology, more: Topology) {
    for (name, v) in more.vhosts {
        let into = part.vhosts.entry(name.clone()).or_insert_with(|| Vhost::new(&name));
        for (n, x) in v.exchanges {
            into.exchanges.entry(n).or_insert(x);
        }
        for (n, q) in v.queues {
            into.queues.entry(n).or_insert(q);
        }
        into.bindings.extend(v.bindings);
    }
}

/// What `part` holds of the files and not of the live side is added, what
/// it holds of the live side alone removed; the exchanges whose keys go
/// elsewhere, and the queues that start or stop receiving some, changed.
fn marks(part: &Topology, desired: &Topology, live: &Topology, routing: &[RoutingDoc]) -> Marks {
    let empty = Vhost::default();
    let mut marks = Marks::default();
    for (name, v) in &part.vhosts {
        let (after, before) = (desired.vhosts.get(name).unwrap_or(&empty), live.vhosts.get(name).unwrap_or(&empty));
        let mark = |now: bool, was: bool| match (now, was) {
            (true, false) => Some(Mark::Added),
            (false, true) => Some(Mark::Removed),
            _ => None,
        };
        let mut m = VhostMarks::default();
        for b in &v.bindings {
            if let Some(mark) = mark(after.bindings.contains(b), before.bindings.contains(b)) {
                m.bindings.insert(b.clone(), mark);
            }
        }
        for x in v.exchanges.keys() {
            if let Some(mark) = mark(after.exchanges.contains_key(x), before.exchanges.contains_key(x)) {
                m.exchanges.insert(x.clone(), mark);
            }
        }
        for q in v.queues.keys() {
            if let Some(mark) = mark(after.queues.contains_key(q), before.queues.contains_key(q)) {
                m.queues.insert(q.clone(), mark);
            }
        }
        marks.vhosts.insert(name.clone(), m);
    }
    for r in routing {
        let Some(m) = marks.vhosts.get_mut(&r.vhost) else { continue };
        m.exchanges.entry(r.exchange.clone()).or_insert(Mark::Changed);
        for q in r.classes.iter().flat_map(|c| c.stop.iter().chain(&c.start)) {
            m.queues.entry(q.clone()).or_insert(Mark::Changed);
        }
    }
    marks
}
