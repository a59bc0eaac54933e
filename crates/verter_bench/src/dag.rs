//! The host-DAG workload: one DAG of `nodes` nodes submitted whole with
//! `Scheduler::submit_dag`, side by side, in the same process, with the
//! same graph run by a plain topological loop on one thread and by rayon
//! (level by level) on `threads` threads.
//!
//! **The shape.** Layers of [`WIDTH`] nodes; every node after the first
//! layer has [`FAN_IN`] edges (`ConditionalOnSuccess`) from the layer
//! before it: the node of its own column and one drawn at random (seeded).
//! 10 000 nodes make 100 layers and 19 800 edges. Every node is a cache
//! node ([`CacheTask`], a distinct key each, so nothing deduplicates)
//! whose kernel is [`Kernels::cache_node`]: a function of its key and a
//! spin of `c` µs. With `files` > 0 the first layer is instead the
//! Analysis of every file of a generated project of `files` files (the
//! loader serves them; verter runs their Source and Analysis stages), and
//! the cache layers follow.
//!
//! **What is measured** (median of `iterations` runs, each on a fresh
//! scheduler whose threads are up before the clock starts):
//! *build*, the host building the [`Dag`] (`add`, `edge`); *admission*,
//! the `submit_dag` call; *wall*, from `submit_dag` until `wait`
//! returns every answer; per node, each over the DAG's nodes. *overhead*
//! is W1's: (wall × threads − Σ kernel time) / nodes, Σ kernel time being
//! one serial run of every node's kernel in a plain loop. The ready queue
//! bound is `SchedulerConfig::max_ready_queue_depth` (64 by default, the
//! value measured unless `--ready-depth` says otherwise): at most that many
//! ready stages are queued, and the DAG's other ready nodes are held.
//!
//! verter's cache nodes receive their upstream values
//! (`CacheNodeInput::upstream`), but the kernels here ignore them, as the
//! other systems pass no values along edges: an edge only orders. Each run
//! is on a fresh scheduler, so no node is answered from a memo.
//!
//! Owns the DAG's shape, the three runs and the check that every answer
//! equals the serial loop's. Never asserts on timing.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use verter_scheduler::{
    Admission, Cache, CacheTask, Canonical, Dag, EdgeGate, MAX_READY_QUEUE_DEPTH, NoDedupeHook,
    NodeId, NodeOutput, RequestError, SchedulerCacheId, StageKind, StageOutput, stage,
};

use crate::alloc_count;
use crate::generator::{GenConfig, Project, Sources};
use crate::kernel::Kernels;
use crate::report::{Record, median, proc_status_kib};
use crate::rng::Rng;
use crate::verter_runner::{BenchExecutor, VerterSystem};

/// Nodes per layer.
pub const WIDTH: usize = 100;
/// Edges into every node after the first layer.
pub const FAN_IN: usize = 2;
/// The cache every node of the workload names.
pub const CACHE: SchedulerCacheId = SchedulerCacheId(1);

/// The shape of one DAG measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagShape {
    /// verter's CPU threads, and rayon's.
    pub threads: usize,
    /// Nodes in the DAG, file nodes included.
    pub nodes: usize,
    /// File Analysis nodes (the first layer); 0 for cache nodes only.
    pub files: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Timed repetitions (medians are reported).
    pub iterations: usize,
    /// verter's `max_ready_queue_depth`.
    pub ready_depth: usize,
}

impl DagShape {
    /// `nodes` cache nodes on `threads` threads, kernels spinning `spin_us`
    /// µs, `iterations` runs, the default ready-queue bound.
    pub fn new(threads: usize, nodes: usize, spin_us: u64, iterations: usize) -> Self {
        Self {
            threads,
            nodes,
            files: 0,
            spin_us,
            iterations,
            ready_depth: MAX_READY_QUEUE_DEPTH,
        }
    }
}

/// What one node of the plan runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// The Analysis of a generated file.
    File(Arc<str>),
    /// The cache node of a key.
    Cache(u64),
}

/// The DAG as plain data, which every system runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The nodes, in a topological order (layer by layer).
    pub tasks: Vec<Task>,
    /// `(upstream, downstream)` indices into `tasks`.
    pub edges: Vec<(u32, u32)>,
}

impl Plan {
    /// The layered DAG of `nodes` nodes whose first layer is the Analysis
    /// of every file of `sources` (cache nodes when `sources` is empty).
    /// Its edges depend on `nodes` and `sources` alone; its cache keys on
    /// `round` too: no two rounds of one size share a key, as a host's
    /// content-hashed keys change between its DAGs.
    ///
    /// # Panics
    /// If `sources` holds more files than `nodes`.
    pub fn layered(nodes: usize, sources: &Sources, round: u64) -> Self {
        assert!(
            sources.len() <= nodes,
            "{} file nodes do not fit in {nodes} nodes",
            sources.len()
        );
        let mut rng = Rng::new(0xda9_0001);
        let mut tasks: Vec<Task> = sources.keys().cloned().map(Task::File).collect();
        // A bijection of (round, index): every cache node has its own key.
        let offset = round.wrapping_mul(nodes as u64);
        let key = |index: usize| {
            (index as u64 + 1)
                .wrapping_add(offset)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        };
        let mut previous: std::ops::Range<usize> = 0..tasks.len();
        if previous.is_empty() {
            let first = nodes.min(WIDTH);
            tasks.extend((0..first).map(|index| Task::Cache(key(index))));
            previous = 0..first;
        }
        let mut edges = Vec::with_capacity(nodes.saturating_sub(previous.len()) * FAN_IN);
        while tasks.len() < nodes {
            let start = tasks.len();
            let width = WIDTH.min(nodes - start);
            for column in 0..width {
                let index = start + column;
                tasks.push(Task::Cache(key(index)));
                let span = previous.len();
                let own = previous.start + column % span;
                edges.push((own as u32, index as u32));
                if span > 1 {
                    let mut other = previous.start + rng.below(span);
                    if other == own {
                        other = previous.start + (column + 1) % span;
                    }
                    edges.push((other as u32, index as u32));
                }
            }
            previous = start..start + width;
        }
        Self { tasks, edges }
    }

    /// The node's kernel: its value.
    fn run(&self, index: usize, kernels: &Kernels, sources: &Sources) -> u64 {
        match &self.tasks[index] {
            Task::File(path) => kernels.analysis(&sources[path]).digest,
            Task::Cache(key) => kernels.cache_node(*key),
        }
    }

    /// The DAG verter is given: the same nodes and edges, each edge
    /// `ConditionalOnSuccess`.
    fn dag(&self) -> Dag {
        let mut dag = Dag::new();
        // `Dag::edge` takes typed ids (the kind types the node's answer),
        // so a host that keeps its graph by index keeps every id, of
        // either kind, to name its edges.
        let ids: Vec<Id> = self
            .tasks
            .iter()
            .map(|task| match task {
                Task::File(path) => {
                    Id::File(dag.add(stage::Analysis.of(Canonical::new(Arc::clone(path)))))
                }
                Task::Cache(key) => Id::Cache(dag.add(CacheTask::new(CACHE, *key))),
            })
            .collect();
        let gate = EdgeGate::ConditionalOnSuccess;
        for &(from, to) in &self.edges {
            match (ids[from as usize], ids[to as usize]) {
                (Id::File(from), Id::File(to)) => dag.edge(from, to, gate),
                (Id::File(from), Id::Cache(to)) => dag.edge(from, to, gate),
                (Id::Cache(from), Id::File(to)) => dag.edge(from, to, gate),
                (Id::Cache(from), Id::Cache(to)) => dag.edge(from, to, gate),
            };
        }
        dag
    }
}

/// A node of the DAG verter is given, by kind.
#[derive(Clone, Copy)]
enum Id {
    File(NodeId<stage::Analysis>),
    Cache(NodeId<Cache>),
}

/// The plain topological loop on this thread: Kahn's algorithm over the
/// plan's edges (its adjacency built inside the timed window, as verter
/// builds its own at admission), each node's kernel run once its last
/// upstream node has run. Returns the time and every node's value.
pub fn serial(plan: &Plan, kernels: &Kernels, sources: &Sources) -> (Duration, Vec<u64>) {
    let start = Instant::now();
    let n = plan.tasks.len();
    let mut offsets = vec![0usize; n + 1];
    let mut pending = vec![0u32; n];
    for &(from, to) in &plan.edges {
        offsets[from as usize + 1] += 1;
        pending[to as usize] += 1;
    }
    for index in 0..n {
        offsets[index + 1] += offsets[index];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0u32; plan.edges.len()];
    for &(from, to) in &plan.edges {
        let at = &mut fill[from as usize];
        targets[*at] = to;
        *at += 1;
    }
    let mut ready: VecDeque<u32> = (0..n as u32)
        .filter(|&index| pending[index as usize] == 0)
        .collect();
    let mut values = vec![0u64; n];
    let mut ran = 0;
    while let Some(node) = ready.pop_front() {
        let node = node as usize;
        values[node] = plan.run(node, kernels, sources);
        ran += 1;
        for &next in &targets[offsets[node]..offsets[node + 1]] {
            pending[next as usize] -= 1;
            if pending[next as usize] == 0 {
                ready.push_back(next);
            }
        }
    }
    assert_eq!(
        ran, n,
        "the serial loop ran every node (the plan is acyclic)"
    );
    (start.elapsed(), values)
}

/// rayon on `pool`: each node's level (the longest path to it) from the
/// edges, then one `par_iter` per level. Returns the time and every
/// node's value.
pub fn rayon_levels(
    plan: &Plan,
    kernels: &Kernels,
    sources: &Sources,
    pool: &rayon::ThreadPool,
) -> (Duration, Vec<u64>) {
    let start = Instant::now();
    let n = plan.tasks.len();
    // The plan's edges run forward and are listed by downstream node, so a
    // node's level is final before any edge leaves it.
    let mut level = vec![0u32; n];
    for &(from, to) in &plan.edges {
        debug_assert!(from < to, "the plan is in topological order");
        level[to as usize] = level[to as usize].max(level[from as usize] + 1);
    }
    let depth = level
        .iter()
        .max()
        .map_or(0, |&deepest| deepest as usize + 1);
    let mut levels: Vec<Vec<u32>> = vec![Vec::new(); depth];
    for (index, &at) in level.iter().enumerate() {
        levels[at as usize].push(index as u32);
    }
    let mut values = vec![0u64; n];
    pool.install(|| {
        let mut out = Vec::new();
        for nodes in &levels {
            nodes
                .par_iter()
                .map(|&node| plan.run(node as usize, kernels, sources))
                .collect_into_vec(&mut out);
            for (&node, &value) in nodes.iter().zip(&out) {
                values[node as usize] = value;
            }
        }
    });
    (start.elapsed(), values)
}

/// Every node's kernel once, in a plain loop: Σ kernel time.
fn kernel_time(plan: &Plan, kernels: &Kernels, sources: &Sources) -> Duration {
    let start = Instant::now();
    let mut sink = 0u64;
    for index in 0..plan.tasks.len() {
        sink ^= plan.run(index, kernels, sources);
    }
    std::hint::black_box(sink);
    start.elapsed()
}

/// One verter run's times and counters.
struct VerterRun {
    build: Duration,
    admission: Duration,
    wall: Duration,
    cache_runs: u64,
    completion_holds: u64,
    caller_stages: u64,
    /// Allocations from `submit_dag` until `wait` returned, every
    /// thread's.
    allocs: u64,
}

/// verter: a fresh scheduler (its threads up before the clock starts)
/// builds the DAG, submits it with `submit_dag` and waits with `wait`;
/// every answer is compared with `expected`.
fn verter_once(shape: DagShape, plan: &Plan, sources: &Sources, expected: &[u64]) -> VerterRun {
    let system =
        VerterSystem::with_ready_queue_depth(shape.threads, shape.spin_us, shape.ready_depth);
    if !sources.is_empty() {
        system.load_world(sources);
    }
    let scheduler = system.scheduler();
    let start = Instant::now();
    let dag = plan.dag();
    let build = start.elapsed();
    let allocs_before = alloc_count::global();
    let submitted = Instant::now();
    let handle = match scheduler.submit_dag(dag, &NoDedupeHook) {
        Ok(Admission::Admitted(handle)) => handle,
        Ok(other) => panic!("a blocking submission without a dedupe hook answered {other:?}"),
        Err(error) => panic!("the workload's DAG is well formed: {error}"),
    };
    let admission = submitted.elapsed();
    let results = scheduler.wait(&handle);
    let wall = submitted.elapsed();
    let allocs = alloc_count::global().since(allocs_before).allocs;
    assert_eq!(results.outcomes().len(), expected.len());
    for (index, (outcome, expected)) in results.outcomes().iter().zip(expected).enumerate() {
        let value = value_of(outcome);
        assert_eq!(
            value,
            Some(*expected),
            "verter DAG node {index} ({:?}) answered {outcome:?}",
            plan.tasks[index]
        );
    }
    let counters = system.counters();
    let scheduler = Arc::downgrade(system.scheduler());
    drop((handle, results, system));
    // The scheduler's own threads let go of it a moment later (there is no
    // handshake for it): its state is freed then, before the next round or
    // the final reading of the heap (or after 5 s).
    let deadline = Instant::now() + Duration::from_secs(5);
    while scheduler.strong_count() > 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    VerterRun {
        build,
        admission,
        wall,
        cache_runs: counters.cache_runs,
        completion_holds: counters.completion_holds,
        caller_stages: counters.caller_stages,
        allocs,
    }
}

/// A node's value out of its answer: the cache output, or the Analysis.
fn value_of(outcome: &Result<NodeOutput<BenchExecutor>, RequestError>) -> Option<u64> {
    match outcome {
        Ok(NodeOutput::Cache(value)) => Some(**value),
        Ok(NodeOutput::Stage(StageOutput::Analysis(analysis))) => Some(*analysis.data()),
        _ => None,
    }
}

/// Nanoseconds per node, one decimal.
fn per_node(duration: Duration, nodes: usize) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1e9 / nodes.max(1) as f64)
}

/// W1's overhead per node: (wall × threads − Σ kernel time) / nodes, in ns.
fn overhead(wall: Duration, threads: usize, kernels: Duration, nodes: usize) -> String {
    let busy = wall.as_secs_f64() * threads as f64 - kernels.as_secs_f64();
    format!("{:.1}", busy * 1e9 / nodes.max(1) as f64)
}

/// Runs the DAG workload: records for verter on `shape.threads` threads,
/// the serial loop and rayon on `shape.threads` threads, each checked
/// against the serial loop's answers.
///
/// # Panics
/// On any wrong or missing answer, or a shape whose files do not fit.
pub fn dag(shape: DagShape) -> Vec<Record> {
    let sources = if shape.files == 0 {
        Sources::new()
    } else {
        Project::generate(GenConfig::new(shape.files)).sources()
    };
    let kernels = Kernels::new(shape.spin_us);
    let first = Plan::layered(shape.nodes, &sources, 0);
    let nodes = first.tasks.len();
    let edges = first.edges.len();
    let kernel = kernel_time(&first, &kernels, &sources);
    let threads = shape.threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("building the rayon pool");
    let iterations = shape.iterations.max(1);
    let (mut serial_walls, mut rayon_walls) = (Vec::new(), Vec::new());
    let mut runs = Vec::with_capacity(iterations);
    // The heap the rounds leave, read over all of them: frees deferred from
    // one round to a later one (epoch-based queues, exiting threads) even
    // out.
    let heap_before = alloc_count::global();
    // Each round names new cache keys (a fresh scheduler would not care;
    // the process's tables would). Interleaved, so a change in the
    // machine's load touches all three systems.
    for round in 0..iterations as u64 {
        let plan = Plan::layered(shape.nodes, &sources, round);
        let (wall, expected) = serial(&plan, &kernels, &sources);
        serial_walls.push(wall);
        let (wall, values) = rayon_levels(&plan, &kernels, &sources, &pool);
        assert_eq!(values, expected, "rayon's answers equal the serial loop's");
        rayon_walls.push(wall);
        runs.push(verter_once(shape, &plan, &sources, &expected));
    }
    let retained = alloc_count::global().since(heap_before).live_bytes();
    let peak_rss_kib = proc_status_kib("VmHWM").unwrap_or(0);
    let serial_wall = median(&serial_walls);
    let rayon_wall = median(&rayon_walls);
    let pick = |f: fn(&VerterRun) -> Duration| median(&runs.iter().map(f).collect::<Vec<_>>());
    let (build, admission, wall) = (pick(|r| r.build), pick(|r| r.admission), pick(|r| r.wall));
    let base = |system: &str, threads: usize| {
        Record::new()
            .field("workload", "dag")
            .field("system", system)
            .field("threads", threads)
            .field("n", nodes)
            .field("files", shape.files)
            .field("c", shape.spin_us)
            .field("edges", edges)
            .field("iterations", iterations)
    };
    let ratio = |a: Duration, b: Duration| format!("{:.2}", a.as_secs_f64() / b.as_secs_f64());
    let last = runs.last().expect("at least one run");
    let verter = base("verter", threads)
        .field("ready_depth", shape.ready_depth)
        .micros("build_us", build)
        .field("build_ns_per_node", per_node(build, nodes))
        .micros("admission_us", admission)
        .field("admission_ns_per_node", per_node(admission, nodes))
        .micros("wall_us", wall)
        .micros(
            "wall_min_us",
            runs.iter().map(|r| r.wall).min().unwrap_or_default(),
        )
        .field("wall_ns_per_node", per_node(wall, nodes))
        .micros("kernel_us", kernel)
        .field("overhead_ns", overhead(wall, threads, kernel, nodes))
        .field("vs_serial", ratio(wall, serial_wall))
        .field("vs_rayon", ratio(wall, rayon_wall))
        .field("cache_runs", last.cache_runs)
        .field("completion_holds", last.completion_holds)
        .field("caller_stages", last.caller_stages)
        .field("peak_rss_kib", peak_rss_kib);
    // Allocation figures only where the counting allocator is installed
    // (the binary), as W1's.
    let verter = if alloc_count::is_installed() {
        let node_runs = (nodes * runs.len()) as f64;
        let allocs: u64 = runs.iter().map(|r| r.allocs).sum();
        verter
            .field(
                "allocs_per_node",
                format!("{:.2}", allocs as f64 / node_runs),
            )
            .field(
                "retained_bytes_per_node",
                format!("{:.1}", retained as f64 / node_runs),
            )
    } else {
        verter
    };
    let serial_record = base("serial", 1)
        .micros("wall_us", serial_wall)
        .field("wall_ns_per_node", per_node(serial_wall, nodes))
        .micros("kernel_us", kernel)
        .field("overhead_ns", overhead(serial_wall, 1, kernel, nodes));
    let rayon_record = base("rayon", threads)
        .micros("wall_us", rayon_wall)
        .field("wall_ns_per_node", per_node(rayon_wall, nodes))
        .micros("kernel_us", kernel)
        .field("overhead_ns", overhead(rayon_wall, threads, kernel, nodes));
    vec![verter, serial_record, rayon_record]
}

#[cfg(test)]
mod tests;
