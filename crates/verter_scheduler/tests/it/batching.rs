//! Several stages per hold: a stage thread commits the quick stages it ran
//! and takes its next ones in one hold, answers stay what one stage per
//! hold answers, and a stage that waits on a stage its own thread finished
//! but has not committed yet is not left waiting.

use std::sync::Arc;
use std::time::Duration;

use verter_dag::{Priority, TargetStage};
use verter_scheduler::{ConfigError, Request, SchedulerConfig};

use crate::support::*;

/// One stage thread with no time bound on a batch, `stages_per_hold` as
/// given: how many stages a hold takes depends only on the ready work.
fn one_thread(hooks: &Arc<GateHooks>, stages_per_hold: usize) -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config.hooks = Arc::clone(hooks) as _;
    config.stages_per_hold = stages_per_hold;
    config.batch_time = Duration::MAX;
    config
}

/// `n` files, each importing the next as a blocker, requested as
/// Artifacts in one atomic batch with their texts; returns every answer.
fn build(config: SchedulerConfig, n: usize) -> (Vec<String>, verter_scheduler::SchedulerCounters) {
    let files = MemFiles::default();
    let executor = LineExecutor::default();
    let scheduler = threaded_with(&files, &executor, config);
    let asks = (0..n)
        .map(|i| {
            let text = format!("file {i}\nuse f{}.rs", (i + 1) % n);
            Artifact(PROFILE).of(format!("f{i}.rs")).text(text)
        })
        .collect();
    let handles = scheduler.ask_batch_atomic(asks);
    let answers = handles
        .iter()
        .map(|handle| scheduler.wait(handle).expect("built").data().clone())
        .collect();
    assert_quiescent(
        &scheduler,
        &handles.iter().map(|h| h.untyped()).collect::<Vec<_>>(),
    );
    (answers, scheduler.observe().counters())
}

#[test]
fn a_stage_thread_commits_several_quick_stages_in_one_hold() {
    watchdog("several stages per hold", || {
        let hooks = Arc::new(GateHooks::default());
        let (batched, counters) = build(one_thread(&hooks, 8), 40);
        let stages = counters.source_runs + counters.analysis_runs + counters.artifact_runs;
        assert_eq!(stages, 120);
        assert!(
            counters.batched_stages > 0,
            "no hold took more than one stage"
        );
        assert!(
            counters.completion_holds < stages,
            "{} holds for {stages} stages",
            counters.completion_holds
        );
        // The same answers as one stage per hold.
        let (single, counters) = build(one_thread(&hooks, 1), 40);
        assert_eq!(counters.batched_stages, 0);
        assert_eq!(counters.completion_holds, stages);
        assert_eq!(batched, single);
    });
}

/// One stage thread batching `first.rs` alone, then `a.rs`, `b.rs` and
/// `c.rs` in one round (the hold that commits `first.rs` takes all three),
/// where the parse of `waiter` waits, inside the stage, for the Source of
/// `waited`. Every request must be answered and the ledger end at zero.
fn a_wait_inside_a_round(waiter: &'static str, waited: &'static str) {
    let files = MemFiles::default();
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = threaded_with(&files, &executor, one_thread(&hooks, 8));
    let slot: SchedulerSlot = Default::default();
    slot.set(Arc::downgrade(&scheduler)).ok();
    {
        let slot = Arc::clone(&slot);
        let _ = executor.on_source.set(Box::new(move |path| {
            if path != waiter {
                return;
            }
            let scheduler = slot.get().and_then(|w| w.upgrade()).expect("alive");
            let handle = scheduler.submit_request(Request::new(waited, TargetStage::Source));
            scheduler.wait(&handle).expect("the waited-on file parsed");
        }));
    }
    let batch = scheduler.submit_batch_atomic(
        ["first.rs", "a.rs", "b.rs", "c.rs"]
            .into_iter()
            .map(|path| Request::new(path, TargetStage::Source).text(format!("{path} text")))
            .collect(),
    );
    for result in scheduler.wait_batch(&batch) {
        result.expect("parsed");
    }
    let counters = scheduler.observe().counters();
    assert!(counters.batched_stages >= 2, "{counters:?}");
    assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
}

/// `b.rs`'s parse waits for `a.rs`'s Source, which the same thread ran
/// earlier in the round and has not committed yet. The wait commits it
/// first: without that, the thread would wait on itself forever (the
/// watchdog fails the test).
#[test]
fn a_stage_waiting_on_its_own_threads_uncommitted_stage_is_answered() {
    watchdog("waiting on a unflushed stage", || {
        a_wait_inside_a_round("b.rs", "a.rs");
    });
}

/// `a.rs`'s parse, the first of the round to run, waits for `b.rs`'s
/// Source, which this very thread holds, dispatched and not yet run. The
/// wait runs the rest of the round on the waiting thread, nested: without
/// that, the thread would wait on itself forever.
#[test]
fn a_stage_waiting_on_a_later_stage_of_its_own_round_is_answered() {
    watchdog("waiting on a later stage of the round", || {
        a_wait_inside_a_round("a.rs", "b.rs");
    });
}

/// ```text
/// one stage thread, rounds of up to 8 stages, no time bound
/// batch: u.rs's Artifact (High) and six Normal parses, with their texts
/// round 1: u's parse (High, picked first)
/// round 2: u's Analysis among the Normal parses
///   u's Analysis ran ─▶ committed at once; the hold keeps u's Artifact
///   u's Artifact runs next, and only then the round's other parses
/// then: u's Artifact ran right after its Analysis; every answer as usual
/// ```
#[test]
fn an_urgent_stage_is_committed_before_the_rest_of_its_round_runs() {
    watchdog("urgent stage ends its round", || {
        let hooks = Arc::new(GateHooks::default());
        let mut config = one_thread(&hooks, 8);
        // Only the stage thread runs stages: the rounds are all there is.
        config.callers_run_urgent_work = false;
        let files = MemFiles::default();
        let executor = LineExecutor::default();
        let scheduler = threaded_with(&files, &executor, config);
        let mut requests = vec![
            Request::new("u.rs", ARTIFACT)
                .text("u u")
                .priority(Priority::High),
        ];
        requests.extend(
            (0..6).map(|i| Request::new(format!("n{i}.rs"), TargetStage::Source).text("n")),
        );
        let batch = scheduler.submit_batch_atomic(requests);
        for result in scheduler.wait_batch(&batch) {
            result.expect("answered");
        }
        let runs: Vec<(String, &str)> = executor
            .runs
            .lock()
            .iter()
            .map(|run| (run.path.clone(), run.stage))
            .collect();
        let at = |stage: &str| {
            runs.iter()
                .position(|(path, ran)| path == "u.rs" && *ran == stage)
                .expect("u.rs ran every stage")
        };
        assert!(
            runs[at("Analysis") + 1..at("Artifact")].is_empty(),
            "stages ran between u's Analysis and its Artifact: {runs:?}"
        );
        assert!(
            scheduler.observe().counters().batched_stages > 0,
            "no round was batched"
        );
        assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
    });
}

#[test]
fn zero_stages_per_hold_is_refused() {
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.stages_per_hold = 0;
    assert!(matches!(
        config.validate(),
        Err(ConfigError::ZeroStagesPerHold)
    ));
}
