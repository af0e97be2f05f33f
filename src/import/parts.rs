//! A vhost with many queues, cut into parts: its queues in name order, a
//! fixed number to a part, each with the bindings to its queues.

use crate::model::{Binding, DestinationKind, Queue, Vhost};

/// The queue parts of a vhost, and the bindings that stay with the vhost.
pub(super) struct Parts<'a> {
    /// Each part's queues, in name order, and the bindings to them.
    pub parts: Vec<(Vec<&'a Queue>, Vec<&'a Binding>)>,
    /// Bindings to exchanges, and to queues the vhost does not declare.
    pub own: Vec<&'a Binding>,
}

/// How many parts the queues of `vhost` take at `per_file` a part: none
/// when they all fit in the vhost's own file.
pub(super) fn count(vhost: &Vhost, per_file: usize) -> usize {
    let n = vhost.queues.len();
    if n > per_file { n.div_ceil(per_file.max(1)) } else { 0 }
}

/// Cuts `vhost` into parts of `per_file` queues (at least one).
pub(super) fn cut(vhost: &Vhost, per_file: usize) -> Parts<'_> {
    let queues: Vec<&Queue> = vhost.queues.values().collect();
    let mut parts: Vec<(Vec<&Queue>, Vec<&Binding>)> =
        queues.chunks(per_file.max(1)).map(|c| (c.to_vec(), Vec::new())).collect();
    let mut own = Vec::new();
    for b in &vhost.bindings {
        let declared = b.destination_kind == DestinationKind::Queue && vhost.queues.contains_key(&b.destination);
        if !declared {
            own.push(b);
            continue;
        }
        // The last part whose first queue sorts at or before the destination.
        let after = parts.partition_point(|(q, _)| q[0].name <= b.destination);
        parts[after - 1].1.push(b);
    }
    Parts { parts, own }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::large_topology;

    #[test]
    fn each_binding_to_a_declared_queue_goes_with_it() {
        let t = large_topology(25, 4, 60);
        let vhost = t.vhosts.values().next().unwrap();
        assert_eq!(count(vhost, 10), 3);
        assert_eq!(count(vhost, 25), 0);
        let cut = cut(vhost, 10);
        let sizes: Vec<usize> = cut.parts.iter().map(|(q, _)| q.len()).collect();
        assert_eq!(sizes, [10, 10, 5]);
        for (queues, bindings) in &cut.parts {
            for b in bindings {
                assert!(queues.iter().any(|q| q.name == b.destination), "{b:?}");
            }
        }
        assert!(!cut.own.is_empty());
        assert!(cut.own.iter().all(|b| b.destination_kind == DestinationKind::Exchange));
        let placed = cut.own.len() + cut.parts.iter().map(|(_, b)| b.len()).sum::<usize>();
        assert_eq!(placed, vhost.bindings.len());
    }
}
