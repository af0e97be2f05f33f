//! A vhost's routing topology as a graph: exchanges and queues are nodes,
//! bindings are edges. The planner asks it which bindings touch an object.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use rustc_hash::FxHashSet;

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};

use super::topology::{Binding, DestinationKind, Vhost};

/// A node: an exchange or a queue, by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    Exchange(String),
    Queue(String),
}

/// The routing graph of one vhost, including binding ends that are not
/// declared (external or missing objects).
pub struct RoutingGraph {
    graph: DiGraph<Node, Binding>,
    index: BTreeMap<Node, NodeIndex>,
}

impl RoutingGraph {
    pub fn of(vhost: &Vhost) -> Self {
        let mut g = RoutingGraph { graph: DiGraph::new(), index: BTreeMap::new() };
        for name in vhost.exchanges.keys() {
            g.node(Node::Exchange(name.clone()));
        }
        for name in vhost.queues.keys() {
            g.node(Node::Queue(name.clone()));
        }
        for b in &vhost.bindings {
            let from = g.node(Node::Exchange(b.source.clone()));
            let to = g.node(match b.destination_kind {
                DestinationKind::Queue => Node::Queue(b.destination.clone()),
                DestinationKind::Exchange => Node::Exchange(b.destination.clone()),
            });
            g.graph.add_edge(from, to, b.clone());
        }
        g
    }

    fn node(&mut self, n: Node) -> NodeIndex {
        if let Some(i) = self.index.get(&n) {
            return *i;
        }
        let i = self.graph.add_node(n.clone());
        self.index.insert(n, i);
        i
    }

    /// Bindings into `node`, sorted.
    pub fn inbound(&self, node: &Node) -> Vec<&Binding> {
        self.edges(node, Direction::Incoming)
    }

    /// Bindings out of `node` (an exchange), sorted.
    pub fn outbound(&self, node: &Node) -> Vec<&Binding> {
        self.edges(node, Direction::Outgoing)
    }

    fn edges(&self, node: &Node, dir: Direction) -> Vec<&Binding> {
        let Some(i) = self.index.get(node) else {
            return Vec::new();
        };
        let mut out: Vec<&Binding> = self.graph.edges_directed(*i, dir).map(|e| e.weight()).collect();
        out.sort();
        out
    }
}

/// A vhost's routing graph, built on first use: most plans change nothing
/// that needs it, and a graph of tens of thousands of bindings is costly.
pub struct LazyGraph<'v> {
    vhost: &'v Vhost,
    graph: OnceCell<RoutingGraph>,
}

impl<'v> LazyGraph<'v> {
    pub fn new(vhost: &'v Vhost) -> Self {
        LazyGraph { vhost, graph: OnceCell::new() }
    }

    pub fn get(&self) -> &RoutingGraph {
        self.graph.get_or_init(|| RoutingGraph::of(self.vhost))
    }
}

/// The part of `topology` around the objects `changed`: each changed
/// exchange and queue, each binding that changed or touches one, and both
/// ends of those bindings. For a picture of a change.
pub fn around(topology: &super::Topology, changed: &[super::ObjectKey]) -> super::Topology {
    use super::ObjectKey as K;
    let mut out = super::Topology::default();
    for (name, v) in &topology.vhosts {
        let in_vhost = |k: &&K| match k {
            K::Exchange { vhost, .. } | K::Queue { vhost, .. } | K::Binding { vhost, .. } => vhost == name,
            _ => false,
        };
        let keys: Vec<&K> = changed.iter().filter(in_vhost).collect();
        if keys.is_empty() {
            continue;
        }
        // Hashed: a large plan changes thousands of objects, each binding
        // is asked about.
        let (mut exchanges, mut queues, mut bindings) =
            (FxHashSet::default(), FxHashSet::default(), FxHashSet::default());
        for k in &keys {
            match k {
                K::Exchange { name, .. } => exchanges.insert(name.as_str()),
                K::Queue { name, .. } => queues.insert(name.as_str()),
                K::Binding { binding, .. } => bindings.insert(binding),
                _ => false,
            };
        }
        let touched: Vec<&Binding> = v
            .bindings
            .iter()
            .filter(|b| {
                exchanges.contains(b.source.as_str())
                    || match b.destination_kind {
                        DestinationKind::Exchange => exchanges.contains(b.destination.as_str()),
                        DestinationKind::Queue => queues.contains(b.destination.as_str()),
                    }
                    || bindings.contains(b)
            })
            .collect();
        let mut part = Vhost::new(name);
        let take_exchange = |n: &str, part: &mut Vhost| {
            if let Some(x) = v.exchanges.get(n) {
                part.exchanges.insert(n.to_string(), x.clone());
            }
        };
        let take_queue = |n: &str, part: &mut Vhost| {
            if let Some(q) = v.queues.get(n) {
                part.queues.insert(n.to_string(), q.clone());
            }
        };
        for b in touched {
            part.bindings.insert(b.clone());
            take_exchange(&b.source, &mut part);
            match b.destination_kind {
                DestinationKind::Exchange => take_exchange(&b.destination, &mut part),
                DestinationKind::Queue => take_queue(&b.destination, &mut part),
            }
        }
        for k in &keys {
            match k {
                K::Exchange { name: n, .. } => take_exchange(n, &mut part),
                K::Queue { name: n, .. } => take_queue(n, &mut part),
                _ => {}
            }
        }
        if !part.exchanges.is_empty() || !part.queues.is_empty() || !part.bindings.is_empty() {
            out.vhosts.insert(name.clone(), part);
        }
    }
    out
}
