//! The blocker records as the registry reads and writes them
//! ([`FileOwners`]): each in its owner's version record, never in a table
//! of its own.
//!
//! Part of `slots.rs`. The registry keeps its reverse index in step with
//! these records, so nothing else may write a version's `blockers`: only
//! the registry, through [`FileOwners`]. Taking a record out prunes the
//! version and file records it leaves empty; this module never touches a
//! node, a group or an edge.

use super::*;

/// The DAG's blocker records, each in its owner's version record: what
/// the registry reads and writes them through. Taking a record out prunes
/// the version (and file) record it leaves empty.
pub(in crate::dag) struct FileOwners<'a, P>(
    pub(in crate::dag) &'a mut CanonicalMap<FileRecords<P>>,
);

impl<P> crate::blockers::OwnerRecords for FileOwners<'_, P> {
    fn keys(&self, owner: &FileIdentity) -> Option<&Vec<DepKey>> {
        owner_keys(self.0, owner)
    }

    fn keys_mut(&mut self, owner: &FileIdentity) -> Option<&mut Vec<DepKey>> {
        let slot = self
            .0
            .get_mut(&owner.canonical)?
            .versions
            .get_mut(&owner.version())?;
        (!slot.blockers.is_empty()).then_some(&mut slot.blockers)
    }

    fn take(&mut self, owner: &FileIdentity) -> Option<Vec<DepKey>> {
        let records = self.0.get_mut(&owner.canonical)?;
        let version = owner.version();
        let slot = records.versions.get_mut(&version)?;
        if slot.blockers.is_empty() {
            return None;
        }
        let keys = std::mem::take(&mut slot.blockers);
        if slot.is_empty() {
            records.versions.remove(&version);
            if records.is_empty() {
                self.0.remove(&owner.canonical);
            }
        }
        Some(keys)
    }

    fn put(&mut self, owner: &FileIdentity, keys: Vec<DepKey>) {
        let slot = self
            .0
            .get_or_default(&owner.canonical)
            .versions
            .entry_or_default(owner.version());
        debug_assert!(slot.blockers.is_empty(), "{owner} had a record");
        slot.blockers = keys;
    }
}

/// `owner`'s blocker record, if it has one (never empty).
#[inline]
pub(in crate::dag) fn owner_keys<'a, P>(
    files: &'a CanonicalMap<FileRecords<P>>,
    owner: &FileIdentity,
) -> Option<&'a Vec<DepKey>> {
    files
        .get(&owner.canonical)?
        .versions
        .get(&owner.version())
        .map(|slot| &slot.blockers)
        .filter(|keys| !keys.is_empty())
}
