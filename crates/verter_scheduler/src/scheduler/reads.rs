//! `Scheduler`: Reads: source text and roots, published nodes, counters, the ledger and quiescence.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;
use crate::output::StageOutput;

impl<E: StageExecutor> Scheduler<E> {
    /// The newest source text of `path` the source root holds, if present
    /// (after admitting what the caller submitted before).
    pub fn try_get_source(&self, path: &str) -> Option<SourceText> {
        let canonical = self.canonicalize(path).ok()?;
        self.admit_everything_sent();
        self.source_root.state_now(canonical).payload().cloned()
    }

    /// A root that reads every file's source as of now, for as long as it
    /// lives (a retention lease); it sees everything the caller submitted
    /// before.
    pub fn capture_root(&self) -> SchedulerSourceRoot {
        self.admit_everything_sent();
        self.source_root.capture_root()
    }

    /// The source text of `path` as of `root`, if present then.
    pub fn try_get_source_at(&self, root: &SchedulerSourceRoot, path: &str) -> Option<SourceText> {
        let canonical = self.canonicalize(path).ok()?;
        self.source_root
            .state_at(root, canonical)
            .payload()
            .cloned()
    }

    /// The full state of `path` as of `root`: unknown, absent, pending or
    /// present.
    pub fn source_state_at(
        &self,
        root: &SchedulerSourceRoot,
        canonical: &Canonical,
    ) -> SourceState<SourceText> {
        self.source_root.state_at(root, canonical)
    }

    /// What the source root holds: files, retained versions, live roots.
    pub fn source_root_stats(&self) -> SourceRootStats {
        self.source_root.stats()
    }

    /// Frees every source version neither the current epoch nor a live root
    /// reads, now (the source root also collects on its own as it
    /// publishes), and forgets every removed file no live root reads, the
    /// latest removal's included: such a file then reads `Unknown`, as in a
    /// new scheduler, and the forgetting gets an epoch of its own. One call
    /// does all of it (a collection on its own, as the source root runs
    /// while it publishes, keeps a removal made in the current snapshot
    /// readable as `Absent` until a later one).
    pub fn gc_source_root(&self) -> GcReport {
        self.source_root.forget_removed()
    }

    /// The committed output of each `(canonical, stage)`, read without the
    /// DAG lock and without a handle: the output the live object committed
    /// for its current generation, or `None` — not committed yet, no such
    /// file, or a write sent earlier (by any thread) still waits for
    /// admission (then every item is `None`, so the caller never misses a
    /// write sent before; submit requests for the `None`s).
    ///
    /// The read path of a host that re-asks for what is built: no
    /// canonicalisation (the caller names files by canonical), no answer
    /// slot, no inbox; it allocates the result vector only. An answer is as
    /// current as a request answered at submission would be.
    pub fn committed_outputs<'a>(
        &self,
        items: impl IntoIterator<Item = (&'a Canonical, TargetStage)>,
    ) -> Vec<Option<StageOutput<E>>> {
        let items = items.into_iter();
        let mut outputs = Vec::with_capacity(items.size_hint().0);
        // Acquire, once: when no write waits, every write sent before the
        // call has been admitted and its effects are visible.
        let settled = !self.inbox.writes_waiting();
        let mut answered = 0;
        for (canonical, stage) in items {
            let output = settled
                .then(|| self.nodes.get(canonical))
                .flatten()
                .filter(|node| !node.is_retired())
                .and_then(|node| node.committed(stage));
            answered += u64::from(output.is_some());
            outputs.push(output);
        }
        self.counters
            .answered_without_admission
            .fetch_add(answered, Ordering::Relaxed);
        outputs
    }

    /// The published node of `canonical`, if any (after admitting what the
    /// caller submitted before).
    pub fn node(&self, canonical: &Canonical) -> Option<Arc<FileNode<E>>> {
        self.admit_everything_sent();
        self.nodes.get(canonical).map(|node| Arc::clone(&node))
    }

    /// The published version of `canonical`, if any (after admitting what
    /// the caller submitted before).
    pub fn version_of(&self, canonical: &Canonical) -> Option<SourceVersion> {
        self.admit_everything_sent();
        self.nodes.get(canonical).map(|node| node.version())
    }

    /// What the scheduler has done so far.
    pub fn counters(&self) -> SchedulerCounters {
        let (dag, ledger) = self.read_locked(|locked| (locked.dag.counters(), locked.dag.ledger()));
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        SchedulerCounters {
            submits: load(&self.counters.submits),
            batches: load(&self.counters.batches),
            dedupe_joins: dag.dedupe_joins,
            stale_completion_refusals: dag.stale_completion_refusals,
            supersedes: dag.superseded,
            cancellations: dag.cancelled,
            inbox_depth_max: self.counters.inbox_depth_max.load(Ordering::Relaxed),
            ledger_in_use: ledger.in_use(),
            loads: load(&self.counters.loads),
            source_runs: load(&self.counters.source_runs),
            analysis_runs: load(&self.counters.analysis_runs),
            artifact_runs: load(&self.counters.artifact_runs),
            cache_runs: load(&self.counters.cache_runs),
            stages_verified: load(&self.counters.stages_verified),
            outputs_unchanged: load(&self.counters.outputs_unchanged),
            unchanged_texts: load(&self.counters.unchanged_texts),
            executor_panics: load(&self.counters.executor_panics),
            answered_without_admission: load(&self.counters.answered_without_admission),
            duplicate_answers: load(&self.counters.duplicate_answers),
            internal_errors: load(&self.counters.internal_errors),
            holds_recovered: load(&self.counters.holds_recovered),
            hook_panics: load(&self.counters.hook_panics),
            completion_holds: load(&self.counters.completion_holds),
            batched_stages: load(&self.counters.batched_stages),
            caller_stages: load(&self.counters.caller_stages),
            helper_wakes: self.helpers.woken(),
            deferred_registrations: load(&self.counters.deferred_registrations),
            lock_held_ns: load(&self.counters.lock_held_ns),
        }
    }

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.read_locked(|locked| locked.dag.ledger())
    }

    /// Membership counts and backing capacity of dependency state.
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        self.read_locked(|locked| locked.dag.dependency_occupancy())
    }

    /// Ready work not yet dispatched, CPU plus I/O: what host DAG
    /// admission is bounded by ([`crate::SchedulerConfig::max_ready_queue_depth`]).
    pub fn ready_queue_depth(&self) -> usize {
        self.read_locked(|locked| {
            locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io)
        })
    }

    /// What is running, waiting or queued now; [`QuiescenceReport::clean`]
    /// when the scheduler is idle.
    pub fn quiescence_report(&self) -> QuiescenceReport {
        self.read_locked(|locked| QuiescenceReport {
            ledger_in_use: locked.dag.ledger().in_use(),
            waiting: locked.waiters.len(),
            queued_jobs: self.jobs.iter().map(SegQueue::len).sum(),
            inbox: self.inbox.len(),
            queued_registrations: locked.registering.len(),
            pending_admissions: self.counters.pending_admissions.load(Ordering::Acquire),
            dag_runs: locked.dags.runs(),
            cache_flights: locked.dags.flights(),
            dag_permits: locked.dags.permits_taken(),
            deferred_in_flight: locked.deferred.len(),
        })
    }

    /// Dependency state read under the lock, for the witness module.
    pub(crate) fn with_dag<R>(&self, f: impl FnOnce(&Locked<E>) -> R) -> R {
        self.read_locked(f)
    }

    /// Pumps until nothing is left to do on this thread: drains the inbox
    /// and runs ready work (inline mode runs it here; threaded mode hands it
    /// to the pools). Returns how many pump passes made progress.
    pub fn run_until_idle(&self) -> usize {
        let _inline = (self.is_inline() && !CallerKind::current().drives_while_waiting())
            .then(|| CallerKind::enter(CallerKind::Inline));
        let mut passes = 0;
        while self.pump_pass() {
            passes += 1;
        }
        passes
    }
}
