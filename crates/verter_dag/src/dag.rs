//! `SchedulerDag`: the state of the one lifecycle authority.
//!
//! The layer above keeps one `SchedulerDag` under its DAG lock. Every
//! operation here mutates the state and returns what the caller must do after
//! unlocking ([`Effects`]); nothing here does I/O, calls an executor, takes a
//! lock or wakes a thread, so every rule can be tested deterministically.
//!
//! # What it holds
//! - **Live objects**: per canonical, the published file object (incarnation,
//!   current generation, submission lifetime). An object is live while its
//!   record is present; removal deletes it in the same call (no tombstones).
//! - **Work nodes**: admitted work by [`WorkNodeIdentity`], gated on its
//!   dependencies, ready, running, done or failed. A failed producer stays
//!   resident until its generation is retired.
//! - **Waiter groups**: request waiters by [`DepKey`].
//! - **Edges** (`DepEdges`), **blocker records** (`BlockerRegistry`), the
//!   **ready queue** and the **capacity ledger**.
//! - A per-canonical index of the versions that have nodes or groups, so
//!   retirement and removal never scan a DAG-wide map.
//!
//! # Invariants (each pinned by the named test in `dag/tests.rs`)
//! 1. Work is admitted only for a live object at its current generation, and
//!    the unchecked insert is private (`submit_refuses_a_stale_or_foreign_witness`).
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

use crate::hash::HashMap;
use crate::vec_map::VecMap;
use std::sync::Arc;

use crate::blockers::{BlockerOccupancy, BlockerRegistry};
use crate::edges::{DepEdges, EdgeOccupancy};
use crate::effects::{Answer, DedupJoinerEvent, Dispatch, Effects, WaitPolicy, WaiterId};
use crate::error::{DagFailure, FailureCause, GenerationExhausted, LinkError};
use crate::identity::{
    CancellationToken, Canonical, DepKey, FileIdentity, Generation, Incarnation, Priority,
    SourceVersion, SubmissionLifetime, TargetStage, WorkNodeIdentity,
};
use crate::ready::{
    AdmissionId, CapacityLedger, DEFAULT_LANE_WEIGHTS, LedgerSnapshot, ReadyQueue, ResourceClass,
};

/// Budgets and fairness settings of a [`SchedulerDag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagConfig {
    /// How much CPU work may run at once. At least 1.
    pub cpu_budget: usize,
    /// How much I/O work may run at once. At least 1.
    pub io_budget: usize,
    /// Round-robin weights of the priority lanes, `Low` first; all positive.
    pub lane_weights: [u32; 4],
}

impl Default for DagConfig {
    /// Eight CPU and four I/O slots, lanes weighted 1:2:4:8.
    fn default() -> Self {
        Self {
            cpu_budget: 8,
            io_budget: 4,
            lane_weights: DEFAULT_LANE_WEIGHTS,
        }
    }
}

/// The published file object of one canonical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRecord {
    /// The object.
    pub incarnation: Incarnation,
    /// Its current generation.
    pub generation: Generation,
    /// The submission lifetime it belongs to (kept across a re-home).
    pub lifetime: SubmissionLifetime,
}

impl ObjectRecord {
    /// The object's current version.
    pub fn version(&self) -> SourceVersion {
        SourceVersion::new(self.incarnation, self.generation)
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
    /// Work nodes cancelled.
    pub cancelled: u64,
    /// Waiters moved to a newer version.
    pub followed: u64,
    /// Waiters answered `Superseded`.
    pub superseded: u64,
    /// Waiters that joined an existing group.
    pub dedupe_joins: u64,
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
            && self.edges.indexed_files == 0
            && self.edges.indexed_versions == 0
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
    /// Waiting for dependencies (edges in `DepEdges`).
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
    /// this admission carries a clone.
    cancel: CancellationToken,
}

impl WorkNode {
    fn is_finished(&self) -> bool {
        matches!(self.state, NodeState::Done | NodeState::Failed(_))
    }
}

#[derive(Debug, Clone, Copy)]
struct Member {
    waiter: WaiterId,
    policy: WaitPolicy,
    priority: Priority,
}

/// Per canonical: its live object and the versions that have records.
#[derive(Debug, Default)]
struct FileRecords {
    object: Option<ObjectRecord>,
    versions: VecMap<SourceVersion, VersionSlot>,
}

/// The stages of one version that have a node or a group.
#[derive(Debug, Default)]
struct VersionSlot {
    nodes: Vec<TargetStage>,
    groups: Vec<TargetStage>,
}

impl VersionSlot {
    fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.groups.is_empty()
    }
}

fn add_stage(stages: &mut Vec<TargetStage>, stage: TargetStage) {
    if !stages.contains(&stage) {
        stages.push(stage);
    }
}

fn remove_stage(stages: &mut Vec<TargetStage>, stage: TargetStage) {
    stages.retain(|s| *s != stage);
}

/// The rank of a consumer: its stage's rank for file work; cache nodes rank
/// above every file stage.
fn consumer_rank(identity: &WorkNodeIdentity) -> u8 {
    match identity {
        WorkNodeIdentity::File(key) => key.stage.rank(),
        WorkNodeIdentity::CacheNode { .. } => 3,
    }
}

/// The budget each stage draws on when it becomes ready. Source starts on I/O
/// (loading bytes); the caller moves it to CPU for parsing with
/// [`SchedulerDag::continue_on`].
fn initial_class(identity: &WorkNodeIdentity) -> ResourceClass {
    match identity {
        WorkNodeIdentity::File(DepKey {
            stage: TargetStage::Source,
            ..
        }) => ResourceClass::Io,
        _ => ResourceClass::Cpu,
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
pub struct SchedulerDag {
    files: HashMap<Canonical, FileRecords>,
    nodes: HashMap<WorkNodeIdentity, WorkNode>,
    groups: HashMap<DepKey, Vec<Member>>,
    edges: DepEdges,
    blockers: BlockerRegistry,
    ready: ReadyQueue,
    ledger: CapacityLedger,
    counters: DagCounters,
    next_waiter: u64,
    next_admission: u64,
}

impl Default for SchedulerDag {
    fn default() -> Self {
        Self::new(DagConfig::default())
    }
}

impl SchedulerDag {
    /// An empty DAG with `config`'s budgets.
    ///
    /// # Panics
    /// If a budget is zero or a lane weight is zero: no work could run, or a
    /// lane would starve.
    pub fn new(config: DagConfig) -> Self {
        Self {
            files: HashMap::default(),
            nodes: HashMap::default(),
            groups: HashMap::default(),
            edges: DepEdges::default(),
            blockers: BlockerRegistry::default(),
            ready: ReadyQueue::new(config.lane_weights),
            ledger: CapacityLedger::new(config.cpu_budget, config.io_budget),
            counters: DagCounters::default(),
            next_waiter: 0,
            next_admission: 0,
        }
    }

    // ----- live objects ---------------------------------------------------

    /// The live object of `canonical`, if any.
    pub fn object(&self, canonical: &Canonical) -> Option<ObjectRecord> {
        self.files.get(canonical)?.object
    }

    /// The live identity of `canonical` (its object at its current
    /// generation), if any.
    pub fn live_file(&self, canonical: &Canonical) -> Option<FileIdentity> {
        let object = self.object(canonical)?;
        Some(FileIdentity::new(
            canonical.clone(),
            object.incarnation,
            object.generation,
        ))
    }

    /// Whether `file` names the live object at its current generation.
    pub fn is_live(&self, file: &FileIdentity) -> bool {
        self.object(&file.canonical).is_some_and(|object| {
            object.incarnation == file.incarnation && object.generation == file.generation
        })
    }

    /// Returns the live object of `canonical`, creating one (new incarnation,
    /// new lifetime, generation 0) when there is none: an atomic ensure,
    /// never a replace. The flag says whether it was created.
    pub fn ensure_object(&mut self, canonical: &Canonical) -> (ObjectRecord, bool) {
        let records = self.files.entry(canonical.clone()).or_default();
        if let Some(object) = records.object {
            return (object, false);
        }
        let object = ObjectRecord {
            incarnation: Incarnation::allocate(),
            generation: Generation::ZERO,
            lifetime: SubmissionLifetime::allocate(),
        };
        records.object = Some(object);
        (object, true)
    }

    /// Advances the live object's generation (checked) and retires every
    /// record of older versions in the same call: followers move to the new
    /// generation, pinned requests are answered `Superseded`.
    pub fn advance_generation(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<(FileIdentity, Effects), ObjectError> {
        let object = self.expect_object(canonical, incarnation)?;
        let generation = object.generation.next()?;
        let records = self.files.get_mut(canonical).expect("checked live above");
        records.object = Some(ObjectRecord {
            generation,
            ..object
        });
        let live = FileIdentity::new(canonical.clone(), incarnation, generation);
        let effects = self.sweep(canonical, live.version(), SweepReason::NewGeneration);
        Ok((live, effects))
    }

    /// Retires every record of `canonical` below `(incarnation, generation)`:
    /// file waiters, admitted nodes, dependency waiters (including those of
    /// producers reached only through the file index), blocker records and
    /// failure records. Followers move to the live version; pinned requests
    /// are answered `Superseded`. Records at or above the bound are untouched.
    pub fn retire_generations_below(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
        generation: Generation,
    ) -> Effects {
        self.sweep(
            canonical,
            SourceVersion::new(incarnation, generation),
            SweepReason::NewGeneration,
        )
    }

    /// Replaces the live object with a new incarnation at generation 0 that
    /// keeps the submission lifetime (a language re-home). Every waiter of the
    /// old object follows the replacement.
    pub fn rehome_object(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<(FileIdentity, Effects), ObjectError> {
        let object = self.expect_object(canonical, incarnation)?;
        let replacement = ObjectRecord {
            incarnation: Incarnation::allocate(),
            generation: Generation::ZERO,
            lifetime: object.lifetime,
        };
        self.files
            .get_mut(canonical)
            .expect("checked live above")
            .object = Some(replacement);
        let live = FileIdentity::new(canonical.clone(), replacement.incarnation, Generation::ZERO);
        let effects = self.sweep(canonical, live.version(), SweepReason::Rehome);
        Ok((live, effects))
    }

    /// Removes `canonical`'s object: every waiter of it is answered
    /// `Shutdown`, its work is cancelled (running work is abandoned and its
    /// result will be refused), its records are scrubbed, and consumers in
    /// other files that wait on it fail with `DependencyFailed`. A later
    /// [`Self::ensure_object`] creates a successor with a new incarnation at
    /// generation 0. Returns no effects when nothing was live or recorded.
    pub fn remove_object(&mut self, canonical: &Canonical) -> Effects {
        let Some(records) = self.files.get_mut(canonical) else {
            return Effects::default();
        };
        records.object = None;
        let bound = SourceVersion::new(Incarnation::SWEEP_ALL, Generation::MAX);
        let effects = self.sweep(canonical, bound, SweepReason::Removal);
        self.drop_file_if_empty(canonical);
        effects
    }

    /// Removes every object at once: every waiter is answered `Shutdown`,
    /// running work is abandoned, and the backing storage of every table is
    /// released. Reservations of running work stay in the ledger until their
    /// dispatches come back, so the ledger stays exact.
    pub fn reset(&mut self) -> Effects {
        let mut effects = Effects::default();
        let mut keys: Vec<DepKey> = self.groups.keys().cloned().collect();
        keys.sort();
        for key in keys {
            let members = self.groups.remove(&key).unwrap_or_default();
            let failure = DagFailure::Shutdown {
                canonical: key.file.canonical.clone(),
            };
            for member in members {
                effects.answers.push(Answer {
                    waiter: member.waiter,
                    key: key.clone(),
                    outcome: Err(failure.clone()),
                });
            }
        }
        let mut running: Vec<WorkNodeIdentity> = Vec::new();
        for (identity, node) in &self.nodes {
            if node.is_finished() {
                continue;
            }
            node.cancel.cancel();
            self.counters.cancelled += 1;
            if matches!(node.state, NodeState::Running) {
                running.push(identity.clone());
            }
        }
        running.sort();
        effects.abandoned_running = running;
        self.files = HashMap::default();
        self.nodes = HashMap::default();
        self.groups = HashMap::default();
        self.edges.clear_and_release();
        self.blockers.clear_and_release();
        self.ready.clear_and_release();
        effects
    }

    // ----- requests -------------------------------------------------------

    /// Registers a request waiter on `key`. It joins the key's group when
    /// there is one (the joiner event is returned, to fire after unlocking);
    /// it is answered at once when the work is already done or failed, or
    /// when the key's object is gone (`Shutdown`) or superseded (a follower
    /// moves to the live version; a pinned request is `Superseded`).
    ///
    /// Registration does not admit work: the caller then calls
    /// [`Self::submit_file`] for the returned key in the same lock hold.
    pub fn register_request(
        &mut self,
        key: DepKey,
        policy: WaitPolicy,
        priority: Priority,
    ) -> Registration {
        let waiter = self.allocate_waiter();
        let member = Member {
            waiter,
            policy,
            priority,
        };
        let canonical = key.file.canonical.clone();
        let Some(object) = self.object(&canonical) else {
            return Registration {
                waiter,
                answered: Some(Answer {
                    waiter,
                    key: key.clone(),
                    outcome: Err(DagFailure::Shutdown { canonical }),
                }),
                key,
                joiner: None,
            };
        };
        let key = if object.version() == key.file.version() {
            key
        } else if object.incarnation == key.file.incarnation
            && object.generation > key.file.generation
            && policy == WaitPolicy::Follow
        {
            self.counters.followed += 1;
            FileIdentity::new(canonical, object.incarnation, object.generation).at(key.stage)
        } else {
            let outcome = if object.incarnation == key.file.incarnation
                && object.generation > key.file.generation
            {
                self.counters.superseded += 1;
                DagFailure::Superseded { canonical }
            } else {
                DagFailure::Shutdown { canonical }
            };
            return Registration {
                waiter,
                answered: Some(Answer {
                    waiter,
                    key: key.clone(),
                    outcome: Err(outcome),
                }),
                key,
                joiner: None,
            };
        };
        let identity = WorkNodeIdentity::File(key.clone());
        if let Some(node) = self.nodes.get(&identity) {
            let outcome = match &node.state {
                NodeState::Done => Some(Ok(())),
                NodeState::Failed(failure) => Some(Err((**failure).clone())),
                _ => None,
            };
            if let Some(outcome) = outcome {
                return Registration {
                    waiter,
                    answered: Some(Answer {
                        waiter,
                        key: key.clone(),
                        outcome,
                    }),
                    key,
                    joiner: None,
                };
            }
            self.raise(&identity, priority);
        }
        let joiner = self.add_member(&key, member).map(|group_size| {
            self.counters.dedupe_joins += 1;
            DedupJoinerEvent {
                key: key.clone(),
                waiter,
                group_size,
            }
        });
        Registration {
            waiter,
            key,
            joiner,
            answered: None,
        }
    }

    /// Admits `identity` (file work) if `witness` names the live object at its
    /// current generation and `identity` is work on exactly that file version.
    /// Admitting ensures the stages it needs (Artifact → Analysis → Source,
    /// plus recorded blockers). Already admitted work is left as it is
    /// (dedupe). Refuses with `None`, changing nothing, otherwise.
    pub fn submit_file(
        &mut self,
        witness: &FileIdentity,
        identity: &WorkNodeIdentity,
    ) -> Option<Effects> {
        let key = identity.as_dep_key()?;
        if &key.file != witness || !self.is_live(witness) {
            return None;
        }
        let mut effects = Effects::default();
        let priority = self.group_priority(key);
        self.ensure_file_node(key, priority, &mut effects);
        Some(effects)
    }

    /// Admits Analysis of `file` when it is demanded late (after a
    /// Source-only completion, or by a blocker record): the same checked path
    /// as [`Self::submit_file`].
    pub fn ensure_analysis_for_demand(&mut self, file: &FileIdentity) -> Option<Effects> {
        let identity = WorkNodeIdentity::File(file.clone().at(TargetStage::Analysis));
        self.submit_file(file, &identity)
    }

    /// Admits a host-defined cache node at `priority`, waiting on `deps`
    /// (file stages). Already admitted nodes are left as they are. A
    /// dependency that already failed, or whose file is not live, fails the
    /// node at once; the call still succeeds, and its effects include those
    /// of the dependencies it linked before (e.g. producers made ready).
    pub fn submit_cache_node(
        &mut self,
        identity: WorkNodeIdentity,
        priority: Priority,
        deps: impl IntoIterator<Item = DepKey>,
    ) -> Result<Effects, LinkError> {
        assert!(
            matches!(identity, WorkNodeIdentity::CacheNode { .. }),
            "submit_cache_node takes cache-node identities; file work goes through submit_file"
        );
        let mut effects = Effects::default();
        if self.nodes.contains_key(&identity) {
            return Ok(effects);
        }
        self.insert_node(identity.clone(), priority);
        for dep in deps {
            if !self.nodes.contains_key(&identity) {
                // An earlier dependency failed the node: there is nothing
                // left to link, and the effects so far must still be run.
                break;
            }
            self.link_inner(&identity, dep, &mut effects)?;
        }
        self.settle(&identity, &mut effects);
        Ok(effects)
    }

    /// Makes admitted `consumer` wait on `dep`. The edge must point from a
    /// higher stage to a strictly lower one; anything else is refused with
    /// [`LinkError::RankViolation`]. An unadmitted producer is created as
    /// pending work (if its file is live at that version); a failed or dead
    /// one fails the consumer at once.
    pub fn link(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: DepKey,
    ) -> Result<(LinkOutcome, Effects), LinkError> {
        let mut effects = Effects::default();
        let outcome = self.link_inner(consumer, dep, &mut effects)?;
        self.settle(consumer, &mut effects);
        Ok((outcome, effects))
    }

    /// Raises admitted `identity`, and everything it waits on, to at least
    /// `priority` (priority inheritance). Never lowers a priority.
    pub fn raise_priority(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        self.raise(identity, priority);
    }

    /// Removes the edge `consumer → dep` (e.g. a dependency that is no longer
    /// needed). The consumer becomes ready if that was its last dependency.
    pub fn unlink(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> Effects {
        let mut effects = Effects::default();
        if self.edges.unlink(consumer, dep) {
            self.settle(consumer, &mut effects);
        }
        effects
    }

    // ----- blockers -------------------------------------------------------

    /// Replaces `owner`'s blocker record with `blockers` (the analyses its
    /// Artifact must wait for). Each blocker's producer is ensured (it exists
    /// as soon as it is named), and any admitted Artifact of `owner` that has
    /// not started is gated on the new set. Refused (`None`) unless `owner` is
    /// live. Blockers on files that are not live are dropped from the record
    /// and fail gated Artifacts of `owner` with `DependencyFailed`.
    pub fn record_blockers(
        &mut self,
        owner: &FileIdentity,
        blockers: impl IntoIterator<Item = DepKey>,
    ) -> Option<Effects> {
        if !self.is_live(owner) {
            return None;
        }
        let mut effects = Effects::default();
        let blockers: Vec<DepKey> = blockers
            .into_iter()
            .filter(|key| key.file != *owner)
            .collect();
        let previous = self.blockers.record(owner, blockers.iter().cloned());
        let artifacts = self.artifact_nodes_of(owner);
        for artifact in &artifacts {
            if !self.is_gated_or_ready(artifact) {
                continue;
            }
            for old in &previous {
                if !blockers.contains(old) {
                    self.edges.unlink(artifact, old);
                }
            }
        }
        for blocker in &blockers {
            if self.is_live(&blocker.file) {
                let priority = artifacts
                    .iter()
                    .filter_map(|a| self.nodes.get(a).map(|n| n.priority))
                    .max()
                    .unwrap_or_default();
                self.ensure_file_node(blocker, priority, &mut effects);
            } else {
                self.blockers.remove_key(owner, blocker);
            }
            for artifact in &artifacts {
                if self.is_gated_or_ready(artifact) {
                    // Rank is fine by construction (Artifact over a lower stage)
                    // unless the host names an Artifact as a blocker: refused.
                    let _ = self.link_inner(artifact, blocker.clone(), &mut effects);
                }
            }
        }
        for artifact in &artifacts {
            self.settle(artifact, &mut effects);
        }
        Some(effects)
    }

    /// Removes and returns `owner`'s blocker record (the deferred-blocker
    /// drain). Already linked edges are not touched.
    pub fn drain_blockers(&mut self, owner: &FileIdentity) -> Vec<DepKey> {
        self.blockers.drain(owner)
    }

    /// `owner`'s blocker record.
    pub fn blockers_of(&self, owner: &FileIdentity) -> Vec<DepKey> {
        self.blockers.blockers_of(owner)
    }

    /// Whether `dep` (an Analysis) is demanded: a request group waits on it or
    /// on an Artifact of the same version, an admitted consumer is gated on
    /// it, or a blocker record names it. Reads indices only: O(1) in the size
    /// of the DAG.
    pub fn has_analysis_demand(&self, dep: &DepKey) -> bool {
        if self.blockers.has_demand(dep) || self.groups.contains_key(dep) {
            return true;
        }
        let identity = WorkNodeIdentity::File(dep.clone());
        if self.nodes.contains_key(&identity) {
            return true;
        }
        self.files
            .get(&dep.file.canonical)
            .and_then(|records| records.versions.get(&dep.file.version()))
            .is_some_and(|slot| {
                slot.groups
                    .iter()
                    .chain(&slot.nodes)
                    .any(|stage| matches!(stage, TargetStage::Artifact(_)))
            })
    }

    // ----- dispatch and completion ----------------------------------------

    /// Takes the next ready work of `class` by weighted round robin across
    /// priority lanes, reserving one unit of `class` capacity for it. `None`
    /// when nothing is ready or the budget is spent.
    pub fn dequeue_ready(&mut self, class: ResourceClass) -> Option<Dispatch> {
        if !self.ledger.has_room(class) {
            return None;
        }
        self.take_ready(class, false)
    }

    /// Like [`Self::dequeue_ready`], but ignores the budget: for a thread that
    /// holds a reservation and is blocked inside its work waiting on other
    /// work. It lends its own idle slot to the work it runs inline, so the
    /// number of threads actually running stays within the budget even though
    /// the ledger shows one more reservation. The reservation is released
    /// exactly once, like any other.
    pub fn dequeue_ready_lent(&mut self, class: ResourceClass) -> Option<Dispatch> {
        self.take_ready(class, true)
    }

    /// Pops the next ready work of `class` and reserves capacity for it
    /// (beyond the budget when `lent`).
    fn take_ready(&mut self, class: ResourceClass, lent: bool) -> Option<Dispatch> {
        let (identity, priority) = self.ready.pop(class)?;
        let node = self
            .nodes
            .get_mut(&identity)
            .expect("ready members are resident nodes");
        debug_assert!(matches!(node.state, NodeState::Ready));
        node.state = NodeState::Running;
        if lent {
            self.ledger.reserve_lent(class, node.admission);
        } else {
            self.ledger.reserve(class, node.admission);
        }
        self.counters.dequeued += 1;
        Some(Dispatch {
            identity,
            admission: node.admission,
            class,
            priority,
            cancel: node.cancel.clone(),
        })
    }

    /// Whether `dispatch` is still the current admission of live work: the
    /// carried identity and admission are compared with the resident node,
    /// and file work's object must be live at the carried version.
    pub fn is_current(&self, dispatch: &Dispatch) -> bool {
        let Some(node) = self.nodes.get(&dispatch.identity) else {
            return false;
        };
        if node.admission != dispatch.admission || !matches!(node.state, NodeState::Running) {
            return false;
        }
        match dispatch.identity.file() {
            Some(file) => self.is_live(file),
            None => true,
        }
    }

    /// Moves running work to the other budget (Source: loaded on I/O, parsed
    /// on CPU): releases its reservation and makes it ready in `class`. A
    /// stale dispatch is refused (its reservation is released and counted).
    pub fn continue_on(&mut self, dispatch: Dispatch, class: ResourceClass) -> Effects {
        let mut effects = Effects::default();
        let current = self.is_current(&dispatch);
        self.ledger.release(dispatch.admission);
        if !current {
            self.counters.stale_completion_refusals += 1;
            return effects;
        }
        let node = self
            .nodes
            .get_mut(&dispatch.identity)
            .expect("current dispatches are resident");
        node.class = class;
        node.state = NodeState::Ready;
        let priority = node.priority;
        self.ready.insert(dispatch.identity, class, priority);
        effects.newly_ready += 1;
        effects
    }

    /// Completes `dispatch`. Its reservation is released in every case. If
    /// it is current, the work is done: its group is answered `Ok`, and
    /// consumers whose last dependency it was become ready. If it is stale,
    /// nothing is published or consumed; the refusal is counted and the
    /// flag is `false` (the sweep that made it stale already moved or
    /// answered its waiters).
    pub fn complete(&mut self, dispatch: Dispatch) -> (bool, Effects) {
        let mut effects = Effects::default();
        let current = self.is_current(&dispatch);
        let released = self.ledger.release(dispatch.admission);
        debug_assert!(
            released,
            "a dispatch holds its reservation until it returns"
        );
        if !current {
            self.counters.stale_completion_refusals += 1;
            return (false, effects);
        }
        self.counters.completed += 1;
        self.node_mut(&dispatch.identity).state = NodeState::Done;
        if let WorkNodeIdentity::File(key) = &dispatch.identity {
            self.answer_group(key, Ok(()), &mut effects);
            for consumer in self.edges.take_waiters(key) {
                self.settle(&consumer, &mut effects);
            }
        }
        (true, effects)
    }

    /// Fails `dispatch` with the work's own `cause`. Its reservation is
    /// released in every case. If current, the node stays resident as a
    /// terminal failure until its generation is retired; its group is
    /// answered with the failure and every consumer fails with
    /// `DependencyFailed` (transitively). A stale failure is refused like a
    /// stale completion.
    pub fn fail(&mut self, dispatch: Dispatch, cause: FailureCause) -> (bool, Effects) {
        let mut effects = Effects::default();
        let current = self.is_current(&dispatch);
        self.ledger.release(dispatch.admission);
        if !current {
            self.counters.stale_completion_refusals += 1;
            return (false, effects);
        }
        self.counters.failed += 1;
        let failure = Arc::new(DagFailure::Failed {
            work: dispatch.identity.clone(),
            cause,
        });
        self.node_mut(&dispatch.identity).state = NodeState::Failed(Arc::clone(&failure));
        if let WorkNodeIdentity::File(key) = &dispatch.identity {
            self.answer_group(key, Err((*failure).clone()), &mut effects);
            self.fail_consumers(key, &failure, &mut effects);
        }
        (true, effects)
    }

    /// Cancels admitted work that has not finished: its waiters are answered
    /// `Cancelled`, its consumers fail with `DependencyFailed`, and the node
    /// is dropped so a later request admits it afresh. Running work is
    /// abandoned (its result will be refused). Done or failed work, and
    /// unknown identities, are left alone.
    pub fn cancel(&mut self, identity: &WorkNodeIdentity) -> Effects {
        let mut effects = Effects::default();
        let Some(node) = self.nodes.get(identity) else {
            return effects;
        };
        if node.is_finished() {
            return effects;
        }
        let failure = Arc::new(DagFailure::Cancelled);
        self.drop_node(identity, &mut effects);
        if let WorkNodeIdentity::File(key) = identity {
            self.answer_group(key, Err(DagFailure::Cancelled), &mut effects);
            self.fail_consumers(key, &failure, &mut effects);
        }
        effects
    }

    /// Forgets done work whose output the caller stopped serving (e.g. an
    /// artifact the host evicted), so the next request admits it afresh.
    /// Returns whether `identity` was resident and done; anything else is
    /// left alone.
    pub fn forget_done(&mut self, identity: &WorkNodeIdentity) -> bool {
        if !self.is_done(identity) {
            return false;
        }
        let mut effects = Effects::default();
        self.drop_node(identity, &mut effects);
        debug_assert!(effects.is_empty(), "done work has no running dispatch");
        true
    }

    // ----- observation ----------------------------------------------------

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.ledger.snapshot()
    }

    /// Ready work per priority lane of `class`, `Low` first. O(1).
    pub fn pending_counts(&self, class: ResourceClass) -> [usize; 4] {
        self.ready.pending_counts(class)
    }

    /// Ready work of `class`. O(1).
    pub fn ready_len(&self, class: ResourceClass) -> usize {
        self.ready.len(class)
    }

    /// What the DAG has done so far.
    pub fn counters(&self) -> DagCounters {
        self.counters
    }

    /// Whether `identity` is resident and done.
    pub fn is_done(&self, identity: &WorkNodeIdentity) -> bool {
        matches!(
            self.nodes.get(identity).map(|n| &n.state),
            Some(NodeState::Done)
        )
    }

    /// The terminal failure of `identity`, if it is resident and failed.
    pub fn failure_of(&self, identity: &WorkNodeIdentity) -> Option<Arc<DagFailure>> {
        match &self.nodes.get(identity)?.state {
            NodeState::Failed(failure) => Some(Arc::clone(failure)),
            _ => None,
        }
    }

    /// Whether `identity` is admitted (in any state).
    pub fn is_admitted(&self, identity: &WorkNodeIdentity) -> bool {
        self.nodes.contains_key(identity)
    }

    /// The effective priority of admitted `identity`.
    pub fn priority_of(&self, identity: &WorkNodeIdentity) -> Option<Priority> {
        self.nodes.get(identity).map(|n| n.priority)
    }

    /// The highest priority of any admitted work or waiting request of
    /// `canonical`, read from its own index only.
    pub fn highest_priority_for_file(&self, canonical: &Canonical) -> Option<Priority> {
        let records = self.files.get(canonical)?;
        let mut best: Option<Priority> = None;
        for (version, slot) in records.versions.iter() {
            let file =
                FileIdentity::new(canonical.clone(), version.incarnation, version.generation);
            for stage in &slot.nodes {
                let identity = WorkNodeIdentity::File(file.clone().at(*stage));
                if let Some(node) = self.nodes.get(&identity) {
                    best = best.max(Some(node.priority));
                }
            }
            for stage in &slot.groups {
                if let Some(members) = self.groups.get(&file.clone().at(*stage)) {
                    best = best.max(members.iter().map(|m| m.priority).max());
                }
            }
        }
        best
    }

    /// Request waiters registered on `key`.
    pub fn waiters_on(&self, key: &DepKey) -> usize {
        self.groups.get(key).map_or(0, Vec::len)
    }

    /// Consumers gated on `key`, in link order.
    pub fn consumers_of(&self, key: &DepKey) -> Vec<WorkNodeIdentity> {
        self.edges.waiters_of(key)
    }

    /// Dependencies `consumer` still waits on.
    pub fn dependencies_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        let mut deps = self.edges.deps_of(consumer);
        deps.sort();
        deps
    }

    /// Membership counts and backing capacity of edges, blockers, nodes and
    /// groups. Every membership count is zero after [`Self::reset`].
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        DependencyOccupancy {
            edges: self.edges.occupancy(),
            blockers: self.blockers.occupancy(),
            nodes: self.nodes.len(),
            groups: self.groups.len(),
            waiters: self.groups.values().map(Vec::len).sum(),
            files: self.files.len(),
            ready: self.ready.len(ResourceClass::Cpu) + self.ready.len(ResourceClass::Io),
            ready_backing: self.ready.backing_entries(),
        }
    }

    // ----- internals ------------------------------------------------------

    fn allocate_waiter(&mut self) -> WaiterId {
        let id = WaiterId(self.next_waiter);
        self.next_waiter += 1;
        id
    }

    fn expect_object(
        &self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<ObjectRecord, ObjectError> {
        let object = self.object(canonical).ok_or_else(|| ObjectError::NotLive {
            canonical: canonical.clone(),
        })?;
        if object.incarnation != incarnation {
            return Err(ObjectError::Replaced {
                canonical: canonical.clone(),
                expected: incarnation,
                live: object.incarnation,
            });
        }
        Ok(object)
    }

    fn node_mut(&mut self, identity: &WorkNodeIdentity) -> &mut WorkNode {
        self.nodes
            .get_mut(identity)
            .expect("the node was checked resident")
    }

    fn slot_mut(&mut self, file: &FileIdentity) -> &mut VersionSlot {
        self.files
            .entry(file.canonical.clone())
            .or_default()
            .versions
            .entry_or_default(file.version())
    }

    /// Adds `member` to `key`'s group. Returns the group size when it joined
    /// an existing group.
    fn add_member(&mut self, key: &DepKey, member: Member) -> Option<usize> {
        let members = self.groups.entry(key.clone()).or_default();
        members.push(member);
        let size = members.len();
        if size == 1 {
            add_stage(&mut self.slot_mut(&key.file).groups, key.stage);
            None
        } else {
            Some(size)
        }
    }

    fn group_priority(&self, key: &DepKey) -> Priority {
        self.groups
            .get(key)
            .and_then(|members| members.iter().map(|m| m.priority).max())
            .unwrap_or_default()
    }

    /// The one place a node enters the map. Private: every caller checked
    /// liveness (file work) or the identity kind (cache nodes) first.
    fn insert_node(&mut self, identity: WorkNodeIdentity, priority: Priority) {
        let admission = AdmissionId(self.next_admission);
        self.next_admission += 1;
        if let WorkNodeIdentity::File(key) = &identity {
            let (file, stage) = (key.file.clone(), key.stage);
            add_stage(&mut self.slot_mut(&file).nodes, stage);
        }
        let class = initial_class(&identity);
        self.nodes.insert(
            identity,
            WorkNode {
                admission,
                priority,
                class,
                state: NodeState::Gated,
                cancel: CancellationToken::new(),
            },
        );
        self.counters.admitted += 1;
    }

    /// Ensures file work `key` (live-checked by the caller) and the stages it
    /// needs exist, at no less than `priority`.
    fn ensure_file_node(&mut self, key: &DepKey, priority: Priority, effects: &mut Effects) {
        let identity = WorkNodeIdentity::File(key.clone());
        if self.nodes.contains_key(&identity) {
            self.raise(&identity, priority);
            return;
        }
        self.insert_node(identity.clone(), priority);
        let lower: Vec<DepKey> = match key.stage {
            TargetStage::Source => Vec::new(),
            TargetStage::Analysis => vec![key.file.clone().at(TargetStage::Source)],
            TargetStage::Artifact(_) => {
                let mut deps = vec![key.file.clone().at(TargetStage::Analysis)];
                deps.extend(self.live_blockers_of(&key.file, effects));
                deps
            }
        };
        for dep in lower {
            // Ranks are right by construction: every dependency listed above is
            // a strictly lower stage (blockers are filtered by `link_inner`).
            let _ = self.link_inner(&identity, dep, effects);
        }
        self.settle(&identity, effects);
    }

    /// Links without settling the consumer. See [`Self::link`].
    fn link_inner(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: DepKey,
        effects: &mut Effects,
    ) -> Result<LinkOutcome, LinkError> {
        if consumer_rank(consumer) <= dep.stage.rank() {
            return Err(LinkError::RankViolation {
                consumer: consumer.clone(),
                dep,
            });
        }
        let Some(node) = self.nodes.get(consumer) else {
            return Err(LinkError::ConsumerNotGated {
                consumer: consumer.clone(),
            });
        };
        if !matches!(node.state, NodeState::Gated | NodeState::Ready) {
            return Err(LinkError::ConsumerNotGated {
                consumer: consumer.clone(),
            });
        }
        let consumer_priority = node.priority;
        let producer = WorkNodeIdentity::File(dep.clone());
        match self.nodes.get(&producer).map(|n| n.state.clone()) {
            Some(NodeState::Done) => return Ok(LinkOutcome::AlreadySatisfied),
            Some(NodeState::Failed(failure)) => {
                self.fail_node(consumer, &dep, &failure, effects);
                return Ok(LinkOutcome::Failed);
            }
            Some(_) => self.raise(&producer, consumer_priority),
            None if self.is_live(&dep.file) => {
                // Link before creating the producer: if it fails as it is
                // created (one of its own dependencies already failed), the
                // failure reaches this consumer through the edge, instead of
                // leaving it gated on a producer that no longer exists.
                self.edges.link(consumer, &dep);
                if self.ready.remove(consumer) {
                    self.node_mut(consumer).state = NodeState::Gated;
                }
                self.ensure_file_node(&dep, consumer_priority, effects);
                return Ok(if self.nodes.contains_key(consumer) {
                    LinkOutcome::Linked
                } else {
                    LinkOutcome::Failed
                });
            }
            None => {
                let failure = Arc::new(DagFailure::Shutdown {
                    canonical: dep.file.canonical.clone(),
                });
                self.fail_node(consumer, &dep, &failure, effects);
                return Ok(LinkOutcome::Failed);
            }
        }
        if !self.edges.link(consumer, &dep) {
            return Ok(LinkOutcome::AlreadyLinked);
        }
        if self.ready.remove(consumer) {
            self.node_mut(consumer).state = NodeState::Gated;
        }
        Ok(LinkOutcome::Linked)
    }

    /// Moves a gated node with no dependencies left to the ready queue.
    fn settle(&mut self, identity: &WorkNodeIdentity, effects: &mut Effects) {
        let Some(node) = self.nodes.get_mut(identity) else {
            return;
        };
        if matches!(node.state, NodeState::Gated) && self.edges.remaining(identity) == 0 {
            node.state = NodeState::Ready;
            let (class, priority) = (node.class, node.priority);
            self.ready.insert(identity.clone(), class, priority);
            effects.newly_ready += 1;
        }
    }

    /// Raises `identity` and everything it waits on to at least `priority`
    /// (priority inheritance). Edges only point down in stage rank, so the
    /// walk is bounded by the number of stages.
    fn raise(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        // Most calls raise nothing (the producer already runs at least as
        // urgently): answer those without allocating the walk.
        if self
            .nodes
            .get(identity)
            .is_none_or(|node| node.priority >= priority)
        {
            return;
        }
        let mut pending = vec![identity.clone()];
        while let Some(identity) = pending.pop() {
            let Some(node) = self.nodes.get_mut(&identity) else {
                continue;
            };
            if node.priority >= priority {
                continue;
            }
            node.priority = priority;
            if matches!(node.state, NodeState::Ready) {
                self.ready.raise(&identity, priority);
            }
            pending.extend(
                self.edges
                    .deps_of(&identity)
                    .into_iter()
                    .map(WorkNodeIdentity::File),
            );
        }
    }

    fn answer_group(
        &mut self,
        key: &DepKey,
        outcome: Result<(), DagFailure>,
        effects: &mut Effects,
    ) {
        let Some(members) = self.groups.remove(key) else {
            return;
        };
        self.unindex_group(key);
        for member in members {
            effects.answers.push(Answer {
                waiter: member.waiter,
                key: key.clone(),
                outcome: outcome.clone(),
            });
        }
    }

    fn unindex_group(&mut self, key: &DepKey) {
        if let Some(records) = self.files.get_mut(&key.file.canonical)
            && let Some(slot) = records.versions.get_mut(&key.file.version())
        {
            remove_stage(&mut slot.groups, key.stage);
            if slot.is_empty() {
                records.versions.remove(&key.file.version());
            }
        }
        self.drop_file_if_empty(&key.file.canonical);
    }

    /// Stops `node`, which just left the map: an unfinished node has its
    /// token cancelled and is counted, and a running one is reported
    /// abandoned (its result will be refused).
    fn abandon(&mut self, identity: &WorkNodeIdentity, node: &WorkNode, effects: &mut Effects) {
        if node.is_finished() {
            return;
        }
        node.cancel.cancel();
        self.counters.cancelled += 1;
        if matches!(node.state, NodeState::Running) {
            effects.abandoned_running.push(identity.clone());
        }
    }

    /// The live object of `canonical`, created when there is none (reported
    /// in `effects.ingested`, so the caller publishes a node for it).
    fn ensure_live(&mut self, canonical: &Canonical, effects: &mut Effects) -> FileIdentity {
        let (object, created) = self.ensure_object(canonical);
        if created {
            effects.ingested.push((canonical.clone(), object));
        }
        FileIdentity::new(canonical.clone(), object.incarnation, object.generation)
    }

    /// `owner`'s blocker keys, each at its file's live version: a reference
    /// to a version that is no longer live (its file was removed) is
    /// re-pointed to the live object, which is ensured when the file has
    /// none.
    fn live_blockers_of(&mut self, owner: &FileIdentity, effects: &mut Effects) -> Vec<DepKey> {
        let mut keys = self.blockers.blockers_of(owner);
        for key in &mut keys {
            if self.is_live(&key.file) {
                continue;
            }
            let live = self.ensure_live(&key.file.canonical, effects).at(key.stage);
            self.blockers.repoint(owner, key, live.clone());
            *key = live;
        }
        keys.sort();
        keys.dedup();
        keys
    }

    /// Removes a node from every table (ready queue, edges, index). Its
    /// consumers are not touched; the caller decides their fate.
    fn drop_node(&mut self, identity: &WorkNodeIdentity, effects: &mut Effects) {
        let Some(node) = self.nodes.remove(identity) else {
            return;
        };
        self.abandon(identity, &node, effects);
        self.ready.remove(identity);
        self.edges.remove_consumer(identity);
        if let WorkNodeIdentity::File(key) = identity
            && let Some(records) = self.files.get_mut(&key.file.canonical)
            && let Some(slot) = records.versions.get_mut(&key.file.version())
        {
            remove_stage(&mut slot.nodes, key.stage);
            if slot.is_empty() {
                records.versions.remove(&key.file.version());
            }
            self.drop_file_if_empty(&key.file.canonical);
        }
    }

    /// Fails `consumer` because `dep` failed with `cause`: its waiters are
    /// answered `DependencyFailed`, it is dropped, and its own consumers fail
    /// in turn.
    fn fail_node(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: &DepKey,
        cause: &Arc<DagFailure>,
        effects: &mut Effects,
    ) {
        let failure = Arc::new(DagFailure::DependencyFailed {
            dep: dep.clone(),
            cause: Arc::clone(cause),
        });
        let mut pending = vec![(consumer.clone(), failure)];
        while let Some((identity, failure)) = pending.pop() {
            if !self.nodes.contains_key(&identity) {
                continue;
            }
            self.drop_node(&identity, effects);
            if let WorkNodeIdentity::File(key) = &identity {
                self.answer_group(key, Err((*failure).clone()), effects);
                let next = Arc::new(DagFailure::DependencyFailed {
                    dep: key.clone(),
                    cause: Arc::clone(&failure),
                });
                for consumer in self.edges.take_waiters(key) {
                    pending.push((consumer, Arc::clone(&next)));
                }
            }
        }
    }

    fn fail_consumers(&mut self, key: &DepKey, cause: &Arc<DagFailure>, effects: &mut Effects) {
        for consumer in self.edges.take_waiters(key) {
            self.fail_node(&consumer, key, cause, effects);
        }
    }

    fn artifact_nodes_of(&self, owner: &FileIdentity) -> Vec<WorkNodeIdentity> {
        self.files
            .get(&owner.canonical)
            .and_then(|records| records.versions.get(&owner.version()))
            .map(|slot| {
                slot.nodes
                    .iter()
                    .filter(|stage| matches!(stage, TargetStage::Artifact(_)))
                    .map(|stage| WorkNodeIdentity::File(owner.clone().at(*stage)))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn is_gated_or_ready(&self, identity: &WorkNodeIdentity) -> bool {
        matches!(
            self.nodes.get(identity).map(|n| &n.state),
            Some(NodeState::Gated | NodeState::Ready)
        )
    }

    fn drop_file_if_empty(&mut self, canonical: &Canonical) {
        if let Some(records) = self.files.get(canonical)
            && records.object.is_none()
            && records.versions.is_empty()
        {
            self.files.remove(canonical);
        }
    }

    /// Retires every record of `canonical` below `bound`, in one call. Driven
    /// by the canonical's own indices: its version slots, the edge store's
    /// file index and the blocker registry's per-file indices.
    fn sweep(
        &mut self,
        canonical: &Canonical,
        bound: SourceVersion,
        reason: SweepReason,
    ) -> Effects {
        let mut effects = Effects::default();
        // Waiters follow only to a live version the sweep leaves standing.
        let live = self
            .live_file(canonical)
            .filter(|live| live.version() >= bound);
        let retired: Vec<(SourceVersion, VersionSlot)> = match self.files.get_mut(canonical) {
            Some(records) => records.versions.split_below(&bound),
            None => Vec::new(),
        };
        let mut retired_keys: Vec<DepKey> = Vec::new();
        let mut retired_groups: Vec<DepKey> = Vec::new();
        for (version, slot) in retired {
            let file =
                FileIdentity::new(canonical.clone(), version.incarnation, version.generation);
            retired_keys.extend(slot.nodes.iter().map(|stage| file.clone().at(*stage)));
            retired_groups.extend(slot.groups.iter().map(|stage| file.clone().at(*stage)));
        }
        // Keys with dependency waiters but no node (defensive: producers are
        // created when named, so this finds only what the slots already had).
        for key in self.edges.keys_below(canonical, bound) {
            if !retired_keys.contains(&key) {
                retired_keys.push(key);
            }
        }
        retired_keys.sort();
        retired_groups.sort();

        // 1. Nodes: drop them; move their consumers in other files onto the
        //    live version of the same stage. On removal there is none: the
        //    consumers (Artifacts of importers) are re-linked in step 5.
        let mut orphans: Vec<(WorkNodeIdentity, DepKey)> = Vec::new();
        for key in &retired_keys {
            let identity = WorkNodeIdentity::File(key.clone());
            for consumer in self.edges.take_waiters(key) {
                orphans.push((consumer, key.clone()));
            }
            if let Some(node) = self.nodes.remove(&identity) {
                self.abandon(&identity, &node, &mut effects);
                self.ready.remove(&identity);
                self.edges.remove_consumer(&identity);
            }
        }
        let mut relink: Vec<(WorkNodeIdentity, DepKey)> = Vec::new();
        for (consumer, old) in orphans {
            if !self.nodes.contains_key(&consumer) {
                continue; // retired itself (same file) or already failed
            }
            match &live {
                Some(live) => {
                    let _ = self.link_inner(&consumer, live.clone().at(old.stage), &mut effects);
                    self.settle(&consumer, &mut effects);
                }
                None => relink.push((consumer, old)),
            }
        }

        // 2. Request waiters: follow, supersede or shut down.
        for key in retired_groups {
            let members = self.groups.remove(&key).unwrap_or_default();
            for member in members {
                let follows = match reason {
                    SweepReason::NewGeneration => member.policy == WaitPolicy::Follow,
                    SweepReason::Rehome => true,
                    SweepReason::Removal => false,
                };
                match (&live, follows) {
                    (Some(live), true) => {
                        self.counters.followed += 1;
                        let new_key = live.clone().at(key.stage);
                        let identity = WorkNodeIdentity::File(new_key.clone());
                        match self.nodes.get(&identity).map(|n| n.state.clone()) {
                            Some(NodeState::Done) => effects.answers.push(Answer {
                                waiter: member.waiter,
                                key: new_key,
                                outcome: Ok(()),
                            }),
                            Some(NodeState::Failed(failure)) => effects.answers.push(Answer {
                                waiter: member.waiter,
                                key: new_key,
                                outcome: Err((*failure).clone()),
                            }),
                            _ => {
                                let _ = self.add_member(&new_key, member);
                                self.ensure_file_node(&new_key, member.priority, &mut effects);
                            }
                        }
                    }
                    (Some(_), false) if matches!(reason, SweepReason::NewGeneration) => {
                        self.counters.superseded += 1;
                        effects.answers.push(Answer {
                            waiter: member.waiter,
                            key: key.clone(),
                            outcome: Err(DagFailure::Superseded {
                                canonical: canonical.clone(),
                            }),
                        });
                    }
                    _ => effects.answers.push(Answer {
                        waiter: member.waiter,
                        key: key.clone(),
                        outcome: Err(DagFailure::Shutdown {
                            canonical: canonical.clone(),
                        }),
                    }),
                }
            }
        }

        // 3. Blocker records: owners below the bound lose theirs; references
        //    to retired versions move to the live version (or are dropped).
        self.blockers.retire_owners_below(canonical, bound);
        let mut affected_owners: Vec<FileIdentity> = Vec::new();
        for (owner, old) in self.blockers.references_below(canonical, bound) {
            // On removal the reference stays, naming the removed version: the
            // owner still depends on the file, and its next Artifact ensures
            // the file again (`live_blockers_of`).
            if let Some(live) = &live {
                self.blockers
                    .repoint(&owner, &old, live.clone().at(old.stage));
            }
            if !affected_owners.contains(&owner) {
                affected_owners.push(owner);
            }
        }
        // 4. Artifacts built (or being built) on a retired blocker version are
        //    stale: drop them, and re-admit those that have waiters, gated on
        //    the blockers' live versions. Their waiters keep waiting on the
        //    same key; a running build's completion is refused (its admission
        //    is gone).
        affected_owners.sort();
        for owner in affected_owners {
            if !self.is_live(&owner) {
                continue;
            }
            for artifact in self.artifact_nodes_of(&owner) {
                let done = self.is_done(&artifact);
                self.drop_node(&artifact, &mut effects);
                if done {
                    effects.invalidated.push(artifact.clone());
                }
                let key = artifact
                    .as_dep_key()
                    .expect("artifact nodes are file work")
                    .clone();
                if self.groups.contains_key(&key) {
                    let priority = self.group_priority(&key);
                    self.ensure_file_node(&key, priority, &mut effects);
                }
            }
        }
        // 5. Consumers of a removed file that step 4 did not rebuild: an
        //    Artifact waits on its owner's blockers, ensured again; anything
        //    else fails, as the file it waited on is gone.
        for (consumer, old) in relink {
            if !self.nodes.contains_key(&consumer) {
                continue;
            }
            let owner = match &consumer {
                WorkNodeIdentity::File(key) if matches!(key.stage, TargetStage::Artifact(_)) => {
                    Some(key.file.clone())
                }
                _ => None,
            };
            let names_it = owner.as_ref().is_some_and(|owner| {
                self.blockers
                    .blockers_of(owner)
                    .iter()
                    .any(|blocker| blocker.file.canonical == *canonical)
            });
            match owner {
                Some(owner) if names_it => {
                    for blocker in self.live_blockers_of(&owner, &mut effects) {
                        let _ = self.link_inner(&consumer, blocker, &mut effects);
                    }
                    self.settle(&consumer, &mut effects);
                }
                _ => {
                    let cause = Arc::new(DagFailure::Shutdown {
                        canonical: canonical.clone(),
                    });
                    self.fail_node(&consumer, &old, &cause, &mut effects);
                }
            }
        }
        self.drop_file_if_empty(canonical);
        effects
    }
}

#[cfg(test)]
mod tests;
