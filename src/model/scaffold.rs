//! Names of the objects a live migration puts up for a while and takes
//! down again. They are derived from the old queue and the source exchange
//! alone, so a resumed run finds the ones an earlier run made.

/// Every scaffolding object's name starts with this; files may not use it.
pub const PREFIX: &str = "warren.migrate.";

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

/// The policy that gives the interposed exchange its alternate exchange.
pub fn policy(p: &str, x: &str) -> String {
    interposed(p, x)
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
