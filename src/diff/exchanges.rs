//! Exchanges: created, destroyed, or recreated when a property the broker
//! never changes in place differs, with the bindings that must survive it.

use super::attributes;
use super::change::{Action, Change, Declared};
use super::differ::Differ;
use super::immutable::{self, NOT_IN_PLACE};
use super::sides::Sides;
use crate::model::{Binding, Exchange, Inventory, Node, ObjectKey, Vhost};

impl Differ<'_> {
    pub(super) fn exchanges(&mut self, s: &Sides) {
        let (v, want, have) = (s.v, s.want, s.have);
        for (name, x) in &want.exchanges {
            let key = || ObjectKey::Exchange { vhost: v.into(), name: name.clone() };
            match have.exchanges.get(name) {
                None => self.created(
                    key(),
                    attributes::exchange(x),
                    "declared in the files",
                    Some(Declared::Exchange(x.clone())),
                ),
                Some(h) if same_exchange(h, x) => {}
                Some(h) if self.options.comparing => {
                    let fields = immutable::exchange_fields(h, x).join(", ");
                    let mut c = Change::new(key(), Action::Update, format!("differs in {fields}, {NOT_IN_PLACE}"));
                    c.before = Some(attributes::exchange(h));
                    c.after = Some(attributes::exchange(x));
                    self.push(c);
                }
                Some(h) => self.exchange_replaced(s, key(), h, x),
            }
        }
        for (name, h) in &have.exchanges {
            if !want.exchanges.contains_key(name) && !want.external.exchanges.contains(name) {
                let key = ObjectKey::Exchange { vhost: v.into(), name: name.clone() };
                self.absent(key, attributes::exchange(h), false);
            }
        }
    }

    /// Exchange `want` differs from live `have` where the broker changes
    /// nothing in place: deleted and declared again, its bindings put back.
    fn exchange_replaced(&mut self, s: &Sides, key: ObjectKey, have: &Exchange, want: &Exchange) {
        let node = Node::Exchange(want.name.clone());
        let mut c = Change::new(
            key,
            Action::Replace,
            format!(
                "{} cannot change in place: the exchange {}",
                immutable::exchange_fields(have, want).join(", "),
                if self.options.review {
                    "would be deleted and declared again, and messages published in between would not be routed"
                } else {
                    "is deleted and declared again, and messages published in between are not routed"
                }
            ),
        );
        c.before = Some(attributes::exchange(have));
        c.after = Some(attributes::exchange(want));
        c.declared = Some(Declared::Exchange(want.clone()));
        c.requires_allow_destroy = true;
        let graph = s.graph.get();
        c.rebind =
            surviving(graph.inbound(&node).into_iter().chain(graph.outbound(&node)), s.want, self.inventory, s.v);
        self.push(c);
    }
}

fn same_exchange(a: &Exchange, b: &Exchange) -> bool {
    a == b
}

/// Live bindings touching a recreated exchange that must exist afterwards:
/// every one the files still declare, and every one warren does not own.
fn surviving<'a>(
    bindings: impl Iterator<Item = &'a Binding>,
    want: &Vhost,
    inventory: &Inventory,
    v: &str,
) -> Vec<Binding> {
    let mut out: Vec<Binding> = bindings
        .filter(|b| {
            want.bindings.contains(*b)
                || !inventory.contains(&ObjectKey::Binding { vhost: v.into(), binding: (*b).clone() })
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}
