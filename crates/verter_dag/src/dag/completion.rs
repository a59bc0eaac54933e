//! `SchedulerDag`: Dispatch, completion, failure, cancellation and observation.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants.

use super::*;

/// How a dispatch reserves capacity (see `CapacityLedger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reserve {
    /// Against the budget.
    Budgeted,
    /// Beyond the budget, on a blocked holder's idle slot.
    Lent,
    /// Outside the budget, for a thread that holds a budgeted reservation.
    Batched,
}

impl<P> SchedulerDag<P> {
    /// Takes the next ready work of `class` by weighted round robin across
    /// priority lanes, reserving one unit of `class` capacity for it. `None`
    /// when nothing is ready or the budget is spent.
    pub fn dequeue_ready(&mut self, class: ResourceClass) -> Option<Dispatch> {
        if !self.ledger.has_room(class) {
            return None;
        }
        self.take_ready(class, Reserve::Budgeted)
    }

    /// Like [`Self::dequeue_ready`], but ignores the budget: for a thread that
    /// holds a reservation and is blocked inside its work waiting on other
    /// work. It lends its own idle slot to the work it runs inline, so the
    /// number of threads actually running stays within the budget even though
    /// the ledger shows one more reservation. The reservation is released
    /// exactly once, like any other.
    pub fn dequeue_ready_lent(&mut self, class: ResourceClass) -> Option<Dispatch> {
        self.take_ready(class, Reserve::Lent)
    }

    /// Like [`Self::dequeue_ready`], for a thread that holds a budgeted
    /// reservation and will run this work after its own, one job after
    /// another: the reservation is held and released like any other, but it
    /// is not counted against the budget (the thread is counted once), so
    /// other threads keep their room. The caller must hold a budgeted
    /// reservation of `class` from the same hold.
    pub fn dequeue_ready_batched(&mut self, class: ResourceClass) -> Option<Dispatch> {
        self.take_ready(class, Reserve::Batched)
    }

    /// Pops the next ready work of `class` and reserves capacity for it as
    /// `reserve` says.
    pub(super) fn take_ready(
        &mut self,
        class: ResourceClass,
        reserve: Reserve,
    ) -> Option<Dispatch> {
        let pick = self.ready.pick(class)?;
        let priority = pick.priority();
        let mut spare = self.spare_tokens.pop();
        // Entries whose work left the queue or moved lanes are skipped.
        let (identity, admission, cancel, ticket) = loop {
            let (ticket, identity) = self.ready.next_entry(pick);
            let Some(node) = self.node_mut_opt(&identity) else {
                continue;
            };
            if !node.ready_as(ticket) {
                continue;
            }
            node.state = NodeState::Running;
            let admission = node.admission;
            let cancel = node
                .cancel
                .get_or_insert_with(|| spare.take().unwrap_or_default())
                .clone();
            break (identity, admission, cancel, ticket);
        };
        self.ready.taken(pick);
        // A node that already has one (none does today: a move to the other
        // budget gives it back) keeps it.
        if let Some(unused) = spare {
            self.spare_tokens.push(unused);
        }
        let reserved = match reserve {
            Reserve::Budgeted => self.ledger.reserve(class),
            Reserve::Lent => self.ledger.reserve_lent(class),
            Reserve::Batched => self.ledger.reserve_batched(class),
        };
        self.counters.dequeued += 1;
        Some(Dispatch {
            identity,
            admission,
            class,
            priority,
            cancel,
            reserved,
            ticket,
            instance: self.instance,
        })
    }

    /// Whether `dispatch` is still the current admission of live work: the
    /// carried identity and admission are compared with the resident node,
    /// and file work's object must be live at the carried version. A
    /// dispatch another DAG made (one this DAG succeeded) is never current.
    pub fn is_current(&self, dispatch: &Dispatch) -> bool {
        dispatch.instance == self.instance && self.current_node(dispatch).is_some()
    }

    /// Whether `dispatch` was made by another DAG, one this DAG succeeded
    /// ([`Self::successor`]): then it is refused and counted, and its
    /// reservation, which was never this ledger's, is not released.
    #[inline]
    fn refuse_foreign(&mut self, dispatch: &Dispatch) -> bool {
        if dispatch.instance == self.instance {
            return false;
        }
        self.counters.stale_completion_refusals += 1;
        true
    }

    /// Moves running work to the other budget (Source: loaded on I/O, parsed
    /// on CPU): releases its reservation and makes it ready in `class`. A
    /// stale dispatch is refused (its reservation is released and counted);
    /// so is one another DAG made ([`Self::successor`]), whose reservation
    /// is not this ledger's.
    pub fn continue_on(&mut self, dispatch: Dispatch, class: ResourceClass) -> Effects {
        let mut effects = Effects::default();
        if self.refuse_foreign(&dispatch) {
            return effects;
        }
        self.ledger.release(dispatch.reserved);
        let ticket = self.ready.issue();
        let Some(node) = self.current_node_mut(&dispatch) else {
            self.counters.stale_completion_refusals += 1;
            return effects;
        };
        node.class = class;
        let (_, priority) = node.set_ready(ticket);
        // Nothing runs while it waits for the other budget: its token goes
        // back to the spares (if nobody kept a clone), and its next dispatch
        // takes one. A file waiting for a CPU slot holds none, so a large
        // cold build does not make a token per file.
        let token = node.cancel.take();
        let Dispatch {
            identity, cancel, ..
        } = dispatch;
        drop(cancel);
        // Behind the work already waiting for the budget: a move between
        // budgets keeps admission order (loads finish in any order).
        self.enqueue_ready(identity, class, priority, ticket, Place::Back);
        self.spare(token);
        effects.newly_ready += 1;
        effects
    }

    /// Completes `dispatch`. Its reservation is released in every case
    /// (but a dispatch another DAG made, [`Self::successor`], which is
    /// refused and holds none of this ledger's). If
    /// it is current, the work is done: its group is answered `Ok`, and
    /// consumers whose last dependency it was become ready. If it is stale,
    /// nothing is published or consumed; the refusal is counted and the
    /// flag is `false` (the sweep that made it stale already moved or
    /// answered its waiters).
    pub fn complete(&mut self, dispatch: Dispatch) -> (bool, Effects) {
        let mut effects = Effects::default();
        if self.refuse_foreign(&dispatch) {
            return (false, effects);
        }
        self.ledger.release(dispatch.reserved);
        let token = match &dispatch.identity {
            WorkNodeIdentity::File(key) => {
                let Some(finished) = self.finish_file_node(key, &dispatch) else {
                    self.counters.stale_completion_refusals += 1;
                    return (false, effects);
                };
                effects
                    .answers
                    .extend(finished.group.into_iter().map(|member| Answer {
                        waiter: member.waiter,
                        key: *key,
                        outcome: Ok(()),
                    }));
                self.release_waiters(finished.waiters, &mut effects);
                finished.token
            }
            WorkNodeIdentity::CacheNode { .. } => {
                let Some(node) = self.current_node_mut(&dispatch) else {
                    self.counters.stale_completion_refusals += 1;
                    return (false, effects);
                };
                node.state = NodeState::Done;
                node.cancel.take()
            }
        };
        self.counters.completed += 1;
        // With the dispatch's clone gone, a token nobody else kept (the
        // executor may have) goes to the next dispatch instead of the heap.
        drop(dispatch);
        self.spare(token);
        (true, effects)
    }

    /// Keeps `token` for a later dispatch if nobody else holds a clone and
    /// the spares are not full; drops it otherwise. The caller dropped its
    /// dispatch's clone first.
    #[inline]
    fn spare(&mut self, token: Option<CancellationToken>) {
        if let Some(token) = token
            && token.is_reusable()
            && self.spare_tokens.len() < SPARE_TOKENS
        {
            self.spare_tokens.push(token);
        }
    }

    /// Fails `dispatch` with the work's own `cause`. Its reservation is
    /// released in every case (as in [`Self::complete`]). If current, the
    /// node stays resident as a terminal failure until its generation is
    /// retired; its group is answered with the failure and every consumer
    /// fails with `DependencyFailed` (transitively). A stale failure is
    /// refused like a stale completion.
    pub fn fail(&mut self, dispatch: Dispatch, cause: FailureCause) -> (bool, Effects) {
        let mut effects = Effects::default();
        if self.refuse_foreign(&dispatch) {
            return (false, effects);
        }
        self.ledger.release(dispatch.reserved);
        let failure = Arc::new(DagFailure::Failed {
            work: dispatch.identity,
            cause,
        });
        let Some(node) = self.current_node_mut(&dispatch) else {
            self.counters.stale_completion_refusals += 1;
            return (false, effects);
        };
        node.state = NodeState::Failed(Arc::clone(&failure));
        self.counters.failed += 1;
        if let WorkNodeIdentity::File(key) = &dispatch.identity {
            self.answer_group(key, Err((*failure).clone()), &mut effects);
            self.fail_consumers(key, &failure, &mut effects);
        }
        (true, effects)
    }

    /// Cancels admitted work that has not finished: its waiters are answered
    /// `Cancelled`, its consumers fail with `DependencyFailed`, and the node
    /// is dropped so a later request admits it afresh. Running work is
    /// abandoned (its result will be refused). Done or failed work, and
    /// unknown identities, are left alone.
    pub fn cancel(&mut self, identity: &WorkNodeIdentity) -> Effects {
        let mut effects = Effects::default();
        let Some(node) = self.node(identity) else {
            return effects;
        };
        if node.is_finished() {
            return effects;
        }
        let failure = Arc::new(DagFailure::Cancelled);
        self.drop_node(identity, &mut effects);
        if let WorkNodeIdentity::File(key) = identity {
            self.answer_group(key, Err(DagFailure::Cancelled), &mut effects);
            self.fail_consumers(key, &failure, &mut effects);
        }
        effects
    }

    /// Withdraws request `waiter` from the group of `stage` of `canonical`'s
    /// live version (its host cancelled it, or dropped every handle to it):
    /// the waiter is answered `Cancelled`, and the work nothing else wants
    /// any more is cancelled — that stage's node, unless another request
    /// or a consumer still waits on it, then each of its dependencies by
    /// the same rule. (A blocker record is no waiter: the Analysis it names
    /// is admitted again when an Artifact of its owner is.) Queued work leaves the ready queue;
    /// running work has its token cancelled and is reported abandoned (its
    /// result will be refused); finished work stays. `None`, changing
    /// nothing, when the waiter is not in that group (answered already).
    pub fn withdraw(
        &mut self,
        canonical: &Canonical,
        stage: TargetStage,
        waiter: WaiterId,
    ) -> Option<Effects> {
        let key = self.live_file(canonical)?.at(stage);
        let slot = self.stage_slot_mut(&key)?;
        let at = slot
            .group
            .iter()
            .position(|member| member.waiter == waiter)?;
        slot.group.remove(at);
        if slot.group.is_empty() {
            self.group_count -= 1;
        }
        self.waiter_count -= 1;
        self.prune(&key);
        self.counters.withdrawn += 1;
        let mut effects = Effects::default();
        effects.answers.push(Answer {
            waiter,
            key,
            outcome: Err(DagFailure::Cancelled),
        });
        self.drop_unwanted(vec![key], true, &mut effects);
        Some(effects)
    }

    /// Cancels the unfinished work of `keys` that nothing wants any more
    /// (no request waits on it and no consumer is gated on it), then each
    /// of its dependencies by the same rule. Finished work stays, and so
    /// does a running Source unless `running_too`: a Source's commit
    /// records its file's dependencies before it completes, and that can
    /// find its own Source unwanted (its Artifact failed on a cycle), which
    /// must still complete. Only a withdrawal, which commits nothing,
    /// cancels a running Source.
    pub(super) fn drop_unwanted(
        &mut self,
        mut pending: Vec<DepKey>,
        running_too: bool,
        effects: &mut Effects,
    ) {
        while let Some(key) = pending.pop() {
            let identity = WorkNodeIdentity::File(key);
            let wanted = self.node(&identity).is_none_or(|node| {
                node.is_finished()
                    || (!running_too
                        && key.stage == TargetStage::Source
                        && matches!(node.state, NodeState::Running))
            }) || self.group(&key).is_some()
                || !self.waiters_of(&key).is_empty();
            if wanted {
                continue;
            }
            let deps = self.deps_of(&identity);
            self.drop_node(&identity, effects);
            pending.extend(deps);
        }
    }

    /// Forgets done work whose output the caller stopped serving (e.g. an
    /// artifact the host evicted), so the next request admits it afresh.
    /// Returns whether `identity` was resident and done; anything else is
    /// left alone.
    pub fn forget_done(&mut self, identity: &WorkNodeIdentity) -> bool {
        if !self.is_done(identity) {
            return false;
        }
        let mut effects = Effects::default();
        self.drop_node(identity, &mut effects);
        debug_assert!(effects.is_empty(), "done work has no running dispatch");
        true
    }

    /// Forgets a finished (done or failed) cache node, so its table does
    /// not keep every node a host ever ran and a later submission of the
    /// identity admits it afresh. The caller took its answer in the same
    /// hold. Returns whether `identity` was a resident, finished cache
    /// node; anything else is left alone.
    pub fn forget_cache_node(&mut self, identity: &WorkNodeIdentity) -> bool {
        if !matches!(identity, WorkNodeIdentity::CacheNode { .. })
            || !self.node(identity).is_some_and(WorkNode::is_finished)
        {
            return false;
        }
        let mut effects = Effects::default();
        self.drop_node(identity, &mut effects);
        debug_assert!(
            effects.answers.is_empty() && effects.newly_ready == 0,
            "a finished cache node has no waiters and no running dispatch"
        );
        true
    }

    // ----- observation ----------------------------------------------------

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.ledger.snapshot()
    }

    /// Ready work per priority lane of `class`, `Low` first. O(1).
    pub fn pending_counts(&self, class: ResourceClass) -> [usize; 4] {
        self.ready.pending_counts(class)
    }

    /// Ready work of `class`. O(1).
    pub fn ready_len(&self, class: ResourceClass) -> usize {
        self.ready.len(class)
    }

    /// What the DAG has done so far.
    pub fn counters(&self) -> DagCounters {
        self.counters
    }

    /// Whether `identity` is resident and done.
    pub fn is_done(&self, identity: &WorkNodeIdentity) -> bool {
        matches!(self.node(identity).map(|n| &n.state), Some(NodeState::Done))
    }

    /// The terminal failure of `identity`, if it is resident and failed.
    pub fn failure_of(&self, identity: &WorkNodeIdentity) -> Option<Arc<DagFailure>> {
        match &self.node(identity)?.state {
            NodeState::Failed(failure) => Some(Arc::clone(failure)),
            _ => None,
        }
    }

    /// Whether `identity` is admitted (in any state).
    pub fn is_admitted(&self, identity: &WorkNodeIdentity) -> bool {
        self.has_node(identity)
    }

    /// The effective priority of admitted `identity`.
    pub fn priority_of(&self, identity: &WorkNodeIdentity) -> Option<Priority> {
        self.node(identity).map(|n| n.priority)
    }

    /// The highest priority of any admitted work or waiting request of
    /// `canonical`, read from its own index only.
    pub fn highest_priority_for_file(&self, canonical: &Canonical) -> Option<Priority> {
        let records = self.files.get(canonical)?;
        let mut best: Option<Priority> = None;
        for (_, stage) in records.stages.iter() {
            best = best.max(stage.node.as_ref().map(|node| node.priority));
            best = best.max(stage.group.iter().map(|m| m.priority).max());
        }
        best
    }

    /// Request waiters registered on `key`.
    pub fn waiters_on(&self, key: &DepKey) -> usize {
        self.group(key).map_or(0, <[Member]>::len)
    }

    /// Consumers gated on `key`, in link order.
    pub fn consumers_of(&self, key: &DepKey) -> Vec<WorkNodeIdentity> {
        self.waiters_of(key)
    }

    /// Dependencies `consumer` still waits on.
    pub fn dependencies_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        let mut deps = self.deps_of(consumer);
        deps.sort();
        deps
    }

    /// The blocker registry's counts, with the records' own: owners and
    /// their vectors' capacity (a walk of the file records).
    fn blocker_occupancy(&self) -> crate::blockers::BlockerOccupancy {
        let mut occupancy = self.blockers.occupancy();
        for records in self.files.values() {
            if !records.blockers.is_empty() {
                occupancy.owners += 1;
                occupancy.capacity += records.blockers.capacity();
            }
        }
        occupancy
    }

    /// Membership counts and backing capacity of edges, blockers, nodes and
    /// groups. Every membership count is zero after [`Self::reset`].
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        debug_assert_eq!(
            self.node_count,
            self.all_nodes().count(),
            "node count drifted"
        );
        debug_assert_eq!(
            self.group_count,
            self.all_groups().count(),
            "group count drifted"
        );
        debug_assert_eq!(
            self.waiter_count,
            self.all_groups()
                .map(|(_, group)| group.len())
                .sum::<usize>(),
            "waiter count drifted"
        );
        #[cfg(debug_assertions)]
        {
            let mut recount: crate::hash::HashMap<DepKey, usize> = Default::default();
            for records in self.files.values() {
                for key in &records.blockers {
                    *recount.entry(*key).or_insert(0) += 1;
                }
            }
            debug_assert_eq!(
                self.blockers.indexed_demand(),
                recount,
                "the blocker demand index drifted from the records"
            );
        }
        #[cfg(debug_assertions)]
        for class in ResourceClass::ALL {
            let mut recount = [0; Priority::ALL.len()];
            for (_, node) in self.all_nodes() {
                if matches!(node.state, NodeState::Ready) && node.class == class {
                    recount[node.priority.lane()] += 1;
                }
            }
            debug_assert_eq!(
                self.ready.pending_counts(class),
                recount,
                "ready counts of {class:?} drifted from the ready nodes"
            );
        }
        DependencyOccupancy {
            edges: self.edge_occupancy(),
            blockers: self.blocker_occupancy(),
            nodes: self.node_count,
            groups: self.group_count,
            waiters: self.waiter_count,
            files: self.files.len(),
            ready: self.ready.total_len(),
            ready_backing: self.ready.backing_entries(),
        }
    }
}
