//! Causes (docs/design.md, "Causes"): every stage run says why it ran, and
//! `Observer::explain` follows the chain back to what the host did. One
//! snapshot per kind of cause; the chains run on an inline scheduler, so
//! every id in them (waiters, epochs, generations) is the same on every run
//! (DAG run ids, which are process-wide, are written `#R`).

use std::sync::Arc;

use verter_dag::{ProfileHash, TargetStage};
use verter_scheduler::{
    Admission, CausalIndex, DEFAULT_CAUSAL_LOG, Dag, DemandRoot, ExplainError, HookPoint,
    HostAction, NoDedupeHook, RequestError, RunReason, Scheduler, SchedulerConfig, SchedulerEvent,
    Step,
};

use crate::cutoff::Words;
use crate::support::*;

const ARTIFACT_0: TargetStage = TargetStage::Artifact(ProfileHash(1));

fn logged_with(files: &MemFiles, log: usize) -> Arc<Scheduler<Words>> {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.causal_log = log;
    Scheduler::new_inline(config, files.clone(), Words::default()).expect("a valid configuration")
}

fn logged(files: &MemFiles) -> Arc<Scheduler<Words>> {
    logged_with(files, DEFAULT_CAUSAL_LOG)
}

fn build(scheduler: &Scheduler<Words>, path: &str) {
    let handle = scheduler.ask(Artifact(ProfileHash(1)).of(path));
    scheduler.wait(&handle).expect("built");
}

fn explain(scheduler: &Scheduler<Words>, path: &str, stage: TargetStage) -> String {
    scheduler
        .observe()
        .explain(path, stage)
        .expect("explained")
        .to_string()
}

/// Every run, verification and dispatch in the log has a chain, and every
/// chain ends at a host action.
fn assert_every_chain_ends_at_the_host(scheduler: &Scheduler<Words>) {
    let records = scheduler.observe().causal_log();
    let index = CausalIndex::new(&records);
    for (i, record) in records.iter().enumerate() {
        if matches!(
            record.event,
            SchedulerEvent::Ran(_) | SchedulerEvent::Dispatched(..)
        ) {
            let chain = index.explain_record(i);
            assert!(
                chain.ends_at_host_action(),
                "record {i} ({:?}) has a chain that does not end at the host:\n{chain}",
                record.event
            );
        }
    }
}

#[test]
fn a_first_build_ran_for_want_of_an_earlier_output_and_ends_at_the_request() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g0 ran: no earlier output to verify against
      because Artifact[1](a.rs) at g0 was needed by request #0
      because request #0 for Artifact[1](a.rs) at g0
    ");
    insta::assert_snapshot!(explain(&scheduler, "m.rs", TargetStage::Source), @r"
    Source(m.rs) at g0 ran: its version is new
      because Source(m.rs) at g0 was needed by Analysis(m.rs) at g0, by Artifact[1](a.rs) at g0, for request #0
      because request #0 for Artifact[1](a.rs) at g0
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn an_invalidated_blocker_explains_its_importers_artifact_down_to_the_epoch() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    files.write("m.rs", "three four");
    scheduler.invalidate("m.rs").expect("tracked");
    build(&scheduler, "a.rs");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g0 ran: Analysis(m.rs) at g1 changed
      because Analysis(m.rs) at g1 ran: Source(m.rs) at g1 changed
      because Source(m.rs) at g1 ran: its version is new
      because invalidate(m.rs) at epoch 3 (g1)
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn an_upsert_explains_the_files_own_stages_down_to_the_new_text() {
    let files = MemFiles::with(&[("a.rs", "one two")]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    let upsert = scheduler.upsert("a.rs", "one two three", Default::default());
    scheduler.wait(&upsert).expect("parsed");
    build(&scheduler, "a.rs");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g1 ran: Analysis(a.rs) at g1 changed
      because Analysis(a.rs) at g1 ran: Source(a.rs) at g1 changed
      because Source(a.rs) at g1 ran: its version is new
      because new text for a.rs (g1)
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn a_new_blocker_list_is_the_cause_when_the_analysis_did_not_change() {
    let files = MemFiles::with(&[
        ("a.rs", "one two\nuse m.rs\nuse n.rs"),
        ("m.rs", "three"),
        ("n.rs", "four"),
    ]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    // The same words, one blocker fewer: the Analysis is unchanged, the
    // blocker list is not.
    let upsert = scheduler.upsert("a.rs", "one two\nuse m.rs", Default::default());
    scheduler.wait(&upsert).expect("parsed");
    build(&scheduler, "a.rs");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g1 ran: the blocker list of Source(a.rs) at g1 changed
      because Source(a.rs) at g1 ran: its version is new
      because new text for a.rs (g1)
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn a_stage_cut_off_is_explained_as_verified_and_by_what_asked_for_it() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    // A comment: m's parse is the same, so nothing after it runs.
    files.write("m.rs", "three\n# a comment");
    scheduler.invalidate("m.rs").expect("tracked");
    build(&scheduler, "a.rs");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g0 was verified, not run: none of its inputs changed
      because Artifact[1](a.rs) at g0 was needed by request #0.1
      because request #0.1 for Artifact[1](a.rs) at g0
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn a_file_a_parse_named_is_explained_by_that_parse() {
    let files = MemFiles::with(&[("a.rs", "one\nimport b.rs"), ("b.rs", "two")]);
    let scheduler = logged(&files);
    let handle = scheduler.ask(verter_scheduler::stage::Source.of("a.rs"));
    scheduler.wait(&handle).expect("parsed");
    scheduler.wait_idle(std::time::Duration::from_secs(60));
    let b = scheduler.ask(verter_scheduler::stage::Source.of("b.rs"));
    scheduler.wait(&b).expect("parsed");
    insta::assert_snapshot!(explain(&scheduler, "b.rs", TargetStage::Source), @r"
    Source(b.rs) at g0 ran: its version is new
      because Source(b.rs) at g0 was needed, which nothing waits on any more
      because b.rs was named by the parse of Source(a.rs) at g0
      because Source(a.rs) at g0 ran: its version is new
      because Source(a.rs) at g0 was needed by request #0
      because request #0 for Source(a.rs) at g0
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

#[test]
fn a_cache_node_is_explained_by_the_dag_that_asked() {
    let files = MemFiles::with(&[]);
    let scheduler = logged(&files);
    let mut dag = Dag::new();
    let node = dag.add(verter_scheduler::CacheTask::new(
        verter_scheduler::SchedulerCacheId(7),
        1,
    ));
    let Ok(Admission::Admitted(handle)) = scheduler.submit_dag(dag, &NoDedupeHook) else {
        panic!("admitted");
    };
    let results = scheduler.wait(&handle);
    // `Words` runs no cache nodes: the run fails, and is explained all the same.
    assert!(results.get(node).is_err());
    let records = scheduler.observe().causal_log();
    let index = CausalIndex::new(&records);
    let ran = records
        .iter()
        .position(|record| matches!(&record.event, SchedulerEvent::Ran(run) if run.because == RunReason::CacheNode))
        .expect("the cache node ran");
    let chain = index.explain_record(ran);
    let Some(HostAction::SubmittedDag { dag, nodes: 1 }) = chain.host_action().copied() else {
        panic!("ends at the submission: {chain}");
    };
    assert!(matches!(
        chain.steps[1],
        Step::Demanded {
            by: DemandRoot::Dag { dag: asked },
            ..
        } if asked == dag
    ));
    insta::assert_snapshot!(chain.to_string().replace(&format!("#{dag}"), "#R"), @r"
    CacheNode 7:1 ran: a host DAG asked for this cache node
      because CacheNode 7:1 was needed, for DAG #R
      because DAG #R submitted (1 nodes)
    ");
}

#[test]
fn a_chain_whose_records_left_the_log_says_so() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    // Room for the last few events only.
    let scheduler = logged_with(&files, 4);
    build(&scheduler, "a.rs");
    let explained = scheduler
        .observe()
        .explain("a.rs", ARTIFACT_0)
        .expect("its run is among the last");
    assert!(!explained.ends_at_host_action());
    insta::assert_snapshot!(explained.to_string(), @r"
    Artifact[1](a.rs) at g0 ran: no earlier output to verify against
      because Artifact[1](a.rs) at g0 was needed by request #0
      because (the causal log no longer holds request #0: raise `SchedulerConfig::causal_log`)
    ");
}

#[test]
fn explain_without_a_log_or_a_run_is_a_typed_error() {
    let files = MemFiles::with(&[("a.rs", "one")]);
    let off = Scheduler::new_inline(
        test_config(Arc::new(GateHooks::default())),
        files.clone(),
        Words::default(),
    )
    .expect("a valid configuration");
    assert_eq!(
        off.observe().explain("a.rs", ARTIFACT_0),
        Err(ExplainError::LogDisabled)
    );
    assert!(off.observe().causal_log().is_empty());
    let on = logged(&files);
    assert!(matches!(
        on.observe().explain("a.rs", ARTIFACT_0),
        Err(ExplainError::NotRun { .. })
    ));
    assert_eq!(SchedulerConfig::default().causal_log, 0, "off by default");
}

/// Renders the causes of the events that are not runs: cancellations,
/// supersessions, refusals, failures.
fn causes_of(scheduler: &Scheduler<Words>, kinds: &[&str]) -> String {
    scheduler
        .observe()
        .causal_log()
        .iter()
        .filter(|record| kinds.contains(&record.event.kind()))
        .map(|record| {
            format!(
                "{} {}: {}",
                record.event.kind(),
                record
                    .event
                    .work()
                    .map_or_else(|| "-".to_owned(), |work| Step::work_label(&work)),
                record.event.cause().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each step holds one parse at `BeforeCompletion`, so the host action
/// finds it running:
///
/// ```text
/// test thread                               stage worker
/// ask Artifact(a) ────────────────────────▶ parse of a g0 waits
/// upsert a.rs: cancels it; open ──────────▶ refused; a g1 builds
/// ask Artifact(b) ────────────────────────▶ parse of b g0 waits
/// remove b.rs: cancels it; open ──────────▶ refused
/// upsert d.rs "v1" ───────────────────────▶ parse of d g1 waits
/// upsert d.rs "v2": supersedes the first
///   upsert and cancels its parse; open ───▶ refused; d g2 parses
/// ask Artifact(c) ────────────────────────▶ parse of c g0 waits
/// reset(): cancels it; open ──────────────▶ refused
/// ```
#[test]
fn a_cancellation_names_the_host_action_that_caused_it() {
    watchdog("cancellation causes", || {
        let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two"), ("c.rs", "three")]);
        let hooks = Arc::new(GateHooks::default());
        let mut config = test_config(Arc::clone(&hooks));
        config.causal_log = DEFAULT_CAUSAL_LOG;
        let (cpu, io) = config.build_pools().expect("pools");
        let scheduler =
            Scheduler::new(config, files.clone(), Words::default(), cpu, io).expect("valid");
        let held = |path: &str| hooks.hold(path, "Source", HookPoint::BeforeCompletion);
        let artifact = |path: &str| scheduler.ask(Artifact(ProfileHash(1)).of(path));

        let gate = held("a.rs");
        let a = artifact("a.rs");
        gate.wait_arrival();
        let edit = scheduler.upsert("a.rs", "one more", Default::default());
        // Admitted (so the held parse is cancelled) before it goes on.
        let _ = scheduler.snapshot().capture_root();
        gate.open();
        scheduler.wait(&edit).expect("parsed");
        scheduler.wait(&a).expect("follows to g1");

        let gate = held("b.rs");
        let b = artifact("b.rs");
        gate.wait_arrival();
        scheduler.remove("b.rs").expect("named");
        gate.open();
        assert!(matches!(
            scheduler.wait(&b),
            Err(RequestError::Shutdown { .. })
        ));

        let v0 = scheduler.upsert("d.rs", "first", Default::default());
        scheduler.wait(&v0).expect("parsed");
        let gate = held("d.rs");
        let v1 = scheduler.upsert("d.rs", "second", Default::default());
        gate.wait_arrival();
        let v2 = scheduler.upsert("d.rs", "third", Default::default());
        assert!(matches!(
            scheduler.wait(&v1),
            Err(RequestError::Superseded { .. })
        ));
        gate.open();
        scheduler.wait(&v2).expect("parsed");

        let gate = held("c.rs");
        let c = artifact("c.rs");
        gate.wait_arrival();
        scheduler.reset();
        gate.open();
        assert!(matches!(
            scheduler.wait(&c),
            Err(RequestError::Shutdown { .. })
        ));
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        // Every handle answered, the ledger at zero.
        assert_quiescent(&scheduler, &[]);
        for handle in [&edit, &v0, &v1, &v2] {
            assert!(handle.is_answered());
        }
        for handle in [&a, &b, &c] {
            assert!(handle.is_answered());
        }

        insta::assert_snapshot!(causes_of(&scheduler, &["Cancelled", "Superseded"]), @r"
        Cancelled Source(a.rs) at g0: new text for a.rs (g1)
        Cancelled Source(b.rs) at g0: remove(b.rs)
        Cancelled Source(d.rs) at g1: new text for d.rs (g2)
        Superseded Source(d.rs) at g1: new text for d.rs (g2)
        Cancelled Source(c.rs) at g0: reset()
        ");
    });
}

/// A refused non-blocking request and a failed stage are events with their
/// causes too.
#[test]
fn a_refusal_and_a_failure_are_reported_with_their_causes() {
    let files = MemFiles::with(&[("a.rs", "one")]);
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.causal_log = DEFAULT_CAUSAL_LOG;
    config.inbox_capacity = 1;
    let scheduler = Scheduler::new_inline(config, files.clone(), Words::default())
        .expect("a valid configuration");
    let first = scheduler.try_ask(Artifact(ProfileHash(1)).of("a.rs"));
    let second = scheduler.try_ask(Artifact(ProfileHash(1)).of("missing.rs"));
    assert!(matches!(second, Admission::Backpressured));
    let Admission::Admitted(first) = first else {
        panic!("the first fits");
    };
    scheduler.wait(&first).expect("built");
    let missing = scheduler.ask(Artifact(ProfileHash(1)).of("missing.rs"));
    assert!(scheduler.wait(&missing).is_err());
    insta::assert_snapshot!(causes_of(&scheduler, &["Backpressured", "DidFail"]), @r"
    Backpressured -: request for Artifact(p1) of missing.rs: inbox lane full
    DidFail Source(missing.rs) at g0: missing.rs has no backing source
    DidFail Analysis(missing.rs) at g0: missing.rs has no backing source
    DidFail Artifact[1](missing.rs) at g0: missing.rs has no backing source
    ");
}

#[test]
fn stats_count_every_run_with_its_wait_and_time_only_when_asked() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.stage_stats = true;
    let scheduler = Scheduler::new_inline(config, files.clone(), Words::default())
        .expect("a valid configuration");
    build(&scheduler, "a.rs");
    let stats = scheduler.observe().stats();
    let runs: Vec<_> = stats
        .stages
        .iter()
        .map(|stage| {
            (
                stage.stage,
                stage.run_time.count(),
                stage.queue_wait.count(),
            )
        })
        .collect();
    // A Source's load and its parse are timed apart, in rows of their own.
    assert_eq!(
        runs,
        [
            ("Source load", 2, 2),
            ("Source parse", 2, 2),
            ("Analysis", 2, 2),
            ("Artifact", 1, 1),
            ("Cache node", 0, 0)
        ]
    );
    assert_eq!(stats.counters.analysis_runs, 2);
    let printed = stats.to_string();
    assert!(
        printed.contains("Analysis") && printed.contains("run p99"),
        "{printed}"
    );

    let off = Scheduler::new_inline(
        test_config(Arc::new(GateHooks::default())),
        files.clone(),
        Words::default(),
    )
    .expect("a valid configuration");
    build(&off, "a.rs");
    let stats = off.observe().stats();
    assert!(stats.stages.iter().all(|stage| stage.run_time.count() == 0));
    assert_eq!(
        stats.counters.artifact_runs, 1,
        "counters are kept either way"
    );
}

#[test]
fn a_rehome_explains_the_new_objects_source() {
    let files = MemFiles::with(&[("a.rs", "one two")]);
    let scheduler = logged(&files);
    let first = scheduler.ask(verter_scheduler::stage::Source.of("a.rs"));
    scheduler.wait(&first).expect("parsed");
    let rehome = scheduler.submit_request(
        verter_scheduler::Request::new("a.rs", TargetStage::Source)
            .language(verter_scheduler::Language::new("text")),
    );
    scheduler.wait(&rehome).expect("parsed again");
    insta::assert_snapshot!(explain(&scheduler, "a.rs", TargetStage::Source), @r"
    Source(a.rs) at g0 ran: its version is new
      because a.rs re-homed into another language
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

/// A request that fails because a blocker was removed is explained down
/// to the removal: its failure, the dependency's, and the `remove`.
#[test]
fn a_removed_blocker_is_named_as_the_cause_of_its_importers_failure() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let scheduler = logged(&files);
    build(&scheduler, "a.rs");
    files.delete("m.rs");
    scheduler.remove("m.rs").expect("tracked");
    let again = scheduler.ask(Artifact(ProfileHash(1)).of("a.rs"));
    let error = scheduler.wait(&again).expect_err("m.rs is gone");
    assert_eq!(
        error.to_string(),
        "a.rs depends on the Analysis of m.rs, which failed"
    );
    insta::assert_snapshot!(explain(&scheduler, "a.rs", ARTIFACT_0), @r"
    Artifact[1](a.rs) at g0 failed: a.rs depends on the Analysis of m.rs, which failed
      because Analysis(m.rs) at g0 failed: m.rs has no backing source
      because remove(m.rs)
    ");
    assert_every_chain_ends_at_the_host(&scheduler);
}

/// A request withdrawn at its admission (its handle dropped while it was
/// in the inbox) still made its file's object: the work that object later
/// runs for another file's needs is explained down to the withdrawal
/// (the simulator's seed 6146 found the chain that ended nowhere).
#[test]
fn work_of_an_object_a_withdrawn_request_made_is_explained_by_the_withdrawal() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let scheduler = logged(&files);
    let a = scheduler.ask(verter_scheduler::stage::Source.of("a.rs"));
    drop(scheduler.ask(verter_scheduler::stage::Source.of("m.rs")));
    scheduler.wait(&a).expect("parsed");
    assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
    assert_eq!(scheduler.observe().counters().withdrawn, 1);
    assert!(
        causes_of(&scheduler, &["Acted"])
            .contains("the last handle of a request for Source(m.rs) at g0 dropped"),
        "{}",
        causes_of(&scheduler, &["Acted"])
    );
    assert_every_chain_ends_at_the_host(&scheduler);
}
