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
    add_services(&mut part, desired, &served);
    let nodes: usize = part.vhosts.values().map(|v| v.exchanges.len() + v.queues.len() + v.services.len()).sum();
    let mut marks = marks(&part, desired, live, routing);
    for (v, service) in served {
        marks.vhosts.entry(v).or_default().services.insert(service, Mark::Changed);
    }
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
/// publishes to and consumes (as the files declare them).
fn add_services(part: &mut Topology, desired: &Topology, served: &[(String, String)]) {
    for (name, service) in served {
        let Some(v) = desired.vhosts.get(name) else { continue };
        let Some(s) = v.services.get(service) else { continue };
        let into = part.vhosts.entry(name.clone()).or_insert_with(|| Vhost::new(name));
        for x in s.publishes.iter().filter_map(|p| v.exchanges.get_key_value(&p.exchange)) {
            into.exchanges.entry(x.0.clone()).or_insert_with(|| x.1.clone());
        }
        let sent = s.publishes.iter().filter(|p| p.exchange.is_empty()).flat_map(|p| &p.keys);
        for q in s.consumes.iter().chain(sent).filter_map(|q| v.queues.get_key_value(q)) {
            into.queues.entry(q.0.clone()).or_insert_with(|| q.1.clone());
        }
        into.services.insert(service.clone(), s.clone());
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
