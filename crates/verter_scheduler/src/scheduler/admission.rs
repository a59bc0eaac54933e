//! `Scheduler`: Admission under the lock: draining the inbox in order, creating objects (their nodes are published by `publication`), and carrying out what the DAG decided (`absorb`).
//!
//! A large atomic batch is admitted in two phases: its edits in the hold
//! that takes it, its registrations queued under the lock and made a chunk
//! per later hold (docs/design.md, "Chunked admission"). Only
//! `register_queued` takes registrations off that queue, under the lock,
//! besides teardown, which answers them `Shutdown`, and a recovered hold,
//! which answers them `Internal`
//! (`queued_registrations_are_taken_only_by_register_queued_teardown_and_recovery`).
//! A write or a lifecycle call makes every queued registration first.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;

use std::collections::VecDeque;

use super::publication::Publish;
use crate::cutoff::Priors;
use crate::fault::hold_fault;
use crate::state::Registering;

impl<E: StageExecutor> Scheduler<E> {
    /// Admits every item in the inbox, up to 64 per lock hold, and makes
    /// every registration large batches left, up to
    /// `SchedulerConfig::registrations_per_hold` per hold. Returns how many
    /// items and registrations it admitted.
    pub(crate) fn drain_inbox(&self) -> usize {
        self.drain(usize::MAX)
    }

    /// [`Self::drain_inbox`], making queued registrations in at most
    /// `chunks` holds: an inline pump pass makes one chunk, then runs a
    /// stage, as stage threads would run between the driver's holds.
    pub(crate) fn drain(&self, mut chunks: usize) -> usize {
        let mut admitted = 0;
        loop {
            // Every pump pass drains: skip the lock when there is nothing to
            // take (an item sent after this check wakes a pump of its own).
            // Queued registrations are counted as pending admissions.
            if self.inbox.is_empty()
                && (chunks == 0 || self.counters.pending_admissions.load(Ordering::Acquire) == 0)
            {
                return admitted;
            }
            let register = chunks > 0;
            let n = self.transact(|locked, post| {
                let items = self.admit_pending(locked, post, 64);
                let registered = if register {
                    self.register_queued(locked, post, self.config.registrations_per_hold)
                } else {
                    0
                };
                items + registered
            });
            if n == 0 {
                return admitted;
            }
            chunks = chunks.saturating_sub(1);
            admitted += n;
        }
    }

    /// Under the lock: admits what was sent before this call — exactly the
    /// items in each lane when it starts, urgent lane first — and nothing
    /// that arrives meanwhile (concurrent with the call, so it needs no
    /// order), so a lifecycle call's hold is bounded by the inbox's capacity
    /// even while a busy sender keeps refilling it; then makes every
    /// queued registration. A caller that reads its own writes finds all
    /// of them admitted.
    pub(crate) fn admit_sent(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> usize {
        let (urgent, normal) = self.inbox.lens();
        let requests = self.admit_lane(locked, post, Lane::Urgent, urgent)
            + self.admit_lane(locked, post, Lane::Normal, normal);
        self.settle_admitted(locked, requests);
        self.register_queued(locked, post, usize::MAX);
        urgent + normal
    }

    /// Under the lock: admits what the urgent lane holds now. Any pump may
    /// take the urgent lane first: the inbox never puts an item there while
    /// a write it must follow waits in the normal lane (docs/design.md,
    /// "The inbox"). Returns how many items it admitted.
    pub(crate) fn admit_urgent(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> usize {
        let (urgent, _) = self.inbox.lens();
        let requests = self.admit_lane(locked, post, Lane::Urgent, urgent);
        self.settle_admitted(locked, requests);
        urgent
    }

    /// What a submitting thread runs after sending an urgent read: admits
    /// the urgent lane in one hold, then makes every registration that
    /// left queued, a chunk per hold. The urgent lane may hold a large
    /// atomic batch (sent behind an urgent write, which everything
    /// follows), and only inbox items wake the driver: registrations this
    /// thread queued and left behind would wait for the next item anyone
    /// sends (`an_urgent_admission_leaves_no_registration_queued`).
    pub(crate) fn admit_urgent_here(&self) {
        let queued = self.transact(|locked, post| {
            self.admit_urgent(locked, post);
            !locked.registering.is_empty()
        });
        if queued {
            while self.transact(|locked, post| {
                self.register_queued(locked, post, self.config.registrations_per_hold)
            }) > 0
            {}
        }
    }

    /// Under the lock, once the scheduler is shut down: answers every item
    /// in the inbox `Shutdown` (`admit_envelope` refuses them), until it
    /// is empty, and takes them off the pending count.
    pub(super) fn refuse_inbox(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) {
        debug_assert!(self.shut_down.load(Ordering::Relaxed));
        let mut requests = 0;
        while let Some(envelope) = self.inbox.try_recv() {
            requests += self.admit_envelope(locked, post, envelope);
        }
        self.settle_admitted(locked, requests);
    }

    /// Under the lock: admits up to `count` items of `lane`, in order;
    /// returns how many requests were admitted whole. The caller settles
    /// `pending_admissions`.
    fn admit_lane(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        lane: Lane,
        count: usize,
    ) -> usize {
        let mut requests = 0;
        for _ in 0..count {
            let Some(envelope) = self.inbox.try_recv_lane(lane) else {
                break;
            };
            requests += self.admit_envelope(locked, post, envelope);
        }
        requests
    }

    /// Takes `requests` just admitted (in this hold) off the pending count.
    /// Release: whatever those admissions published is visible to a fast
    /// path that sees the count drop.
    fn settle_admitted(&self, locked: &mut Locked<E>, requests: usize) {
        if requests > 0 {
            locked.unsettled -= requests;
            self.counters
                .pending_admissions
                .fetch_sub(requests, Ordering::Release);
        }
    }

    /// Under the lock: admits one inbox item and reports it admitted;
    /// returns how many of its requests were admitted whole (registered or
    /// answered) in this hold. The caller settles `pending_admissions`.
    ///
    /// A write is never admitted ahead of a queued registration: those
    /// were sent before it, so they are made first.
    fn admit_envelope(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        envelope: crate::inbox::Envelope<Submission<E>>,
    ) -> usize {
        let (item, receipt) = envelope.open();
        // Reported once the item is admitted, not before: lock-free readers
        // take a write as admitted once no write waits
        // (`Inbox::writes_waiting`). Kept under the lock meanwhile, so a
        // hold that breaks reports it too and leaves no lane pinned.
        let outer = locked.receipt.replace(receipt);
        debug_assert!(outer.is_none(), "one envelope is admitted at a time");
        // Pending until settled (the caller does, at the end of the hold's
        // admissions); a recovered hold settles them itself.
        locked.unsettled += item.len();
        if self.shut_down.load(Ordering::Relaxed) {
            // Shut down (docs/design.md, "Shutdown"): nothing is admitted
            // any more; every request is answered.
            let requests = item.len();
            for prepared in item.into_items() {
                post.answer(
                    prepared.slot,
                    Err(RequestError::Shutdown {
                        path: prepared.canonical,
                    }),
                );
            }
            if let Some(receipt) = locked.receipt.take() {
                self.inbox.admitted(receipt);
            }
            return requests;
        }
        if !locked.registering.is_empty() && item.is_write() {
            self.register_queued(locked, post, usize::MAX);
        }
        let settled = match item {
            Submission::One(prepared) => {
                self.admit(locked, prepared, post, &mut Publish::Own);
                1
            }
            // One source-root transition for the whole batch: its updates
            // supersede every file's old text at once for root readers too.
            Submission::Batch { items: batch, .. }
                if batch.len() <= self.config.registrations_per_hold =>
            {
                let requests = batch.len();
                self.source_root.publish_transition(|tx| {
                    let mut publish = Publish::Batch(tx);
                    for prepared in batch {
                        self.admit(locked, prepared, post, &mut publish);
                    }
                });
                requests
            }
            Submission::Batch { items, new_files } => {
                self.admit_large_batch(locked, items, new_files, post)
            }
        };
        if let Some(receipt) = locked.receipt.take() {
            self.inbox.admitted(receipt);
        }
        settled
    }

    /// Under the lock: applies a large atomic batch's edits in order, in one
    /// source-root transition, and queues its registrations for later holds
    /// (docs/design.md, "Chunked admission"). Each queued registration
    /// names the version its own request's edits left live, so it is made
    /// as it would have been in this hold. Before an edit to a file whose
    /// registration is still queued, every queued registration is made:
    /// they come before that edit. Returns how many requests were answered
    /// here instead of queued.
    fn admit_large_batch(
        &self,
        locked: &mut Locked<E>,
        batch: Vec<Prepared<E>>,
        new_files: usize,
        post: &mut PostWork<E>,
    ) -> usize {
        // Batch numbers skip 0, which marks a node no batch stamped.
        locked.large_batches = locked.large_batches.wrapping_add(1).max(1);
        let number = locked.large_batches;
        locked.registering.reserve_exact(batch.len());
        let mut answered = 0;
        self.source_root.publish_transition(|tx| {
            tx.reserve(new_files, batch.len());
            let mut publish = Publish::Batch(tx);
            for prepared in batch {
                match self.apply(locked, prepared, post, &mut publish, Some(number)) {
                    Some(registering) => {
                        // Queued: counted pending until it is registered.
                        locked.unsettled -= 1;
                        locked.registering.push_back(registering);
                    }
                    None => answered += 1,
                }
            }
        });
        answered
    }

    /// Under the lock: makes up to `max` queued registrations, oldest
    /// first, and takes them off the pending count. Returns how many.
    pub(crate) fn register_queued(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        max: usize,
    ) -> usize {
        let mut made = 0;
        while made < max {
            let Some(registering) = locked.registering.pop_front() else {
                break;
            };
            locked.unsettled += 1;
            self.register(locked, registering, post);
            made += 1;
        }
        self.counters
            .queued_registrations
            .fetch_add(made as u64, Ordering::Relaxed);
        if made > 0 && locked.registering.is_empty() {
            // The queue held a whole batch: give that capacity back.
            locked.registering = VecDeque::new();
        }
        self.settle_admitted(locked, made);
        made
    }

    /// Under the lock: takes up to `max` items out of the inbox (the urgent
    /// lane first) and admits them, in order, in this hold. Taking an item
    /// and admitting it in one hold, and the inbox's lane rule, are what
    /// keep every sender's submissions in their order.
    pub(crate) fn admit_pending(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        max: usize,
    ) -> usize {
        let mut items = 0;
        let mut requests = 0;
        while items < max {
            let Some(envelope) = self.inbox.try_recv() else {
                break;
            };
            items += 1;
            requests += self.admit_envelope(locked, post, envelope);
        }
        self.settle_admitted(locked, requests);
        items
    }

    /// Admission under the lock, its source-root changes recorded through
    /// `publish`: its edits, then its registration. See the module docs.
    pub(super) fn admit(
        &self,
        locked: &mut Locked<E>,
        prepared: Prepared<E>,
        post: &mut PostWork<E>,
        publish: &mut Publish<'_, '_>,
    ) {
        if let Some(registering) = self.apply(locked, prepared, post, publish, None) {
            self.register(locked, registering, post);
        }
    }

    /// Under the lock: steps 1–3 of admission (module docs): revalidate or
    /// create the object, re-home it, apply new text. Returns the
    /// registration still to make, or `None` when the request was answered.
    ///
    /// With `queuing = Some(batch)`, the caller queues the registration:
    /// the object is stamped with the batch, and a write to an object the
    /// batch already stamped first makes every queued registration.
    pub(super) fn apply(
        &self,
        locked: &mut Locked<E>,
        mut prepared: Prepared<E>,
        post: &mut PostWork<E>,
        publish: &mut Publish<'_, '_>,
        queuing: Option<u32>,
    ) -> Option<Registering<E>> {
        let canonical = prepared.canonical;
        let _span =
            tracing::trace_span!("admit", path = %canonical, stage = %prepared.stage).entered();
        // 1. Revalidate the lifetime, or ensure the object. A lifetime that
        //    ended (the file was removed or reset, and maybe added again
        //    since) answers `Shutdown`, with or without text.
        let published = locked
            .dag
            .payload(&canonical)
            .map(|slot| Arc::clone(&slot.node));
        // The text prepared with the node of a file this hold creates.
        let mut fresh_source = None;
        let (mut node, created) = match (prepared.lifetime, published) {
            (Some(lifetime), published)
                if published
                    .as_ref()
                    .is_none_or(|node| node.lifetime() != lifetime) =>
            {
                post.answer(
                    prepared.slot,
                    Err(RequestError::Shutdown { path: canonical }),
                );
                return None;
            }
            (_, Some(node)) => {
                if let Some(batch) = queuing
                    && node.queued_by() == batch
                    && prepared.is_write()
                {
                    self.register_queued(locked, post, usize::MAX);
                }
                (node, false)
            }
            (_, None) => {
                let (object, created) = locked.dag.ensure_object(&canonical);
                debug_assert!(created, "an unpublished canonical has no live object");
                // No entry in `languages`: only a blocker is ever ingested
                // again, and the parse that named it recorded its language.
                let node = match prepared.fresh.take() {
                    Some(Fresh { node, source }) => {
                        fresh_source = source;
                        self.publish_fresh(locked, &canonical, object, node)
                    }
                    None => {
                        self.publish_node(locked, &canonical, object, prepared.language.clone())
                    }
                };
                (node, created)
            }
        };
        // 2. Re-home the language: new object, same lifetime.
        if prepared.explicit_language && node.language() != &prepared.language {
            node = self.rehome(locked, &node, prepared.language.clone(), post, publish);
        }
        // 3. New text: bump the generation (with its sweep) unless the object
        //    was created by this very request or the text is unchanged; the
        //    empty view and the text are published in one transition.
        let mut live = if created {
            // The object this hold created, as the node was bound to it.
            FileIdentity::new(canonical, node.incarnation(), Generation::ZERO)
        } else {
            locked
                .dag
                .live_file(&canonical)
                .expect("the node is published, so its object is live")
        };
        debug_assert_eq!(locked.dag.live_file(&canonical).as_ref(), Some(&live));
        if let Some((text, hash)) = &prepared.text {
            let hash = *hash;
            // A version this request created has no text yet.
            let unchanged = !created && self.same_text_at_the_door(locked, &live, hash, text);
            if !unchanged {
                let mut swept = None;
                if !created {
                    match locked.dag.advance_generation(&canonical, live.incarnation) {
                        Ok((next, effects)) => {
                            live = next;
                            swept = Some(effects);
                        }
                        Err(ObjectError::Exhausted(_)) => {
                            post.answer(
                                prepared.slot,
                                Err(RequestError::GenerationExhausted { path: canonical }),
                            );
                            return None;
                        }
                        Err(other) => unreachable!("the live object was checked: {other}"),
                    }
                }
                // A created object's text was built when its request was
                // prepared; only its version is set here.
                let source = match fresh_source.take() {
                    Some(mut source) => {
                        source.version = live.version();
                        source
                    }
                    None => SourceText {
                        canonical,
                        version: live.version(),
                        text: Arc::clone(text),
                        hash,
                    },
                };
                let mut replaced = None;
                let mut slot = locked.dag.payload_mut(&canonical);
                publish.record(&self.source_root, |tx| {
                    if swept.is_some()
                        && let Some(slot) = slot.as_deref_mut()
                    {
                        replaced = Some(node.reset_view(&mut slot.view, live.generation));
                    }
                    present(tx, &source);
                });
                if let Some(slot) = slot {
                    if let Some(replaced) = replaced {
                        // What the old generation served is what the new
                        // one's stages are verified against.
                        Priors::keep_view(&mut slot.priors, &replaced, post);
                        post.discard_view(replaced);
                    }
                    slot.text = Some(KnownText {
                        text: source,
                        published: true,
                        from_loader: false,
                    });
                } else if let Some(replaced) = replaced {
                    post.discard_view(replaced);
                }
                post.act(|| HostAction::NewText { file: live });
                // Its Source needs no load: it starts on the CPU budget.
                locked.dag.note_text_known(&live);
                if let Some(effects) = swept {
                    self.absorb(locked, effects, post);
                }
                post.end_act();
            } else if let Some(known) = locked
                .dag
                .payload_mut(&canonical)
                .and_then(|slot| slot.text.as_mut())
                && !known.published
            {
                // The same text was loaded and waits to be parsed: the host
                // upserted it, so it reads it from now on (its Source commit
                // will not publish it again).
                known.published = true;
                known.from_loader = false;
                let source = known.text.clone();
                publish.record(&self.source_root, |tx| present(tx, &source));
            }
        }
        if let Some(batch) = queuing {
            node.set_queued_by(batch);
        }
        let policy = if prepared.text.is_some() {
            WaitPolicy::Pinned
        } else {
            WaitPolicy::Follow
        };
        Some(Registering {
            live,
            stage: prepared.stage,
            priority: prepared.priority,
            policy,
            slot: prepared.slot,
        })
    }

    /// Under the lock: step 4 of admission: registers the waiter on the
    /// version its edits left live (a follower moves on to a newer one),
    /// then admits its work.
    pub(super) fn register(
        &self,
        locked: &mut Locked<E>,
        registering: Registering<E>,
        post: &mut PostWork<E>,
    ) {
        let Registering {
            live,
            stage,
            priority,
            policy,
            slot,
        } = registering;
        slot.mark_admitted();
        if slot.state().is_withdrawn() {
            // Cancelled (or every handle dropped) before it was admitted:
            // answered at once, waiting on nothing, its edits applied.
            post.act(|| HostAction::Withdrew {
                key: live.at(stage),
                dropped: !slot.state().was_cancelled(),
            });
            self.counters.withdrawn.fetch_add(1, Ordering::Relaxed);
            post.answer(slot, Err(RequestError::Cancelled));
            post.end_act();
            return;
        }
        let registration = locked
            .dag
            .register_request(live.at(stage), policy, priority);
        if post.observed() {
            let dag = slot.dag_node().map(|node| node.run);
            post.act(|| HostAction::Requested {
                key: registration.key,
                waiter: registration.waiter.get(),
                dag,
            });
        }
        let withdrawn =
            registration.answered.is_none() && slot.state().registered(registration.waiter.get());
        let dropped = !slot.state().was_cancelled();
        locked.waiters.insert(registration.waiter, slot);
        if withdrawn {
            // Cancelled while it was being admitted: the cancellation found
            // no waiter yet and left it to this hold.
            let canonical = registration.key.file.canonical;
            self.withdraw_locked(
                locked,
                post,
                canonical,
                stage,
                registration.waiter,
                Some(dropped),
            );
            return;
        }
        if let Some(joiner) = registration.joiner {
            post.event(|| SchedulerEvent::DidJoin(joiner.key));
        }
        if let Some(answer) = registration.answered {
            let effects = Effects {
                answers: smallvec::smallvec![answer],
                ..Effects::default()
            };
            self.absorb(locked, effects, post);
            return;
        }
        // A test may break the hold here: the waiter is registered, its
        // work not admitted (`fault.rs`).
        hold_fault!(self, Admission);
        let identity = WorkNodeIdentity::File(registration.key);
        let effects = locked
            .dag
            .submit_file(&registration.key.file, &identity)
            .expect("registration validated the key against the live object in this hold");
        self.absorb(locked, effects, post);
        post.end_act();
    }

    /// Under the lock: turns DAG effects into post-work. Answers read their
    /// outputs from the published node views (the one store of outputs).
    pub(crate) fn absorb(&self, locked: &mut Locked<E>, effects: Effects, post: &mut PostWork<E>) {
        // Objects the DAG created itself (a removed blocker an importer
        // needs again) get their nodes first: their work is about to run.
        for (canonical, object) in effects.ingested {
            // `publish` moves it back into the new node's slot.
            let language = locked.languages.get(&canonical).cloned();
            debug_assert!(
                language.is_some(),
                "{canonical} was named by a parsed source, which recorded its language"
            );
            let language = language.unwrap_or_else(|| Language::new("unknown"));
            self.publish_node(locked, &canonical, object, language);
            // Named again by the blocker record that needs it: what the
            // new object's first runs are explained by.
            // Needed again by a blocker record, or by the request this hold
            // registers: what the new object's first runs are explained by.
            if post.observed()
                && let Some(live) = locked.dag.live_file(&canonical)
            {
                let demand = locked
                    .dag
                    .demand_of(&WorkNodeIdentity::File(live.at(TargetStage::Analysis)));
                let requested = match post.acting() {
                    Some(HostAction::Requested { key, .. }) => Some(key),
                    _ => None,
                };
                let needer = match demand.root {
                    verter_dag::ChainEnd::Blocker(owner) => Some(owner.at(TargetStage::Source)),
                    // The stage that needed it left in this same hold (its
                    // version retired by the edit of an atomic batch): the
                    // request being registered is what needed it.
                    verter_dag::ChainEnd::Nobody => requested,
                    _ => demand
                        .through
                        .last()
                        .and_then(|consumer| consumer.as_dep_key().copied())
                        .or(requested),
                };
                if let Some(needer) = needer {
                    post.event(|| SchedulerEvent::Ingested(live, needer));
                }
            }
        }
        if !effects.abandoned_running.is_empty() && !locked.remote_work.is_empty() {
            let mut due = Vec::new();
            for work in &effects.abandoned_running {
                locked.remote_work.take_due(work, &mut due);
            }
            for notice in due {
                post.cancel_remote(notice);
            }
        }
        if post.observed() {
            let acting = post.acting();
            for work in &effects.abandoned_running {
                post.event(|| SchedulerEvent::Cancelled(*work, acting));
            }
            for answer in &effects.answers {
                if let Err(DagFailure::Superseded { .. }) = answer.outcome {
                    post.event(|| SchedulerEvent::Superseded(answer.key, acting));
                }
            }
        }
        for answer in effects.answers {
            let Some(slot) = locked.take_waiter(answer.waiter) else {
                debug_assert!(false, "waiter {:?} answered twice", answer.waiter);
                self.counters
                    .duplicate_answers
                    .fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let result = match answer.outcome {
                Ok(()) => Self::output_of(locked, &answer.key).ok_or_else(|| {
                    // Done work always has its output in the published view:
                    // every path that stops serving an output also makes the
                    // DAG forget the work (invalidation, eviction, retirement).
                    debug_assert!(false, "{} is done but has no committed output", answer.key);
                    self.counters
                        .internal_errors
                        .fetch_add(1, Ordering::Relaxed);
                    RequestError::Internal {
                        path: answer.key.file.canonical,
                        message: "done work has no committed output".into(),
                    }
                }),
                Err(failure) => Err(answer_error(&answer.key.file, &failure)),
            };
            post.answer(slot, result);
        }
        // Work failed for a dependency's failure never ran: its failure is
        // reported here (what `explain` follows down to the root cause).
        if let Some(failed) = effects.failed {
            if post.observed() {
                for (work, failure) in failed.iter() {
                    if let WorkNodeIdentity::File(key) = work {
                        let error = answer_error(&key.file, failure).detached();
                        post.event(|| SchedulerEvent::DidFail(*work, error));
                    }
                }
            }
            post.discard(failed);
        }
        for joiner in effects.joiners {
            post.event(|| SchedulerEvent::DidJoin(joiner.key));
        }
        // Artifacts built on a blocker version that changed stop being served.
        for work in effects.invalidated {
            if let Some(key) = work.as_dep_key()
                && let TargetStage::Artifact(profile) = key.stage
                && let Some(slot) = locked.dag.payload_mut(&key.file.canonical)
                && slot.node.incarnation() == key.file.incarnation
            {
                // The view it replaces may hold the artifact's last
                // reference: the host's output, dropped after the lock.
                // The artifact stays as the prior its rebuild is verified
                // against: only a blocker changed.
                if let Ok(Some(replaced)) =
                    slot.node
                        .remove_artifact(&mut slot.view, key.file.generation, profile)
                {
                    if let Some(evicted) = replaced.artifact(profile) {
                        Priors::keep_artifact(&mut slot.priors, Arc::clone(evicted), post);
                    }
                    post.discard_view(replaced);
                }
            }
        }
        // Failures the DAG let go of hold the host's errors: dropped after
        // the lock, with the post-work.
        if !effects.released.is_empty() {
            post.discard(effects.released);
        }
        if effects.newly_ready > 0 {
            post.dispatch = true;
        }
    }

    /// The committed output for `key`, if its object and generation are the
    /// published ones.
    pub(super) fn output_of(
        locked: &Locked<E>,
        key: &verter_dag::DepKey,
    ) -> Option<crate::output::StageOutput<E>> {
        let slot = locked.dag.payload(&key.file.canonical)?;
        if slot.node.incarnation() != key.file.incarnation {
            return None;
        }
        let view = &slot.view;
        if view.generation != key.file.generation {
            return None;
        }
        view.output(key.stage)
    }

    /// Admits whatever the caller (or anyone) sent before this call, so the
    /// call that follows reads those writes; a no-op when nothing is pending.
    pub(super) fn admit_everything_sent(&self) {
        if self.counters.pending_admissions.load(Ordering::Acquire) > 0 {
            self.transact(|locked, post| self.admit_sent(locked, post));
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// Early cutoff at the door (docs/design.md, "Early cutoff"): whether
    /// `text` (with its `hash`) is the text already known for `live`, the
    /// file's live version. Then an upsert of it, or an invalidation that
    /// loaded it, changes nothing: no generation, no stage, every answer
    /// kept. The one rule both use; counted when it holds. The caller
    /// passed the text through `submission::door_text` outside the lock, so an
    /// unchanged text is most often the known text's own `Arc`: the bytes
    /// are compared here only when the known text was not parsed yet.
    pub(super) fn same_text_at_the_door(
        &self,
        locked: &Locked<E>,
        live: &FileIdentity,
        hash: ContentHash,
        text: &Arc<str>,
    ) -> bool {
        let same = node_text(locked, &live.canonical).is_some_and(|known| {
            known.text.version == live.version()
                && known.text.hash == hash
                && (Arc::ptr_eq(&known.text.text, text) || *known.text.text == **text)
        });
        if same {
            self.counters
                .unchanged_texts
                .fetch_add(1, Ordering::Relaxed);
        }
        same
    }
}

/// The text known for `canonical`'s live version, from its slot.
fn node_text<'a, E: StageExecutor>(
    locked: &'a Locked<E>,
    canonical: &Canonical,
) -> Option<&'a KnownText> {
    locked.dag.payload(canonical)?.text.as_ref()
}
