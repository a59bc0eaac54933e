//! `SchedulerDag`: the state of the one lifecycle authority.
//!
//! The layer above keeps one `SchedulerDag` under its DAG lock. Every
//! operation here mutates the state and returns what the caller must do after
//! unlocking ([`Effects`]); nothing here does I/O, calls an executor, takes a
//! lock or wakes a thread, so every rule can be tested deterministically.
//!
//! # What it holds
//! - **One slot per file**: per canonical (indexed by its dense id), the
//!   published file object (incarnation, current generation, submission
//!   lifetime) and, inline, the stages of the one version that has records
//!   (its live version), each with its admitted work node, its request
//!   waiters and the heads of its edge lists. An object is live while its
//!   record is present; removal deletes it in the same call (no
//!   tombstones). A node is gated on its dependencies, ready, running, done
//!   or failed; a failed producer stays resident until its generation is
//!   retired. One indexing of the table reaches every stage of a file, and
//!   retirement takes a file's records out whole, so nothing scans a
//!   DAG-wide map (`slots.rs` is the only place records enter or leave).
//! - **Cache nodes**, which belong to no file, in a table of their own.
//! - **Dependency edges**, one arena of compact entries, each on its
//!   consumer's and its producer's list (`edges.rs`; `links.rs` links and
//!   unlinks them; cache nodes' lists in a table of their own).
//! - **Blocker records** (`BlockerRegistry`), the
//!   **ready queue** and the **capacity ledger**.
//!
//! # Invariants (each pinned by the named test in `dag/tests/`)
//! 1. Work is admitted only for a live object at its current generation, and
//!    the two unchecked inserts (`insert_node`, and `admit_fresh_chain` for a
//!    version's first stages) are private
//!    (`submit_refuses_a_stale_or_foreign_witness`,
//!    `a_fresh_versions_chain_is_admitted_whole`).
//! 2. A producer exists as soon as it is named: admitting or linking work
//!    ensures the stages it needs, in the same call
//!    (`linking_to_an_unadmitted_producer_creates_it`), and no consumer is
//!    ever gated on a producer that does not exist: one that fails as it is
//!    created fails its consumer
//!    (`a_producer_that_fails_as_it_is_created_fails_its_consumer`).
//! 3. Edges point from a higher stage to a strictly lower one, so no wait
//!    cycle can form (`link_refuses_an_edge_that_breaks_stage_rank`).
//! 4. Every registered waiter is answered exactly once: by completion,
//!    failure, cancellation, supersession, removal or reset
//!    (`every_waiter_is_answered_exactly_once_on_removal`, and the model test
//!    `the_dag_agrees_with_its_reference_model_after_every_step`).
//! 5. Retirement sweeps one canonical's records below a version and touches
//!    no other file's records except to move their edges and blocker
//!    references onto the live version (`retiring_one_file_touches_no_other_file`).
//! 6. Capacity is reserved at dequeue and released exactly once, when the
//!    dispatch comes back, whatever happened meanwhile
//!    (`stale_completion_releases_capacity_and_publishes_nothing`).
//! 7. Dependency-caused failures are not resident: a consumer failed by its
//!    dependency is dropped, so a later request re-links and sees the
//!    dependency's current state (`a_failed_producer_fails_every_consumer`).
//! 8. A removal never erases another file's dependency facts: an owner's
//!    blocker record keeps naming a removed file, and the next Artifact of
//!    that owner ensures the file again (a new object, reported in
//!    `Effects::ingested`) and waits on it
//!    (`a_removed_blocker_is_ingested_again_by_its_importer`).
//! 9. Work that leaves the map unfinished has its dispatch's
//!    [`CancellationToken`] cancelled in the same call, and is counted
//!    (`retired_running_work_has_its_token_cancelled`).

use crate::canonical_map::CanonicalMap;
use crate::hash::HashMap;
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::blockers::{BlockerOccupancy, BlockerRegistry};
use crate::edges::{EdgeArena, EdgeOccupancy};
use crate::effects::{Answer, DedupJoinerEvent, Dispatch, Effects, WaitPolicy, WaiterId};
use crate::error::{DagFailure, FailureCause, GenerationExhausted, LinkError};
use crate::identity::{
    CancellationToken, Canonical, DepKey, FileIdentity, Generation, Incarnation, ObjectRecord,
    Priority, ProfileHash, SchedulerCacheId, SourceVersion, SubmissionLifetime, TargetStage,
    WorkNodeIdentity,
};
use crate::ready::{
    AdmissionId, CapacityLedger, DEFAULT_LANE_WEIGHTS, LedgerSnapshot, Place, ReadyQueue,
    ResourceClass, Ticket,
};
use slots::{CacheConsumers, Profiles, Stages};

pub use demand::{ChainEnd, ConsumerChain, MAX_DEMAND_DEPTH};

/// Budgets and fairness settings of a [`SchedulerDag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagConfig {
    /// How much CPU work may run at once. At least 1.
    pub cpu_budget: usize,
    /// How much I/O work may run at once. At least 1.
    pub io_budget: usize,
    /// Round-robin weights of the priority lanes, `Low` first; all positive.
    pub lane_weights: [u32; 4],
    /// How much [`ResourceClass::Remote`] work may be started and not yet
    /// completed at once. At least 1.
    pub remote_budget: usize,
    /// Which work draws on the remote budget instead of the CPU budget.
    pub remote: RemoteRoutes,
}

impl Default for DagConfig {
    /// Eight CPU, four I/O and [`DEFAULT_REMOTE_BUDGET`] remote slots, lanes
    /// weighted 1:2:4:8, nothing routed to the remote class.
    fn default() -> Self {
        Self {
            cpu_budget: 8,
            io_budget: 4,
            lane_weights: DEFAULT_LANE_WEIGHTS,
            remote_budget: DEFAULT_REMOTE_BUDGET,
            remote: RemoteRoutes::NONE,
        }
    }
}

/// The remote budget of [`DagConfig::default`]: work in flight on other
/// machines, each piece costing this process one pending answer, not a
/// thread.
pub const DEFAULT_REMOTE_BUDGET: usize = 64;

/// Which work becomes ready in [`ResourceClass::Remote`] (started, then
/// completed later from any thread) rather than on the CPU budget. Source
/// and Analysis always run here: they are what the others read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RemoteRoutes {
    /// Every Artifact, of every profile.
    pub artifacts: bool,
    /// Every host cache node.
    pub cache_nodes: bool,
}

impl RemoteRoutes {
    /// Nothing remote: every stage on the CPU budget.
    pub const NONE: Self = Self {
        artifacts: false,
        cache_nodes: false,
    };

    /// The class work of `stage` (a file stage) or a cache node (`None`)
    /// starts in, past its Source.
    #[inline]
    pub fn class_of(self, stage: Option<TargetStage>) -> ResourceClass {
        let remote = match stage {
            Some(TargetStage::Artifact(_)) => self.artifacts,
            Some(_) => false,
            None => self.cache_nodes,
        };
        if remote {
            ResourceClass::Remote
        } else {
            ResourceClass::Cpu
        }
    }
}

/// Why a lifecycle transition on an object was refused. The state is
/// unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectError {
    /// The canonical has no live object.
    #[error("{canonical} has no live object")]
    NotLive {
        /// The file.
        canonical: Canonical,
    },
    /// The live object is another incarnation than the caller's witness.
    #[error("{canonical} is now {live}, not {expected}")]
    Replaced {
        /// The file.
        canonical: Canonical,
        /// The incarnation the caller expected.
        expected: Incarnation,
        /// The live incarnation.
        live: Incarnation,
    },
    /// The generation counter is exhausted.
    #[error(transparent)]
    Exhausted(#[from] GenerationExhausted),
}

/// How [`SchedulerDag::link`] went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The consumer now waits on the dependency.
    Linked,
    /// The dependency is already done: no edge was needed.
    AlreadySatisfied,
    /// The edge already existed.
    AlreadyLinked,
    /// The dependency failed (or its file is not live): the consumer was
    /// failed with `DependencyFailed` and dropped.
    Failed,
}

/// What linking reads of a consumer: that it is admitted and gated or
/// ready, whether it is ready, and its priority.
#[derive(Debug, Clone, Copy)]
struct Linkable {
    ready: bool,
    priority: Priority,
}

/// What one registration did.
#[derive(Debug)]
#[must_use = "a registration may carry an immediate answer and a joiner event"]
pub struct Registration {
    /// The new waiter.
    pub waiter: WaiterId,
    /// The key it waits on (the live version when it followed on arrival).
    pub key: DepKey,
    /// Set when it joined an existing group: fire after unlocking.
    pub joiner: Option<DedupJoinerEvent>,
    /// Set when it was answered at once (work already done or failed, or the
    /// object is gone).
    pub answered: Option<Answer>,
}

/// Counters of what the DAG has done since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DagCounters {
    /// Work nodes admitted.
    pub admitted: u64,
    /// Dispatches handed out.
    pub dequeued: u64,
    /// Dispatches completed while current.
    pub completed: u64,
    /// Dispatches failed while current.
    pub failed: u64,
    /// Dispatches refused because their admission was no longer current.
    pub stale_completion_refusals: u64,
    /// Unfinished work nodes dropped because they were superseded, removed,
    /// reset or cancelled (never those a failed dependency dropped).
    pub cancelled: u64,
    /// Request waiters withdrawn before their answer: their handles were
    /// cancelled or dropped ([`SchedulerDag::withdraw`]).
    pub withdrawn: u64,
    /// Unfinished work nodes dropped because a dependency failed: they will
    /// never run, and nobody cancelled them.
    pub dependency_failed: u64,
    /// Waiters moved to a newer version.
    pub followed: u64,
    /// Waiters answered `Superseded`.
    pub superseded: u64,
    /// Waiters that joined an existing group.
    pub dedupe_joins: u64,
    /// Dependency cycles found as an Artifact-on-Artifact edge would have
    /// closed them (each failed every stage on it).
    pub cycles: u64,
}

/// Membership counts and backing capacity of everything dependency-related.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DependencyOccupancy {
    /// The edge store and its file index.
    pub edges: EdgeOccupancy,
    /// The blocker registry and its reverse index.
    pub blockers: BlockerOccupancy,
    /// Work nodes resident (any state).
    pub nodes: usize,
    /// Waiter groups.
    pub groups: usize,
    /// Request waiters in groups.
    pub waiters: usize,
    /// Canonicals with a live object, node or group.
    pub files: usize,
    /// Ready members.
    pub ready: usize,
    /// Entries backing the ready lanes (live and stale).
    pub ready_backing: usize,
}

impl DependencyOccupancy {
    /// Whether every membership count is zero (capacities may not be).
    pub fn is_empty(&self) -> bool {
        self.edges.consumers == 0
            && self.edges.edges == 0
            && self.edges.keys == 0
            && self.blockers.owners == 0
            && self.blockers.references == 0
            && self.blockers.referenced_keys == 0
            && self.blockers.referenced_files == 0
            && self.nodes == 0
            && self.groups == 0
            && self.waiters == 0
            && self.files == 0
            && self.ready == 0
    }
}

#[derive(Debug, Clone)]
enum NodeState {
    /// Waiting for dependencies (its record's edges, `links.rs`).
    Gated,
    /// In the ready queue.
    Ready,
    /// Dispatched; the worker holds a capacity reservation.
    Running,
    /// Finished; the caller holds its output.
    Done,
    /// Failed by its own work; resident until retired.
    Failed(Arc<DagFailure>),
}

#[derive(Debug)]
struct WorkNode {
    admission: AdmissionId,
    priority: Priority,
    class: ResourceClass,
    state: NodeState,
    /// Cancelled when the node leaves the map unfinished; every dispatch of
    /// this admission carries a clone. Made at the first dispatch (work that
    /// never runs needs none) and dropped when the work is done.
    cancel: Option<CancellationToken>,
    /// While ready: the ticket of its current ready-queue entry (the queue
    /// keeps no membership of its own; `ready.rs`).
    ready_ticket: Ticket,
}

impl WorkNode {
    /// Makes it ready, keeping `ticket` (its queue entry's); returns the
    /// class and priority to enqueue it at. The caller enqueues it.
    #[inline]
    fn set_ready(&mut self, ticket: Ticket) -> (ResourceClass, Priority) {
        self.state = NodeState::Ready;
        self.ready_ticket = ticket;
        (self.class, self.priority)
    }

    /// Whether it is ready with `ticket`'s queue entry as its current one.
    #[inline]
    fn ready_as(&self, ticket: Ticket) -> bool {
        matches!(self.state, NodeState::Ready) && self.ready_ticket == ticket
    }

    #[inline]
    fn is_finished(&self) -> bool {
        matches!(self.state, NodeState::Done | NodeState::Failed(_))
    }
}

/// The priority a request group asks for: its most urgent member's.
#[inline]
fn group_priority_of(members: &[Member]) -> Priority {
    members
        .iter()
        .map(|member| member.priority)
        .max()
        .unwrap_or_default()
}

#[derive(Debug, Clone, Copy)]
struct Member {
    waiter: WaiterId,
    policy: WaitPolicy,
    priority: Priority,
}

/// One file's slot: its live object, the stages of the one version that
/// has records, with their nodes, groups and edge lists (`slots.rs`), that
/// version's blocker record, and the layer above's payload.
#[derive(Debug)]
struct FileRecords<P> {
    object: Option<ObjectRecord>,
    /// The version `stages` and `blockers` are records of, while either
    /// holds anything: the object's live version (an older one only inside
    /// a sweep; `slots.rs`, "One version per file").
    version: SourceVersion,
    stages: Stages,
    /// The analyses this version's Artifacts wait for, sorted and
    /// distinct; empty when it has no blocker record. Kept in step with
    /// the registry's reverse index through `FileOwners` only.
    blockers: Vec<DepKey>,
    /// The version whose text the host supplied ([`SchedulerDag::note_text_known`]):
    /// its Source starts on the CPU budget, with nothing to load.
    text_known: Option<SourceVersion>,
    /// What the layer above keeps per file ([`SchedulerDag::payload`]). The
    /// record stays while it is set.
    payload: Option<P>,
}

impl<P> FileRecords<P> {
    /// Whether the record holds nothing (no object, stage, blocker record
    /// or payload): then it leaves the table.
    fn is_empty(&self) -> bool {
        self.object.is_none() && !self.has_records() && self.payload.is_none()
    }
}

impl<P> Default for FileRecords<P> {
    fn default() -> Self {
        Self {
            object: None,
            version: SourceVersion::new(Incarnation::SWEEP_ALL, Generation::ZERO),
            stages: Stages::default(),
            blockers: Vec::new(),
            text_known: None,
            payload: None,
        }
    }
}

/// How many finished work's tokens the DAG keeps for reuse: enough for the
/// dispatches of a few holds, each of which may hand a stage thread a
/// round of up to 128 stages (the scheduler's default `stages_per_hold`),
/// and small enough to be nothing (a few KiB; given back when idle).
const SPARE_TOKENS: usize = 512;

/// The rank of a consumer: its stage's rank for file work; cache nodes rank
/// above every file stage.
#[inline]
/// Whether `consumer` may wait on `dep`: a strictly lower stage, or (the
/// one same-rank edge) another file's Artifact of the consumer's profile.
fn may_wait_on(consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
    if consumer_rank(consumer) > dep.stage.rank() {
        return true;
    }
    matches!(
        consumer,
        WorkNodeIdentity::File(key)
            if matches!(key.stage, TargetStage::Artifact(profile) if profile != ProfileHash::SAME)
                && key.stage == dep.stage
                && key.file.canonical != dep.file.canonical
    )
}

fn consumer_rank(identity: &WorkNodeIdentity) -> u8 {
    match identity {
        WorkNodeIdentity::File(key) => key.stage.rank(),
        WorkNodeIdentity::CacheNode { .. } => 3,
    }
}

/// The budget each stage draws on when it becomes ready. Source starts on I/O
/// (loading bytes); the caller moves it to CPU for parsing with
/// [`SchedulerDag::continue_on`].
#[inline]
fn initial_class<P>(
    identity: &WorkNodeIdentity,
    records: Option<&FileRecords<P>>,
    remote: RemoteRoutes,
) -> ResourceClass {
    match identity {
        WorkNodeIdentity::File(
            key @ DepKey {
                stage: TargetStage::Source,
                ..
            },
        ) => source_class(records, key.file.version()),
        WorkNodeIdentity::File(key) => remote.class_of(Some(key.stage)),
        WorkNodeIdentity::CacheNode { .. } => remote.class_of(None),
    }
}

/// Where a Source of `version` starts: on the CPU budget when the host
/// supplied its text, on I/O (to load it) otherwise.
#[inline]
fn source_class<P>(records: Option<&FileRecords<P>>, version: SourceVersion) -> ResourceClass {
    if records.and_then(|records| records.text_known) == Some(version) {
        ResourceClass::Cpu
    } else {
        ResourceClass::Io
    }
}

/// What happens to waiters when their version is swept.
#[derive(Debug, Clone, Copy)]
enum SweepReason {
    /// A newer generation of the same object: followers follow, pinned
    /// requests are superseded.
    NewGeneration,
    /// A re-home: every waiter follows the replacement.
    Rehome,
    /// Removal: every waiter is answered `Shutdown`.
    Removal,
}

/// The lifecycle authority's state. See the module docs.
#[derive(Debug)]
pub struct SchedulerDag<P = ()> {
    /// Per canonical: its object, and its versions' nodes and groups.
    files: CanonicalMap<FileRecords<P>>,
    /// Admitted cache nodes (they belong to no file).
    cache_nodes: HashMap<(SchedulerCacheId, u64), WorkNode>,
    /// Resident nodes, file work and cache nodes (kept by `slots.rs`).
    node_count: usize,
    /// Request groups (kept by `slots.rs`).
    group_count: usize,
    /// Request waiters in groups (kept by `slots.rs`).
    waiter_count: usize,
    /// The cache nodes that wait on keys, numbered, with their lists of
    /// keys (file stages keep theirs in their records; `links.rs`).
    cache_consumers: CacheConsumers,
    /// Every dependency edge, on its consumer's and its producer's lists
    /// (`edges.rs`, kept by `links.rs`).
    edges: EdgeArena,
    /// The profiles artifacts were built for, numbered for the edges'
    /// compact ends (`slots.rs`).
    profiles: Profiles,
    /// Tokens of finished work that nobody else holds and nobody cancelled,
    /// handed to the next dispatches instead of new ones (at most
    /// [`SPARE_TOKENS`]).
    spare_tokens: Vec<CancellationToken>,
    /// How many chains `admit_fresh_chain` admitted (tests only).
    #[cfg(test)]
    fresh_chains: usize,
    /// How many blocker records `record_blockers_directly` made (tests
    /// only).
    #[cfg(test)]
    direct_records: usize,
    blockers: BlockerRegistry,
    /// Artifacts an admission named while it was admitting another one,
    /// admitted by the outermost admission before it returns, so a chain
    /// of Artifact dependencies is admitted in a loop, not by recursion as
    /// deep as the chain (`admit_file_node`). Empty between operations.
    deferred: Vec<(DepKey, Priority)>,
    /// Whether an admission is running (the outermost one drains
    /// [`Self::deferred`]).
    admitting: bool,
    ready: ReadyQueue,
    ledger: CapacityLedger,
    /// Which work starts in the remote class.
    remote: RemoteRoutes,
    counters: DagCounters,
    waiter_ids: crate::waiter_ids::WaiterIds,
    next_admission: u64,
    /// This DAG's number, process-unique (modulo 2^32), carried by every
    /// dispatch it makes: what tells it a dispatch of a DAG it succeeded
    /// ([`Self::successor`]).
    instance: u32,
}

/// The number of the next DAG made in this process (wrapping: a
/// dispatch could only be mistaken for a successor's after 2^32 DAGs).
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(0);

impl Default for SchedulerDag {
    fn default() -> Self {
        Self::new(DagConfig::default())
    }
}

impl SchedulerDag {
    /// An empty DAG with `config`'s budgets, keeping no payload per file.
    ///
    /// # Panics
    /// If a budget is zero or a lane weight is zero: no work could run, or a
    /// lane would starve.
    pub fn new(config: DagConfig) -> Self {
        Self::with_payloads(config)
    }
}

impl<P> SchedulerDag<P> {
    /// An empty DAG with `config`'s budgets, keeping a payload of type `P`
    /// per file for the layer above ([`Self::payload`]).
    ///
    /// # Panics
    /// As [`SchedulerDag::new`].
    pub fn with_payloads(config: DagConfig) -> Self {
        Self {
            files: CanonicalMap::new(),
            cache_nodes: HashMap::default(),
            node_count: 0,
            group_count: 0,
            waiter_count: 0,
            cache_consumers: CacheConsumers::default(),
            edges: EdgeArena::default(),
            profiles: Profiles::default(),
            spare_tokens: Vec::new(),
            #[cfg(test)]
            fresh_chains: 0,
            #[cfg(test)]
            direct_records: 0,
            blockers: BlockerRegistry::default(),
            deferred: Vec::new(),
            admitting: false,
            ready: ReadyQueue::new(config.lane_weights),
            ledger: CapacityLedger::new(config.cpu_budget, config.io_budget, config.remote_budget),
            remote: config.remote,
            counters: DagCounters::default(),
            waiter_ids: Default::default(),
            next_admission: 0,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// An empty DAG with `config`'s budgets to take this one's place, for
    /// a caller that can no longer trust this one's state (the layers
    /// above, when a lock hold that was changing it panicked): it keeps
    /// this one's counters, and its ledger starts at zero. A dispatch this
    /// one (or any DAG before it) made is refused by the successor and
    /// counted as a stale refusal, without touching the successor's
    /// ledger (`complete`, `fail`, `continue_on`; `is_current` is false),
    /// so the ledger stays exact while work dispatched before the switch
    /// comes back. This DAG is left as it is: the caller takes what it
    /// still needs from it (its payloads, [`Self::reset`] to cancel the
    /// tokens of running work).
    ///
    /// # Panics
    /// As [`SchedulerDag::new`].
    pub fn successor(&self, config: DagConfig) -> Self {
        let mut successor = Self::with_payloads(config);
        successor.counters = self.counters;
        successor
    }

    /// Whether no work is in flight: no reservation held, nothing ready, no
    /// edge, no waiter group. O(1).
    pub fn is_idle(&self) -> bool {
        self.ledger.snapshot().in_use() == 0
            && self.ready.total_len() == 0
            && self.group_count == 0
            && self.edges.live() == 0
    }

    /// Releases the backing storage of the tables that track work in flight
    /// (edges, the ready queue) once nothing is in flight: no
    /// reservation held, nothing ready, no edge, no group. A large build
    /// grows those tables to its peak and then empties them; without this
    /// they would keep that capacity for the scheduler's whole life.
    /// Returns whether anything was released. O(1) when work is in flight or
    /// everything is already released; otherwise O(capacity) once.
    pub fn release_idle_capacity(&mut self) -> bool {
        if !self.is_idle() {
            return false;
        }
        let mut released = false;
        if self.cache_consumers.is_empty() && self.cache_consumers.capacity() > 0 {
            self.cache_consumers = CacheConsumers::default();
            released = true;
        }
        if self.spare_tokens.capacity() > 0 {
            self.spare_tokens = Vec::new();
            released = true;
        }
        if !self.edges.is_released() {
            self.edges = EdgeArena::default();
            released = true;
        }
        if !self.ready.is_released() {
            self.ready.clear_and_release();
            released = true;
        }
        released |= self.waiter_ids.release_idle();
        released
    }

    /// Gives back the id of a waiter the caller was answered for (it took
    /// the [`Answer`] out of [`Effects::answers`]), so that a later waiter
    /// may take its slot ([`WaiterId::slot`]). Optional: a caller that
    /// never gives ids back sees the slots grow like a counter. Give each
    /// id back at most once, and only once its answer was taken.
    pub fn recycle_waiter(&mut self, waiter: WaiterId) {
        self.waiter_ids.recycle(waiter);
    }

    /// The cancellation tokens of the work running now (dispatched, not
    /// completed), in no particular order: what [`Self::reset`] cancels,
    /// so that its caller can wait for the runs of that work to end
    /// ([`CancellationToken::runner`]). O(1) when nothing is running.
    pub fn running_tokens(&self) -> Vec<CancellationToken> {
        if self.ledger.snapshot().in_use() == 0 {
            return Vec::new();
        }
        self.all_nodes()
            .filter(|(_, node)| matches!(node.state, NodeState::Running))
            .filter_map(|(_, node)| node.cancel.clone())
            .collect()
    }

    /// Removes every object at once: every waiter is answered `Shutdown`,
    /// running work is abandoned, and the backing storage of every table is
    /// released. Reservations of running work stay in the ledger until their
    /// dispatches come back, so the ledger stays exact.
    pub fn reset(&mut self) -> Effects {
        let mut effects = Effects::default();
        self.answer_every_waiter_shutdown(&mut effects);
        for (_, node) in self.all_nodes() {
            if let NodeState::Failed(failure) = &node.state {
                // It may hold the host's error: the caller drops it after
                // its lock, not with the records below.
                effects.released.push(Arc::clone(failure));
            }
        }
        self.cancel_every_unfinished_node(&mut effects);
        self.files = CanonicalMap::new();
        self.cache_nodes = HashMap::default();
        self.node_count = 0;
        self.group_count = 0;
        self.waiter_count = 0;
        self.cache_consumers = CacheConsumers::default();
        self.edges = EdgeArena::default();
        self.profiles.clear();
        self.spare_tokens = Vec::new();

        self.blockers.clear_and_release();
        self.ready.clear_and_release();
        effects
    }

    /// [`Self::reset`] for a caller that drops the tables itself: every
    /// waiter is answered `Shutdown` and unfinished work is cancelled (its
    /// tokens too), as by `reset`, and the tables — file records with their
    /// payloads, resident failures, edges, blocker records — come back whole
    /// in a [`Dismantled`] instead of being dropped here, for the caller to
    /// drop when it likes (the layer above: after its lock, since payloads
    /// and failures may hold host values; so nothing is collected into
    /// [`Effects::released`]). The answers and the cancellation walk run
    /// only when something waits or is unfinished, so dismantling a built,
    /// idle DAG of any size is a few moves. The ledger, the counters and
    /// the waiter ids stay, as after `reset`.
    pub fn dismantle(&mut self) -> (Effects, Dismantled<P>) {
        let mut effects = Effects::default();
        if self.group_count > 0 {
            self.answer_every_waiter_shutdown(&mut effects);
        }
        if self.is_idle() {
            // Idle: nothing reserved, ready or gated (a gated node has an
            // edge), so every node is finished and nothing is cancelled.
            debug_assert!(
                self.all_nodes().all(|(_, node)| node.is_finished()),
                "an idle DAG has no unfinished work"
            );
        } else {
            self.cancel_every_unfinished_node(&mut effects);
        }
        let dismantled = Dismantled {
            files: std::mem::take(&mut self.files),
            cache_nodes: std::mem::take(&mut self.cache_nodes),
            cache_consumers: std::mem::take(&mut self.cache_consumers),
            edges: std::mem::take(&mut self.edges),
            blockers: std::mem::take(&mut self.blockers),
            spare_tokens: std::mem::take(&mut self.spare_tokens),
        };
        self.node_count = 0;
        self.group_count = 0;
        self.waiter_count = 0;
        self.profiles.clear();
        self.ready.clear_and_release();
        (effects, dismantled)
    }

    /// For `reset` and `dismantle`: answers every waiter of every group
    /// `Shutdown`, in key order.
    fn answer_every_waiter_shutdown(&self, effects: &mut Effects) {
        let mut groups: Vec<(DepKey, Vec<Member>)> = self
            .all_groups()
            .map(|(key, members)| (key, members.to_vec()))
            .collect();
        groups.sort_by_key(|a| a.0);
        for (key, members) in groups {
            let failure = DagFailure::Shutdown {
                canonical: key.file.canonical,
            };
            for member in members {
                effects.answers.push(Answer {
                    waiter: member.waiter,
                    key,
                    outcome: Err(failure.clone()),
                });
            }
        }
    }

    /// For `reset` and `dismantle`: cancels the token of every unfinished
    /// node and counts it cancelled; the running ones are reported
    /// abandoned, in identity order (their results will be refused).
    fn cancel_every_unfinished_node(&mut self, effects: &mut Effects) {
        let mut running: Vec<WorkNodeIdentity> = Vec::new();
        let mut cancelled = 0;
        for (identity, node) in self.all_nodes() {
            if node.is_finished() {
                continue;
            }
            if let Some(token) = &node.cancel {
                token.cancel();
            }
            cancelled += 1;
            if matches!(node.state, NodeState::Running) {
                running.push(identity);
            }
        }
        self.counters.cancelled += cancelled;
        running.sort();
        effects.abandoned_running = running;
    }
}

/// What [`SchedulerDag::dismantle`] took out of a DAG: its tables, the
/// layer above's payloads and the failures they hold included. It does
/// nothing but own them: dropping it drops them all, in the order of the
/// files' dense ids.
pub struct Dismantled<P> {
    files: CanonicalMap<FileRecords<P>>,
    cache_nodes: HashMap<(SchedulerCacheId, u64), WorkNode>,
    cache_consumers: CacheConsumers,
    edges: EdgeArena,
    blockers: BlockerRegistry,
    spare_tokens: Vec<CancellationToken>,
}

impl<P> std::fmt::Debug for Dismantled<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dismantled")
            .field("files", &self.files.len())
            .field("cache_nodes", &self.cache_nodes.len())
            .field("cache_consumers", &self.cache_consumers.is_empty())
            .field("edges", &self.edges.live())
            .field("blockers", &self.blockers.occupancy())
            .field("spare_tokens", &self.spare_tokens.len())
            .finish()
    }
}

mod completion;
mod cycles;
mod demand;
mod internals;
mod links;
mod objects;
mod payloads;
mod requests;
mod slots;
mod sweep;
#[cfg(test)]
mod tests;
