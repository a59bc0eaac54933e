//! Counters of what the client did, for benchmarks and tests: the atomic
//! [`Counters`] the runtime thread bumps, and the [`RemoteStats`] snapshot
//! callers read. Never blocks.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of an executor's counters since it connected
/// ([`RemoteExecutor::stats`](crate::RemoteExecutor::stats)).
///
/// Each field is read atomically on its own; a snapshot taken while actions
/// run may mix moments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteStats {
    /// Actions started.
    pub actions: u64,
    /// Actions answered by `GetActionResult`.
    pub ac_hits: u64,
    /// Actions the server ran.
    pub executed: u64,
    /// Actions `Execute` answered from the server's cache.
    pub execute_cached: u64,
    /// Actions that ended in an error (cancellations included).
    pub failed: u64,
    /// Blobs uploaded (batched or streamed).
    pub blobs_uploaded: u64,
    /// Bytes uploaded.
    pub bytes_uploaded: u64,
    /// Blobs fetched (batched or streamed).
    pub blobs_fetched: u64,
    /// Bytes fetched.
    pub bytes_fetched: u64,
    /// Retries: calls repeated after a retryable status and `Execute`
    /// streams resumed or restarted.
    pub retries: u64,
    /// `CancelOperation` calls the server accepted.
    pub cancels_sent: u64,
}

/// The live counters; written by the runtime thread, read by anyone.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) actions: AtomicU64,
    pub(crate) ac_hits: AtomicU64,
    pub(crate) executed: AtomicU64,
    pub(crate) execute_cached: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) blobs_uploaded: AtomicU64,
    pub(crate) bytes_uploaded: AtomicU64,
    pub(crate) blobs_fetched: AtomicU64,
    pub(crate) bytes_fetched: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) cancels_sent: AtomicU64,
}

impl Counters {
    /// Adds `n` to `counter`. Relaxed: the counters order nothing.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> RemoteStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        RemoteStats {
            actions: read(&self.actions),
            ac_hits: read(&self.ac_hits),
            executed: read(&self.executed),
            execute_cached: read(&self.execute_cached),
            failed: read(&self.failed),
            blobs_uploaded: read(&self.blobs_uploaded),
            bytes_uploaded: read(&self.bytes_uploaded),
            blobs_fetched: read(&self.blobs_fetched),
            bytes_fetched: read(&self.bytes_fetched),
            retries: read(&self.retries),
            cancels_sent: read(&self.cancels_sent),
        }
    }
}
