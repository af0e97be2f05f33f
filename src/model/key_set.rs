//! A set of object keys kept as one sorted vector. An inventory's keys are
//! the largest part of a large plan's live side (300,000 at 100,000
//! queues): a `BTreeSet` added a fifth for its nodes' room, and building
//! one from a vector of keys held both at once, the plan's peak.

use super::key::ObjectKey;

/// Sorted, without repeats; read as a `BTreeSet` is, in key order.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KeySet(Vec<ObjectKey>);

impl KeySet {
    pub const fn new() -> KeySet {
        KeySet(Vec::new())
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.0.binary_search(key).is_ok()
    }

    /// Adds `key`; false when it was there. Each insert may move the keys
    /// after it: many keys are added at once by `extend` or `collect`.
    pub fn insert(&mut self, key: ObjectKey) -> bool {
        match self.0.binary_search(&key) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, key);
                true
            }
        }
    }

    /// The keys of both sets, in order: the two sorted vectors walked
    /// together.
    pub fn intersection<'a>(&'a self, other: &'a KeySet) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        std::iter::from_fn(move || {
            loop {
                let (x, y) = (a.peek()?, b.peek()?);
                match x.cmp(y) {
                    std::cmp::Ordering::Less => {
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        b.next();
                        return a.next();
                    }
                }
            }
        })
    }

    pub fn retain(&mut self, keep: impl FnMut(&ObjectKey) -> bool) {
        self.0.retain(keep);
    }

    /// In key order.
    pub fn iter(&self) -> std::slice::Iter<'_, ObjectKey> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<ObjectKey>> for KeySet {
    /// Sorted in place: no second vector, no tree beside it.
    fn from(mut keys: Vec<ObjectKey>) -> KeySet {
        // Stable sort: it finds the runs already in order (a record lists
        // its keys sorted within each group) in one pass.
        keys.sort();
        keys.dedup();
        KeySet(keys)
    }
}

impl<const N: usize> From<[ObjectKey; N]> for KeySet {
    fn from(keys: [ObjectKey; N]) -> KeySet {
        KeySet::from(Vec::from(keys))
    }
}

impl FromIterator<ObjectKey> for KeySet {
    fn from_iter<I: IntoIterator<Item = ObjectKey>>(keys: I) -> KeySet {
        KeySet::from(keys.into_iter().collect::<Vec<_>>())
    }
}

impl Extend<ObjectKey> for KeySet {
    fn extend<I: IntoIterator<Item = ObjectKey>>(&mut self, keys: I) {
        let before = self.0.len();
        self.0.extend(keys);
        if self.0.len() > before {
            self.0.sort();
            self.0.dedup();
        }
    }
}

impl<'a> IntoIterator for &'a KeySet {
    type Item = &'a ObjectKey;
    type IntoIter = std::slice::Iter<'a, ObjectKey>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for KeySet {
    type Item = ObjectKey;
    type IntoIter = std::vec::IntoIter<ObjectKey>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(&self.0).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &str) -> ObjectKey {
        ObjectKey::Queue { vhost: "v".into(), name: name.into() }
    }

    /// Whatever order and repeats the keys come in, the set holds each
    /// once, in the order a `BTreeSet` holds them.
    #[test]
    fn a_key_set_is_sorted_without_repeats_as_a_btree_set_is() {
        let keys = [q("b"), ObjectKey::Vhost("v".into()), q("a"), q("b"), ObjectKey::Vhost("a".into())];
        let set = KeySet::from_iter(keys.clone());
        let tree = std::collections::BTreeSet::from(keys);
        assert!(set.iter().eq(tree.iter()), "{set:?}");
        assert_eq!(set.len(), 4);
        assert!(set.contains(&q("a")) && !set.contains(&q("c")));

        let mut set = set;
        assert!(set.insert(q("c")) && !set.insert(q("c")));
        set.extend([q("0"), q("a")]);
        set.retain(|k| k != &q("b"));
        let names: Vec<String> = set.iter().map(ObjectKey::name).collect();
        assert_eq!(names, ["a", "v", "0", "a", "c"]);
        assert_eq!(format!("{:?}", KeySet::from([q("x")])), r#"{Queue { vhost: "v", name: "x" }}"#);
        let other = KeySet::from([q("a"), q("b"), q("c"), q("d")]);
        let both: Vec<String> = set.intersection(&other).map(ObjectKey::name).collect();
        assert_eq!(both, ["a", "c"]);
    }
}
