//! Urgent work on a waiting host thread: a host thread that waits for an
//! answer on a threaded scheduler runs the queued urgent CPU jobs (`High`
//! and `Critical`) itself until its answer is in, instead of parking while
//! a stage thread is woken for them and waits for a core (docs/design.md,
//! "What runs where").
//!
//! This module owns the helper registry and the helping wait. It never
//! takes a job that is not urgent, never dispatches (every job it runs was
//! dispatched within the budget, and its pool token later finds nothing or
//! another job), and never runs anything for a thread that is a stage
//! thread, a driver, inside a job, or waiting on an inline scheduler.
//!
//! # Protocol
//! 1. The waiter registers in `Helpers` (`helpers.rs`) and registers a waker on its
//!    answer's cell that unparks it.
//! 2. It runs urgent jobs while its answer is missing, each with its
//!    completion keeping the next CPU job for it; an urgent one it runs
//!    next, any other (or any once the answer is in) it queues.
//! 3. With no urgent job queued and its answer missing, it parks. Queueing
//!    an urgent job unparks one registered helper (after the push, under
//!    the registry's lock; round robin), and the
//!    answer's `set` calls the waker: a registration comes before the
//!    check that precedes the park, so neither wake can be lost (a
//!    thread's unpark token outlives a park that has not begun), and a job
//!    no helper takes still has its pool token.
//!
//! # Invariants
//! 1. A waiting host thread runs a queued urgent stage while every stage
//!    thread is busy, and its answer arrives without them
//!    (`a_waiting_host_thread_runs_its_urgent_stage_while_the_stage_threads_are_busy`).
//! 2. Urgent work queued after the waiter parked wakes it
//!    (`urgent_work_queued_after_the_caller_parked_wakes_it`), and one
//!    queued urgent stage wakes one waiting host thread, not every one
//!    (`one_queued_urgent_stage_wakes_one_waiting_host_thread`).
//! 3. Off (`SchedulerConfig::callers_run_urgent_work`), a host thread runs
//!    no stage (`with_the_option_off_a_host_thread_runs_no_stage`).

use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Instant;

use super::*;
use crate::helpers::Unpark;
use verter_pools::WaitCell;

impl<E: StageExecutor> Scheduler<E> {
    /// Whether the calling thread helps while it waits: an outermost
    /// external thread of a threaded scheduler with the option on.
    pub(crate) fn helps_while_waiting(&self) -> bool {
        self.config.callers_run_urgent_work
            && matches!(self.mode, Mode::Threaded { .. })
            && CallerKind::current() == CallerKind::External
            && JOB_DEPTH.with(Cell::get) == 0
    }

    /// Waits for `cell`'s answer on a helping thread (see the module docs),
    /// until `deadline` if there is one (`None` then).
    pub(crate) fn wait_helping<T: Clone>(
        &self,
        cell: &WaitCell<T>,
        deadline: Option<Instant>,
    ) -> Option<T> {
        let _registration = self.helpers.register();
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut context = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(answer) = cell.poll_get(&mut context) {
                return Some(answer);
            }
            if self.run_urgent(|| cell.is_set()) > 0 || cell.is_set() {
                continue;
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => thread::park_timeout(left),
                    _ => return cell.try_get(),
                },
            }
        }
    }

    /// Runs queued urgent jobs until `answered` or none is queued; returns
    /// how many ran. On a stack of at least the stage threads' size, as a
    /// stage thread (a wait inside the executor drives, as theirs does).
    fn run_urgent(&self, answered: impl Fn() -> bool) -> usize {
        if self.jobs[URGENT].is_empty() {
            return 0;
        }
        let stack = self.config.stage_stack_size.unwrap_or(DEFAULT_THREAD_STACK);
        stacker::maybe_grow(stack, stack, || {
            // The stages are the scheduler's own work, not the host's: a
            // hold that breaks in one was recovered (this waiter answered
            // too, most likely), and the wait goes on.
            self.contain(|| self.run_urgent_here(&answered))
                .unwrap_or(1)
        })
    }

    /// [`Self::run_urgent`] inside its boundary, on its stack.
    fn run_urgent_here(&self, answered: &impl Fn() -> bool) -> usize {
        let _kind = CallerKind::enter(CallerKind::CpuWorker);
        let mut ran = 0;
        while !answered() {
            let Some(mut job) = self.jobs[URGENT].pop() else {
                break;
            };
            loop {
                ran += 1;
                match self.run_job(job, Some(ResourceClass::Cpu)) {
                    Some(next) if is_urgent(next.dispatch()) && !answered() => job = next,
                    Some(next) => {
                        self.queue_job(next);
                        break;
                    }
                    None => break,
                }
            }
        }
        self.counters
            .caller_stages
            .fetch_add(ran as u64, Ordering::Relaxed);
        ran
    }
}
