//! [`RemoteExecutor`]: the one runtime thread, the entry points that put
//! actions on it ([`RemoteExecutor::submit`], [`RemoteExecutor::run`],
//! [`RemoteExecutor::run_blocking`]), and [`RemoteJob`], the handle that
//! cancels one. Only `connect`, `run_blocking` and dropping the last
//! executor clone (which joins the thread) block their caller.
//!
//! # Invariants
//! 1. Each executor owns exactly one thread, `verter-remote`, driving a
//!    current-thread Tokio runtime; every call and task of the executor runs
//!    there. The thread ends when the last clone of the executor drops
//!    (joined, unless that drop happens on the thread itself).
//! 2. A submitted job's `on_done` runs exactly once, on the runtime thread:
//!    with the result, with `Cancelled` after [`RemoteJob::cancel`], or with
//!    `Cancelled` when the runtime shuts down under it (the task's
//!    [`Answer`] guard answers when the task is dropped).
//! 3. A cancelled job whose operation is known (or becomes known within
//!    `rpc_timeout` of the cancel, when `Execute` was already sent) sends
//!    `CancelOperation`: dropping an `Execute` stream does not stop the
//!    server's work.

use std::cell::Cell;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::action::run_action;
use crate::config::RemoteConfig;
use crate::error::RemoteError;
use crate::execute::cancel_operation;
use crate::job::JobState;
use crate::rpc::Connection;
use crate::spec::{ActionOutcome, ActionSpec};
use crate::stats::{Counters, RemoteStats};

/// The runtime thread's name.
const THREAD_NAME: &str = "verter-remote";

thread_local! {
    /// Set on every executor's runtime thread, where blocking on a job
    /// would deadlock.
    static ON_RUNTIME_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// A client of one REAPI server, running actions on its own runtime thread.
///
/// Cheap to clone; the clones share the thread and the connection, and the
/// thread stops when the last clone drops: jobs still running are answered
/// `Cancelled`, and the drop waits for that (their `on_done` callbacks run
/// on the runtime thread meanwhile). A clone captured by a pending job's
/// `on_done` keeps the executor alive until that job is answered. See the
/// [crate documentation](crate) for the flow of an action.
#[derive(Debug, Clone)]
pub struct RemoteExecutor {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Shared with every task; the tasks keep it alive while they drain.
    connection: Arc<Connection>,
    /// Spawns onto the runtime thread.
    handle: Handle,
    /// Dropping it stops the runtime thread.
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        drop(self.shutdown.take());
        if let Some(thread) = self.thread.take() {
            // The last clone dropped on the runtime thread itself (in an
            // `on_done`): the thread cannot join itself, and ends on its
            // own once the current task returns.
            if !ON_RUNTIME_THREAD.get() && thread.join().is_err() {
                tracing::warn!("the verter-remote runtime thread panicked");
            }
        }
    }
}

impl RemoteExecutor {
    /// Starts the runtime thread and connects to `config.endpoint`,
    /// blocking the caller until connected: the connection is made eagerly,
    /// so a wrong endpoint fails here and not in the first action. Also
    /// reads the server's capabilities for its batch limit.
    ///
    /// Must not be called from inside an async task (it blocks).
    ///
    /// # Errors
    /// [`RemoteError::InvalidConfig`] for settings that cannot work,
    /// [`RemoteError::Unreachable`] when no connection is made within
    /// `connect_timeout`, [`RemoteError::Unavailable`] or
    /// [`RemoteError::Timeout`] when `GetCapabilities` keeps failing, and
    /// [`RemoteError::Runtime`] when the thread cannot start.
    pub fn connect(config: RemoteConfig) -> Result<Self, RemoteError> {
        config.validate()?;
        let (ready_sender, ready) = std::sync::mpsc::sync_channel(1);
        let (shutdown, shutdown_requested) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || runtime_thread(config, ready_sender, shutdown_requested))
            .map_err(|err| RemoteError::Runtime {
                message: err.to_string(),
            })?;
        match ready.recv() {
            Ok(Ok((connection, handle))) => Ok(Self {
                inner: Arc::new(Inner {
                    connection,
                    handle,
                    shutdown: Some(shutdown),
                    thread: Some(thread),
                }),
            }),
            Ok(Err(err)) => {
                let _ = thread.join();
                Err(err)
            }
            Err(_) => {
                let _ = thread.join();
                Err(RemoteError::Runtime {
                    message: "the runtime thread ended before it connected".to_owned(),
                })
            }
        }
    }

    /// Starts `spec` on the runtime thread and returns at once; `on_done`
    /// runs exactly once, on the runtime thread, with the outcome or the
    /// error ([`RemoteError::Cancelled`] after [`RemoteJob::cancel`] or when
    /// the executor shuts down first). `on_done` must be short and must not
    /// block: it holds up every other job.
    ///
    /// A non-zero exit code arrives as `Ok`; see [`ActionOutcome::success`].
    pub fn submit<F>(&self, spec: ActionSpec, on_done: F) -> RemoteJob
    where
        F: FnOnce(Result<ActionOutcome, RemoteError>) + Send + 'static,
    {
        let job = Arc::new(JobState::default());
        let answer = Answer {
            on_done: Some(on_done),
            job: Arc::clone(&job),
            connection: Arc::clone(&self.inner.connection),
        };
        let connection = Arc::clone(&self.inner.connection);
        // Detached: the answer guard, not the join handle, reports the end.
        drop(
            self.inner
                .handle
                .spawn(drive(connection, spec, Arc::clone(&job), answer)),
        );
        RemoteJob { job }
    }

    /// Runs `spec` and resolves to its outcome. The returned future may be
    /// polled by any executor (it only waits for the runtime thread's
    /// answer); the action starts when it is first polled, and dropping it
    /// before it resolves cancels the job as [`RemoteJob::cancel`] does.
    ///
    /// # Errors
    /// Any [`RemoteError`] but `BlockingOnRuntimeThread`; a non-zero exit
    /// code is an `Ok` outcome ([`ActionOutcome::success`] converts it).
    pub fn run(
        &self,
        spec: ActionSpec,
    ) -> impl Future<Output = Result<ActionOutcome, RemoteError>> + Send + 'static {
        let executor = self.clone();
        async move {
            let (sender, receiver) = oneshot::channel();
            let job = executor.submit(spec, move |result| {
                let _ = sender.send(result);
            });
            let _cancel_if_dropped = CancelOnDrop(job);
            receiver.await.unwrap_or(Err(RemoteError::Cancelled))
        }
    }

    /// Runs `spec`, blocking the calling thread until it finishes.
    ///
    /// # Errors
    /// [`RemoteError::BlockingOnRuntimeThread`] when called on a
    /// `verter-remote` runtime thread (from an `on_done` callback), where
    /// it would deadlock; otherwise as [`RemoteExecutor::run`].
    pub fn run_blocking(&self, spec: ActionSpec) -> Result<ActionOutcome, RemoteError> {
        if ON_RUNTIME_THREAD.get() {
            return Err(RemoteError::BlockingOnRuntimeThread);
        }
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let _job = self.submit(spec, move |result| {
            let _ = sender.send(result);
        });
        receiver.recv().unwrap_or(Err(RemoteError::Cancelled))
    }

    /// What this executor (and its clones) did so far.
    pub fn stats(&self) -> RemoteStats {
        self.inner.connection.counters.snapshot()
    }

    /// The batch limit in force: the configured one, or the server's if
    /// smaller.
    pub fn batch_limit_bytes(&self) -> usize {
        self.inner.connection.batch_limit
    }

    /// The configuration the executor was connected with.
    pub fn config(&self) -> &RemoteConfig {
        &self.inner.connection.config
    }
}

/// A handle to one submitted action. Cloning it gives another handle to the
/// same job; dropping it does not cancel the job.
#[derive(Debug, Clone)]
pub struct RemoteJob {
    job: Arc<JobState>,
}

impl RemoteJob {
    /// Cancels the job, from any thread; idempotent, and a no-op once the
    /// job has finished. The local task stops and `on_done` gets
    /// [`RemoteError::Cancelled`] promptly; then, if the server named the
    /// operation (or names it within `rpc_timeout`, when `Execute` was
    /// already sent), `CancelOperation` is sent for it, since dropping the
    /// `Execute` stream alone does not stop the server's work. Whether the
    /// server honours it is up to the server.
    pub fn cancel(&self) {
        self.job.cancel();
    }

    /// The server's name for the job's execution, once an `Execute` stream
    /// has named it.
    pub fn operation_name(&self) -> Option<String> {
        self.job.operation_name()
    }

    /// Whether `on_done` has been called (it may still be running).
    pub fn is_finished(&self) -> bool {
        self.job.is_finished()
    }
}

// Handles are shared across threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RemoteExecutor>();
    assert_send_sync::<RemoteJob>();
};

/// Cancels its job when dropped (a dropped [`RemoteExecutor::run`] future).
struct CancelOnDrop(RemoteJob);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The body of the runtime thread: connect, report, then serve until the
/// last executor clone drops.
fn runtime_thread(
    config: RemoteConfig,
    ready: std::sync::mpsc::SyncSender<Result<(Arc<Connection>, Handle), RemoteError>>,
    shutdown_requested: oneshot::Receiver<()>,
) {
    ON_RUNTIME_THREAD.set(true);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = ready.send(Err(RemoteError::Runtime {
                message: err.to_string(),
            }));
            return;
        }
    };
    runtime.block_on(async move {
        match Connection::connect(config).await {
            Err(err) => {
                let _ = ready.send(Err(err));
            }
            Ok(connection) => {
                let _ = ready.send(Ok((Arc::new(connection), Handle::current())));
                // Sent or dropped: either way the last executor is gone.
                let _ = shutdown_requested.await;
            }
        }
    });
    // Dropping the runtime drops every task still in flight; each one's
    // `Answer` guard calls its `on_done` with `Cancelled`.
    drop(runtime);
}

/// One job's task: runs the action, races it against a cancel and the
/// whole-action deadline, answers, and cancels the server's operation when
/// the job was cancelled or timed out.
async fn drive<F>(
    connection: Arc<Connection>,
    spec: ActionSpec,
    job: Arc<JobState>,
    answer: Answer<F>,
) where
    F: FnOnce(Result<ActionOutcome, RemoteError>) + Send + 'static,
{
    Counters::add(&connection.counters.actions, 1);
    let mut run = Box::pin(run_action(&connection, &spec, &job));
    let deadline = tokio::time::sleep(connection.config.execute_timeout);
    let stopped = tokio::select! {
        biased;
        () = job.cancel_requested.notified() => RemoteError::Cancelled,
        () = deadline => RemoteError::timeout("action (execute_timeout)"),
        result = &mut run => return answer.finish(result),
    };
    answer.finish(Err(stopped));
    if job.operation_name().is_none() && job.execute_sent() {
        // `Execute` is out but no message has named the operation yet:
        // keep reading the stream, for a bounded time, so that the name
        // arrives and the server's work can be cancelled.
        let ran_to_completion = tokio::select! {
            _ = &mut run => true,
            () = job.name_known.notified() => false,
            () = tokio::time::sleep(connection.config.rpc_timeout) => false,
        };
        if ran_to_completion {
            return;
        }
    }
    drop(run);
    if let Some(name) = job.operation_name() {
        tracing::debug!(operation = name, "cancelling the server's operation");
        cancel_operation(&connection, name).await;
    }
}

/// Calls `on_done` exactly once: with the result via [`Answer::finish`], or
/// with `Cancelled` when dropped unanswered (the task was dropped because
/// the runtime shut down).
struct Answer<F>
where
    F: FnOnce(Result<ActionOutcome, RemoteError>),
{
    on_done: Option<F>,
    job: Arc<JobState>,
    connection: Arc<Connection>,
}

impl<F> Answer<F>
where
    F: FnOnce(Result<ActionOutcome, RemoteError>),
{
    fn finish(mut self, result: Result<ActionOutcome, RemoteError>) {
        self.deliver(result);
    }

    fn deliver(&mut self, result: Result<ActionOutcome, RemoteError>) {
        let Some(on_done) = self.on_done.take() else {
            return;
        };
        if let Err(err) = &result {
            Counters::add(&self.connection.counters.failed, 1);
            tracing::debug!(%err, "remote action failed");
        }
        self.job.mark_finished();
        on_done(result);
    }
}

impl<F> Drop for Answer<F>
where
    F: FnOnce(Result<ActionOutcome, RemoteError>),
{
    fn drop(&mut self) {
        self.deliver(Err(RemoteError::Cancelled));
    }
}
