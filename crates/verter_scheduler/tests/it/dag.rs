//! Host DAGs: gates, cancellation, backpressure, per-call limits, priority
//! inheritance, dedupe (in the scheduler and through a caller's hook),
//! cycle refusal, and cache nodes gated on file analyses.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use parking_lot::Mutex;
use verter_dag::{Priority, SchedulerCacheId, WorkNodeIdentity};
use verter_scheduler::{
    Admission, AnalysisInput, ArtifactInput, CacheNodeInput, CacheTask, CancellationToken, Dag,
    DagError, DagHandle, DagResults, DedupeHook, DedupeJoiner, EdgeGate, ExecutorError,
    NoDedupeHook, NodeOptions, QuiescenceReport, RequestContext, RequestError, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, StageExecutor,
};

use crate::support::{Analysis, GateHooks, MemFiles, StageKind, state_of, test_config, watchdog};

const CACHE: SchedulerCacheId = SchedulerCacheId(9);

/// What a cache node with key `k` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    /// Returns `k`, plus the word counts of the file analyses it was given
    /// through its context.
    Value,
    /// Returns an executor error.
    Fail,
    /// Panics.
    Panic,
    /// Reports it started, then runs until its token is cancelled.
    UntilCancelled,
}

/// Where the first runs meet, and how many of them.
type Meeting = (Arc<Barrier>, usize);

/// An executor whose file stages count words and whose cache nodes behave
/// as the test says, recording every run and how many ran at once.
#[derive(Clone, Default)]
struct DagExec {
    behaviours: Arc<Mutex<HashMap<u64, Behaviour>>>,
    /// Cache keys in the order their runs started.
    cache_runs: Arc<Mutex<Vec<u64>>>,
    /// Cache keys whose run saw its token cancelled.
    saw_cancel: Arc<Mutex<Vec<u64>>>,
    running: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
    /// The first `barrier.1` runs meet at `barrier.0` before going on.
    barrier: Arc<Mutex<Option<Meeting>>>,
    started: Arc<Mutex<Option<std::sync::mpsc::Sender<u64>>>>,
}

impl DagExec {
    fn behave(&self, key: u64, behaviour: Behaviour) {
        self.behaviours.lock().insert(key, behaviour);
    }

    fn runs(&self) -> Vec<u64> {
        self.cache_runs.lock().clone()
    }
}

/// Counts a run out when dropped, also on unwind.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl StageExecutor for DagExec {
    type Source = String;
    type Analysis = usize;
    type Artifact = usize;
    type CacheOutput = u64;

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<String, ExecutorError> {
        if input.text.contains("fail") {
            return Err(ExecutorError::msg("the text says fail"));
        }
        Ok(input.text.to_owned())
    }

    fn execute_analysis(&self, input: &AnalysisInput<'_, String>) -> Result<usize, ExecutorError> {
        Ok(input.source.parsed.split_whitespace().count())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, usize>,
    ) -> Result<usize, ExecutorError> {
        Ok(*input.analysis.data())
    }

    fn execute_cache_node(&self, input: &CacheNodeInput<'_, Self>) -> Result<u64, ExecutorError> {
        let WorkNodeIdentity::CacheNode { key_hash, .. } = input.identity else {
            return Err(ExecutorError::msg("not a cache node"));
        };
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        let _running = Running(&self.running);
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let ticket = {
            let mut runs = self.cache_runs.lock();
            runs.push(key_hash);
            runs.len()
        };
        let barrier = self.barrier.lock().clone();
        if let Some((barrier, first)) = barrier
            && ticket <= first
        {
            barrier.wait();
        }
        let behaviour = self
            .behaviours
            .lock()
            .get(&key_hash)
            .copied()
            .unwrap_or(Behaviour::Value);
        match behaviour {
            Behaviour::Value => {
                let extra = input
                    .context
                    .and_then(|context| context.downcast_ref::<u64>())
                    .copied()
                    .unwrap_or(0);
                Ok(key_hash + extra)
            }
            Behaviour::Fail => Err(ExecutorError::msg("the cache says no")),
            Behaviour::Panic => panic!("cache node {key_hash} panics"),
            Behaviour::UntilCancelled => {
                if let Some(started) = &*self.started.lock() {
                    let _ = started.send(key_hash);
                }
                while !input.cancel.is_cancelled() {
                    std::thread::park_timeout(Duration::from_millis(1));
                }
                self.saw_cancel.lock().push(key_hash);
                Err(ExecutorError::msg("cancelled"))
            }
        }
    }
}

fn inline_with(
    files: &MemFiles,
    exec: &DagExec,
    config: SchedulerConfig,
) -> Arc<Scheduler<DagExec>> {
    Scheduler::new_inline(config, files.clone(), exec.clone()).expect("a valid configuration")
}

fn inline(files: &MemFiles, exec: &DagExec) -> Arc<Scheduler<DagExec>> {
    inline_with(files, exec, test_config(Arc::new(GateHooks::default())))
}

/// An inline scheduler whose ready queue holds `depth` stages for DAGs.
fn inline_bounded(files: &MemFiles, exec: &DagExec, depth: usize) -> Arc<Scheduler<DagExec>> {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.max_ready_queue_depth = depth;
    inline_with(files, exec, config)
}

/// An inline scheduler that runs one CPU stage at a time: what is
/// dispatched is fixed when it takes the slot, so priorities decide the
/// order of the rest.
fn one_at_a_time(files: &MemFiles, exec: &DagExec) -> Arc<Scheduler<DagExec>> {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.dag.cpu_budget = 1;
    inline_with(files, exec, config)
}

fn threaded(files: &MemFiles, exec: &DagExec, cpu_threads: usize) -> Arc<Scheduler<DagExec>> {
    let mut config = SchedulerConfig::with_threads(cpu_threads, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, files.clone(), exec.clone(), cpu, io).expect("a valid configuration")
}

fn cache(key: u64) -> CacheTask {
    CacheTask::new(CACHE, key)
}

fn admitted<E: StageExecutor>(
    admission: Result<Admission<DagHandle<E>>, DagError>,
) -> DagHandle<E> {
    match admission.expect("a well-formed DAG") {
        Admission::Admitted(handle) => handle,
        other => panic!("expected admission, got {other:?}"),
    }
}

fn submit(scheduler: &Scheduler<DagExec>, dag: Dag) -> DagHandle<DagExec> {
    admitted(scheduler.submit_dag(dag, &NoDedupeHook))
}

/// Submits a DAG of the one cache node `task`, run as `options` say.
fn submit_one(
    scheduler: &Scheduler<DagExec>,
    task: CacheTask,
    options: NodeOptions,
) -> DagHandle<DagExec> {
    let mut dag = Dag::new();
    dag.add_with(task, options);
    submit(scheduler, dag)
}

fn assert_quiet(scheduler: &Scheduler<DagExec>) {
    assert!(
        scheduler.wait_idle(Duration::from_secs(30)),
        "the scheduler went idle"
    );
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}

fn upstream_failed(results: &DagResults<DagExec>, index: usize) -> bool {
    matches!(
        &results.outcomes()[index],
        Err(RequestError::UpstreamFailed { .. })
    )
}

#[test]
fn a_cache_node_gated_on_file_analyses_runs_after_them_with_its_context() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let b = dag.add(Analysis.of("b.rs"));
    let check = dag.add_with(
        cache(100),
        NodeOptions::new().context(RequestContext::new(5u64)),
    );
    dag.edge(a, check, EdgeGate::ConditionalOnSuccess).edge(
        b,
        check,
        EdgeGate::ConditionalOnSuccess,
    );
    let handle = submit(&scheduler, dag);
    let results = scheduler.wait(&handle);
    assert_eq!(*results.get(a).expect("a's analysis").data(), 2);
    assert_eq!(*results.get(b).expect("b's analysis").data(), 1);
    assert_eq!(*results.get(check).expect("the cache node"), 105);
    assert_eq!(exec.runs(), vec![100]);
    assert_eq!(scheduler.observe().counters().cache_runs, 1);
    // The analyses are the pipeline's: a later request reads them.
    assert_eq!(scheduler.observe().counters().analysis_runs, 2);
    assert_quiet(&scheduler);
}

#[test]
fn a_cache_node_gated_on_a_failed_analysis_is_skipped_without_running() {
    let files = MemFiles::with(&[("a.rs", "fail here")]);
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let check = dag.add(cache(1));
    dag.edge(a, check, EdgeGate::ConditionalOnSuccess);
    let results = scheduler.wait(&submit(&scheduler, dag));
    assert!(matches!(
        results.get(a),
        Err(RequestError::ExecutorFailed { .. })
    ));
    match results.get(check) {
        Err(RequestError::UpstreamFailed { node, cause }) => {
            assert_eq!(&*node, "Analysis(a.rs)");
            assert!(matches!(*cause, RequestError::ExecutorFailed { .. }));
        }
        other => panic!("expected UpstreamFailed, got {other:?}"),
    }
    assert!(exec.runs().is_empty());
    assert_quiet(&scheduler);
}

#[test]
fn each_gate_treats_an_upstream_error_as_documented() {
    // failing → {seq, success, admission}; each downstream then feeds a
    // node of its own through each gate, so "skipped before admission"
    // is covered too.
    let files = MemFiles::default();
    let exec = DagExec::default();
    exec.behave(1, Behaviour::Fail);
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let failing = dag.add(cache(1));
    let seq = dag.add(cache(2));
    let success = dag.add(cache(3));
    let admission = dag.add(cache(4));
    dag.edge(failing, seq, EdgeGate::Sequential)
        .edge(failing, success, EdgeGate::ConditionalOnSuccess)
        .edge(failing, admission, EdgeGate::ConditionalOnAdmission);
    // After the skipped node: a Sequential edge still lets go; the others
    // skip (it was never admitted, and it gave no value).
    let after_skipped_seq = dag.add(cache(5));
    let after_skipped_success = dag.add(cache(6));
    let after_skipped_admission = dag.add(cache(7));
    dag.edge(success, after_skipped_seq, EdgeGate::Sequential)
        .edge(
            success,
            after_skipped_success,
            EdgeGate::ConditionalOnSuccess,
        )
        .edge(
            success,
            after_skipped_admission,
            EdgeGate::ConditionalOnAdmission,
        );
    let results = scheduler.wait(&submit(&scheduler, dag));
    // The error names the cache as its path (one interned name per cache,
    // not per key) and the node as its stage.
    match results.get(failing) {
        Err(RequestError::ExecutorFailed { path, stage, .. }) => {
            assert_eq!(path.as_str(), "<cache 9>");
            assert_eq!(&*stage, "CacheNode 9:1");
        }
        other => panic!("expected ExecutorFailed, got {other:?}"),
    }
    assert_eq!(results.get(seq).ok().as_deref(), Some(&2));
    assert!(upstream_failed(&results, success.index()));
    assert_eq!(results.get(admission).ok().as_deref(), Some(&4));
    assert_eq!(results.get(after_skipped_seq).ok().as_deref(), Some(&5));
    assert!(upstream_failed(&results, after_skipped_success.index()));
    assert!(upstream_failed(&results, after_skipped_admission.index()));
    let mut ran = exec.runs();
    ran.sort_unstable();
    assert_eq!(ran, vec![1, 2, 4, 5], "skipped nodes never run");
    assert_quiet(&scheduler);
}

#[test]
fn an_admission_gate_lets_its_node_go_before_the_upstream_finishes() {
    // Threaded: the upstream runs until cancelled; a node gated on its
    // admission only runs and is answered meanwhile.
    let files = MemFiles::default();
    let exec = DagExec::default();
    exec.behave(1, Behaviour::UntilCancelled);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    *exec.started.lock() = Some(started_tx);
    let scheduler = threaded(&files, &exec, 2);
    watchdog("admission-gate", move || {
        let mut dag = Dag::new();
        let long = dag.add(cache(1));
        let early = dag.add(cache(2));
        dag.edge(long, early, EdgeGate::ConditionalOnAdmission);
        let handle = submit(&scheduler, dag);
        assert_eq!(started_rx.recv().expect("the long node started"), 1);
        // The early node runs while the long one is still running.
        while exec.runs().len() < 2 {
            std::thread::park_timeout(Duration::from_millis(1));
        }
        assert!(!handle.is_answered());
        handle.cancel();
        let results = handle
            .try_results()
            .expect("a cancelled DAG is answered at once");
        assert!(matches!(results.get(long), Err(RequestError::Cancelled)));
        assert!(
            results.get(early).is_ok()
                || matches!(results.get(early), Err(RequestError::Cancelled))
        );
        assert_quiet(&scheduler);
        assert_eq!(exec.saw_cancel.lock().clone(), vec![1]);
    });
}

#[test]
fn dedupe_inside_a_dag_and_across_dags_runs_one_flight() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut first = Dag::new();
    let x = first.add(cache(7));
    let x_again = first.add(cache(7));
    let mut second = Dag::new();
    let y = second.add(cache(7));
    let one = submit(&scheduler, first);
    let two = submit(&scheduler, second);
    let (one, two) = (scheduler.wait(&one), scheduler.wait(&two));
    assert_eq!(*one.get(x).expect("x"), 7);
    assert_eq!(*one.get(x_again).expect("x again"), 7);
    assert_eq!(*two.get(y).expect("y"), 7);
    assert_eq!(exec.runs(), vec![7], "three nodes, one flight");
    // A finished flight leaves its memo: the next DAG is answered from it.
    let mut third = Dag::new();
    let z = third.add(cache(7));
    assert_eq!(
        *scheduler
            .wait(&submit(&scheduler, third))
            .get(z)
            .expect("z"),
        7
    );
    assert_eq!(exec.runs(), vec![7]);
    assert_eq!(scheduler.observe().counters().cache_memo_hits, 1);
    assert_quiet(&scheduler);
}

#[test]
fn without_memos_a_finished_flight_is_not_a_cache() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.cache_memos = 0;
    let scheduler = inline_with(&files, &exec, config);
    for _ in 0..2 {
        let mut dag = Dag::new();
        let z = dag.add(cache(7));
        assert_eq!(
            *scheduler.wait(&submit(&scheduler, dag)).get(z).expect("z"),
            7
        );
    }
    assert_eq!(exec.runs(), vec![7, 7]);
    assert_eq!(scheduler.cache_memos(), 0);
    assert_quiet(&scheduler);
}

/// A caller's in-flight table: keys it already holds a flight for.
struct Flights(Mutex<HashMap<WorkNodeIdentity, &'static str>>);

impl DedupeHook for Flights {
    fn probe(&self, identity: &WorkNodeIdentity) -> Option<DedupeJoiner> {
        self.0
            .lock()
            .get(identity)
            .map(|name| DedupeJoiner::new(*name))
    }
}

#[test]
fn a_dedupe_hook_that_holds_the_flight_joins_it_and_nothing_is_submitted() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let hook = Flights(Mutex::new(HashMap::from([(
        cache(3).identity(),
        "flight-3",
    )])));
    let mut dag = Dag::new();
    let a = dag.add(cache(1));
    let out = dag.add(cache(3));
    dag.edge(a, out, EdgeGate::Sequential);
    match scheduler.submit_dag(dag, &hook).expect("well-formed") {
        Admission::DedupeJoined(joiner) => {
            assert_eq!(joiner.downcast::<&str>().ok(), Some("flight-3"));
        }
        other => panic!("expected DedupeJoined, got {other:?}"),
    }
    scheduler.run_until_idle();
    assert!(exec.runs().is_empty(), "nothing was submitted");
    // A DAG whose output the hook does not hold is admitted.
    let mut dag = Dag::new();
    let other = dag.add(cache(4));
    let handle = admitted(scheduler.submit_dag(dag, &hook));
    assert_eq!(*scheduler.wait(&handle).get(other).expect("ran"), 4);
    assert_quiet(&scheduler);
}

#[test]
fn a_cycle_is_refused_before_anything_is_admitted() {
    let files = MemFiles::with(&[("a.rs", "x")]);
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let b = dag.add(cache(1));
    let c = dag.add(cache(2));
    let free = dag.add(cache(3));
    dag.edge(a, b, EdgeGate::Sequential)
        .edge(b, c, EdgeGate::Sequential)
        .edge(c, b, EdgeGate::ConditionalOnSuccess)
        .edge(free, a, EdgeGate::Sequential);
    match scheduler.submit_dag(dag, &NoDedupeHook) {
        Err(DagError::DependencyCycle { path }) => {
            assert_eq!(path.len(), 3);
            assert_eq!(path.first(), path.last());
            assert!(
                path.iter().all(|node| node.starts_with("CacheNode 9:")),
                "{path:?}"
            );
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    scheduler.run_until_idle();
    assert!(exec.runs().is_empty());
    assert_eq!(scheduler.observe().counters().submits, 0);
    assert_eq!(scheduler.observe().counters().analysis_runs, 0);
    assert_quiet(&scheduler);
}

#[test]
fn backpressure_admits_nothing_and_leaves_the_ready_queue_as_it_was() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline_bounded(&files, &exec, 2);
    // Five independent nodes: two are handed to the stages (the bound),
    // three are held.
    let mut dag = Dag::new();
    let nodes: Vec<_> = (0..5).map(|key| dag.add(cache(key))).collect();
    let first = submit(&scheduler, dag);
    assert_eq!(scheduler.observe().ready_queue_depth(), 2);
    let before = state_of(&scheduler);
    let mut second = Dag::new();
    let late = second.add(cache(50));
    let refused = scheduler
        .try_submit_dag(second.clone(), &NoDedupeHook)
        .expect("well-formed");
    assert!(refused.is_backpressured());
    assert_eq!(scheduler.observe().ready_queue_depth(), 2);
    assert_eq!(state_of(&scheduler), before);
    let results = scheduler.wait(&first);
    for node in nodes {
        assert!(results.get(node).is_ok());
    }
    let handle = admitted(scheduler.try_submit_dag(second, &NoDedupeHook));
    assert_eq!(*scheduler.wait(&handle).get(late).expect("ran"), 50);
    assert_quiet(&scheduler);
}

#[test]
fn blocking_submission_waits_for_room_by_running_work() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline_bounded(&files, &exec, 1);
    let mut dag = Dag::new();
    let held: Vec<_> = (0..3).map(|key| dag.add(cache(key))).collect();
    let first = submit(&scheduler, dag);
    // Inline: the blocking submission runs the queued work itself.
    let mut dag = Dag::new();
    let next = dag.add(cache(10));
    let second = submit(&scheduler, dag);
    let (first, second) = (scheduler.wait(&first), scheduler.wait(&second));
    for node in held {
        assert!(first.get(node).is_ok());
    }
    assert_eq!(*second.get(next).expect("ran"), 10);
    assert_quiet(&scheduler);
}

#[test]
fn dropping_a_dag_handle_cancels_every_descendant_and_frees_its_capacity() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    exec.behave(1, Behaviour::UntilCancelled);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    *exec.started.lock() = Some(started_tx);
    let scheduler = threaded(&files, &exec, 2);
    let limit = verter_scheduler::ConcurrencyLimit::new(1);
    watchdog("drop-cancels", move || {
        let mut dag = Dag::new();
        let mut upstream = dag.add_with(cache(1), NodeOptions::new().limit(&limit));
        for key in 2..6 {
            let node = dag.add_with(cache(key), NodeOptions::new().limit(&limit));
            let gate = if key % 2 == 0 {
                EdgeGate::ConditionalOnSuccess
            } else {
                EdgeGate::Sequential
            };
            dag.edge(upstream, node, gate);
            upstream = node;
        }
        let handle = submit(&scheduler, dag);
        assert_eq!(started_rx.recv().expect("the root started"), 1);
        assert_eq!(scheduler.observe().quiescence_report().dag_permits, 1);
        drop(handle);
        assert_quiet(&scheduler);
        assert_eq!(exec.runs(), vec![1], "no descendant ran");
        assert_eq!(
            exec.saw_cancel.lock().clone(),
            vec![1],
            "the running root saw its token"
        );
        assert_eq!(scheduler.observe().ledger().in_use(), 0);
    });
}

#[test]
fn a_cancelled_node_token_keeps_the_node_from_running_and_skips_what_needs_it() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let token = CancellationToken::new();
    token.cancel();
    let mut dag = Dag::new();
    let gone = dag.add_with(cache(1), NodeOptions::new().cancel(token));
    let after = dag.add(cache(2));
    let anyway = dag.add(cache(3));
    dag.edge(gone, after, EdgeGate::ConditionalOnSuccess)
        .edge(gone, anyway, EdgeGate::Sequential);
    let results = scheduler.wait(&submit(&scheduler, dag));
    assert!(matches!(results.get(gone), Err(RequestError::Cancelled)));
    assert!(upstream_failed(&results, after.index()));
    assert_eq!(*results.get(anyway).expect("sequential goes"), 3);
    assert_eq!(exec.runs(), vec![3]);
    assert_quiet(&scheduler);
}

#[test]
fn the_per_call_limit_caps_a_hundred_node_dag_even_when_nodes_panic() {
    const PERMITS: usize = 3;
    let files = MemFiles::default();
    let exec = DagExec::default();
    for key in (0..100).filter(|key| key % 10 == 0) {
        exec.behave(key, Behaviour::Panic);
    }
    // The first PERMITS runs meet before any finishes: the cap is reached,
    // and with four stage threads it could be exceeded if it did not hold.
    *exec.barrier.lock() = Some((Arc::new(Barrier::new(PERMITS)), PERMITS));
    let scheduler = threaded(&files, &exec, 4);
    let limit = verter_scheduler::ConcurrencyLimit::new(PERMITS);
    watchdog("limit", move || {
        let mut dag = Dag::new();
        let nodes: Vec<_> = (0..100)
            .map(|key| dag.add_with(cache(key), NodeOptions::new().limit(&limit)))
            .collect();
        let results = scheduler.wait(&submit(&scheduler, dag));
        for (key, node) in nodes.into_iter().enumerate() {
            match results.get(node) {
                Ok(value) => assert_eq!(*value, key as u64),
                Err(RequestError::ExecutorPanicked { .. }) => assert_eq!(key % 10, 0),
                Err(other) => panic!("node {key}: {other}"),
            }
        }
        assert_eq!(exec.most_at_once.load(Ordering::SeqCst), PERMITS);
        assert_eq!(exec.runs().len(), 100);
        assert_quiet(&scheduler);
    });
}

#[test]
fn a_higher_priority_dag_raises_a_node_it_shares() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = one_at_a_time(&files, &exec);
    // Node 0 takes the one CPU slot; then, at Low, `earlier` and `shared`
    // wait in the ready queue, in that order.
    let busy = submit_one(&scheduler, cache(0), NodeOptions::new());
    let low = || NodeOptions::new().priority(Priority::Low);
    let earlier = submit_one(&scheduler, cache(1), low());
    let shared = submit_one(&scheduler, cache(2), low());
    // A High DAG shares node 2: it runs first.
    let urgent = submit_one(
        &scheduler,
        cache(2),
        NodeOptions::new().priority(Priority::High),
    );
    scheduler.wait(&busy);
    scheduler.wait(&urgent);
    scheduler.wait(&earlier);
    scheduler.wait(&shared);
    assert_eq!(exec.runs(), vec![0, 2, 1], "the shared node was raised");
    assert_quiet(&scheduler);
}

#[test]
fn a_node_inherits_the_priority_of_the_nodes_after_it() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = one_at_a_time(&files, &exec);
    let busy = submit_one(&scheduler, cache(0), NodeOptions::new());
    let plain = submit_one(&scheduler, cache(1), NodeOptions::new());
    // `feeder` asks for Low, but feeds a Critical node.
    let mut dag = Dag::new();
    let feeder = dag.add_with(cache(2), NodeOptions::new().priority(Priority::Low));
    let urgent = dag.add_with(cache(3), NodeOptions::new().priority(Priority::Critical));
    dag.edge(feeder, urgent, EdgeGate::ConditionalOnSuccess);
    let dag = submit(&scheduler, dag);
    scheduler.wait(&busy);
    scheduler.wait(&dag);
    scheduler.wait(&plain);
    assert_eq!(exec.runs(), vec![0, 2, 3, 1]);
    assert_quiet(&scheduler);
}

#[test]
fn a_dropped_scheduler_answers_its_dags() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let node = dag.add(cache(1));
    let handle = submit(&scheduler, dag);
    drop(scheduler);
    let results = handle.try_results().expect("answered at teardown");
    assert!(matches!(results.get(node), Err(RequestError::Cancelled)));
}

#[test]
fn reset_cancels_dags_and_their_flights() {
    let files = MemFiles::with(&[("a.rs", "a b")]);
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let c = dag.add(cache(1));
    dag.edge(a, c, EdgeGate::Sequential);
    let handle = submit(&scheduler, dag);
    scheduler.reset();
    let results = handle.try_results().expect("answered by the reset");
    assert!(results.get(c).is_err());
    assert_quiet(&scheduler);
    assert!(exec.runs().is_empty());
}

#[test]
fn malformed_dags_are_refused_with_typed_errors() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    let scheduler = inline(&files, &exec);
    let mut other = Dag::new();
    let foreign = other.add(cache(1));
    other.add(cache(2));
    let mut dag = Dag::new();
    let mine = dag.add(cache(3));
    let _ = foreign;
    dag.edge(mine, other.add(cache(4)), EdgeGate::Sequential);
    assert!(matches!(
        scheduler.submit_dag(dag, &NoDedupeHook),
        Err(DagError::UnknownNode { index: 2, len: 1 })
    ));
    let mut dag = Dag::new();
    dag.add(Analysis.of("a.rs").text("edited"));
    assert!(matches!(
        scheduler.submit_dag(dag, &NoDedupeHook),
        Err(DagError::EditInDag { .. })
    ));
    let empty = admitted(scheduler.submit_dag(Dag::new(), &NoDedupeHook));
    assert!(
        empty
            .try_results()
            .expect("answered at once")
            .outcomes()
            .is_empty()
    );
    assert_quiet(&scheduler);
}

#[test]
fn edges_by_position_gate_like_typed_ones_and_a_bad_position_is_refused() {
    let files = MemFiles::default();
    let exec = DagExec::default();
    exec.behave(1, Behaviour::Fail);
    let scheduler = inline(&files, &exec);
    let mut dag = Dag::new();
    let keys = [1, 2, 3];
    let nodes: Vec<_> = keys.iter().map(|&key| dag.add(cache(key))).collect();
    dag.edge_at(0, 1, EdgeGate::ConditionalOnSuccess)
        .edge_at(0, 2, EdgeGate::Sequential);
    let results = scheduler.wait(&submit(&scheduler, dag));
    assert!(upstream_failed(&results, nodes[1].index()));
    assert_eq!(*results.get(nodes[2]).expect("sequential goes"), 3);
    let mut dag = Dag::new();
    dag.add(cache(4));
    dag.edge_at(0, usize::MAX, EdgeGate::Sequential);
    assert!(matches!(
        scheduler.submit_dag(dag, &NoDedupeHook),
        Err(DagError::UnknownNode { len: 1, .. })
    ));
    assert_quiet(&scheduler);
}
