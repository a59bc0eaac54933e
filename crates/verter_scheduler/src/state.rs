//! The scheduler's state and its one lock: the `Scheduler` struct, what
//! lives under the DAG lock (`Locked`), and the only functions that take
//! that lock.
//!
//! `locked` is private to this module. Every change under it is one hold
//! taken through [`Scheduler::transact`] (or its dispatching variants),
//! which hands the closure the locked state and a [`PostWork`] to collect
//! what must not run under the lock — answers, events, dispatch — and
//! delivers that after the guard drops. `read_locked` gives read-only
//! access. `Drop` shuts the scheduler down through the same hold as
//! `Scheduler::shutdown`. Nothing else takes the lock (`the_dag_lock_is_taken_only_here` pins it). Loader calls, executor
//! calls, hooks and channel sends never run under it (docs/design.md,
//! "What runs where"). Every hold is timed by its guard (`Held`), into
//! `SchedulerCounters::lock_held_ns`.
//!
//! A hold is also an unwind boundary: a panic under the lock is caught
//! before the guard drops, everything the lock guards is recovered to a
//! consistent state in the same hold (`Scheduler::recover_hold`), every
//! waiter is answered after the lock, and then the panic continues
//! (docs/design.md, "A panic under the lock").
//!
//! # Lock rank
//! `locked` (the DAG lock) > the source root's publication lock > `nodes`
//! shards. Nothing takes an outer lock while holding an inner one.
//!
//! This module names no other module that implements scheduler behaviour
//! (`scheduler`, `exec`, `driver`, `witness`): they all build on it.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use crossbeam::queue::SegQueue;
use crossbeam_channel::Sender;
use dashmap::DashMap;
use parking_lot::Mutex;
use verter_dag::{
    Canonical, FileIdentity, Incarnation, Priority, ResourceClass, SchedulerDag,
    SubmissionLifetime, TargetStage, WaitPolicy, WaiterId,
};
use verter_pools::{ProgressSignal, SchedulerCpuPool, SchedulerIoPool};
use verter_source_root::{ContentHash, SchedulerSourceDirectory};

use crate::causal_log::CausalLog;
use crate::config::SchedulerConfig;
use crate::cutoff::{PriorSlot, RevisionClock};
use crate::dags::DagRuns;
use crate::events::Sink;
use crate::helpers::Helpers;
use crate::hooks::SchedulerEvent;
use crate::inbox::Inbox;
use crate::job::Job;
use crate::language::Language;
use crate::node::FileNode;
use crate::post::{AnswerSlot, LockMark, PostWork};
use crate::snapshot::SourceText;
use crate::stats::{ReadyClock, StatsRecorder};
use crate::traits::{SourceLoader, StageExecutor};
use crate::waiters::Waiters;

/// The scheduler's hash tables use foldhash's per-process seeded hasher
/// (SipHash dominated the cold-build profile).
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A request prepared outside the lock, waiting in the inbox.
pub(crate) struct Prepared<E: StageExecutor> {
    pub(crate) canonical: Canonical,
    pub(crate) stage: TargetStage,
    pub(crate) priority: Priority,
    /// New text, with its content hash (computed when prepared, outside
    /// the lock).
    pub(crate) text: Option<(Arc<str>, ContentHash)>,
    /// The language the request named, or the loader's classification.
    pub(crate) language: Language,
    /// Whether the request named the language (only then can it re-home).
    pub(crate) explicit_language: bool,
    /// The live node's lifetime when prepared; `None` when there was none.
    pub(crate) lifetime: Option<SubmissionLifetime>,
    /// When there was none: the node (and the text) of the object
    /// admission will most likely create, built outside the lock.
    pub(crate) fresh: Option<Fresh<E>>,
    pub(crate) slot: AnswerSlot<E>,
}

/// The node and source text of a file with no published node, built when
/// its request is prepared so that the admitting hold allocates neither
/// (docs/design.md, "The life of a stage"). Both carry a placeholder
/// object identity ([`Scheduler::placeholder`]) until admission binds them
/// to the object it creates; neither is shared before that, so binding
/// needs no synchronisation. A file that has an object by the time its
/// request is admitted drops them unused.
pub(crate) struct Fresh<E: StageExecutor> {
    pub(crate) node: Arc<FileNode<E>>,
    /// The request's text, when it has one.
    pub(crate) source: Option<SourceText>,
}

/// One inbox item.
pub(crate) enum Submission<E: StageExecutor> {
    /// One request.
    One(Prepared<E>),
    /// An atomic batch: its edits applied in one lock hold, its requests
    /// registered in that hold or, for a large one, in later ones.
    Batch {
        items: Vec<Prepared<E>>,
        /// How many items had no published node when prepared (most likely
        /// new files): what admission makes room for, counted outside the
        /// lock.
        new_files: usize,
    },
}

impl<E: StageExecutor> Prepared<E> {
    /// Whether admitting it may change state other requests read: it
    /// carries text or names a language (docs/design.md, "The inbox").
    pub(crate) fn is_write(&self) -> bool {
        self.text.is_some() || self.explicit_language
    }
}

impl<E: StageExecutor> Submission<E> {
    /// Whether any of its requests is a write ([`Prepared::is_write`]).
    pub(crate) fn is_write(&self) -> bool {
        match self {
            Self::One(prepared) => prepared.is_write(),
            Self::Batch { items, .. } => items.iter().any(Prepared::is_write),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Batch { items, .. } => items.len(),
        }
    }

    pub(crate) fn into_items(self) -> Vec<Prepared<E>> {
        match self {
            Self::One(prepared) => vec![prepared],
            Self::Batch { items, .. } => items,
        }
    }
}

/// The waiter an admitted request still has to register: an item of a
/// large atomic batch whose edits are applied and whose registration waits
/// for a later hold (docs/design.md, "Chunked admission").
pub(crate) struct Registering<E: StageExecutor> {
    /// The object version the request's own admission left live: what a
    /// request with text is pinned to.
    pub(crate) live: FileIdentity,
    pub(crate) stage: TargetStage,
    pub(crate) priority: Priority,
    pub(crate) policy: WaitPolicy,
    pub(crate) slot: AnswerSlot<E>,
}

/// The text known for a file's live version: from an upsert, or loaded and
/// waiting to be parsed.
pub(crate) struct KnownText {
    pub(crate) text: SourceText,
    /// Whether it is in the source root already (upserts publish at
    /// admission; loads at the Source commit).
    pub(crate) published: bool,
    /// Whether the loader read it (a load, or `invalidate`'s read), so it
    /// can read it again: only such a text is let go once parsed under
    /// `TextRetention::UntilParsed` (docs/design.md, "Texts").
    pub(crate) from_loader: bool,
}

/// What the scheduler keeps per file in the DAG's own record of the file
/// ([`SchedulerDag::payload`]), so one lookup under the lock reaches the
/// file's DAG state, its node and its text (docs/design.md, "State and
/// where it lives"). Set when a node is published for a live object and
/// taken out when the node is unpublished, in the same hold.
pub(crate) struct FileSlot<E: StageExecutor> {
    /// The published node: the same one `Scheduler::nodes` holds.
    pub(crate) node: Arc<FileNode<E>>,
    /// The node's current view, as the lock holds it: what code under the
    /// lock reads outputs through (no `ArcSwap` load), and what every change
    /// of the view is made through (`FileNode::reset_view`,
    /// `publish_artifact`, ...), which keeps the two the same.
    pub(crate) view: Arc<crate::node::NodeView<E>>,
    /// The text of the file's live version, when known.
    pub(crate) text: Option<KnownText>,
    /// What the first parsed source that named this file classified it
    /// as: what the file is processed as if the DAG ingests it again after
    /// a removal (it moves to `Locked::languages` when the file is
    /// removed, and back when a node is published again).
    pub(crate) named_language: Option<Language>,
    /// Outputs of this object the file stopped serving, that its stages
    /// may be verified against (docs/design.md, "Early cutoff").
    pub(crate) priors: PriorSlot<E>,
}

/// Everything under the DAG lock.
pub(crate) struct Locked<E: StageExecutor> {
    /// The lifecycle authority's state, with each file's [`FileSlot`].
    pub(crate) dag: SchedulerDag<FileSlot<E>>,
    /// The slot of every registered waiter, by the DAG's waiter slot;
    /// taken out when answered (`Locked::take_waiter`).
    pub(crate) waiters: Waiters<E>,
    /// The language a parsed source classified each *removed* file as
    /// (`FileSlot::named_language` while the file has a node): what a file
    /// the DAG ingests again (a removed blocker an importer still needs) is
    /// processed as, without calling the loader under the lock. Cleared by
    /// `reset`.
    pub(crate) languages: HashMap<Canonical, Language>,
    /// Registrations of atomic batches, in admission order, that later
    /// holds make a chunk at a time; every one of them was counted in
    /// `Counters::pending_admissions` and still is.
    pub(crate) registering: VecDeque<Registering<E>>,
    /// How many large atomic batches were admitted (wrapping; the number
    /// `FileNode` stamps name).
    pub(crate) large_batches: u32,
    /// Early cutoff's revision clock: a new revision for every output found
    /// changed, drawn in the hold that commits it.
    pub(crate) revisions: RevisionClock,
    /// Submitted host DAGs: their nodes, cache flights and limits.
    pub(crate) dags: DagRuns<E, Prepared<E>>,
    /// When ready-queue tickets were issued, by hold: only while runs are
    /// timed (docs/design.md, "Causes").
    pub(crate) ready_clock: ReadyClock,
    /// Started remote work not yet committed, with how to tell it it was
    /// cancelled (`remote_work.rs`).
    pub(crate) remote_work: crate::remote_work::RemoteWork,
    /// Requests this hold took off the inbox (or off `registering`) whose
    /// admission it has not settled yet: `Counters::pending_admissions`
    /// still counts them. Zero between holds; what a recovered hold
    /// settles for the admission it broke off.
    pub(crate) unsettled: usize,
    /// The write receipt of the inbox item this hold is admitting, reported
    /// once its admission is done (or by a recovered hold). `None` between
    /// holds.
    pub(crate) receipt: Option<crate::inbox::Admitted>,
}

impl<E: StageExecutor> Locked<E> {
    /// Takes the slot of `waiter`, whom the DAG just answered, out of the
    /// table, and gives the id back to the DAG for a later waiter's slot.
    /// `None` when the table does not hold it (a duplicate answer).
    pub(crate) fn take_waiter(&mut self, waiter: WaiterId) -> Option<AnswerSlot<E>> {
        let slot = self.waiters.take(waiter)?;
        self.dag.recycle_waiter(waiter);
        Some(slot)
    }
}

/// Which end a scheduler comes to (`Scheduler::end`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// [`Scheduler::shutdown`]: the scheduler lives on, refusing every
    /// call, so it also forgets every file now (the node map, the source
    /// root), as `reset` does.
    Shutdown,
    /// Its drop: its fields are dropped right after, so nothing is
    /// forgotten one file at a time.
    Drop,
}

/// Whether the scheduler runs on pools or on its callers' threads.
pub(crate) enum Mode {
    /// Host-built pools and a driver thread.
    Threaded {
        cpu: Arc<SchedulerCpuPool>,
        io: Arc<SchedulerIoPool>,
    },
    /// No threads: every wait pumps on the caller's thread.
    Inline,
}

/// Counters kept outside the lock.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) submits: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) inbox_depth_max: AtomicUsize,
    pub(crate) loads: AtomicU64,
    pub(crate) source_runs: AtomicU64,
    pub(crate) analysis_runs: AtomicU64,
    pub(crate) artifact_runs: AtomicU64,
    pub(crate) cache_runs: AtomicU64,
    pub(crate) cache_memo_hits: AtomicU64,
    pub(crate) cache_memo_cutoffs: AtomicU64,
    pub(crate) cache_memo_evictions: AtomicU64,
    pub(crate) stages_verified: AtomicU64,
    pub(crate) outputs_unchanged: AtomicU64,
    pub(crate) unchanged_texts: AtomicU64,
    pub(crate) executor_panics: AtomicU64,
    pub(crate) answered_without_admission: AtomicU64,
    pub(crate) duplicate_answers: AtomicU64,
    pub(crate) internal_errors: AtomicU64,
    pub(crate) completion_holds: AtomicU64,
    pub(crate) hook_panics: AtomicU64,
    pub(crate) holds_recovered: AtomicU64,
    pub(crate) batched_stages: AtomicU64,
    pub(crate) caller_stages: AtomicU64,
    pub(crate) queued_registrations: AtomicU64,
    /// Requests withdrawn before their answer (cancelled, or every handle
    /// dropped).
    pub(crate) withdrawn: AtomicU64,
    /// Nanoseconds the DAG lock was held, summed over every hold: added by
    /// [`Held`] when a hold ends, read by `Observer::counters`.
    pub(crate) lock_held_ns: AtomicU64,
    /// Requests enqueued and not yet admitted. Incremented before the send,
    /// decremented in the lock hold that admits them.
    pub(crate) pending_admissions: AtomicUsize,
}

/// The scheduler. See the crate docs.
pub struct Scheduler<E: StageExecutor> {
    pub(crate) me: Weak<Self>,
    pub(crate) config: SchedulerConfig,
    pub(crate) loader: Box<dyn SourceLoader>,
    pub(crate) executor: E,
    pub(crate) mode: Mode,
    /// The DAG lock: every file transition and admission happens under it.
    /// Taken only by [`Self::transact`] (and by read-only getters).
    locked: Mutex<Locked<E>>,
    /// Written only under the DAG lock; read without it by preparation and
    /// readers. A reader may see a node being retired: admission revalidates.
    pub(crate) nodes: DashMap<Canonical, Arc<FileNode<E>>, foldhash::fast::RandomState>,
    /// Written only under the DAG lock (publication lock ranks below it).
    pub(crate) source_root: SchedulerSourceDirectory<SourceText>,
    pub(crate) inbox: Inbox<Submission<E>>,
    /// The driver's private teardown channel (capacity one).
    pub(crate) teardown_tx: Sender<()>,
    pub(crate) driver: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Whether the scheduler was shut down (`Scheduler::shutdown`, or its
    /// drop): set once, under the DAG lock, in the hold that answers
    /// everyone and cancels everything; read without the lock by every
    /// call that would call the loader or send into the inbox
    /// (docs/design.md, "Shutdown").
    pub(crate) shut_down: AtomicBool,
    /// Set when the shutdown that set `shut_down` has finished its waits:
    /// what a second, racing `shutdown` waits for.
    pub(crate) ended: AtomicBool,
    /// Pool jobs of this scheduler running now (a pool token that upgraded
    /// its weak reference): what a shutdown waits to see at zero.
    pub(crate) pool_jobs: AtomicUsize,
    /// Dispatched jobs: CPU, I/O, remote (remote work to start), then
    /// urgent CPU (threaded only; see `exec.rs`). Pool tokens and pumps pop them; a host
    /// thread that waits pops the urgent ones.
    pub(crate) jobs: [SegQueue<Job<E>>; 4],
    /// Host threads waiting for an answer that run urgent jobs meanwhile:
    /// woken when one is queued.
    pub(crate) helpers: Helpers,
    pub(crate) counters: Counters,
    /// The output store, when the configuration names one (docs/design.md,
    /// "Persistent outputs"): read and written only by workers, outside
    /// the lock.
    pub(crate) persist: Option<crate::persist::Persist>,
    /// Raised after every post-work delivery and every enqueue: wakes idle
    /// driving waiters and `wait_idle` instead of a clock.
    pub(crate) progress: ProgressSignal,
    /// Whether anyone observes events: the hooks (`Hooks::observes_events`),
    /// a `tracing` subscriber at debug level on `verter::events`, or the
    /// causal log; read once.
    pub(crate) observes_events: bool,
    /// Whether a run about to start is announced (`WillLoad`,
    /// `WillExecute`): only the hooks and `tracing` hear it, the causal log
    /// records the run when it ends, so with the log alone nothing is
    /// built. Read once.
    pub(crate) announces_runs: bool,
    /// Whether the hooks pause (`Hooks::pauses`, read once).
    pub(crate) pauses: bool,
    /// The causal log, when `SchedulerConfig::causal_log` asks for one.
    pub(crate) log: Option<CausalLog>,
    /// The stage histograms, when `SchedulerConfig::stage_stats` is on.
    pub(crate) stats: Option<StatsRecorder>,
    /// Whether stage runs are timed: for the events or the histograms.
    pub(crate) timed: bool,
    /// Whether any work is routed to the remote class
    /// (`DagConfig::remote`): if not, dispatching never looks at it.
    pub(crate) routes_remote: bool,
    /// Whether the hooks observe events (`Hooks::observes_events`, read
    /// once).
    pub(crate) hooks_observe: bool,
    /// How many lock holds that record events have begun: each numbers its
    /// events (`LogRecord::hold`). Advanced under the DAG lock only.
    pub(crate) holds: AtomicU64,
    /// How many events the last hold that had any delivered (a hint).
    pub(crate) events_hint: AtomicUsize,
    /// When it was built: the clock of `Run::started` (and of the causal
    /// log's records).
    pub(crate) created: std::time::Instant,
    /// The object identity a [`Fresh`] node carries until it is bound:
    /// allocated once, never any object's.
    pub(crate) placeholder: (Incarnation, SubmissionLifetime),
    /// The test seam that makes a chosen hold panic under the lock
    /// (`fault.rs`); absent without the `test-support` feature.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) faults: crate::fault::HoldFaults,
}

impl<E: StageExecutor> Scheduler<E> {
    pub(crate) fn build(
        config: SchedulerConfig,
        loader: Box<dyn SourceLoader>,
        executor: E,
        mode: Mode,
        teardown_tx: Sender<()>,
    ) -> Arc<Self> {
        let inbox = Inbox::new(config.inbox_capacity, config.inbox_capacity);
        let created = std::time::Instant::now();
        let log = CausalLog::new(config.causal_log, created);
        let stats = config.stage_stats.then(StatsRecorder::new);
        let hooks_observe = config.hooks.observes_events();
        let announces_runs = hooks_observe || crate::events::traced();
        let observes_events = announces_runs || log.is_some();
        let timed = observes_events || stats.is_some();
        let routes_remote = config.dag.remote != verter_dag::RemoteRoutes::NONE;
        let pauses = config.hooks.pauses();
        // A store whose writer cannot start degrades to none: persistence
        // never fails a scheduler.
        let persist = config.store.as_ref().and_then(|store| {
            crate::persist::Persist::start(store, matches!(mode, Mode::Threaded { .. }))
                .inspect_err(|error| {
                    tracing::warn!(
                        "output store: the writer did not start ({error}); running without it"
                    );
                })
                .ok()
        });
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            locked: Mutex::new(Locked {
                dag: SchedulerDag::with_payloads(config.dag),
                waiters: Waiters::default(),
                languages: HashMap::default(),
                registering: VecDeque::new(),
                large_batches: 0,
                revisions: RevisionClock::default(),
                dags: DagRuns::with_memo_bound(config.cache_memos),
                ready_clock: ReadyClock::default(),
                remote_work: crate::remote_work::RemoteWork::default(),
                unsettled: 0,
                receipt: None,
            }),
            config,
            loader,
            executor,
            mode,
            nodes: DashMap::default(),
            source_root: SchedulerSourceDirectory::new(),
            inbox,
            teardown_tx,
            driver: Mutex::new(None),
            shut_down: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            pool_jobs: AtomicUsize::new(0),
            jobs: [
                SegQueue::new(),
                SegQueue::new(),
                SegQueue::new(),
                SegQueue::new(),
            ],
            helpers: Helpers::default(),
            counters: Counters::default(),
            persist,
            placeholder: (Incarnation::allocate(), SubmissionLifetime::allocate()),
            progress: ProgressSignal::new(),
            observes_events,
            announces_runs,
            pauses,
            log,
            stats,
            timed,
            routes_remote,
            hooks_observe,
            holds: AtomicU64::new(0),
            events_hint: AtomicUsize::new(0),
            created,
            #[cfg(any(test, feature = "test-support"))]
            faults: crate::fault::HoldFaults::default(),
        })
    }

    // ----- the one lock hold ---------------------------------------------

    /// Runs `f` in one hold of the DAG lock, then — with the guard dropped —
    /// delivers the post-work `f` collected: events, answers, dispatch. The
    /// only way to change state under the lock; `f` can push answers, never
    /// deliver them.
    pub(crate) fn transact<R>(&self, f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R) -> R {
        self.transact_keeping(None, f).0
    }

    /// [`Self::transact`], and when the hold made work ready, the same hold
    /// dispatches it (one lock acquisition, not two). With `keep`, the first
    /// dispatched job of that class is handed back for the calling thread to
    /// run itself instead of being queued: a worker that finished a stage
    /// runs the next one without a queue, a pool token or a wake
    /// (docs/design.md, "The life of a stage").
    pub(crate) fn transact_keeping<R>(
        &self,
        keep: Option<ResourceClass>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>) {
        let (result, kept, _) = self.transact_dispatching(keep, f);
        (result, kept)
    }

    /// [`Self::transact_keeping`], also returning how many jobs its hold
    /// dispatched (queued or kept).
    pub(crate) fn transact_dispatching<R>(
        &self,
        keep: Option<ResourceClass>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>, usize) {
        self.transact_batching(keep, None, f)
    }

    /// [`Self::transact_dispatching`]; with `batch = Some((extra, into))`,
    /// a hold that keeps a CPU job for the calling thread also takes up to
    /// `extra` more ready CPU jobs for it, reserved outside the budget,
    /// into `into` (`Scheduler::take_batched`; docs/design.md, "Several
    /// stages per hold").
    ///
    /// # Panics
    /// If anything panics in the hold (a broken invariant): not before the
    /// hold is recovered and everyone it leaves waiting is answered, after
    /// the lock ([`Self::recover_hold`]); then the panic continues from
    /// here.
    pub(crate) fn transact_batching<R>(
        &self,
        keep: Option<ResourceClass>,
        batch: Option<(usize, &mut Vec<Job<E>>)>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>, usize) {
        let mut post = self.post_work();
        let (result, jobs, made_ready) = {
            let mut locked = self.lock();
            let mark = LockMark::set();
            // The unwind boundary: a panic anywhere in the hold is caught
            // here, with the guard still held, so what the lock guards is
            // recovered before anyone else can see it. (Not a drop guard:
            // the recovery is ordinary code, and a panic out of a
            // destructor that runs during an unwind aborts the process.)
            let held = catch_unwind(AssertUnwindSafe(|| {
                self.hold_body(&mut locked, &mut post, keep, batch, f)
            }));
            match held {
                Ok(held) => {
                    debug_assert_eq!(locked.unsettled, 0, "a hold settles what it admits");
                    debug_assert!(locked.receipt.is_none(), "a hold reports what it admits");
                    held
                }
                Err(payload) => {
                    self.recover_hold(&mut locked, &mut post, &*payload);
                    drop(mark);
                    drop(locked);
                    // After the lock, as every hold's: answers, events,
                    // and what the recovery let go of.
                    self.after_recovery(post, &payload);
                    std::panic::resume_unwind(payload);
                }
            }
        };
        self.run_post(post);
        let dispatched = jobs.len();
        let kept = self.queue_jobs(jobs, keep);
        if made_ready {
            // Work became ready (and what the budget allowed is queued now):
            // a pumping waiter may run it, and a thread blocked in a nested
            // wait may run it on its lent slot even with no budget left.
            self.progress.notify();
        }
        (result, kept, dispatched)
    }

    /// The body of one hold ([`Self::transact_batching`]), under the lock:
    /// `f`, then settling host DAGs and dispatching what became ready.
    fn hold_body<R>(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        keep: Option<ResourceClass>,
        batch: Option<(usize, &mut Vec<Job<E>>)>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, crate::job::Jobs<E>, bool) {
        if post.observed() {
            // Under the lock: holds are numbered in lock order.
            post.hold = self.holds.fetch_add(1, Ordering::Relaxed) + 1;
        }
        if self.timed {
            locked.ready_clock.begin();
        }
        let result = f(locked, post);
        // Host DAGs: answers their nodes got in this hold, and held
        // nodes the ready queue has room for.
        if self.dags_unsettled(locked, post) {
            self.settle_dags(locked, post);
        }
        let mut made_ready = post.dispatch;
        let mut jobs = if made_ready {
            // `take_jobs` dispatches all the budgets allow; what it
            // leaves ready waits for capacity, which a completion
            // dispatches in its own hold.
            let jobs = self.take_jobs(locked, post);
            post.dispatch = false;
            if let Some((extra, into)) = batch
                && extra > 0
                && keep == Some(ResourceClass::Cpu)
                && jobs
                    .iter()
                    .any(|job| job.dispatch().class == ResourceClass::Cpu)
            {
                self.take_batched(locked, post, extra, into);
            }
            jobs
        } else {
            crate::job::Jobs::new()
        };
        // Dispatch may answer DAG nodes (a refused stage) and make room
        // in the ready queue for held ones.
        while self.dags_unsettled(locked, post) {
            self.settle_dags(locked, post);
            if post.dispatch {
                made_ready = true;
                jobs.extend(self.take_jobs(locked, post));
                post.dispatch = false;
            }
        }
        if jobs.is_empty() {
            Self::release_idle_capacity(locked);
        }
        if self.timed {
            let issued = locked.dag.tickets_issued();
            locked.ready_clock.end(issued);
        }
        (result, jobs, made_ready)
    }

    /// Under the lock, at the end of a hold that dispatched nothing: once no
    /// work is in flight, the tables a build grew to its peak and emptied
    /// give their capacity back (O(1) otherwise).
    fn release_idle_capacity(locked: &mut Locked<E>) {
        if !locked.dag.is_idle() {
            return;
        }
        locked.dag.release_idle_capacity();
        locked.waiters.release_idle();
    }

    /// Where this scheduler's events go.
    pub(crate) fn sink(&self) -> Sink<'_> {
        Sink {
            hooks: &*self.config.hooks,
            hooks_observe: self.hooks_observe,
            panics: &self.counters.hook_panics,
            log: self.log.as_ref(),
            events_hint: &self.events_hint,
        }
    }

    /// Reports `event`, decided outside any lock hold (a run about to
    /// start, a refused submission).
    pub(crate) fn emit_now(&self, event: SchedulerEvent) {
        crate::events::emit(&self.sink(), self.holds.load(Ordering::Relaxed), event);
    }

    /// Empty post-work that records events only if the hooks observe them.
    pub(crate) fn post_work(&self) -> PostWork<E> {
        let mut post = PostWork::observing(self.observes_events);
        // A hold numbers its own (`transact_batching`); events decided
        // outside one sort after the holds begun so far.
        post.hold = self.holds.load(Ordering::Relaxed);
        if self.observes_events {
            post.events_hint = self.events_hint.load(Ordering::Relaxed);
        }
        post
    }

    /// Reads state under the DAG lock; changes nothing and answers no one.
    pub(crate) fn read_locked<R>(&self, f: impl FnOnce(&Locked<E>) -> R) -> R {
        f(&self.lock())
    }

    /// Takes the DAG lock. It is not re-entrant: a thread that already holds
    /// it (a public method called from under the lock) panics here in debug
    /// builds instead of deadlocking. The hold is timed ([`Held`]).
    fn lock(&self) -> Held<'_, E> {
        debug_assert!(
            !crate::post::holds_dag_lock(),
            "the DAG lock is not re-entrant: code under the lock called a method that takes it"
        );
        let guard = self.locked.lock();
        Held {
            since: Instant::now(),
            held_ns: &self.counters.lock_held_ns,
            guard,
        }
    }

    /// After the lock: events, answers, dispatch of newly ready work, and a
    /// progress signal for idle waiters.
    pub(crate) fn run_post(&self, post: PostWork<E>) {
        // Tasks waiting for room in the inbox: this hold may have made some.
        self.inbox.wake_room();
        if post.is_empty() {
            return;
        }
        let dispatch = post.deliver(&self.sink(), &self.counters.duplicate_answers);
        if dispatch {
            self.dispatch_ready();
        }
        self.progress.notify();
    }
}

/// A hold of the DAG lock, timed: the guard, and when it was taken. When it
/// drops, the hold's length is added to `Counters::lock_held_ns` just before
/// the guard unlocks (one `Instant::now` pair per hold; a build takes the
/// lock a few times per hundred files).
struct Held<'a, E: StageExecutor> {
    since: Instant,
    held_ns: &'a AtomicU64,
    /// Released when the fields drop, after [`Drop::drop`] has counted
    /// the hold.
    guard: parking_lot::MutexGuard<'a, Locked<E>>,
}

impl<E: StageExecutor> std::ops::Deref for Held<'_, E> {
    type Target = Locked<E>;

    fn deref(&self) -> &Locked<E> {
        &self.guard
    }
}

impl<E: StageExecutor> std::ops::DerefMut for Held<'_, E> {
    fn deref_mut(&mut self) -> &mut Locked<E> {
        &mut self.guard
    }
}

impl<E: StageExecutor> Drop for Held<'_, E> {
    fn drop(&mut self) {
        let held = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.held_ns.fetch_add(held, Ordering::Relaxed);
    }
}

impl<E: StageExecutor> Drop for Scheduler<E> {
    /// Does what [`Scheduler::shutdown`] does, through the same body, unless
    /// that already ran: everyone still waiting is answered, the driver is
    /// stopped and joined (no pool job can be running: each holds a strong
    /// reference while it runs). What the scheduler holds is then dropped
    /// on this thread, after the lock: the DAG's tables first (the node
    /// map let go of its references in the hold), which free every node
    /// in the order of the files' dense ids, then the fields.
    fn drop(&mut self) {
        self.end(Ending::Drop);
    }
}

#[cfg(test)]
mod tests;
