//! Exchanges renamed in the files' `[moved]`: the old exchange is kept as
//! it is live, and bound to the new one, so that what publishers still send
//! to the old name reaches the queues the new one routes to. Its own
//! bindings go (they are no longer declared), and it goes itself once the
//! entry is dropped. The desired topology is widened with the old exchange
//! and its forwarding bindings, so the diff, the plan, the inventory and
//! ownership treat them as declared objects: another project's exchange
//! cannot be taken over by naming it here.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::model::{Binding, DestinationKind, Table, Topology, Vhost};

/// `desired` with, for each `[moved]` exchange the broker still has, that
/// exchange as it is live and its bindings to the new one; borrowed when
/// nothing is moved.
pub fn expand<'a>(desired: &'a Topology, live: &Topology) -> Cow<'a, Topology> {
    let moves = |v: &Vhost| !v.moved.is_empty();
    if !desired.vhosts.values().any(moves) {
        return Cow::Borrowed(desired);
    }
    let mut out = desired.clone();
    for (name, want) in out.vhosts.iter_mut().filter(|(_, v)| moves(v)) {
        let Some(have) = live.vhosts.get(name) else { continue };
        for (old, new) in want.moved.clone() {
            let Some(x) = have.exchanges.get(&old) else { continue };
            want.exchanges.insert(old.clone(), x.clone());
            want.bindings.extend(forwarding(&x.kind, &old, &new, have, want));
        }
    }
    Cow::Owned(out)
}

/// The bindings from `old` to `new` that carry what `old` routed: by the
/// old exchange's type, every message (fanout, topic `#`, headers with no
/// header to match), or for a direct exchange (and a plugin's type, whose
/// binding keys are its own) each key that was bound there or is on `new`.
fn forwarding(kind: &str, old: &str, new: &str, have: &Vhost, want: &Vhost) -> Vec<Binding> {
    let to = |key: &str| Binding {
        source: old.to_string(),
        destination_kind: DestinationKind::Exchange,
        destination: new.to_string(),
        routing_key: key.to_string(),
        arguments: Table::default(),
    };
    match kind {
        "fanout" | "headers" => vec![to("")],
        "topic" => vec![to("#")],
        _ => {
            let bound = have.bindings.iter().filter(|b| b.source == old);
            let declared = want.bindings.iter().filter(|b| b.source == new);
            let keys: BTreeSet<&str> = bound.chain(declared).map(|b| b.routing_key.as_str()).collect();
            keys.into_iter().map(to).collect()
        }
    }
}

/// What the plan says of each moved exchange the broker still has.
pub fn notes(desired: &Topology, live: &Topology) -> Vec<crate::diagnostic::Diagnostic> {
    let mut out = Vec::new();
    for (name, want) in &desired.vhosts {
        let Some(have) = live.vhosts.get(name) else { continue };
        for (old, new) in &want.moved {
            let Some(x) = have.exchanges.get(old) else { continue };
            let keys: Vec<String> =
                forwarding(&x.kind, old, new, have, want).iter().map(|b| format!("\"{}\"", b.routing_key)).collect();
            out.push(
                crate::diagnostic::Diagnostic::info(
                    "moved",
                    format!(
                        "exchange \"{old}\" in vhost \"{name}\" is renamed to \"{new}\": it stays, bound to \"{new}\" (keys {}), so that publishers still using the old name reach the same queues; its own bindings go",
                        keys.join(", ")
                    ),
                )
                .help(format!("drop \"{old}\" from [moved] once no publisher uses it: the next apply deletes it")),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::objects::{exchange, queue};

    fn bind(source: &str, to: &str, key: &str) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: to.into(),
            routing_key: key.into(),
            arguments: Table::default(),
        }
    }

    fn vhost(exchanges: &[(&str, &str)], bindings: &[Binding]) -> Vhost {
        let mut v = Vhost::new("v");
        v.exchanges = exchanges.iter().map(|(n, k)| (n.to_string(), exchange(n, k))).collect();
        v.queues = [("q".to_string(), queue("q", crate::model::QueueType::Classic, Table::default()))].into();
        v.bindings = bindings.iter().cloned().collect();
        v
    }

    fn topology(v: Vhost) -> Topology {
        Topology { vhosts: [("v".to_string(), v)].into(), ..Topology::default() }
    }

    #[test]
    fn the_old_exchange_is_kept_and_forwards_by_its_type() {
        for (kind, keys) in
            [("topic", vec!["#"]), ("fanout", vec![""]), ("headers", vec![""]), ("direct", vec!["a", "b"])]
        {
            let live = topology(vhost(&[("old", kind)], &[bind("old", "q", "a")]));
            let mut want = vhost(&[("new", kind)], &[bind("new", "q", "b")]);
            want.moved.insert("old".into(), "new".into());
            let desired = topology(want);
            let expanded = expand(&desired, &live);
            let v = &expanded.vhosts["v"];
            assert_eq!(v.exchanges["old"], live.vhosts["v"].exchanges["old"], "{kind}: kept as it is live");
            let forwarded: Vec<&str> = v
                .bindings
                .iter()
                .filter(|b| b.source == "old" && b.destination == "new")
                .map(|b| b.routing_key.as_str())
                .collect();
            assert_eq!(forwarded, keys, "{kind}");
            assert!(!v.bindings.iter().any(|b| b.source == "old" && b.destination == "q"), "{kind}: its own go");
        }
    }

    #[test]
    fn nothing_is_kept_once_the_old_exchange_is_gone_or_nothing_moves() {
        let live = topology(vhost(&[], &[]));
        let mut want = vhost(&[("new", "topic")], &[]);
        want.moved.insert("old".into(), "new".into());
        let desired = topology(want);
        assert!(!expand(&desired, &live).vhosts["v"].exchanges.contains_key("old"));
        assert!(notes(&desired, &live).is_empty());
        let plain = topology(vhost(&[("new", "topic")], &[]));
        assert!(matches!(expand(&plain, &live), Cow::Borrowed(_)));
    }
}
