//! The layer above's payload per file: set, read, and taken out.
//!
//! Part of the `dag` module. A payload lives in its file's record, so one
//! lookup under the lock reaches it and the DAG's state; it keeps the
//! record present while it is set. The DAG never reads, clones or drops a
//! payload: these methods only move it in and out, and a record leaves the
//! table only once it holds nothing, payload included.

use super::*;

impl<P> SchedulerDag<P> {
    /// The payload of `canonical`'s file, if one is set: the state the layer
    /// above keeps per file, in the same record as the DAG's, so one lookup
    /// under the lock reaches both. The DAG never reads, clones or drops a
    /// payload except as these methods say.
    #[inline]
    pub fn payload(&self, canonical: &Canonical) -> Option<&P> {
        self.files.get(canonical)?.payload.as_ref()
    }

    /// [`Self::payload`], mutably.
    #[inline]
    pub fn payload_mut(&mut self, canonical: &Canonical) -> Option<&mut P> {
        self.files.get_mut(canonical)?.payload.as_mut()
    }

    /// Sets the payload of `canonical`, which must have a live object;
    /// returns the payload it replaces (for the caller to drop when it
    /// likes). `Err` gives `payload` back, changing nothing, when there is
    /// no live object.
    pub fn set_payload(&mut self, canonical: &Canonical, payload: P) -> Result<Option<P>, P> {
        match self.files.get_mut(canonical) {
            Some(records) if records.object.is_some() => Ok(records.payload.replace(payload)),
            _ => Err(payload),
        }
    }

    /// Takes the payload of `canonical` out. A removed object's record
    /// stays while its payload is set, so the caller takes it in the same
    /// hold as [`Self::remove_object`].
    pub fn take_payload(&mut self, canonical: &Canonical) -> Option<P> {
        let payload = self.files.get_mut(canonical)?.payload.take();
        self.drop_file_if_empty(canonical);
        payload
    }

    /// Takes every payload out (before [`Self::reset`], so the caller drops
    /// them when it likes).
    pub fn take_payloads(&mut self) -> Vec<P> {
        let payloads: Vec<P> = self
            .files
            .values_mut()
            .filter_map(|records| records.payload.take())
            .collect();
        self.files.retain(|_, records| !records.is_empty());
        payloads
    }
}
