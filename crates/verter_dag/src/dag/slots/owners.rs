//! The blocker records as the registry reads and writes them
//! ([`FileOwners`]): each in its owner's file slot, never in a table
//! of its own.
//!
//! Part of `slots.rs`. The registry keeps its reverse index in step with
//! these records, so nothing else may write a version's `blockers`: only
//! the registry, through [`FileOwners`]. Taking a record out prunes the
//! version and file records it leaves empty; this module never touches a
//! node, a group or an edge.

use super::*;

/// The DAG's blocker records, each in its owner's file slot: what
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
        let records = self.0.get_mut(&owner.canonical)?;
        (records.version == owner.version() && !records.blockers.is_empty())
            .then_some(&mut records.blockers)
    }

    fn take(&mut self, owner: &FileIdentity) -> Option<Vec<DepKey>> {
        let records = self.0.get_mut(&owner.canonical)?;
        if records.version != owner.version() || records.blockers.is_empty() {
            return None;
        }
        let keys = std::mem::take(&mut records.blockers);
        if records.is_empty() {
            self.0.remove(&owner.canonical);
        }
        Some(keys)
    }

    fn put(&mut self, owner: &FileIdentity, keys: Vec<DepKey>) {
        let records = self.0.get_or_default(&owner.canonical);
        records.at_entry(owner.version());
        debug_assert!(records.blockers.is_empty(), "{owner} had a record");
        records.blockers = keys;
    }
}

/// `owner`'s blocker record, if it has one (never empty).
#[inline]
pub(in crate::dag) fn owner_keys<'a, P>(
    files: &'a CanonicalMap<FileRecords<P>>,
    owner: &FileIdentity,
) -> Option<&'a Vec<DepKey>> {
    let records = files.get(&owner.canonical)?;
    (records.version == owner.version() && !records.blockers.is_empty())
        .then_some(&records.blockers)
}
