//! `CanonicalMap`: a table keyed by [`Canonical`], indexed by the path's
//! dense id instead of hashed.
//!
//! The per-file tables of every layer (the DAG's file records, the blocker
//! registry's references, the source root's store) are keyed by canonical
//! and probed several times per stage. A hash table puts neighbouring files
//! in unrelated buckets, so at 100k files nearly every probe is a cache
//! miss, and it copies every entry each time it doubles. Ids are handed out
//! in the order paths are first seen (`Canonical::id`), and files that
//! import each other are usually named together, so here they sit together.
//!
//! The table is a vector of fixed-size segments, each allocated when its
//! first entry arrives and freed when its last one leaves: growing never
//! copies an entry, and a table whose files were all removed holds only the
//! (empty) segment vector. A lookup is two indexings and one id comparison;
//! it never hashes and never reads the path's text.
//!
//! This module owns only the layout; it never interns a path (that is
//! `identity.rs`) and never looks at a value.

use std::fmt;

use crate::Canonical;

/// Entries per segment, as a power of two.
const SEGMENT_BITS: u32 = 6;
/// Entries per segment.
const SEGMENT_LEN: usize = 1 << SEGMENT_BITS;

/// One segment: its entries, and how many are occupied.
struct Segment<V> {
    slots: Box<[Option<(Canonical, V)>]>,
    occupied: usize,
}

impl<V> Segment<V> {
    fn new() -> Self {
        Self {
            slots: (0..SEGMENT_LEN).map(|_| None).collect(),
            occupied: 0,
        }
    }
}

/// A map from [`Canonical`] to `V`, laid out by the canonical's dense id
/// (see the module docs). Iteration is in id order, which is the order the
/// paths were first seen in the process.
pub struct CanonicalMap<V> {
    segments: Vec<Option<Segment<V>>>,
    len: usize,
}

impl<V> Default for CanonicalMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for CanonicalMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The segment and slot of `canonical`.
#[inline]
fn position(canonical: &Canonical) -> (usize, usize) {
    let id = canonical.id() as usize;
    (id >> SEGMENT_BITS, id & (SEGMENT_LEN - 1))
}

impl<V> CanonicalMap<V> {
    /// An empty map; allocates nothing.
    pub const fn new() -> Self {
        Self {
            segments: Vec::new(),
            len: 0,
        }
    }

    /// How many entries the map holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map holds no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `canonical`, if present.
    #[inline]
    pub fn get(&self, canonical: &Canonical) -> Option<&V> {
        let (segment, slot) = position(canonical);
        self.segments.get(segment)?.as_ref()?.slots[slot]
            .as_ref()
            .map(|(_, value)| value)
    }

    /// The value of `canonical`, mutably, if present.
    #[inline]
    pub fn get_mut(&mut self, canonical: &Canonical) -> Option<&mut V> {
        let (segment, slot) = position(canonical);
        self.segments.get_mut(segment)?.as_mut()?.slots[slot]
            .as_mut()
            .map(|(_, value)| value)
    }

    /// Whether `canonical` has an entry.
    #[inline]
    pub fn contains_key(&self, canonical: &Canonical) -> bool {
        self.get(canonical).is_some()
    }

    /// Segment number `segment`, allocated if it is not yet.
    #[inline]
    fn segment_for(segments: &mut Vec<Option<Segment<V>>>, segment: usize) -> &mut Segment<V> {
        if segment >= segments.len() {
            segments.resize_with(segment + 1, || None);
        }
        segments[segment].get_or_insert_with(Segment::new)
    }

    /// The value of `canonical`, inserting `make()` first if absent.
    #[inline]
    pub fn get_or_insert_with(
        &mut self,
        canonical: &Canonical,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let (segment, slot) = position(canonical);
        let segment = Self::segment_for(&mut self.segments, segment);
        let entry = &mut segment.slots[slot];
        if entry.is_none() {
            *entry = Some((*canonical, make()));
            segment.occupied += 1;
            self.len += 1;
        }
        &mut entry.as_mut().expect("filled above").1
    }

    /// The value of `canonical`, inserting `V::default()` first if absent.
    #[inline]
    pub fn get_or_default(&mut self, canonical: &Canonical) -> &mut V
    where
        V: Default,
    {
        self.get_or_insert_with(canonical, V::default)
    }

    /// Sets `canonical`'s value, returning the one it replaces.
    pub fn insert(&mut self, canonical: Canonical, value: V) -> Option<V> {
        let (segment, slot) = position(&canonical);
        let segment = Self::segment_for(&mut self.segments, segment);
        let previous = segment.slots[slot].replace((canonical, value));
        if previous.is_none() {
            segment.occupied += 1;
            self.len += 1;
        }
        previous.map(|(_, value)| value)
    }

    /// Takes `canonical`'s entry out. A segment left empty is freed.
    pub fn remove(&mut self, canonical: &Canonical) -> Option<V> {
        let (index, slot) = position(canonical);
        let segment = self.segments.get_mut(index)?.as_mut()?;
        let (_, value) = segment.slots[slot].take()?;
        segment.occupied -= 1;
        self.len -= 1;
        if segment.occupied == 0 {
            self.segments[index] = None;
            self.trim();
        }
        Some(value)
    }

    /// Drops trailing empty segment places.
    fn trim(&mut self) {
        while matches!(self.segments.last(), Some(None)) {
            self.segments.pop();
        }
        if self.segments.is_empty() {
            self.segments = Vec::new();
        }
    }

    /// Keeps only the entries `keep` accepts (it may change them). Segments
    /// left empty are freed.
    pub fn retain(&mut self, mut keep: impl FnMut(&Canonical, &mut V) -> bool) {
        for place in &mut self.segments {
            let Some(segment) = place else { continue };
            for entry in segment.slots.iter_mut() {
                if let Some((canonical, value)) = entry
                    && !keep(canonical, value)
                {
                    *entry = None;
                    segment.occupied -= 1;
                    self.len -= 1;
                }
            }
            if segment.occupied == 0 {
                *place = None;
            }
        }
        self.trim();
    }

    /// Every entry, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Canonical, &V)> {
        self.segments
            .iter()
            .flatten()
            .flat_map(|segment| segment.slots.iter().flatten())
            .map(|(canonical, value)| (canonical, value))
    }

    /// Every entry, its value mutably, in id order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Canonical, &mut V)> {
        self.segments
            .iter_mut()
            .flatten()
            .flat_map(|segment| segment.slots.iter_mut().flatten())
            .map(|(canonical, value)| (&*canonical, value))
    }

    /// Every value, in id order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }

    /// Every value, mutably, in id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.iter_mut().map(|(_, value)| value)
    }

    /// Every canonical with an entry, in id order.
    pub fn keys(&self) -> impl Iterator<Item = &Canonical> {
        self.iter().map(|(canonical, _)| canonical)
    }

    /// Takes every entry out, in id order, leaving the map empty with
    /// nothing allocated.
    pub fn drain(&mut self) -> impl Iterator<Item = (Canonical, V)> {
        self.len = 0;
        std::mem::take(&mut self.segments)
            .into_iter()
            .flatten()
            .flat_map(|segment| segment.slots.into_vec().into_iter().flatten())
    }

    /// Empties the map and frees its segments.
    pub fn clear(&mut self) {
        self.segments = Vec::new();
        self.len = 0;
    }

    /// Segments allocated now (each holds room for 64 entries).
    pub fn segments_allocated(&self) -> usize {
        self.segments.iter().flatten().count()
    }

    /// Entries the allocated segments have room for: what the map's memory
    /// is, for occupancy reports.
    pub fn capacity(&self) -> usize {
        self.segments_allocated() * SEGMENT_LEN
    }
}

impl<V> FromIterator<(Canonical, V)> for CanonicalMap<V> {
    fn from_iter<I: IntoIterator<Item = (Canonical, V)>>(entries: I) -> Self {
        let mut map = Self::new();
        for (canonical, value) in entries {
            map.insert(canonical, value);
        }
        map
    }
}

impl<'a, V> IntoIterator for &'a CanonicalMap<V> {
    type Item = (&'a Canonical, &'a V);
    type IntoIter = Box<dyn Iterator<Item = (&'a Canonical, &'a V)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<V> std::ops::Index<&Canonical> for CanonicalMap<V> {
    type Output = V;

    /// # Panics
    /// If `canonical` has no entry.
    fn index(&self, canonical: &Canonical) -> &V {
        self.get(canonical)
            .unwrap_or_else(|| panic!("no entry for {canonical}"))
    }
}

#[cfg(test)]
mod tests;
