//! The output cache of `build`, `watch` and `explain` (the scheduler's
//! persistent outputs): where it lives (`target/verter-cache/` under the
//! indexed directory, `--cache DIR`, or none with `--no-cache`), opening it
//! with one warning for whatever is wrong with it, and `verter cache
//! stats|gc|clear`.
//!
//! A cache never fails a command: one that cannot be opened (in use by
//! another `verter`, a directory that cannot be created) is reported once
//! and the command runs without it; a damaged or foreign store is discarded
//! and rebuilt (`verter_store` decides, this module reports). It never
//! computes a key: the scheduler does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use verter_scheduler::{OutputStore, OutputStoreConfig};
use verter_store::{RedbStore, StoreError, StoreOptions};

use crate::error::CliError;
use crate::terminal;

/// The cache's directory under the indexed directory.
pub(crate) const CACHE_DIR: &str = "target/verter-cache";

/// The most bytes of outputs a cache keeps; the least recently used go
/// past it.
pub(crate) const CACHE_BYTES: u64 = 2 << 30;

/// What every stored output was computed by: the indexer of this build of
/// `verter`. Another version's store is discarded at open, and none of its
/// keys would match anyway.
fn namespace() -> String {
    format!("verter_index {}", env!("CARGO_PKG_VERSION"))
}

/// Where a command keeps its cache.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CachePolicy {
    /// Keep the output cache in DIR (default: `target/verter-cache` under
    /// PATH): a later run answers what did not change from it.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub(crate) cache: Option<PathBuf>,
    /// Use no output cache: compute everything, keep nothing (also when
    /// the environment sets `VERTER_NO_CACHE=1`).
    #[arg(long, env = "VERTER_NO_CACHE", value_parser = clap::builder::BoolishValueParser::new())]
    pub(crate) no_cache: bool,
}

impl CachePolicy {
    /// The cache directory for a tree based at `base`, unless turned off.
    pub(crate) fn dir(&self, base: &Path) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        Some(self.cache.clone().unwrap_or_else(|| base.join(CACHE_DIR)))
    }

    /// Opens the cache for a tree based at `base`: `None` when it is off
    /// or cannot be opened (said once, on standard error).
    pub(crate) fn open(&self, base: &Path) -> Option<Cache> {
        let dir = self.dir(base)?;
        match open(&dir) {
            Ok(store) => Some(Cache {
                store: with_seam(store),
            }),
            Err(error) => {
                terminal::tell(format_args!(
                    "warning: running without the cache: {}",
                    cache_error(&error, &dir)
                ));
                None
            }
        }
    }
}

/// An open cache, shared by every scheduler of one command.
#[derive(Clone)]
pub(crate) struct Cache {
    store: Arc<dyn OutputStore>,
}

impl Cache {
    /// The scheduler's view of it.
    pub(crate) fn config(&self) -> OutputStoreConfig {
        OutputStoreConfig::new(Arc::clone(&self.store), namespace())
    }
}

/// The test seam of the crash test: with `VERTER_TEST_ABORT_AT_STORE_OP=N`,
/// the process aborts (no destructor runs, nothing is flushed: as `kill -9`
/// does) as it begins its `N`th read or write of the cache, counted from
/// 0. Read once, at open.
const ABORT_AT_STORE_OP: &str = "VERTER_TEST_ABORT_AT_STORE_OP";

/// A store that aborts the process at one of its operations
/// ([`ABORT_AT_STORE_OP`]).
struct AbortAt {
    inner: Arc<RedbStore>,
    /// Operations left before the abort.
    left: std::sync::atomic::AtomicU64,
}

impl AbortAt {
    fn tick(&self) {
        use std::sync::atomic::Ordering;
        if self.left.fetch_sub(1, Ordering::SeqCst) == 0 {
            std::process::abort();
        }
    }
}

impl OutputStore for AbortAt {
    fn get(&self, key: &verter_store::StoreKey) -> Result<Option<verter_store::Entry>, StoreError> {
        self.tick();
        self.inner.get(key)
    }
    fn put_batch(
        &self,
        entries: &[(verter_store::StoreKey, verter_store::Entry)],
    ) -> Result<verter_store::PutReport, StoreError> {
        self.tick();
        self.inner.put_batch(entries)
    }
    fn remove(&self, keys: &[verter_store::StoreKey]) -> Result<u64, StoreError> {
        self.inner.remove(keys)
    }
    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        self.inner.retain_paths(keep)
    }
    fn gc(&self) -> Result<verter_store::Eviction, StoreError> {
        self.inner.gc()
    }
    fn stats(&self) -> Result<verter_store::StoreStats, StoreError> {
        self.inner.stats()
    }
    fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear()
    }
    fn sync(&self) -> Result<(), StoreError> {
        self.tick();
        self.inner.sync()
    }
}

/// `store`, wrapped by the crash test's seam when the environment asks.
fn with_seam(store: Arc<RedbStore>) -> Arc<dyn OutputStore> {
    match std::env::var(ABORT_AT_STORE_OP)
        .ok()
        .and_then(|n| n.parse().ok())
    {
        Some(at) => Arc::new(AbortAt {
            inner: store,
            left: std::sync::atomic::AtomicU64::new(at),
        }),
        None => store,
    }
}

/// Opens the store in `dir`, reporting a discarded file once.
fn open(dir: &Path) -> Result<Arc<RedbStore>, StoreError> {
    let opened = RedbStore::open(dir, StoreOptions::new(namespace(), CACHE_BYTES))?;
    if let Some(warning) = opened.warning {
        terminal::tell(format_args!("warning: {warning}; the cache starts empty"));
    }
    Ok(Arc::new(opened.store))
}

/// What a person reads for a cache that could not be opened.
fn cache_error(error: &StoreError, dir: &Path) -> String {
    match error {
        StoreError::Locked { .. } => format!(
            "{} is in use by another verter (a watch, or another build)",
            dir.display()
        ),
        other => other.to_string(),
    }
}

/// `verter cache`'s actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Action {
    /// Print how many outputs the cache holds and its size.
    Stats,
    /// Drop the outputs of files that no longer exist, and the least
    /// recently used past the size cap.
    Gc,
    /// Remove every output.
    Clear,
}

/// Runs `verter cache ACTION` on the cache of the tree based at `base`.
pub(crate) fn run(action: Action, base: &Path, policy: &CachePolicy) -> Result<(), CliError> {
    let Some(dir) = policy.dir(base) else {
        terminal::line(terminal::Stream::Out, "no cache (--no-cache)");
        return Ok(());
    };
    if action != Action::Clear && !dir.exists() {
        terminal::line(
            terminal::Stream::Out,
            format_args!("{}: no cache yet", dir.display()),
        );
        return Ok(());
    }
    let store = open(&dir).map_err(|error| CliError::Cache {
        message: cache_error(&error, &dir),
    })?;
    let failed = |error: StoreError| CliError::Cache {
        message: error.to_string(),
    };
    match action {
        Action::Stats => {}
        Action::Gc => {
            let gone = store
                .retain_paths(&|file| Path::new(file).exists())
                .map_err(failed)?;
            let evicted = store.gc().map_err(failed)?;
            terminal::line(
                terminal::Stream::Out,
                format_args!(
                    "removed {gone} outputs of files that no longer exist, evicted {} past the size cap",
                    evicted.entries
                ),
            );
        }
        Action::Clear => {
            store.clear().map_err(failed)?;
            terminal::line(
                terminal::Stream::Out,
                format_args!("cleared {}", dir.display()),
            );
        }
    }
    let stats = store.stats().map_err(failed)?;
    terminal::line(
        terminal::Stream::Out,
        format_args!(
            "{}: {} outputs, {} bytes of outputs, {} bytes on disk (cap {} bytes)",
            dir.display(),
            stats.entries,
            stats.bytes,
            stats.file_bytes,
            CACHE_BYTES
        ),
    );
    Ok(())
}
