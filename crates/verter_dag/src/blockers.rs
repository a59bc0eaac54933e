//! The blocker registry: per artifact owner, the analyses its Artifact must
//! wait for (e.g. a macro defined in another file), and the reverse demand
//! index that says, in O(1), whether anyone names a given analysis.
//!
//! An owner is one file object at one generation ([`FileIdentity`]). The
//! reverse index keeps, per blocker key, the set of owners naming it: its size
//! is the demand refcount, so the count cannot drift from the records. This
//! module stores records and nothing else; it never admits work.
//!
//! # Invariants
//! 1. `refs[k]` contains `o` exactly when `by_owner[o]` contains `k`, in every
//!    funnel: record (replace), drain, clear, owner retirement,
//!    re-pointing and reset (`demand_matches_a_recount_after_every_funnel`).
//! 2. Every per-canonical bucket is removed when it empties, so occupancy is
//!    zero when no record is left (`empty_registry_has_zero_occupancy`).
//! 3. Nothing scans all owners: owner removal follows `owners_by_file`, key
//!    removal follows `refs` of that key's canonical.

use crate::hash::HashMap;
use crate::small_set::SmallSet;
use crate::vec_map::VecMap;

use crate::identity::{Canonical, DepKey, FileIdentity, SourceVersion};

/// Blocker records and their reverse demand index.
#[derive(Debug, Default)]
pub(crate) struct BlockerRegistry {
    /// Owner → the keys its Artifact waits for, sorted and distinct.
    by_owner: HashMap<FileIdentity, Vec<DepKey>>,
    /// Canonical → versions of that canonical that own records.
    owners_by_file: HashMap<Canonical, VecMap<SourceVersion, ()>>,
    /// Blocker canonical → blocker version → key → owners naming it. A
    /// version has one key per stage named (almost always one), so its keys
    /// are a short vector.
    refs: HashMap<Canonical, VecMap<SourceVersion, KeyOwners>>,
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
        owner: &FileIdentity,
        keys: impl IntoIterator<Item = DepKey>,
    ) -> Vec<DepKey> {
        let previous = self.drain(owner);
        let mut keys: Vec<DepKey> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        self.record_sorted(owner, keys);
        previous
    }

    /// Records `keys`, sorted and distinct, as `owner`'s record; `owner`
    /// has none (it was drained). The vector becomes the record.
    pub(crate) fn record_sorted(&mut self, owner: &FileIdentity, keys: Vec<DepKey>) {
        debug_assert!(!self.by_owner.contains_key(owner), "drained first");
        debug_assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
        if keys.is_empty() {
            return;
        }
        for key in &keys {
            self.add_ref(key, owner);
        }
        self.owners_by_file
            .entry(owner.canonical.clone())
            .or_default()
            .insert(owner.version(), ());
        self.by_owner.insert(owner.clone(), keys);
    }

    /// Removes and returns `owner`'s record.
    pub(crate) fn drain(&mut self, owner: &FileIdentity) -> Vec<DepKey> {
        let Some(keys) = self.by_owner.remove(owner) else {
            return Vec::new();
        };
        if let Some(versions) = self.owners_by_file.get_mut(&owner.canonical) {
            versions.remove(&owner.version());
            if versions.is_empty() {
                self.owners_by_file.remove(&owner.canonical);
            }
        }
        for key in &keys {
            self.remove_ref(key, owner);
        }
        keys
    }

    /// Whether `owner` has a record.
    pub(crate) fn has_record(&self, owner: &FileIdentity) -> bool {
        self.by_owner.contains_key(owner)
    }

    /// `owner`'s record, if any, sorted (so callers act in one order).
    pub(crate) fn blockers_of(&self, owner: &FileIdentity) -> Vec<DepKey> {
        self.keys_of(owner).to_vec()
    }

    /// `owner`'s record, borrowed: sorted, empty when it has none.
    pub(crate) fn keys_of(&self, owner: &FileIdentity) -> &[DepKey] {
        self.by_owner.get(owner).map_or(&[], Vec::as_slice)
    }

    /// Whether some owner names `key`: the reverse index, O(1).
    pub(crate) fn has_demand(&self, key: &DepKey) -> bool {
        self.demand(key) > 0
    }

    /// How many owners name `key`.
    pub(crate) fn demand(&self, key: &DepKey) -> usize {
        self.refs
            .get(&key.file.canonical)
            .and_then(|versions| versions.get(&key.file.version()))
            .and_then(|keys| keys.iter().find(|(k, _)| k == key))
            .map_or(0, |(_, owners)| owners.len())
    }

    /// Drops the records of every owner of `canonical` below `bound`.
    pub(crate) fn retire_owners_below(&mut self, canonical: &Canonical, bound: SourceVersion) {
        let retired: Vec<SourceVersion> = self
            .owners_by_file
            .get(canonical)
            .map(|versions| versions.range_below(&bound).map(|(v, ())| *v).collect())
            .unwrap_or_default();
        for version in retired {
            self.drain(&FileIdentity::new(
                canonical.clone(),
                version.incarnation,
                version.generation,
            ));
        }
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
                    .flat_map(|(key, owners)| owners.iter().map(|o| (o.clone(), key.clone())))
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
                    .flat_map(|(key, owners)| owners.iter().map(|o| (o.clone(), key.clone())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replaces `old` with `new` in `owner`'s record, keeping the index exact.
    pub(crate) fn repoint(&mut self, owner: &FileIdentity, old: &DepKey, new: DepKey) {
        let Some(keys) = self.by_owner.get_mut(owner) else {
            return;
        };
        let Ok(at) = keys.binary_search(old) else {
            return;
        };
        keys.remove(at);
        let inserted = match keys.binary_search(&new) {
            Ok(_) => false,
            Err(at) => {
                keys.insert(at, new.clone());
                true
            }
        };
        self.remove_ref(old, owner);
        if inserted {
            self.add_ref(&new, owner);
        }
    }

    #[cfg(test)]
    /// Every owner of `canonical` (any version).
    pub(crate) fn owners_of_file(&self, canonical: &Canonical) -> Vec<FileIdentity> {
        self.owners_by_file
            .get(canonical)
            .map(|versions| {
                versions
                    .iter()
                    .map(|(v, ())| {
                        FileIdentity::new(canonical.clone(), v.incarnation, v.generation)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Counts and capacities, including the nested tables.
    pub(crate) fn occupancy(&self) -> BlockerOccupancy {
        let mut references = 0;
        let mut referenced_keys = 0;
        let mut capacity = self.by_owner.capacity()
            + self.owners_by_file.capacity()
            + self.refs.capacity()
            + self.by_owner.values().map(Vec::capacity).sum::<usize>()
            + self
                .owners_by_file
                .values()
                .map(VecMap::capacity)
                .sum::<usize>();
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
            owners: self.by_owner.len(),
            references,
            referenced_keys,
            referenced_files: self.refs.len(),
            capacity,
        }
    }

    /// Drops every record and releases the backing storage.
    pub(crate) fn clear_and_release(&mut self) {
        *self = Self::default();
    }

    /// Recounts the demand of every key from the owner records: what the
    /// reverse index must equal. Used by tests and debug assertions.
    #[cfg(test)]
    pub(crate) fn recount(&self) -> HashMap<DepKey, usize> {
        let mut counts = HashMap::default();
        for keys in self.by_owner.values() {
            for key in keys {
                *counts.entry(key.clone()).or_insert(0) += 1;
            }
        }
        counts
    }

    /// The demand of every key as the reverse index has it.
    #[cfg(test)]
    pub(crate) fn indexed_demand(&self) -> HashMap<DepKey, usize> {
        self.refs
            .values()
            .flat_map(|versions| versions.values())
            .flat_map(|keys| keys.iter().map(|(key, owners)| (key.clone(), owners.len())))
            .collect()
    }

    fn add_ref(&mut self, key: &DepKey, owner: &FileIdentity) {
        let keys = self
            .refs
            .entry(key.file.canonical.clone())
            .or_default()
            .entry_or_default(key.file.version());
        let owners = match keys.iter().position(|(k, _)| k == key) {
            Some(at) => &mut keys[at].1,
            None => {
                keys.push((key.clone(), SmallSet::default()));
                &mut keys.last_mut().expect("just pushed").1
            }
        };
        owners.insert(owner.clone());
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

#[cfg(test)]
mod tests;
