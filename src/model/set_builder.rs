//! Builds a [`BTreeSet`] from items that mostly come in order, as the
//! bindings of an export or of a file written by `warren import` do.
//! Inserting one by one searches the tree each time, comparing long names
//! with shared prefixes at every level; a run of ascending items is instead
//! kept in a list and built into a tree at once.

use std::collections::BTreeSet;

#[derive(Debug)]
pub struct SetBuilder<T> {
    set: BTreeSet<T>,
    /// Strictly ascending, and all greater than every item of `set`.
    run: Vec<T>,
}

impl<T: Ord> Default for SetBuilder<T> {
    fn default() -> Self {
        SetBuilder { set: BTreeSet::new(), run: Vec::new() }
    }
}

impl<T: Ord> SetBuilder<T> {
    /// Continues from the items of `set`.
    pub fn from_set(set: BTreeSet<T>) -> Self {
        SetBuilder { set, run: Vec::new() }
    }

    /// Adds `item`; gives an equal one back when one is already there
    /// (for items whose order tells every field apart, as bindings', the
    /// same).
    pub fn insert(&mut self, item: T) -> Result<(), T> {
        let ascending = match self.run.last() {
            Some(last) => *last < item,
            None => self.set.last().is_none_or(|last| *last < item),
        };
        if ascending {
            self.run.push(item);
            return Ok(());
        }
        self.flush();
        // One search, not a look and then an insert: the item given back
        // is the one that was there, which is equal.
        match self.set.replace(item) {
            None => Ok(()),
            Some(there) => Err(there),
        }
    }

    /// Adds the items of `other` not here yet. When they all come after
    /// these, as a later run of the same file's bindings does, they only
    /// extend the run.
    pub fn union(&mut self, other: SetBuilder<T>) {
        let first = other.set.first().or(other.run.first());
        if first.is_some_and(|f| self.run.last().or(self.set.last()).is_none_or(|last| last < f)) {
            // They will all join the run: room for them at once.
            self.run.reserve_exact(other.set.len() + other.run.len());
        }
        // The set's items, then the run's: ascending.
        for item in other.set.into_iter().chain(other.run) {
            let _ = self.insert(item);
        }
    }

    pub fn finish(mut self) -> BTreeSet<T> {
        self.flush();
        self.set
    }

    /// Moves the run into the set: item by item when it is short beside the
    /// set, else as a tree of its own merged in (which costs the size of both).
    fn flush(&mut self) {
        if self.run.len() * 8 < self.set.len() {
            self.set.extend(self.run.drain(..));
        } else {
            // Already sorted and unique: collecting checks that in one pass.
            // Taken whole, the run's vector is the one collecting sorts
            // (a drained one would be copied into another first).
            let mut more: BTreeSet<T> = std::mem::take(&mut self.run).into_iter().collect();
            self.set.append(&mut more);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(items: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let mut b = SetBuilder::default();
        let mut refused = Vec::new();
        for &i in items {
            if let Err(i) = b.insert(i) {
                refused.push(i);
            }
        }
        (b.finish().into_iter().collect(), refused)
    }

    #[test]
    fn holds_what_one_by_one_insertion_holds_and_refuses_the_same() {
        let orders: [&[u32]; 6] =
            [&[1, 2, 3], &[3, 2, 1], &[1, 3, 2, 4, 4, 0, 5], &[], &[2, 2, 2], &[5, 6, 7, 1, 2, 3, 6, 8, 9, 1]];
        for items in orders {
            let mut set = BTreeSet::new();
            let refused: Vec<u32> = items.iter().copied().filter(|&i| !set.insert(i)).collect();
            assert_eq!(build(items), (set.into_iter().collect(), refused), "{items:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_order_builds_the_same_set(items in proptest::collection::vec(0u8..40, 0..200)) {
            let mut set = BTreeSet::new();
            let refused: Vec<u8> = items.iter().copied().filter(|&i| !set.insert(i)).collect();
            let mut b = SetBuilder::default();
            let got: Vec<u8> = items.iter().filter_map(|&i| b.insert(i).err()).collect();
            proptest::prop_assert_eq!(got, refused);
            proptest::prop_assert_eq!(b.finish(), set);
        }

        #[test]
        fn a_union_holds_the_items_of_both(
            a in proptest::collection::vec(0u8..40, 0..100),
            b in proptest::collection::vec(0u8..40, 0..100),
        ) {
            let (mut left, mut right) = (SetBuilder::default(), SetBuilder::default());
            a.iter().for_each(|&i| _ = left.insert(i));
            b.iter().for_each(|&i| _ = right.insert(i));
            left.union(right);
            let both: BTreeSet<u8> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(left.finish(), both);
        }
    }

    #[test]
    fn continues_from_a_set() {
        let mut b = SetBuilder::from_set(BTreeSet::from([2, 4]));
        assert_eq!(b.insert(5), Ok(()));
        assert_eq!(b.insert(4), Err(4));
        assert_eq!(b.insert(3), Ok(()));
        assert_eq!(b.finish().into_iter().collect::<Vec<_>>(), [2, 3, 4, 5]);
    }
}
