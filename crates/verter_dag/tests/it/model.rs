//! A model-based property test of [`SchedulerDag`], through its public API
//! only.
//!
//! Random sequences of 1 to 63 operations on three files — ensure an object,
//! register and submit a request, record and drain blockers, link and unlink
//! edges, submit cache nodes, dequeue, complete, fail or move held dispatches,
//! cancel, advance a generation, retire, re-home, remove, reset — run against
//! the DAG and against a small sequential reference model. The model knows
//! only what a host can know: which version of each file is live, which
//! versions it has seen, where each unanswered waiter waits, each owner's
//! blocker record and which dispatches the test holds.
//!
//! # What is checked after every step
//! 1. Every answer goes to a registered, unanswered waiter, names the key the
//!    model says it waits on, and has an outcome the operation may produce
//!    (`Superseded` only from a generation advance, `Shutdown` only from
//!    removal or reset, ...). So every waiter is answered at most once.
//! 2. An `Ok` answer names a live version; a dispatch is only ever dequeued
//!    for a live version (a version is dead once the model's live version of
//!    its file has moved past it, or the file has no object): nothing below a
//!    retirement is dequeued or answered `Ok` after it.
//! 3. No waiter is left on a dead version; each waits on admitted work at no
//!    less than its own priority, whose dependencies are all admitted (a
//!    producer exists as soon as it is named); group sizes match the model.
//! 4. The ledger holds exactly one reservation per held dispatch, per class;
//!    the batched ones (taken only while a budgeted one of the class is
//!    held) are counted apart, and the others never exceed the budget.
//! 5. Blocker records equal the model's (record, replace, drain, retirement,
//!    re-home, removal, reset), and every recorded key, and the Analysis of
//!    every file with a waiting Analysis or Artifact request, is demanded.
//! 6. A stale completion, failure or move publishes nothing; work abandoned
//!    while running is reported exactly when its dispatch stops being current;
//!    work that became ready is reported (no wake-up is lost); a retirement
//!    below the live version changes nothing; rank-breaking links are refused.
//! 7. After `reset()` every membership count of `dependency_occupancy()` is
//!    zero.
//!
//! At the end of each case the test drains: it returns every held dispatch
//! and runs all ready work to completion. Then every waiter must have been
//! answered exactly once, the ledger and the ready queue must be empty, and a
//! final `reset()` must answer no one and leave every table empty.
//!
//! The cases come from a fixed seed, so a failure reproduces;
//! `PROPTEST_RNG_SEED` explores another seed and `PROPTEST_CASES` changes the
//! number of cases (10 000 by default).
//!
//! # Layout
//! This file holds the operations, their strategies and the tests; the
//! reference model is in `model/reference.rs`, a case in progress and its
//! shared step in `model/run.rs`, each operation's step in
//! `model/requests.rs`, `model/dispatches.rs` and `model/lifecycle.rs`, and
//! the checks after every step and at the end of a case in
//! `model/checks.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError};
use verter_dag::{
    AdmissionId, Answer, Canonical, DEFAULT_LANE_WEIGHTS, DagConfig, DagFailure, DedupJoinerEvent,
    DepKey, Dispatch, Effects, FileIdentity, Generation, LinkError, LinkOutcome, ObjectError,
    Priority, ProfileHash, RemoteRoutes, ResourceClass, SchedulerCacheId, SchedulerDag,
    SourceVersion, SubmissionLifetime, TargetStage, WaitPolicy, WaiterId, WorkNodeIdentity,
};

use run::Run;

mod checks;
mod dispatches;
mod lifecycle;
mod reference;
mod requests;
mod run;

/// The files of every case.
const FILES: [&str; 3] = ["a.rs", "b.rs", "c.rs"];

/// The stages a pick chooses from: two artifact profiles.
const STAGES: [TargetStage; 4] = [
    TargetStage::Source,
    TargetStage::Analysis,
    TargetStage::Artifact(ProfileHash(1)),
    TargetStage::Artifact(ProfileHash(2)),
];

/// Small budgets, so that a full ledger is common; Artifacts and cache
/// nodes wait on the remote class, so all three classes are exercised.
const CONFIG: DagConfig = DagConfig {
    cpu_budget: 2,
    io_budget: 1,
    lane_weights: DEFAULT_LANE_WEIGHTS,
    remote_budget: 1,
    remote: RemoteRoutes {
        artifacts: true,
        cache_nodes: true,
    },
};

/// The seed of the default run, so a failure reproduces.
const SEED: u64 = 0x7665_7274_6572_0003;

/// The number of cases unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 10_000;

/// The cache of every cache node the test submits.
const CACHE: SchedulerCacheId = SchedulerCacheId(7);

/// A file stage at a known version: `back` counts known versions back from the
/// newest one (0 = the newest, which is live unless the file was removed).
#[derive(Debug, Clone, Copy)]
struct Pick {
    file: u8,
    stage: u8,
    back: u8,
}

/// Work a link, unlink or cancel names: a file stage or a cache node.
#[derive(Debug, Clone, Copy)]
enum Work {
    File(Pick),
    Cache(u8),
}

/// One operation. Small integer fields keep shrinking simple.
#[derive(Debug, Clone)]
enum Op {
    EnsureObject {
        file: u8,
    },
    Request {
        work: Pick,
        policy: WaitPolicy,
        priority: Priority,
    },
    RecordBlockers {
        owner: Pick,
        blockers: Vec<Pick>,
    },
    DrainBlockers {
        owner: Pick,
    },
    Link {
        consumer: Work,
        dep: Pick,
    },
    Unlink {
        consumer: Work,
        dep: Pick,
    },
    SubmitCacheNode {
        key: u8,
        priority: Priority,
        deps: Vec<Pick>,
    },
    Dequeue {
        class: ResourceClass,
        /// Batched: more work for the holder of a budgeted dispatch (a
        /// plain dequeue when the test holds none of the class).
        batched: bool,
    },
    Complete {
        held: u8,
    },
    Fail {
        held: u8,
    },
    ContinueOn {
        held: u8,
        class: ResourceClass,
    },
    Cancel {
        work: Work,
    },
    AdvanceGeneration {
        file: u8,
        stale: bool,
    },
    RetireGenerationsBelow {
        bound: Pick,
    },
    RehomeObject {
        file: u8,
        stale: bool,
    },
    RemoveObject {
        file: u8,
    },
    Reset,
}

fn file_index() -> impl Strategy<Value = u8> {
    0..FILES.len() as u8
}

fn back() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)]
}

fn pick() -> impl Strategy<Value = Pick> {
    (file_index(), 0..STAGES.len() as u8, back()).prop_map(|(file, stage, back)| Pick {
        file,
        stage,
        back,
    })
}

/// Another file's Analysis, as a blocker record names it.
fn analysis_pick() -> impl Strategy<Value = Pick> {
    (file_index(), back()).prop_map(|(file, back)| Pick {
        file,
        stage: 1,
        back,
    })
}

fn work() -> impl Strategy<Value = Work> {
    prop_oneof![4 => pick().prop_map(Work::File), 1 => (0..2u8).prop_map(Work::Cache)]
}

fn priority() -> impl Strategy<Value = Priority> {
    proptest::sample::select(Priority::ALL.to_vec())
}

fn policy() -> impl Strategy<Value = WaitPolicy> {
    prop_oneof![Just(WaitPolicy::Follow), Just(WaitPolicy::Pinned)]
}

fn class() -> impl Strategy<Value = ResourceClass> {
    proptest::sample::select(ResourceClass::ALL.to_vec())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => file_index().prop_map(|file| Op::EnsureObject { file }),
        6 => (pick(), policy(), priority())
            .prop_map(|(work, policy, priority)| Op::Request { work, policy, priority }),
        2 => (pick(), proptest::collection::vec(analysis_pick(), 0..3))
            .prop_map(|(owner, blockers)| Op::RecordBlockers { owner, blockers }),
        1 => pick().prop_map(|owner| Op::DrainBlockers { owner }),
        2 => (work(), pick()).prop_map(|(consumer, dep)| Op::Link { consumer, dep }),
        1 => (work(), pick()).prop_map(|(consumer, dep)| Op::Unlink { consumer, dep }),
        1 => (0..2u8, priority(), proptest::collection::vec(pick(), 0..3))
            .prop_map(|(key, priority, deps)| Op::SubmitCacheNode { key, priority, deps }),
        5 => class().prop_map(|class| Op::Dequeue { class, batched: false }),
        1 => class().prop_map(|class| Op::Dequeue { class, batched: true }),
        4 => any::<u8>().prop_map(|held| Op::Complete { held }),
        1 => any::<u8>().prop_map(|held| Op::Fail { held }),
        3 => (any::<u8>(), class()).prop_map(|(held, class)| Op::ContinueOn { held, class }),
        1 => work().prop_map(|work| Op::Cancel { work }),
        2 => (file_index(), any::<bool>())
            .prop_map(|(file, stale)| Op::AdvanceGeneration { file, stale }),
        1 => pick().prop_map(|bound| Op::RetireGenerationsBelow { bound }),
        1 => (file_index(), any::<bool>()).prop_map(|(file, stale)| Op::RehomeObject { file, stale }),
        1 => file_index().prop_map(|file| Op::RemoveObject { file }),
        1 => Just(Op::Reset),
    ]
}

fn config() -> ProptestConfig {
    let base = ProptestConfig::default();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(CASES);
    ProptestConfig {
        cases,
        // A seed from `PROPTEST_RNG_SEED` wins; otherwise the fixed one.
        rng_seed: match base.rng_seed {
            RngSeed::Random => RngSeed::Fixed(SEED),
            fixed => fixed,
        },
        // The seed reproduces a failure; nothing is written into the tree.
        failure_persistence: None,
        ..base
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_dag_agrees_with_its_reference_model_after_every_step(
        ops in proptest::collection::vec(op(), 1..64)
    ) {
        let mut run = Run::new();
        for op in &ops {
            run.apply(op)?;
        }
        run.drain_and_reset()?;
    }
}

/// Found by the model test once batched dequeues joined the operation mix
/// (the mix moved, not the DAG): removing a blocker while its importer's
/// Artifact is requested ingests the blocker again and re-points the
/// importer's record to the new object, which the model once failed to
/// follow.
#[test]
fn an_importer_record_re_pointed_to_its_ingested_blocker_agrees_with_the_model() {
    let pick = |file, stage| Pick {
        file,
        stage,
        back: 0,
    };
    let ops = [
        Op::EnsureObject { file: 0 },
        Op::EnsureObject { file: 1 },
        Op::RecordBlockers {
            owner: pick(0, 0),
            blockers: vec![pick(1, 1)],
        },
        Op::Request {
            work: pick(0, 2),
            policy: WaitPolicy::Follow,
            priority: Priority::Low,
        },
        Op::RemoveObject { file: 1 },
        Op::DrainBlockers { owner: pick(0, 0) },
    ];
    let mut run = Run::new();
    for op in &ops {
        run.apply(op).unwrap();
    }
    run.drain_and_reset().unwrap();
}
