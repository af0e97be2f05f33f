//! `[moved]`: exchanges renamed in the files, as terraform's `moved` block.
//! Publishers address an exchange by name, so the old one is not deleted:
//! the plan keeps it, bound to the new one so that what is published to it
//! still reaches the same queues, until the entry is dropped
//! (`diff::moved` carries it out).

use super::decl::Moved;
use super::parse::Parser;
use super::reader::Fields;
use super::tree::{Item, Node};

/// The kinds of object `[moved]` renames, as its keys.
pub(super) const MOVED_KEYS: &[&str] = &["exchanges"];

impl Parser<'_> {
    /// The `[moved]` table of a file: `exchanges = { "old" = "new" }`.
    pub(super) fn moved(&mut self, node: &Node) -> Vec<Moved> {
        let mut out = Vec::new();
        let Some(f) = Fields::new(&mut self.r, node, "[moved]", MOVED_KEYS) else { return out };
        let Some(table) = f.table(&mut self.r, "exchanges") else { return out };
        for (k, v) in table.iter() {
            match &v.item {
                Item::String(to) => {
                    out.push(Moved { from: k.name.to_string(), to: to.to_string(), at: self.r.loc(k.span()) })
                }
                _ => self.r.wrong_type(v, format_args!("`{}` in [moved] exchanges", k.name), "the new name, a string"),
            }
        }
        out
    }
}
