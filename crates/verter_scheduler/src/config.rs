//! `SchedulerConfig`: budgets, inbox size, the two clock backstops and the
//! test seam, each with a documented default, and [`ConfigError`], what a
//! constructor answers for a configuration it cannot run.

use std::sync::Arc;
use std::time::Duration;

use verter_dag::DagConfig;
use verter_pools::{IDLE_PUMP_BACKSTOP, PoolError, SchedulerCpuPool, SchedulerIoPool};

use crate::hooks::{Hooks, NoHooks};

/// How a scheduler is sized and wired.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// Stage CPU threads the host's pool should have. Default: the machine's
    /// available parallelism.
    pub cpu_threads: usize,
    /// I/O threads the host's pool should have. Default: 2.
    pub io_threads: usize,
    /// DAG budgets: how much CPU and I/O work may run at once. Default: the
    /// thread counts above (one running stage per thread).
    pub dag: DagConfig,
    /// Bounded capacity of the submission inbox. Default: 1024.
    pub inbox_capacity: usize,
    /// How often the driver re-pumps when it saw no wake-up: a backstop for
    /// lost wake-ups, never needed for correctness (every test passes with it
    /// `None`). Default: 50 ms.
    pub idle_repump: Option<Duration>,
    /// How long a driving waiter (a stage worker or an inline caller) that
    /// found nothing to pump parks before pumping again, if the scheduler's
    /// progress signal does not wake it first. A backstop only: the signal
    /// is raised whenever something pumpable appears or a waiter is
    /// answered, and every test passes with it `None`. Default: 1 ms.
    pub wait_backstop: Option<Duration>,
    /// Stack of each stage CPU thread [`Self::build_pools`] starts, in bytes
    /// (`None`: the standard library's default, 2 MiB). Executors recurse on
    /// their input (a parser recurses per nesting level, and a stack
    /// overflow aborts the process, not just the stage), so this must cover
    /// the deepest input the executor accepts. Virtual memory only: a page
    /// is committed when it is touched. Default: [`Self::DEFAULT_STAGE_STACK`].
    pub stage_stack_size: Option<usize>,
    /// How many finished stages a stage thread may commit in one hold of
    /// the DAG lock, at most (and so how many ready stages it takes for
    /// itself in that hold). How many it takes is bounded by
    /// [`Self::batch_time`] and by an even share of the ready work per
    /// budgeted thread; the extra stages are reserved outside the budget,
    /// which counts threads running work. `1` commits every stage in a
    /// hold of its own. Default: 128.
    pub stages_per_hold: usize,
    /// How long one thread's batch of stages may take, as estimated from
    /// how long its last stages took: a hold takes about this much work for
    /// its thread, so quick stages are committed many per hold while a
    /// slow stage (one over this) is committed and followed by a single
    /// one. It bounds how long ready work can wait behind one thread's
    /// batch (an urgent request's stage among it). A scheduling heuristic
    /// only: no answer depends on it. Default: [`Self::BATCH_TIME`].
    pub batch_time: Duration,
    /// How many requests of an atomic batch are registered per hold of the
    /// DAG lock, at most. A batch of at most this many is admitted whole in
    /// one hold; a larger one has all its edits applied in one hold and
    /// its requests registered this many per hold after it, so stage
    /// commits and later requests (an urgent one) are admitted in between.
    /// No answer depends on it (docs/design.md, "Chunked admission").
    /// Default: [`Self::REGISTRATIONS_PER_HOLD`].
    pub registrations_per_hold: usize,
    /// Whether a host thread that waits for an answer ([`crate::Scheduler::wait`])
    /// on a threaded scheduler runs queued urgent CPU stages (`High` and
    /// `Critical`) itself before it parks, instead of leaving them to a
    /// stage thread that must first be woken and get a core. Those stages
    /// were dispatched within the budget, so nothing runs beyond it; they
    /// run on a stack of at least [`Self::stage_stack_size`] (the host
    /// thread's own when it has that much left, else a fresh one), so an
    /// executor sized for the stage threads is safe there. Turn it off for
    /// an executor that must run on the stage threads (thread-local state,
    /// thread names). No answer depends on it (docs/design.md, "What runs
    /// where"). Default: `true`.
    pub callers_run_urgent_work: bool,
    /// The bound of the ready queue for host DAGs: a DAG submission is
    /// backpressured ([`crate::Admission::Backpressured`]) while this many
    /// stages are ready, and a DAG's nodes are handed to the stages only
    /// while fewer are (the rest are held, in priority order). File
    /// requests are not bounded by it. Default:
    /// [`MAX_READY_QUEUE_DEPTH`].
    pub max_ready_queue_depth: usize,
    /// How many host cache nodes' memos the scheduler keeps at most
    /// (docs/design.md, "Cache nodes"): beyond it the least recently used
    /// is evicted, and that node runs again the next time it is asked.
    /// `0` keeps none: every cache node runs each time. Default:
    /// [`Self::CACHE_MEMOS`].
    pub cache_memos: usize,
    /// Where stage outputs persist across schedulers (docs/design.md,
    /// "Persistent outputs"): a scheduler with a store answers a stage
    /// from it when it holds that stage's output computed from the same
    /// inputs, and writes what its stages compute (for the outputs the
    /// executor encodes: `StageExecutor::encode_source` and its siblings).
    /// Default: `None`.
    pub store: Option<crate::persist::OutputStoreConfig>,
    /// How many events the causal log keeps (docs/design.md, "Causes"):
    /// the newest this many, for [`crate::Observer::explain`] and
    /// [`crate::Observer::causal_log`]. `0` keeps none and records
    /// nothing. Default: `0` (off; [`crate::DEFAULT_CAUSAL_LOG`] is a
    /// size for a host that turns it on).
    pub causal_log: usize,
    /// Whether [`crate::Observer::stats`] keeps per-stage histograms of
    /// queue wait and run time (two clock reads and a short lock per
    /// stage). Its counters are kept either way. Default: `false`.
    pub stage_stats: bool,
    /// How long the scheduler keeps a file's text (docs/design.md,
    /// "Texts"). Default: [`TextRetention::Kept`].
    pub texts: TextRetention,
    /// Pause points and events for tests; a no-op by default.
    pub hooks: Arc<dyn Hooks>,
}

/// How long a scheduler keeps the texts its loader read
/// ([`SchedulerConfig::texts`]; docs/design.md, "Texts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextRetention {
    /// Every text stays while its version is live: in the Source snapshot,
    /// in the source root, and for [`crate::Scheduler::invalidate`]'s
    /// cutoff at the door, which answers `Unchanged` for a file whose
    /// bytes did not change. For a host that edits and re-asks (a
    /// language server, `verter watch`).
    #[default]
    Kept,
    /// A text the loader read is let go once the parse of it commits: the
    /// Source snapshot and the source root then hold it released
    /// ([`crate::SourceText::is_released`]: version and hash kept, no
    /// bytes), and `invalidate` of such a file always makes a new
    /// generation (its parse, if the bytes are the same, is cut off
    /// instead). A Source that must run again at the same version reads
    /// the file again. Texts a host gave (upserts) are kept. For a host
    /// that builds once and whose Analysis and Artifacts read only the
    /// parse: a tree's texts are then never all in memory at once.
    UntilParsed,
}

/// How many ready stages the scheduler holds before a DAG submission is
/// backpressured, by default ([`SchedulerConfig::max_ready_queue_depth`]).
pub const MAX_READY_QUEUE_DEPTH: usize = 64;

impl std::fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("cpu_threads", &self.cpu_threads)
            .field("io_threads", &self.io_threads)
            .field("dag", &self.dag)
            .field("inbox_capacity", &self.inbox_capacity)
            .field("idle_repump", &self.idle_repump)
            .field("wait_backstop", &self.wait_backstop)
            .field("stage_stack_size", &self.stage_stack_size)
            .field("stages_per_hold", &self.stages_per_hold)
            .field("batch_time", &self.batch_time)
            .field("registrations_per_hold", &self.registrations_per_hold)
            .field("callers_run_urgent_work", &self.callers_run_urgent_work)
            .field("max_ready_queue_depth", &self.max_ready_queue_depth)
            .field("cache_memos", &self.cache_memos)
            .field("store", &self.store)
            .field("causal_log", &self.causal_log)
            .field("stage_stats", &self.stage_stats)
            .field("texts", &self.texts)
            .finish_non_exhaustive()
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        let cpu_threads = std::thread::available_parallelism().map_or(2, usize::from);
        Self::with_threads(cpu_threads, 2)
    }
}

impl SchedulerConfig {
    /// The default stage thread stack: 16 MiB.
    pub const DEFAULT_STAGE_STACK: usize = 16 << 20;

    /// The default [`Self::registrations_per_hold`]: 256.
    pub const REGISTRATIONS_PER_HOLD: usize = 256;

    /// The default [`Self::cache_memos`]: 4096.
    pub const CACHE_MEMOS: usize = 4096;

    /// The default [`Self::batch_time`]: 200 µs.
    pub const BATCH_TIME: Duration = Duration::from_micros(200);

    /// The default configuration for `cpu_threads` stage threads and
    /// `io_threads` I/O threads (both at least 1).
    pub fn with_threads(cpu_threads: usize, io_threads: usize) -> Self {
        let cpu_threads = cpu_threads.max(1);
        let io_threads = io_threads.max(1);
        Self {
            cpu_threads,
            io_threads,
            dag: DagConfig {
                cpu_budget: cpu_threads,
                io_budget: io_threads,
                ..DagConfig::default()
            },
            inbox_capacity: 1024,
            idle_repump: Some(Duration::from_millis(50)),
            wait_backstop: Some(IDLE_PUMP_BACKSTOP),
            stage_stack_size: Some(Self::DEFAULT_STAGE_STACK),
            stages_per_hold: 128,
            batch_time: Self::BATCH_TIME,
            registrations_per_hold: Self::REGISTRATIONS_PER_HOLD,
            callers_run_urgent_work: true,
            max_ready_queue_depth: MAX_READY_QUEUE_DEPTH,
            cache_memos: Self::CACHE_MEMOS,
            store: None,
            causal_log: 0,
            stage_stats: false,
            texts: TextRetention::Kept,
            hooks: Arc::new(NoHooks),
        }
    }

    /// Routes `routes` to the remote class ([`verter_dag::ResourceClass::Remote`]:
    /// started by [`crate::StageExecutor::start_artifact`] or
    /// [`crate::StageExecutor::start_cache_node`], completed later from any
    /// thread), with at most `budget` pieces of such work started and not
    /// completed at once.
    #[must_use]
    pub fn with_remote(mut self, routes: verter_dag::RemoteRoutes, budget: usize) -> Self {
        self.dag.remote = routes;
        self.dag.remote_budget = budget;
        self
    }

    /// Checks that a scheduler can run with this configuration.
    ///
    /// # Errors
    /// The first thing that makes it unusable: a zero CPU, I/O or remote budget (no
    /// work could run), a zero lane weight (a priority lane would starve),
    /// a zero inbox capacity (no request could be sent), zero stages or
    /// registrations per hold, or a zero ready-queue bound.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.dag.cpu_budget == 0 {
            return Err(ConfigError::ZeroBudget { class: "CPU" });
        }
        if self.dag.io_budget == 0 {
            return Err(ConfigError::ZeroBudget { class: "I/O" });
        }
        if self.dag.remote_budget == 0 {
            return Err(ConfigError::ZeroBudget { class: "remote" });
        }
        if let Some(lane) = self.dag.lane_weights.iter().position(|w| *w == 0) {
            return Err(ConfigError::ZeroLaneWeight { lane });
        }
        if self.inbox_capacity == 0 {
            return Err(ConfigError::ZeroInbox);
        }
        if self.stages_per_hold == 0 {
            return Err(ConfigError::ZeroStagesPerHold);
        }
        if self.registrations_per_hold == 0 {
            return Err(ConfigError::ZeroRegistrationsPerHold);
        }
        if self.max_ready_queue_depth == 0 {
            return Err(ConfigError::ZeroReadyQueue);
        }
        Ok(())
    }

    /// The transport capacity a CPU pool needs for this configuration: every
    /// reserved stage plus one finishing task per thread.
    pub fn cpu_transport_capacity(&self) -> usize {
        self.dag.cpu_budget + self.cpu_threads
    }

    /// The queue capacity an I/O pool needs for this configuration.
    pub fn io_queue_capacity(&self) -> usize {
        self.dag.io_budget + self.io_threads
    }

    /// Builds the stage CPU pool and I/O pool this configuration expects.
    /// Hosts may build their own, as long as their capacities are at least
    /// [`Self::cpu_transport_capacity`] and [`Self::io_queue_capacity`].
    pub fn build_pools(&self) -> Result<(Arc<SchedulerCpuPool>, Arc<SchedulerIoPool>), PoolError> {
        let cpu = SchedulerCpuPool::with_stack_size(
            self.cpu_threads,
            self.cpu_transport_capacity(),
            self.stage_stack_size,
        )?;
        let io = SchedulerIoPool::new(self.io_threads, self.io_queue_capacity())?;
        Ok((Arc::new(cpu), Arc::new(io)))
    }
}

/// Why [`crate::Scheduler::threaded`] could not start a scheduler. Nothing
/// is left running: a pool that did start is joined before this returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A pool's threads could not be started.
    #[error(transparent)]
    Pool(#[from] PoolError),
}

/// Why a scheduler could not be built from a configuration. Nothing was
/// started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A budget is zero: no work of that class could ever run.
    #[error("the {class} budget is zero: no {class} work could ever run")]
    ZeroBudget {
        /// `"CPU"` or `"I/O"`.
        class: &'static str,
    },
    /// A priority lane has weight zero: its work would starve.
    #[error("priority lane {lane} has weight zero: its work would starve")]
    ZeroLaneWeight {
        /// The lane, 0 for `Low`.
        lane: usize,
    },
    /// The inbox holds nothing: no request could be submitted.
    #[error("the inbox capacity is zero: no request could be submitted")]
    ZeroInbox,
    /// `stages_per_hold` is zero: no finished stage could be committed.
    #[error("stages_per_hold is zero: no finished stage could be committed")]
    ZeroStagesPerHold,
    /// `registrations_per_hold` is zero: a large batch's requests could
    /// never be registered.
    #[error("registrations_per_hold is zero: a large batch's requests could never be registered")]
    ZeroRegistrationsPerHold,
    /// `max_ready_queue_depth` is zero: no DAG could ever be admitted.
    #[error("max_ready_queue_depth is zero: no DAG could ever be admitted")]
    ZeroReadyQueue,
    /// The CPU pool cannot carry the configured budget.
    #[error(
        "the CPU pool's capacity ({capacity}) is below the DAG CPU budget plus its threads ({needed}): build it with SchedulerConfig::build_pools"
    )]
    CpuPoolTooSmall {
        /// What the pool has.
        capacity: usize,
        /// What the configuration needs.
        needed: usize,
    },
    /// The I/O pool cannot carry the configured budget.
    #[error(
        "the I/O pool's capacity ({capacity}) is below the DAG I/O budget plus its threads ({needed}): build it with SchedulerConfig::build_pools"
    )]
    IoPoolTooSmall {
        /// What the pool has.
        capacity: usize,
        /// What the configuration needs.
        needed: usize,
    },
}
