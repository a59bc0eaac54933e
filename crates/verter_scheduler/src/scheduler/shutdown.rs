//! `Scheduler`: Shutdown, the end of a scheduler's life: [`Scheduler::shutdown`]
//! and the drop, one body (docs/design.md, "Shutdown").
//!
//! # Protocol
//! 1. *One hold* ([`Scheduler::end`]): the shut-down flag is set, then
//!    everything that waits is answered and everything that would run is
//!    cancelled, as a reset does, and the job queues are emptied: queued
//!    registrations and inbox items are answered `Shutdown`; host DAGs are
//!    answered whole (their unanswered nodes `Cancelled`); the tokens of
//!    running work are taken, then the DAG is dismantled (every waiter
//!    `Shutdown`, every unfinished node's token cancelled); started
//!    remote work is told; every queued job's dispatch is refused, so its
//!    reservation is back. `shutdown()` also forgets every file, as `reset`
//!    does; the drop leaves that to the fields' own drops.
//! 2. *After the lock*: the answers are delivered, then what the hold took
//!    out (the DAG's tables, the unrun jobs' inputs, the retired nodes) is
//!    dropped: they hold the host's outputs.
//! 3. *The wait*: for the runs of the work the hold cancelled
//!    (`await_runs`, as after a reset), then the driver is stopped and
//!    joined, then for the scheduler's pool jobs to end; then the output
//!    store, if any, is flushed and let go. A job dispatched
//!    before the hold and pushed after it is refused by its pusher
//!    (`Scheduler::queue_job`). A shutdown called on
//!    one of the scheduler's own threads (inside a stage, a pool job, the
//!    driver, or a hook one of them calls) skips the waits that would wait
//!    for itself.
//!
//! Afterwards every call is refused without calling the loader: a
//! submission is answered `Shutdown`, a lifecycle call returns its typed
//! error, a read finds nothing. An item that raced into the inbox past the
//! hold is answered by its own sender (`Scheduler::after_send`).
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;

use std::sync::atomic::fence;

use crate::job::{CacheJob, FileJob, Job, Work};
use crate::state::Ending;

/// Sets `Scheduler::ended` when dropped, if armed: the first shutdown's
/// end, also by unwinding.
struct Ended<'a> {
    ended: &'a std::sync::atomic::AtomicBool,
    progress: &'a verter_pools::ProgressSignal,
    armed: bool,
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.ended.store(true, Ordering::Release);
            self.progress.notify();
        }
    }
}

/// What a queued job held besides its dispatch: inputs it captured (the
/// host's outputs among them), dropped after the lock.
type Unrun<E> = (
    Option<(Arc<FileNode<E>>, Work<E>)>,
    Option<Arc<crate::dag_types::FlightInputs<E>>>,
    Option<Arc<crate::remote_work::CancelNotice>>,
);

impl<E: StageExecutor> Scheduler<E> {
    /// Shuts the scheduler down for good. When it returns:
    /// - every request, batch item, host DAG and started remote work that
    ///   waited has been answered: requests [`RequestError::Shutdown`],
    ///   DAGs whole (each unanswered node [`RequestError::Cancelled`]), and
    ///   started remote work told through `Completion::on_cancel`;
    /// - every running stage's cancellation token is cancelled, and queued
    ///   work (the job queues, the inbox, queued registrations) was dropped
    ///   without running, its reservation given back;
    /// - the stages that were running have returned (each sees its
    ///   cancelled token and may return early; one that ignores it is
    ///   waited for), no pool job of this scheduler is running, and the
    ///   driver thread is stopped and joined;
    /// - no executor or loader call for this scheduler starts any more;
    /// - every file is forgotten, as after [`Self::reset`].
    ///
    /// Every later call is refused, typed, without calling the loader: a
    /// submission (`submit_request`, a batch, `upsert`, `ask`, ...) is
    /// answered `Shutdown`; a DAG is answered whole, every node
    /// `Cancelled` (or `Shutdown` for a file node); `invalidate`
    /// and `remove` return `Err(Shutdown)`; the witness calls
    /// return `ObjectGone` or `None`; `reset` does nothing; reads find
    /// nothing. A remote work's completion that comes back later is
    /// refused like any stale one, and gives its reservation back.
    /// Shutting down again does nothing but wait for the first call's end
    /// (a call racing with it returns once that one did), and dropping the
    /// scheduler afterwards is fine (the drop does what this does, through
    /// the same body, when it was not called).
    ///
    /// The pools are the host's (`Scheduler::new`): they are not shut
    /// down, and a pool token this scheduler queued may still reach a
    /// pool thread later and find nothing to do.
    ///
    /// Called on one of the scheduler's own threads — inside a stage (an
    /// executor, a loader), a pool job, the driver, or a hook one of them
    /// calls — it answers and cancels all the same but does not wait:
    /// what it would wait for is on its own stack, and ends only after it
    /// returns. A stage that blocks on something the caller does only after
    /// `shutdown` returns deadlocks it, as with `reset`.
    pub fn shutdown(&self) {
        self.end(Ending::Shutdown);
    }

    /// Whether [`Self::shutdown`] ran (or the drop began): every call is
    /// refused from then on (`Observer::is_shut_down`).
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// The body [`Self::shutdown`] and the drop share (the module docs'
    /// protocol). Does nothing when the scheduler was shut down already.
    pub(crate) fn end(&self, ending: Ending) {
        // Set under the lock below; read here to make a second call a no-op
        // without a hold. Two racing first calls both take the hold, and
        // the second finds the flag set there.
        if self.shut_down.load(Ordering::Acquire) {
            self.await_ended();
            return;
        }
        // Marks the shutdown ended when this call returns, or unwinds (a
        // hold that broke): a later call never waits for a first that is
        // gone.
        let mut first = Ended {
            ended: &self.ended,
            progress: &self.progress,
            armed: true,
        };
        let ended = self.transact(|locked, post| {
            if self.shut_down.load(Ordering::Relaxed) {
                return None;
            }
            // Ordered before the inbox is read below, as a sender's send is
            // before its read of the flag (`after_send`): an item sent past
            // this hold is answered by its sender.
            self.shut_down.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            post.act(|| HostAction::Shutdown);
            self.refuse_queued(locked, post);
            // What runs now, before anything forgets it: what this hold
            // cancels and the call then waits for.
            let running = locked.dag.running_tokens();
            self.cancel_all_dags(locked, post);
            let (effects, tables) = locked.dag.dismantle();
            for notice in locked.remote_work.take_all() {
                post.cancel_remote(notice);
            }
            self.absorb(locked, effects, post);
            for (waiter, slot) in locked.waiters.drain().collect::<Vec<_>>() {
                debug_assert!(false, "a dismantled DAG answered every waiter");
                locked.dag.recycle_waiter(waiter);
                post.answer(slot, Err(RequestError::Cancelled));
            }
            // Queued jobs never start: their reservations are given back
            // here (the DAG forgot their work, so each is a stale
            // refusal), their inputs dropped after the lock.
            let unrun = self.refuse_queued_jobs(locked, post);
            let nodes = match ending {
                Ending::Shutdown => self.forget_every_file(locked, []),
                Ending::Drop => {
                    // Only references go here: every published node is also
                    // in its file's slot, in the tables, which free it after
                    // the lock. So the tables free the nodes, their views
                    // and outputs in the order of the files' dense ids —
                    // about the order they were allocated in — not in the
                    // map's hash order: the drop of a 100k-file scheduler
                    // took 76 ms instead of 202 (docs/design.md,
                    // "Shutdown").
                    self.nodes.clear();
                    Vec::new()
                }
            };
            post.dispatch = false;
            Some((running, tables, unrun, nodes))
        });
        let Some((running, tables, unrun, nodes)) = ended else {
            first.armed = false;
            self.await_ended();
            return;
        };
        // The answers are out (`transact`); what the hold let go of holds
        // host outputs: dropped here, after the lock. The retired nodes'
        // references go first, so that the DAG's tables free each node in
        // the order of the files' dense ids.
        drop(nodes);
        drop(unrun);
        drop(tables);
        let own_thread = crate::exec::on_own_thread();
        if !own_thread {
            self.await_runs(running);
        }
        // The driver first: a pass of it may push a job it dispatched
        // before the hold, and refuses it itself (`queue_job`).
        self.stop_driver();
        if !own_thread {
            self.await_pool_jobs();
        }
        // No stage starts any more: what they queued for the output store
        // is written, and the store is let go (docs/design.md, "Persistent
        // outputs"). A stage still running on this thread's stack finds it
        // closed: a miss, a write dropped.
        if let Some(persist) = &self.persist {
            persist.close();
        }
        drop(first);
    }

    /// A second `shutdown` (or a drop after one): returns once the first
    /// has finished its waits, so whichever call returns, what `shutdown`
    /// promises holds. On one of the scheduler's own threads it does not
    /// wait (the first may be waiting for it).
    fn await_ended(&self) {
        if crate::exec::on_own_thread() {
            return;
        }
        loop {
            let seen = self.progress.epoch();
            if self.ended.load(Ordering::Acquire) {
                return;
            }
            self.progress.park(seen, self.config.wait_backstop);
        }
    }

    /// Under the lock, in the shutdown's hold: answers every queued
    /// registration and every inbox item `Shutdown` (admission refuses
    /// once the flag is set), and takes them off the pending count.
    fn refuse_queued(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) {
        let registering = locked.registering.len();
        for registering in locked.registering.drain(..) {
            post.answer(
                registering.slot,
                Err(RequestError::Shutdown {
                    path: registering.live.canonical,
                }),
            );
        }
        if registering > 0 {
            self.counters
                .pending_admissions
                .fetch_sub(registering, Ordering::AcqRel);
        }
        self.refuse_inbox(locked, post);
    }

    /// Under the lock, in the shutdown's hold: pops every queued job and
    /// refuses its dispatch (a stale refusal: the DAG forgot the work),
    /// which gives its reservation back. Returns the rest of each job, to
    /// drop after the lock.
    fn refuse_queued_jobs(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> Vec<Unrun<E>> {
        let mut unrun = Vec::new();
        for queue in &self.jobs {
            while let Some(job) = queue.pop() {
                let (dispatch, rest) = match job {
                    Job::File(FileJob {
                        dispatch,
                        node,
                        work,
                        ready_at: _,
                        notice,
                    }) => (dispatch, (Some((node, work)), None, notice)),
                    Job::Cache(CacheJob {
                        dispatch,
                        run,
                        ready_at: _,
                        notice,
                    }) => (dispatch, (None, Some(run), notice)),
                };
                self.refuse(locked, dispatch, post);
                unrun.push(rest);
            }
        }
        unrun
    }

    /// After the shutdown's hold, on a thread that pushed a job it had
    /// dispatched before that hold (`Scheduler::queue_job`): refuses every
    /// job on the queues in a hold of its own, and drops their inputs after
    /// it.
    pub(crate) fn refuse_jobs_after_shutdown(&self) {
        let unrun = self.transact(|locked, post| self.refuse_queued_jobs(locked, post));
        drop(unrun);
    }

    /// After the shutdown's hold: waits until no pool job of this
    /// scheduler runs (a job ends by committing what it ran, refused).
    /// Wakes on the progress signal, which a pool job raises as it ends
    /// once the scheduler is shut down.
    fn await_pool_jobs(&self) {
        loop {
            let seen = self.progress.epoch();
            // SeqCst, as the job's decrement and its read of the flag: one
            // of the two sees the other.
            if self.pool_jobs.load(Ordering::SeqCst) == 0 {
                return;
            }
            self.progress.park(seen, self.config.wait_backstop);
        }
    }

    /// Stops the driver thread and joins it, unless this is the driver
    /// (a hook it runs called `shutdown`): it stops once it returns there.
    fn stop_driver(&self) {
        let _ = self.teardown_tx.try_send(());
        let handle = self.driver.lock().take();
        if let Some(handle) = handle {
            if handle.thread().id() == std::thread::current().id() {
                return;
            }
            // A driver that panicked outside its containment has nothing
            // left to stop.
            let _ = handle.join();
        }
    }

    /// After an item went into the inbox: if the scheduler was shut down
    /// meanwhile, after the shutdown's hold took the inbox's items, this
    /// sender answers what is there (admission refuses it) — no driver is
    /// left to. The fence orders the send before the read of the flag, as
    /// the shutdown's store is before its read of the inbox: one of the two
    /// sees the other.
    pub(super) fn after_send(&self) {
        fence(Ordering::SeqCst);
        if self.shut_down.load(Ordering::Relaxed) {
            self.drain_inbox();
        }
    }

    /// The error for a call on a shut-down scheduler naming `path`, without
    /// calling the loader: `None` while it is not shut down.
    pub(crate) fn refused(&self, path: &str) -> Option<RequestError> {
        self.is_shut_down().then(|| RequestError::Shutdown {
            path: Canonical::from(path),
        })
    }
}
