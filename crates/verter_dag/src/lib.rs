//! The lifecycle authority's state: identities, admitted work, waiter groups,
//! dependency edges, blocker records, the ready queue and the capacity
//! ledger.
//!
//! This crate is the bottom layer: it names no other verter crate, does no
//! I/O, spawns no thread, takes no lock and wakes no one. The layers above
//! keep one [`SchedulerDag`] under their one DAG lock.
//!
//! # The effects pattern
//! Every [`SchedulerDag`] operation mutates the state and *returns* what must
//! happen after the lock is released — waiters to answer ([`Answer`]), dedupe
//! joins to report ([`DedupJoinerEvent`]), pumps to wake (`newly_ready`),
//! running work to abandon — as an [`Effects`] value:
//!
//! ```
//! use verter_dag::{Canonical, Priority, ResourceClass, SchedulerDag, TargetStage, WaitPolicy,
//!                  WorkNodeIdentity};
//!
//! let mut dag = SchedulerDag::default();
//! let canonical = Canonical::from("src/lib.rs");
//! let (object, _created) = dag.ensure_object(&canonical);
//! let file = dag.live_file(&canonical).expect("just created");
//! assert_eq!(file.incarnation, object.incarnation);
//!
//! // Under the lock: register the request, then admit its work.
//! let key = file.clone().at(TargetStage::Source);
//! let registration = dag.register_request(key.clone(), WaitPolicy::Follow, Priority::Normal);
//! let effects = dag.submit_file(&file, &WorkNodeIdentity::File(key)).expect("live witness");
//! assert_eq!(effects.newly_ready, 1);
//!
//! // A pump dequeues (reserving capacity), runs the work unlocked, completes it.
//! let dispatch = dag.dequeue_ready(ResourceClass::Io).expect("Source starts on I/O");
//! let (current, effects) = dag.complete(dispatch);
//! assert!(current);
//! // After unlocking, the caller answers the waiter with the work's output.
//! assert_eq!(effects.answers[0].waiter, registration.waiter);
//! assert_eq!(dag.ledger().in_use(), 0);
//! ```
//!
//! Because nothing here blocks or calls out, every dependency rule is tested
//! deterministically, without threads: the unit tests beside each module, and
//! a model-based property test (`tests/it/model.rs`) that checks every step
//! against a small reference model.
//!
//! # Invariants and the tests that pin them
//! - Identities: see [`identity`](crate#identities) —
//!   `incarnations_are_unique_across_threads`,
//!   `successor_at_generation_zero_orders_after_predecessor`,
//!   `exhausted_generation_refuses_and_is_unchanged`.
//! - Admission only for a live object at its current generation:
//!   `submit_refuses_a_stale_or_foreign_witness`.
//! - Producers exist once named, and no consumer waits on one that is gone:
//!   `linking_to_an_unadmitted_producer_creates_it`,
//!   `a_producer_that_fails_as_it_is_created_fails_its_consumer`.
//! - Edges point strictly down in stage rank:
//!   `link_refuses_an_edge_that_breaks_stage_rank`.
//! - Every waiter answered exactly once: `every_waiter_is_answered_exactly_once_on_removal`
//!   and the model test.
//! - Every step agrees with a sequential reference model — each waiter
//!   answered at most once and, after draining, exactly once; nothing below a
//!   retirement dequeued or answered `Ok`; the ledger equal to the dispatches
//!   held; blocker records and demand equal to a recount; no wake-up lost;
//!   occupancy empty after reset:
//!   `the_dag_agrees_with_its_reference_model_after_every_step`
//!   (`tests/it/model.rs`, 10 000 seeded cases).
//! - A step that fails part-way still returns what it did:
//!   `a_cache_node_on_a_dead_dependency_fails_and_keeps_the_effects_so_far`.
//! - Retirement is per canonical: `retiring_one_file_touches_no_other_file`.
//! - Capacity released exactly once, stale completions publish nothing:
//!   `stale_completion_releases_capacity_and_publishes_nothing`.
//! - Demand refcount exact in every funnel:
//!   `demand_matches_a_recount_after_every_funnel`.
//! - Fair selection: `low_priority_is_never_starved`.
//! - Occupancy zero after reset: `reset_answers_everyone_and_empties_every_table`.
//!
//! # Identities
//! - [`Canonical`]: the canonical path of a file, cheap to clone, with a dense
//!   id that [`CanonicalMap`] indexes by.
//! - [`Incarnation`]: a process-unique, monotonic id of one file object,
//!   allocated only by [`Incarnation::allocate`].
//! - [`Generation`]: a per-object counter of source versions with a checked
//!   [`Generation::advance`].
//! - [`SourceVersion`]: `(incarnation, generation)`, ordered incarnation first.
//! - [`SubmissionLifetime`]: what a request is bound to from submission until
//!   the file is removed or reset.
//! - [`TargetStage`], [`ProfileHash`]: which stage of a file is wanted.
//! - [`FileIdentity`], [`DepKey`], [`WorkNodeIdentity`]: the one identity
//!   shape for work on files (a file identity plus a stage) and for cache nodes.
//! - [`Priority`], [`SchedulerCacheId`].
//! - [`CancellationToken`], with the run gate the layer above begins a
//!   host call through ([`CancellationToken::begin_run`], marked with a
//!   [`RunnerId`]), and [`SchedulerDag::running_tokens`], the tokens a
//!   reset cancels and its caller waits on.

mod blockers;
mod canonical_map;
mod dag;
mod edges;
mod effects;
mod error;
mod hash;
mod identity;
mod ready;
mod small_set;
mod vec_map;
mod waiter_ids;

pub use blockers::BlockerOccupancy;
pub use canonical_map::CanonicalMap;
pub use dag::{
    ChainEnd, ConsumerChain, DEFAULT_REMOTE_BUDGET, DagConfig, DagCounters, DependencyOccupancy,
    Dismantled, LinkOutcome, MAX_DEMAND_DEPTH, ObjectError, Registration, RemoteRoutes,
    SchedulerDag,
};
pub use edges::EdgeOccupancy;
pub use effects::{Answer, DedupJoinerEvent, Dispatch, Effects, FailedWork, WaitPolicy, WaiterId};
pub use error::{DagFailure, FailureCause, GenerationExhausted, LinkError};
pub use identity::{
    CancellationToken, Canonical, DepKey, FileIdentity, Generation, Incarnation, ObjectRecord,
    Priority, ProfileHash, RunnerId, SchedulerCacheId, SourceVersion, SubmissionLifetime,
    TargetStage, WorkNodeIdentity,
};
pub use ready::{AdmissionId, DEFAULT_LANE_WEIGHTS, LedgerSnapshot, ResourceClass};
