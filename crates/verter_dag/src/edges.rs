//! `DepEdges`: the one representation of dependency edges.
//!
//! Each consumer maps the [`DepKey`]s it waits on to the edge's sequence
//! number; each `DepKey` maps its waiting consumers by sequence (so they are
//! released in link order); a file index keeps, per canonical and across
//! incarnations, the versions that have waiters. Link and unlink touch both
//! sides in one step. This module stores edges and nothing else: it never
//! decides readiness, never checks stage rank (the DAG does, before linking)
//! and never wakes anyone.
//!
//! # Invariants
//! 1. An edge is in `by_consumer` exactly when it is in `by_dep`, with the same
//!    sequence number (`link_and_unlink_touch_both_sides`).
//! 2. The file index holds a `DepKey` exactly when that key has at least one
//!    waiter (`file_index_tracks_keys_with_waiters`).
//! 3. Removing a consumer's edges or a key's waiters never scans siblings:
//!    it follows the consumer's own map or the key's own map
//!    (`removing_a_consumer_unlinks_only_its_edges`).

use crate::hash::{HashMap, HashSet};
use crate::vec_map::VecMap;
use std::collections::BTreeMap;

use crate::identity::{Canonical, DepKey, SourceVersion, WorkNodeIdentity};

/// Dependency edges between admitted work and the file stages it waits on.
#[derive(Debug, Default)]
pub(crate) struct DepEdges {
    /// Consumer → the keys it waits on → the edge's sequence number.
    by_consumer: HashMap<WorkNodeIdentity, HashMap<DepKey, u64>>,
    /// Key → its waiting consumers, in link order.
    by_dep: HashMap<DepKey, BTreeMap<u64, WorkNodeIdentity>>,
    /// Canonical → versions (across incarnations) → keys with waiters.
    file_index: HashMap<Canonical, VecMap<SourceVersion, HashSet<DepKey>>>,
    /// The next edge sequence number; never reused.
    next_seq: u64,
}

/// Membership counts and backing capacity of the edge store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EdgeOccupancy {
    /// Consumers with at least one edge.
    pub consumers: usize,
    /// Edges (each counted once).
    pub edges: usize,
    /// Keys with at least one waiter.
    pub keys: usize,
    /// Canonicals in the file index.
    pub indexed_files: usize,
    /// (canonical, version) buckets in the file index.
    pub indexed_versions: usize,
    /// Backing capacity of the outer and nested tables, in entries.
    pub capacity: usize,
}

impl DepEdges {
    /// Links `consumer` to `dep`. Returns `false` (and changes nothing) if the
    /// edge already exists.
    pub(crate) fn link(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let deps = self.by_consumer.entry(consumer.clone()).or_default();
        if deps.contains_key(dep) {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        deps.insert(dep.clone(), seq);
        self.by_dep
            .entry(dep.clone())
            .or_default()
            .insert(seq, consumer.clone());
        self.file_index
            .entry(dep.file.canonical.clone())
            .or_default()
            .entry_or_default(dep.file.version())
            .insert(dep.clone());
        true
    }

    /// Removes the edge `consumer → dep`, if present. Returns whether it was.
    pub(crate) fn unlink(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let Some(deps) = self.by_consumer.get_mut(consumer) else {
            return false;
        };
        let Some(seq) = deps.remove(dep) else {
            return false;
        };
        if deps.is_empty() {
            self.by_consumer.remove(consumer);
        }
        self.remove_waiter(dep, seq);
        true
    }

    /// Removes every edge of `consumer`; returns the keys it waited on.
    pub(crate) fn remove_consumer(&mut self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        let Some(deps) = self.by_consumer.remove(consumer) else {
            return Vec::new();
        };
        let mut keys = Vec::with_capacity(deps.len());
        for (dep, seq) in deps {
            self.remove_waiter(&dep, seq);
            keys.push(dep);
        }
        keys
    }

    /// Removes every edge into `dep`; returns its consumers in link order.
    pub(crate) fn take_waiters(&mut self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        let Some(waiters) = self.by_dep.remove(dep) else {
            return Vec::new();
        };
        self.unindex(dep);
        let mut consumers = Vec::with_capacity(waiters.len());
        for consumer in waiters.into_values() {
            if let Some(deps) = self.by_consumer.get_mut(&consumer) {
                deps.remove(dep);
                if deps.is_empty() {
                    self.by_consumer.remove(&consumer);
                }
            }
            consumers.push(consumer);
        }
        consumers
    }

    /// How many keys `consumer` still waits on.
    pub(crate) fn remaining(&self, consumer: &WorkNodeIdentity) -> usize {
        self.by_consumer.get(consumer).map_or(0, HashMap::len)
    }

    /// The keys `consumer` waits on (unordered).
    pub(crate) fn deps_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        self.by_consumer
            .get(consumer)
            .map(|deps| deps.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The consumers waiting on `dep`, in link order.
    pub(crate) fn waiters_of(&self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        self.by_dep
            .get(dep)
            .map(|waiters| waiters.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The keys of `canonical` with waiters whose version is below `bound`,
    /// reached through the file index alone (no scan of other files).
    pub(crate) fn keys_below(&self, canonical: &Canonical, bound: SourceVersion) -> Vec<DepKey> {
        self.file_index
            .get(canonical)
            .map(|versions| {
                versions
                    .range_below(&bound)
                    .flat_map(|(_, keys)| keys.iter().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[cfg(test)]
    /// Every key of `canonical` with waiters, at any version.
    pub(crate) fn keys_of_file(&self, canonical: &Canonical) -> Vec<DepKey> {
        self.file_index
            .get(canonical)
            .map(|versions| versions.values().flatten().cloned().collect())
            .unwrap_or_default()
    }

    /// Counts and capacities, including the nested tables.
    pub(crate) fn occupancy(&self) -> EdgeOccupancy {
        let nested_consumer: usize = self.by_consumer.values().map(HashMap::capacity).sum();
        let nested_index: usize = self
            .file_index
            .values()
            .map(|versions| {
                versions.capacity() + versions.values().map(HashSet::capacity).sum::<usize>()
            })
            .sum();
        EdgeOccupancy {
            consumers: self.by_consumer.len(),
            edges: self.by_consumer.values().map(HashMap::len).sum(),
            keys: self.by_dep.len(),
            indexed_files: self.file_index.len(),
            indexed_versions: self.file_index.values().map(VecMap::len).sum(),
            capacity: self.by_consumer.capacity()
                + nested_consumer
                + self.by_dep.capacity()
                + self.by_dep.values().map(BTreeMap::len).sum::<usize>()
                + self.file_index.capacity()
                + nested_index,
        }
    }

    /// Drops every edge and releases the backing storage.
    pub(crate) fn clear_and_release(&mut self) {
        let next_seq = self.next_seq;
        *self = Self {
            next_seq,
            ..Self::default()
        };
    }

    fn remove_waiter(&mut self, dep: &DepKey, seq: u64) {
        if let Some(waiters) = self.by_dep.get_mut(dep) {
            waiters.remove(&seq);
            if waiters.is_empty() {
                self.by_dep.remove(dep);
                self.unindex(dep);
            }
        }
    }

    fn unindex(&mut self, dep: &DepKey) {
        let canonical = &dep.file.canonical;
        if let Some(versions) = self.file_index.get_mut(canonical) {
            let version = dep.file.version();
            if let Some(keys) = versions.get_mut(&version) {
                keys.remove(dep);
                if keys.is_empty() {
                    versions.remove(&version);
                }
            }
            if versions.is_empty() {
                self.file_index.remove(canonical);
            }
        }
    }
}

#[cfg(test)]
mod tests;
