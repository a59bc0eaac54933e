//! Cache nodes as derived computations: typed keys, typed upstream values,
//! memos verified by their inputs' revisions, cutoff through a chain of
//! cache nodes, the memo bound, several output types, and every answer
//! after random edits equal to a fresh scheduler's.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use verter_dag::{ProfileHash, SchedulerCacheId, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    AnalysisInput, AnyCacheOutput, ArtifactInput, CacheNodeInput, CacheOf, Dag, DagHandle,
    DagResults, EdgeGate, ExecutorError, KeyedCache, NoDedupeHook, NodeId, QuiescenceReport,
    Scheduler, SourceDeps, SourceInput, StageExecutor, UpstreamNode, UpstreamValue, stage,
};

use crate::support::{GateHooks, MemFiles, StageKind, test_config};

/// Sums: the word counts of its upstream analyses plus its upstream sums.
const SUM: SchedulerCacheId = SchedulerCacheId(1);
/// Whether its upstream sums add up to an even number.
const EVEN: SchedulerCacheId = SchedulerCacheId(2);
/// A line naming its key and its upstream values.
const LABEL: SchedulerCacheId = SchedulerCacheId(3);
/// Fails while the executor says so, else counts its upstream analyses.
const FLAKY: SchedulerCacheId = SchedulerCacheId(4);

/// Word-counting file stages and the cache kinds above, each with its own
/// output type inside an [`AnyCacheOutput`]; every cache run is recorded.
#[derive(Clone, Default)]
struct MemoExec {
    runs: Arc<Mutex<Vec<String>>>,
    flaky_fails: Arc<Mutex<bool>>,
}

impl MemoExec {
    fn runs(&self) -> Vec<String> {
        self.runs.lock().clone()
    }

    fn take_runs(&self) -> Vec<String> {
        let mut runs = std::mem::take(&mut *self.runs.lock());
        runs.sort();
        runs
    }
}

/// The upstream values of a run as numbers: analyses' word counts and
/// sums, in upstream order.
fn numbers(input: &CacheNodeInput<'_, MemoExec>) -> Result<Vec<u64>, ExecutorError> {
    input
        .upstream
        .iter()
        .map(|up| match up.value() {
            Some(UpstreamValue::Analysis(analysis)) => Ok(*analysis.data() as u64),
            Some(UpstreamValue::Cache(output)) => output
                .downcast_ref::<u64>()
                .copied()
                .or_else(|| output.downcast_ref::<bool>().map(|even| u64::from(*even)))
                .ok_or_else(|| ExecutorError::msg("an upstream cache of another kind")),
            Some(_) => Err(ExecutorError::msg("an upstream of another stage")),
            None => Err(ExecutorError::msg("an upstream without a value")),
        })
        .collect()
}

impl StageExecutor for MemoExec {
    type Source = String;
    type Analysis = usize;
    type Artifact = usize;
    type CacheOutput = AnyCacheOutput;

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

    fn execute_cache_node(
        &self,
        input: &CacheNodeInput<'_, Self>,
    ) -> Result<AnyCacheOutput, ExecutorError> {
        let key: &String = input
            .key()
            .ok_or_else(|| ExecutorError::msg("every node here has a string key"))?;
        self.runs.lock().push(key.clone());
        let values = numbers(input);
        match input.cache_id {
            SUM => Ok(AnyCacheOutput::new(values?.iter().sum::<u64>())),
            EVEN => Ok(AnyCacheOutput::new(values?.iter().sum::<u64>() % 2 == 0)),
            LABEL => Ok(AnyCacheOutput::new(format!("{key}: {:?}", values?))),
            FLAKY if *self.flaky_fails.lock() => Err(ExecutorError::msg("flaky says no")),
            FLAKY => Ok(AnyCacheOutput::new(values?.len() as u64)),
            _ => Err(ExecutorError::msg("no such cache")),
        }
    }

    fn same_analysis(&self, previous: &usize, next: &usize) -> bool {
        previous == next
    }

    fn same_cache_output(
        &self,
        _: &WorkNodeIdentity,
        previous: &AnyCacheOutput,
        next: &AnyCacheOutput,
    ) -> bool {
        fn same<T: PartialEq + 'static>(a: &AnyCacheOutput, b: &AnyCacheOutput) -> Option<bool> {
            Some(a.downcast_ref::<T>()? == b.downcast_ref::<T>()?)
        }
        same::<u64>(previous, next)
            .or_else(|| same::<bool>(previous, next))
            .or_else(|| same::<String>(previous, next))
            .unwrap_or(false)
    }
}

fn keyed(cache: SchedulerCacheId, key: &str) -> KeyedCache<String> {
    KeyedCache::new(cache, key.to_owned())
}

fn scheduler_with(files: &MemFiles, exec: &MemoExec, memos: usize) -> Arc<Scheduler<MemoExec>> {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.cache_memos = memos;
    Scheduler::new_inline(config, files.clone(), exec.clone()).expect("a valid configuration")
}

fn submit(scheduler: &Scheduler<MemoExec>, dag: Dag) -> DagResults<MemoExec> {
    let handle: DagHandle<MemoExec> = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .expect("a well-formed DAG")
        .admitted()
        .expect("admitted");
    scheduler.wait(&handle)
}

fn counters(scheduler: &Scheduler<MemoExec>) -> (u64, u64, u64) {
    let c = scheduler.observe().counters();
    (
        c.cache_memo_hits,
        c.cache_memo_cutoffs,
        c.cache_memo_evictions,
    )
}

fn assert_quiet(scheduler: &Scheduler<MemoExec>) {
    assert!(scheduler.wait_idle(Duration::from_secs(30)));
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}

/// `a.rs` and `b.rs` analysed, summed, the sum labelled.
struct SumDag {
    dag: Dag,
    sum: NodeId<CacheOf<u64>>,
    label: NodeId<CacheOf<String>>,
}

fn sum_dag() -> SumDag {
    let mut dag = Dag::new();
    let a = dag.add(stage::Analysis.of("a.rs"));
    let b = dag.add(stage::Analysis.of("b.rs"));
    let sum = dag.add(keyed(SUM, "a+b").returning::<u64>());
    let label = dag.add(keyed(LABEL, "total").returning::<String>());
    dag.edge(a, sum, EdgeGate::ConditionalOnSuccess)
        .edge(b, sum, EdgeGate::ConditionalOnSuccess)
        .edge(sum, label, EdgeGate::ConditionalOnSuccess);
    SumDag { dag, sum, label }
}

#[test]
fn a_cache_node_gets_its_key_and_its_upstream_values_typed() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    let SumDag { dag, sum, label } = sum_dag();
    let results = submit(&scheduler, dag);
    assert_eq!(*results.get(sum).expect("sum"), 3);
    assert_eq!(*results.get(label).expect("label"), "total: [3]");
    assert_eq!(exec.runs(), ["a+b", "total"]);
    assert_quiet(&scheduler);
}

#[test]
fn the_upstream_helpers_find_values_by_file_and_by_cache() {
    /// Checks what `CacheNodeInput`'s lookups find, then answers 0.
    #[derive(Clone, Default)]
    struct Looks(Arc<Mutex<Vec<String>>>);
    impl StageExecutor for Looks {
        type Source = String;
        type Analysis = usize;
        type Artifact = usize;
        type CacheOutput = u64;
        fn execute_source(
            &self,
            i: &SourceInput<'_>,
            _: &mut SourceDeps,
        ) -> Result<String, ExecutorError> {
            Ok(i.text.to_owned())
        }
        fn execute_analysis(&self, i: &AnalysisInput<'_, String>) -> Result<usize, ExecutorError> {
            Ok(i.source.parsed.len())
        }
        fn execute_artifact(
            &self,
            i: &ArtifactInput<'_, usize, usize>,
        ) -> Result<usize, ExecutorError> {
            Ok(*i.analysis.data() * 10)
        }
        fn execute_cache_node(&self, i: &CacheNodeInput<'_, Self>) -> Result<u64, ExecutorError> {
            let a = verter_dag::Canonical::from("a.rs");
            let mut seen = self.0.lock();
            seen.push(format!("key {:?}", i.key::<String>()));
            seen.push(format!("analysis {:?}", i.analysis(&a).map(|s| *s.data())));
            seen.push(format!(
                "artifact {:?}",
                i.artifact(&a, ProfileHash(1)).map(|s| *s.data())
            ));
            seen.push(format!(
                "source {:?}",
                i.source(&a).map(|s| s.parsed.clone())
            ));
            seen.push(format!("cache {:?}", i.cache(SUM, 5).map(|v| **v)));
            seen.push(format!(
                "nodes {:?}",
                i.upstream
                    .iter()
                    .map(|u| u.node.clone())
                    .collect::<Vec<_>>()
            ));
            Ok(i.key_hash)
        }
    }
    let files = MemFiles::with(&[("a.rs", "abc")]);
    let looks = Looks::default();
    let scheduler = Scheduler::new_inline(
        test_config(Arc::new(GateHooks::default())),
        files.clone(),
        looks.clone(),
    )
    .expect("a valid configuration");
    let mut dag = Dag::new();
    let source = dag.add(stage::Source.of("a.rs"));
    let analysis = dag.add(stage::Analysis.of("a.rs"));
    let artifact = dag.add(stage::Artifact(ProfileHash(1)).of("a.rs"));
    let five = dag.add(verter_scheduler::CacheTask::new(SUM, 5));
    let reader = dag.add(KeyedCache::new(LABEL, "reader".to_owned()));
    for up in [
        source.index(),
        analysis.index(),
        artifact.index(),
        five.index(),
    ] {
        dag.edge_at(up, reader.index(), EdgeGate::Sequential);
    }
    let handle = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .unwrap()
        .admitted()
        .unwrap();
    let results = scheduler.wait(&handle);
    assert!(results.get(reader).is_ok());
    let seen = looks.0.lock().clone();
    // The keyless node `five` ran first and saw no key and no upstream.
    assert_eq!(seen[0], "key None");
    assert_eq!(
        seen[6..12],
        [
            "key Some(\"reader\")".to_owned(),
            "analysis Some(3)".to_owned(),
            "artifact Some(30)".to_owned(),
            "source Some(\"abc\")".to_owned(),
            "cache Some(5)".to_owned(),
            format!(
                "nodes {:?}",
                [
                    UpstreamNode::Stage {
                        path: verter_scheduler::DepPath::Canonical("a.rs".into()),
                        stage: TargetStage::Source
                    },
                    UpstreamNode::Stage {
                        path: verter_scheduler::DepPath::Canonical("a.rs".into()),
                        stage: TargetStage::Analysis
                    },
                    UpstreamNode::Stage {
                        path: verter_scheduler::DepPath::Canonical("a.rs".into()),
                        stage: TargetStage::Artifact(ProfileHash(1))
                    },
                    UpstreamNode::Cache {
                        cache_id: SUM,
                        key_hash: 5
                    },
                ]
            ),
        ]
    );
}

#[test]
fn an_unchanged_dag_is_answered_from_memos_and_an_edit_reruns_what_it_changed() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    submit(&scheduler, sum_dag().dag);
    assert_eq!(exec.take_runs(), ["a+b", "total"]);

    // Nothing changed: both nodes come from their memos.
    let SumDag { dag, sum, label } = sum_dag();
    let results = submit(&scheduler, dag);
    assert_eq!(*results.get(sum).unwrap(), 3);
    assert_eq!(*results.get(label).unwrap(), "total: [3]");
    assert_eq!(exec.take_runs(), Vec::<String>::new());
    assert_eq!(counters(&scheduler), (2, 0, 0));

    // An edit that changes a's word count reruns both.
    files.write("a.rs", "one two four");
    scheduler.invalidate("a.rs").unwrap();
    let SumDag { dag, sum, label } = sum_dag();
    let results = submit(&scheduler, dag);
    assert_eq!(*results.get(sum).unwrap(), 4);
    assert_eq!(*results.get(label).unwrap(), "total: [4]");
    assert_eq!(exec.take_runs(), ["a+b", "total"]);

    // An edit whose analysis is equal (same word count): the analysis is
    // run and cut off, so it keeps its revision, and the sum is verified.
    files.write("a.rs", "five six seven");
    scheduler.invalidate("a.rs").unwrap();
    let SumDag { dag, sum, .. } = sum_dag();
    let results = submit(&scheduler, dag);
    assert_eq!(*results.get(sum).unwrap(), 4);
    assert_eq!(exec.take_runs(), Vec::<String>::new());
    assert_eq!(counters(&scheduler), (4, 0, 0));
    assert_quiet(&scheduler);
}

#[test]
fn a_cache_node_equal_to_its_memo_cuts_off_the_nodes_after_it() {
    let files = MemFiles::with(&[("a.rs", "one two")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    let chain = || {
        let mut dag = Dag::new();
        let a = dag.add(stage::Analysis.of("a.rs"));
        let sum = dag.add(keyed(SUM, "a"));
        let even = dag.add(keyed(EVEN, "even").returning::<bool>());
        let label = dag.add(keyed(LABEL, "parity").returning::<String>());
        dag.edge(a, sum, EdgeGate::ConditionalOnSuccess)
            .edge(sum, even, EdgeGate::ConditionalOnSuccess)
            .edge(even, label, EdgeGate::ConditionalOnSuccess);
        (dag, even, label)
    };
    let (dag, even, label) = chain();
    let results = submit(&scheduler, dag);
    assert!(*results.get(even).unwrap());
    assert_eq!(*results.get(label).unwrap(), "parity: [1]");
    assert_eq!(exec.take_runs(), ["a", "even", "parity"]);

    // Two words become four: the sum changes, its parity does not, so the
    // label after it is verified from its memo.
    files.write("a.rs", "one two three four");
    scheduler.invalidate("a.rs").unwrap();
    let (dag, even, label) = chain();
    let results = submit(&scheduler, dag);
    assert!(*results.get(even).unwrap());
    assert_eq!(*results.get(label).unwrap(), "parity: [1]");
    assert_eq!(exec.take_runs(), ["a", "even"]);
    assert_eq!(counters(&scheduler), (1, 1, 0));

    // Three words: the parity changes and the label runs.
    files.write("a.rs", "one two three");
    scheduler.invalidate("a.rs").unwrap();
    let (dag, even, label) = chain();
    let results = submit(&scheduler, dag);
    assert!(!*results.get(even).unwrap());
    assert_eq!(*results.get(label).unwrap(), "parity: [0]");
    assert_eq!(exec.take_runs(), ["a", "even", "parity"]);
    assert_quiet(&scheduler);
}

#[test]
fn the_memo_bound_evicts_the_least_recently_used() {
    let files = MemFiles::default();
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 2);
    let one = |key: &str| {
        let mut dag = Dag::new();
        let node = dag.add(keyed(SUM, key).returning::<u64>());
        assert_eq!(*submit(&scheduler, dag).get(node).unwrap(), 0);
    };
    for key in ["k1", "k2", "k1", "k3", "k1", "k2"] {
        one(key);
    }
    // k1 hit twice; k3 evicted k2 (least recently used after k1's hit),
    // and k2 then evicted k3.
    assert_eq!(exec.runs(), ["k1", "k2", "k3", "k2"]);
    assert_eq!(counters(&scheduler), (2, 0, 2));
    assert_eq!(scheduler.cache_memos(), 2);
    assert_quiet(&scheduler);
}

#[test]
fn failures_and_upstream_errors_are_not_memoized() {
    let files = MemFiles::with(&[("bad.rs", "fail"), ("a.rs", "x")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    *exec.flaky_fails.lock() = true;
    let flaky = || {
        let mut dag = Dag::new();
        let a = dag.add(stage::Analysis.of("a.rs"));
        let node = dag.add(keyed(FLAKY, "flaky").returning::<u64>());
        dag.edge(a, node, EdgeGate::ConditionalOnSuccess);
        (dag, node)
    };
    let (dag, node) = flaky();
    assert!(submit(&scheduler, dag).get(node).is_err());
    *exec.flaky_fails.lock() = false;
    let (dag, node) = flaky();
    assert_eq!(*submit(&scheduler, dag).get(node).unwrap(), 1);
    let (dag, node) = flaky();
    assert_eq!(*submit(&scheduler, dag).get(node).unwrap(), 1);
    assert_eq!(
        exec.take_runs(),
        ["flaky", "flaky"],
        "the error was not kept"
    );

    // An upstream error (a Sequential edge lets the node run) has no
    // revision: the node runs every time.
    let sequential = || {
        let mut dag = Dag::new();
        let bad = dag.add(stage::Analysis.of("bad.rs"));
        let node = dag.add(keyed(LABEL, "after bad"));
        dag.edge(bad, node, EdgeGate::Sequential);
        (dag, node)
    };
    for _ in 0..2 {
        let (dag, node) = sequential();
        assert!(submit(&scheduler, dag).get(node).is_err());
    }
    assert_eq!(exec.take_runs(), ["after bad", "after bad"]);
    assert_quiet(&scheduler);
}

#[test]
fn forgetting_memos_and_a_reset_run_the_nodes_again() {
    let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    submit(&scheduler, sum_dag().dag);
    assert_eq!(scheduler.cache_memos(), 2);
    assert_eq!(scheduler.forget_cache_memos(Some(LABEL)), 1);
    submit(&scheduler, sum_dag().dag);
    assert_eq!(exec.take_runs(), ["a+b", "total", "total"]);
    assert_eq!(scheduler.forget_cache_memos(None), 2);
    submit(&scheduler, sum_dag().dag);
    assert_eq!(exec.take_runs(), ["a+b", "total"]);
    scheduler.reset();
    assert_eq!(scheduler.cache_memos(), 0);
    let SumDag { dag, sum, .. } = sum_dag();
    assert_eq!(*submit(&scheduler, dag).get(sum).unwrap(), 2);
    assert_eq!(exec.take_runs(), ["a+b", "total"]);
    assert_quiet(&scheduler);
}

#[test]
fn one_key_hash_with_two_keys_never_shares_a_memo() {
    // A keyless node of the hash a typed key has, then the typed node: the
    // memo of one never answers the other.
    let files = MemFiles::default();
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    let typed = keyed(LABEL, "k");
    let bare = verter_scheduler::CacheTask::new(LABEL, typed.task().key_hash);
    let mut dag = Dag::new();
    let node = dag.add(typed);
    assert!(submit(&scheduler, dag).get(node).is_ok());
    let mut dag = Dag::new();
    let node = dag.add(bare);
    // The bare node has no string key: this executor refuses it.
    assert!(submit(&scheduler, dag).get(node).is_err());
    let mut dag = Dag::new();
    let node = dag.add(keyed(LABEL, "k"));
    assert!(submit(&scheduler, dag).get(node).is_ok());
    assert_eq!(exec.take_runs(), ["k"], "the typed node came from its memo");
    assert_quiet(&scheduler);
}

/// A small deterministic generator (the tests' own; no dependency).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A DAG over files `f0..f3`: a sum per pair, a parity of every sum, and a
/// label of the parity, as strings for comparison.
fn random_dag() -> (Dag, Vec<NodeId<verter_scheduler::Cache>>) {
    let mut dag = Dag::new();
    let files: Vec<_> = (0..4)
        .map(|i| dag.add(stage::Analysis.of(format!("f{i}.rs"))))
        .collect();
    let mut outputs = Vec::new();
    let mut sums = Vec::new();
    for (i, pair) in [(0, 1), (1, 2), (2, 3)].into_iter().enumerate() {
        let sum = dag.add(keyed(SUM, &format!("s{i}")));
        dag.edge(files[pair.0], sum, EdgeGate::Sequential).edge(
            files[pair.1],
            sum,
            EdgeGate::Sequential,
        );
        sums.push(sum);
        outputs.push(sum);
    }
    let even = dag.add(keyed(EVEN, "even"));
    for &sum in &sums {
        dag.edge(sum, even, EdgeGate::Sequential);
    }
    let label = dag.add(keyed(LABEL, "label"));
    dag.edge(even, label, EdgeGate::Sequential);
    outputs.extend([even, label]);
    (dag, outputs)
}

fn describe(
    results: &DagResults<MemoExec>,
    outputs: &[NodeId<verter_scheduler::Cache>],
) -> Vec<String> {
    outputs
        .iter()
        .map(|&id| match results.get(id) {
            Ok(value) => value
                .downcast_ref::<u64>()
                .map(u64::to_string)
                .or_else(|| value.downcast_ref::<bool>().map(bool::to_string))
                .or_else(|| value.downcast_ref::<String>().cloned())
                .unwrap_or_default(),
            Err(error) => format!("error: {error}"),
        })
        .collect()
}

/// What a fresh scheduler answers for the random DAG over `files`.
fn fresh(files: &MemFiles) -> Vec<String> {
    let scheduler = scheduler_with(files, &MemoExec::default(), 0);
    let (dag, outputs) = random_dag();
    describe(&submit(&scheduler, dag), &outputs)
}

/// Random edits (word counts, failures, deletions) between submissions of
/// one DAG, on an inline and a threaded scheduler: every answer equals a
/// fresh scheduler's, and the memos answered some of them.
#[test]
fn every_answer_after_random_edits_is_what_a_fresh_scheduler_answers() {
    for (seed, threaded) in [(1, false), (2, false), (3, true), (4, true)] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed);
        let files = MemFiles::default();
        for i in 0..4 {
            files.write(&format!("f{i}.rs"), "w");
        }
        let exec = MemoExec::default();
        let mut config = test_config(Arc::new(GateHooks::default()));
        config.cache_memos = 3;
        let scheduler = if threaded {
            config.cpu_threads = 2;
            Scheduler::threaded(config, files.clone(), exec.clone()).expect("a valid configuration")
        } else {
            Scheduler::new_inline(config, files.clone(), exec.clone())
                .expect("a valid configuration")
        };
        for step in 0..60 {
            let path = format!("f{}.rs", rng.below(4));
            match rng.below(6) {
                0 => files.write(&path, "fail"),
                1 => files.delete(&path),
                n => files.write(&path, &"w ".repeat(n as usize)),
            }
            scheduler.invalidate(&path).ok();
            let (dag, outputs) = random_dag();
            let ours = describe(&submit(&scheduler, dag), &outputs);
            assert_eq!(ours, fresh(&files), "seed {seed}, step {step}");
        }
        let (hits, _, evictions) = counters(&scheduler);
        assert!(hits > 0, "seed {seed}: the memos answered something");
        assert!(evictions > 0, "seed {seed}: the bound evicted something");
        assert!(scheduler.wait_idle(Duration::from_secs(30)));
        assert_eq!(
            scheduler.observe().quiescence_report(),
            QuiescenceReport::clean()
        );
    }
}

/// Two DAGs name one cache node over different upstream values while
/// both are in flight: neither is answered with the other's value (the
/// second waits for the first's flight, then runs its own).
#[test]
fn one_key_over_different_upstream_values_in_flight_at_once_runs_for_each() {
    let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "one two three")]);
    let exec = MemoExec::default();
    let scheduler = scheduler_with(&files, &exec, 16);
    let over = |path: &str| {
        let mut dag = Dag::new();
        let file = dag.add(stage::Analysis.of(path));
        let sum = dag.add(keyed(SUM, "shared").returning::<u64>());
        dag.edge(file, sum, EdgeGate::ConditionalOnSuccess);
        (dag, sum)
    };
    let admit = |dag: Dag| {
        scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("a well-formed DAG")
            .admitted()
            .expect("admitted")
    };
    let (first, first_sum) = over("a.rs");
    let (second, second_sum) = over("b.rs");
    let (first, second) = (admit(first), admit(second));
    let (first, second) = (scheduler.wait(&first), scheduler.wait(&second));
    assert_eq!(*first.get(first_sum).unwrap(), 1);
    assert_eq!(*second.get(second_sum).unwrap(), 3);
    assert_eq!(exec.take_runs(), ["shared", "shared"]);
    // Both again, one after the other: the memo holds the newer inputs.
    let (dag, sum) = over("b.rs");
    assert_eq!(*submit(&scheduler, dag).get(sum).unwrap(), 3);
    assert_eq!(exec.take_runs(), Vec::<String>::new());
    assert_quiet(&scheduler);
}
