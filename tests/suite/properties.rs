//! Properties over arbitrary valid topologies (tests/suite/common/strategy.rs).

use crate::common::strategy::{topology, topology_3_10};
use proptest::prelude::*;
use warren::export::{definitions, to_text};
use warren::model::{Binding, DestinationKind, Node, ObjectKey, Topology};
use warren::plan::Op;
use warren::source::Locations;

fn count(t: &Topology, f: fn(&warren::model::Vhost) -> usize) -> usize {
    t.vhosts.values().map(f).sum()
}

fn len(doc: &serde_json::Value, key: &str) -> usize {
    doc[key].as_array().unwrap_or_else(|| panic!("{key} is not a list")).len()
}

/// What the files would record for the topology's names, so that the lint
/// sees every binding end as declared.
fn spans_of(t: &Topology) -> Locations {
    let mut locations = Locations::default();
    for (v, vh) in &t.vhosts {
        locations.named.extend(vh.exchanges.keys().map(|n| ObjectKey::Exchange { vhost: v.clone(), name: n.clone() }));
        locations.named.extend(vh.queues.keys().map(|n| ObjectKey::Queue { vhost: v.clone(), name: n.clone() }));
    }
    locations
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn export_is_json_with_one_entry_per_object(t in topology()) {
        let text = to_text(&definitions(&t));
        let doc: serde_json::Value = serde_json::from_str(&text).expect("the export is JSON");
        prop_assert_eq!(len(&doc, "queues"), count(&t, |v| v.queues.len()));
        prop_assert_eq!(len(&doc, "exchanges"), count(&t, |v| v.exchanges.len()));
        prop_assert_eq!(len(&doc, "bindings"), count(&t, |v| v.bindings.len()));
        prop_assert_eq!(len(&doc, "policies"), count(&t, |v| v.policies().len()));
        prop_assert_eq!(len(&doc, "permissions"), count(&t, |v| v.permissions().len()));
        prop_assert_eq!(len(&doc, "users"), t.user_names().count());
        prop_assert_eq!(len(&doc, "vhosts"), t.vhosts.len());
        let limits = t.vhosts.values().filter(|v| v.settings.limits.as_ref().is_some_and(|l| !l.is_empty())).count();
        prop_assert_eq!(len(&doc, "parameters"), count(&t, |v| warren::model::kinds::operator_policies::typed(&v.objects).len()) + limits);
        prop_assert_eq!(text, to_text(&definitions(&t)), "the export is deterministic");
    }

    /// The strategies themselves: warren's own checks find no error in what
    /// they generate (warnings, such as a transient queue, are allowed).
    #[test]
    fn generated_topologies_are_valid(t in topology(), old in topology_3_10()) {
        for t in [t, old] {
            let errors: Vec<_> = warren::lint::check(&t, &spans_of(&t), &Default::default())
                .shown
                .into_iter()
                .filter(|d| d.is_error())
                .collect();
            prop_assert!(errors.is_empty(), "{:#?}", errors);
        }
    }
}

/// The plan from `live` (all of it managed) to `desired`.
fn plan_between(desired: &Topology, live: &Topology) -> warren::plan::Plan {
    let ownership = warren::model::Ownership::single("default", warren::model::Inventory::of(live));
    let d = warren::diff::diff(
        desired,
        live,
        &ownership,
        "default",
        &warren::diff::Options::default(),
        &warren::diff::BrokerFacts::default(),
    );
    warren::plan::build(d, live)
}

/// The exchange or queue a step declares or deletes, and whether it declares.
fn endpoint(op: &Op) -> Option<(&str, Node, bool)> {
    match op {
        Op::DeclareExchange { vhost, exchange } => Some((vhost, Node::Exchange(exchange.name.clone()), true)),
        Op::DeclareQueue { vhost, queue } => Some((vhost, Node::Queue(queue.name.clone()), true)),
        Op::DeleteExchange { vhost, name } => Some((vhost, Node::Exchange(name.clone()), false)),
        Op::DeleteQueue { vhost, name, .. } => Some((vhost, Node::Queue(name.clone()), false)),
        _ => None,
    }
}

fn ends(b: &Binding) -> [Node; 2] {
    let dest = match b.destination_kind {
        DestinationKind::Queue => Node::Queue(b.destination.clone()),
        DestinationKind::Exchange => Node::Exchange(b.destination.clone()),
    };
    [Node::Exchange(b.source.clone()), dest]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// plan(x, x) is empty.
    #[test]
    fn a_topology_planned_against_itself_has_no_steps(t in topology()) {
        let plan = plan_between(&t, &t);
        prop_assert!(plan.changes.is_empty(), "{:#?}", plan.changes);
        prop_assert!(plan.problems.is_empty());
    }

    /// Export, read back as a live broker's state, plan: no changes.
    #[test]
    fn export_then_read_then_plan_is_empty(t in topology()) {
        let text = to_text(&definitions(&t));
        let live = warren::live::from_definitions(&text, "export").expect("the export reads back");
        let d = warren::diff::diff(&t, &live.topology, &warren::model::Ownership::single("default", warren::model::Inventory::of(&t)), "default", &warren::diff::Options::default(), &warren::diff::BrokerFacts::default());
        prop_assert!(d.changes.is_empty(), "{:#?}", d.changes);
        prop_assert!(d.problems.is_empty(), "{:#?}", d.problems);
    }

    /// Every step order respects the graph: a binding is made after both its
    /// ends are declared and removed before either end is deleted.
    #[test]
    fn the_order_of_steps_respects_the_graph(old in topology(), new in topology()) {
        let plan = plan_between(&new, &old);
        let at = |vhost: &str, node: &Node, declares: bool| {
            plan.steps.iter().position(|s| endpoint(&s.op).is_some_and(|(v, n, d)| v == vhost && &n == node && d == declares))
        };
        for (i, s) in plan.steps.iter().enumerate() {
            match &s.op {
                Op::Bind { vhost, binding } => {
                    for node in ends(binding) {
                        if let Some(j) = at(vhost, &node, true) {
                            prop_assert!(j < i, "{} before its end is declared", s.op);
                        }
                    }
                }
                Op::Unbind { vhost, binding } => {
                    for node in ends(binding) {
                        if let Some(j) = at(vhost, &node, false) {
                            prop_assert!(i < j, "{} after its end is deleted", s.op);
                        }
                    }
                }
                _ => {}
            }
        }
        // And the phases never go backwards.
        prop_assert!(plan.steps.windows(2).all(|w| w[0].phase <= w[1].phase));
    }
}
