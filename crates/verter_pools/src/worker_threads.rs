//! The threads behind every pool: spawning named workers registered with
//! their [`CallerKind`], and joining them so that no worker outlives its pool.
//!
//! This module owns the join handles and the crate-private test seam
//! ([`ThreadHooks`]). It never runs commands and never decides when a pool
//! shuts down; pools drop or drain their work source, then join here.
//!
//! # Invariants
//! 1. Every worker body runs with its pool's [`CallerKind`] registered for
//!    its whole life (`callers_see_their_pools_kind`, integration).
//! 2. [`WorkerThreads::join_all`] returns only after every worker it spawned
//!    has finished, unless it runs on one of those workers, where joining
//!    would wait on itself; then the workers are detached and finish on
//!    their own (`no_cpu_worker_outlives_its_pool`,
//!    `no_io_worker_outlives_its_pool`, `no_host_worker_outlives_its_pool`).
//! 3. The exit hook runs even when a worker body unwinds
//!    (`the_exit_hook_runs_when_a_body_panics`).

use std::fmt;
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};

use crate::caller_kind::CallerKind;
use crate::error::PoolError;

/// A callback run on a worker thread at start or exit.
pub(crate) type ThreadHook = Arc<dyn Fn() + Send + Sync + 'static>;

/// Test seam: callbacks run on every worker of a pool, first thing in its
/// body and last thing before it ends (also when the body unwinds). A no-op
/// in production.
#[derive(Clone, Default)]
pub(crate) struct ThreadHooks {
    pub(crate) on_start: Option<ThreadHook>,
    pub(crate) on_exit: Option<ThreadHook>,
}

impl fmt::Debug for ThreadHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHooks")
            .field("on_start", &self.on_start.is_some())
            .field("on_exit", &self.on_exit.is_some())
            .finish()
    }
}

/// Runs the exit hook when dropped, so it also runs during unwinding.
struct ExitHook(Option<ThreadHook>);

impl Drop for ExitHook {
    fn drop(&mut self) {
        if let Some(hook) = &self.0 {
            hook();
        }
    }
}

/// What every worker of one pool shares.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSpec {
    /// The pool's short name (`"cpu"`, `"io"`, `"host"`), for errors and logs.
    pub(crate) pool: &'static str,
    /// The kind registered on every worker.
    pub(crate) kind: CallerKind,
    /// Test seam; default in production.
    pub(crate) hooks: ThreadHooks,
}

impl WorkerSpec {
    /// The thread name of worker `index`: `verter-<pool>-<index>`.
    pub(crate) fn thread_name(&self, index: usize) -> String {
        format!("verter-{}-{index}", self.pool)
    }
}

/// The workers one pool spawned. Joins them when dropped.
#[derive(Debug)]
pub(crate) struct WorkerThreads {
    pool: &'static str,
    handles: Vec<JoinHandle<()>>,
    ids: Vec<ThreadId>,
}

impl WorkerThreads {
    pub(crate) fn new(pool: &'static str) -> Self {
        Self {
            pool,
            handles: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// Spawns worker `index` running `body` with the spec's kind registered
    /// and its hooks around it.
    pub(crate) fn spawn<F>(
        &mut self,
        spec: &WorkerSpec,
        index: usize,
        stack_size: Option<usize>,
        body: F,
    ) -> Result<(), PoolError>
    where
        F: FnOnce() + Send + 'static,
    {
        let mut builder = thread::Builder::new().name(spec.thread_name(index));
        if let Some(stack_size) = stack_size {
            builder = builder.stack_size(stack_size);
        }
        let kind = spec.kind;
        let hooks = spec.hooks.clone();
        let handle = builder
            .spawn(move || {
                let _kind = CallerKind::enter(kind);
                let _exit = ExitHook(hooks.on_exit);
                if let Some(on_start) = &hooks.on_start {
                    on_start();
                }
                body();
            })
            .map_err(|source| PoolError::Spawn {
                pool: spec.pool,
                index,
                source,
            })?;
        self.ids.push(handle.thread().id());
        self.handles.push(handle);
        Ok(())
    }

    /// The number of workers spawned and not yet joined.
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Joins every worker. The caller must first have told them to stop
    /// (dropped the rayon pool or closed the channel).
    ///
    /// On one of these very workers, joining would wait on itself: the
    /// workers are detached instead and finish once their work source is
    /// drained, and a warning is logged.
    pub(crate) fn join_all(&mut self) {
        let me = thread::current().id();
        if self.ids.contains(&me) {
            tracing::warn!(
                pool = self.pool,
                "pool dropped on one of its own workers; its threads are detached"
            );
            self.handles.clear();
            self.ids.clear();
            return;
        }
        for handle in self.handles.drain(..) {
            if handle.join().is_err() {
                // Worker bodies catch command panics; only a panicking hook
                // or a bug in a pool's loop gets here.
                tracing::error!(pool = self.pool, "a pool worker thread panicked");
            }
        }
        self.ids.clear();
    }
}

impl Drop for WorkerThreads {
    fn drop(&mut self) {
        self.join_all();
    }
}

/// Builds a rayon pool of `threads` workers spawned through
/// [`WorkerThreads`], so they carry the spec's kind and can be joined.
pub(crate) fn build_rayon_pool(
    spec: &WorkerSpec,
    threads: usize,
    stack_size: Option<usize>,
) -> Result<(rayon::ThreadPool, WorkerThreads), PoolError> {
    if threads == 0 {
        return Err(PoolError::ZeroThreads { pool: spec.pool });
    }
    let mut workers = WorkerThreads::new(spec.pool);
    let mut spawn_error = None;
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .spawn_handler(|thread| {
            let index = thread.index();
            match workers.spawn(spec, index, stack_size, move || thread.run()) {
                Ok(()) => Ok(()),
                Err(error) => {
                    let message = error.to_string();
                    spawn_error = Some(error);
                    Err(std::io::Error::other(message))
                }
            }
        })
        .build();
    match built {
        Ok(pool) => Ok((pool, workers)),
        // rayon has told the workers it started to terminate; dropping
        // `workers` joins them.
        Err(source) => Err(spawn_error.unwrap_or_else(|| PoolError::Build {
            pool: spec.pool,
            source: Box::new(source),
        })),
    }
}

#[cfg(test)]
mod tests;
