//! Supersession: a newer edit makes running work stale; the stale completion
//! publishes nothing and every waiter is moved on or answered.

use std::sync::Arc;

use verter_dag::{Canonical, TargetStage};
use verter_scheduler::stage::Source;
use verter_scheduler::{HookPoint, Request, RequestError, SchedulerEvent};

use crate::support::*;

/// ```text
/// test thread                              stage worker
/// upsert a.rs "v1" (g0), request Analysis ─▶ parse of g0 runs, then waits at
///                                            BeforeCompletion
/// upsert a.rs "v2" (g1): g0 retired,
///   the "v1" upsert answered Superseded
/// gate.open() ────────────────────────────▶ g0 completion refused as stale
/// then: nothing published at g0, the plain request follows to g1, ledger 0
/// ```
#[test]
fn an_upsert_while_source_runs_refuses_the_stale_completion() {
    watchdog("supersede", || {
        let files = MemFiles::default();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("a.rs", "Source", HookPoint::BeforeCompletion);
        let v1 = scheduler.upsert("a.rs", "one", Default::default());
        let plain = scheduler.ask(Analysis.of("a.rs"));
        let stale = gate.wait_arrival();
        // The second upsert, typed: a Source request carrying the text.
        let v2 = scheduler.ask(Source.of("a.rs").text("two words"));
        assert!(matches!(
            scheduler.wait(&v1),
            Err(RequestError::Superseded { .. })
        ));
        let events = hooks.subscribe();
        gate.open();
        await_event(&events, is_refusal);
        let analysis = scheduler.wait(&plain).expect("follows to g1");
        assert_eq!(analysis.version.generation.get(), 1);
        assert_eq!(*analysis.data(), 2, "built from the newer text");
        let source = scheduler.wait(&v2).expect("parsed");
        assert_eq!(&*source.text.text, "two words");
        let counters = scheduler.observe().counters();
        assert_eq!(counters.stale_completion_refusals, 1);
        assert!(
            hooks.events.lock().iter().any(
                |event| matches!(event, SchedulerEvent::DidRefuseStale(work) if *work == stale)
            ),
            "the refusal was reported"
        );
        // g0's parse ran once and published nothing; the view is g1's.
        let node = scheduler
            .snapshot()
            .node(&Canonical::from("a.rs"))
            .expect("published");
        assert_eq!(node.view().generation.get(), 1);
        assert_eq!(
            node.view().source().map(|s| s.version().generation.get()),
            Some(1)
        );
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 1);
        assert_quiescent(&scheduler, &[&v1, v2.untyped(), plain.untyped()]);
    });
}

/// ```text
/// test thread                              stage worker
/// request Source(a.rs) ───────────────────▶ parse runs, waits at
///                                            BeforeCompletion (not integrated)
/// request Source(a.rs) again: joins the
///   live Source work, is not answered
/// gate.open() ────────────────────────────▶ commit integrates and answers both
/// ```
#[test]
fn a_request_in_the_readiness_window_joins_the_live_source() {
    watchdog("readiness", || {
        let files = MemFiles::with(&[("a.rs", "import b.rs"), ("b.rs", "")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let events = hooks.subscribe();
        let gate = hooks.hold("a.rs", "Source", HookPoint::BeforeCompletion);
        let first = scheduler.ask(Source.of("a.rs"));
        gate.wait_arrival();
        let second = scheduler.ask(Source.of("a.rs"));
        loop {
            if let SchedulerEvent::DidJoin(key) = events.recv().expect("events flow") {
                assert_eq!(key.file.canonical.as_str(), "a.rs");
                break;
            }
        }
        assert!(!second.is_answered(), "answered before integration");
        assert!(!first.is_answered());
        gate.open();
        let first = scheduler.wait(&first).expect("parsed");
        let source = scheduler.wait(&second).expect("parsed");
        assert!(Arc::ptr_eq(&first, &source));
        // Integrated with it: the forward dependency was ingested.
        assert_eq!(source.forward_deps, [Canonical::from("b.rs")]);
        assert!(
            scheduler
                .snapshot()
                .node(&Canonical::from("b.rs"))
                .is_some()
        );
        assert_eq!(executor.runs_of("a.rs", "Source"), 1);
    });
}

/// The host-output probes: each output whose `Drop` runs while the
/// scheduler lives sends whether its thread held the DAG lock then.
mod probes {
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex, OnceLock, Weak};

    use verter_scheduler::{
        AnalysisInput, ArtifactInput, DepPath, ExecutorError, Scheduler, SourceDeps, SourceInput,
        StageExecutor,
    };

    use crate::support::*;

    /// Where probes report, and the scheduler they probe.
    pub(super) struct Probes {
        scheduler: OnceLock<Weak<Scheduler<ProbeExecutor>>>,
        drops: Mutex<Sender<bool>>,
    }

    /// An output that probes the DAG lock when it drops: a call that takes
    /// the lock panics (debug builds) when its thread already holds it.
    pub(super) struct Probe(Arc<Probes>);

    impl Drop for Probe {
        fn drop(&mut self) {
            let Some(scheduler) = self.0.scheduler.get().and_then(Weak::upgrade) else {
                return;
            };
            let probe = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                scheduler.observe().ledger();
            }));
            let _ = self
                .0
                .drops
                .lock()
                .expect("not poisoned")
                .send(probe.is_err());
        }
    }

    /// A host error that holds a probe: it reports when its last reference
    /// drops.
    pub(super) struct ProbeError(#[allow(dead_code)] Probe);

    impl std::fmt::Debug for ProbeError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("ProbeError")
        }
    }

    impl std::fmt::Display for ProbeError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the host's analysis failed")
        }
    }

    impl std::error::Error for ProbeError {}

    /// Sources and Artifacts are probes; a `use X` line names blocker X; the
    /// Analysis of a text that starts with `fail` fails with a probe error.
    #[derive(Clone)]
    pub(super) struct ProbeExecutor(Arc<Probes>);

    impl StageExecutor for ProbeExecutor {
        type Source = Probe;
        type Analysis = usize;
        type Artifact = Probe;
        type CacheOutput = ();

        fn execute_source(
            &self,
            input: &SourceInput<'_>,
            deps: &mut SourceDeps,
        ) -> Result<Probe, ExecutorError> {
            for path in input.text.lines().filter_map(|l| l.strip_prefix("use ")) {
                deps.blocker(DepPath::Path(path.to_owned()));
            }
            Ok(Probe(Arc::clone(&self.0)))
        }

        fn execute_analysis(
            &self,
            input: &AnalysisInput<'_, Probe>,
        ) -> Result<usize, ExecutorError> {
            if input.source.text.text.starts_with("fail") {
                return Err(ExecutorError::from_error(ProbeError(Probe(Arc::clone(
                    &self.0,
                )))));
            }
            Ok(input.source.text.text.len())
        }

        fn execute_artifact(
            &self,
            _: &ArtifactInput<'_, usize, Probe>,
        ) -> Result<Probe, ExecutorError> {
            Ok(Probe(Arc::clone(&self.0)))
        }
    }

    /// A threaded scheduler over `files` whose outputs are probes, the
    /// receiving end of their reports, and its hooks.
    pub(super) fn probed(
        files: MemFiles,
    ) -> (
        Arc<Scheduler<ProbeExecutor>>,
        Receiver<bool>,
        Arc<GateHooks>,
    ) {
        let (sender, drops) = channel();
        let executor = ProbeExecutor(Arc::new(Probes {
            scheduler: OnceLock::new(),
            drops: Mutex::new(sender),
        }));
        let probes = Arc::clone(&executor.0);
        let hooks = Arc::new(GateHooks::default());
        let config = test_config(Arc::clone(&hooks));
        let (cpu, io) = config.build_pools().expect("pools");
        let scheduler =
            Scheduler::new(config, files, executor, cpu, io).expect("a valid configuration");
        probes
            .scheduler
            .set(Arc::downgrade(&scheduler))
            .unwrap_or_else(|_| unreachable!("set once"));
        (scheduler, drops, hooks)
    }
}

/// The host's outputs are the host's code when they drop: a refused run's
/// output and the view a new generation replaces are let go after the DAG
/// lock, never under it.
#[test]
fn host_outputs_are_dropped_after_the_lock_never_under_it() {
    watchdog("host drops", || {
        let (scheduler, drops, hooks) = probes::probed(MemFiles::default());
        // A refused run: its parse of "one" is superseded while it waits
        // to complete, and its output is dropped by the refusing commit.
        let gate = hooks.hold("a.rs", "Source", HookPoint::BeforeCompletion);
        let v1 = scheduler.upsert("a.rs", "one", Default::default());
        gate.wait_arrival();
        let v2 = scheduler.upsert("a.rs", "two", Default::default());
        // Answered `Superseded` only once "two" is admitted: the run at the
        // gate is stale from then on.
        assert!(scheduler.wait(&v1).is_err(), "superseded");
        let events = hooks.subscribe();
        gate.open();
        await_event(&events, is_refusal);
        drop(scheduler.wait(&v2).expect("parsed"));
        drop((v1, v2));
        let under_lock = drops.recv().expect("the refused output drops");
        assert!(
            !under_lock,
            "the refused output was dropped under the DAG lock"
        );
        // A replaced view: "two" is committed; an edit starts a new
        // generation, and the view holding "two"'s output goes.
        let v3 = scheduler.upsert("a.rs", "three", Default::default());
        drop(scheduler.wait(&v3).expect("parsed"));
        drop(v3);
        let under_lock = drops.recv().expect("the replaced view's output drops");
        assert!(
            !under_lock,
            "the replaced view was dropped under the DAG lock"
        );
        assert!(drops.try_recv().is_err(), "nothing else dropped");
    });
}

/// An Artifact that stops being served (its blocker changed) is the host's
/// output too: the view that held it is replaced under the lock and dropped
/// after it, with the artifact's last reference.
#[test]
fn an_evicted_artifact_is_dropped_after_the_lock_never_under_it() {
    watchdog("evicted artifact drops", || {
        let files = MemFiles::with(&[("a.rs", "use b.rs"), ("b.rs", "one")]);
        let (scheduler, drops, _hooks) = probes::probed(files);
        let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        drop(scheduler.wait(&built).expect("built"));
        drop(built);
        // b.rs's Analysis changes: a.rs's Artifact, built on the old one,
        // stops being served. The file keeps it as the prior its rebuild is
        // verified against (docs/design.md, "Early cutoff"), so it goes
        // when the rebuild commits, and nothing else holds it.
        let edit = scheduler.upsert("b.rs", "a longer text", Default::default());
        drop(scheduler.wait(&edit).expect("parsed"));
        drop(edit);
        let rebuilt = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        let output = scheduler.wait(&rebuilt).expect("rebuilt");
        assert!(
            !output.is_verified_copy(),
            "b.rs's Analysis changed: the Artifact ran again"
        );
        drop((output, rebuilt));
        let mut dropped = Vec::new();
        // The old b.rs Source and a.rs's Artifact, in either order.
        for _ in 0..2 {
            dropped.push(drops.recv().expect("an output drops"));
        }
        assert_eq!(
            dropped,
            [false, false],
            "an output was dropped under the DAG lock"
        );
    });
}

/// A failure the DAG keeps holds the host's error, and dropping that is
/// host code too: when a new generation retires the failed node, the
/// failure leaves the hold with the post-work and is dropped after it.
#[test]
fn a_retired_failure_is_dropped_after_the_lock_never_under_it() {
    watchdog("retired failure drops", || {
        let files = MemFiles::with(&[("a.rs", "fail")]);
        let (scheduler, drops, _hooks) = probes::probed(files);
        let failed = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        assert!(matches!(
            scheduler.wait(&failed),
            Err(RequestError::ExecutorFailed { .. })
        ));
        drop(failed);
        // New text retires generation 0 and its failed Analysis; nothing
        // but the DAG holds the host's error now.
        let edit = scheduler.upsert("a.rs", "fine", Default::default());
        drop(scheduler.wait(&edit).expect("parsed"));
        drop(edit);
        // The old Source (its view replaced) and the host's error, in
        // either order.
        let dropped = [
            drops.recv().expect("an output drops"),
            drops.recv().expect("an output drops"),
        ];
        assert_eq!(
            dropped,
            [false, false],
            "the host's error was dropped under the DAG lock"
        );
    });
}
