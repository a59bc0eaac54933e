//! The execution substrate: the stage CPU pool, the I/O pool, the host's
//! coordinator pool, the CPU concurrency semaphore, the per-thread
//! [`CallerKind`] registration, the one waiting primitive,
//! [`wait_or_drive_with`], and the [`ProgressSignal`] that wakes
//! its idle waiters.
//!
//! This crate names no other verter crate. It never inspects the work it
//! runs: commands arrive as owner-affine closures ([`OwnerCommand`]), and the
//! scheduler that drives cooperative waits is reached only through the
//! [`PumpDriver`] trait.
//!
//! # The pieces
//! - [`CpuConcurrencySemaphore`] and its RAII permits
//!   ([`CpuConcurrencyPermit`], [`OwnedCpuConcurrencyPermit`]).
//! - [`CallerKind`]: which kind of thread is running, registered by each
//!   pool's workers through [`CallerKind::enter`].
//! - [`OwnerCommand<Cpu>`] / [`OwnerCommand<Io>`]: jobs typed by the pool
//!   that may run them; a saturated pool gives them back in [`Full`].
//! - [`SchedulerCpuPool`] (stage work, workers drive while waiting),
//!   [`SchedulerIoPool`] (reading bytes only), [`HostCpuPool`] (the host's
//!   coordinator, workers park).
//! - [`WaitCell`], [`PumpDriver`], [`wait_or_drive_with`]: how anyone waits.
//! - [`ProgressSignal`]: the event count a driver raises when an idle pump
//!   might now make progress, so idle driving waiters wake on progress
//!   instead of on a clock.
//!
//! # Deadlock isolation
//! No worker ever waits on a job that only its own pool could run: stage
//! workers drive the scheduler while they wait, coordinator workers park
//! but belong to a separate pool that stage work never needs, and I/O
//! workers run only I/O commands, which never wait on CPU work.
//!
//! # Shutdown
//! Every pool joins its threads when dropped (after running the work it had
//! accepted); no worker outlives its pool. The one exception is a pool
//! dropped on one of its own workers, which cannot join itself: its threads
//! are detached and finish once their work is drained.

mod caller_kind;
mod command;
mod cpu_pool;
mod drive;
mod error;
mod host_pool;
mod io_pool;
mod lanes;
mod progress;
mod semaphore;
mod sync;
mod wait_cell;
mod worker_threads;

#[cfg(all(test, not(verter_loom)))]
mod test_support;

pub use caller_kind::{CallerKind, CallerKindGuard};
pub use command::{Cpu, Full, Io, OwnerCommand, PoolKind};
pub use cpu_pool::SchedulerCpuPool;
pub use drive::{
    IDLE_PUMP_BACKSTOP, PumpDriver, PumpOutcome, wait_or_drive, wait_or_drive_with,
    wait_or_drive_with_backstop,
};
pub use error::PoolError;
pub use host_pool::{HOST_WORKER_STACK_SIZE, HostCpuPool};
pub use io_pool::SchedulerIoPool;
pub use lanes::{Lane, WriteLanes};
/// The event count that wakes idle driving waiters; see its module docs for
/// the protocol and why no notify is lost.
pub use progress::ProgressSignal;
pub use semaphore::{CpuConcurrencyPermit, CpuConcurrencySemaphore, OwnedCpuConcurrencyPermit};
pub use wait_cell::WaitCell;

/// Public handles are shareable across threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CpuConcurrencySemaphore>();
    assert_send_sync::<OwnedCpuConcurrencyPermit>();
    assert_send_sync::<SchedulerCpuPool>();
    assert_send_sync::<SchedulerIoPool>();
    assert_send_sync::<HostCpuPool>();
    assert_send_sync::<WaitCell<u64>>();
    assert_send_sync::<ProgressSignal>();
    assert_send_sync::<PoolError>();
};
