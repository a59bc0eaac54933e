//! `VecMap`: a map kept as a vector sorted by key, for the per-file indices
//! that hold one to a few entries (the blocker registry's versions of a
//! file).
//!
//! A `BTreeMap` allocates a whole node (room for eleven entries) for the
//! first one; these indices exist once per file, so that cost was most of
//! the DAG's memory per file. Lookups are binary searches; inserts and
//! removals shift the (short) tail. It never allocates until a second
//! entry.

use smallvec::SmallVec;

/// A map sorted by key, stored as a vector of pairs. One entry is kept
/// inline: a blocker file is almost always named at one version.
#[derive(Debug, Clone)]
pub(crate) struct VecMap<K, V> {
    entries: SmallVec<[(K, V); 1]>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self {
            entries: SmallVec::new(),
        }
    }
}

impl<K: Ord, V> VecMap<K, V> {
    #[inline]
    fn search(&self, key: &K) -> Result<usize, usize> {
        // Almost always one entry: compare it before searching.
        match self.entries.as_slice() {
            [] => Err(0),
            [(only, _)] => match only.cmp(key) {
                std::cmp::Ordering::Equal => Ok(0),
                std::cmp::Ordering::Less => Err(1),
                std::cmp::Ordering::Greater => Err(0),
            },
            entries => entries.binary_search_by(|(k, _)| k.cmp(key)),
        }
    }

    /// The value of `key`, if present.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.search(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `key`, mutably, if present.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match self.search(key) {
            Ok(i) => Some(&mut self.entries[i].1),
            Err(_) => None,
        }
    }

    /// The value of `key`, inserting `V::default()` first if absent.
    pub(crate) fn entry_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        let i = match self.search(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, V::default()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        self.search(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// Entries with a key below `bound`, in key order.
    pub(crate) fn range_below<'a>(&'a self, bound: &K) -> impl Iterator<Item = (&'a K, &'a V)> {
        let end = self.entries.partition_point(|(k, _)| k < bound);
        self.entries[..end].iter().map(|(k, v)| (k, v))
    }

    /// Removes and returns the entries with a key below `bound`, in key order.
    #[cfg(test)]
    pub(crate) fn split_below(&mut self, bound: &K) -> Vec<(K, V)> {
        let end = self.entries.partition_point(|(k, _)| k < bound);
        self.entries.drain(..end).collect()
    }

    /// Every entry, in key order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every value, in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// How many entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the backing vector holds on the heap (none while inline).
    pub(crate) fn capacity(&self) -> usize {
        if self.entries.spilled() {
            self.entries.capacity()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::VecMap;

    #[test]
    fn a_vec_map_keeps_its_keys_sorted_and_splits_below_a_bound() {
        let mut map = VecMap::default();
        for key in [5, 1, 3, 9, 7] {
            *map.entry_or_default(key) = key * 10;
        }
        *map.entry_or_default(3) += 3;
        assert_eq!(
            map.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            [1, 3, 5, 7, 9]
        );
        assert_eq!(map.get(&3), Some(&33));
        *map.entry_or_default(4) += 1;
        assert_eq!(map.get(&4), Some(&1));
        assert_eq!(
            map.range_below(&5).map(|(k, _)| *k).collect::<Vec<_>>(),
            [1, 3, 4]
        );
        assert_eq!(map.split_below(&4), [(1, 10), (3, 33)]);
        assert_eq!(map.remove(&9), Some(90));
        assert_eq!(map.remove(&9), None);
        assert_eq!(map.values().copied().collect::<Vec<_>>(), [1, 50, 70]);
        assert_eq!(map.len(), 3);
        assert!(!map.is_empty());
    }
}
