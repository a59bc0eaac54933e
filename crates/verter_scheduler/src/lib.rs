//! The scheduler facade: [`Scheduler`], its file nodes, the driver thread,
//! the submission API and the two traits a host implements
//! ([`SourceLoader`], [`StageExecutor`]).
//!
//! A host asks for a file at a stage — `Source` (loaded and parsed),
//! `Analysis`, or `Artifact(profile)` — and the scheduler loads (on the I/O
//! pool), parses and computes (on the CPU pool), runs each piece of work once
//! however many ask, throws away work a newer edit made stale, and never
//! publishes a stale result. With [`Scheduler::new_inline`] it runs with no
//! threads at all, deterministically, on whoever waits.
//!
//! # One lifecycle authority
//! Every file state transition and every admission happens under one DAG
//! lock, in one hold that also publishes to the source root. Executor calls,
//! loader I/O, hooks, answers and channel sends never run under it: a lock
//! hold can only queue an answer, and answers are delivered after the guard
//! drops, so a waker may call back into the scheduler. Work carries the
//! identity it was admitted under (canonical, incarnation, generation,
//! stage, admission); completion compares that carried identity with the
//! live node and publishes nothing when it is stale.
//!
//! # A caller reads its own writes
//! Submissions are admitted in the order they were sent — except that a lone
//! `High` or `Critical` request may overtake queued requests that change
//! nothing, never a write sent before it — and every call that takes the
//! DAG lock — [`Scheduler::invalidate`], [`Scheduler::remove`],
//! [`Scheduler::reset`], the witness calls, and reads such as
//! [`Snapshot::try_get_source`] and [`Snapshot::capture_root`] — first
//! admits what is still queued. An upsert followed by an invalidate ends on
//! the loader's text; an item of [`Scheduler::submit_batch_atomic`] sees the
//! edits of the items before it.
//!
//! # Cancellation
//! Work that is superseded, removed or reset while it is queued or running
//! is cancelled in the same lock hold: its [`verter_dag::CancellationToken`]
//! (on [`SourceInput`], [`AnalysisInput`] and [`ArtifactInput`]) is
//! cancelled, a job that has not started is refused without running its
//! executor, and a running one may stop early (its result is refused
//! either way). `SchedulerCounters::cancellations` counts it (work a
//! failed dependency dropped is `dependency_failures`). "Started"
//! is exact: the last step before a loader or executor call is one
//! atomic step on the token, ordered with the cancel. [`Scheduler::reset`]
//! also waits for the stages it cancelled: once it returns, none is
//! running and none will start (docs/design.md, "Reset").
//!
//! # Lifecycle
//! [`Scheduler::upsert`] (a request that carries text),
//! [`Scheduler::invalidate`] (and `invalidate_always`; also how an
//! editor's overlay is closed), [`Scheduler::remove`], a language re-home
//! (a request that names another language), [`Scheduler::reset`] (every
//! file at once), and [`Scheduler::shutdown`], the end: everyone waiting is
//! answered (`Shutdown`; a host DAG whole), what runs is cancelled and
//! waited for, queued work is dropped without running, the driver thread is
//! joined, and every later call is refused, typed, without reaching the
//! loader. Dropping the scheduler does the same unless `shutdown` did; the
//! pools stay the host's (docs/design.md, "Shutdown").
//!
//! # Early cutoff
//! A rebuild stops where an output did not change. [`Scheduler::invalidate`]
//! (and an upsert) of bytes equal to the known text does nothing. A stage
//! whose inputs did not change since its previous output is verified
//! instead of run: that output is answered again, re-stamped at the new
//! version ([`SchedulerEvent::DidCutOff`] with [`CutOff::Verified`]). And a
//! stage that ran to an output the executor finds the same as its previous
//! one ([`StageExecutor::same_source`], `same_analysis`, `same_artifact`;
//! by default nothing is the same) keeps that output's [`Revision`], so
//! everything built on it is verified in turn ([`CutOff::Unchanged`]).
//! Answers are what a fresh scheduler would give either way.
//!
//! # Why did this run?
//! Every scheduling decision is a [`SchedulerEvent`] with its cause: the
//! [`HostAction`] that started it, the [`Demand`] that wanted the work
//! when it was dispatched, the [`RunReason`] a stage ran instead of being
//! verified. With [`SchedulerConfig::causal_log`] on, the newest events are
//! kept and [`Observer::explain`] follows a stage's chain back to the
//! host action that started it; [`Observer::stats`] has per-stage
//! histograms of queue wait and run time when
//! [`SchedulerConfig::stage_stats`] is on.
//!
//! # What a waiter gets when the world moves under it
//!
//! | while it waits | a request without source text | a request that carried source text |
//! |---|---|---|
//! | a newer edit supersedes its generation | follows the file to the newest generation | `Superseded` |
//! | its language is re-homed | follows the replacement | follows the replacement (same lifetime) |
//! | the file is removed, or `reset()` (also when it is added again before the request is admitted), or `shutdown()` | `Shutdown` | `Shutdown` |
//! | a dependency fails or is missing | `DependencyFailed` | `DependencyFailed` |
//! | its handle is cancelled, or its last handle dropped | `Cancelled` (the work nothing else wants stops) | `Cancelled` (its edit stays applied) |
//! | a blocker is removed | rebuilt on the blocker as the loader has it now | rebuilt on the blocker as the loader has it now |
//!
//! Answers the loader decided, a missing file's `SourceMissing` included,
//! stand until the host says the file changed: [`Scheduler::invalidate`]
//! reads a tracked file again, also one it removed that an importer's
//! build took in again, once it is back on disk.
//!
//! A `DependencyFailed` names the requesting file, the dependency's file
//! and its stage (`a.rs depends on the Analysis of m.rs, which failed`,
//! no internal versions), and carries the dependency's own error as its
//! `source()`, down to the loader's [`LoadError`]
//! ([`RequestError::load_cause`]); [`Observer::explain`] of the failed
//! stage follows the same chain to the host action behind it (a
//! `remove`, say).
//!
//! Every request is answered exactly once, with a value or a typed
//! [`RequestError`]: no request ever hangs. A broken scheduler invariant
//! answers `Internal` (and is counted) rather than leaving anyone waiting.
//!
//! # A panic under the lock
//! A broken invariant may also panic inside a lock hold (an `.expect` in
//! lock-held code). Every hold is an unwind boundary: the panic is caught
//! with the lock still held, the state the lock guards is not trusted and
//! is recovered as by [`Scheduler::reset`] (every file forgotten, host
//! DAGs cancelled, started remote work told), and everyone the hold left
//! waiting — registered, queued, or answered by the broken hold itself —
//! is answered [`RequestError::Internal`] after the lock. The capacity
//! ledger starts again from zero, and work dispatched before the recovery
//! is refused when it comes back (it never counted in the new ledger).
//! `SchedulerCounters::holds_recovered` (and `internal_errors`) count it.
//! Then the panic goes on: out of the host's own call that hit it (a
//! lifecycle call, a submission that admits, `Completion::complete`), or
//! up to the boundary of the scheduler's own work — a pump pass (also in
//! [`Scheduler::wait`] on an inline scheduler), the driver, a pool thread,
//! a waiting host thread's urgent stages — where it stops and the thread
//! goes on. Requests are answered from scratch afterwards, as after a
//! reset (docs/design.md, "A panic under the lock").
//!
//! # Stages and demand
//! A Source request is answered once the Source stage's dependency facts are
//! integrated, and then work stops. Analysis runs only when demanded: by an
//! Analysis or Artifact request, by a consumer gated on it, or by another
//! file's blocker record naming it. A dependency the scheduler has never
//! seen is ingested (its Source admitted) when a parsed source names it.
//!
//! ```text
//!            forward deps (ingest only)
//!   a.rs ───────────────────────────────▶ b.rs
//!
//!   Artifact(a) ──▶ Analysis(a) ──▶ Source(a)
//!        │
//!        └── blocker ──▶ Analysis(m) ──▶ Source(m)      (edges point to a lower stage)
//! ```
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use verter_scheduler::*;
//!
//! struct Files;
//! impl SourceLoader for Files {
//!     fn load(&self, path: &Canonical) -> Result<Arc<str>, LoadError> { Ok(format!("text of {path}").into()) }
//! }
//!
//! struct WordCount;
//! impl StageExecutor for WordCount {
//!     type Source = Vec<String>;
//!     type Analysis = usize;
//!     type Artifact = String;
//!     type CacheOutput = ();
//!     fn execute_source(&self, input: &SourceInput<'_>, _: &mut SourceDeps) -> Result<Vec<String>, ExecutorError> {
//!         Ok(input.text.split_whitespace().map(str::to_owned).collect())
//!     }
//!     fn execute_analysis(&self, input: &AnalysisInput<'_, Vec<String>>) -> Result<usize, ExecutorError> {
//!         let source = input.source;
//!         Ok(source.parsed.len())
//!     }
//!     fn execute_artifact(&self, input: &ArtifactInput<'_, usize, String>) -> Result<String, ExecutorError> {
//!         let analysis = input.analysis;
//!         Ok(format!("{} words", analysis.data()))
//!     }
//! }
//!
//! let scheduler = Scheduler::new_inline(SchedulerConfig::default(), Files, WordCount).expect("a valid scheduler configuration");
//! // A typed request: its answer is the artifact itself.
//! let handle = scheduler.ask(stage::Artifact(ProfileHash(0)).of("a.txt"));
//! let artifact = scheduler.wait(&handle).expect("built");
//! assert_eq!(artifact.data(), "3 words");
//! ```
//!
//! # Waiting
//! Every handle — untyped ([`CompletionHandle`], answered with a
//! [`StageOutput`]), typed ([`Handle`], answered with its stage's output)
//! and a batch's ([`BatchHandle`]) — is waited for the same way:
//! [`Scheduler::wait`] (and [`Scheduler::wait_timeout`],
//! [`Scheduler::wait_batch`]) pumps an inline scheduler on the calling
//! thread, and on a threaded one runs queued urgent stages on a host thread
//! before parking; a handle's own `wait_timeout` parks without pumping;
//! `.await` needs no runtime (a threaded scheduler answers on its own
//! threads; an inline one needs someone to pump it:
//! [`Scheduler::drive`]`(handle).await` works for both, running an inline
//! scheduler's work on the polling thread). An async host that meets a full
//! inbox (`try_ask` answered `Backpressured`) awaits
//! [`Scheduler::inbox_room`] instead of blocking its runtime's thread in
//! `ask`.

mod causal_log;
mod causes;
mod config;
mod cutoff;
mod dag_types;
mod dags;
mod driver;
mod error;
mod events;
mod exec;
mod fault;
mod handle;
mod helpers;
mod hooks;
mod host_dag;
mod inbox;
mod job;
mod language;
mod node;
mod output;
mod persist;
mod post;
mod remote_work;
mod scheduler;
mod snapshot;
pub mod stage;
mod state;
mod stats;
#[cfg(test)]
mod test_support;
#[cfg(feature = "test-support")]
pub mod testing;
mod traits;
mod typed;
mod waiters;
mod witness;

pub use causal_log::{CausalIndex, DEFAULT_CAUSAL_LOG, ExplainError, Explanation, LogRecord};
pub use causes::{Backpressure, Demand, DemandRoot, HostAction, Run, RunReason, Step};
pub use config::{ConfigError, MAX_READY_QUEUE_DEPTH, SchedulerConfig, StartError, TextRetention};
// What a host names to embed the scheduler, from the layers below, so that
// the common case depends on this crate alone.
pub use dag_types::{
    AnyCacheOutput, Cache, CacheOf, CacheTask, ConcurrencyLimit, DagResults, EdgeGate, KeyedCache,
    NodeId, NodeKind, NodeOutput, RequestContext,
};
pub use error::{ExecutorError, LoadError, RequestError, panic_message};
#[cfg(any(test, feature = "test-support"))]
pub use fault::HoldPoint;
pub use handle::{BatchHandle, CompletionHandle, Request, Waitable};
pub use hooks::{CutOff, HookPoint, Hooks, NoHooks, SchedulerEvent};
pub use host_dag::{
    Admission, Dag, DagError, DagHandle, DedupeHook, DedupeJoiner, IntoDagNode, NoDedupeHook,
    NodeOptions, TaskSpec,
};
pub use language::Language;
pub use node::{FileNode, NodeView};
pub use output::{RequestResult, StageOutput};
pub use persist::OutputStoreConfig;
pub use remote_work::Completion;
pub use scheduler::{
    Drive, InboxRoom, Invalidation, Observer, QuiescenceReport, SchedulerCounters, SchedulerStats,
    Snapshot,
};
pub use snapshot::{
    AnalysisSnapshot, ArtifactSnapshot, Canonicals, Revision, SourceSnapshot, SourceText,
    content_hash,
};
pub use stage::{Ask, Stage, StageKind};
pub use state::Scheduler;
pub use stats::{Latencies, StageStats};
pub use traits::{
    AnalysisInput, ArtifactInput, CacheKey, CacheNodeInput, DepPath, SourceDeps, SourceInput,
    SourceLoader, StageExecutor, Upstream, UpstreamNode, UpstreamOf, UpstreamValue,
};
pub use typed::Handle;
// Every type a public method or field of this crate names, from the
// layers below, so a host names them all through this crate
// (`every_type_the_facade_names_is_reachable_from_its_root`).
pub use verter_dag::{
    CancellationToken, Canonical, DagConfig, DepKey, DependencyOccupancy, FileIdentity, Generation,
    Incarnation, LedgerSnapshot, Priority, ProfileHash, RemoteRoutes, ResourceClass,
    SchedulerCacheId, SourceVersion, SubmissionLifetime, TargetStage, WaitPolicy, WorkNodeIdentity,
};
pub use verter_pools::{PoolError, SchedulerCpuPool, SchedulerIoPool};
pub use verter_source_root::{
    ContentHash, GcReport, SchedulerSourceRoot, SourceRootStats, SourceState,
};
pub use verter_store::{Digest, OutputStore};
pub use witness::{SourceWitness, WaitGraphOccupancy, WitnessError};
