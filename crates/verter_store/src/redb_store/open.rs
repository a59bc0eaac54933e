//! Opening a store: take the directory's lock, judge the file that is there,
//! discard it if it is unusable, and initialise a fresh one. Owns the rules
//! for what counts as a bad store; never reads or writes an entry, and never
//! touches the file without holding the lock.
//!
//! # Protocol
//! 1. Create the directory; take the exclusive lock on [`LOCK_FILE_NAME`]
//!    (held by the returned store for its life). Held elsewhere: `Locked`.
//! 2. No store file: create one (step 5).
//! 3. Judge the file without the engine first (empty, or not starting with
//!    redb's magic bytes), then open it with the engine, verifying every
//!    page's checksum; an engine panic on a damaged file counts as damage.
//!    redb's own lock held elsewhere: `Locked`, and the file is left alone.
//! 4. Opened: check the metadata (magic, format version, namespace). A
//!    database with no tables at all is a store whose first commit never
//!    happened: initialised without a warning.
//! 5. Anything unusable: close it, remove the file, create a fresh one and
//!    write the metadata in its first transaction, with one warning.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use redb::{
    Builder, Database, DatabaseError, ReadableDatabase, ReadableTable, StorageError, TableError,
};

use super::tables::{
    self, BY_USE, FORMAT_VERSION_KEY, INDEX, MAGIC, MAGIC_KEY, META, NAMESPACE_KEY, NEXT_TICK_KEY,
    VALUES, Writer,
};
use super::{FORMAT_VERSION, LOCK_FILE_NAME, Opened, RedbStore, STORE_FILE_NAME, StoreOptions};
use crate::error::{StoreError, StoreWarning};

/// The first bytes of every redb file (its header's magic number, part of
/// redb's file format).
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// The engine's page cache: outputs are read once per restart, so a small
/// cache suffices and keeps the scheduler's memory flat.
const CACHE_BYTES: usize = 32 << 20;

/// What step 3 and 4 found.
enum Judgement {
    /// A store of this namespace and format: use it.
    Usable { db: Database, next_tick: u64 },
    /// A database with no tables: initialise it.
    Blank(Database),
    /// Unusable: discard it.
    Discard(StoreWarning),
}

/// [`RedbStore::open`].
pub(super) fn open(dir: &Path, options: StoreOptions) -> Result<Opened, StoreError> {
    std::fs::create_dir_all(dir)
        .map_err(StoreError::io("create the cache directory", dir.to_owned()))?;
    let path = dir.join(STORE_FILE_NAME);
    let lock = lock_directory(dir, &path)?;

    let (db, next_tick, warning) = if path.exists() {
        match judge(&path, &options)? {
            Judgement::Usable { db, next_tick } => (db, next_tick, None),
            Judgement::Blank(db) => (initialise(db, &options)?, 0, None),
            Judgement::Discard(warning) => {
                std::fs::remove_file(&path)
                    .map_err(StoreError::io("remove the discarded store", path.clone()))?;
                (initialise(create(&path)?, &options)?, 0, Some(warning))
            }
        }
    } else {
        (initialise(create(&path)?, &options)?, 0, None)
    };

    Ok(Opened {
        store: RedbStore {
            db,
            path,
            max_bytes: options.max_bytes,
            clock: AtomicU64::new(next_tick),
            touches: Mutex::default(),
            unsynced: AtomicU64::new(0),
            reader: std::sync::RwLock::default(),
            _lock: lock,
        },
        warning,
    })
}

/// Step 1: the directory's exclusive lock.
fn lock_directory(dir: &Path, store_path: &Path) -> Result<File, StoreError> {
    let lock_path = dir.join(LOCK_FILE_NAME);
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(StoreError::io("open the lock file", lock_path.clone()))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: store_path.to_owned(),
        }),
        Err(TryLockError::Error(source)) => Err(StoreError::Io {
            operation: "lock",
            path: lock_path,
            source,
        }),
    }
}

/// The engine's settings: verify every page at open, so a file changed
/// outside the engine is an error here instead of a wrong answer later.
fn builder() -> Builder {
    let mut builder = Builder::new();
    builder
        .set_check_integrity_on_open(true)
        .set_cache_size(CACHE_BYTES);
    builder
}

/// Creates a fresh database at `path`.
fn create(path: &Path) -> Result<Database, StoreError> {
    builder().create(path).map_err(|error| match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            StoreError::Locked {
                path: path.to_owned(),
            }
        }
        other => StoreError::database("create the store file")(other),
    })
}

/// Step 5's first transaction: the metadata and the empty tables.
fn initialise(db: Database, options: &StoreOptions) -> Result<Database, StoreError> {
    let txn = db
        .begin_write()
        .map_err(StoreError::database("begin the first write"))?;
    {
        let mut writer = Writer::open(&txn)?;
        writer.set_meta(MAGIC_KEY, MAGIC)?;
        writer.set_meta(FORMAT_VERSION_KEY, &FORMAT_VERSION.to_le_bytes())?;
        writer.set_meta(NAMESPACE_KEY, options.namespace.as_bytes())?;
        writer.finish(0)?;
    }
    txn.commit()
        .map_err(StoreError::database("commit the first write"))?;
    Ok(db)
}

/// Steps 3 and 4.
fn judge(path: &Path, options: &StoreOptions) -> Result<Judgement, StoreError> {
    let corrupted = |detail: String| {
        Judgement::Discard(StoreWarning::Corrupted {
            path: path.to_owned(),
            detail,
        })
    };
    let foreign = |detail: String| {
        Judgement::Discard(StoreWarning::Foreign {
            path: path.to_owned(),
            detail,
        })
    };

    let mut head = Vec::with_capacity(REDB_MAGIC.len());
    File::open(path)
        .and_then(|file| file.take(REDB_MAGIC.len() as u64).read_to_end(&mut head))
        .map_err(StoreError::io("read", path.to_owned()))?;
    if head.is_empty() {
        return Ok(corrupted("the file is empty".to_owned()));
    }
    if head != REDB_MAGIC {
        return Ok(foreign("not a redb database".to_owned()));
    }

    let opened = panic::catch_unwind(|| builder().create(path));
    let db = match opened {
        Ok(Ok(db)) => db,
        Ok(Err(DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch)) => {
            return Err(StoreError::Locked {
                path: path.to_owned(),
            });
        }
        Ok(Err(DatabaseError::UpgradeRequired(version))) => {
            return Ok(foreign(format!(
                "a database in redb's older file format {version}"
            )));
        }
        Ok(Err(DatabaseError::Storage(StorageError::Io(source))))
            if source.kind() != std::io::ErrorKind::UnexpectedEof =>
        {
            return Err(StoreError::Io {
                operation: "open",
                path: path.to_owned(),
                source,
            });
        }
        Ok(Err(other)) => return Ok(corrupted(other.to_string())),
        Err(payload) => {
            return Ok(corrupted(format!(
                "the engine failed on it: {}",
                panic_message(payload.as_ref())
            )));
        }
    };

    // The checks read only what the engine verified above; a panic here is
    // damage the verification missed, judged the same way.
    match panic::catch_unwind(AssertUnwindSafe(|| check_metadata(&db, options))) {
        Ok(Ok(Check::Usable { next_tick })) => Ok(Judgement::Usable { db, next_tick }),
        Ok(Ok(Check::Blank)) => Ok(Judgement::Blank(db)),
        Ok(Ok(Check::Discard(warning))) => Ok(Judgement::Discard(warning.at(path))),
        Ok(Err(error)) => Ok(corrupted(error.to_string())),
        Err(payload) => Ok(corrupted(format!(
            "the engine failed reading it: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

/// What the metadata says.
#[derive(Debug, PartialEq, Eq)]
enum Check {
    Usable { next_tick: u64 },
    Blank,
    Discard(Reason),
}

/// Why a database that opened is not usable (the path is added by
/// [`Reason::at`]).
#[derive(Debug, PartialEq, Eq)]
enum Reason {
    Foreign(String),
    Corrupted(String),
    FormatVersion(u32),
    Namespace { found: String, expected: String },
}

impl Reason {
    fn at(self, path: &Path) -> StoreWarning {
        let path: PathBuf = path.to_owned();
        match self {
            Self::Foreign(detail) => StoreWarning::Foreign { path, detail },
            Self::Corrupted(detail) => StoreWarning::Corrupted { path, detail },
            Self::FormatVersion(found) => StoreWarning::FormatVersion {
                path,
                found,
                expected: FORMAT_VERSION,
            },
            Self::Namespace { found, expected } => StoreWarning::Namespace {
                path,
                found,
                expected,
            },
        }
    }
}

/// Step 4: the metadata and the tables' types.
fn check_metadata(db: &Database, options: &StoreOptions) -> Result<Check, redb::Error> {
    let txn = db.begin_read()?;
    let table_names: Vec<String> = txn
        .list_tables()?
        .map(|table| redb::TableHandle::name(&table).to_owned())
        .chain(
            txn.list_multimap_tables()?
                .map(|table| redb::MultimapTableHandle::name(&table).to_owned()),
        )
        .collect();
    if table_names.is_empty() {
        return Ok(Check::Blank);
    }
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(TableError::TableDoesNotExist(_)) => {
            return Ok(Check::Discard(Reason::Foreign(format!(
                "a redb database without the store's metadata (tables: {})",
                table_names.join(", ")
            ))));
        }
        Err(
            error @ (TableError::TableTypeMismatch(_)
            | TableError::TableIsMultimap(_)
            | TableError::TypeDefinitionChanged(_)),
        ) => {
            return Ok(Check::Discard(Reason::Foreign(format!(
                "its metadata table is not the store's: {error}"
            ))));
        }
        Err(error) => return Err(error.into()),
    };
    let read = |key: &str| -> Result<Option<Vec<u8>>, redb::Error> {
        Ok(meta.get(key)?.map(|guard| guard.value().to_vec()))
    };
    if read(MAGIC_KEY)?.as_deref() != Some(MAGIC) {
        return Ok(Check::Discard(Reason::Foreign(
            "a redb database without the store's magic".to_owned(),
        )));
    }
    let Some(format_version) = read(FORMAT_VERSION_KEY)?
        .as_deref()
        .and_then(tables::decode_u32)
    else {
        return Ok(Check::Discard(Reason::Corrupted(
            "the format version is missing".to_owned(),
        )));
    };
    if format_version != FORMAT_VERSION {
        return Ok(Check::Discard(Reason::FormatVersion(format_version)));
    }
    let namespace = read(NAMESPACE_KEY)?.unwrap_or_default();
    if namespace != options.namespace.as_bytes() {
        return Ok(Check::Discard(Reason::Namespace {
            found: String::from_utf8_lossy(&namespace).into_owned(),
            expected: options.namespace.clone(),
        }));
    }
    // The entry tables, with the types this build reads.
    for result in [
        txn.open_table(VALUES).map(drop),
        txn.open_table(INDEX).map(drop),
        txn.open_table(BY_USE).map(drop),
    ] {
        if let Err(error) = result {
            return Ok(Check::Discard(Reason::Corrupted(format!(
                "an entry table is unreadable: {error}"
            ))));
        }
    }
    let next_tick = read(NEXT_TICK_KEY)?
        .as_deref()
        .and_then(tables::decode_u64)
        .unwrap_or(0);
    Ok(Check::Usable { next_tick })
}

/// A panic payload's message.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}
