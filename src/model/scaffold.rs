//! The objects a live migration puts up for a while and takes down again.
//! Their names are derived from the old queue and the source exchange
//! alone, so a resumed run finds the ones an earlier run made.

use serde::{Deserialize, Serialize};

use super::topology::Binding;

/// One exchange that routes to a migration's old queue, and the
/// scaffolding put up for it: what the compiled migration works from and
/// what the journal records, so that a rollback needs nothing but the
/// record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The source exchange's name.
    pub exchange: String,
    /// Its type, which the interposed and alternate exchanges take.
    pub kind: String,
    pub interposed: String,
    pub alternate: String,
    /// The old queue's bindings from this exchange (destination: the old queue).
    #[serde(with = "super::exported_bindings")]
    pub bindings: Vec<Binding>,
}

/// Every scaffolding object's name starts with this; files may not use it.
pub const PREFIX: &str = "warren.migrate.";

/// The exchange argument that names an alternate exchange: the interposed
/// exchange's names its alternate exchange.
pub const ALTERNATE_ARGUMENT: &str = "alternate-exchange";

/// The internal exchange interposed between exchange `x` and queue `p`.
pub fn interposed(p: &str, x: &str) -> String {
    let name = format!("{PREFIX}{p}.{x}");
    // Leave room for the alternate exchange's `.ae` within 255 bytes.
    if name.len() <= 250 { name } else { format!("{PREFIX}{:016x}", fnv1a(&[p, x])) }
}

/// The alternate exchange that catches what the interposed one cannot route.
pub fn alternate(p: &str, x: &str) -> String {
    format!("{}.ae", interposed(p, x))
}

pub fn is_scaffolding(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// A stable 64-bit hash (FNV-1a), the same on every machine and version.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_in_255_bytes_and_are_stable() {
        let long = "q".repeat(255);
        assert!(alternate(&long, &long).len() <= 255);
        assert_eq!(interposed(&long, "x"), interposed(&long, "x"));
        assert_ne!(interposed(&long, "x"), interposed(&long, "y"));
        assert_eq!(interposed("orders", "shop"), "warren.migrate.orders.shop");
    }
}
