//! [`MemoryStore`]: an [`OutputStore`] in memory, for tests, simulations and
//! hosts that want one process's outputs shared between schedulers without
//! a file. Bounded like the file store (least recently used entries go past
//! the cap). Owns nothing but its map; never touches the file system.

use std::collections::{BTreeMap, HashMap};

use std::sync::Mutex;

use crate::digest::StoreKey;
use crate::error::StoreError;
use crate::store::{Entry, Eviction, OutputStore, PutReport, StoreStats};

/// An in-memory [`OutputStore`]: every method is one step under one mutex,
/// so each is whole, as the trait asks. Entries past `max_bytes` (the sum
/// of the values' lengths) are evicted least recently used first.
pub struct MemoryStore {
    max_bytes: u64,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Key → entry and the tick of its last use.
    entries: HashMap<StoreKey, (Entry, u64)>,
    /// Tick of last use → key: the eviction order.
    by_use: BTreeMap<u64, StoreKey>,
    tick: u64,
    bytes: u64,
}

impl Inner {
    fn touch(&mut self, key: &StoreKey) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, used)) = self.entries.get_mut(key) {
            self.by_use.remove(used);
            *used = tick;
            self.by_use.insert(tick, *key);
        }
    }

    fn remove(&mut self, key: &StoreKey) -> bool {
        match self.entries.remove(key) {
            Some((entry, used)) => {
                self.by_use.remove(&used);
                self.bytes -= entry.value.len() as u64;
                true
            }
            None => false,
        }
    }

    fn evict_to(&mut self, max_bytes: u64) -> Eviction {
        let mut eviction = Eviction::default();
        while self.bytes > max_bytes {
            let Some((_, key)) = self.by_use.pop_first() else {
                break;
            };
            if let Some((entry, _)) = self.entries.remove(&key) {
                self.bytes -= entry.value.len() as u64;
                eviction.entries += 1;
                eviction.bytes += entry.value.len() as u64;
            }
        }
        eviction
    }
}

impl MemoryStore {
    /// An empty store that keeps at most `max_bytes` of values.
    pub fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Changes every stored value with `damage` (its key and its bytes),
    /// leaving each entry's digest as it was: what a disk that flips,
    /// truncates or rewrites bytes under a store does, for tests of a
    /// reader that must not trust them.
    pub fn damage(&self, mut damage: impl FnMut(&StoreKey, &mut Vec<u8>)) {
        let mut inner = self.lock();
        let mut bytes = 0;
        for (key, (entry, _)) in inner.entries.iter_mut() {
            damage(key, &mut entry.value);
            bytes += entry.value.len() as u64;
        }
        inner.bytes = bytes;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic under this mutex leaves a consistent map (each step is
        // whole before it can panic): the poison is ignored.
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("MemoryStore")
            .field("max_bytes", &self.max_bytes)
            .field("entries", &inner.entries.len())
            .field("bytes", &inner.bytes)
            .finish()
    }
}

impl OutputStore for MemoryStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError> {
        let mut inner = self.lock();
        inner.touch(key);
        Ok(inner.entries.get(key).map(|(entry, _)| entry.clone()))
    }

    fn put_batch(&self, entries: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError> {
        let mut inner = self.lock();
        let mut report = PutReport::default();
        for (key, entry) in entries {
            if entry.value.len() as u64 > self.max_bytes {
                report.too_large += 1;
                continue;
            }
            inner.remove(key);
            inner.tick += 1;
            let tick = inner.tick;
            inner.bytes += entry.value.len() as u64;
            inner.entries.insert(*key, (entry.clone(), tick));
            inner.by_use.insert(tick, *key);
            report.written += 1;
        }
        report.evicted = inner.evict_to(self.max_bytes);
        Ok(report)
    }

    fn remove(&self, keys: &[StoreKey]) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        Ok(keys.iter().filter(|key| inner.remove(key)).count() as u64)
    }

    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let gone: Vec<StoreKey> = inner
            .entries
            .iter()
            .filter(|(_, (entry, _))| entry.path.as_deref().is_some_and(|path| !keep(path)))
            .map(|(key, _)| *key)
            .collect();
        Ok(gone.iter().filter(|key| inner.remove(key)).count() as u64)
    }

    fn gc(&self) -> Result<Eviction, StoreError> {
        Ok(self.lock().evict_to(self.max_bytes))
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let inner = self.lock();
        Ok(StoreStats {
            entries: inner.entries.len() as u64,
            bytes: inner.bytes,
            file_bytes: 0,
        })
    }

    fn clear(&self) -> Result<(), StoreError> {
        *self.lock() = Inner::default();
        Ok(())
    }

    /// Nothing to do: a memory store keeps nothing across a crash.
    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digest;

    fn key(n: u8) -> StoreKey {
        StoreKey::from([n; 32])
    }

    fn entry(len: usize) -> Entry {
        Entry::new(vec![7; len], Digest::from([0; 32]), Some("a.rs".into()))
    }

    #[test]
    fn the_least_recently_used_entry_goes_past_the_cap() {
        let store = MemoryStore::new(10);
        store
            .put_batch(&[(key(1), entry(4)), (key(2), entry(4))])
            .unwrap();
        // Reading 1 makes 2 the least recently used.
        assert!(store.get(&key(1)).unwrap().is_some());
        let report = store.put_batch(&[(key(3), entry(4))]).unwrap();
        assert_eq!(
            report.evicted,
            Eviction {
                entries: 1,
                bytes: 4
            }
        );
        assert!(store.get(&key(2)).unwrap().is_none());
        assert!(store.get(&key(1)).unwrap().is_some());
        assert_eq!(store.stats().unwrap().bytes, 8);
        assert_eq!(
            store.put_batch(&[(key(4), entry(11))]).unwrap().too_large,
            1
        );
    }

    #[test]
    fn damage_changes_values_and_paths_prune() {
        let store = MemoryStore::new(100);
        store.put_batch(&[(key(1), entry(4))]).unwrap();
        store.damage(|_, value| value.truncate(1));
        assert_eq!(store.get(&key(1)).unwrap().unwrap().value, [7]);
        assert_eq!(store.stats().unwrap().bytes, 1);
        assert_eq!(store.retain_paths(&|path| path != "a.rs").unwrap(), 1);
        assert_eq!(store.stats().unwrap().entries, 0);
    }
}
