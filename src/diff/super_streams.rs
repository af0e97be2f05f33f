//! Super streams in the diff: each change to an object a super stream
//! made (its exchange, a partition stream, a partition's binding) says
//! which, so that a plan reads as the files do; a partition the files no
//! longer have says, in plain words, that its messages go with it. (A
//! broker older than super streams: `refusals/broker_version.rs`.)

use super::change::Action;
use super::differ::Differ;
use crate::model::{Node, ObjectKey, Topology, super_stream_of};

impl Differ<'_> {
    /// Marks every change to a super stream's object with its name, from
    /// the files' side, else the broker's.
    pub(super) fn super_stream_changes(&mut self, desired: &Topology, live: &Topology) {
        for c in &mut self.out.changes {
            let (vhost, node) = match &c.key {
                ObjectKey::Exchange { vhost, name } => (vhost, Node::Exchange(name.clone())),
                ObjectKey::Queue { vhost, name } => (vhost, Node::Queue(name.clone())),
                ObjectKey::Binding { vhost, binding } => (vhost, Node::Exchange(binding.source.clone())),
                _ => continue,
            };
            let of = |t: &Topology| t.vhosts.get(vhost).and_then(|v| super_stream_of(v, &node)).map(str::to_string);
            let Some(name) = of(desired).or_else(|| of(live)) else { continue };
            if c.action == Action::Destroy && matches!(node, Node::Queue(_)) {
                c.reason =
                    format!("a partition of super stream \"{name}\" that the files no longer have: {}", c.reason);
            }
            c.super_stream = Some(name);
        }
    }
}
