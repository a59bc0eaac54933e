//! Owner-affine commands: a job tagged at the type level with the pool that
//! may run it, so CPU work cannot reach the I/O pool or I/O work the CPU
//! pool.
//!
//! This module owns the [`Cpu`] / [`Io`] markers, [`OwnerCommand`] and the
//! [`Full`] give-back. It never runs a command on its own: pools call
//! [`OwnerCommand::run`].
//!
//! # Invariants
//! 1. An `OwnerCommand<Cpu>` only type-checks where CPU commands are
//!    accepted, and `OwnerCommand<Io>` only where I/O commands are (the
//!    `compile_fail` doc-tests on [`OwnerCommand`]).
//! 2. A refused submission gives the command back intact inside [`Full`]
//!    (`a_refused_command_comes_back_and_still_runs`).

use std::fmt;
use std::marker::PhantomData;

mod sealed {
    /// Keeps the set of pool kinds closed: only [`super::Cpu`] and
    /// [`super::Io`].
    pub trait Sealed {}
}

/// A kind of pool a command may be owned by: [`Cpu`] or [`Io`]. Sealed.
pub trait PoolKind: sealed::Sealed + Send + 'static {
    /// The kind's name, for logs and `Debug`.
    const NAME: &'static str;
}

/// Marks commands for the stage CPU pool: parsing, analysis, artifacts.
/// Never constructed; only a type tag.
#[derive(Debug)]
pub enum Cpu {}

/// Marks commands for the I/O pool: reading bytes, nothing else.
/// Never constructed; only a type tag.
#[derive(Debug)]
pub enum Io {}

impl sealed::Sealed for Cpu {}
impl sealed::Sealed for Io {}

impl PoolKind for Cpu {
    const NAME: &'static str = "cpu";
}

impl PoolKind for Io {
    const NAME: &'static str = "io";
}

/// A boxed `FnOnce() + Send + 'static` job owned by one kind of pool.
///
/// The pool kind is part of the type, so a command built for one pool does
/// not compile where the other pool takes it:
///
/// ```compile_fail,E0308
/// use verter_pools::{Cpu, OwnerCommand, SchedulerIoPool};
/// let io_pool = SchedulerIoPool::new(1, 1).unwrap();
/// // CPU work handed to the I/O pool: a type error.
/// let _ = io_pool.try_submit(OwnerCommand::<Cpu>::new(|| {}));
/// ```
///
/// ```compile_fail,E0308
/// use verter_pools::{Io, OwnerCommand, SchedulerCpuPool};
/// let cpu_pool = SchedulerCpuPool::new(1, 1).unwrap();
/// // I/O work handed to the CPU pool: a type error.
/// let _ = cpu_pool.try_submit(OwnerCommand::<Io>::new(|| {}));
/// ```
///
/// The same calls with matching kinds compile and run:
///
/// ```
/// use verter_pools::{Cpu, Io, OwnerCommand, SchedulerCpuPool, SchedulerIoPool};
/// let io_pool = SchedulerIoPool::new(1, 1).unwrap();
/// io_pool.try_submit(OwnerCommand::<Io>::new(|| {})).unwrap();
/// let cpu_pool = SchedulerCpuPool::new(1, 1).unwrap();
/// cpu_pool.try_submit(OwnerCommand::<Cpu>::new(|| {})).unwrap();
/// ```
#[must_use = "a command does nothing until a pool runs it"]
pub struct OwnerCommand<P: PoolKind> {
    job: Box<dyn FnOnce() + Send + 'static>,
    _pool: PhantomData<fn() -> P>,
}

impl<P: PoolKind> OwnerCommand<P> {
    /// Wraps `job` as a command for pool kind `P`, e.g.
    /// `OwnerCommand::<Cpu>::new(|| parse())`.
    pub fn new<F>(job: F) -> Self
    where
        F: FnOnce() + Send + 'static,
    {
        Self {
            job: Box::new(job),
            _pool: PhantomData,
        }
    }

    /// Runs the job on the current thread. Pools call this on their workers;
    /// a caller that got the command back in [`Full`] may run it itself.
    pub fn run(self) {
        (self.job)();
    }
}

impl<P: PoolKind> fmt::Debug for OwnerCommand<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnerCommand")
            .field("pool", &P::NAME)
            .finish_non_exhaustive()
    }
}

/// A pool refused a submission because it is saturated; the command comes
/// back unrun so the caller decides what to do with it (retry later, run it
/// inline, requeue).
#[derive(Debug, thiserror::Error)]
#[error("the pool is saturated: no permit or queue slot is free; the command was given back")]
pub struct Full<T>(pub T);

impl<T> Full<T> {
    /// The refused command.
    pub fn into_inner(self) -> T {
        self.0
    }
}

#[cfg(test)]
mod tests;
