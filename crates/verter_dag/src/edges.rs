//! The two sides of dependency edges, as stored in each file stage's record
//! (`dag/slots.rs`): the keys a consumer waits on ([`ConsumerDeps`]) and the
//! consumers waiting on a key ([`Waiters`]). The DAG links and unlinks both
//! sides in one step (`dag/links.rs`); this module only holds the two
//! vectors. It never decides readiness, never checks stage rank and never
//! wakes anyone.
//!
//! Almost every consumer waits on a handful of keys and almost every key has
//! a handful of waiters, so both sides are vectors: a consumer's keys are
//! scanned (a table only past [`SMALL_DEPS`]), a key's waiters are kept in
//! link order with tombstones, so removing one waiter of a hub is a binary
//! search, not a shift. Each edge carries a sequence number, so a key's
//! waiters are released in link order.
//!
//! A side that outgrows its inline entry takes its storage from
//! [`Spares`], the vectors sides that emptied gave back, before it asks
//! the allocator (docs/design.md, "Spare edge vectors"): in a build, a
//! chain's edges empty as it completes, just as the next chain's fill.

use smallvec::SmallVec;

use crate::hash::HashMap;

use crate::identity::{DepKey, WorkNodeIdentity};

/// Above this many keys, a consumer's keys move from a vector (scanned) to a
/// hash table, so a consumer that waits on thousands of files links in
/// constant time per edge.
pub(crate) const SMALL_DEPS: usize = 16;

/// When a side outgrows its inline entry it makes room for this many more
/// at once: an Artifact waits on its Analysis and a few blockers, and an
/// Analysis is waited on by its own Artifact and a few importers', so
/// growing one at a time reallocated three times for five entries.
const FIRST_SPILL: usize = 4;

/// A consumer's keys with their edges' sequence numbers. One inline: an
/// Analysis waits on its Source alone.
pub(crate) type FewDeps = SmallVec<[(DepKey, u64); 1]>;

/// A key's waiters with their edges' sequence numbers (`None`: removed).
type WaiterEntries = SmallVec<[(u64, Option<WorkNodeIdentity>); 1]>;

/// How many spare vectors of each kind [`Spares`] keeps at most.
const MAX_SPARES: usize = 256;

/// The largest vector [`Spares`] keeps, in entries: a hub's long list is
/// given back to the allocator, so the spares stay a few hundred KiB.
const MAX_SPARE_CAPACITY: usize = 16;

/// Spilled edge vectors that emptied, kept to be the next spill's storage
/// (docs/design.md, "Spare edge vectors"). Bounded in count and in each
/// vector's capacity; every kept vector is empty. It lives under the DAG
/// lock with the records and is dropped by `reset`.
#[derive(Debug, Default)]
pub(crate) struct Spares {
    deps: Vec<Vec<(DepKey, u64)>>,
    waiters: Vec<Vec<(u64, Option<WorkNodeIdentity>)>>,
}

impl Spares {
    /// Keeps the storage of `deps`, a consumer side that emptied, if it
    /// spilled and the spares have room for it.
    #[inline]
    pub(crate) fn keep_deps(&mut self, deps: ConsumerDeps) {
        if let ConsumerDeps::Few(deps) = deps {
            keep(&mut self.deps, deps);
        }
    }

    /// Keeps the storage of `entries`, a producer side's waiters just
    /// released, if it spilled and the spares have room for it.
    #[inline]
    pub(crate) fn keep_waiters(&mut self, entries: WaiterEntries) {
        keep(&mut self.waiters, entries);
    }

    /// Whether no vector is kept.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.deps.is_empty() && self.waiters.is_empty()
    }

    /// The kept vectors' capacity, in entries.
    pub(crate) fn capacity(&self) -> usize {
        self.deps.iter().map(Vec::capacity).sum::<usize>()
            + self.waiters.iter().map(Vec::capacity).sum::<usize>()
    }
}

/// Keeps `values`' heap storage in `spares`, emptied, when it has one
/// worth keeping and there is room.
#[inline]
fn keep<A: smallvec::Array>(spares: &mut Vec<Vec<A::Item>>, values: SmallVec<A>) {
    if values.spilled() && values.capacity() <= MAX_SPARE_CAPACITY && spares.len() < MAX_SPARES {
        // A spilled vector becomes a `Vec` without copying or allocating.
        let mut storage = values.into_vec();
        storage.clear();
        spares.push(storage);
    }
}

/// Grows `values`, full at its inline size, into heap storage: a spare
/// vector if there is one (its entries move over), else
/// [`FIRST_SPILL`] more entries from the allocator.
#[inline]
fn spill<A: smallvec::Array>(values: &mut SmallVec<A>, spares: &mut Vec<Vec<A::Item>>) {
    match spares.pop() {
        Some(mut storage) => {
            storage.extend(values.drain(..));
            // Kept vectors all have more room than the inline size, so this
            // keeps the storage as it is.
            *values = SmallVec::from_vec(storage);
        }
        None => values.reserve_exact(FIRST_SPILL),
    }
}

/// The keys one consumer waits on.
#[derive(Debug)]
pub(crate) enum ConsumerDeps {
    /// At most [`SMALL_DEPS`] keys, unordered.
    Few(FewDeps),
    /// More: a table.
    Many(HashMap<DepKey, u64>),
}

impl Default for ConsumerDeps {
    #[inline]
    fn default() -> Self {
        Self::Few(SmallVec::new())
    }
}

impl ConsumerDeps {
    /// Whether the consumer waits on nothing.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub(crate) fn contains(&self, dep: &DepKey) -> bool {
        match self {
            Self::Few(deps) => deps.iter().any(|(key, _)| key == dep),
            Self::Many(deps) => deps.contains_key(dep),
        }
    }

    #[inline]
    pub(crate) fn insert(&mut self, dep: DepKey, seq: u64, spares: &mut Spares) {
        match self {
            Self::Few(deps) if deps.len() < SMALL_DEPS => {
                if deps.len() == deps.inline_size() && !deps.spilled() {
                    spill(deps, &mut spares.deps);
                }
                deps.push((dep, seq));
            }
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

    #[inline]
    pub(crate) fn remove(&mut self, dep: &DepKey) -> Option<u64> {
        match self {
            Self::Few(deps) => {
                let at = deps.iter().position(|(key, _)| key == dep)?;
                Some(deps.swap_remove(at).1)
            }
            Self::Many(deps) => deps.remove(dep),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Few(deps) => deps.len(),
            Self::Many(deps) => deps.len(),
        }
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Self::Few(deps) if deps.spilled() => deps.capacity(),
            Self::Few(_) => 0,
            Self::Many(deps) => deps.capacity(),
        }
    }

    #[inline]
    pub(crate) fn into_pairs(self) -> FewDeps {
        match self {
            Self::Few(deps) => deps,
            Self::Many(deps) => deps.into_iter().collect(),
        }
    }

    pub(crate) fn keys(&self) -> Vec<DepKey> {
        match self {
            Self::Few(deps) => deps.iter().map(|(key, _)| *key).collect(),
            Self::Many(deps) => deps.keys().cloned().collect(),
        }
    }
}

/// The consumers waiting on one key, in link (sequence) order. A removed
/// waiter leaves a tombstone; the vector is compacted when tombstones
/// outnumber the living.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    /// One inline: a Source is waited on by its Analysis alone.
    pub(crate) entries: WaiterEntries,
    pub(crate) live: usize,
}

impl Waiters {
    /// Whether no consumer waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    #[inline]
    pub(crate) fn push(&mut self, seq: u64, consumer: WorkNodeIdentity, spares: &mut Spares) {
        debug_assert!(self.entries.last().is_none_or(|(last, _)| *last < seq));
        if self.entries.len() == self.entries.inline_size() && !self.entries.spilled() {
            spill(&mut self.entries, &mut spares.waiters);
        }
        self.entries.push((seq, Some(consumer)));
        self.live += 1;
    }

    /// Removes the waiter linked with `seq`, if present.
    #[inline]
    pub(crate) fn remove(&mut self, seq: u64) {
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

    #[inline]
    pub(crate) fn consumers(&self) -> impl Iterator<Item = &WorkNodeIdentity> {
        self.entries
            .iter()
            .filter_map(|(_, consumer)| consumer.as_ref())
    }

    /// Backing capacity beyond the inline entry.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
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

#[cfg(test)]
mod tests;
