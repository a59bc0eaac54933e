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
    pub(crate) fn insert(&mut self, dep: DepKey, seq: u64) {
        match self {
            Self::Few(deps) if deps.len() < SMALL_DEPS => {
                if deps.len() == deps.inline_size() {
                    deps.reserve_exact(FIRST_SPILL);
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
    pub(crate) entries: SmallVec<[(u64, Option<WorkNodeIdentity>); 1]>,
    pub(crate) live: usize,
}

impl Waiters {
    /// Whether no consumer waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    #[inline]
    pub(crate) fn push(&mut self, seq: u64, consumer: WorkNodeIdentity) {
        debug_assert!(self.entries.last().is_none_or(|(last, _)| *last < seq));
        if self.entries.len() == self.entries.inline_size() {
            self.entries.reserve_exact(FIRST_SPILL);
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
