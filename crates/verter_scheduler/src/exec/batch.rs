//! Several stages per hold: an outermost CPU chain commits the stages it
//! finished and takes its next ones in one hold of the DAG lock, so two
//! stage threads do not take turns on the lock for every stage
//! (docs/design.md, "Several stages per hold").
//!
//! A round is the jobs one hold handed this thread: one budgeted, the rest
//! batched (`Scheduler::take_batched`). The thread runs them one after
//! another; each finished one waits in the thread's *deferred* list until
//! the round's last has run, and one hold then commits them all and takes
//! the next round. An urgent stage (CPU work at `High` or above) ends its
//! round early: it is committed as soon as it ran, and the round's unrun
//! jobs run after what that hold hands the thread. A deferred stage is
//! still running as far as the DAG is
//! concerned (its reservation is held, nothing is published), so a stale
//! one is refused at the commit like any other.
//!
//! A stage may wait on another stage's answer; that answer may be a
//! deferred stage of its own thread, or a stage of its round not run yet.
//! So every wait that may block first commits the thread's deferred list
//! and runs the round's unrun jobs itself, nested ([`flush_deferred`],
//! called by every pump pass and by a handle's own waits): nothing waits on
//! work that only its own thread could commit or run. A hold takes about
//! `SchedulerConfig::batch_time` of work for its thread, judged by how long
//! the round's stages took (a round of slow stages is followed by one job),
//! so one thread's batch never keeps ready work from the other threads, or
//! an urgent request, for long.
//!
//! This module must never commit under a hold it did not take through
//! `Scheduler::transact*`, nor hand a batched job to another thread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use super::*;
use crate::exec::run::Finished;

thread_local! {
    /// The deferred list of the batch this thread is running, if any.
    static DEFERRED: RefCell<Option<Rc<dyn Flush>>> = const { RefCell::new(None) };
}

/// Commits a thread's deferred stages (type-erased: a thread-local cannot
/// name the executor type).
trait Flush {
    /// Commits every deferred stage in one hold; returns whether there was
    /// any.
    fn flush(&self) -> bool;
}

/// One batch's deferred stages and the scheduler that commits them.
struct Deferred<E: StageExecutor> {
    scheduler: Arc<Scheduler<E>>,
    /// The round's jobs not run yet: dispatched (reserved) and held by this
    /// thread alone, run by it in order or from inside a wait.
    pending: RefCell<VecDeque<Job<E>>>,
    finished: RefCell<Vec<Finished<E>>>,
    /// The first broken invariant a nested commit met, asserted by the
    /// chain once it has nothing left to run (see [`Scheduler::complete_all`]).
    broken: RefCell<Option<String>>,
}

impl<E: StageExecutor> Flush for Deferred<E> {
    fn flush(&self) -> bool {
        let mut finished = std::mem::take(&mut *self.finished.borrow_mut());
        let mut did = !finished.is_empty();
        if did {
            // A nested flush keeps nothing: its jobs go to the queues.
            let (_, broken) = self.scheduler.complete_all(&mut finished, None, None);
            let mut first = self.broken.borrow_mut();
            if first.is_none() {
                *first = broken;
            }
        }
        // The waited-on work may be among the round's unrun jobs, which no
        // other thread can reach: run them here, nested, one at a time (a
        // job that waits in turn runs the next from its own wait). Queuing
        // them instead would need a pool token each, beyond the pool's
        // transport capacity (budget plus threads).
        loop {
            let job = self.pending.borrow_mut().pop_front();
            let Some(job) = job else { break };
            did = true;
            self.scheduler.run_chain(job);
        }
        did
    }
}

/// Commits the calling thread's deferred stages and runs its round's unrun
/// jobs, if it has any (see the module docs). Returns whether it did
/// anything. Cheap when there is
/// nothing: one thread-local read.
pub(crate) fn flush_deferred() -> bool {
    let deferred = DEFERRED.with(|slot| slot.borrow().clone());
    deferred.is_some_and(|deferred| deferred.flush())
}

/// Installs a batch's deferred list as the thread's; on drop (also on
/// unwind) commits what is left and uninstalls it, so no reservation or
/// waiter is ever left behind.
struct Installed<E: StageExecutor>(Rc<Deferred<E>>);

impl<E: StageExecutor> Installed<E> {
    fn new(scheduler: Arc<Scheduler<E>>) -> Self {
        let deferred = Rc::new(Deferred {
            scheduler,
            pending: RefCell::new(VecDeque::new()),
            finished: RefCell::new(Vec::new()),
            broken: RefCell::new(None),
        });
        DEFERRED.with(|slot| {
            let previous = slot.replace(Some(Rc::clone(&deferred) as Rc<dyn Flush>));
            debug_assert!(previous.is_none(), "only an outermost chain batches");
        });
        Self(deferred)
    }

    fn defer(&self, finished: Finished<E>) {
        self.0.finished.borrow_mut().push(finished);
    }

    /// Holds `jobs` as the round's unrun jobs.
    fn hold(&self, jobs: &mut Vec<Job<E>>) {
        self.0.pending.borrow_mut().extend(jobs.drain(..));
    }

    /// The round's next unrun job, unless a wait on this thread ran it.
    fn next(&self) -> Option<Job<E>> {
        self.0.pending.borrow_mut().pop_front()
    }

    /// Whether the round still holds unrun jobs.
    fn has_pending(&self) -> bool {
        !self.0.pending.borrow().is_empty()
    }

    fn take(&self, into: &mut Vec<Finished<E>>) {
        into.append(&mut self.0.finished.borrow_mut());
    }
}

impl<E: StageExecutor> Drop for Installed<E> {
    fn drop(&mut self) {
        DEFERRED.with(|slot| slot.replace(None));
        if std::thread::panicking() {
            // Dropped by an unwind (a hold of this chain broke, say): a hold
            // that breaks in this flush too is recovered, and its panic
            // must not leave a destructor while the thread unwinds (the
            // process would abort).
            let _ = catch_unwind(AssertUnwindSafe(|| self.0.flush()));
        } else {
            self.0.flush();
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// Runs `job` and every round of jobs the completion holds hand this
    /// thread, committing each round in one hold (see the module docs).
    /// Only for an outermost chain on a CPU pool thread.
    pub(super) fn run_batches(&self, job: Job<E>) {
        let limit = self.config.stages_per_hold;
        // Grown as rounds grow: a short chain (a burst of one or two
        // stages) allocates little.
        let mut round: Vec<Job<E>> = Vec::with_capacity(limit.min(16));
        let mut finished: Vec<Finished<E>> = Vec::with_capacity(limit.min(16));
        let mut installed: Option<Installed<E>> = None;
        // A broken invariant is asserted only once every job this chain
        // took has been committed: an assertion that unwound mid-chain
        // would leave the rest of the round's reservations and waiters
        // behind.
        let mut broken: Option<String> = None;
        let mut kept = Some(job);
        while let Some(first) = kept.take() {
            let started = Instant::now();
            let mut jobs = 0u32;
            // The round: the kept job, then the batched ones, held where a
            // wait on this thread can reach them.
            if !round.is_empty() {
                installed
                    .get_or_insert_with(|| {
                        // Whoever runs a chain holds the scheduler (a pool
                        // token upgrades its weak reference for the run).
                        Installed::new(self.me.upgrade().expect("a running chain's scheduler"))
                    })
                    .hold(&mut round);
            }
            let mut current = Some(first);
            // Whether an urgent stage cut this round short.
            let mut cut = false;
            while let Some(job) = current {
                jobs += 1;
                let urgent = is_urgent(job.dispatch());
                let done = self.execute(job);
                // An urgent stage ends its round: it is committed (and its
                // waiter answered, or its next stage kept for this thread)
                // now, not after the round's other stages. The round's
                // unrun jobs stay held for this thread, after what the
                // commit hands it.
                current = if urgent {
                    cut = installed.as_ref().is_some_and(Installed::has_pending);
                    None
                } else {
                    installed.as_ref().and_then(Installed::next)
                };
                match (&installed, current.is_some()) {
                    // Later jobs of the round may wait on it: deferred, so a
                    // pump on this thread commits it first.
                    (Some(deferred), true) => deferred.defer(done),
                    _ => {
                        // Commit order is run order: the deferred ones first.
                        if let Some(deferred) = &installed {
                            deferred.take(&mut finished);
                        }
                        finished.push(done);
                    }
                }
            }
            // As many more as this thread is expected to run in
            // `batch_time`, judged by this round's stages.
            let per_stage = (started.elapsed().as_nanos() / u128::from(jobs)).max(1);
            let fit = self.config.batch_time.as_nanos() / per_stage;
            // A round cut short takes no more: it still holds its own.
            let extra = match cut {
                true => 0,
                false => usize::try_from(fit).map_or(limit - 1, |fit| fit.min(limit - 1)),
            };
            let (next, message) = self.complete_all(
                &mut finished,
                Some(ResourceClass::Cpu),
                Some((extra, &mut round)),
            );
            broken = broken.or(message);
            // A round an urgent stage cut short may still hold unrun jobs.
            kept = next.or_else(|| installed.as_ref().and_then(Installed::next));
        }
        debug_assert!(round.is_empty(), "batched jobs come with a kept one");
        if let Some(deferred) = installed.take() {
            broken = broken.or(deferred.0.broken.take());
        }
        if let Some(message) = broken {
            debug_assert!(false, "{message}");
        }
    }

    /// Commits every finished stage (draining `finished`) in one hold;
    /// `keep` and `batch` as in [`Self::transact_batching`]. Returns the
    /// kept job and the first broken invariant's message, for the caller to
    /// assert once nothing it holds is left uncommitted.
    pub(super) fn complete_all(
        &self,
        finished: &mut Vec<Finished<E>>,
        keep: Option<ResourceClass>,
        batch: Option<(usize, &mut Vec<Job<E>>)>,
    ) -> (Option<Job<E>>, Option<String>) {
        self.counters
            .completion_holds
            .fetch_add(1, Ordering::Relaxed);
        let (broken, next, _) = self.transact_batching(keep, batch, |locked, post| {
            let mut broken = None;
            for done in finished.drain(..) {
                let message = self.commit(locked, done, post);
                broken = broken.or(message);
            }
            broken
        });
        (next, broken)
    }
}
