//! A topology's routing graph as text for a diagram: a mermaid `flowchart`
//! (GitHub and GitLab draw it in markdown) or Graphviz DOT. Exchanges and
//! queues are nodes, bindings are edges labelled with their routing keys,
//! one subgraph per vhost. The routes that are no bindings are dashed
//! edges: where a queue's dead letters go (its `x-dead-letter-exchange`
//! argument or its policy's `dead-letter-exchange`), and an exchange's
//! alternate exchange (its argument or its policy's). With `--services`,
//! the services are nodes too: an edge from each to the exchanges it
//! publishes to, and from each queue it consumes to it
//! (`service_routes.rs`).
//!
//! A picture of a change ([`picture`]) marks what the change does: the
//! bindings it adds (thick, green) and removes (ending in a cross, red and
//! dashed), the exchanges and queues it creates or deletes (outlined the
//! same), and those whose messages change, and the services whose
//! permissions change (outlined amber); with a legend
//! of the marks it uses. Each mark has a shape beside its colour, for a
//! reader who tells no colours apart.

use rustc_hash::FxHashMap;

use crate::lint::view::View;
use crate::model::{Binding, DestinationKind, Topology, Vhost};
use crate::routing::Message;

pub use super::service_routes::{ServiceRoute, service_routes};
use crate::source::Locations;

/// `--format` of `warren graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// The graph of `topology`, of its vhost `only` when given; its services
/// drawn when `services`.
pub fn render(topology: &Topology, only: Option<&str>, format: GraphFormat, services: bool) -> String {
    let vhosts: Vec<&Vhost> = topology.vhosts.values().filter(|v| only.is_none_or(|o| v.name == o)).collect();
    match format {
        GraphFormat::Mermaid => mermaid(&vhosts, &Marks::default(), services).0,
        GraphFormat::Dot => dot(&vhosts, services),
    }
}

/// What a change does to a binding, an exchange or a queue, as a picture
/// of the change marks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The change creates it.
    Added,
    /// The change deletes it.
    Removed,
    /// An exchange some of whose keys go elsewhere, a queue that starts or
    /// stops receiving some, a service whose permissions change.
    Changed,
}

impl Mark {
    const ALL: [Mark; 3] = [Mark::Added, Mark::Removed, Mark::Changed];

    fn class(self) -> &'static str {
        match self {
            Mark::Added => "added",
            Mark::Removed => "removed",
            Mark::Changed => "changed",
        }
    }

    /// Its style, on an outline and on an arrow alike: GitHub's green, red
    /// and amber, which read on its light and dark themes both; no fill, so
    /// that the theme's text colour stays readable on the theme's fill.
    fn style(self) -> &'static str {
        match self {
            Mark::Added => "stroke:#2da44e,stroke-width:3px",
            Mark::Removed => "stroke:#cf222e,stroke-width:3px,stroke-dasharray:5 5",
            Mark::Changed => "stroke:#bf8700,stroke-width:4px",
        }
    }

    /// Its arrow, for a binding: a shape of its own beside its colour.
    fn arrow(mark: Option<Mark>) -> &'static str {
        match mark {
            Some(Mark::Added) => "==>",
            Some(Mark::Removed) => "--x",
            _ => "-->",
        }
    }

    /// The legend's words for it on a binding (`true`) or an outline.
    fn legend(self, binding: bool) -> &'static str {
        match (self, binding) {
            (Mark::Added, true) => "thick green arrows are bindings added",
            (Mark::Removed, true) => "red dashed arrows ending in a cross are bindings removed",
            (Mark::Changed, true) => "amber arrows are bindings that route otherwise",
            (Mark::Added, false) => "green outlines are exchanges and queues created",
            (Mark::Removed, false) => "red dashed outlines are exchanges and queues deleted",
            (Mark::Changed, false) => {
                "thick amber outlines are exchanges some of whose keys go elsewhere \
                 and queues that start or stop receiving some"
            }
        }
    }
}

/// What a picture marks in one vhost.
#[derive(Debug, Default)]
pub struct VhostMarks {
    pub bindings: FxHashMap<Binding, Mark>,
    pub exchanges: FxHashMap<String, Mark>,
    pub queues: FxHashMap<String, Mark>,
    /// Services, by name: a picture draws those of its topology.
    pub services: FxHashMap<String, Mark>,
    /// What a service starts or stops publishing to or consuming.
    pub service_routes: FxHashMap<ServiceRoute, Mark>,
}

/// What a picture marks, by vhost.
#[derive(Debug, Default)]
pub struct Marks {
    pub vhosts: FxHashMap<String, VhostMarks>,
}

/// A picture of a change: a mermaid flowchart with its marks, and the
/// legend of the marks it uses (empty when it uses none).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Picture {
    pub mermaid: String,
    pub legend: String,
}

/// `topology` as a mermaid flowchart with `marks` on it.
pub fn picture(topology: &Topology, marks: &Marks) -> Picture {
    let vhosts: Vec<&Vhost> = topology.vhosts.values().collect();
    let (mermaid, used) = mermaid(&vhosts, marks, true);
    Picture { mermaid, legend: used.legend() }
}

/// The marks a flowchart uses: each mark's nodes and arrows (by their
/// number among the flowchart's arrows, as mermaid's `linkStyle` counts).
#[derive(Default)]
struct Used {
    nodes: [Vec<String>; 3],
    arrows: [Vec<usize>; 3],
    counted: usize,
    /// A service is marked changed: the legend says what that means.
    service_changed: bool,
    /// The marks on bindings (the legend's words for arrows are theirs).
    bindings_marked: [bool; 3],
    /// An arrow to or from a service is marked: the legend says so.
    service_arrows: bool,
}

impl Used {
    fn node(&mut self, mark: Option<Mark>, node: &str) {
        if let Some(m) = mark {
            self.nodes[m as usize].push(node.to_string());
        }
    }

    /// Counts an arrow, marked or not.
    fn arrow(&mut self, mark: Option<Mark>) {
        if let Some(m) = mark {
            self.arrows[m as usize].push(self.counted);
        }
        self.counted += 1;
    }

    /// The `classDef`, `class` and `linkStyle` lines.
    fn styles(&self) -> String {
        let mut out = String::new();
        for (m, nodes) in Mark::ALL.into_iter().zip(&self.nodes).filter(|(_, n)| !n.is_empty()) {
            out += &format!("  classDef {} {}\n  class {} {}\n", m.class(), m.style(), nodes.join(","), m.class());
        }
        for (m, arrows) in Mark::ALL.into_iter().zip(&self.arrows).filter(|(_, a)| !a.is_empty()) {
            let numbers: Vec<String> = arrows.iter().map(usize::to_string).collect();
            out += &format!("  linkStyle {} {}\n", numbers.join(","), m.style());
        }
        out
    }

    fn legend(&self) -> String {
        // The exchanges' and queues' mark, unless only services have it
        // (a service's id has an `s` where theirs have `x` or `q`).
        let changed_nodes = self.nodes[Mark::Changed as usize].iter().any(|n| !n.contains('s'));
        let nodes_marked = |m: Mark| match m {
            Mark::Changed => changed_nodes,
            _ => !self.nodes[m as usize].is_empty(),
        };
        let arrows = Mark::ALL.into_iter().filter(|m| self.bindings_marked[*m as usize]).map(|m| m.legend(true));
        let nodes = Mark::ALL.into_iter().filter(|m| nodes_marked(*m)).map(|m| m.legend(false));
        let mut said: Vec<String> = arrows.chain(nodes).map(str::to_string).collect();
        if self.service_changed {
            match said.last_mut().filter(|_| changed_nodes) {
                Some(last) => *last += ", and services whose permissions change",
                None => said.push("thick amber outlines are services whose permissions change".into()),
            }
        }
        if self.service_arrows {
            said.push(
                "an arrow from or to a service is thick and green where it starts publishing to or consuming, \
                 red and dashed ending in a cross where it stops"
                    .into(),
            );
        }
        if said.is_empty() {
            return String::new();
        }
        let mut out = said.join("; ");
        out[..1].make_ascii_uppercase();
        out + "."
    }
}

impl VhostMarks {
    fn node(&self, queue: bool, name: &str) -> Option<Mark> {
        if queue { self.queues.get(name).copied() } else { self.exchanges.get(name).copied() }
    }
}

/// A node's id: its vhost's and its own place, never its name (which may
/// hold anything).
fn id(v: usize, kind: &str, n: usize) -> String {
    format!("v{v}{kind}{n}")
}

/// The ids of a vhost's exchanges and queues, by name; binding ends that
/// the vhost does not declare (external, the broker's own) get ids too.
struct Ids<'a> {
    exchanges: Vec<&'a str>,
    queues: Vec<&'a str>,
    exchange_ids: FxHashMap<&'a str, usize>,
    queue_ids: FxHashMap<&'a str, usize>,
    /// The services drawn, in order: their ids are their places.
    services: Vec<&'a str>,
}

/// A route that is no binding, drawn dashed: from a queue (dead letters)
/// or an exchange (alternate), to an exchange or a queue.
struct Side {
    from_queue: bool,
    from: String,
    to_queue: bool,
    to: String,
    label: String,
}

/// The dead-letter and alternate-exchange routes of `v`, as the broker
/// resolves each queue's and exchange's arguments and policies; those to
/// an exchange or queue the files do not know (which drop what reaches
/// them, and lint says so) are left out.
fn side_routes(v: &Vhost) -> Vec<Side> {
    let locations = Locations::default();
    let view = View::new(&v.name, v, &locations, crate::routing::Version::NEWEST);
    let mut out = Vec::new();
    for q in v.queues.keys() {
        let Some((exchange, key)) = view.router.dead_letter_exchange(q) else { continue };
        let label = match key {
            Some(k) => format!("dead letters, key {k}"),
            None => "dead letters".to_string(),
        };
        let from = q.clone();
        match (exchange.is_empty(), key) {
            // The default exchange routes the key to the queue it names.
            (true, Some(k)) => {
                let to = view.router.route(&Message::new("", k)).queues;
                out.extend(to.into_iter().map(|to| Side {
                    from_queue: true,
                    from: from.clone(),
                    to_queue: true,
                    to,
                    label: label.clone(),
                }));
            }
            (false, _) if view.exchange_known(exchange) => {
                out.push(Side { from_queue: true, from, to_queue: false, to: exchange.to_string(), label })
            }
            _ => {}
        }
    }
    for x in v.exchanges.keys() {
        if let Some((alternate, _)) = view.alternate(x).filter(|(a, _)| !a.is_empty() && view.exchange_known(a)) {
            let (from, to) = (x.clone(), alternate.to_string());
            out.push(Side { from_queue: false, from, to_queue: false, to, label: "alternate".into() });
        }
    }
    out
}

impl<'a> Ids<'a> {
    /// `served`: the service routes, when the services are drawn.
    fn of(v: &'a Vhost, side: &'a [Side], served: Option<&'a [ServiceRoute]>) -> Self {
        let mut ids = Ids {
            exchanges: Vec::new(),
            queues: Vec::new(),
            exchange_ids: FxHashMap::default(),
            queue_ids: FxHashMap::default(),
            services: Vec::new(),
        };
        for x in v.exchanges.keys() {
            ids.add_exchange(x);
        }
        for q in v.queues.keys() {
            ids.add_queue(q);
        }
        for b in &v.bindings {
            ids.add_exchange(&b.source);
            match b.destination_kind {
                DestinationKind::Exchange => ids.add_exchange(&b.destination),
                DestinationKind::Queue => ids.add_queue(&b.destination),
            }
        }
        for r in side {
            for (queue, name) in [(r.from_queue, &r.from), (r.to_queue, &r.to)] {
                if queue { ids.add_queue(name) } else { ids.add_exchange(name) }
            }
        }
        for r in served.unwrap_or_default() {
            if r.queue { ids.add_queue(&r.end) } else { ids.add_exchange(&r.end) }
        }
        if served.is_some() {
            ids.services = v.services.keys().map(String::as_str).collect();
        }
        ids
    }

    fn add_exchange(&mut self, name: &'a str) {
        if !self.exchange_ids.contains_key(name) {
            self.exchange_ids.insert(name, self.exchanges.len());
            self.exchanges.push(name);
        }
    }

    fn add_queue(&mut self, name: &'a str) {
        if !self.queue_ids.contains_key(name) {
            self.queue_ids.insert(name, self.queues.len());
            self.queues.push(name);
        }
    }

    fn exchange(&self, name: &str) -> usize {
        self.exchange_ids[name]
    }

    fn queue(&self, name: &str) -> usize {
        self.queue_ids[name]
    }

    /// Each node of vhost number `vi`: its id, its name, its kind (or
    /// `external`), and whether it is a queue. Exchanges first.
    fn nodes(&self, vi: usize, v: &'a Vhost) -> Vec<(String, &'a str, &'a str, bool)> {
        let exchanges = self
            .exchanges
            .iter()
            .enumerate()
            .map(|(n, x)| (id(vi, "x", n), *x, v.exchanges.get(*x).map_or("external", |e| e.kind.as_str()), false));
        let queues = self
            .queues
            .iter()
            .enumerate()
            .map(|(n, q)| (id(vi, "q", n), *q, v.queues.get(*q).map_or("external", |q| q.kind.as_str()), true));
        exchanges.chain(queues).collect()
    }

    /// Each binding of `v` as the ids of its ends, with the binding.
    fn edges<'v>(&self, vi: usize, v: &'v Vhost) -> Vec<(String, String, &'v Binding)> {
        let end = |b: &Binding| match b.destination_kind {
            DestinationKind::Exchange => id(vi, "x", self.exchange(&b.destination)),
            DestinationKind::Queue => id(vi, "q", self.queue(&b.destination)),
        };
        v.bindings.iter().map(|b| (id(vi, "x", self.exchange(&b.source)), end(b), b)).collect()
    }

    /// Each service of vhost number `vi` drawn: its id, its name, its user.
    fn service_nodes(&self, vi: usize, v: &'a Vhost) -> Vec<(String, &'a str, &'a str)> {
        let user = |s: &str| v.services.get(s).map_or("", |s| s.user.as_str());
        self.services.iter().enumerate().map(|(n, s)| (id(vi, "s", n), *s, user(s))).collect()
    }

    /// Each service route as the ids of its ends, with its label.
    fn service_edges<'s>(&self, vi: usize, served: &'s [ServiceRoute]) -> Vec<(String, String, &'s ServiceRoute)> {
        let service = |s: &str| id(vi, "s", self.services.iter().position(|x| *x == s).expect("drawn"));
        let end = |r: &ServiceRoute| {
            if r.queue { id(vi, "q", self.queue(&r.end)) } else { id(vi, "x", self.exchange(&r.end)) }
        };
        let ends = |r: &ServiceRoute| {
            if r.publishes { (service(&r.service), end(r)) } else { (end(r), service(&r.service)) }
        };
        served
            .iter()
            .map(|r| {
                let (from, to) = ends(r);
                (from, to, r)
            })
            .collect()
    }

    /// Each side route as the ids of its ends, with its label.
    fn side_edges<'s>(&self, vi: usize, side: &'s [Side]) -> Vec<(String, String, &'s str)> {
        let node = |queue: bool, name: &str| {
            if queue { id(vi, "q", self.queue(name)) } else { id(vi, "x", self.exchange(name)) }
        };
        side.iter().map(|r| (node(r.from_queue, &r.from), node(r.to_queue, &r.to), r.label.as_str())).collect()
    }
}

/// Text inside a mermaid label's quotes: `"` and `#` are entity codes
/// there, and so are `<` and `>`, which would otherwise be read as HTML.
fn mermaid_text(s: &str) -> String {
    s.replace('#', "#35;").replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;")
}

/// The flowchart, and the marks it uses; the services drawn when
/// `services`.
fn mermaid(vhosts: &[&Vhost], marks: &Marks, services: bool) -> (String, Used) {
    let mut out = String::from("flowchart LR\n");
    let mut used = Used::default();
    let none = VhostMarks::default();
    for (vi, v) in vhosts.iter().enumerate() {
        let marks = marks.vhosts.get(&v.name).unwrap_or(&none);
        let side = side_routes(v);
        let served = services.then(|| service_routes(v));
        let ids = Ids::of(v, &side, served.as_deref());
        out += &format!("  subgraph v{vi}[\"vhost {}\"]\n", mermaid_text(&v.name));
        for (node, name, kind, queue) in ids.nodes(vi, v) {
            let label = format!("{} ({kind})", mermaid_text(name));
            out += &if queue {
                format!("    {node}[(\"{label}\")]\n")
            } else {
                format!("    {node}{{{{\"{label}\"}}}}\n")
            };
            used.node(marks.node(queue, name), &node);
        }
        for (node, name, user) in ids.service_nodes(vi, v) {
            out += &format!("    {node}([\"{} (service, user {})\"])\n", mermaid_text(name), mermaid_text(user));
            let mark = marks.services.get(name).copied();
            used.service_changed |= mark == Some(Mark::Changed);
            used.node(mark, &node);
        }
        for (from, to, b) in ids.edges(vi, v) {
            let mark = marks.bindings.get(b).copied();
            let arrow = Mark::arrow(mark);
            used.arrow(mark);
            if let Some(m) = mark {
                used.bindings_marked[m as usize] = true;
            }
            if b.routing_key.is_empty() {
                out += &format!("    {from} {arrow} {to}\n");
            } else {
                out += &format!("    {from} {arrow}|\"{}\"| {to}\n", mermaid_text(&b.routing_key));
            }
        }
        for (from, to, label) in ids.side_edges(vi, &side) {
            used.arrow(None);
            out += &format!("    {from} -.->|\"{}\"| {to}\n", mermaid_text(label));
        }
        for (from, to, r) in ids.service_edges(vi, served.as_deref().unwrap_or_default()) {
            let mark = marks.service_routes.get(r).copied();
            let arrow = Mark::arrow(mark);
            used.arrow(mark);
            used.service_arrows |= mark.is_some();
            if r.label.is_empty() {
                out += &format!("    {from} {arrow} {to}\n");
            } else {
                out += &format!("    {from} {arrow}|\"{}\"| {to}\n", mermaid_text(&r.label));
            }
        }
        out += "  end\n";
    }
    out += &used.styles();
    (out, used)
}

/// A DOT string: `"` and `\` escaped.
fn dot_text(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn dot(vhosts: &[&Vhost], services: bool) -> String {
    let mut out = String::from("digraph warren {\n  rankdir=LR;\n");
    for (vi, v) in vhosts.iter().enumerate() {
        let side = side_routes(v);
        let served = services.then(|| service_routes(v));
        let ids = Ids::of(v, &side, served.as_deref());
        out += &format!("  subgraph cluster_{vi} {{\n    label={};\n", dot_text(&format!("vhost {}", v.name)));
        for (node, name, kind, queue) in ids.nodes(vi, v) {
            let shape = if queue { "cylinder" } else { "hexagon" };
            out += &format!("    {node} [shape={shape}, label={}];\n", dot_text(&format!("{name} ({kind})")));
        }
        for (node, name, user) in ids.service_nodes(vi, v) {
            let label = dot_text(&format!("{name} (service, user {user})"));
            out += &format!("    {node} [shape=box, style=rounded, label={label}];\n");
        }
        for (from, to, b) in ids.edges(vi, v) {
            out += &format!("    {from} -> {to} [label={}];\n", dot_text(&b.routing_key));
        }
        for (from, to, label) in ids.side_edges(vi, &side) {
            out += &format!("    {from} -> {to} [style=dashed, label={}];\n", dot_text(label));
        }
        for (from, to, r) in ids.service_edges(vi, served.as_deref().unwrap_or_default()) {
            out += &format!("    {from} -> {to} [label={}];\n", dot_text(&r.label));
        }
        out += "  }\n";
    }
    out + "}\n"
}
