//! `SmallSet`: a set kept as a vector until it grows past a few entries,
//! then as a hash table.
//!
//! The DAG's per-key and per-owner sets hold one to a few entries almost
//! always (a key named by one owner, an owner naming a few blockers); a
//! `HashSet` allocates a table of buckets for the first of them. Hubs (a
//! prelude every file names) still need constant-time membership, hence the
//! table past [`SMALL`] entries. It never allocates for its first
//! [`INLINE`] entries: those are kept inline. A key is most often named by a
//! few owners (a file's importers), so a spill per shared key was the
//! largest allocation site of a build's blocker records.

use std::hash::Hash;

use smallvec::SmallVec;

use crate::hash::HashSet;

/// Above this many entries a set becomes a table.
pub(crate) const SMALL: usize = 16;

/// Entries kept without an allocation. Six, not four: the W1 workload at
/// 100k files (`docs/benchmarks.md`) spilled enough four-entry owner sets
/// to cost 0.3 allocations per file; at six the sets that still spill are
/// rare, and the retained heap per file fell (1472 -> 1465 B) because the
/// spilled buffers went away with them, for 1 % more peak RSS.
pub(crate) const INLINE: usize = 6;

/// A set of `T`, unordered.
#[derive(Debug, Clone)]
pub(crate) enum SmallSet<T> {
    /// At most [`SMALL`] entries, scanned; the first [`INLINE`] inline.
    Few(SmallVec<[T; INLINE]>),
    /// More: a table.
    Many(HashSet<T>),
}

impl<T> Default for SmallSet<T> {
    fn default() -> Self {
        Self::Few(SmallVec::new())
    }
}

impl<T: Hash + Eq> SmallSet<T> {
    /// Whether `value` is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, value: &T) -> bool {
        match self {
            Self::Few(values) => values.contains(value),
            Self::Many(values) => values.contains(value),
        }
    }

    /// Inserts `value`; returns whether it was new.
    pub(crate) fn insert(&mut self, value: T) -> bool {
        match self {
            Self::Few(values) => {
                if values.contains(&value) {
                    return false;
                }
                if values.len() < SMALL {
                    values.push(value);
                } else {
                    let mut table: HashSet<T> = values.drain(..).collect();
                    table.insert(value);
                    *self = Self::Many(table);
                }
                true
            }
            Self::Many(values) => values.insert(value),
        }
    }

    /// Inserts `value`, which the caller knows is not in the set (checked
    /// in debug builds): no scan of the entries.
    pub(crate) fn insert_absent(&mut self, value: T) {
        match self {
            Self::Few(values) if values.len() < SMALL => {
                debug_assert!(!values.contains(&value), "the value was in the set");
                values.push(value);
            }
            Self::Few(_) | Self::Many(_) => {
                let inserted = self.insert(value);
                debug_assert!(inserted, "the value was in the set");
            }
        }
    }

    /// Removes `value`; returns whether it was present.
    pub(crate) fn remove(&mut self, value: &T) -> bool {
        match self {
            Self::Few(values) => match values.iter().position(|v| v == value) {
                Some(at) => {
                    values.swap_remove(at);
                    true
                }
                None => false,
            },
            Self::Many(values) => values.remove(value),
        }
    }

    /// How many entries the set holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Few(values) => values.len(),
            Self::Many(values) => values.len(),
        }
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Backing capacity, in entries (an inline entry counts as one).
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Self::Few(values) if values.spilled() => values.capacity(),
            Self::Few(values) => values.len(),
            Self::Many(values) => values.capacity(),
        }
    }

    /// The entries, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let (few, many) = match self {
            Self::Few(values) => (Some(values.iter()), None),
            Self::Many(values) => (None, Some(values.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// The entries, consumed, in no particular order.
    #[cfg(test)]
    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            Self::Few(values) => values.into_vec(),
            Self::Many(values) => values.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Membership, insert and remove agree with a `HashSet` on both sides of
    /// the vector/table boundary.
    #[test]
    fn agrees_with_a_hash_set_across_the_boundary() {
        let mut small = SmallSet::default();
        let mut reference = std::collections::HashSet::new();
        for round in 0..3 {
            for value in 0..(3 * SMALL as u32) {
                let value = (value * 7 + round) % 40;
                assert_eq!(small.insert(value), reference.insert(value));
                assert_eq!(small.len(), reference.len());
            }
            for value in (0..40).step_by(3 + round as usize) {
                assert_eq!(small.remove(&value), reference.remove(&value));
                assert!(!small.contains(&value));
            }
            let mut listed: Vec<u32> = small.iter().copied().collect();
            listed.sort_unstable();
            let mut expected: Vec<u32> = reference.iter().copied().collect();
            expected.sort_unstable();
            assert_eq!(listed, expected);
        }
        assert!(
            matches!(small, SmallSet::Many(_)),
            "it crossed the boundary"
        );
        let mut all = small.into_vec();
        all.sort_unstable();
        assert_eq!(all.len(), reference.len());
    }

    /// A key named by a file's few importers is kept without an
    /// allocation: the first `INLINE` entries never spill.
    #[test]
    fn the_first_few_entries_never_allocate() {
        let mut small = SmallSet::default();
        for value in 0..INLINE as u32 {
            small.insert(value);
            let SmallSet::Few(values) = &small else {
                panic!("{value} entries made a table");
            };
            assert!(!values.spilled(), "{} entries spilled", value + 1);
        }
        small.insert(INLINE as u32);
        let SmallSet::Few(values) = &small else {
            panic!("one past the inline entries made a table");
        };
        assert!(values.spilled());
    }
}
