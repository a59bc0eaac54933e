//! The I/O pool: named threads registered [`CallerKind::IoWorker`] that take
//! [`OwnerCommand<Io>`] from one bounded channel.
//!
//! This module owns the channel and its worker threads. It only ever runs
//! I/O commands (reading bytes): the type of `try_submit` refuses CPU
//! commands at compile time. It never blocks a submitter: a full queue gives
//! the command back.
//!
//! # Shutdown protocol
//! 1. [`SchedulerIoPool::shutdown`] (or `Drop`) drops the only sender, under
//!    the sender lock, so no submission can race past it.
//! 2. Each worker keeps receiving until the channel is empty and closed, so
//!    everything queued before step 1 runs.
//! 3. The workers are joined; when `shutdown` returns no worker is alive.
//!
//! # Invariants
//! 1. At most `capacity` commands wait in the queue; a submission beyond it
//!    gets its command back (`a_full_queue_gives_the_command_back`).
//! 2. A panicking command is caught and counted; its worker keeps running
//!    (`an_io_worker_survives_a_panicking_command`).
//! 3. Shutdown runs every queued command and joins every worker
//!    (`shutdown_runs_what_was_queued`, `no_io_worker_outlives_its_pool`).

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::caller_kind::CallerKind;
use crate::command::{Full, Io, OwnerCommand};
use crate::cpu_pool::panic_message;
use crate::error::PoolError;
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};
use crate::worker_threads::{ThreadHooks, WorkerSpec, WorkerThreads};

/// The pool for pure I/O: loading bytes. Parsing here is a bug, and the
/// types make it impossible to submit CPU work.
pub struct SchedulerIoPool {
    /// The only sender; `None` once shut down. Locked for each submission
    /// so that shutdown cannot interleave with one.
    sender: Mutex<Option<Sender<OwnerCommand<Io>>>>,
    /// The workers, joined by `shutdown`.
    workers: Mutex<WorkerThreads>,
    /// Commands that panicked. Written by workers, read by anyone.
    panicked: Arc<AtomicU64>,
    threads: usize,
    capacity: usize,
}

impl SchedulerIoPool {
    /// A pool of `threads` workers named `verter-io-N` with a queue of
    /// `queue_capacity` commands (at least one).
    ///
    /// # Errors
    /// [`PoolError::ZeroThreads`] for zero threads, [`PoolError::Spawn`]
    /// when a worker cannot be started (the ones already started are joined).
    pub fn new(threads: usize, queue_capacity: usize) -> Result<Self, PoolError> {
        Self::with_hooks(threads, queue_capacity, ThreadHooks::default())
    }

    pub(crate) fn with_hooks(
        threads: usize,
        queue_capacity: usize,
        hooks: ThreadHooks,
    ) -> Result<Self, PoolError> {
        if threads == 0 {
            return Err(PoolError::ZeroThreads { pool: "io" });
        }
        let capacity = queue_capacity.max(1);
        let (sender, receiver) = crossbeam_channel::bounded(capacity);
        let panicked = Arc::new(AtomicU64::new(0));
        let spec = WorkerSpec {
            pool: "io",
            kind: CallerKind::IoWorker,
            hooks,
        };
        let mut workers = WorkerThreads::new(spec.pool);
        for index in 0..threads {
            let receiver = receiver.clone();
            let panicked = Arc::clone(&panicked);
            // On error, `sender` and `workers` drop here: the channel closes
            // and the workers already started are joined.
            workers.spawn(&spec, index, None, move || {
                work_until_closed(&receiver, &panicked);
            })?;
        }
        Ok(Self {
            sender: Mutex::new(Some(sender)),
            workers: Mutex::new(workers),
            panicked,
            threads,
            capacity,
        })
    }

    /// Queues `command` if the queue has room, without blocking.
    ///
    /// # Errors
    /// [`Full`] with the command, unrun, when the queue holds `capacity()`
    /// commands.
    ///
    /// # Panics
    /// After [`SchedulerIoPool::shutdown`]: a shut-down pool accepts nothing;
    /// stop submitting before shutting the pool down.
    pub fn try_submit(&self, command: OwnerCommand<Io>) -> Result<(), Full<OwnerCommand<Io>>> {
        let sender = self.sender.lock();
        let Some(sender) = sender.as_ref() else {
            panic!(
                "SchedulerIoPool::try_submit after shutdown: the pool accepts nothing once \
                 shut down; stop submitting before calling shutdown"
            );
        };
        match sender.try_send(command) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(command)) => Err(Full(command)),
            Err(TrySendError::Disconnected(_)) => {
                unreachable!("the workers hold the receiver until the sender is dropped")
            }
        }
    }

    /// Closes the queue, lets the workers run everything already queued, and
    /// joins them. Idempotent; `Drop` calls it.
    ///
    /// Called on one of this pool's own workers, it cannot join that worker:
    /// the workers are then detached and finish once the queue is drained.
    pub fn shutdown(&self) {
        // Dropping the only sender closes the channel once it is drained.
        drop(self.sender.lock().take());
        self.workers.lock().join_all();
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// How many commands the queue holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many commands have panicked since the pool was built.
    pub fn panicked_tasks(&self) -> u64 {
        self.panicked.load(Ordering::SeqCst)
    }
}

impl Drop for SchedulerIoPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for SchedulerIoPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerIoPool")
            .field("threads", &self.threads)
            .field("capacity", &self.capacity)
            .field("panicked_tasks", &self.panicked_tasks())
            .finish_non_exhaustive()
    }
}

/// A worker's loop: run commands until the channel is closed and empty.
fn work_until_closed(receiver: &Receiver<OwnerCommand<Io>>, panicked: &AtomicU64) {
    for command in receiver.iter() {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| command.run())) {
            panicked.fetch_add(1, Ordering::SeqCst);
            tracing::error!(
                panic = panic_message(payload.as_ref()),
                "an I/O pool command panicked; the worker keeps running"
            );
        }
    }
}

#[cfg(test)]
mod tests;
