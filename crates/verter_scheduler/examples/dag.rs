//! A host DAG: "check module m once the analyses of a.rs and b.rs are in",
//! at most two checks at a time, cancelled if the handle is dropped. The
//! check reads the analyses it was gated on from its input, and a second,
//! unchanged submission is answered from the check's memo without running.
use std::sync::Arc;
use verter_scheduler::*;

struct Disk;
impl SourceLoader for Disk {
    fn load(&self, p: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(format!("fn {p} body").into())
    }
}

struct Checker;
impl StageExecutor for Checker {
    type Source = usize;
    type Analysis = usize;
    type Artifact = ();
    type CacheOutput = String;
    fn execute_source(
        &self,
        i: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<usize, ExecutorError> {
        Ok(i.text.split_whitespace().count())
    }
    fn execute_analysis(&self, i: &AnalysisInput<'_, usize>) -> Result<usize, ExecutorError> {
        Ok(i.source.parsed)
    }
    fn execute_artifact(&self, _: &ArtifactInput<'_, usize, ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_cache_node(&self, i: &CacheNodeInput<'_, Self>) -> Result<String, ExecutorError> {
        let module: &String = i.key().ok_or_else(|| ExecutorError::msg("a keyed check"))?;
        let words: usize = ["a.rs", "b.rs"]
            .into_iter()
            .filter_map(|path| i.analysis(&Canonical::from(path)))
            .map(|analysis| *analysis.data())
            .sum();
        Ok(format!("checked {module}: {words} words"))
    }
}

fn main() {
    let config = SchedulerConfig::with_threads(2, 1);
    let scheduler = Scheduler::threaded(config, Disk, Checker).expect("a valid configuration");
    let at_most_two = verter_scheduler::ConcurrencyLimit::new(2);
    let check_dag = || {
        let mut dag = Dag::new();
        let a = dag.add(stage::Analysis.of("a.rs"));
        let b = dag.add(stage::Analysis.of("b.rs"));
        let check = dag.add_with(
            KeyedCache::new(SchedulerCacheId(1), "m".to_owned()),
            NodeOptions::new()
                .priority(Priority::High)
                .limit(&at_most_two),
        );
        dag.edge(a, check, EdgeGate::ConditionalOnSuccess).edge(
            b,
            check,
            EdgeGate::ConditionalOnSuccess,
        );
        (dag, a, check)
    };
    for round in ["first", "again"] {
        let (dag, a, check) = check_dag();
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("an acyclic DAG")
            .admitted()
            .expect("a blocking submission with no dedupe hook is admitted");
        let results = scheduler.wait(&handle);
        println!(
            "{round}: a.rs: {} words",
            results.get(a).expect("analysed").data()
        );
        println!("{round}: {}", results.get(check).expect("checked"));
    }
    let counters = scheduler.observe().counters();
    println!(
        "check runs: {}, answered from its memo: {}",
        counters.cache_runs, counters.cache_memo_hits
    );
    assert_eq!((counters.cache_runs, counters.cache_memo_hits), (1, 1));
}
