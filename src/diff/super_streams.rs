//! Super streams in the diff: each change to an object a super stream
//! made (its exchange, a partition stream, a partition's binding) says
//! which, so that a plan reads as the files do; a partition the files no
//! longer have says, in plain words, that its messages go with it. (A
//! broker older than super streams: `refusals/broker_version.rs`.)

use std::collections::HashMap;

use super::change::Action;
use super::differ::Differ;
use crate::model::{Node, ObjectKey, Topology, is_super_stream_exchange, partitions_of};

impl Differ<'_> {
    /// Marks every change to a super stream's object with its name, from
    /// the files' side, else the broker's.
    pub(super) fn super_stream_changes(&mut self, desired: &Topology, live: &Topology) {
        let sides = [Marks::read(desired), Marks::read(live)];
        for c in &mut self.out.changes {
            let (vhost, node) = match &c.key {
                ObjectKey::Exchange { vhost, name } => (vhost, Node::Exchange(name.clone())),
                ObjectKey::Queue { vhost, name } => (vhost, Node::Queue(name.clone())),
                ObjectKey::Binding { vhost, binding } => (vhost, Node::Exchange(binding.source.clone())),
                _ => continue,
            };
            let Some(name) = sides.iter().find_map(|m| m.of(vhost, &node)).map(str::to_string) else { continue };
            if c.action == Action::Destroy && matches!(node, Node::Queue(_)) {
                c.reason =
                    format!("a partition of super stream \"{name}\" that the files no longer have: {}", c.reason);
            }
            c.super_stream = Some(name);
        }
    }
}

/// What marks a side's objects as a super stream's, by vhost: its
/// exchanges, and the queues bound from them ([`partitions_of`]).
struct Marks<'t> {
    topology: &'t Topology,
    partitions: HashMap<&'t str, HashMap<&'t str, &'t str>>,
}

impl<'t> Marks<'t> {
    fn read(topology: &'t Topology) -> Self {
        let partitions = topology.vhosts.iter().map(|(name, v)| (name.as_str(), partitions_of(v))).collect();
        Marks { topology, partitions }
    }

    /// The super stream `node` of vhost `vhost` belongs to, if any.
    fn of(&self, vhost: &str, node: &Node) -> Option<&'t str> {
        match node {
            Node::Exchange(name) => {
                let x = self.topology.vhosts.get(vhost)?.exchanges.get(name)?;
                is_super_stream_exchange(x).then_some(x.name.as_str())
            }
            Node::Queue(name) => self.partitions.get(vhost)?.get(name.as_str()).copied(),
        }
    }
}
