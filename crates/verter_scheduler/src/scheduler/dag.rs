//! Host DAGs: submitting one ([`Scheduler::submit_dag`],
//! [`Scheduler::try_submit_dag`]), handing its held nodes to the stages at
//! the end of every hold ([`Scheduler::settle_dags`]), cache flights'
//! answers, and cancellation (docs/design.md, "Host DAGs").
//!
//! A file node is handed over as the request it is — prepared outside the
//! lock at submission, admitted and registered in the hold that hands it
//! over, through the same `apply`/`register` as any request — with an
//! answer slot that routes its answer back to the DAG's state in the hold
//! that gives it. A cache node joins the flight of its identity, or starts
//! one: a `CacheNode` work node the DAG admits, dispatches and completes
//! like a stage. Everything here runs under the DAG lock; the DAG's answer
//! leaves as post-work.

use std::sync::Weak;

use super::publication::Publish;
use super::*;
use crate::dag_types::NodeLabel;
use crate::dags::{Downstream, FlightFound, NodeWork, RunNode, downstream_of};
use crate::host_dag::{
    Admission, CancelDag, Dag, DagError, DagHandle, DagResults, DagShared, DedupeHook, NodeOutput,
    Task,
};
use crate::post::NodeRef;
use crate::traits::DepPath;

/// How a DAG submission waits for room in the ready queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Blocking {
    /// Waits (running work meanwhile where the caller may).
    Wait,
    /// Answers `Backpressured` instead.
    Refuse,
}

/// A DAG checked and prepared outside the lock, ready for its hold.
struct PreparedDag<E: StageExecutor> {
    nodes: Vec<RunNode<E, Prepared<E>>>,
    downstream: Vec<Downstream>,
    /// Nodes answered at preparation (a path the loader refused).
    failed: Vec<(u32, RequestError)>,
}

impl<E: StageExecutor> Scheduler<E> {
    /// Submits `dag`, waiting while the ready queue is full (a waiting
    /// stage thread or inline caller runs work meanwhile, as `wait` does).
    /// `hook` is asked first about the DAG's one output ([`Dag::output`]):
    /// a flight the caller holds answers `DedupeJoined`. Never
    /// `Backpressured`.
    ///
    /// # Errors
    /// [`DagError`] when the DAG is malformed (a cycle, an edge to another
    /// DAG's node, an edit): nothing of it is admitted.
    pub fn submit_dag(
        &self,
        dag: Dag,
        hook: &dyn DedupeHook,
    ) -> Result<Admission<DagHandle<E>>, DagError> {
        self.submit_dag_as(dag, hook, Blocking::Wait)
    }

    /// [`Self::submit_dag`] without waiting: `Backpressured` when the ready
    /// queue holds [`crate::SchedulerConfig::max_ready_queue_depth`] stages
    /// or DAG nodes are already held for room; then nothing was admitted
    /// and no state changed.
    ///
    /// # Errors
    /// As [`Self::submit_dag`].
    pub fn try_submit_dag(
        &self,
        dag: Dag,
        hook: &dyn DedupeHook,
    ) -> Result<Admission<DagHandle<E>>, DagError> {
        self.submit_dag_as(dag, hook, Blocking::Refuse)
    }

    fn depth(locked: &Locked<E>) -> usize {
        locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io)
    }

    /// Whether a DAG submitted now would be backpressured.
    fn backpressured(&self, locked: &Locked<E>) -> bool {
        locked.dags.has_held() || Self::depth(locked) >= self.config.max_ready_queue_depth
    }

    fn submit_dag_as(
        &self,
        dag: Dag,
        hook: &dyn DedupeHook,
        blocking: Blocking,
    ) -> Result<Admission<DagHandle<E>>, DagError> {
        let order = dag.check()?;
        // A refusal changes nothing, so it is decided before the DAG is
        // prepared (the hold below decides again).
        let nodes = dag.nodes.len();
        if blocking == Blocking::Refuse && self.read_locked(|locked| self.backpressured(locked)) {
            self.report_backpressure(Backpressure::Dag { nodes });
            return Ok(Admission::Backpressured);
        }
        if hook.probes()
            && let Some(output) = dag.output()
            && let Some(identity) = self.identity_of(&dag.nodes[output].task)
            && let Some(joiner) = hook.probe(&identity)
        {
            return Ok(Admission::DedupeJoined(joiner));
        }
        let run = self.next_dag_run();
        let shared = Arc::new(DagShared::new(run, self.me.clone() as Weak<dyn CancelDag>));
        if dag.is_empty() {
            let handle = DagHandle {
                shared: Arc::clone(&shared),
            };
            let mut post = self.post_work();
            shared.stash(DagResults::new(Vec::new()));
            post.dags_answered([Box::new(move |distrusted: Option<&Arc<str>>| {
                shared.deliver(distrusted)
            }) as crate::post::DagDelivery]);
            self.run_post(post);
            return Ok(Admission::Admitted(handle));
        }
        let mut prepared = Some(self.prepare_dag(dag, &order, run));
        loop {
            let seen = self.progress.epoch();
            let admitted = self.transact(|locked, post| {
                if self.backpressured(locked) {
                    return false;
                }
                self.admit_sent(locked, post);
                post.act(|| HostAction::SubmittedDag { dag: run, nodes });
                post.end_act();
                let PreparedDag {
                    nodes,
                    downstream,
                    failed,
                } = prepared.take().expect("admitted once");
                locked.dags.insert(Arc::clone(&shared), nodes, downstream);
                for (node, error) in failed {
                    let done = locked.dags.answer(NodeRef { run, node }, Err(error));
                    post.dags_answered(done);
                }
                let (hits, done) = locked.dags.answer_from_memos(run, &order);
                if hits > 0 {
                    self.counters
                        .cache_memo_hits
                        .fetch_add(hits, Ordering::Relaxed);
                }
                post.dags_answered(done);
                if self.shut_down.load(Ordering::Relaxed) {
                    // Shut down (docs/design.md, "Shutdown"): answered whole
                    // at once, as a DAG in flight at the shutdown was.
                    self.cancel_run(locked, post, run);
                }
                true
            });
            if admitted {
                return Ok(Admission::Admitted(DagHandle { shared }));
            }
            if blocking == Blocking::Refuse {
                self.report_backpressure(Backpressure::Dag { nodes });
                return Ok(Admission::Backpressured);
            }
            // Wait for room: run work where this caller may, else park until
            // something progresses.
            if self.is_inline() || CallerKind::current().drives_while_waiting() {
                if !self.pump_pass() {
                    self.progress.park(seen, self.config.wait_backstop);
                }
            } else {
                self.progress.park(seen, self.config.wait_backstop);
            }
        }
    }

    /// A run id no other DAG of this process had.
    fn next_dag_run(&self) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// The dedupe identity a node names now: a cache node's own; a file
    /// stage's at its file's published version, if it has one.
    fn identity_of(&self, task: &Task) -> Option<WorkNodeIdentity> {
        match task {
            Task::Cache(task, _) => Some(task.identity()),
            Task::File(request) => {
                let canonical = match &request.path {
                    crate::traits::DepPath::Path(path) => self.canonicalize(path).ok()?,
                    crate::traits::DepPath::Canonical(canonical) => *canonical,
                };
                let node = self.nodes.get(&canonical)?;
                let file = FileIdentity::new(canonical, node.incarnation(), node.generation());
                Some(WorkNodeIdentity::file_stage(file, request.stage))
            }
        }
    }

    /// Outside the lock: each node's effective priority (its own raised to
    /// that of every node after it), and each file node's request prepared
    /// like any request's, with a slot that answers the DAG.
    fn prepare_dag(&self, dag: Dag, order: &[u32], run: u64) -> PreparedDag<E> {
        let Dag { nodes, edges } = dag;
        let mut priority: Vec<Priority> = nodes
            .iter()
            .map(|node| node.options.priority.unwrap_or_default())
            .collect();
        let mut pending = vec![0u32; nodes.len()];
        for &(_, to, _) in &edges {
            pending[to as usize] += 1;
        }
        let downstream = downstream_of(nodes.len(), &edges);
        // Later nodes first: a node inherits from everything after it.
        for &node in order.iter().rev() {
            let inherited = downstream[node as usize]
                .iter()
                .map(|&(next, _)| priority[next as usize])
                .max();
            if let Some(inherited) = inherited {
                priority[node as usize] = priority[node as usize].max(inherited);
            }
        }
        let mut failed = Vec::new();
        let nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                let index = index as u32;
                let own = priority[index as usize];
                let (work, label) = match spec.task {
                    Task::Cache(task, key) => (NodeWork::Cache(task, key), NodeLabel::Cache(task)),
                    Task::File(request) => {
                        let stage = request.stage;
                        let request = request.priority(own);
                        let slot = || AnswerSlot::for_dag_node(NodeRef { run, node: index });
                        let label = |path| NodeLabel::File { path, stage };
                        // Kept for the label of a node that fails here.
                        let path = request.path.clone();
                        match self.prepare(request, false, &slot) {
                            Ok(Preparation::Queue(prepared)) => {
                                let path = DepPath::Canonical(prepared.canonical);
                                (NodeWork::File(Some(Box::new(prepared))), label(path))
                            }
                            Ok(Preparation::Answered(_)) => {
                                unreachable!("a request prepared with may_answer = false is queued")
                            }
                            Err(error) => {
                                failed.push((index, error));
                                (NodeWork::File(None), label(path))
                            }
                        }
                    }
                };
                RunNode::new(
                    work,
                    label,
                    own,
                    pending[index as usize],
                    spec.options.cancel,
                    spec.options.limit,
                    spec.options.context,
                )
            })
            .collect();
        PreparedDag {
            nodes,
            downstream,
            failed,
        }
    }

    /// Under the lock, at the end of a hold: routes the answers DAG nodes
    /// got in it, then hands held nodes to the stages while the ready queue
    /// has room, until neither gives more. What a handed node is answered
    /// with at once is routed in the same loop.
    pub(crate) fn settle_dags(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) {
        loop {
            let routed = Self::route_dag_answers(locked, post);
            let handed = self.hand_over(locked, post);
            if !routed && !handed && !post.has_dag_answers() {
                Self::release_answers(locked, post);
                return;
            }
        }
    }

    /// Under the lock: routes the answers DAG nodes got in this hold so far
    /// to their runs (the runs answered whole leave as post-work). Returns
    /// whether there were any.
    pub(super) fn route_dag_answers(locked: &mut Locked<E>, post: &mut PostWork<E>) -> bool {
        let answers = post.take_dag_answers();
        let routed = !answers.is_empty();
        for (node, result) in answers {
            let done = locked.dags.answer(node, result.map(NodeOutput::Stage));
            post.dags_answered(done);
        }
        routed
    }

    /// Whether `settle_dags` has anything to do at the end of a hold.
    pub(crate) fn dags_unsettled(&self, locked: &Locked<E>, post: &PostWork<E>) -> bool {
        post.has_dag_answers()
            || locked.dags.has_released()
            || (locked.dags.has_held() && Self::depth(locked) < self.config.max_ready_queue_depth)
    }

    /// Hands the answers the DAG state let go of to the post-work, which
    /// drops them after the lock: they may hold the host's outputs.
    fn release_answers(locked: &mut Locked<E>, post: &mut PostWork<E>) {
        if locked.dags.has_released() {
            post.discard(locked.dags.take_released());
        }
    }

    /// Hands held nodes to the stages while the ready queue has room;
    /// returns whether it handed any.
    fn hand_over(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> bool {
        let mut handed = false;
        while Self::depth(locked) < self.config.max_ready_queue_depth {
            let Some(node) = locked.dags.pop_held() else {
                break;
            };
            let Some(spec) = locked.dags.node(node) else {
                continue;
            };
            if spec
                .cancel
                .as_ref()
                .is_some_and(verter_dag::CancellationToken::is_cancelled)
            {
                let done = locked.dags.answer(node, Err(RequestError::Cancelled));
                post.dags_answered(done);
                continue;
            }
            if !locked.dags.take_permit(node) {
                continue;
            }
            handed = true;
            let spec = locked.dags.node(node).expect("checked above");
            match &spec.work {
                NodeWork::Cache(task, key) => {
                    let identity = task.identity();
                    let priority = spec.priority;
                    let context = spec.context.clone();
                    let key = key.clone();
                    self.hand_cache_node(locked, post, node, identity, priority, (context, key));
                }
                NodeWork::File(_) => {
                    let prepared = locked.dags.take_prepared(node);
                    locked.dags.handed(node);
                    match prepared {
                        Some(prepared) => {
                            if let Some(registering) =
                                self.apply(locked, prepared, post, &mut Publish::Own, None)
                            {
                                self.register(locked, registering, post);
                            }
                        }
                        None => {
                            debug_assert!(false, "a held file node has its request");
                        }
                    }
                }
            }
        }
        handed
    }

    /// Answers `node` from its memo when the memo was computed from the
    /// values its upstream nodes gave now (and for an equal key); else
    /// joins its identity's flight when that flight's run got the same
    /// values (a joiner at a higher priority raises the flight), waits
    /// parked for a flight that got others, or starts the flight: a cache
    /// work node the DAG admits at `priority`.
    fn hand_cache_node(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        node: NodeRef,
        identity: WorkNodeIdentity,
        priority: Priority,
        (context, key): (
            Option<crate::host_dag::RequestContext>,
            Option<crate::traits::CacheKey>,
        ),
    ) {
        if let Some(hit) = locked.dags.memo_hit(node, &identity, key.as_ref()) {
            self.counters
                .cache_memo_hits
                .fetch_add(1, Ordering::Relaxed);
            locked.dags.handed(node);
            let done = locked.dags.answer_from_memo(node, hit);
            post.dags_answered(done);
            return;
        }
        // Copied out for the flight's run (or its comparison with one).
        let upstream = locked.dags.upstream_answers(node);
        let revisions = upstream.revisions.as_deref();
        match locked
            .dags
            .find_flight(&identity, node, key.as_ref(), revisions)
        {
            FlightFound::Joined => {
                locked.dags.handed(node);
                if locked
                    .dag
                    .priority_of(&identity)
                    .is_some_and(|running_at| running_at < priority)
                {
                    locked.dag.raise_priority(&identity, priority);
                }
                post.discard(upstream.values);
                return;
            }
            FlightFound::Parked => {
                post.discard(upstream.values);
                return;
            }
            FlightFound::None => locked.dags.handed(node),
        }
        // A finished node of an earlier flight the DAG still holds (after
        // an internal error) would be taken for this one.
        locked.dag.forget_cache_node(&identity);
        match locked.dag.submit_cache_node(identity, priority, []) {
            Ok(effects) => {
                locked
                    .dags
                    .start_flight(identity, node, context, key, upstream);
                self.absorb(locked, effects, post);
            }
            Err(error) => {
                debug_assert!(false, "a cache node without dependencies links: {error}");
                self.counters
                    .internal_errors
                    .fetch_add(1, Ordering::Relaxed);
                let (path, _) = crate::dag_types::cache_error_names(&identity);
                let done = locked.dags.answer(
                    node,
                    Err(RequestError::Internal {
                        path,
                        message: format!("admitting the cache node failed: {error}").into(),
                    }),
                );
                post.dags_answered(done);
            }
        }
    }

    /// Under the lock: the flight of `identity` landed with `outcome`
    /// (its dispatch was current; `unchanged` when its run found its value
    /// equal to the memo's): the DAG forgets the work node, the memo keeps
    /// the value, and every member is answered.
    pub(crate) fn land_flight(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        identity: &WorkNodeIdentity,
        outcome: Result<NodeOutput<E>, RequestError>,
        unchanged: bool,
    ) {
        locked.dag.forget_cache_node(identity);
        let (done, update) = locked
            .dags
            .land(identity, outcome, unchanged, &mut locked.revisions);
        if update.unchanged {
            self.counters
                .cache_memo_cutoffs
                .fetch_add(1, Ordering::Relaxed);
        }
        if update.evicted > 0 {
            self.counters
                .cache_memo_evictions
                .fetch_add(update.evicted as u64, Ordering::Relaxed);
        }
        post.dags_answered(done);
    }

    /// Under the lock: cancels `run`'s unanswered nodes; a flight nobody
    /// waits for any more is cancelled in the DAG (its token too).
    fn cancel_run(&self, locked: &mut Locked<E>, post: &mut PostWork<E>, run: u64) {
        let (orphaned, done) = locked.dags.cancel(run);
        for identity in orphaned {
            let effects = locked.dag.cancel(&identity);
            self.absorb(locked, effects, post);
        }
        post.dags_answered(done);
    }

    /// Forgets the memos of the cache nodes of `cache` (of every cache with
    /// `None`), so that each runs again the next time a DAG asks for it:
    /// for a host whose cache node reads something the scheduler does not
    /// see (docs/design.md, "Cache nodes"). Flights in progress are left
    /// alone; what they land is memoized as usual. Returns how many memos
    /// it forgot.
    pub fn forget_cache_memos(&self, cache: Option<verter_dag::SchedulerCacheId>) -> usize {
        self.transact(|locked, post| {
            let forgot = locked.dags.forget_memos(cache);
            Self::release_answers(locked, post);
            forgot
        })
    }

    /// Waits until every output this scheduler queued for its output store
    /// is written, durably (`OutputStore::sync`), or dropped after a
    /// failure the counters report: a scheduler opened on the store
    /// afterwards reads them, also after a crash. Does nothing without a
    /// store. Writes happen in the background otherwise, and the
    /// scheduler's shutdown and drop flush and sync them too.
    pub fn flush_store(&self) {
        if let Some(persist) = &self.persist {
            persist.flush();
        }
    }

    /// Reads one of the output store's counters (zero without a store).
    pub(crate) fn persisted(
        &self,
        counter: impl FnOnce(&crate::persist::PersistCounters) -> &std::sync::atomic::AtomicU64,
    ) -> u64 {
        self.persist.as_ref().map_or(0, |persist| {
            counter(&persist.counters).load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// How many cache nodes' memos the scheduler keeps now.
    pub fn cache_memos(&self) -> usize {
        self.read_locked(|locked| locked.dags.memos())
    }

    /// Under the lock: cancels every DAG (reset, teardown).
    pub(crate) fn cancel_all_dags(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) {
        for run in locked.dags.run_ids() {
            self.cancel_run(locked, post, run);
        }
        Self::release_answers(locked, post);
        debug_assert_eq!(locked.dags.flights(), 0, "every flight had a member");
    }
}

impl<E: StageExecutor> CancelDag for Scheduler<E> {
    fn cancel_dag(&self, run: u64, dropped: bool) {
        self.transact(|locked, post| {
            post.act(|| HostAction::CancelledDag { dag: run, dropped });
            self.cancel_run(locked, post, run);
        });
    }
}
