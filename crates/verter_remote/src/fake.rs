//! An in-process fake REAPI server, for tests, examples and benchmarks
//! (the `fake` feature). It is a fake: it keeps the CAS and the action
//! cache in memory and "executes" an action by calling a runner closure
//! (by default [`interpret`], a tiny built-in interpreter), never a real
//! process.
//!
//! [`FakeServer::start`] binds `127.0.0.1:0` and serves Capabilities, the
//! CAS (`FindMissingBlobs`, `BatchUpdateBlobs`, `BatchReadBlobs`),
//! ByteStream (`Read`, `Write`), the ActionCache, Execution (`Execute`,
//! `WaitExecution`) and Operations (`CancelOperation`) on its own thread and
//! Tokio runtime; every other method answers `UNIMPLEMENTED`. Dropping the
//! server stops it.
//!
//! # What tests can do with it
//! - Read the calls it received, in order ([`FakeServer::calls`]), or wait
//!   for one ([`FakeServer::wait_for_call`]).
//! - Inject faults while it runs: fail the next calls of a method with
//!   `UNAVAILABLE` ([`FakeServer::fail_next`]), end `Execute` streams after
//!   their first message ([`FakeServer::drop_execute_streams`]), lose blobs
//!   ([`FakeServer::lose_blob`], [`FakeServer::discard_uploads`],
//!   [`FakeServer::lose_outputs`]), lie in `FindMissingBlobs` or
//!   `GetActionResult` ([`FakeServer::lie_find_missing`],
//!   [`FakeServer::miss_action_cache`]).
//! - Hold executions until released or cancelled
//!   ([`FakeServer::hold_executions`], [`FakeServer::wait_for_held`],
//!   [`FakeServer::release_held`]): handshakes, never sleeps.
//!
//! # Execution
//! `Execute` answers at once when inputs are missing (`FAILED_PRECONDITION`
//! naming them, as REAPI asks) or, unless `skip_cache_lookup`, when the
//! action cache has the action (`cached_result`). Otherwise it starts an
//! operation (`operations/N`): a task that waits while executions are held,
//! calls the runner, waits the run's `delay` (or the action's timeout, then
//! answers `DEADLINE_EXCEEDED`), stores stdout, stderr and the declared
//! outputs in the CAS, and writes the result to the action cache when the
//! exit code is 0 and the action is not `do_not_cache`. A
//! `CancelOperation` ends it with `CANCELLED` at any point before it
//! finishes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::longrunning::Operation;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use tokio::sync::{Notify, oneshot, watch};

use crate::digest::Digest;

mod interpreter;
mod services;

pub use bazel_remote_apis::build::bazel::remote::execution::v2::Command;
pub use interpreter::interpret;

/// How long the blocking `wait_for_*` helpers wait before they panic: a
/// watchdog for a test that would otherwise hang, not a synchronisation.
const WATCHDOG: Duration = Duration::from_secs(20);

/// What one fake execution produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeRun {
    /// The exit code.
    pub exit_code: i32,
    /// Standard output.
    pub stdout: Bytes,
    /// Standard error.
    pub stderr: Bytes,
    /// Files written, by path relative to the working directory; only the
    /// command's declared output paths are kept.
    pub outputs: BTreeMap<String, Bytes>,
    /// How long the "execution" takes on the server (cancellable).
    pub delay: Duration,
}

/// The runner the fake "executes" with: the command and the input root's
/// files (by path relative to the input root) in, a [`FakeRun`] out.
pub type FakeRunner = Arc<dyn Fn(&Command, &BTreeMap<String, Bytes>) -> FakeRun + Send + Sync>;

/// How a [`FakeServer`] behaves.
#[derive(Clone)]
pub struct FakeBehaviour {
    /// Runs each execution; [`interpret`] by default.
    pub runner: FakeRunner,
    /// Announced as `max_batch_total_size_bytes`, and enforced: a batch
    /// call over it fails with `INVALID_ARGUMENT`. 0 means no limit.
    /// Default 0.
    pub max_batch_total_size_bytes: i64,
    /// Inline stdout and stderr into results when the request asks
    /// (`inline_stdout`/`inline_stderr`); otherwise they are only in the
    /// CAS. Default false.
    pub inline_streams: bool,
}

impl FakeBehaviour {
    /// The defaults, with `runner` instead of [`interpret`].
    pub fn with_runner<F>(runner: F) -> Self
    where
        F: Fn(&Command, &BTreeMap<String, Bytes>) -> FakeRun + Send + Sync + 'static,
    {
        Self {
            runner: Arc::new(runner),
            ..Self::default()
        }
    }
}

impl Default for FakeBehaviour {
    fn default() -> Self {
        Self {
            runner: Arc::new(interpret),
            max_batch_total_size_bytes: 0,
            inline_streams: false,
        }
    }
}

impl std::fmt::Debug for FakeBehaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeBehaviour")
            .field(
                "max_batch_total_size_bytes",
                &self.max_batch_total_size_bytes,
            )
            .field("inline_streams", &self.inline_streams)
            .finish_non_exhaustive()
    }
}

/// A method the fake serves, for fault injection and counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rpc {
    /// `Capabilities.GetCapabilities`.
    GetCapabilities,
    /// `ContentAddressableStorage.FindMissingBlobs`.
    FindMissingBlobs,
    /// `ContentAddressableStorage.BatchUpdateBlobs`.
    BatchUpdateBlobs,
    /// `ContentAddressableStorage.BatchReadBlobs`.
    BatchReadBlobs,
    /// `ByteStream.Write`.
    ByteStreamWrite,
    /// `ByteStream.Read`.
    ByteStreamRead,
    /// `ActionCache.GetActionResult`.
    GetActionResult,
    /// `ActionCache.UpdateActionResult`.
    UpdateActionResult,
    /// `Execution.Execute`.
    Execute,
    /// `Execution.WaitExecution`.
    WaitExecution,
    /// `Operations.CancelOperation`.
    CancelOperation,
}

/// One call the fake received, with what tests assert on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FakeCall {
    /// A call answered with an injected `UNAVAILABLE`
    /// ([`FakeServer::fail_next`]).
    Injected {
        /// The method.
        rpc: Rpc,
    },
    /// `GetCapabilities`.
    GetCapabilities,
    /// `FindMissingBlobs`.
    FindMissingBlobs {
        /// The digests asked about.
        asked: Vec<Digest>,
        /// The digests answered missing.
        missing: Vec<Digest>,
    },
    /// `BatchUpdateBlobs`.
    BatchUpdateBlobs {
        /// The blobs sent.
        digests: Vec<Digest>,
    },
    /// `BatchReadBlobs`.
    BatchReadBlobs {
        /// The blobs asked for.
        digests: Vec<Digest>,
    },
    /// `ByteStream.Write`.
    ByteStreamWrite {
        /// The resource written.
        resource_name: String,
        /// The bytes received.
        size: u64,
    },
    /// `ByteStream.Read`.
    ByteStreamRead {
        /// The resource read.
        resource_name: String,
    },
    /// `GetActionResult`.
    GetActionResult {
        /// The action asked about.
        action: Digest,
        /// Whether a result was returned.
        hit: bool,
    },
    /// `UpdateActionResult`.
    UpdateActionResult {
        /// The action.
        action: Digest,
    },
    /// `Execute`.
    Execute {
        /// The action.
        action: Digest,
        /// `ExecutionPolicy.priority`.
        priority: i32,
        /// `ResultsCachePolicy.priority`.
        results_cache_priority: i32,
        /// `skip_cache_lookup`.
        skip_cache_lookup: bool,
        /// The operation's name.
        operation: String,
    },
    /// `WaitExecution`.
    WaitExecution {
        /// The operation.
        operation: String,
    },
    /// `CancelOperation`.
    CancelOperation {
        /// The operation.
        operation: String,
    },
}

impl FakeCall {
    /// The method called.
    pub fn rpc(&self) -> Rpc {
        match self {
            Self::Injected { rpc } => *rpc,
            Self::GetCapabilities => Rpc::GetCapabilities,
            Self::FindMissingBlobs { .. } => Rpc::FindMissingBlobs,
            Self::BatchUpdateBlobs { .. } => Rpc::BatchUpdateBlobs,
            Self::BatchReadBlobs { .. } => Rpc::BatchReadBlobs,
            Self::ByteStreamWrite { .. } => Rpc::ByteStreamWrite,
            Self::ByteStreamRead { .. } => Rpc::ByteStreamRead,
            Self::GetActionResult { .. } => Rpc::GetActionResult,
            Self::UpdateActionResult { .. } => Rpc::UpdateActionResult,
            Self::Execute { .. } => Rpc::Execute,
            Self::WaitExecution { .. } => Rpc::WaitExecution,
            Self::CancelOperation { .. } => Rpc::CancelOperation,
        }
    }
}

/// A running fake REAPI server; dropping it stops it (abruptly: open
/// streams break, held executions are dropped).
pub struct FakeServer {
    state: Arc<State>,
    endpoint: String,
    /// Dropping it stops the server's thread.
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl FakeServer {
    /// Starts a fake on `127.0.0.1` at a free port, on its own thread.
    ///
    /// # Panics
    /// If the port cannot be bound or the thread or runtime cannot start
    /// (it is a test fixture).
    pub fn start(behaviour: FakeBehaviour) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("fake REAPI server: bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("fake REAPI server: non-blocking listener");
        let address = listener
            .local_addr()
            .expect("fake REAPI server: local address");
        let state = Arc::new(State::new(behaviour));
        let (shutdown, shutdown_requested) = oneshot::channel();
        let thread_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("verter-fake-reapi".to_owned())
            .spawn(move || services::serve(thread_state, listener, shutdown_requested))
            .expect("fake REAPI server: spawn its thread");
        Self {
            state,
            endpoint: format!("http://{address}"),
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The endpoint to connect to, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Every call received so far, in order of arrival.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.state.calls.lock().clone()
    }

    /// Forgets the calls received so far.
    pub fn clear_calls(&self) {
        self.state.calls.lock().clear();
    }

    /// How many calls of `rpc` arrived (injected failures included).
    pub fn count(&self, rpc: Rpc) -> usize {
        self.state
            .calls
            .lock()
            .iter()
            .filter(|call| call.rpc() == rpc)
            .count()
    }

    /// Blocks until a call matching `matches` has arrived, and returns the
    /// first such call.
    ///
    /// # Panics
    /// If none arrives within 20 s (a watchdog).
    pub fn wait_for_call(&self, matches: impl Fn(&FakeCall) -> bool) -> FakeCall {
        let mut calls = self.state.calls.lock();
        loop {
            if let Some(call) = calls.iter().find(|call| matches(call)) {
                return call.clone();
            }
            if self
                .state
                .calls_changed
                .wait_for(&mut calls, WATCHDOG)
                .timed_out()
            {
                panic!("fake REAPI server: the awaited call never arrived; calls: {calls:?}");
            }
        }
    }

    /// Fails the next `n` calls of `rpc` with `UNAVAILABLE` (adding to any
    /// failures still pending).
    pub fn fail_next(&self, rpc: Rpc, n: u32) {
        *self.state.faults.lock().fail_next.entry(rpc).or_default() += n;
    }

    /// Ends the next `n` `Execute` streams after their first message; the
    /// executions go on, and `WaitExecution` finds them.
    pub fn drop_execute_streams(&self, n: u32) {
        self.state.faults.lock().drop_execute_streams += n;
    }

    /// Makes the next `n` `FindMissingBlobs` calls answer that nothing is
    /// missing, as a server whose index is stale would.
    pub fn lie_find_missing(&self, n: u32) {
        self.state.faults.lock().lie_find_missing += n;
    }

    /// Makes the next `n` `GetActionResult` calls answer `NOT_FOUND`
    /// (`Execute` still finds the cached result).
    pub fn miss_action_cache(&self, n: u32) {
        self.state.faults.lock().miss_action_cache += n;
    }

    /// While on, uploads are acknowledged but not stored.
    pub fn discard_uploads(&self, on: bool) {
        self.state.faults.lock().discard_uploads = on;
    }

    /// While on, executions name their outputs in the result but do not
    /// store them in the CAS.
    pub fn lose_outputs(&self, on: bool) {
        self.state.faults.lock().lose_outputs = on;
    }

    /// Removes `digest` from the CAS; whether it was there.
    pub fn lose_blob(&self, digest: &Digest) -> bool {
        self.state.cas.lock().remove(digest).is_some()
    }

    /// Whether the CAS holds `digest`.
    pub fn has_blob(&self, digest: &Digest) -> bool {
        digest.is_empty_blob() || self.state.cas.lock().contains_key(digest)
    }

    /// Whether the action cache holds a result for `action`.
    pub fn has_action_result(&self, action: &Digest) -> bool {
        self.state.action_cache.lock().contains_key(action)
    }

    /// While on, executions that start wait before running until
    /// [`release_held`](Self::release_held) or a cancel.
    pub fn hold_executions(&self, on: bool) {
        self.state.faults.lock().hold_executions = on;
    }

    /// Blocks until at least `n` executions are held, and returns the held
    /// operations' names.
    ///
    /// # Panics
    /// If fewer than `n` are held within 20 s (a watchdog).
    pub fn wait_for_held(&self, n: usize) -> Vec<String> {
        let mut held = self.state.held.lock();
        while held.len() < n {
            if self
                .state
                .held_changed
                .wait_for(&mut held, WATCHDOG)
                .timed_out()
            {
                panic!(
                    "fake REAPI server: {} executions held, waited for {n}",
                    held.len()
                );
            }
        }
        held.clone()
    }

    /// Lets every held execution run (new ones are still held while
    /// [`hold_executions`](Self::hold_executions) is on).
    pub fn release_held(&self) {
        let names = std::mem::take(&mut *self.state.held.lock());
        let operations = self.state.operations.lock();
        for name in names {
            if let Some(entry) = operations.get(&name) {
                entry.release.notify_one();
            }
        }
    }

    /// Whether the operation `name` was cancelled by `CancelOperation`.
    pub fn was_cancelled(&self, name: &str) -> bool {
        self.state
            .operations
            .lock()
            .get(name)
            .is_some_and(|entry| entry.cancelled.load(Ordering::Acquire))
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        drop(self.shutdown.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Injected faults; read and consumed by the services.
#[derive(Debug, Default)]
struct Faults {
    fail_next: HashMap<Rpc, u32>,
    drop_execute_streams: u32,
    lie_find_missing: u32,
    miss_action_cache: u32,
    discard_uploads: bool,
    lose_outputs: bool,
    hold_executions: bool,
}

/// Takes one unit of a countdown fault, if any is left.
fn take(counter: &mut u32) -> bool {
    let left = *counter > 0;
    if left {
        *counter -= 1;
    }
    left
}

/// One operation: its latest message, and the signals that end its wait.
struct OperationEntry {
    /// The latest `Operation` message; streams follow it.
    updates: watch::Sender<Operation>,
    /// Set by `CancelOperation`.
    cancelled: AtomicBool,
    /// Woken (with a stored permit) by `CancelOperation`.
    cancel: Notify,
    /// Woken (with a stored permit) by [`FakeServer::release_held`].
    release: Notify,
}

/// Everything the fake knows. Each mutex guards one table and is held for
/// one lookup or update; none is taken while another is held.
struct State {
    behaviour: FakeBehaviour,
    cas: Mutex<HashMap<Digest, Bytes>>,
    action_cache: Mutex<HashMap<Digest, reapi::ActionResult>>,
    operations: Mutex<HashMap<String, Arc<OperationEntry>>>,
    next_operation: AtomicU64,
    calls: Mutex<Vec<FakeCall>>,
    calls_changed: Condvar,
    faults: Mutex<Faults>,
    /// The names of the executions waiting to be released.
    held: Mutex<Vec<String>>,
    held_changed: Condvar,
}

impl State {
    fn new(behaviour: FakeBehaviour) -> Self {
        Self {
            behaviour,
            cas: Mutex::default(),
            action_cache: Mutex::default(),
            operations: Mutex::default(),
            next_operation: AtomicU64::new(1),
            calls: Mutex::default(),
            calls_changed: Condvar::new(),
            faults: Mutex::default(),
            held: Mutex::default(),
            held_changed: Condvar::new(),
        }
    }

    fn record(&self, call: FakeCall) {
        self.calls.lock().push(call);
        self.calls_changed.notify_all();
    }
}
