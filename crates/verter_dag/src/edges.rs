//! The dependency edges: one arena of edges, each threaded on two
//! intrusive lists — its consumer's (the keys the consumer waits on) and
//! its producer's (the consumers waiting on it, in link order). A list is
//! three `u32`s in the stage that owns it ([`EdgeList`]); an edge is 32
//! bytes in the arena, named by its index, with both ends as compact
//! [`End`]s (a file stage is its canonical's dense id and a stage code; no
//! path, version or hash). Linking, unlinking and releasing an edge are a
//! few index operations, and the arena's storage is reused through a free
//! list, so a cold build allocates nothing per edge once the arena has
//! grown (docs/design.md, "State and where it lives").
//!
//! This module owns only the lists and the arena: it never decides
//! readiness, never checks stage rank, never finds a stage (the DAG's
//! `links.rs` does, from an [`End`]) and never wakes anyone.
//!
//! # Invariants
//! 1. An edge is on its consumer's list exactly when it is on its
//!    producer's list; both are unthreaded and the edge freed together
//!    (`an_edge_leaves_both_lists_and_its_index_entry_together`).
//! 2. A consumer list longer than [`SMALL_DEPS`] is indexed by (consumer,
//!    producer), and only such a list: finding an edge is a scan of at most
//!    [`SMALL_DEPS`] entries or one table probe
//!    (`a_wide_consumer_is_indexed_and_unindexed_as_it_grows_and_shrinks`).
//! 3. A producer list keeps link order
//!    (`a_producers_consumers_keep_link_order_through_removals`).

use crate::hash::HashMap;

/// Above this many keys a consumer's list is also indexed by (consumer,
/// producer), so a consumer that waits on thousands of files links in
/// constant time per edge.
pub(crate) const SMALL_DEPS: usize = 16;

/// Edges per arena chunk: chunks are allocated once and never move, so the
/// arena grows without copying (and a build's allocations are its peak,
/// not twice it).
const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;

/// No edge.
pub(crate) const NIL: u32 = u32::MAX;

/// The stage code of a cache node's [`End`].
const CACHE_CODE: u32 = u32::MAX;

/// One end of an edge: a file stage, as its canonical's dense id and a
/// stage code (`0` Source, `1` Analysis, `2 + p` the artifact of profile
/// number `p` in the DAG's profile table), or a cache node consumer, as its
/// number in the DAG's table of cache consumers. A file stage's end names
/// the one version of the file that holds records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct End(u64);

impl End {
    /// A file stage's end.
    #[inline]
    pub(crate) fn file(canonical: u32, code: u32) -> Self {
        debug_assert_ne!(code, CACHE_CODE);
        Self(u64::from(canonical) << 32 | u64::from(code))
    }

    /// A cache node consumer's end.
    #[inline]
    pub(crate) fn cache(number: u32) -> Self {
        Self(u64::from(number) << 32 | u64::from(CACHE_CODE))
    }

    /// The canonical id of a file stage's end.
    #[inline]
    pub(crate) fn canonical(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The stage code of a file stage's end.
    #[inline]
    pub(crate) fn code(self) -> u32 {
        self.0 as u32
    }

    /// Whether it is a cache node's end.
    #[inline]
    pub(crate) fn is_cache(self) -> bool {
        self.code() == CACHE_CODE
    }

    /// The cache consumer number of a cache node's end.
    #[inline]
    pub(crate) fn cache_number(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// A list of edges threaded through the arena: a consumer's (its keys) or
/// a producer's (its waiting consumers, in link order). Empty by default;
/// twelve bytes, kept in the stage that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EdgeList {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for EdgeList {
    #[inline]
    fn default() -> Self {
        Self::EMPTY
    }
}

impl EdgeList {
    /// The empty list.
    pub(crate) const EMPTY: Self = Self {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    /// How many edges it holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it holds none.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One edge: its two ends and its links on both lists.
#[derive(Debug, Clone, Copy)]
struct Edge {
    consumer: End,
    producer: End,
    /// Previous and next on the consumer's list (`next_c` also threads
    /// the free list).
    prev_c: u32,
    next_c: u32,
    /// Previous and next on the producer's list.
    prev_p: u32,
    next_p: u32,
}

const VACANT: Edge = Edge {
    consumer: End(0),
    producer: End(0),
    prev_c: NIL,
    next_c: NIL,
    prev_p: NIL,
    next_p: NIL,
};

/// Which of an edge's two lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Consumer,
    Producer,
}

/// The arena of edges (see the module docs).
#[derive(Debug)]
pub(crate) struct EdgeArena {
    chunks: Vec<Box<[Edge]>>,
    /// Slots handed out so far (free ones included).
    used: usize,
    /// The first free slot, threaded through `next_c`.
    free: u32,
    /// Edges alive.
    live: usize,
    /// The edges of consumer lists longer than [`SMALL_DEPS`], by
    /// (consumer, producer).
    index: HashMap<(End, End), u32>,
}

impl Default for EdgeArena {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            used: 0,
            free: NIL,
            live: 0,
            index: HashMap::default(),
        }
    }
}

impl EdgeArena {
    #[inline]
    fn at(&self, edge: u32) -> &Edge {
        &self.chunks[(edge >> CHUNK_BITS) as usize][edge as usize & (CHUNK - 1)]
    }

    #[inline]
    fn at_mut(&mut self, edge: u32) -> &mut Edge {
        &mut self.chunks[(edge >> CHUNK_BITS) as usize][edge as usize & (CHUNK - 1)]
    }

    /// The consumer of `edge`.
    #[inline]
    pub(crate) fn consumer(&self, edge: u32) -> End {
        self.at(edge).consumer
    }

    /// The producer of `edge`.
    #[inline]
    pub(crate) fn producer(&self, edge: u32) -> End {
        self.at(edge).producer
    }

    /// Edges alive.
    #[inline]
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Makes the edge `consumer → producer`, on neither list yet: the
    /// caller puts it on both ([`Self::push_consumer`],
    /// [`Self::push_producer`]).
    #[inline]
    pub(crate) fn alloc(&mut self, consumer: End, producer: End) -> u32 {
        let edge = Edge {
            consumer,
            producer,
            ..VACANT
        };
        self.live += 1;
        if self.free != NIL {
            let at = self.free;
            self.free = self.at(at).next_c;
            *self.at_mut(at) = edge;
            return at;
        }
        if self.used == self.chunks.len() * CHUNK {
            self.chunks.push(vec![VACANT; CHUNK].into_boxed_slice());
        }
        let at = u32::try_from(self.used).expect("fewer than 2^32 edges");
        self.used += 1;
        *self.at_mut(at) = edge;
        at
    }

    /// Frees `edge`, which is on neither list any more.
    #[inline]
    pub(crate) fn release(&mut self, edge: u32) {
        self.live -= 1;
        let free = self.free;
        *self.at_mut(edge) = Edge {
            next_c: free,
            ..VACANT
        };
        self.free = edge;
    }

    #[inline]
    fn links(&self, edge: u32, side: Side) -> (u32, u32) {
        let e = self.at(edge);
        match side {
            Side::Consumer => (e.prev_c, e.next_c),
            Side::Producer => (e.prev_p, e.next_p),
        }
    }

    #[inline]
    fn set_prev(&mut self, edge: u32, side: Side, prev: u32) {
        let e = self.at_mut(edge);
        match side {
            Side::Consumer => e.prev_c = prev,
            Side::Producer => e.prev_p = prev,
        }
    }

    #[inline]
    fn set_next(&mut self, edge: u32, side: Side, next: u32) {
        let e = self.at_mut(edge);
        match side {
            Side::Consumer => e.next_c = next,
            Side::Producer => e.next_p = next,
        }
    }

    #[inline]
    fn push(&mut self, list: &mut EdgeList, edge: u32, side: Side) {
        self.set_prev(edge, side, list.tail);
        self.set_next(edge, side, NIL);
        if list.tail == NIL {
            list.head = edge;
        } else {
            self.set_next(list.tail, side, edge);
        }
        list.tail = edge;
        list.len += 1;
    }

    #[inline]
    fn unthread(&mut self, list: &mut EdgeList, edge: u32, side: Side) {
        let (prev, next) = self.links(edge, side);
        if prev == NIL {
            list.head = next;
        } else {
            self.set_next(prev, side, next);
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.set_prev(next, side, prev);
        }
        list.len -= 1;
    }

    /// Appends `edge` to its consumer's `list`.
    #[inline]
    pub(crate) fn push_consumer(&mut self, list: &mut EdgeList, edge: u32) {
        self.push(list, edge, Side::Consumer);
        let len = list.len();
        if len == SMALL_DEPS + 1 {
            // The list just grew past the scan bound: index all of it.
            let edges: Vec<u32> = self.consumer_edges(list).collect();
            for edge in edges {
                let e = self.at(edge);
                self.index.insert((e.consumer, e.producer), edge);
            }
        } else if len > SMALL_DEPS + 1 {
            let e = self.at(edge);
            self.index.insert((e.consumer, e.producer), edge);
        }
    }

    /// Appends `edge` to its producer's `list` (link order).
    #[inline]
    pub(crate) fn push_producer(&mut self, list: &mut EdgeList, edge: u32) {
        self.push(list, edge, Side::Producer);
    }

    /// Takes `edge` off its consumer's `list`.
    #[inline]
    pub(crate) fn unthread_consumer(&mut self, list: &mut EdgeList, edge: u32) {
        let len = list.len();
        if len > SMALL_DEPS {
            let e = self.at(edge);
            self.index.remove(&(e.consumer, e.producer));
        }
        self.unthread(list, edge, Side::Consumer);
        if len == SMALL_DEPS + 1 {
            // Back within the scan bound: the rest leaves the index.
            let edges: Vec<u32> = self.consumer_edges(list).collect();
            for edge in edges {
                let e = self.at(edge);
                self.index.remove(&(e.consumer, e.producer));
            }
        }
    }

    /// Takes `edge` off its producer's `list`.
    #[inline]
    pub(crate) fn unthread_producer(&mut self, list: &mut EdgeList, edge: u32) {
        self.unthread(list, edge, Side::Producer);
    }

    /// Takes a consumer's whole `list` out of the index (the caller
    /// unthreads each edge from its producer and frees it): the list is
    /// left empty.
    pub(crate) fn take_consumer_list(&mut self, list: &mut EdgeList) -> EdgeList {
        if list.len() > SMALL_DEPS {
            let edges: Vec<u32> = self.consumer_edges(list).collect();
            for edge in edges {
                let e = self.at(edge);
                self.index.remove(&(e.consumer, e.producer));
            }
        }
        std::mem::take(list)
    }

    /// The edges of a consumer's `list`.
    #[inline]
    pub(crate) fn consumer_edges(&self, list: &EdgeList) -> ListIter<'_> {
        ListIter {
            arena: self,
            next: list.head,
            side: Side::Consumer,
        }
    }

    /// The edges of a producer's `list`, in link order.
    #[inline]
    pub(crate) fn producer_edges(&self, list: &EdgeList) -> ListIter<'_> {
        ListIter {
            arena: self,
            next: list.head,
            side: Side::Producer,
        }
    }

    /// The next edge after `edge` on the consumer list it is on (for a
    /// walk that frees edges as it goes: read the next one first).
    #[inline]
    pub(crate) fn next_consumer(&self, edge: u32) -> u32 {
        self.at(edge).next_c
    }

    /// The next edge after `edge` on the producer list it is on.
    #[inline]
    pub(crate) fn next_producer(&self, edge: u32) -> u32 {
        self.at(edge).next_p
    }

    /// The first edge of `list`, or [`NIL`].
    #[inline]
    pub(crate) fn head(list: &EdgeList) -> u32 {
        list.head
    }

    /// The edge `consumer → producer` on the consumer's `list`, if any.
    #[inline]
    pub(crate) fn find(&self, list: &EdgeList, consumer: End, producer: End) -> Option<u32> {
        if list.len() > SMALL_DEPS {
            return self.index.get(&(consumer, producer)).copied();
        }
        self.consumer_edges(list)
            .find(|edge| self.at(*edge).producer == producer)
    }

    /// Whether it holds no edge and no storage.
    pub(crate) fn is_released(&self) -> bool {
        self.chunks.is_empty() && self.index.capacity() == 0
    }

    /// Storage held, in edges (the arena's chunks and the index).
    pub(crate) fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK + self.index.capacity()
    }
}

/// The edges of one list, front to back.
pub(crate) struct ListIter<'a> {
    arena: &'a EdgeArena,
    next: u32,
    side: Side,
}

impl Iterator for ListIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.next == NIL {
            return None;
        }
        let edge = self.next;
        self.next = self.arena.links(edge, self.side).1;
        Some(edge)
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
    /// Backing capacity of the arena and its index, in entries.
    pub capacity: usize,
}

#[cfg(test)]
mod tests;
