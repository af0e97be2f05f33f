//! Properties over arbitrary valid topologies (tests/common/strategy.rs).

mod common;

use common::strategy::{topology, topology_3_10};
use proptest::prelude::*;
use warren::desired::Spans;
use warren::export::{definitions, to_text};
use warren::model::{ObjectKey, Topology};

fn count(t: &Topology, f: fn(&warren::model::Vhost) -> usize) -> usize {
    t.vhosts.values().map(f).sum()
}

fn len(doc: &serde_json::Value, key: &str) -> usize {
    doc[key].as_array().unwrap_or_else(|| panic!("{key} is not a list")).len()
}

/// What the files would record for the topology's names, so that the lint
/// sees every binding end as declared.
fn spans_of(t: &Topology) -> Spans {
    let mut spans = Spans::default();
    for (v, vh) in &t.vhosts {
        spans.named.extend(vh.exchanges.keys().map(|n| ObjectKey::Exchange { vhost: v.clone(), name: n.clone() }));
        spans.named.extend(vh.queues.keys().map(|n| ObjectKey::Queue { vhost: v.clone(), name: n.clone() }));
    }
    spans
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
        prop_assert_eq!(len(&doc, "policies"), count(&t, |v| v.policies.len()));
        prop_assert_eq!(len(&doc, "permissions"), count(&t, |v| v.permissions.len()));
        prop_assert_eq!(len(&doc, "users"), t.users.len());
        prop_assert_eq!(len(&doc, "vhosts"), t.vhosts.len());
        let limits = t.vhosts.values().filter(|v| v.settings.limits.as_ref().is_some_and(|l| !l.is_empty())).count();
        prop_assert_eq!(len(&doc, "parameters"), count(&t, |v| v.operator_policies.len()) + limits);
        prop_assert_eq!(text, to_text(&definitions(&t)), "the export is deterministic");
    }

    /// The strategies themselves: warren's own checks find no error in what
    /// they generate (warnings, such as a transient queue, are allowed).
    #[test]
    fn generated_topologies_are_valid(t in topology(), old in topology_3_10()) {
        for t in [t, old] {
            let errors: Vec<_> = warren::lint::check(&t, &spans_of(&t))
                .into_iter()
                .filter(|d| d.is_error())
                .collect();
            prop_assert!(errors.is_empty(), "{:#?}", errors);
        }
    }
}
