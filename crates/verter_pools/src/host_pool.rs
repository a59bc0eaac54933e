//! The host's coordinator pool: where a host runs its outer batch waits,
//! apart from the stage pools.
//!
//! This module owns a rayon pool with large stacks whose workers are
//! registered [`CallerKind::External`]. The host builds and owns it; the
//! stage pools never see it. Its workers never run stage work: when they
//! wait, `wait_or_drive` parks them.
//!
//! # Invariants
//! 1. Every worker reads [`CallerKind::External`]
//!    (`callers_see_their_pools_kind`, integration).
//! 2. Dropping the pool joins every worker (`no_host_worker_outlives_its_pool`).

use std::fmt;

use crate::caller_kind::CallerKind;
use crate::error::PoolError;
use crate::worker_threads::{ThreadHooks, WorkerSpec, WorkerThreads, build_rayon_pool};

/// The stack size of every coordinator worker: 8 MiB, because hosts run deep
/// recursive work (parsers, visitors) from batch items.
pub const HOST_WORKER_STACK_SIZE: usize = 8 * 1024 * 1024;

/// The host's coordinator pool: runs batch items that submit stage work and
/// park until it is answered.
///
/// Dropping the pool joins every worker, after any `install` running on it
/// has returned.
pub struct HostCpuPool {
    /// Declared before `workers` on purpose: fields drop in order, and the
    /// rayon pool must be told to terminate before its threads are joined.
    pool: rayon::ThreadPool,
    /// Joins the rayon workers when dropped.
    workers: WorkerThreads,
    threads: usize,
}

impl HostCpuPool {
    /// A pool of `threads` workers named `verter-host-N`, with
    /// [`HOST_WORKER_STACK_SIZE`] stacks, registered
    /// [`CallerKind::External`].
    ///
    /// # Errors
    /// [`PoolError::ZeroThreads`] for zero threads, and
    /// [`PoolError::Spawn`] / [`PoolError::Build`] when the workers cannot
    /// be started.
    pub fn new(threads: usize) -> Result<Self, PoolError> {
        Self::with_hooks(threads, ThreadHooks::default())
    }

    pub(crate) fn with_hooks(threads: usize, hooks: ThreadHooks) -> Result<Self, PoolError> {
        let spec = WorkerSpec {
            pool: "host",
            kind: CallerKind::External,
            hooks,
        };
        let (pool, workers) = build_rayon_pool(&spec, threads, Some(HOST_WORKER_STACK_SIZE))?;
        Ok(Self {
            pool,
            workers,
            threads,
        })
    }

    /// Runs `op` on this pool and returns its result; rayon parallel
    /// iterators and `join`s inside `op` run on this pool's workers. The
    /// calling thread blocks until `op` returns; a panic in `op` propagates
    /// to the caller.
    pub fn install<R, F>(&self, op: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        self.pool.install(op)
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl fmt::Debug for HostCpuPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostCpuPool")
            .field("threads", &self.threads)
            .field("workers", &self.workers.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
