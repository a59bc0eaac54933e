//! `Scheduler`: Submission: requests, batches, waits, preparation outside the lock and the inbox.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;
use crate::handle::Waitable;
use crate::host_dag::Admission;
use crate::post::{Owner, Withdraw};
use crate::stage::{Ask, Stage};
use crate::traits::DepPath;
use crate::typed::Handle;
use std::sync::Weak;
use verter_pools::WaitCell;

impl<E: StageExecutor> Scheduler<E> {
    /// Submits a typed request: the handle's answer is `S`'s output
    /// (`stage::Artifact(profile).of("main.rs")` is answered with an
    /// artifact). Otherwise [`Self::submit_request`].
    pub fn ask<S: Stage<E>>(&self, ask: Ask<S>) -> Handle<E, S> {
        let stage = ask.stage();
        Handle::new(self.submit_request(ask.into_request()), stage)
    }

    /// [`Self::submit_batch_atomic`] of typed requests of one stage: one
    /// inbox item, its edits in one hold; each handle's answer is `S`'s
    /// output, in input order.
    pub fn ask_batch_atomic<S: Stage<E>>(&self, asks: Vec<Ask<S>>) -> Vec<Handle<E, S>> {
        let stages: Vec<S> = asks.iter().map(Ask::stage).collect();
        let requests = asks.into_iter().map(Ask::into_request).collect();
        let batch = self.submit_batch_atomic(requests);
        batch
            .handles
            .into_iter()
            .zip(stages)
            .map(|(handle, stage)| Handle::new(handle, stage))
            .collect()
    }

    /// Submits one request. The handle is answered exactly once.
    pub fn submit_request(&self, request: Request) -> CompletionHandle<E> {
        self.counters.submits.fetch_add(1, Ordering::Relaxed);
        let (handle, next) = Self::handle_for(
            self.prepare(request, true, &AnswerSlot::new),
            &AnswerSlot::new,
        );
        match next {
            Next::Queue(prepared) => {
                self.own(&handle, (prepared.canonical, prepared.stage));
                self.enqueue(Submission::One(prepared));
            }
            Next::Answer(slot, error) => {
                let mut post = self.post_work();
                post.answer(slot, Err(error));
                self.run_post(post);
            }
            Next::Nothing => {}
        }
        handle
    }

    /// Makes `handle`'s request one its handles cancel (`CompletionHandle::
    /// cancel`, or dropping the last one). A `try_` submission does it once
    /// its request is queued, so that a refused one's handle, dropped
    /// unsent, cancels nothing.
    fn own(&self, handle: &CompletionHandle<E>, (canonical, stage): (Canonical, TargetStage)) {
        if let Some(state) = handle.pending() {
            state.set_owner(Owner {
                scheduler: self.me.clone() as Weak<dyn Withdraw>,
                canonical,
                stage,
            });
        }
    }

    /// [`Self::submit_request`] without waiting for room in the inbox:
    /// `Backpressured` when the request would have to wait for it. Then
    /// nothing was sent and no state changed (no counter either); retry
    /// later, or submit blocking. A request answered at submission (from
    /// committed output, or with an error) is `Admitted` with its answer.
    pub fn try_submit_request(&self, request: Request) -> Admission<CompletionHandle<E>> {
        let (handle, next) = Self::handle_for(
            self.prepare(request, true, &AnswerSlot::new),
            &AnswerSlot::new,
        );
        match next {
            Next::Queue(prepared) => {
                let (path, stage) = (prepared.canonical, prepared.stage);
                if !self.try_enqueue(Submission::One(prepared)) {
                    self.report_backpressure(Backpressure::Request { path, stage });
                    return Admission::Backpressured;
                }
                self.own(&handle, (path, stage));
            }
            Next::Answer(slot, error) => {
                let mut post = self.post_work();
                post.answer(slot, Err(error));
                self.run_post(post);
            }
            Next::Nothing => {}
        }
        self.counters.submits.fetch_add(1, Ordering::Relaxed);
        Admission::Admitted(handle)
    }

    /// [`Self::ask`] without waiting for room in the inbox; see
    /// [`Self::try_submit_request`].
    pub fn try_ask<S: Stage<E>>(&self, ask: Ask<S>) -> Admission<Handle<E, S>> {
        let stage = ask.stage();
        match self.try_submit_request(ask.into_request()) {
            Admission::Admitted(handle) => Admission::Admitted(Handle::new(handle, stage)),
            Admission::DedupeJoined(joiner) => Admission::DedupeJoined(joiner),
            Admission::Backpressured => Admission::Backpressured,
        }
    }

    /// The handle of one prepared request, and what its submitter must
    /// still do: committed output answers it now, in the handle itself (no
    /// slot, nothing shared); an error is answered through a slot, by the
    /// submitter's post-work; anything else is queued for admission. An
    /// error takes its slot from `slot`, like [`Self::prepare`].
    fn handle_for(
        prepared: Result<Preparation<E>, RequestError>,
        slot: &impl Fn() -> AnswerSlot<E>,
    ) -> (CompletionHandle<E>, Next<E>) {
        match prepared {
            Ok(Preparation::Queue(prepared)) => {
                (CompletionHandle::new(&prepared.slot), Next::Queue(prepared))
            }
            Ok(Preparation::Answered(output)) => (
                CompletionHandle::answered(Answered::at_submission(output)),
                Next::Nothing,
            ),
            Err(error) => {
                let slot = slot();
                (CompletionHandle::new(&slot), Next::Answer(slot, error))
            }
        }
    }

    /// Submits each request as its own inbox item: the pump may see the
    /// batch half-admitted. Handles are in input order.
    pub fn submit_batch(&self, requests: Vec<Request>) -> BatchHandle<E> {
        BatchHandle {
            handles: requests
                .into_iter()
                .map(|request| self.submit_request(request))
                .collect(),
        }
    }

    /// Submits the requests as one inbox item whose edits are applied in
    /// one lock hold: no pump ever sees the batch's edits half-applied, and
    /// a batch of source updates supersedes every file's old generation at
    /// once. Each item reads the writes of the items before it: once an
    /// item changes a file (text or language), no later item is answered
    /// at submission — any of them may depend on that file.
    ///
    /// A batch of more than `SchedulerConfig::registrations_per_hold`
    /// requests has its requests registered in later holds, that many per
    /// hold, so stage commits and requests sent after it (an urgent one)
    /// are not held up behind all of it; every answer is the one whole
    /// admission would give (docs/design.md, "Chunked admission").
    ///
    /// The batch's answer cells are one allocation, freed when the last of
    /// its handles is dropped (see [`BatchHandle`]).
    pub fn submit_batch_atomic(&self, requests: Vec<Request>) -> BatchHandle<E> {
        let mut handles = Vec::with_capacity(requests.len());
        let mut prepared = Vec::with_capacity(requests.len());
        let mut post = self.post_work();
        let mut may_answer = true;
        let slots = BatchSlots::new(requests.len());
        for (index, request) in requests.into_iter().enumerate() {
            self.counters.submits.fetch_add(1, Ordering::Relaxed);
            let changes = request.text.is_some() || request.language.is_some();
            let slot = || slots.slot(index);
            let (handle, next) = Self::handle_for(self.prepare(request, may_answer, &slot), &slot);
            handles.push(handle);
            match next {
                Next::Queue(p) => {
                    self.own(handles.last().expect("just pushed"), (p.canonical, p.stage));
                    prepared.push(p);
                }
                Next::Answer(slot, error) => post.answer(slot, Err(error)),
                Next::Nothing => {}
            }
            may_answer &= !changes;
        }
        if !prepared.is_empty() {
            let new_files = prepared.iter().filter(|p| p.lifetime.is_none()).count();
            self.enqueue(Submission::Batch {
                items: prepared,
                new_files,
            });
        }
        self.run_post(post);
        BatchHandle { handles }
    }

    /// Submits a Source request carrying new `text` for `path` (an editor's
    /// buffer): it bumps the file's generation when the text differs.
    pub fn upsert(
        &self,
        path: &str,
        text: impl Into<Arc<str>>,
        priority: Priority,
    ) -> CompletionHandle<E> {
        self.submit_request(
            Request::new(path, TargetStage::Source)
                .text(text)
                .priority(priority),
        )
    }

    /// Reports a refused non-blocking submission as an event (after any
    /// lock: on the submitting thread).
    pub(crate) fn report_backpressure(&self, what: Backpressure) {
        if self.observes_events {
            self.emit_now(SchedulerEvent::Backpressured(what));
        }
    }

    /// Records that a host layer submitted one non-empty batch.
    pub fn account_batch_submission(&self) {
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits for `handle`'s answer: a request's ([`CompletionHandle`], a
    /// typed [`crate::Handle`]), a batch's ([`BatchHandle`], every item in
    /// input order) or a DAG's ([`crate::DagHandle`]). One rule for all of
    /// them: a stage worker or an inline caller drives the scheduler while it
    /// waits; any other thread first runs the queued urgent stages itself
    /// ([`crate::SchedulerConfig::callers_run_urgent_work`]), then parks.
    pub fn wait<H: Waitable<E>>(&self, handle: &H) -> H::Output {
        handle
            .wait_in(self, None)
            .expect("a wait without a deadline ends with the answer")
    }

    /// [`Self::wait`] for at most `timeout`: `None` if the answer is still
    /// missing then. A host thread runs queued urgent stages meanwhile, as
    /// in `wait` (it may overrun the deadline by the stage it is running);
    /// a stage worker or an inline caller parks instead of driving
    /// ([`CompletionHandle::wait_timeout`]).
    pub fn wait_timeout<H: Waitable<E>>(&self, handle: &H, timeout: Duration) -> Option<H::Output> {
        handle.wait_in(self, Some(timeout))
    }

    /// Waits for every handle of `batch`; results in input order, never
    /// partial. The same as [`Self::wait`] on the batch.
    pub fn wait_batch(&self, batch: &BatchHandle<E>) -> Vec<RequestResult<E>> {
        self.wait(batch)
    }

    /// The one waiting rule ([`Self::wait`]) on one answer cell, for at
    /// most `timeout` when there is one.
    pub(crate) fn wait_cell<T: Clone>(
        &self,
        cell: &WaitCell<T>,
        timeout: Option<Duration>,
    ) -> Option<T> {
        if let Some(answer) = cell.try_get() {
            return Some(answer);
        }
        let helps = self.helps_while_waiting();
        match timeout {
            None => {
                let _inline = (self.is_inline() && !CallerKind::current().drives_while_waiting())
                    .then(|| CallerKind::enter(CallerKind::Inline));
                if helps {
                    return self.wait_helping(cell, None);
                }
                Some(wait_or_drive_with(cell, self, self.config.wait_backstop))
            }
            Some(timeout) if helps => self.wait_helping(cell, Instant::now().checked_add(timeout)),
            Some(timeout) => {
                // Called from inside a stage, the answer may be a stage this
                // thread finished and has not committed yet.
                crate::exec::flush_round();
                cell.wait_timeout(timeout)
            }
        }
    }

    /// Blocks until the scheduler is idle — nothing waiting for admission,
    /// queued, ready or running — or `timeout` passes; returns whether it is
    /// idle. An inline scheduler is pumped on this thread. Wakes on the
    /// scheduler's progress signal, never by polling a clock.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let seen = self.progress.epoch();
            if self.is_inline() {
                self.run_until_idle();
            }
            if self.is_idle() {
                return true;
            }
            let remaining = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(remaining) if !remaining.is_zero() => Some(remaining),
                    _ => return false,
                },
                None => None,
            };
            self.progress.park(seen, remaining);
        }
    }

    /// Whether nothing is waiting for admission, queued, ready or running.
    pub(super) fn is_idle(&self) -> bool {
        self.counters.pending_admissions.load(Ordering::Acquire) == 0
            && self.inbox.is_empty()
            && self.jobs.iter().all(SegQueue::is_empty)
            && self.read_locked(|locked| {
                locked.dag.ledger().in_use() == 0
                    && locked.dag.ready_len(ResourceClass::Cpu) == 0
                    && locked.dag.ready_len(ResourceClass::Io) == 0
            })
    }

    /// Prepares `request` outside the lock. A request that must wait takes
    /// its answer cell from `slot` (its own, or its batch's); one answered
    /// with committed output takes none.
    pub(super) fn prepare(
        &self,
        request: Request,
        may_answer: bool,
        slot: &impl Fn() -> AnswerSlot<E>,
    ) -> Result<Preparation<E>, RequestError> {
        // A shut-down scheduler calls no loader: refused here, typed.
        if self.is_shut_down() {
            return Err(RequestError::Shutdown {
                path: match &request.path {
                    DepPath::Path(path) => Canonical::from(path.as_str()),
                    DepPath::Canonical(canonical) => *canonical,
                },
            });
        }
        let canonical = match &request.path {
            DepPath::Path(path) => self.canonicalize(path)?,
            DepPath::Canonical(canonical) => *canonical,
        };
        if request.stage == TargetStage::Artifact(verter_dag::ProfileHash::SAME) {
            return Err(RequestError::ReservedProfile { path: canonical });
        }
        // Sample the published node; the node map guard drops before
        // anything takes the DAG lock.
        let published = self.nodes.get(&canonical).map(|node| Arc::clone(&node));
        // A request that changes nothing (no text, no language) for output the
        // live object already committed is answered here, without the inbox or
        // the lock: it reads a published snapshot, which readers may do
        // without the lock, and is ordered before any edit that lands later.
        if may_answer
            && request.text.is_none()
            && request.language.is_none()
            // Only when no write sent earlier, by any thread, still waits
            // for admission: every item must see every write sent before
            // it. Reads still waiting do not matter: a read may overtake a
            // read (docs/design.md, "The inbox").
            && !self.inbox.writes_waiting()
            && let Some(node) = &published
            && !node.is_retired()
            && let Some(output) = node.committed(request.stage)
        {
            self.counters
                .answered_without_admission
                .fetch_add(1, Ordering::Relaxed);
            return Ok(Preparation::Answered(output));
        }
        let explicit_language = request.language.is_some();
        let language = match (request.language, &published) {
            (Some(language), _) => language,
            (None, Some(node)) => node.language().clone(),
            (None, None) => self.classify(&canonical)?,
        };
        let text = request.text.map(|text| {
            let hash = content_hash(&text);
            (door_text(published.as_deref(), text, hash), hash)
        });
        let lifetime = published.map(|node| node.lifetime());
        // Most likely a new file: its node and text are built here, not in
        // the admitting hold.
        let fresh = lifetime
            .is_none()
            .then(|| self.fresh(&canonical, &language, &text));
        Ok(Preparation::Queue(Prepared {
            canonical,
            stage: request.stage,
            priority: request.priority,
            text,
            language,
            explicit_language,
            lifetime,
            fresh,
            // Only a request that waits gets a shared answer cell.
            slot: slot().urgent_if(request.priority >= Priority::High),
        }))
    }

    /// The node and text of a file with no object yet, under the
    /// placeholder identity admission replaces ([`Fresh`]).
    fn fresh(
        &self,
        canonical: &Canonical,
        language: &Language,
        text: &Option<(Arc<str>, ContentHash)>,
    ) -> Fresh<E> {
        let (incarnation, lifetime) = self.placeholder;
        let node = Arc::new(FileNode::new(
            *canonical,
            incarnation,
            lifetime,
            language.clone(),
            Generation::ZERO,
        ));
        let source = text.as_ref().map(|(text, hash)| SourceText {
            canonical: *canonical,
            version: SourceVersion::new(incarnation, Generation::ZERO),
            text: Arc::clone(text),
            hash: *hash,
        });
        Fresh { node, source }
    }

    /// The loader's canonical form of `path`, with its panics caught (and
    /// counted). Canonicals are interned, so every later comparison of it
    /// with the ones the nodes and the DAG's records hold compares two
    /// ids (docs/design.md, "Names").
    pub(crate) fn canonicalize(&self, path: &str) -> Result<Canonical, RequestError> {
        // A shut-down scheduler calls no loader (docs/design.md, "Shutdown").
        if let Some(refused) = self.refused(path) {
            return Err(refused);
        }
        match catch_unwind(AssertUnwindSafe(|| self.loader.realpath(path))) {
            Ok(Ok(canonical)) => Ok(canonical),
            Ok(Err(error)) => Err(RequestError::from_load(&Canonical::from(path), &error)),
            Err(payload) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                Err(RequestError::LoadFailed {
                    path: Canonical::from(path),
                    message: format!("realpath panicked: {}", panic_message(&*payload)).into(),
                    cause: None,
                })
            }
        }
    }

    /// The loader's language for `canonical`, with its panics caught (and
    /// counted).
    pub(crate) fn classify(&self, canonical: &Canonical) -> Result<Language, RequestError> {
        if self.is_shut_down() {
            return Err(RequestError::Shutdown { path: *canonical });
        }
        catch_unwind(AssertUnwindSafe(|| self.loader.classify(canonical))).map_err(|payload| {
            self.counters
                .executor_panics
                .fetch_add(1, Ordering::Relaxed);
            RequestError::LoadFailed {
                path: *canonical,
                message: format!("classify panicked: {}", panic_message(&*payload)).into(),
                cause: None,
            }
        })
    }

    pub(super) fn enqueue(&self, item: Submission<E>) {
        self.counters
            .pending_admissions
            .fetch_add(item.len(), Ordering::AcqRel);
        // A lone High or Critical request asks for the urgent lane; the
        // inbox keeps every item behind every write sent before it.
        let urgent =
            matches!(&item, Submission::One(prepared) if prepared.priority >= Priority::High);
        let write = item.is_write();
        let (mut envelope, lane) = self.inbox.seal(item, urgent, write);
        loop {
            match self.inbox.try_send(envelope, lane) {
                Ok(()) => {
                    self.sent(lane, write);
                    self.after_send();
                    return;
                }
                Err(SendError::Full(back)) => {
                    // A thread that pumps must not park on the inbox: it may be
                    // its only consumer. It drains first, then retries.
                    if self.is_inline() || CallerKind::current() != CallerKind::External {
                        self.drain_inbox();
                        envelope = back;
                    } else {
                        // An external submitter waits for room: the driver drains.
                        if let Err(back) = self.inbox.send(back, lane) {
                            self.refuse_envelope(back);
                            return;
                        }
                        self.counters
                            .inbox_depth_max
                            .fetch_max(self.inbox.len(), Ordering::Relaxed);
                        self.progress.notify();
                        self.after_send();
                        return;
                    }
                }
                Err(SendError::Disconnected(back)) => {
                    self.refuse_envelope(back);
                    return;
                }
            }
        }
    }

    /// After an item went into `lane`: records the depth, admits an urgent
    /// read on its own thread, and signals progress.
    fn sent(&self, lane: Lane, write: bool) {
        self.counters
            .inbox_depth_max
            .fetch_max(self.inbox.len(), Ordering::Relaxed);
        if lane == Lane::Urgent
            && !write
            && !self.is_inline()
            && CallerKind::current() == CallerKind::External
        {
            // An urgent request is admitted by its own thread (with the
            // urgent writes before it), not whenever the driver thread next
            // gets a core: on a busy machine that can be milliseconds. An
            // urgent write (an editor's upsert) returns at once, as before.
            self.admit_urgent_here();
        }
        self.progress.notify();
    }

    /// [`Self::enqueue`] without waiting: `false` when the item's lane is
    /// full, and then nothing was sent and nothing changed (the item is
    /// dropped unanswered: its slot was never handed out).
    fn try_enqueue(&self, item: Submission<E>) -> bool {
        let len = item.len();
        self.counters
            .pending_admissions
            .fetch_add(len, Ordering::AcqRel);
        let urgent =
            matches!(&item, Submission::One(prepared) if prepared.priority >= Priority::High);
        let write = item.is_write();
        let (envelope, lane) = self.inbox.seal(item, urgent, write);
        match self.inbox.try_send(envelope, lane) {
            Ok(()) => {
                self.sent(lane, write);
                self.after_send();
                true
            }
            Err(SendError::Full(back)) => {
                // Unseal: a write gives its lane back, as if never sent.
                let (_item, receipt) = back.open();
                self.inbox.admitted(receipt);
                self.counters
                    .pending_admissions
                    .fetch_sub(len, Ordering::AcqRel);
                false
            }
            Err(SendError::Disconnected(back)) => {
                self.refuse_envelope(back);
                true
            }
        }
    }

    /// Answers an envelope the torn-down inbox refused, `Shutdown`.
    fn refuse_envelope(&self, envelope: crate::inbox::Envelope<Submission<E>>) {
        let (item, receipt) = envelope.open();
        self.inbox.admitted(receipt);
        self.refuse_at_shutdown(item);
    }

    /// Answers every request of an item that can never be admitted
    /// `Shutdown`, each with its own path.
    pub(super) fn refuse_at_shutdown(&self, item: Submission<E>) {
        let mut post = self.post_work();
        self.counters
            .pending_admissions
            .fetch_sub(item.len(), Ordering::AcqRel);
        for prepared in item.into_items() {
            post.answer(
                prepared.slot,
                Err(RequestError::Shutdown {
                    path: prepared.canonical,
                }),
            );
        }
        self.run_post(post);
    }
}

/// What a submitter still does for a prepared request once it has the
/// request's handle ([`Scheduler::handle_for`]).
enum Next<E: StageExecutor> {
    /// Queue it for admission.
    Queue(Prepared<E>),
    /// Answer its slot with the error, outside the lock.
    Answer(AnswerSlot<E>, RequestError),
    /// Nothing: the handle holds its answer.
    Nothing,
}

/// Early cutoff at the door, its costly half outside the lock
/// (docs/design.md, "Early cutoff"): when `text` (with `hash`) is the text
/// `node`'s committed Source was parsed from (read without the lock), that
/// text's own `Arc`, so the admitting hold recognises it by pointer instead
/// of comparing the bytes under the DAG lock; `text` otherwise.
pub(super) fn door_text<E: StageExecutor>(
    node: Option<&FileNode<E>>,
    text: Arc<str>,
    hash: ContentHash,
) -> Arc<str> {
    let known = node.and_then(|node| match node.committed(TargetStage::Source) {
        Some(crate::output::StageOutput::Source(source)) => Some(source),
        _ => None,
    });
    match known {
        // A released text has no bytes to share (docs/design.md, "Texts").
        Some(source)
            if source.text.hash == hash
                && !source.text.is_released()
                && *source.text.text == *text =>
        {
            Arc::clone(&source.text.text)
        }
        _ => text,
    }
}
