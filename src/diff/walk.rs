//! Ordered lookups in one walk: the diff compares large sorted maps and
//! sets, where a search for each item would cost more than the walk.

use std::collections::{BTreeMap, BTreeSet};

/// Looks up names that come in ascending order in an ordered map, walking
/// it once: a search of it for each would compare long names that share
/// their prefix at every level.
pub(super) struct Walk<'a, V> {
    items: std::iter::Peekable<std::collections::btree_map::Iter<'a, String, V>>,
}

impl<'a, V> Walk<'a, V> {
    pub(super) fn new(map: &'a BTreeMap<String, V>) -> Self {
        Walk { items: map.iter().peekable() }
    }

    /// The value of `name`, which is not below any name asked before.
    pub(super) fn get(&mut self, name: &str) -> Option<&'a V> {
        while self.items.next_if(|(k, _)| k.as_str() < name).is_some() {}
        self.items.peek().filter(|(k, _)| k.as_str() == name).map(|(_, v)| *v)
    }
}

/// The items only in `a` and those only in `b`, in order, in one walk of both.
pub(super) fn only_in_each<'a, T: Ord>(a: &'a BTreeSet<T>, b: &'a BTreeSet<T>) -> (Vec<&'a T>, Vec<&'a T>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => only_a.extend(a.next()),
            std::cmp::Ordering::Greater => only_b.extend(b.next()),
            std::cmp::Ordering::Equal => {
                a.next();
                b.next();
            }
        }
    }
    only_a.extend(a);
    only_b.extend(b);
    (only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn one_walk_finds_what_the_two_differences_find(
            a in proptest::collection::btree_set(0u8..60, 0..50),
            b in proptest::collection::btree_set(0u8..60, 0..50),
        ) {
            let (only_a, only_b) = only_in_each(&a, &b);
            proptest::prop_assert_eq!(only_a, a.difference(&b).collect::<Vec<_>>());
            proptest::prop_assert_eq!(only_b, b.difference(&a).collect::<Vec<_>>());
        }

        #[test]
        fn a_walk_finds_what_a_search_finds(
            names in proptest::collection::btree_set("[a-c]{0,3}", 0..20),
            asked in proptest::collection::btree_set("[a-c]{0,3}", 0..20),
        ) {
            let map: BTreeMap<String, usize> = names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
            let mut walk = Walk::new(&map);
            for name in &asked {
                proptest::prop_assert_eq!(walk.get(name), map.get(name));
            }
        }
    }
}
