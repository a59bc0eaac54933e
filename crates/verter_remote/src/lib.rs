//! A client of the Bazel Remote Execution API v2 (REAPI): runs one action
//! at a time per call on a remote cluster, through its action cache, its
//! content-addressable storage (CAS) and its execution service, and brings
//! the outputs back. With the `fake` feature, also an in-process fake server
//! (the `fake` module) for tests, examples and benchmarks.
//!
//! This crate names no other verter crate: it is a standalone client that
//! the layers above adapt to their executors.
//!
//! # What it owns, and what it never does
//! - It owns exactly one thread per [`RemoteExecutor`] (named
//!   `verter-remote`, driving a current-thread Tokio runtime) and the gRPC
//!   connection on it; the thread ends when the last executor clone drops.
//! - It never blocks a caller's thread, except in
//!   [`RemoteExecutor::connect`] (which connects eagerly),
//!   [`RemoteExecutor::run_blocking`], and the drop of the last executor
//!   clone (which joins the runtime thread).
//! - It never runs anything locally, and never touches the local
//!   filesystem: inputs arrive as bytes and outputs leave as bytes.
//!
//! # The life of an action
//! 1. The [`ActionSpec`] becomes REAPI messages: the input root as a Merkle
//!    tree of `Directory` messages (names sorted, nested directories,
//!    executable bits), the `Command` (environment and output paths sorted;
//!    `output_paths` and, for older servers, `output_files`) and the
//!    `Action`. Digests are SHA-256 of the encoded messages, so the same
//!    spec always has the same action digest ([`ActionSpec::action_digest`]).
//! 2. Unless [`ActionSpec::skip_cache_lookup`]: `GetActionResult`. A hit
//!    whose outputs can all be fetched is the answer
//!    ([`CacheSource::ActionCache`]).
//! 3. `FindMissingBlobs`, then only the missing blobs are uploaded: small
//!    ones in `BatchUpdateBlobs` calls of at most
//!    [`RemoteConfig::batch_limit_bytes`], large ones through
//!    `ByteStream.Write` (`{instance}/uploads/{uuid}/blobs/{hash}/{size}`).
//! 4. `Execute` with the priority in both `ExecutionPolicy` and
//!    `ResultsCachePolicy`; the operation stream is followed to its end and
//!    resumed with `WaitExecution` if it drops. A server that lost inputs
//!    (`FAILED_PRECONDITION` naming missing blobs) gets them again, once.
//! 5. Stdout, stderr and the output files are fetched (`BatchReadBlobs`, or
//!    `ByteStream.Read` of `{instance}/blobs/{hash}/{size}` for large ones)
//!    and checked against their digests.
//!
//! A non-zero exit code is an outcome, not an error: [`ActionOutcome`]
//! carries it, and [`ActionOutcome::success`] turns it into
//! [`RemoteError::NonZeroExit`].
//!
//! # Entry points
//! - [`RemoteExecutor::submit`]: callback style; `on_done` runs exactly
//!   once on the runtime thread; the returned [`RemoteJob`] cancels.
//! - [`RemoteExecutor::run`]: a future any executor may poll.
//! - [`RemoteExecutor::run_blocking`]: for simple callers.
//!
//! Cancelling ([`RemoteJob::cancel`]) stops the local task and sends
//! `CancelOperation` for the server's operation: dropping an `Execute`
//! stream does not, by itself, stop the work on the server.
//!
//! # Retries and deadlines
//! Calls failing with `UNAVAILABLE` (connection failures included; for
//! `Execute` also `RESOURCE_EXHAUSTED`) are retried with exponential backoff
//! ([`RetryPolicy`]). Each call has [`RemoteConfig::rpc_timeout`], the whole
//! action [`RemoteConfig::execute_timeout`].
//!
//! # Errors
//! Every failure is a [`RemoteError`]: `Unreachable` (no connection at
//! connect), `Unavailable` (retries exhausted), `MissingBlob` (the CAS lacks
//! a blob the action needs or produced), `NonZeroExit` (from
//! [`ActionOutcome::success`]), `OutputTooLarge`, `Timeout`, `Cancelled`,
//! `Server` (any other status, with its [`StatusCode`]), `Protocol` (a
//! malformed answer or a digest mismatch), and the caller's mistakes
//! (`InvalidConfig`, `InvalidSpec`, `BlockingOnRuntimeThread`).
//!
//! # Example
//! ```no_run
//! use verter_remote::{ActionSpec, RemoteConfig, RemoteExecutor};
//!
//! # fn main() -> Result<(), verter_remote::RemoteError> {
//! let executor = RemoteExecutor::connect(RemoteConfig::new("http://127.0.0.1:50051"))?;
//! let spec = ActionSpec::new(["cat", "hello.txt"])
//!     .input("hello.txt", "hello\n")
//!     .output("out/result.txt")
//!     .priority(-1); // lower runs first
//! let outcome = executor.run_blocking(spec)?.success()?;
//! println!("{} bytes of stdout, from {:?}", outcome.stdout.len(), outcome.from_cache);
//! # Ok(())
//! # }
//! ```

mod action;
mod cas;
mod config;
mod digest;
mod error;
mod execute;
mod executor;
mod job;
mod merkle;
mod proto;
mod rpc;
pub mod schedule;
mod spec;
mod stats;

#[cfg(any(test, feature = "fake"))]
pub mod fake;

pub use config::{DEFAULT_BATCH_LIMIT_BYTES, RemoteConfig, RetryPolicy};
pub use digest::Digest;
pub use error::{RemoteError, StatusCode};
pub use executor::{RemoteExecutor, RemoteJob};
pub use spec::{ActionOutcome, ActionSpec, CacheSource, InputFile, Timings};
pub use stats::RemoteStats;
