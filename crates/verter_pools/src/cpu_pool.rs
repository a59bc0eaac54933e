//! The stage CPU pool: a rayon pool whose workers are registered
//! [`CallerKind::CpuWorker`], fed through a permit-gated `try_submit` so it
//! never queues without bound.
//!
//! This module owns the rayon pool, its transport semaphore and the panic
//! count. It never waits for a permit (a saturated pool gives the command
//! back), never decides what runs next (the scheduler does) and never lets a
//! command's panic reach rayon.
//!
//! # Invariants
//! 1. At most [`SchedulerCpuPool::capacity`] commands are submitted and not
//!    yet finished: a permit is taken before spawning and `Full` gives the
//!    command back otherwise (`try_submit_gives_the_command_back_when_saturated`).
//! 2. A command's permit is released when its body returns or panics, after
//!    the panic is counted (`permits_return_after_panicking_tasks`).
//! 3. A panicking command is caught, counted and logged; the pool keeps
//!    running (`the_pool_keeps_running_after_a_panic`).
//! 4. Dropping the pool runs every submitted command, then joins every
//!    worker (`no_cpu_worker_outlives_its_pool`).

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use crate::caller_kind::CallerKind;
use crate::command::{Cpu, Full, OwnerCommand};
use crate::error::PoolError;
use crate::semaphore::CpuConcurrencySemaphore;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::worker_threads::{ThreadHooks, WorkerSpec, WorkerThreads, build_rayon_pool};

/// The pool that runs stage work: parsing, analysis, artifacts.
///
/// Its workers are [`CallerKind::CpuWorker`]: when one waits for another
/// piece of work it drives the scheduler (`wait_or_drive`) instead of
/// parking, so a wait can never starve the pool it runs on.
///
/// Dropping the pool runs every command it accepted, then joins every
/// worker; a command that never returns therefore keeps the drop waiting.
pub struct SchedulerCpuPool {
    /// Declared before `workers` on purpose: fields drop in order, and the
    /// rayon pool must be told to terminate before its threads are joined.
    pool: rayon::ThreadPool,
    /// Joins the rayon workers when dropped.
    workers: WorkerThreads,
    /// One permit per command between `try_submit` and the end of its body.
    transport: Arc<CpuConcurrencySemaphore>,
    /// Commands that panicked. Written by workers, read by anyone.
    panicked: Arc<AtomicU64>,
    threads: usize,
}

impl SchedulerCpuPool {
    /// A pool of `threads` workers named `verter-cpu-N` that accepts up to
    /// `max(transport_capacity, threads * 4)` commands in flight (queued or
    /// running).
    ///
    /// # Errors
    /// [`PoolError::ZeroThreads`] for zero threads, and
    /// [`PoolError::Spawn`] / [`PoolError::Build`] when the workers cannot
    /// be started.
    pub fn new(threads: usize, transport_capacity: usize) -> Result<Self, PoolError> {
        Self::with_stack_size(threads, transport_capacity, None)
    }

    /// [`Self::new`] with workers of `stack_size` bytes of stack (`None`:
    /// the standard library's default). Stage work that recurses deeply —
    /// a parser — needs a stack sized for the deepest input it accepts.
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn with_stack_size(
        threads: usize,
        transport_capacity: usize,
        stack_size: Option<usize>,
    ) -> Result<Self, PoolError> {
        Self::with_hooks(
            threads,
            transport_capacity,
            stack_size,
            ThreadHooks::default(),
        )
    }

    pub(crate) fn with_hooks(
        threads: usize,
        transport_capacity: usize,
        stack_size: Option<usize>,
        hooks: ThreadHooks,
    ) -> Result<Self, PoolError> {
        let spec = WorkerSpec {
            pool: "cpu",
            kind: CallerKind::CpuWorker,
            hooks,
        };
        let (pool, workers) = build_rayon_pool(&spec, threads, stack_size)?;
        let capacity = transport_capacity.max(threads.saturating_mul(4));
        Ok(Self {
            pool,
            workers,
            transport: Arc::new(CpuConcurrencySemaphore::new(capacity)),
            panicked: Arc::new(AtomicU64::new(0)),
            threads,
        })
    }

    /// Submits `command` if a transport permit is free, without blocking.
    ///
    /// # Errors
    /// [`Full`] with the command, unrun, when `capacity()` commands are
    /// already in flight.
    pub fn try_submit(&self, command: OwnerCommand<Cpu>) -> Result<(), Full<OwnerCommand<Cpu>>> {
        let Some(permit) = self.transport.try_acquire_owned() else {
            return Err(Full(command));
        };
        let panicked = Arc::clone(&self.panicked);
        self.pool.spawn(move || {
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| command.run())) {
                panicked.fetch_add(1, Ordering::SeqCst);
                tracing::error!(
                    panic = panic_message(payload.as_ref()),
                    "a CPU pool command panicked; the pool keeps running"
                );
            }
            // Released only now, after the panic is counted: whoever takes
            // this permit next sees the count.
            drop(permit);
        });
        Ok(())
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// How many commands may be in flight (queued or running) at once.
    pub fn capacity(&self) -> usize {
        self.transport.capacity()
    }

    /// How many commands are in flight now. A snapshot.
    pub fn in_flight(&self) -> usize {
        self.transport.capacity() - self.transport.available()
    }

    /// How many commands have panicked since the pool was built.
    pub fn panicked_tasks(&self) -> u64 {
        self.panicked.load(Ordering::SeqCst)
    }

    /// The transport semaphore, for tests that wait for every permit.
    #[cfg(all(test, not(verter_loom)))]
    pub(crate) fn transport(&self) -> &Arc<CpuConcurrencySemaphore> {
        &self.transport
    }
}

impl fmt::Debug for SchedulerCpuPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerCpuPool")
            .field("threads", &self.threads)
            .field("capacity", &self.capacity())
            .field("in_flight", &self.in_flight())
            .field("panicked_tasks", &self.panicked_tasks())
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// The text of a panic payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        message
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message
    } else {
        "<non-string panic payload>"
    }
}

#[cfg(test)]
mod tests;
