//! `DepEdges`: the one representation of dependency edges.
//!
//! One table holds both sides of every file stage's edges: the keys it waits
//! on (as a consumer) and the consumers waiting on it (as a producer), so an
//! Analysis that waits on its Source and is waited on by Artifacts is one
//! entry, and linking an edge touches two entries of one table. Cache nodes
//! only consume (nothing can wait on them), so their keys are a table of
//! their own. Each edge carries a sequence number, so a key's waiters are
//! released in link order. This module stores edges and nothing else: it
//! never decides readiness, never checks stage rank (the DAG does, before
//! linking) and never wakes anyone. Retirement finds a file's keys through
//! the DAG's own per-file index of nodes, not through an index here.
//!
//! # Invariants
//! 1. An edge is on its consumer's side exactly when it is on its key's
//!    side, with the same sequence number (`link_and_unlink_touch_both_sides`).
//! 2. An entry is present only while one of its sides is non-empty, so an
//!    empty store holds no entries (`clear_releases_backing_storage`).
//! 3. Removing a consumer's edges or a key's waiters never scans siblings:
//!    it follows the consumer's own keys or the key's own waiters
//!    (`removing_a_consumer_unlinks_only_its_edges`).

use smallvec::SmallVec;

use crate::hash::HashMap;

use crate::identity::{DepKey, SchedulerCacheId, WorkNodeIdentity};

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
    /// File stage → its keys (as a consumer) and its waiters (as a key).
    files: HashMap<DepKey, StageEdges>,
    /// Cache node → the keys it waits on.
    cache_nodes: HashMap<(SchedulerCacheId, u64), ConsumerDeps>,
    /// Edges stored, each counted once.
    edges: usize,
    /// The next edge sequence number; never reused.
    next_seq: u64,
}

/// Both sides of one file stage's edges.
#[derive(Debug, Default)]
struct StageEdges {
    /// The keys this stage waits on.
    deps: ConsumerDeps,
    /// The consumers waiting on this stage.
    waiters: Waiters,
}

impl StageEdges {
    fn is_empty(&self) -> bool {
        self.deps.len() == 0 && self.waiters.live == 0
    }
}

/// A consumer's keys with their edges' sequence numbers. One inline: an
/// Analysis waits on its Source alone.
type FewDeps = SmallVec<[(DepKey, u64); 1]>;

/// The keys one consumer waits on.
#[derive(Debug)]
enum ConsumerDeps {
    /// At most [`SMALL_DEPS`] keys, unordered.
    Few(FewDeps),
    /// More: a table.
    Many(HashMap<DepKey, u64>),
}

impl Default for ConsumerDeps {
    fn default() -> Self {
        Self::Few(SmallVec::new())
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
            Self::Few(deps) if deps.spilled() => deps.capacity(),
            Self::Few(_) => 0,
            Self::Many(deps) => deps.capacity(),
        }
    }

    fn into_pairs(self) -> FewDeps {
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
    /// One inline: a Source is waited on by its Analysis alone.
    entries: SmallVec<[(u64, Option<WorkNodeIdentity>); 1]>,
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

    /// Backing capacity beyond the inline entry.
    fn capacity(&self) -> usize {
        if self.entries.spilled() {
            self.entries.capacity()
        } else {
            0
        }
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
    /// Backing capacity of the tables and nested vectors, in entries.
    pub capacity: usize,
}

impl DepEdges {
    /// The consumer side of `consumer`, if it has one.
    fn deps(&self, consumer: &WorkNodeIdentity) -> Option<&ConsumerDeps> {
        match consumer {
            WorkNodeIdentity::File(key) => self.files.get(key).map(|entry| &entry.deps),
            WorkNodeIdentity::CacheNode { cache_id, key_hash } => {
                self.cache_nodes.get(&(*cache_id, *key_hash))
            }
        }
    }

    /// Runs `f` on the consumer side of `consumer` (made when missing), then
    /// drops the entry if both its sides are empty.
    fn with_deps<R>(
        &mut self,
        consumer: &WorkNodeIdentity,
        create: bool,
        f: impl FnOnce(&mut ConsumerDeps) -> R,
    ) -> Option<R> {
        match consumer {
            WorkNodeIdentity::File(key) => {
                let entry = if create {
                    self.files.entry(key.clone()).or_default()
                } else {
                    self.files.get_mut(key)?
                };
                let result = f(&mut entry.deps);
                if entry.is_empty() {
                    self.files.remove(key);
                }
                Some(result)
            }
            WorkNodeIdentity::CacheNode { cache_id, key_hash } => {
                let id = (*cache_id, *key_hash);
                let deps = if create {
                    self.cache_nodes.entry(id).or_default()
                } else {
                    self.cache_nodes.get_mut(&id)?
                };
                let result = f(deps);
                if deps.len() == 0 {
                    self.cache_nodes.remove(&id);
                }
                Some(result)
            }
        }
    }

    /// Links `consumer` to `dep`. Returns `false` (and changes nothing) if the
    /// edge already exists.
    pub(crate) fn link(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let seq = self.next_seq;
        let added = self
            .with_deps(consumer, true, |deps| {
                if deps.contains(dep) {
                    false
                } else {
                    deps.insert(dep.clone(), seq);
                    true
                }
            })
            .unwrap_or(false);
        if !added {
            return false;
        }
        self.next_seq += 1;
        self.edges += 1;
        self.files
            .entry(dep.clone())
            .or_default()
            .waiters
            .push(seq, consumer.clone());
        true
    }

    /// Removes the edge `consumer → dep`, if present. Returns whether it was.
    pub(crate) fn unlink(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let Some(seq) = self
            .with_deps(consumer, false, |deps| deps.remove(dep))
            .flatten()
        else {
            return false;
        };
        self.edges -= 1;
        self.remove_waiter(dep, seq);
        true
    }

    /// Removes every edge of `consumer`; returns the keys it waited on.
    pub(crate) fn remove_consumer(&mut self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        let pairs = self
            .with_deps(consumer, false, |deps| std::mem::take(deps).into_pairs())
            .unwrap_or_default();
        self.edges -= pairs.len();
        let mut keys = Vec::with_capacity(pairs.len());
        for (dep, seq) in pairs {
            self.remove_waiter(&dep, seq);
            keys.push(dep);
        }
        keys
    }

    /// Removes every edge into `dep`; returns its consumers in link order
    /// (in the vector that held them: nothing is allocated).
    pub(crate) fn take_waiters(
        &mut self,
        dep: &DepKey,
    ) -> impl Iterator<Item = WorkNodeIdentity> + use<> {
        self.take_waiters_counted(dep).map(|(consumer, _)| consumer)
    }

    /// [`Self::take_waiters`], with how many keys each consumer still waits
    /// on afterwards (so a completion settles its consumers without looking
    /// their edges up again).
    pub(crate) fn take_waiters_counted(
        &mut self,
        dep: &DepKey,
    ) -> impl Iterator<Item = (WorkNodeIdentity, usize)> + use<> {
        let mut waiters = match self.files.get_mut(dep) {
            Some(entry) => {
                let waiters = std::mem::take(&mut entry.waiters);
                if entry.is_empty() {
                    self.files.remove(dep);
                }
                waiters
            }
            None => Waiters::default(),
        };
        // The taken entries' sequence numbers are not needed any more: each
        // holds its consumer's remaining count instead.
        for (slot, consumer) in &mut waiters.entries {
            let Some(consumer) = consumer else {
                continue;
            };
            let (removed, left) = self
                .with_deps(consumer, false, |deps| {
                    (deps.remove(dep).is_some(), deps.len())
                })
                .unwrap_or((false, 0));
            self.edges -= usize::from(removed);
            *slot = left as u64;
        }
        waiters
            .entries
            .into_iter()
            .filter_map(|(left, consumer)| consumer.map(|consumer| (consumer, left as usize)))
    }

    /// How many keys `consumer` still waits on.
    pub(crate) fn remaining(&self, consumer: &WorkNodeIdentity) -> usize {
        self.deps(consumer).map_or(0, ConsumerDeps::len)
    }

    /// The keys `consumer` waits on (unordered).
    pub(crate) fn deps_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        self.deps(consumer)
            .map(ConsumerDeps::keys)
            .unwrap_or_default()
    }

    /// The consumers waiting on `dep`, in link order.
    pub(crate) fn waiters_of(&self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        self.files
            .get(dep)
            .map(|entry| entry.waiters.consumers().cloned().collect())
            .unwrap_or_default()
    }

    /// Counts and capacities, including the nested vectors.
    pub(crate) fn occupancy(&self) -> EdgeOccupancy {
        let consumer_sides = self
            .files
            .values()
            .map(|entry| &entry.deps)
            .chain(self.cache_nodes.values());
        let (mut consumers, mut edges, mut nested) = (0, 0, 0);
        for deps in consumer_sides {
            consumers += usize::from(deps.len() > 0);
            edges += deps.len();
            nested += deps.capacity();
        }
        debug_assert_eq!(edges, self.edges, "the edge count drifted from the store");
        EdgeOccupancy {
            consumers,
            edges,
            keys: self
                .files
                .values()
                .filter(|entry| entry.waiters.live > 0)
                .count(),
            capacity: self.files.capacity()
                + self.cache_nodes.capacity()
                + nested
                + self
                    .files
                    .values()
                    .map(|entry| entry.waiters.capacity())
                    .sum::<usize>(),
        }
    }

    /// Whether no edge is stored and no table holds backing storage.
    pub(crate) fn is_released(&self) -> bool {
        self.files.capacity() == 0 && self.cache_nodes.capacity() == 0
    }

    /// Whether no edge is stored. O(1).
    pub(crate) fn is_empty(&self) -> bool {
        self.edges == 0
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
        if let Some(entry) = self.files.get_mut(dep) {
            entry.waiters.remove(seq);
            if entry.is_empty() {
                self.files.remove(dep);
            }
        }
    }
}

#[cfg(test)]
mod tests;
