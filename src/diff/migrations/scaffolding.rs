//! warren's scaffolding of migrations (its interposed and alternate
//! exchanges, and their policies): left out of the diff of what the files
//! declare, and found when an interrupted run left some behind.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::diff::sides::Sides;
use crate::model::kinds::{Name, policies};
use crate::model::{Binding, DestinationKind, Inventory, ObjectKey, Vhost, scaffold};

/// The vhost less the objects of migrations in flight: those belong to
/// their migration, not to this diff.
pub(in crate::diff) fn without_scaffolding(v: &Vhost) -> Cow<'_, Vhost> {
    // Of its objects, only policies are scaffolding.
    let policy = |n: &Name| n.kind == &policies::KIND && scaffold::is_scaffolding(&n.id[0]);
    let any = v.exchanges.keys().any(|n| scaffold::is_scaffolding(n)) || v.objects.keys().any(policy);
    if !any {
        return Cow::Borrowed(v);
    }
    let mut out = v.clone();
    out.exchanges.retain(|n, _| !scaffold::is_scaffolding(n));
    out.objects.retain(|n, _| !policy(n));
    out.bindings.retain(|b| {
        let into_scaffolding =
            b.destination_kind == DestinationKind::Exchange && scaffold::is_scaffolding(&b.destination);
        !scaffold::is_scaffolding(&b.source) && !into_scaffolding
    });
    Cow::Owned(out)
}

/// The scaffolding for old queue `p` of exchanges that are not sources of
/// the migration (`moved`), live and warren's own: what a run that stopped
/// mid-teardown left once the last binding through it was gone. Found by
/// the names it would have for each exchange live or in the files; objects
/// warren does not own are left alone.
pub(super) fn leftovers(s: &Sides, p: &str, moved: &[Binding], inventory: &Inventory) -> Vec<String> {
    let (want, live, v) = (s.want, s.full, s.v);
    let sources: BTreeSet<&str> = moved.iter().map(|b| b.source.as_str()).collect();
    let others: BTreeSet<&String> = live
        .exchanges
        .keys()
        .chain(want.exchanges.keys())
        .filter(|x| !scaffold::is_scaffolding(x) && !sources.contains(x.as_str()))
        .collect();
    let mut exchanges = Vec::new();
    for x in others {
        for name in [scaffold::alternate(p, x), scaffold::interposed(p, x)] {
            let owned = inventory.contains(&ObjectKey::Exchange { vhost: v.into(), name: name.clone() });
            if owned && live.exchanges.contains_key(&name) {
                exchanges.push(name);
            }
        }
    }
    exchanges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{BrokerFacts, Options, diff};
    use crate::model::{Exchange, Ownership, Queue, QueueType, Topology};

    #[test]
    fn scaffolding_an_interrupted_teardown_left_is_deleted_when_warren_owns_it() {
        let exchange = |name: &str, internal| Exchange {
            name: name.into(),
            kind: "direct".into(),
            durable: true,
            auto_delete: false,
            internal,
            arguments: Default::default(),
        };
        let queue = |name: &str, replaces: Option<&str>| Queue {
            name: name.into(),
            kind: QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: replaces.map(Into::into),
        };
        let to_new = |source: &str| Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: "new".into(),
            routing_key: "k".into(),
            arguments: Default::default(),
        };
        // The run stopped right before deleting the interposed exchanges:
        // both sources are bound to the new queue directly, nothing routes
        // through the scaffolding, and only "shop"'s is warren's.
        let mut live = Vhost::new("v");
        for x in ["shop", "billing"] {
            live.exchanges.insert(x.into(), exchange(x, false));
            live.bindings.insert(to_new(x));
            let interposed = scaffold::interposed("old", x);
            live.exchanges.insert(interposed.clone(), exchange(&interposed, true));
        }
        live.queues.insert("old".into(), queue("old", None));
        live.queues.insert("new".into(), queue("new", None));
        let mut want = Vhost::new("v");
        for x in ["shop", "billing"] {
            want.exchanges.insert(x.into(), exchange(x, false));
            want.bindings.insert(to_new(x));
        }
        want.queues.insert("new".into(), queue("new", Some("old")));
        let mut inventory = Inventory::default();
        inventory.objects.insert(ObjectKey::Exchange { vhost: "v".into(), name: scaffold::interposed("old", "shop") });
        let topology =
            |v: Vhost| Topology { vhosts: [("v".to_string(), v)].into_iter().collect(), ..Default::default() };
        let ownership = Ownership::single("default", inventory);
        let d =
            diff(&topology(want), &topology(live), &ownership, "default", &Options::default(), &BrokerFacts::default());
        let m = d.changes.iter().find_map(|c| c.migration.clone()).expect("a migration");
        assert!(m.moved.is_empty(), "{m:?}");
        assert_eq!(m.leftover_exchanges, [scaffold::interposed("old", "shop")]);
    }
}
