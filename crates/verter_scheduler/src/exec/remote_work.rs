//! Starting remote work: a job of the remote class
//! ([`ResourceClass::Remote`]) is handed to the executor's `start_artifact`
//! or `start_cache_node` with a [`Completion`], which commits its answer
//! later, from whatever thread calls it, through the same completion
//! protocol as a local run (docs/design.md, "Remote work").
//!
//! Part of the `exec` module. A start runs after the lock, on the thread
//! that dispatched the work (a threaded scheduler; several starts on one
//! thread run one after another, never nested; a thread unwinding a panic,
//! whose dropped completion committed, hands them to a thread of its own)
//! or on the pumping caller (an inline one). It holds no CPU or I/O slot, only the remote reservation
//! its dispatch carries until the commit.

use super::run::{Finished, Gate, Outcome};
use super::*;
use crate::remote_work::{Answer, CancelNotice, Completion};
use std::time::Instant;

thread_local! {
    /// Whether this thread is starting remote work: a start that completes
    /// at once commits, and that commit may dispatch more remote work,
    /// which then waits in the queue for this thread's loop rather than
    /// nesting another start.
    static STARTING: Cell<bool> = const { Cell::new(false) };
}

/// Clears [`STARTING`] when dropped (also on unwind).
struct Starting;

impl Drop for Starting {
    fn drop(&mut self) {
        STARTING.with(|starting| starting.set(false));
    }
}

/// What every remote commit carries besides its answer: the dispatch
/// (the work's identity and its reservation), its notice, and its timing.
struct Started {
    dispatch: Dispatch,
    notice: Arc<CancelNotice>,
    because: Option<RunReason>,
    ready_at: Option<Instant>,
    started: Option<Instant>,
    /// Answered from the output store, never started.
    from_store: bool,
}

impl<E: StageExecutor> Scheduler<E> {
    /// After the lock: starts every queued remote job on this thread,
    /// unless this thread is already doing so further up its stack, or is
    /// unwinding a panic.
    pub(super) fn start_queued_remote(&self) {
        if std::thread::panicking() {
            // A completion dropped by a panic's unwind committed here: host
            // code must not start under that unwind, where a completion it
            // drops would read as panicked. Rare, so a thread of its own
            // starts what is queued.
            let me = self.me.clone();
            let spawned = std::thread::Builder::new()
                .name("verter-remote-start".into())
                .spawn(move || {
                    if let Some(scheduler) = me.upgrade() {
                        scheduler.contain(|| scheduler.start_queued_remote());
                    }
                });
            if spawned.is_ok() {
                return;
            }
        }
        if STARTING.with(|starting| starting.replace(true)) {
            return;
        }
        let _starting = Starting;
        while let Some(job) = self.jobs[REMOTE].pop() {
            self.start_remote(job);
        }
    }

    /// Starts one remote job: refused or verified like a local one, or
    /// handed to the executor with its completion.
    pub(super) fn start_remote(&self, job: Job<E>) {
        match job {
            Job::Cache(CacheJob {
                dispatch,
                run,
                ready_at,
                notice: Some(notice),
            }) => self.start_cache(dispatch, run, ready_at, notice),
            Job::File(FileJob {
                dispatch,
                node,
                work: work @ Work::Artifact { .. },
                ready_at,
                notice: Some(notice),
            }) => self.start_artifact(dispatch, node, work, ready_at, notice),
            // Routing (`RemoteRoutes::class_of`) sends only Artifacts and
            // cache nodes here, each with the notice its dispatching hold
            // registered; anything else would run as a local job.
            mut job => {
                debug_assert!(false, "only routed work, with its notice, is started");
                let notice = match &mut job {
                    Job::File(job) => job.notice.take(),
                    Job::Cache(job) => job.notice.take(),
                };
                let finished = self.execute(job);
                match notice {
                    Some(notice) => self.complete_remote(finished, &notice),
                    None => {
                        self.complete(finished, None);
                    }
                }
            }
        }
    }

    fn start_artifact(
        &self,
        dispatch: Dispatch,
        node: Arc<FileNode<E>>,
        work: Work<E>,
        ready_at: Option<Instant>,
        notice: Arc<CancelNotice>,
    ) {
        let file = dispatch
            .identity
            .file()
            .cloned()
            .expect("an Artifact is file work");
        let because = match self.begin(&dispatch, &node, &file, &work) {
            Gate::Run(because) => because,
            Gate::Stale => {
                self.complete_remote(Finished::stale(dispatch), &notice);
                return;
            }
            Gate::Verified(verified) => {
                let finished = self.finished(dispatch, verified.into_outcome(node, work));
                self.complete_remote(finished, &notice);
                return;
            }
        };
        // The run is begun on a clone of the token: the dispatch moves into
        // the completion before the start is called.
        let cancel = dispatch.cancel.clone();
        let Some(running) = self.begin_run(&cancel) else {
            self.complete_remote(Finished::stale(dispatch), &notice);
            return;
        };
        let Work::Artifact {
            profile,
            analysis,
            mut blockers,
            mut dependencies,
            blockers_changed_at,
            prior,
        } = work
        else {
            unreachable!("start_remote sends only Artifacts here");
        };
        // Sorted by path, as `ArtifactInput` promises (see `execute`).
        blockers.sort_unstable_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
        dependencies.sort_unstable_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
        let mut started = Started {
            dispatch,
            notice: Arc::clone(&notice),
            because,
            ready_at,
            started: self.timed.then(Instant::now),
            from_store: false,
        };
        // The output store in front of the remote tier (docs/design.md,
        // "Persistent outputs"): an artifact stored under this work's key
        // is the answer, with no round trip; one computed remotely is
        // stored under it when it comes back.
        let input = ArtifactInput {
            profile,
            analysis: &analysis,
            blockers: &blockers,
            dependencies: &dependencies,
            cancel: &cancel,
        };
        let persist = self.artifact_store(&input);
        let stored = persist.and_then(|(persist, key)| {
            self.read_stored(persist, &key, |bytes| {
                self.executor.decode_artifact(&input, bytes)
            })
        });
        if let Some((data, digest)) = stored {
            let (mut result, cut) = self.built(
                &file,
                profile,
                (&analysis, &blockers, &dependencies, blockers_changed_at),
                prior,
                Ok(Ok(data)),
            );
            if let (Ok(snapshot), Some(digest)) =
                (&mut result, Self::output_digest(persist, Some(digest)))
                && let Some(snapshot) = Arc::get_mut(snapshot)
            {
                snapshot.set_stored(digest);
            }
            started.from_store = true;
            drop(running);
            self.finish_remote(
                started,
                Outcome::Built {
                    node,
                    result,
                    blockers,
                    cut,
                },
            );
            return;
        }
        self.counters.artifact_runs.fetch_add(1, Ordering::Relaxed);
        let me = self.me.clone();
        let (kept_analysis, kept_blockers, kept_dependencies) = (
            Arc::clone(&analysis),
            blockers.clone(),
            dependencies.clone(),
        );
        let key = persist.map(|(_, key)| key);
        let token = cancel.clone();
        let commit = Box::new(move |answer: Answer<E::Artifact>| {
            let Some(me) = me.upgrade() else {
                return;
            };
            // Stored for the next scheduler (and this one's next edit back),
            // unless the work was abandoned by then: an answer to it may be
            // anything (its commit refuses it too).
            let stored = match (&answer, me.persist.as_ref(), key) {
                (Ok(Ok(data)), Some(persist), Some(key)) if !token.is_cancelled() => me
                    .write_stored(persist, key, &file.canonical, data, |data, into| {
                        me.executor.encode_artifact(data, into)
                    })
                    .map(|digest| persist.output_digest(&key, &digest)),
                _ => None,
            };
            let (mut result, cut) = me.built(
                &file,
                profile,
                (
                    &kept_analysis,
                    &kept_blockers,
                    &kept_dependencies,
                    blockers_changed_at,
                ),
                prior,
                answer,
            );
            if let (Ok(snapshot), Some(digest)) = (&mut result, stored)
                && let Some(snapshot) = Arc::get_mut(snapshot)
            {
                snapshot.set_stored(digest);
            }
            let outcome = Outcome::Built {
                node,
                result,
                blockers: kept_blockers,
                cut,
            };
            me.finish_remote(started, outcome);
        });
        let done = Completion::new(commit, notice);
        // A panic unwinds through the completion, whose drop answers the
        // work as panicked: nothing else is owed here.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.executor.start_artifact(&input, done);
        }));
        // The start returned: the run (this thread's part of it) ends.
        drop(running);
    }

    fn start_cache(
        &self,
        dispatch: Dispatch,
        run: Arc<crate::dag_types::FlightInputs<E>>,
        ready_at: Option<Instant>,
        notice: Arc<CancelNotice>,
    ) {
        let cancel = dispatch.cancel.clone();
        let Some(running) = self.begin_cache(&dispatch, &cancel) else {
            let finished = self.finished(
                dispatch,
                Outcome::Cached {
                    result: Err(RequestError::Cancelled),
                    unchanged: false,
                },
            );
            self.complete_remote(finished, &notice);
            return;
        };
        let identity = dispatch.identity;
        let started = Started {
            dispatch,
            notice: Arc::clone(&notice),
            because: self.observes_events.then_some(RunReason::CacheNode),
            ready_at,
            started: self.timed.then(Instant::now),
            from_store: false,
        };
        let me = self.me.clone();
        let previous = run.previous.clone();
        let commit = Box::new(move |answer: Answer<E::CacheOutput>| {
            if let Some(me) = me.upgrade() {
                let outcome = me.cached(&identity, answer, previous.as_deref());
                me.finish_remote(started, outcome);
            }
        });
        let input = super::run::cache_input(&identity, &run, &cancel);
        let done = Completion::new(commit, notice);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.executor.start_cache_node(&input, done);
        }));
        drop(running);
    }

    /// A remote answer arrived (on the completing thread): times the run
    /// and commits it.
    fn finish_remote(&self, started: Started, outcome: Outcome<E>) {
        let Started {
            dispatch,
            notice,
            because,
            ready_at,
            started,
            from_store,
        } = started;
        let ran =
            started.and_then(|started| self.ran(&dispatch, because, ready_at, started, from_store));
        let mut finished = self.finished(dispatch, outcome);
        finished.ran = ran;
        self.complete_remote(finished, &notice);
    }

    /// Commits remote work in one hold of its own, which also forgets its
    /// notice; then starts whatever remote work that hold dispatched.
    fn complete_remote(&self, finished: Finished<E>, notice: &Arc<CancelNotice>) {
        self.counters
            .completion_holds
            .fetch_add(1, Ordering::Relaxed);
        let (broken, _) = self.transact_keeping(None, |locked, post| {
            locked.remote_work.forget(notice);
            self.commit(locked, finished, post)
        });
        if let Some(message) = broken {
            debug_assert!(false, "{message}");
        }
    }
}
