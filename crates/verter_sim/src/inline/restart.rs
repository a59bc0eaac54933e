//! Restarting the scheduler ([`Op::Restart`](crate::ops::Op::Restart)):
//! the host drops the scheduler it drives and opens a new one over the
//! same loader tree and output store, as a host process that restarts
//! does; and the check that a scheduler reads from the store only what
//! schedulers of its executor's version wrote.
//!
//! The old scheduler is shut down with whatever is in flight and judged
//! as a run's last `shutdown` is (`Shared::shut_down`: every file removed
//! over the call's window, every handle answered at once, nothing run
//! after it, its quiescence report and ledger clean), and its causal log
//! as at the end of a run. Then, when the operation says so, the store is
//! damaged (`Shared::damage_store`), and a new scheduler of the next
//! generation is opened (`Shared::open`) with a new executor, a new
//! concurrency limit and hooks of its own; the old scheduler's hooks do
//! nothing from then on. Everything the host kept of the old scheduler
//! (handles, roots, witnesses, its counts) starts again; windows armed for
//! the old one wait for the new one.
//!
//! This module owns the restart (a seventh `impl` block of [`Shared`]),
//! [`VersionStore`] and [`RestartStats`]; the oracle's record of a restart
//! is the shutdown's.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_store::{
    Entry, Eviction, MemoryStore, OutputStore, PutReport, StoreError, StoreKey, StoreStats,
};

use super::{FIRST_VERSION, Shared};

/// What an inline run's restarts came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestartStats {
    /// Restarts run.
    pub restarts: u64,
    /// Of those, the ones whose new scheduler's executor declared another
    /// version (it must read nothing from the store it did not write).
    pub version_changed: u64,
    /// Of those, the ones that damaged the store before the new scheduler
    /// opened.
    pub damaged: u64,
    /// Kept requests and DAGs unanswered when a restart shut the old
    /// scheduler down (answered by it).
    pub in_flight: u64,
    /// Stages the schedulers that restarts opened answered from the store
    /// (their `SchedulerCounters::from_store`, summed).
    pub from_store: u64,
}

impl RestartStats {
    /// The sum of two runs' counts.
    pub fn add(&mut self, other: &Self) {
        self.restarts += other.restarts;
        self.version_changed += other.version_changed;
        self.damaged += other.damaged;
        self.in_flight += other.in_flight;
        self.from_store += other.from_store;
    }
}

impl fmt::Display for RestartStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} restarts ({} with another executor version, {} after damaging the store): {} requests and DAGs in flight answered by their shutdowns, {} stages answered from the store by the schedulers they opened",
            self.restarts, self.version_changed, self.damaged, self.in_flight, self.from_store
        )
    }
}

/// The run's output store as the schedulers of one executor version see
/// it: every call goes to the run's [`MemoryStore`], and a read that finds
/// an entry no scheduler of this version wrote is a violation (a key must
/// cover the executor's version, so nothing another version wrote is ever
/// read). A restart that changes the version opens its scheduler on a new
/// one, with a version no earlier scheduler of the run declared.
pub(super) struct VersionStore {
    inner: Arc<MemoryStore>,
    version: String,
    /// Every key a scheduler of this version wrote (recorded before the
    /// write, so a read that finds one always finds it here).
    written: Mutex<HashSet<StoreKey>>,
    violation: Mutex<Option<String>>,
}

impl VersionStore {
    /// The store of `version`'s schedulers, over `inner`.
    pub(super) fn new(inner: Arc<MemoryStore>, version: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            version: version.into(),
            written: Mutex::new(HashSet::new()),
            violation: Mutex::new(None),
        })
    }

    /// The executor version its schedulers declare.
    pub(super) fn version(&self) -> &str {
        &self.version
    }

    /// The first read that found another version's entry, once.
    fn take_violation(&self) -> Option<String> {
        self.violation.lock().take()
    }
}

impl OutputStore for VersionStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError> {
        let entry = self.inner.get(key)?;
        if entry.is_some() && !self.written.lock().contains(key) {
            self.violation.lock().get_or_insert_with(|| {
                format!(
                    "a scheduler of executor version `{}` read the stored entry under {key}, which no scheduler of that version wrote",
                    self.version
                )
            });
        }
        Ok(entry)
    }

    fn put_batch(&self, entries: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError> {
        self.written
            .lock()
            .extend(entries.iter().map(|(key, _)| *key));
        self.inner.put_batch(entries)
    }

    fn remove(&self, keys: &[StoreKey]) -> Result<u64, StoreError> {
        self.inner.remove(keys)
    }

    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        self.inner.retain_paths(keep)
    }

    fn gc(&self) -> Result<Eviction, StoreError> {
        self.inner.gc()
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.inner.stats()
    }

    fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear()
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.inner.sync()
    }
}

impl Shared {
    /// `Op::Restart`: see the module docs.
    pub(super) fn restart(&self, version_changed: bool, damage: bool) {
        // `shut_down` drops the armed windows: these wait for the new
        // scheduler instead.
        let armed = std::mem::take(&mut self.state.lock().armed);
        let in_flight = self.shut_down();
        // As at the end of a run: the old scheduler's whole causal log,
        // against what its executor and its Sources' loads ran.
        match self.judge_causes() {
            Ok(causes) => self.state.lock().retired.causes.add(&causes),
            Err(violation) => self.violate(format!("before a restart: {violation}")),
        }
        self.check_store();
        let (store, generation, counters) = self.opened(|opened| {
            (
                Arc::clone(&opened.store),
                opened.generation,
                opened.scheduler.observe().counters(),
            )
        });
        // Its writes are all in the store: its shutdown flushed them.
        if damage {
            self.damage_store();
        }
        let store = if version_changed {
            let changed = self.state.lock().restarts.version_changed;
            VersionStore::new(
                Arc::clone(&self.store),
                format!("{FIRST_VERSION}-{}", changed + 1),
            )
        } else {
            store
        };
        {
            let mut state = self.state.lock();
            state.retired.tally.add(&counters);
            let stats = &mut state.restarts;
            stats.restarts += 1;
            stats.version_changed += u64::from(version_changed);
            stats.damaged += u64::from(damage);
            stats.in_flight += in_flight;
            if generation > 0 {
                stats.from_store += counters.from_store;
            }
            // What the host kept of the old scheduler: every handle is
            // answered and judged (`check_shut_down`); a root or a witness
            // names the old scheduler's state, which a host does not hand
            // to another.
            state.every_handle.clear();
            state.submitted = 0;
            state.committed_hits = 0;
            state.events = 0;
            state.host_loads.clear();
            state.stale_remote = 0;
            state.roots.clear();
            state.witnesses.clear();
            state.loads_before = self.fs.loads();
            state.armed = armed;
        }
        let old = self.open(generation + 1, store);
        drop(old);
    }

    /// A store read found an entry another executor version wrote: see
    /// [`VersionStore`].
    pub(super) fn check_store(&self) {
        if let Some(violation) = self.opened(|opened| opened.store.take_violation()) {
            self.violate(violation);
        }
    }

    /// What the run's restarts came to, with what the scheduler the last
    /// one opened read from the store so far.
    pub(super) fn restart_stats(&self) -> RestartStats {
        let mut stats = self.state.lock().restarts;
        let (generation, from_store) = self.opened(|opened| {
            (
                opened.generation,
                opened.scheduler.observe().counters().from_store,
            )
        });
        if generation > 0 {
            stats.from_store += from_store;
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use verter_store::Digest;

    fn key(byte: u8) -> StoreKey {
        StoreKey(Digest::from([byte; 32]))
    }

    fn entry() -> Entry {
        Entry::new(b"x".to_vec(), Digest::from([0; 32]), None)
    }

    /// A version reads what its own schedulers wrote; reading what another
    /// version wrote is reported, and a miss never is.
    #[test]
    fn a_version_store_reports_a_read_of_another_versions_entry() {
        let inner = Arc::new(MemoryStore::new(1 << 16));
        let first = VersionStore::new(Arc::clone(&inner), "one");
        let second = VersionStore::new(inner, "two");
        first
            .put_batch(&[(key(1), entry())])
            .expect("a memory store writes");
        assert!(first.get(&key(1)).expect("a read").is_some());
        assert!(second.get(&key(2)).expect("a read").is_none());
        assert_eq!(first.take_violation(), None);
        assert_eq!(second.take_violation(), None);
        assert!(second.get(&key(1)).expect("a read").is_some());
        let violation = second.take_violation().expect("another version's entry");
        assert!(violation.contains("version `two`"), "{violation}");
    }
}
