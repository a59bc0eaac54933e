//! `NodeTable`: the published node of each file, by the canonical's dense
//! id, for readers that take no DAG lock.
//!
//! Readers (request preparation, `committed_outputs`, `node`) look a file's
//! node up from any thread while the DAG lock's holder publishes, re-homes
//! and removes nodes. A hash map needs a shard lock per read and scatters
//! neighbouring files; here a read is two `arc-swap` loads and an index:
//! the segment directory, then the file's slot. Files named together sit
//! together, as in the DAG's own records (`verter_dag::CanonicalMap`).
//!
//! Writes are serialised by the table's own writer lock (uncontended: every
//! writer already holds the DAG lock, docs/design.md "Lock rank"). A new
//! segment is published by replacing the directory, never by changing it
//! in place, so a reader holding an old directory still reads a consistent
//! one; a segment left empty is dropped from the directory and freed when
//! its last reader lets go. This module never looks inside a node and
//! never takes another lock.

use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use verter_dag::Canonical;

/// Slots per segment, as a power of two.
const SEGMENT_BITS: u32 = 6;
/// Slots per segment.
const SEGMENT_LEN: usize = 1 << SEGMENT_BITS;

/// One segment's slots.
struct Segment<T> {
    slots: Box<[ArcSwapOption<T>]>,
}

impl<T> Segment<T> {
    fn new() -> Self {
        Self {
            slots: (0..SEGMENT_LEN).map(|_| ArcSwapOption::empty()).collect(),
        }
    }
}

/// The segments, by number; replaced whole when one is added or dropped.
type Directory<T> = Vec<Option<Arc<Segment<T>>>>;

/// The segment and slot of `canonical`.
#[inline]
fn position(canonical: &Canonical) -> (usize, usize) {
    let id = canonical.id() as usize;
    (id >> SEGMENT_BITS, id & (SEGMENT_LEN - 1))
}

/// What only the writer touches: how many slots of each segment are set,
/// and of the whole table.
#[derive(Default)]
struct Occupancy {
    per_segment: Vec<usize>,
    len: usize,
}

/// A concurrent map from canonical to `Arc<T>`: lock-free reads, writes
/// serialised (see the module docs).
pub(crate) struct NodeTable<T> {
    directory: ArcSwap<Directory<T>>,
    writer: Mutex<Occupancy>,
}

impl<T> Default for NodeTable<T> {
    fn default() -> Self {
        Self {
            directory: ArcSwap::from_pointee(Vec::new()),
            writer: Mutex::new(Occupancy::default()),
        }
    }
}

impl<T> NodeTable<T> {
    /// The node of `canonical`, if one is published. Takes no lock.
    #[inline]
    pub(crate) fn get(&self, canonical: &Canonical) -> Option<Arc<T>> {
        let (segment, slot) = position(canonical);
        let directory = self.directory.load();
        directory.get(segment)?.as_ref()?.slots[slot].load_full()
    }

    /// Publishes `node` as `canonical`'s, replacing any.
    pub(crate) fn insert(&self, canonical: &Canonical, node: Arc<T>) {
        let (segment, slot) = position(canonical);
        let mut occupancy = self.writer.lock();
        let directory = self.directory.load();
        let present = directory.get(segment).and_then(Option::as_ref);
        let target = match present {
            Some(target) => Arc::clone(target),
            None => {
                let target = Arc::new(Segment::new());
                let mut grown: Directory<T> = (**directory).clone();
                if grown.len() <= segment {
                    grown.resize_with(segment + 1, || None);
                }
                grown[segment] = Some(Arc::clone(&target));
                self.directory.store(Arc::new(grown));
                target
            }
        };
        if target.slots[slot].swap(Some(node)).is_none() {
            if occupancy.per_segment.len() <= segment {
                occupancy.per_segment.resize(segment + 1, 0);
            }
            occupancy.per_segment[segment] += 1;
            occupancy.len += 1;
        }
    }

    /// Takes `canonical`'s node out. A segment left empty leaves the
    /// directory.
    pub(crate) fn remove(&self, canonical: &Canonical) -> Option<Arc<T>> {
        let (segment, slot) = position(canonical);
        let mut occupancy = self.writer.lock();
        let directory = self.directory.load();
        let removed = directory.get(segment)?.as_ref()?.slots[slot].swap(None)?;
        occupancy.per_segment[segment] -= 1;
        occupancy.len -= 1;
        if occupancy.per_segment[segment] == 0 {
            let mut shrunk: Directory<T> = (**directory).clone();
            shrunk[segment] = None;
            while matches!(shrunk.last(), Some(None)) {
                shrunk.pop();
            }
            occupancy.per_segment.truncate(shrunk.len());
            self.directory.store(Arc::new(shrunk));
        }
        Some(removed)
    }

    /// Takes every node out, leaving the table empty with no segment.
    pub(crate) fn take_all(&self) -> Vec<Arc<T>> {
        let mut occupancy = self.writer.lock();
        let directory = self.directory.swap(Arc::new(Vec::new()));
        *occupancy = Occupancy::default();
        directory
            .iter()
            .flatten()
            .flat_map(|segment| segment.slots.iter().filter_map(|slot| slot.swap(None)))
            .collect()
    }

    /// How many nodes are published.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.writer.lock().len
    }

    /// Segments allocated now (each with room for 64 nodes).
    #[cfg(test)]
    pub(crate) fn segments(&self) -> usize {
        self.directory.load().iter().flatten().count()
    }
}

#[cfg(test)]
mod tests;
