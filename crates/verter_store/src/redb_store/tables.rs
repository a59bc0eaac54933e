//! The file's layout: four tables, their records, and [`Writer`], the only
//! code that changes them. Every change to an entry goes through `Writer` so
//! the four tables and the byte count move together inside one write
//! transaction. Never opens or commits a transaction itself.
//!
//! # Layout (format version 1)
//! - `verter_store_meta` (`&str -> &[u8]`): `magic` (`verter-store`),
//!   `format_version` (u32 little-endian), `namespace` (UTF-8), `next_tick`
//!   and `value_bytes` (u64 little-endian).
//! - `verter_store_values` (`[u8; 32] -> &[u8]`): the key's value, alone, so
//!   bookkeeping never rewrites or reads it.
//! - `verter_store_index` (`[u8; 32] -> (u64, u64, [u8; 32], Option<&str>)`):
//!   the key's last-use tick, value length, value digest and path.
//! - `verter_store_by_use` (`u64 -> [u8; 32]`): last-use tick to key, so the
//!   least recently used entry is the first row.
//!
//! # Invariants
//! 1. A key is in `values` if and only if it is in `index`, and its index
//!    record's tick maps back to it in `by_use`; `by_use` has no other rows.
//! 2. `value_bytes` is the sum of the index records' lengths.
//! 3. Ticks are unique: each comes from the store's clock once.

use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

use crate::digest::{Digest, StoreKey};
use crate::error::StoreError;
use crate::store::{Entry, Eviction};

/// Store metadata: what the file is, its layout version and namespace, and
/// the counters.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("verter_store_meta");
/// Values by key.
pub(crate) const VALUES: TableDefinition<[u8; 32], &[u8]> =
    TableDefinition::new("verter_store_values");
/// An index row as stored: (last-use tick, value length, value digest, path).
pub(crate) type StoredRecord<'a> = (u64, u64, [u8; 32], Option<&'a str>);

/// Bookkeeping by key: [`StoredRecord`]s.
pub(crate) const INDEX: TableDefinition<[u8; 32], StoredRecord<'static>> =
    TableDefinition::new("verter_store_index");
/// Keys by last-use tick, oldest first.
pub(crate) const BY_USE: TableDefinition<u64, [u8; 32]> =
    TableDefinition::new("verter_store_by_use");

/// `META` key: the bytes that say the file is a verter store.
pub(crate) const MAGIC_KEY: &str = "magic";
/// The magic value.
pub(crate) const MAGIC: &[u8] = b"verter-store";
/// `META` key: [`crate::FORMAT_VERSION`], u32 little-endian.
pub(crate) const FORMAT_VERSION_KEY: &str = "format_version";
/// `META` key: the namespace, UTF-8.
pub(crate) const NAMESPACE_KEY: &str = "namespace";
/// `META` key: the next unused tick, u64 little-endian.
pub(crate) const NEXT_TICK_KEY: &str = "next_tick";
/// `META` key: the sum of value lengths, u64 little-endian.
pub(crate) const VALUE_BYTES_KEY: &str = "value_bytes";

/// An index record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexRecord {
    /// When the entry was last put or read.
    pub(crate) tick: u64,
    /// The value's length.
    pub(crate) len: u64,
    /// The value's digest.
    pub(crate) digest: Digest,
    /// The file the entry belongs to.
    pub(crate) path: Option<String>,
}

impl IndexRecord {
    /// From the stored tuple.
    pub(crate) fn from_stored(stored: StoredRecord<'_>) -> Self {
        let (tick, len, digest, path) = stored;
        Self {
            tick,
            len,
            digest: Digest(digest),
            path: path.map(str::to_owned),
        }
    }
}

/// A u64 metadata value.
pub(crate) fn decode_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// A u32 metadata value.
pub(crate) fn decode_u32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// The four tables, open in one write transaction, and the running byte
/// count. [`Writer::finish`] writes the counters back; dropping a writer
/// without it is only correct if the transaction is then aborted.
pub(crate) struct Writer<'txn> {
    meta: Table<'txn, &'static str, &'static [u8]>,
    values: Table<'txn, [u8; 32], &'static [u8]>,
    index: Table<'txn, [u8; 32], StoredRecord<'static>>,
    by_use: Table<'txn, u64, [u8; 32]>,
    /// The sum of value lengths, kept in memory during the transaction.
    value_bytes: u64,
}

impl<'txn> Writer<'txn> {
    /// Opens (creating where missing) the tables in `txn`.
    pub(crate) fn open(txn: &'txn WriteTransaction) -> Result<Self, StoreError> {
        let meta = txn
            .open_table(META)
            .map_err(StoreError::database("open the metadata"))?;
        let value_bytes = meta
            .get(VALUE_BYTES_KEY)
            .map_err(StoreError::database("read the byte count"))?
            .and_then(|guard| decode_u64(guard.value()))
            .unwrap_or(0);
        Ok(Self {
            meta,
            values: txn
                .open_table(VALUES)
                .map_err(StoreError::database("open the values"))?,
            index: txn
                .open_table(INDEX)
                .map_err(StoreError::database("open the index"))?,
            by_use: txn
                .open_table(BY_USE)
                .map_err(StoreError::database("open the use order"))?,
            value_bytes,
        })
    }

    /// Writes a metadata value.
    pub(crate) fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.meta
            .insert(key, value)
            .map_err(StoreError::database("write the metadata"))?;
        Ok(())
    }

    /// Sets the byte count to zero, after the entry tables were deleted.
    pub(crate) fn reset_value_bytes(&mut self) {
        self.value_bytes = 0;
    }

    /// The index record of `key`.
    pub(crate) fn record(&self, key: &StoreKey) -> Result<Option<IndexRecord>, StoreError> {
        Ok(self
            .index
            .get(key.as_bytes())
            .map_err(StoreError::database("read the index"))?
            .map(|guard| IndexRecord::from_stored(guard.value())))
    }

    /// Writes `key`'s index record and its `by_use` row.
    fn write_record(&mut self, key: &StoreKey, record: &IndexRecord) -> Result<(), StoreError> {
        let stored = (
            record.tick,
            record.len,
            *record.digest.as_bytes(),
            record.path.as_deref(),
        );
        self.index
            .insert(key.as_bytes(), stored)
            .map_err(StoreError::database("write the index"))?;
        self.by_use
            .insert(record.tick, key.as_bytes())
            .map_err(StoreError::database("write the use order"))?;
        Ok(())
    }

    /// Marks `key` as used at `tick`, if it is still stored and was not used
    /// later (a touch may arrive after a newer put of the same key).
    pub(crate) fn touch(&mut self, key: &StoreKey, tick: u64) -> Result<(), StoreError> {
        let Some(mut record) = self.record(key)? else {
            return Ok(());
        };
        if record.tick >= tick {
            return Ok(());
        }
        self.by_use
            .remove(record.tick)
            .map_err(StoreError::database("update the use order"))?;
        record.tick = tick;
        self.write_record(key, &record)
    }

    /// Stores `entry` under `key`, used at `tick`, replacing any entry there.
    pub(crate) fn insert(
        &mut self,
        key: &StoreKey,
        entry: &Entry,
        tick: u64,
    ) -> Result<(), StoreError> {
        self.remove(key)?;
        self.values
            .insert(key.as_bytes(), entry.value.as_slice())
            .map_err(StoreError::database("write a value"))?;
        let len = entry.value.len() as u64;
        self.write_record(
            key,
            &IndexRecord {
                tick,
                len,
                digest: entry.digest,
                path: entry.path.clone(),
            },
        )?;
        self.value_bytes += len;
        Ok(())
    }

    /// Removes `key`'s entry; returns its value length if it existed.
    pub(crate) fn remove(&mut self, key: &StoreKey) -> Result<Option<u64>, StoreError> {
        let Some(record) = self
            .index
            .remove(key.as_bytes())
            .map_err(StoreError::database("remove from the index"))?
            .map(|guard| IndexRecord::from_stored(guard.value()))
        else {
            return Ok(None);
        };
        self.by_use
            .remove(record.tick)
            .map_err(StoreError::database("remove from the use order"))?;
        self.values
            .remove(key.as_bytes())
            .map_err(StoreError::database("remove a value"))?;
        self.value_bytes = self.value_bytes.saturating_sub(record.len);
        Ok(Some(record.len))
    }

    /// Removes least recently used entries until the values fit `max_bytes`.
    pub(crate) fn evict_to(&mut self, max_bytes: u64) -> Result<Eviction, StoreError> {
        let mut eviction = Eviction::default();
        while self.value_bytes > max_bytes {
            let Some(oldest) = self
                .by_use
                .first()
                .map_err(StoreError::database("read the use order"))?
                .map(|(_, key)| StoreKey::from(key.value()))
            else {
                // Invariant 2 says this cannot happen; if the count drifted,
                // an empty store holds no bytes.
                debug_assert_eq!(self.value_bytes, 0, "bytes counted with no entries");
                self.value_bytes = 0;
                break;
            };
            match self.remove(&oldest)? {
                Some(len) => {
                    eviction.entries += 1;
                    eviction.bytes += len;
                }
                None => {
                    // A `by_use` row without an index record breaks invariant
                    // 1; drop the row so the loop makes progress.
                    debug_assert!(false, "use order names a missing entry {oldest}");
                    self.by_use
                        .pop_first()
                        .map_err(StoreError::database("repair the use order"))?;
                }
            }
        }
        Ok(eviction)
    }

    /// Every (key, path) pair with a path.
    pub(crate) fn paths(&self) -> Result<Vec<(StoreKey, String)>, StoreError> {
        let mut paths = Vec::new();
        for row in self
            .index
            .iter()
            .map_err(StoreError::database("read the index"))?
        {
            let (key, record) = row.map_err(StoreError::database("read the index"))?;
            if let (_, _, _, Some(path)) = record.value() {
                paths.push((StoreKey::from(key.value()), path.to_owned()));
            }
        }
        Ok(paths)
    }

    /// Writes the counters back: the byte count and `next_tick`.
    pub(crate) fn finish(mut self, next_tick: u64) -> Result<(), StoreError> {
        let value_bytes = self.value_bytes;
        self.set_meta(VALUE_BYTES_KEY, &value_bytes.to_le_bytes())?;
        self.set_meta(NEXT_TICK_KEY, &next_tick.to_le_bytes())
    }
}
