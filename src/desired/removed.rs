//! `[removed]`: objects this project stops managing without deleting them,
//! as terraform's `removed` block with `destroy = false`. Each leaves the
//! project's inventory at the next apply and stays on the broker as it is.

use super::decl::Removed;
use super::parse::Parser;
use super::reader::Fields;
use super::tree::Node;

/// The kinds of object `[removed]` names, as its keys.
pub(super) const REMOVED_KEYS: &[&str] =
    &["exchanges", "queues", "policies", "operator_policies", "permissions", "users"];

impl Parser<'_> {
    /// The `[removed]` table of a file.
    pub(super) fn removed(&mut self, node: &Node) -> Vec<Removed> {
        let mut out = Vec::new();
        let Some(f) = Fields::new(&mut self.r, node, "[removed]", REMOVED_KEYS) else {
            return out;
        };
        for kind in REMOVED_KEYS {
            for (name, span) in f.strings(&mut self.r, kind).unwrap_or_default() {
                out.push(Removed { kind, name, at: self.r.loc(span) });
            }
        }
        out
    }
}
