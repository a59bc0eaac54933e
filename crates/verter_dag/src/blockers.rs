//! The blocker registry: per artifact owner, the analyses its Artifact must
//! wait for (e.g. a macro defined in another file), and the reverse demand
//! index that says, in O(1), whether anyone names a given analysis.
//!
//! An owner is one file object at one generation ([`FileIdentity`]). Its
//! record is kept where the caller keeps its other state of that version
//! ([`OwnerRecords`]: the DAG keeps it in the owner's file slot, so
//! retirement takes it out with the version). This module keeps the reverse
//! index, key → the owners naming it: its size is the demand refcount, so
//! the count cannot drift from the records. It stores records and nothing
//! else; it never admits work.
//!
//! # Invariants
//! 1. `refs[k]` contains `o` exactly when `o`'s record contains `k`, in every
//!    funnel: record (replace), drain, forget (the owner's version retired),
//!    re-pointing and reset (`demand_matches_a_recount_after_every_funnel`).
//! 2. Every per-canonical bucket is removed when it empties, so occupancy is
//!    zero when no record is left (`empty_registry_has_zero_occupancy`).
//! 3. Nothing scans all owners: key removal follows `refs` of that key's
//!    canonical, and an owner's record is found where its version is.

use crate::canonical_map::CanonicalMap;
#[cfg(any(test, debug_assertions))]
use crate::hash::HashMap;
use crate::small_set::SmallSet;
use crate::vec_map::VecMap;

use crate::identity::{Canonical, DepKey, FileIdentity, SourceVersion};

/// Where owners' records live: each owner's keys, sorted and distinct, or
/// none. The registry reads and writes records only through this, in step
/// with its index.
pub(crate) trait OwnerRecords {
    /// `owner`'s record, if it has one (never empty).
    fn keys(&self, owner: &FileIdentity) -> Option<&Vec<DepKey>>;
    /// `owner`'s record, mutably (the registry keeps it non-empty).
    fn keys_mut(&mut self, owner: &FileIdentity) -> Option<&mut Vec<DepKey>>;
    /// Takes `owner`'s record out.
    fn take(&mut self, owner: &FileIdentity) -> Option<Vec<DepKey>>;
    /// Stores `keys` (non-empty) as the record of `owner`, which has none.
    fn put(&mut self, owner: &FileIdentity, keys: Vec<DepKey>);
}

/// The reverse demand index of the blocker records.
#[derive(Debug, Default)]
pub(crate) struct BlockerRegistry {
    /// Blocker canonical → blocker version → key → owners naming it. A
    /// version has one key per stage named (almost always one), so its keys
    /// are a short vector.
    refs: CanonicalMap<VecMap<SourceVersion, KeyOwners>>,
}

/// The keys of one blocker version with the owners naming each; one key
/// inline (a version is almost always named at one stage).
type KeyOwners = smallvec::SmallVec<[(DepKey, SmallSet<FileIdentity>); 1]>;

/// Membership counts and backing capacity of the blocker registry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockerOccupancy {
    /// Owners with records.
    pub owners: usize,
    /// (owner, key) references.
    pub references: usize,
    /// Distinct keys named by some owner.
    pub referenced_keys: usize,
    /// Canonicals with referenced keys.
    pub referenced_files: usize,
    /// Backing capacity of the outer and nested tables, in entries.
    pub capacity: usize,
}

impl BlockerRegistry {
    /// Replaces `owner`'s record with `keys`. Returns the keys it held before.
    #[cfg(test)]
    pub(crate) fn record(
        &mut self,
        records: &mut impl OwnerRecords,
        owner: &FileIdentity,
        keys: impl IntoIterator<Item = DepKey>,
    ) -> Vec<DepKey> {
        let previous = self.drain(records, owner);
        let mut keys: Vec<DepKey> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        self.record_sorted(records, owner, keys);
        previous
    }

    /// Records `keys`, sorted and distinct, as `owner`'s record; `owner`
    /// has none (it was drained). The vector becomes the record.
    pub(crate) fn record_sorted(
        &mut self,
        records: &mut impl OwnerRecords,
        owner: &FileIdentity,
        keys: Vec<DepKey>,
    ) {
        debug_assert!(records.keys(owner).is_none(), "drained first");
        debug_assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
        if keys.is_empty() {
            return;
        }
        for key in &keys {
            self.add_ref(key, owner);
        }
        records.put(owner, keys);
    }

    /// Removes and returns `owner`'s record.
    pub(crate) fn drain(
        &mut self,
        records: &mut impl OwnerRecords,
        owner: &FileIdentity,
    ) -> Vec<DepKey> {
        let Some(keys) = records.take(owner) else {
            return Vec::new();
        };
        self.forget(owner, &keys);
        keys
    }

    /// Drops the references of `owner`, whose record `keys` already left
    /// the records (its version was retired).
    pub(crate) fn forget(&mut self, owner: &FileIdentity, keys: &[DepKey]) {
        for key in keys {
            self.remove_ref(key, owner);
        }
    }

    /// Whether some owner names `key`: the reverse index, O(1).
    pub(crate) fn has_demand(&self, key: &DepKey) -> bool {
        self.demand(key) > 0
    }

    /// One owner that names `key`, if any (the first in the index's own
    /// order).
    pub(crate) fn an_owner(&self, key: &DepKey) -> Option<FileIdentity> {
        self.refs
            .get(&key.file.canonical)
            .and_then(|versions| versions.get(&key.file.version()))
            .and_then(|keys| keys.iter().find(|(k, _)| k == key))
            .and_then(|(_, owners)| owners.iter().next().copied())
    }

    /// Every owner that names `key`, in the index's own order.
    pub(crate) fn owners_of(&self, key: &DepKey) -> Vec<FileIdentity> {
        self.refs
            .get(&key.file.canonical)
            .and_then(|versions| versions.get(&key.file.version()))
            .and_then(|keys| keys.iter().find(|(k, _)| k == key))
            .map(|(_, owners)| owners.iter().copied().collect())
            .unwrap_or_default()
    }

    /// How many owners name `key`.
    pub(crate) fn demand(&self, key: &DepKey) -> usize {
        self.refs
            .get(&key.file.canonical)
            .and_then(|versions| versions.get(&key.file.version()))
            .and_then(|keys| keys.iter().find(|(k, _)| k == key))
            .map_or(0, |(_, owners)| owners.len())
    }

    /// Every (owner, key) where the key is a blocker of `canonical` below
    /// `bound`, reached through the reverse index of that canonical alone,
    /// sorted.
    pub(crate) fn references_below(
        &self,
        canonical: &Canonical,
        bound: SourceVersion,
    ) -> Vec<(FileIdentity, DepKey)> {
        self.refs
            .get(canonical)
            .map(|versions| {
                versions
                    .range_below(&bound)
                    .flat_map(|(_, keys)| keys.iter())
                    .flat_map(|(key, owners)| owners.iter().map(|o| (*o, *key)))
                    .collect::<Vec<_>>()
            })
            .map(|mut refs| {
                refs.sort();
                refs
            })
            .unwrap_or_default()
    }

    #[cfg(test)]
    /// Every (owner, key) where the key is a blocker of `canonical`.
    pub(crate) fn references_to_file(&self, canonical: &Canonical) -> Vec<(FileIdentity, DepKey)> {
        self.refs
            .get(canonical)
            .map(|versions| {
                versions
                    .values()
                    .flat_map(|keys| keys.iter())
                    .flat_map(|(key, owners)| owners.iter().map(|o| (*o, *key)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replaces `old` with `new` in `owner`'s record, keeping the index exact.
    pub(crate) fn repoint(
        &mut self,
        records: &mut impl OwnerRecords,
        owner: &FileIdentity,
        old: &DepKey,
        new: DepKey,
    ) {
        let Some(keys) = records.keys_mut(owner) else {
            return;
        };
        let Ok(at) = keys.binary_search(old) else {
            return;
        };
        keys.remove(at);
        let inserted = match keys.binary_search(&new) {
            Ok(_) => false,
            Err(at) => {
                keys.insert(at, new);
                true
            }
        };
        self.remove_ref(old, owner);
        if inserted {
            self.add_ref(&new, owner);
        }
    }

    /// Counts and capacities of the index; the caller adds its records'
    /// (`owners` and their vectors' capacity).
    pub(crate) fn occupancy(&self) -> BlockerOccupancy {
        let mut references = 0;
        let mut referenced_keys = 0;
        let mut capacity = self.refs.capacity();
        for versions in self.refs.values() {
            capacity += versions.capacity();
            for keys in versions.values() {
                capacity += keys.capacity();
                referenced_keys += keys.len();
                for (_, owners) in keys {
                    capacity += owners.capacity();
                    references += owners.len();
                }
            }
        }
        BlockerOccupancy {
            owners: 0,
            references,
            referenced_keys,
            referenced_files: self.refs.len(),
            capacity,
        }
    }

    /// Drops the index and releases its storage (the caller drops the
    /// records).
    pub(crate) fn clear_and_release(&mut self) {
        *self = Self::default();
    }

    /// The demand of every key as the reverse index has it (checked against
    /// a recount of the records on every debug occupancy read).
    #[cfg(debug_assertions)]
    pub(crate) fn indexed_demand(&self) -> HashMap<DepKey, usize> {
        self.refs
            .values()
            .flat_map(|versions| versions.values())
            .flat_map(|keys| keys.iter().map(|(key, owners)| (*key, owners.len())))
            .collect()
    }

    /// Adds `owner` to `key`'s owners. `owner`'s record just gained `key`
    /// (it did not hold it), so by invariant 1 `owner` is not among them:
    /// no scan of the owners.
    fn add_ref(&mut self, key: &DepKey, owner: &FileIdentity) {
        let keys = self
            .refs
            .get_or_default(&key.file.canonical)
            .entry_or_default(key.file.version());
        let owners = match keys.iter().position(|(k, _)| k == key) {
            Some(at) => &mut keys[at].1,
            None => {
                keys.push((*key, SmallSet::default()));
                &mut keys.last_mut().expect("just pushed").1
            }
        };
        owners.insert_absent(*owner);
    }

    fn remove_ref(&mut self, key: &DepKey, owner: &FileIdentity) {
        let canonical = &key.file.canonical;
        let Some(versions) = self.refs.get_mut(canonical) else {
            return;
        };
        let version = key.file.version();
        if let Some(keys) = versions.get_mut(&version) {
            if let Some(at) = keys.iter().position(|(k, _)| k == key) {
                let owners = &mut keys[at].1;
                owners.remove(owner);
                if owners.is_empty() {
                    keys.swap_remove(at);
                }
            }
            if keys.is_empty() {
                versions.remove(&version);
            }
        }
        if versions.is_empty() {
            self.refs.remove(canonical);
        }
    }
}

/// Owner records in a map: what the registry's unit tests keep them in.
#[cfg(test)]
impl OwnerRecords for HashMap<FileIdentity, Vec<DepKey>> {
    fn keys(&self, owner: &FileIdentity) -> Option<&Vec<DepKey>> {
        self.get(owner)
    }

    fn keys_mut(&mut self, owner: &FileIdentity) -> Option<&mut Vec<DepKey>> {
        self.get_mut(owner)
    }

    fn take(&mut self, owner: &FileIdentity) -> Option<Vec<DepKey>> {
        self.remove(owner)
    }

    fn put(&mut self, owner: &FileIdentity, keys: Vec<DepKey>) {
        self.insert(*owner, keys);
    }
}

#[cfg(test)]
mod tests;
