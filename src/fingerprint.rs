//! Short, stable digests that say "the same" across runs: of the live state
//! a plan was made from (a saved plan is refused when it changed) and of a
//! plan (the journal records which plan an apply carries out).
//!
//! They digest warren's own normalised form, so they are comparable only
//! between runs of the same warren version; the journal and saved plans
//! record the version beside them.

use sha2::{Digest, Sha256};

use crate::model::{Ownership, Topology};
use crate::render::PlanDocument;

/// The live state as a plan sees it: topology and every project's records.
/// Queue counts are left out: they move all the time and no plan depends on
/// them alone.
pub fn live(topology: &Topology, ownership: &Ownership) -> String {
    digest(format!("{topology:?}\n{:?}", ownership.to_json()).as_bytes())
}

/// What a plan does, by its machine-readable document, whatever it was
/// compared with: the live origin is left out, so that a plan made from an
/// export (or through another address of the same broker) that matches the
/// live state counts as the same plan.
pub fn plan(document: &PlanDocument) -> String {
    let mut d = document.clone();
    d.live = String::new();
    digest(&serde_json::to_vec(&d).expect("a plan document always serialises"))
}

fn digest(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    sum.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Vhost;

    #[test]
    fn the_live_fingerprint_changes_with_the_topology_only() {
        let mut t = Topology::default();
        t.vhosts.insert("v".into(), Vhost::new("v"));
        let inv = Ownership::default();
        let a = live(&t, &inv);
        assert_eq!(a, live(&t.clone(), &inv), "deterministic");
        assert_eq!(a.len(), 16);
        t.vhosts.insert("w".into(), Vhost::new("w"));
        assert_ne!(a, live(&t, &inv));
    }
}
