//! The causal log, judged (issue 17, "why did this run?"): every run and
//! dispatch of an inline run is traced to a host action, a log broken on
//! purpose is caught (so the judgement cannot pass by luck), a threaded
//! window excuses only what it must, the gaps the simulator found in the
//! scheduler's causes stay closed, and those it still excuses are pinned.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use verter_dag::{ProfileHash, ResourceClass, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    CausalIndex, CutOff, Explanation, HookPoint, Hooks, HostAction, LogRecord, Request, Run,
    RunReason, Scheduler, SchedulerEvent, Step,
};
use verter_sim::causes::{
    ActionsSeen, CauseStats, CauseVerdict, CauseViolation, judge_log, judge_window,
};
use verter_sim::fs::{Entry, SimFs};
use verter_sim::inline::sim_config;
use verter_sim::lang::SimExecutor;
use verter_sim::ops::{Op, StageLabel};
use verter_sim::{LoggedRun, SimConfig, logged_run, run_seed};

use crate::trace::{request, write};

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// A run with something of every kind the rules judge: a first build, a
/// blocker edited with a comment (its parse unchanged, its Analysis and
/// the importer's Artifact verified), and an upsert made while the
/// importer's parse is in flight (which cancels that version's work).
fn eventful_run() -> LoggedRun {
    let run = logged_run(&[
        write("m.rs", "two"),
        write("a.rs", "one\nuse m.rs"),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        write("m.rs", "two\n# a comment"),
        Op::Invalidate("m.rs".into()),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        write("a.rs", "one two\nuse m.rs"),
        Op::Within {
            point: HookPoint::AfterDispatch,
            stage: StageLabel::Parse,
            path: "a.rs".into(),
            ops: vec![request(
                "a.rs",
                TargetStage::Source,
                Some("three\nuse m.rs"),
            )],
        },
        Op::Invalidate("a.rs".into()),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        Op::Check,
    ]);
    if let Err(violation) = &run.result {
        panic!("the eventful run passes: {violation}");
    }
    run
}

/// The records of `run` without the first one `unwanted` picks.
fn without(records: &[LogRecord], unwanted: impl Fn(&SchedulerEvent) -> bool) -> Vec<LogRecord> {
    let at = records
        .iter()
        .position(|record| unwanted(&record.event))
        .expect("the log holds the record to remove");
    let mut broken = records.to_vec();
    broken.remove(at);
    broken
}

fn is_file_stage(work: &WorkNodeIdentity, path: &str, stage: TargetStage) -> bool {
    matches!(work, WorkNodeIdentity::File(key)
        if key.file.canonical.as_str() == path && key.stage == stage)
}

#[track_caller]
fn assert_clean(verdict: &CauseVerdict) {
    assert!(
        verdict.violations.is_empty(),
        "{:#?}",
        verdict
            .violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
}

#[test]
fn three_hundred_seeds_trace_every_run_to_a_host_action() {
    let config = SimConfig::default();
    let mut causes = CauseStats::default();
    for seed in 300..600 {
        match run_seed(seed, &config) {
            Ok(report) => causes.add(&report.causes),
            Err(failure) => panic!("{failure}"),
        }
    }
    // Every rule had something to judge.
    assert!(causes.runs > 1_000 && causes.dispatches > 1_000, "{causes}");
    assert!(causes.completions > 0 && causes.verified > 0, "{causes}");
    assert!(
        causes.cancelled_by_action > 0 && causes.superseded > 0,
        "{causes}"
    );
    assert_eq!(
        (causes.skipped, causes.dropped),
        (0, 0),
        "an inline log is whole: {causes}"
    );
}

#[test]
fn an_eventful_run_has_a_clean_log_with_every_kind_judged() {
    let run = eventful_run();
    let verdict = judge_log(&run.records, Some(&run.executed));
    assert_clean(&verdict);
    let stats = verdict.stats;
    assert_eq!(stats.records, run.records.len() as u64);
    assert!(stats.runs > 0 && stats.dispatches > 0, "{stats}");
    assert!(stats.completions > 0, "{stats}");
    assert_eq!(stats.verified, 2, "m's Analysis and a's Artifact: {stats}");
    assert_eq!(stats.cancelled_by_action, 1, "{stats}");
    assert_eq!(Ok(stats), run.result.map(|report| report.causes));
}

#[test]
fn a_log_without_the_request_a_dispatch_names_leaves_its_chain_unexplained() {
    let run = eventful_run();
    let broken = without(&run.records, |event| {
        matches!(event, SchedulerEvent::Acted(HostAction::Requested { .. }))
    });
    let verdict = judge_log(&broken, None);
    let Some(CauseViolation::Unexplained { chain, later, .. }) = verdict.violations.first() else {
        panic!("an unexplained chain: {:?}", verdict.violations);
    };
    assert!(chain.contains("no longer holds request #0"), "{chain}");
    assert_eq!(*later, None, "the request is nowhere in the log");
}

#[test]
fn a_log_without_a_run_disagrees_with_what_the_executor_ran() {
    let run = eventful_run();
    let broken = without(
        &run.records,
        |event| matches!(event, SchedulerEvent::Ran(run) if is_file_stage(&run.work, "m.rs", TargetStage::Analysis)),
    );
    let verdict = judge_log(&broken, Some(&run.executed));
    let found: Vec<String> = verdict.violations.iter().map(ToString::to_string).collect();
    assert!(
        verdict.violations.iter().any(|violation| matches!(
            violation,
            CauseViolation::RunCount {
                executed: 1,
                logged: 0,
                ..
            }
        )),
        "{found:#?}"
    );
    assert!(
        verdict
            .violations
            .iter()
            .any(|violation| matches!(violation, CauseViolation::CompletedWithoutRun { .. })),
        "{found:#?}"
    );
}

#[test]
fn a_log_without_a_load_disagrees_with_what_the_loader_read() {
    let run = eventful_run();
    let broken = without(&run.records, |event| {
        matches!(event, SchedulerEvent::Ran(run)
            if run.class == ResourceClass::Io && is_file_stage(&run.work, "m.rs", TargetStage::Source))
    });
    let verdict = judge_log(&broken, Some(&run.executed));
    assert!(
        verdict.violations.iter().any(|violation| matches!(
            violation,
            CauseViolation::LoadCount { path, loaded, logged }
                if path == "m.rs" && *logged + 1 == *loaded
        )),
        "{:?}",
        verdict.violations
    );
}

#[test]
fn a_run_recorded_in_another_hold_than_its_commit_is_caught() {
    let run = eventful_run();
    let mut broken = run.records.clone();
    let at = broken
        .iter()
        .position(|record| {
            matches!(&record.event, SchedulerEvent::Ran(run)
                if is_file_stage(&run.work, "m.rs", TargetStage::Analysis))
        })
        .expect("m.rs's Analysis ran");
    // Moved to the end of the hold before its own, as a scheduler that
    // recorded a run when it started would.
    let mut moved = broken.remove(at);
    let before = broken[..at]
        .iter()
        .rposition(|record| record.hold < moved.hold)
        .expect("an earlier hold");
    moved.hold = broken[before].hold;
    broken.insert(before + 1, moved);
    let verdict = judge_log(&broken, Some(&run.executed));
    let kinds: Vec<&CauseViolation> = verdict.violations.iter().collect();
    assert!(
        matches!(
            kinds.as_slice(),
            [
                CauseViolation::RanWithoutCommit { .. },
                CauseViolation::CompletedWithoutRun { .. },
            ]
        ),
        "{kinds:#?}"
    );
}

#[test]
fn a_log_without_the_action_a_cancellation_names_is_caught() {
    let run = eventful_run();
    let named = run
        .records
        .iter()
        .find_map(|record| match record.event {
            SchedulerEvent::Cancelled(_, Some(action)) => Some(action),
            _ => None,
        })
        .expect("the eventful run cancels work");
    let broken = without(
        &run.records,
        |event| matches!(event, SchedulerEvent::Acted(action) if *action == named),
    );
    let verdict = judge_log(&broken, None);
    assert!(
        verdict.violations.iter().any(|violation| matches!(
            violation,
            CauseViolation::ActionNotLogged { action, .. } if *action == named.to_string()
        )),
        "{:?}",
        verdict.violations
    );
}

#[test]
fn a_verification_after_a_run_of_the_same_work_is_caught() {
    let run = eventful_run();
    let mut broken = run.records.clone();
    let at = broken
        .iter()
        .position(|record| matches!(record.event, SchedulerEvent::DidCutOff(_, CutOff::Verified)))
        .expect("the eventful run verifies a stage");
    let SchedulerEvent::DidCutOff(work, _) = broken[at].event.clone() else {
        unreachable!("found above");
    };
    // A run in the verification's own hold, just before it, where the
    // commit of a run records it.
    let ran = LogRecord {
        seq: broken[at].seq,
        hold: broken[at].hold,
        at: broken[at].at,
        event: SchedulerEvent::Ran(Box::new(Run {
            work,
            because: RunReason::NoPrior,
            class: ResourceClass::Cpu,
            worker: Arc::from("forged"),
            started: broken[at].at,
            queue_wait: None,
            run_time: Duration::ZERO,
            from_store: false,
        })),
    };
    broken.insert(at, ran);
    let verdict = judge_log(&broken, Some(&run.executed));
    assert!(
        verdict
            .violations
            .iter()
            .any(|violation| matches!(violation, CauseViolation::VerifiedAfterRun { .. })),
        "{:?}",
        verdict.violations
    );
    assert!(
        verdict.violations.iter().any(|violation| matches!(
            violation,
            CauseViolation::RunCount {
                executed: 0,
                logged: 1,
                ..
            }
        )),
        "{:?}",
        verdict.violations
    );
}

/// The first request's record moved after the first dispatch it explains:
/// a log not in the order of decisions (as the order events reached the
/// log was, when threads recorded their holds' events after the lock).
fn request_logged_after_its_dispatch(records: &[LogRecord]) -> Vec<LogRecord> {
    let mut moved = records.to_vec();
    let requested = moved
        .iter()
        .position(|record| {
            matches!(
                record.event,
                SchedulerEvent::Acted(HostAction::Requested { .. })
            )
        })
        .expect("a request");
    let record = moved.remove(requested);
    let dispatched = moved
        .iter()
        .position(|record| matches!(record.event, SchedulerEvent::Dispatched(..)))
        .expect("a dispatch");
    moved.insert(dispatched + 1, record);
    moved
}

#[test]
fn a_request_after_its_dispatch_leaves_the_chain_unexplained_in_a_window_as_in_a_whole_log() {
    let run = eventful_run();
    let moved = request_logged_after_its_dispatch(&run.records);
    for verdict in [
        judge_window(&moved, 0, 0, &mut ActionsSeen::default()),
        judge_log(&moved, None),
    ] {
        assert!(
            verdict.violations.iter().any(|violation| matches!(
                violation,
                CauseViolation::Unexplained { later: Some(_), .. }
            )),
            "{:?}",
            verdict.violations
        );
    }
}

#[test]
fn a_window_skips_only_the_chains_before_what_it_lost() {
    let run = eventful_run();
    let broken = without(&run.records, |event| {
        matches!(event, SchedulerEvent::Acted(HostAction::Requested { .. }))
    });
    let lost = judge_window(&broken, 0, u64::MAX, &mut ActionsSeen::default());
    assert_clean(&lost);
    assert!(lost.stats.skipped > 0, "{}", lost.stats);
    let whole = judge_window(&broken, 0, 0, &mut ActionsSeen::default());
    assert!(!whole.violations.is_empty(), "nothing lost: judged");
    // Judged in two checkpoints, with the actions of the first carried over.
    let half = run.records.len() / 2;
    let mut seen = ActionsSeen::of(&run.records[..half]);
    assert_clean(&judge_window(&run.records, half, 0, &mut seen));
}

/// The chain of every run and dispatch in `records` that does not end at
/// a host action: the scheduler's own index, no excuse of the simulator's.
fn unexplained_chains(records: &[LogRecord]) -> Vec<Explanation> {
    let index = CausalIndex::new(records);
    records
        .iter()
        .enumerate()
        .filter(|(_, record)| {
            matches!(
                record.event,
                SchedulerEvent::Ran(_) | SchedulerEvent::Dispatched(..)
            )
        })
        .map(|(i, _)| index.explain_record(i))
        .filter(|chain| !chain.ends_at_host_action())
        .collect()
}

/// [`unexplained_chains`], printed.
fn unexplained(records: &[LogRecord]) -> Vec<String> {
    unexplained_chains(records)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Found by the simulator (seed 7 of the default mix, shrunk): `a.rs`'s
/// parse records `m.rs` as a blocker, and that record alone demands
/// `m.rs`'s Analysis (no Artifact of `a.rs` was asked for). It was
/// dispatched with `DemandRoot::Nobody` and no consumer, and, `m.rs` being
/// known before the parse named it, the log has no `Ingested` record
/// either; now it is dispatched for the blocker record
/// (`DemandRoot::Blocker`), and its chain ends at the request for `a.rs`'s
/// Analysis, through `a.rs`'s parse.
#[test]
fn an_analysis_only_a_blocker_record_demands_is_traced_to_the_host() {
    let run = logged_run(&[
        write("m.rs", "two"),
        request("m.rs", TargetStage::Source, None),
        request("a.rs", TargetStage::Analysis, Some("one\nuse m.rs")),
        Op::Pump,
    ]);
    assert_eq!(unexplained(&run.records), Vec::<String>::new());
    assert!(run.result.is_ok(), "{:?}", run.result.as_ref().err());
}

/// Found by the simulator (seed 5 of the default mix, shrunk): the request
/// for `a.rs`'s Artifact is answered `DependencyFailed` (its blocker
/// `m.rs` is missing) as soon as `m.rs`'s load fails, but `a.rs`'s
/// Analysis, admitted for it, still runs, dispatched with
/// `DemandRoot::Nobody`; the index finds the request for the same version
/// of `a.rs` that admitted it.
#[test]
fn an_analysis_whose_request_was_answered_before_it_ran_is_traced_to_the_host() {
    let run = logged_run(&[
        request("m.rs", TargetStage::Source, None),
        request("a.rs", ARTIFACT, Some("one\nuse m.rs")),
        Op::Pump,
    ]);
    assert_eq!(unexplained(&run.records), Vec::<String>::new());
    assert!(run.result.is_ok(), "{:?}", run.result.as_ref().err());
}

/// Found by the simulator (seeds 44 and 108 of the default mix, shrunk):
/// as above, but the request for `a.rs`'s Artifact was made before an
/// edit of `a.rs`, which carried it over to the new version. It is
/// answered `DependencyFailed` when the new version's parse names the
/// missing `m.rs`, and its Analysis still runs, dispatched with
/// `DemandRoot::Nobody`; the `Requested` record names g0, and the index
/// finds it as a request for an earlier version of the same object.
#[test]
fn an_analysis_whose_request_an_edit_carried_over_is_traced_to_the_host() {
    let run = logged_run(&[
        request("m.rs", TargetStage::Source, None),
        request("a.rs", ARTIFACT, None),
        write("a.rs", "one\nuse m.rs"),
        Op::Invalidate("a.rs".into()),
        Op::Pump,
    ]);
    assert_eq!(unexplained(&run.records), Vec::<String>::new());
    assert!(run.result.is_ok(), "{:?}", run.result.as_ref().err());
}

/// Found by the simulator (seeds 44, 164 and 305 of the default mix,
/// shrunk): the request for `a.rs`'s Artifact admits the Analysis of its
/// blocker `m.rs` (at g1, after an invalidation), and `a.rs` is removed in
/// the same hold, before that Analysis is dispatched: its Source is
/// dispatched with `DemandRoot::Nobody`, no record names what asked for it
/// (a request for another file, whose blocker record went with it), and
/// the index ends the chain at the edit that made `m.rs`'s version.
#[test]
fn a_blockers_analysis_whose_requester_was_removed_is_traced_to_its_edit() {
    let run = logged_run(&[
        request("a.rs", TargetStage::Source, Some("one\nuse m.rs")),
        Op::Pump,
        Op::Invalidate("m.rs".into()),
        request("a.rs", ARTIFACT, None),
        Op::Remove("a.rs".into()),
        Op::Pump,
    ]);
    assert_eq!(unexplained(&run.records), Vec::<String>::new());
    assert!(run.result.is_ok(), "{:?}", run.result.as_ref().err());
}

/// Holds `x.rs`'s parse before its completion, and the thread that admits
/// the request for `x.rs`'s Artifact inside the hook of that request's
/// `Acted` event (the hooks see an event before the causal log records
/// it), until the test releases each.
struct HoldTheRequest {
    parse_held: Mutex<Option<Sender<()>>>,
    release_parse: Mutex<Receiver<()>>,
    act_held: Mutex<Option<Sender<()>>>,
    release_act: Mutex<Receiver<()>>,
}

impl Hooks for HoldTheRequest {
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        if point == HookPoint::BeforeCompletion
            && class == ResourceClass::Cpu
            && is_file_stage(work, "x.rs", TargetStage::Source)
            && let Some(held) = self.parse_held.lock().unwrap().take()
        {
            held.send(()).unwrap();
            let _ = self
                .release_parse
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10));
        }
    }

    fn on_event(&self, event: &SchedulerEvent) {
        match event {
            SchedulerEvent::Acted(HostAction::Requested { key, .. })
                if key.stage == ARTIFACT && key.file.canonical.as_str() == "x.rs" =>
            {
                if let Some(held) = self.act_held.lock().unwrap().take() {
                    held.send(()).unwrap();
                    let _ = self
                        .release_act
                        .lock()
                        .unwrap()
                        .recv_timeout(Duration::from_secs(10));
                }
            }
            _ => {}
        }
    }
}

/// Waits until `scheduler`'s causal log holds a record `wanted` picks (a
/// handshake on the log, with a watchdog): the hooks see an event before
/// the log records it.
#[track_caller]
fn wait_for_record(
    scheduler: &Scheduler<SimExecutor>,
    wanted: impl Fn(&LogRecord) -> bool,
    what: &str,
) {
    let started = Instant::now();
    while !scheduler.observe().causal_log().iter().any(&wanted) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the log never held {what}"
        );
        std::thread::yield_now();
    }
}

/// Found by the threaded soak (every seed, a few hundred chains per
/// 300 000 operations, before the log kept the order of decisions): a
/// request's `Acted` event is recorded in the post-work of the hold that
/// admitted it, after the lock; another thread's later hold may dispatch
/// the work it wants and record that dispatch first. The log now hands
/// its records over in the order of the holds that decided them, so the
/// causal index finds the request before the dispatch although it reached
/// the log after it. Held open deterministically:
///
/// ```text
/// test thread              admitting thread           stage worker
/// ask Source(x) ────────────────────────────────────▶ parse held before
///                                                      its completion
/// ask Artifact(x) ───────▶ admits it; its Acted event
///                          held in the hook, unlogged
/// release the parse ────────────────────────────────▶ commits, dispatches
///                                                      Analysis(x) for the
///                                                      request: logged
/// the dispatch is in the log
/// release the event ─────▶ Acted(Requested) logged
/// the request is in the log
/// then: the request reached the log after the dispatch, the log hands it
/// over before, and the dispatch's chain ends at the request
/// ```
#[test]
fn a_dispatch_logged_before_the_request_that_wants_it_is_traced_to_the_host() {
    let (parse_held, parse_arrived) = channel();
    let (open_parse, release_parse) = channel();
    let (act_held, act_arrived) = channel();
    let (open_act, release_act) = channel();
    let hooks = Arc::new(HoldTheRequest {
        parse_held: Mutex::new(Some(parse_held)),
        release_parse: Mutex::new(release_parse),
        act_held: Mutex::new(Some(act_held)),
        release_act: Mutex::new(release_act),
    });
    let fs = SimFs::default();
    fs.write("x.rs", Entry::Text(Arc::from("one")));
    let mut config = sim_config(hooks);
    config.causal_log = 4_096;
    let (cpu, io) = config.build_pools().expect("pools");
    let scheduler = Scheduler::new(config, fs.loader(), SimExecutor::default(), cpu, io)
        .expect("a valid configuration");
    let watchdog = Duration::from_secs(10);

    let source = scheduler.submit_request(Request::new("x.rs", TargetStage::Source));
    parse_arrived
        .recv_timeout(watchdog)
        .expect("the parse is held");
    let artifact = scheduler.submit_request(Request::new("x.rs", ARTIFACT));
    act_arrived
        .recv_timeout(watchdog)
        .expect("the request's event is held");
    open_parse.send(()).unwrap();
    let dispatched_analysis = |record: &LogRecord| {
        matches!(&record.event, SchedulerEvent::Dispatched(work, _)
            if is_file_stage(work, "x.rs", TargetStage::Analysis))
    };
    let requested_artifact = |record: &LogRecord| {
        matches!(&record.event, SchedulerEvent::Acted(HostAction::Requested { key, .. })
            if key.stage == ARTIFACT)
    };
    wait_for_record(
        &scheduler,
        dispatched_analysis,
        "the Analysis's dispatch for the request",
    );
    open_act.send(()).unwrap();
    wait_for_record(&scheduler, requested_artifact, "the request");
    assert!(scheduler.wait(&source).is_ok() && scheduler.wait(&artifact).is_ok());
    assert!(scheduler.wait_idle(watchdog), "idle after the answers");

    let records = scheduler.observe().causal_log();
    let dispatch = records
        .iter()
        .position(dispatched_analysis)
        .expect("the Analysis was dispatched");
    let request = records
        .iter()
        .position(requested_artifact)
        .expect("the request is logged");
    assert!(
        records[request].seq > records[dispatch].seq && request < dispatch,
        "the request reached the log after the dispatch, and is handed over before it"
    );
    let chain = CausalIndex::new(&records).explain_record(dispatch);
    assert!(
        chain.ends_at_host_action(),
        "the dispatch's chain:\n{chain}"
    );
    assert!(
        matches!(chain.steps.last(), Some(Step::Acted(HostAction::Requested { key, .. })) if key.stage == ARTIFACT),
        "{chain}"
    );
}

/// Found by the simulator (seed 6146), once dropping a request's last
/// handle withdraws it: a request for `f0.rs`'s Source withdrawn at its
/// admission (its handle went while it was in the inbox) made `f0.rs`'s
/// object, and work of that object another file's needs admitted later
/// ran with `DemandRoot::Nobody`; the chain found no request for its
/// version. The index now takes the withdrawal as that request.
#[test]
fn seed_6146_work_of_an_object_a_withdrawn_request_made_is_traced_to_the_host() {
    if let Err(failure) = run_seed(6146, &SimConfig::default()) {
        panic!("{failure}");
    }
}
