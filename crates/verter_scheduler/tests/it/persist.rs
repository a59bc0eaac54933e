//! Persistent outputs (docs/design.md, "Persistent outputs"): a scheduler
//! opened on the store an earlier one wrote answers from it what was
//! computed from the same inputs, runs what changed, and is never broken
//! by the store: a damaged entry, a failing store, another executor
//! version, an executor that stores nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::{Canonical, ProfileHash};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, Completion, ExecutorError, OutputStoreConfig, RemoteRoutes,
    RequestError, Scheduler, SchedulerConfig, SourceDeps, SourceInput, StageExecutor,
};
use verter_store::{
    Entry, Eviction, MemoryStore, OutputStore, PutReport, RedbStore, StoreError, StoreKey,
    StoreOptions, StoreStats,
};

use crate::support::*;

const BUILD: Artifact = Artifact(ProfileHash(7));

/// `use X` names a blocker, `dep X` an Artifact dependency, other words
/// count. Every stage encodes its output when `stores` is set; every run is
/// recorded as (path, stage).
#[derive(Clone)]
struct Kept {
    stores: bool,
    runs: Arc<Mutex<Vec<(String, &'static str)>>>,
    /// When set, a remote start hands its completion and the artifact it
    /// computed here instead of completing (the test completes it).
    held: Option<crossbeam_channel::Sender<(Completion<String>, String)>>,
    /// When set, `b.cfg`'s Artifact says it arrived, waits to be let go,
    /// and then, its token cancelled, stops early with a partial answer.
    stops_early: Option<(
        crossbeam_channel::Sender<()>,
        crossbeam_channel::Receiver<()>,
    )>,
}

impl Kept {
    fn new(stores: bool) -> Self {
        Self {
            stores,
            runs: Arc::default(),
            held: None,
            stops_early: None,
        }
    }

    fn runs(&self) -> BTreeMap<&'static str, usize> {
        let mut runs = BTreeMap::new();
        for (_, stage) in self.runs.lock().iter() {
            *runs.entry(*stage).or_default() += 1;
        }
        runs
    }

    fn ran(&self) -> Vec<(String, &'static str)> {
        let mut ran = self.runs.lock().clone();
        ran.sort();
        ran
    }

    fn record(&self, path: &Canonical, stage: &'static str) {
        self.runs.lock().push((path.to_string(), stage));
    }

    fn encode(&self, text: &str, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(text.as_bytes());
        self.stores
    }
}

impl StageExecutor for Kept {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        self.record(input.canonical, "Source");
        let lines: Vec<String> = input.text.lines().map(str::to_owned).collect();
        for line in &lines {
            if let Some(path) = line.strip_prefix("use ") {
                deps.blocker(path);
            } else if let Some(path) = line.strip_prefix("dep ") {
                deps.artifact(path);
            }
        }
        Ok(lines)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        self.record(input.source.canonical(), "Analysis");
        Ok(input
            .source
            .parsed
            .iter()
            .filter(|line| !line.starts_with("use ") && !line.starts_with("dep "))
            .map(|line| line.split_whitespace().count())
            .sum())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        self.record(&input.analysis.canonical, "Artifact");
        if let Some((arrived, go)) = &self.stops_early
            && input.analysis.canonical.as_str() == "b.cfg"
        {
            let _ = arrived.send(());
            go.recv().expect("the test lets the Artifact go on");
            if input.cancel.is_cancelled() {
                return Ok("b.cfg:partial".into());
            }
        }
        let mut out = format!("{}:{}", input.analysis.canonical, input.analysis.data());
        for blocker in input.blockers {
            out.push_str(&format!("|{}={}", blocker.canonical, blocker.data()));
        }
        for dep in input.dependencies {
            out.push_str(&format!("[{}]", dep.data()));
        }
        Ok(out)
    }

    /// Routed to the remote class: computed at once and answered through
    /// the completion, each start recorded as a run of `"Start"`.
    fn start_artifact(&self, input: &ArtifactInput<'_, usize, String>, done: Completion<String>) {
        self.record(&input.analysis.canonical, "Start");
        let result = self.execute_artifact(input);
        match (&self.held, result) {
            (Some(held), Ok(artifact)) => {
                let _ = held.send((done, artifact));
            }
            (_, result) => done.complete(result),
        }
    }

    fn encode_source(&self, output: &Vec<String>, into: &mut Vec<u8>) -> bool {
        self.encode(&output.join("\n"), into)
    }

    fn decode_source(&self, _: &SourceInput<'_>, bytes: &[u8]) -> Option<Vec<String>> {
        let text = std::str::from_utf8(bytes).ok()?;
        Some(text.lines().map(str::to_owned).collect())
    }

    fn encode_analysis(&self, output: &usize, into: &mut Vec<u8>) -> bool {
        self.encode(&output.to_string(), into)
    }

    fn decode_analysis(&self, _: &AnalysisInput<'_, Vec<String>>, bytes: &[u8]) -> Option<usize> {
        std::str::from_utf8(bytes).ok()?.parse().ok()
    }

    fn encode_artifact(&self, output: &String, into: &mut Vec<u8>) -> bool {
        self.encode(output, into)
    }

    fn decode_artifact(
        &self,
        _: &ArtifactInput<'_, usize, String>,
        bytes: &[u8],
    ) -> Option<String> {
        // Every artifact names its file first: anything else is damage.
        let text = String::from_utf8(bytes.to_vec()).ok()?;
        text.contains(':').then_some(text)
    }
}

/// The tree every test builds: `a` reads `b`'s Artifact and blocks on `c`.
fn tree() -> MemFiles {
    MemFiles::with(&[
        ("a.cfg", "dep b.cfg\nuse c.cfg\none two"),
        ("b.cfg", "three four five"),
        ("c.cfg", "six"),
    ])
}

const PATHS: [&str; 3] = ["a.cfg", "b.cfg", "c.cfg"];

fn with_store(store: Arc<dyn OutputStore>, version: &str) -> SchedulerConfig {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.store = Some(OutputStoreConfig::new(store, version));
    config
}

fn open(
    files: &MemFiles,
    executor: &Kept,
    config: SchedulerConfig,
    threads: bool,
) -> Arc<Scheduler<Kept>> {
    match threads {
        true => Scheduler::threaded(config, files.clone(), executor.clone())
            .expect("a valid configuration"),
        false => Scheduler::new_inline(config, files.clone(), executor.clone())
            .expect("a valid configuration"),
    }
}

/// Every file's Artifact, as an answer a test can compare.
fn build(scheduler: &Scheduler<Kept>) -> Vec<Result<String, String>> {
    PATHS
        .iter()
        .map(|path| {
            let handle = scheduler.ask(BUILD.of(*path));
            scheduler
                .wait(&handle)
                .map(|artifact| artifact.data().clone())
                .map_err(|error: RequestError| error.to_string())
        })
        .collect()
}

/// One inline build of `files` by `executor`, into `store` (version "1"),
/// its scheduler then dropped: what the tests restart from.
fn fill(files: &MemFiles, executor: &Kept, store: &Arc<dyn OutputStore>) {
    drop(build(&open(
        files,
        executor,
        with_store(store.clone(), "1"),
        false,
    )));
}

/// What a scheduler without a store answers over `files`.
fn fresh(files: &MemFiles) -> Vec<Result<String, String>> {
    let scheduler = open(files, &Kept::new(false), test_config(Arc::default()), false);
    build(&scheduler)
}

#[test]
fn a_restarted_scheduler_answers_every_stage_from_the_store() {
    for threads in [false, true] {
        let files = tree();
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
        let first = Kept::new(true);
        let scheduler = open(&files, &first, with_store(store.clone(), "1"), threads);
        let answers = build(&scheduler);
        assert_eq!(answers, fresh(&files));
        assert_eq!(answers[0], Ok("a.cfg:2|c.cfg=1[b.cfg:3]".into()));
        scheduler.flush_store();
        let counters = scheduler.observe().counters();
        assert_eq!((counters.from_store, counters.store_writes), (0, 9));
        drop(scheduler);

        let second = Kept::new(true);
        let restarted = open(&files, &second, with_store(store, "1"), threads);
        assert_eq!(build(&restarted), answers);
        assert!(second.ran().is_empty(), "nothing ran: {:?}", second.ran());
        let counters = restarted.observe().counters();
        assert_eq!(counters.from_store, 9, "3 files × 3 stages");
        assert_eq!(
            (
                counters.source_runs,
                counters.analysis_runs,
                counters.artifact_runs
            ),
            (0, 0, 0)
        );
        assert_eq!(counters.store_errors, 0);
        assert_quiescent(&restarted, &[]);
    }
}

#[test]
fn explain_names_the_store_as_where_an_output_came_from() {
    let files = tree();
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
    fill(&files, &Kept::new(true), &store);
    let mut config = with_store(store, "1");
    config.causal_log = verter_scheduler::DEFAULT_CAUSAL_LOG;
    let restarted = open(&files, &Kept::new(true), config, false);
    build(&restarted);
    let explanation = restarted
        .observe()
        .explain("b.cfg", verter_dag::TargetStage::Artifact(BUILD.0))
        .expect("the log holds b's Artifact")
        .to_string();
    assert!(
        explanation.contains("was answered from the output store"),
        "{explanation}"
    );
}

#[test]
fn an_edit_before_the_restart_runs_that_file_and_what_reads_it() {
    let files = tree();
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
    let first = Kept::new(true);
    fill(&files, &first, &store);
    // `b` changes while no scheduler runs.
    files.write("b.cfg", "three four five six");
    let second = Kept::new(true);
    let restarted = open(&files, &second, with_store(store.clone(), "1"), false);
    let answers = build(&restarted);
    assert_eq!(answers, fresh(&files));
    assert_eq!(
        second.ran(),
        [
            ("a.cfg".into(), "Artifact"),
            ("b.cfg".into(), "Analysis"),
            ("b.cfg".into(), "Artifact"),
            ("b.cfg".into(), "Source"),
        ],
        "b's stages, and a's Artifact, which reads b's"
    );
    drop(restarted);
    // And the edit back is in the store too: both versions answer from it.
    files.write("b.cfg", "three four five");
    let third = Kept::new(true);
    let again = open(&files, &third, with_store(store, "1"), false);
    assert_eq!(build(&again), fresh(&files));
    assert!(third.ran().is_empty());
}

#[test]
fn outputs_of_another_executor_version_are_never_read() {
    let files = tree();
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
    fill(&files, &Kept::new(true), &store);
    let second = Kept::new(true);
    let other = open(&files, &second, with_store(store, "2"), false);
    assert_eq!(build(&other), fresh(&files));
    assert_eq!(other.observe().counters().from_store, 0);
    assert_eq!(second.runs().values().sum::<usize>(), 9);
}

#[test]
fn a_damaged_entry_is_recomputed_and_reported_once() {
    let files = tree();
    let memory = Arc::new(MemoryStore::new(1 << 20));
    let store: Arc<dyn OutputStore> = memory.clone();
    fill(&files, &Kept::new(true), &store);
    // Every value loses its first bytes. Some would still decode (an
    // artifact `2|c.cfg=1[b.cfg:3]` has lost only its file's name): the
    // digest each entry was stored with refuses them all.
    memory.damage(|_, value| {
        value.drain(..value.len().min(6));
    });
    let second = Kept::new(true);
    let restarted = open(&files, &second, with_store(store, "1"), false);
    assert_eq!(build(&restarted), fresh(&files));
    let counters = restarted.observe().counters();
    assert_eq!(counters.from_store, 0);
    assert_eq!(counters.store_errors, 9, "each damaged entry, once");
    assert_eq!(second.runs().values().sum::<usize>(), 9);
    assert_quiescent(&restarted, &[]);
}

/// A store whose every operation fails.
struct Broken;

impl OutputStore for Broken {
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError> {
        Err(StoreError::DamagedEntry {
            key: *key,
            detail: "the disk is gone".into(),
        })
    }
    fn put_batch(&self, _: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError> {
        Err(StoreError::Io {
            operation: "write",
            path: "gone".into(),
            source: std::io::Error::other("the disk is gone"),
        })
    }
    fn remove(&self, _: &[StoreKey]) -> Result<u64, StoreError> {
        Ok(0)
    }
    fn retain_paths(&self, _: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        Ok(0)
    }
    fn gc(&self) -> Result<Eviction, StoreError> {
        Ok(Eviction::default())
    }
    fn stats(&self) -> Result<StoreStats, StoreError> {
        Ok(StoreStats::default())
    }
    fn clear(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn sync(&self) -> Result<(), StoreError> {
        Err(StoreError::Io {
            operation: "sync",
            path: "gone".into(),
            source: std::io::Error::other("the disk is gone"),
        })
    }
}

#[test]
fn a_failing_store_never_fails_a_request() {
    let files = tree();
    let executor = Kept::new(true);
    let scheduler = open(&files, &executor, with_store(Arc::new(Broken), "1"), true);
    assert_eq!(build(&scheduler), fresh(&files));
    scheduler.flush_store();
    let counters = scheduler.observe().counters();
    assert_eq!((counters.from_store, counters.store_writes), (0, 0));
    // Three reads of the parses, three of the analyses; the artifacts have
    // no stored inputs to key them by, and the one batch of writes failed
    // (one batch, or more if the writer woke between the stages).
    assert!(counters.store_errors >= 7, "{counters:?}");
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn an_executor_that_stores_nothing_runs_as_without_a_store() {
    let files = tree();
    let store = Arc::new(MemoryStore::new(1 << 20));
    for _ in 0..2 {
        let executor = Kept::new(false);
        let scheduler = open(&files, &executor, with_store(store.clone(), "1"), false);
        assert_eq!(build(&scheduler), fresh(&files));
        assert_eq!(executor.runs().values().sum::<usize>(), 9);
        assert_eq!(scheduler.observe().counters().from_store, 0);
    }
    assert_eq!(store.stats().unwrap().entries, 0);
}

#[test]
fn a_store_file_outlives_the_process_that_wrote_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = tree();
    let options = || StoreOptions::new("kept", 1 << 20);
    let answers = {
        let opened = RedbStore::open(dir.path(), options()).expect("opens");
        let store: Arc<dyn OutputStore> = Arc::new(opened.store);
        let scheduler = open(&files, &Kept::new(true), with_store(store, "1"), true);
        let answers = build(&scheduler);
        // Its writes are flushed and the store let go: the file and its
        // lock close with the last handle, this one.
        scheduler.shutdown();
        answers
    };
    let opened = RedbStore::open(dir.path(), options()).expect("opens again");
    assert!(opened.warning.is_none());
    let executor = Kept::new(true);
    let restarted = open(
        &files,
        &executor,
        with_store(Arc::new(opened.store), "1"),
        true,
    );
    assert_eq!(build(&restarted), answers);
    assert!(executor.ran().is_empty());
}

#[test]
fn a_stored_artifact_spares_the_remote_round_trip() {
    let remote = |store: &Arc<dyn OutputStore>| {
        with_store(store.clone(), "1").with_remote(
            RemoteRoutes {
                artifacts: true,
                cache_nodes: false,
            },
            4,
        )
    };
    let files = tree();
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
    let first = Kept::new(true);
    let scheduler = open(&files, &first, remote(&store), true);
    let answers = build(&scheduler);
    assert_eq!(answers, fresh(&files));
    assert_eq!(
        first.runs().get("Start"),
        Some(&3),
        "each Artifact started remotely"
    );
    scheduler.shutdown();
    drop(scheduler);

    let second = Kept::new(true);
    let restarted = open(&files, &second, remote(&store), true);
    assert_eq!(build(&restarted), answers);
    assert!(
        second.ran().is_empty(),
        "no start, no run: {:?}",
        second.ran()
    );
    let counters = restarted.observe().counters();
    assert_eq!(
        counters.from_store, 9,
        "the Artifacts too, without a round trip"
    );
    assert_quiescent(&restarted, &[]);
}

/// A remote answer to work abandoned by then (superseded by an edit) may be
/// anything; it is refused, and it must not be stored either: found by the
/// simulator's remote desk, which answers abandoned work with garbage (seed
/// 38 of `remote_routed_seeds_reproduce_their_runs_exactly`).
#[test]
fn a_remote_answer_to_abandoned_work_is_never_stored() {
    let files = MemFiles::with(&[("a.cfg", "one two")]);
    let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
    let config = || {
        with_store(store.clone(), "1").with_remote(
            RemoteRoutes {
                artifacts: true,
                cache_nodes: false,
            },
            4,
        )
    };
    let (held_tx, held) = crossbeam_channel::unbounded();
    let mut first = Kept::new(true);
    first.held = Some(held_tx);
    let scheduler = open(&files, &first, config(), true);
    let old = scheduler.ask(BUILD.of("a.cfg"));
    let (abandoned, _) = held.recv().expect("the first Artifact started");
    // An edit supersedes it; its answer comes back wrong, after.
    files.write("a.cfg", "one two three");
    scheduler.invalidate("a.cfg").expect("invalidated");
    abandoned.complete(Ok("a.cfg:garbage".into()));
    let new = scheduler.ask(BUILD.of("a.cfg"));
    let (current, artifact) = held.recv().expect("the Artifact of the edit started");
    current.complete(Ok(artifact));
    let answer = scheduler.wait(&new).expect("built");
    assert_eq!(answer.data(), "a.cfg:3");
    let _ = scheduler.wait(&old);
    scheduler.shutdown();
    drop(scheduler);

    // The first text again, on a new scheduler: its Artifact is computed,
    // never read back as the garbage.
    files.write("a.cfg", "one two");
    let second = Kept::new(true);
    let restarted = open(&files, &second, config(), true);
    assert_eq!(build_one(&restarted, "a.cfg"), Ok("a.cfg:2".into()));
    assert_eq!(second.runs().get("Start"), Some(&1), "{:?}", second.ran());
}

fn build_one(scheduler: &Scheduler<Kept>, path: &str) -> Result<String, String> {
    let handle = scheduler.ask(BUILD.of(path));
    scheduler
        .wait(&handle)
        .map(|artifact| artifact.data().clone())
        .map_err(|error| error.to_string())
}

/// A run that stops early when its token is cancelled may answer what it
/// had: such an output is refused, and never stored.
#[test]
fn an_output_of_work_cancelled_while_it_ran_is_never_stored() {
    watchdog("cancelled output", || {
        let files = tree();
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new(1 << 20));
        let hooks = Arc::new(GateHooks::default());
        let events = hooks.subscribe();
        let mut config = with_store(store.clone(), "1");
        config.hooks = hooks;
        let (arrived_tx, arrived) = crossbeam_channel::bounded(1);
        let (go, go_rx) = crossbeam_channel::bounded(1);
        let mut first = Kept::new(true);
        first.stops_early = Some((arrived_tx, go_rx));
        let scheduler = open(&files, &first, config, true);
        let handle = scheduler.ask(BUILD.of("b.cfg"));
        arrived.recv().expect("b's Artifact runs");
        // Its only asker withdraws: the running Artifact's token is
        // cancelled; then it stops early with a partial answer.
        drop(handle);
        loop {
            let event = events
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the cancellation is reported");
            if matches!(event, verter_scheduler::SchedulerEvent::Cancelled(..)) {
                break;
            }
        }
        go.send(()).expect("the Artifact waits");
        scheduler.shutdown();
        drop(scheduler);

        let second = Kept::new(true);
        let restarted = open(&files, &second, with_store(store, "1"), true);
        assert_eq!(build_one(&restarted, "b.cfg"), Ok("b.cfg:3".into()));
        assert_eq!(
            second.runs().get("Artifact"),
            Some(&1),
            "computed, not read back"
        );
    });
}

/// A memory store that counts its syncs and the batches put before each.
struct Syncs {
    inner: MemoryStore,
    /// Batches put so far; at each sync, how many had been put.
    puts: std::sync::atomic::AtomicUsize,
    synced_at: Mutex<Vec<usize>>,
}

impl OutputStore for Syncs {
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError> {
        self.inner.get(key)
    }
    fn put_batch(&self, entries: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError> {
        self.puts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.put_batch(entries)
    }
    fn remove(&self, keys: &[StoreKey]) -> Result<u64, StoreError> {
        self.inner.remove(keys)
    }
    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        self.inner.retain_paths(keep)
    }
    fn gc(&self) -> Result<Eviction, StoreError> {
        self.inner.gc()
    }
    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.inner.stats()
    }
    fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear()
    }
    fn sync(&self) -> Result<(), StoreError> {
        let puts = self.puts.load(std::sync::atomic::Ordering::SeqCst);
        self.synced_at.lock().push(puts);
        Ok(())
    }
}

/// `flush_store` returns only once every write queued before it is synced,
/// inline and threaded, and the shutdown syncs what came after.
#[test]
fn a_flush_syncs_every_write_before_it_and_the_shutdown_the_rest() {
    for threaded in [false, true] {
        let store = Arc::new(Syncs {
            inner: MemoryStore::new(1 << 20),
            puts: Default::default(),
            synced_at: Mutex::default(),
        });
        let files = tree();
        let scheduler = open(
            &files,
            &Kept::new(true),
            with_store(store.clone(), "1"),
            threaded,
        );
        assert_eq!(build(&scheduler), fresh(&files));
        scheduler.flush_store();
        let puts = store.puts.load(std::sync::atomic::Ordering::SeqCst);
        assert!(puts > 0, "the build wrote");
        assert_eq!(
            store.synced_at.lock().last(),
            Some(&puts),
            "threaded {threaded}: the flush synced every batch put before it"
        );
        files.write("b.cfg", "six seven");
        scheduler.invalidate("b.cfg").expect("tracked");
        build(&scheduler);
        scheduler.shutdown();
        let puts = store.puts.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            store.synced_at.lock().last(),
            Some(&puts),
            "threaded {threaded}: the shutdown synced the rest"
        );
    }
}
