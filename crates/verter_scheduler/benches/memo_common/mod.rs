//! What the memo benchmarks share (`benches/memo.rs`, timed with divan, and
//! `benches/memo_profile.rs`, a plain loop to run under callgrind): an
//! executor whose cache node answers its key plus the sum of its upstream
//! values, the DAGs of 1k cache nodes it is measured on, and a scheduler
//! that has run them once, so that every node has a memo.

use std::sync::Arc;

use verter_dag::{Canonical, SchedulerCacheId};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, CacheNodeInput, CacheTask, Dag, DagResults, EdgeGate,
    ExecutorError, KeyedCache, Language, LoadError, NoDedupeHook, NodeId, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, SourceLoader, StageExecutor, UpstreamValue,
};

/// Cache nodes per DAG.
pub(crate) const NODES: usize = 1_000;

/// Layers of the layered shape (of `NODES / LAYERS` nodes each).
const LAYERS: usize = 10;

/// The one cache every node is of.
const SUM: SchedulerCacheId = SchedulerCacheId(1);

/// A DAG's shape, and how its nodes are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    /// `NODES` nodes, no edges, typed `u64` keys ([`KeyedCache`]).
    IndependentKeyed,
    /// 10 layers of 100, typed keys: every node after the first layer has
    /// an edge from the node at its position in the layer before, and every
    /// other node one more, from the node 37 positions on (1 350 edges).
    LayeredKeyed,
    /// `IndependentKeyed` with bare key hashes ([`CacheTask`]).
    IndependentBare,
    /// `LayeredKeyed` with bare key hashes ([`CacheTask`]).
    LayeredBare,
}

impl Case {
    /// Every case, for `#[divan::bench(args = ...)]`.
    pub(crate) const ALL: [Self; 4] = [
        Self::IndependentKeyed,
        Self::LayeredKeyed,
        Self::IndependentBare,
        Self::LayeredBare,
    ];

    fn layered(self) -> bool {
        matches!(self, Self::LayeredKeyed | Self::LayeredBare)
    }

    fn keyed(self) -> bool {
        matches!(self, Self::IndependentKeyed | Self::LayeredKeyed)
    }
}

/// The DAG of `case`: a fresh one each call, as a host builds it for each
/// submission.
pub(crate) fn build(case: Case) -> Dag {
    let mut dag = Dag::new();
    let nodes: Vec<NodeId<verter_scheduler::Cache>> = (0..NODES as u64)
        .map(|key| {
            if case.keyed() {
                dag.add(KeyedCache::new(SUM, key))
            } else {
                dag.add(CacheTask::new(SUM, key))
            }
        })
        .collect();
    if case.layered() {
        let width = NODES / LAYERS;
        for layer in 1..LAYERS {
            for i in 0..width {
                let node = nodes[layer * width + i];
                let before = (layer - 1) * width;
                dag.edge(nodes[before + i], node, EdgeGate::ConditionalOnSuccess);
                if i % 2 == 0 {
                    let other = nodes[before + (i + 37) % width];
                    dag.edge(other, node, EdgeGate::ConditionalOnSuccess);
                }
            }
        }
    }
    dag
}

/// Every path exists and holds a one-word text (no file node is asked
/// for here).
struct NoopLoader;

impl SourceLoader for NoopLoader {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from("x"))
    }
    fn classify(&self, _: &Canonical) -> Language {
        Language::new("noop")
    }
}

/// File stages that do nothing; a cache node answers its key (its key
/// hash when it has no typed key) plus the sum of its upstream values.
pub(crate) struct SumExec;

impl StageExecutor for SumExec {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    type CacheOutput = u64;

    fn execute_source(&self, _: &SourceInput<'_>, _: &mut SourceDeps) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_analysis(&self, _: &AnalysisInput<'_, ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_artifact(&self, _: &ArtifactInput<'_, (), ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_cache_node(&self, input: &CacheNodeInput<'_, Self>) -> Result<u64, ExecutorError> {
        let mut sum = input.key::<u64>().copied().unwrap_or(input.key_hash);
        for up in input.upstream {
            match up.value() {
                Some(UpstreamValue::Cache(value)) => sum = sum.wrapping_add(**value),
                _ => return Err(ExecutorError::msg("an upstream without a cache value")),
            }
        }
        Ok(sum)
    }
}

/// Submits `dag` and waits for its answers.
pub(crate) fn submit(scheduler: &Scheduler<SumExec>, dag: Dag) -> DagResults<SumExec> {
    let handle = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .expect("a well-formed DAG")
        .admitted()
        .expect("admitted");
    scheduler.wait(&handle)
}

/// Every node's value, in node order (panics on an error).
fn values(results: &DagResults<SumExec>) -> Vec<u64> {
    results
        .outcomes()
        .iter()
        .map(|outcome| match outcome {
            Ok(verter_scheduler::NodeOutput::Cache(value)) => **value,
            _ => panic!("every node has a cache value"),
        })
        .collect()
}

/// `(cache_runs, cache_memo_hits)`.
fn counters(scheduler: &Scheduler<SumExec>) -> (u64, u64) {
    let counters = scheduler.observe().counters();
    (counters.cache_runs, counters.cache_memo_hits)
}

/// An inline scheduler (default memo bound, 4 096) that has run `case`'s
/// DAG once, every node of it; checked once: a re-submission of a fresh
/// DAG of `case` runs nothing, hits `NODES` memos and answers the same
/// values.
pub(crate) fn warmed(case: Case) -> Arc<Scheduler<SumExec>> {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    assert!(config.cache_memos >= NODES, "every node keeps its memo");
    let scheduler =
        Scheduler::new_inline(config, NoopLoader, SumExec).expect("a valid configuration");
    let first = values(&submit(&scheduler, build(case)));
    assert_eq!(counters(&scheduler), (NODES as u64, 0), "{case:?}: all ran");
    let again = values(&submit(&scheduler, build(case)));
    assert_only_memo_hits(&scheduler, 0);
    assert_eq!(first, again, "{case:?}: the memos answer the same values");
    scheduler
}

/// Checks that no cache node ran after [`warmed`]'s first submission: its
/// own re-submission and the `resubmissions` after it were all answered
/// from memos, `NODES` hits each.
pub(crate) fn assert_only_memo_hits(scheduler: &Scheduler<SumExec>, resubmissions: usize) {
    let (runs, hits) = counters(scheduler);
    assert_eq!(runs, NODES as u64, "no cache node ran again");
    assert_eq!(
        hits,
        ((resubmissions + 1) * NODES) as u64,
        "every node of every re-submission hit its memo"
    );
}

/// Re-submits `dag` (unchanged: answered from memos) and waits for its
/// answers, which it drops (a host pays for that too); returns how many
/// there were.
#[inline(never)]
pub(crate) fn resubmit(scheduler: &Scheduler<SumExec>, dag: Dag) -> usize {
    submit(scheduler, dag).outcomes().len()
}
