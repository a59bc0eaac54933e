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

use crate::hash::HashMap;
use crate::vec_map::VecMap;

use crate::identity::{Canonical, DepKey, SourceVersion, WorkNodeIdentity};

/// Above this many keys, a consumer's keys move from a vector (scanned) to a
/// hash table, so a consumer that waits on thousands of files links in
/// constant time per edge.
const SMALL_DEPS: usize = 16;

/// Dependency edges between admitted work and the file stages it waits on.
///
/// Almost every consumer waits on a handful of keys and almost every key has
/// a handful of waiters, so both sides are vectors: a consumer's keys are
/// scanned (a table only past [`SMALL_DEPS`]), a key's waiters are kept in
/// link order with tombstones, so removing one waiter of a hub is a binary
/// search, not a shift.
#[derive(Debug, Default)]
pub(crate) struct DepEdges {
    /// Consumer → the keys it waits on, each with the edge's sequence number.
    by_consumer: HashMap<WorkNodeIdentity, ConsumerDeps>,
    /// Key → its waiting consumers, in link order.
    by_dep: HashMap<DepKey, Waiters>,
    /// Canonical → versions (across incarnations) → keys with waiters.
    file_index: HashMap<Canonical, VecMap<SourceVersion, Vec<DepKey>>>,
    /// The next edge sequence number; never reused.
    next_seq: u64,
}

/// The keys one consumer waits on.
#[derive(Debug)]
enum ConsumerDeps {
    /// At most [`SMALL_DEPS`] keys, unordered.
    Few(Vec<(DepKey, u64)>),
    /// More: a table.
    Many(HashMap<DepKey, u64>),
}

impl Default for ConsumerDeps {
    fn default() -> Self {
        Self::Few(Vec::new())
    }
}

impl ConsumerDeps {
    fn contains(&self, dep: &DepKey) -> bool {
        match self {
            Self::Few(deps) => deps.iter().any(|(key, _)| key == dep),
            Self::Many(deps) => deps.contains_key(dep),
        }
    }

    fn insert(&mut self, dep: DepKey, seq: u64) {
        match self {
            Self::Few(deps) if deps.len() < SMALL_DEPS => deps.push((dep, seq)),
            Self::Few(deps) => {
                let mut table: HashMap<DepKey, u64> = deps.drain(..).collect();
                table.insert(dep, seq);
                *self = Self::Many(table);
            }
            Self::Many(deps) => {
                deps.insert(dep, seq);
            }
        }
    }

    fn remove(&mut self, dep: &DepKey) -> Option<u64> {
        match self {
            Self::Few(deps) => {
                let at = deps.iter().position(|(key, _)| key == dep)?;
                Some(deps.swap_remove(at).1)
            }
            Self::Many(deps) => deps.remove(dep),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Few(deps) => deps.len(),
            Self::Many(deps) => deps.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Self::Few(deps) => deps.capacity(),
            Self::Many(deps) => deps.capacity(),
        }
    }

    fn into_pairs(self) -> Vec<(DepKey, u64)> {
        match self {
            Self::Few(deps) => deps,
            Self::Many(deps) => deps.into_iter().collect(),
        }
    }

    fn keys(&self) -> Vec<DepKey> {
        match self {
            Self::Few(deps) => deps.iter().map(|(key, _)| key.clone()).collect(),
            Self::Many(deps) => deps.keys().cloned().collect(),
        }
    }
}

/// The consumers waiting on one key, in link (sequence) order. A removed
/// waiter leaves a tombstone; the vector is compacted when tombstones
/// outnumber the living.
#[derive(Debug, Default)]
struct Waiters {
    entries: Vec<(u64, Option<WorkNodeIdentity>)>,
    live: usize,
}

impl Waiters {
    fn push(&mut self, seq: u64, consumer: WorkNodeIdentity) {
        debug_assert!(self.entries.last().is_none_or(|(last, _)| *last < seq));
        self.entries.push((seq, Some(consumer)));
        self.live += 1;
    }

    /// Removes the waiter linked with `seq`, if present.
    fn remove(&mut self, seq: u64) {
        let Ok(at) = self.entries.binary_search_by_key(&seq, |(s, _)| *s) else {
            return;
        };
        if self.entries[at].1.take().is_some() {
            self.live -= 1;
            if self.live * 2 < self.entries.len() {
                self.entries.retain(|(_, consumer)| consumer.is_some());
            }
        }
    }

    fn consumers(&self) -> impl Iterator<Item = &WorkNodeIdentity> {
        self.entries
            .iter()
            .filter_map(|(_, consumer)| consumer.as_ref())
    }

    fn into_consumers(self) -> impl Iterator<Item = WorkNodeIdentity> {
        self.entries
            .into_iter()
            .filter_map(|(_, consumer)| consumer)
    }
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
        if deps.contains(dep) {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        deps.insert(dep.clone(), seq);
        let waiters = self.by_dep.entry(dep.clone()).or_default();
        let first = waiters.live == 0;
        waiters.push(seq, consumer.clone());
        if first {
            // A key enters the index when it gains its first waiter.
            self.file_index
                .entry(dep.file.canonical.clone())
                .or_default()
                .entry_or_default(dep.file.version())
                .push(dep.clone());
        }
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
        if deps.len() == 0 {
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
        let pairs = deps.into_pairs();
        let mut keys = Vec::with_capacity(pairs.len());
        for (dep, seq) in pairs {
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
        let mut consumers = Vec::with_capacity(waiters.live);
        for consumer in waiters.into_consumers() {
            if let Some(deps) = self.by_consumer.get_mut(&consumer) {
                deps.remove(dep);
                if deps.len() == 0 {
                    self.by_consumer.remove(&consumer);
                }
            }
            consumers.push(consumer);
        }
        consumers
    }

    /// How many keys `consumer` still waits on.
    pub(crate) fn remaining(&self, consumer: &WorkNodeIdentity) -> usize {
        self.by_consumer.get(consumer).map_or(0, ConsumerDeps::len)
    }

    /// The keys `consumer` waits on (unordered).
    pub(crate) fn deps_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        self.by_consumer
            .get(consumer)
            .map(ConsumerDeps::keys)
            .unwrap_or_default()
    }

    /// The consumers waiting on `dep`, in link order.
    pub(crate) fn waiters_of(&self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        self.by_dep
            .get(dep)
            .map(|waiters| waiters.consumers().cloned().collect())
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
        let nested_consumer: usize = self.by_consumer.values().map(ConsumerDeps::capacity).sum();
        let nested_index: usize = self
            .file_index
            .values()
            .map(|versions| {
                versions.capacity() + versions.values().map(Vec::capacity).sum::<usize>()
            })
            .sum();
        EdgeOccupancy {
            consumers: self.by_consumer.len(),
            edges: self.by_consumer.values().map(ConsumerDeps::len).sum(),
            keys: self.by_dep.len(),
            indexed_files: self.file_index.len(),
            indexed_versions: self.file_index.values().map(VecMap::len).sum(),
            capacity: self.by_consumer.capacity()
                + nested_consumer
                + self.by_dep.capacity()
                + self
                    .by_dep
                    .values()
                    .map(|waiters| waiters.entries.capacity())
                    .sum::<usize>()
                + self.file_index.capacity()
                + nested_index,
        }
    }

    /// Whether no edge is stored and no table holds backing storage.
    pub(crate) fn is_released(&self) -> bool {
        self.by_consumer.capacity() == 0
            && self.by_dep.capacity() == 0
            && self.file_index.capacity() == 0
    }

    /// Whether no edge is stored.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_consumer.is_empty() && self.by_dep.is_empty() && self.file_index.is_empty()
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
            waiters.remove(seq);
            if waiters.live == 0 {
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
                if let Some(at) = keys.iter().position(|key| key == dep) {
                    keys.swap_remove(at);
                }
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
