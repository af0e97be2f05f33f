//! A vhost's routing topology as a graph: exchanges and queues are nodes,
//! bindings are edges. The planner asks it which bindings touch an object.

use std::cell::OnceCell;
use std::collections::BTreeMap;

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
