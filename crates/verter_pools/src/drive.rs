//! `wait_or_drive_with` (and its defaults `wait_or_drive`,
//! `wait_or_drive_with_backstop`): the one waiting primitive. A stage worker
//! that waits drives the scheduler instead of sleeping; every other thread
//! parks.
//!
//! This module owns the decision of *how* a thread waits, read from its
//! [`CallerKind`]. It never decides *what* runs: the scheduler does, behind
//! [`PumpDriver`].
//!
//! # Why stage workers drive
//! A CPU pool of width N whose N workers each wait on a job queued behind
//! them in the same pool would deadlock if they parked: nothing is left to
//! run the queued jobs. Driving runs them inline on the waiting worker, so
//! no worker ever waits on a job that only its own pool could run
//! (`nested_cpu_waits_from_a_full_host_batch_complete`, integration).
//!
//! Pumped work may itself wait, which nests another pump loop on the same
//! stack; the driver keeps each pass bounded, and the nesting depth is at
//! most the depth of the wait chain.
//!
//! # Waking an idle waiter
//! A pump that finds nothing to do (`Idle`) is no reason to stop waiting:
//! work may become pumpable later without this waiter's cell being set
//! (another thread queues work, a permit is released). A driver that owns a
//! [`ProgressSignal`] raises it on every such change and whenever it answers
//! a waiter, so an idle waiter parks on the signal and wakes on progress,
//! not on a clock. A driver without one leaves idle waiters only their cell,
//! and the optional backstop.
//!
//! The backstop is a host's choice ([`IDLE_PUMP_BACKSTOP`] is the default
//! [`wait_or_drive`] keeps). It is never synchronisation: it only bounds how
//! late a waiter notices progress that nobody announced, so it hides lost
//! wake-ups. Tests run with it off (`None`), where a lost wake-up hangs and
//! the watchdog reports it.
//!
//! # Invariants
//! 1. On a `CpuWorker` or `Inline` thread, `wait_or_drive_with` pumps until
//!    the value is there, checking the cell before every pump and never
//!    pumping after it is set (`a_cpu_worker_pumps_until_the_value_arrives`,
//!    `an_inline_pump_drives_like_a_cpu_worker`,
//!    `a_set_value_is_returned_without_pumping`).
//! 2. On any other thread it only parks on the cell: external, I/O and
//!    driver threads never run pumped work (`an_external_thread_never_pumps`).
//! 3. With a signal, each round reads the epoch *before* checking the cell,
//!    and an `Idle` pump parks on the signal with that epoch; a notify raised
//!    after the check (new work, the driver answering this waiter) therefore
//!    ends the park, with or without a backstop
//!    (`an_idle_driving_waiter_wakes_when_work_appears_with_no_backstop`,
//!    and [`ProgressSignal`]'s own invariants).
//! 4. Without a signal, an `Idle` pump parks on the cell: for at most the
//!    backstop and then pumps again, or, with no backstop, until the value is
//!    set; a `set` wakes it at once either way
//!    (`a_set_wakes_an_idle_driver_without_the_backstop`,
//!    `without_a_signal_and_without_a_backstop_the_waiter_parks_on_its_cell`).

use std::fmt;
use std::time::Duration;

use crate::caller_kind::CallerKind;
use crate::progress::ProgressSignal;
use crate::wait_cell::WaitCell;

/// The outcome of one pump pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use = "an idle pump means the waiter should park before pumping again"]
pub enum PumpOutcome {
    /// The pass admitted or ran work; pumping again may make more progress.
    Progressed,
    /// The pass found nothing to do.
    Idle,
}

/// One bounded pump pass of a scheduler: admit and run at most a bounded
/// amount of ready work inline, on the calling thread. The scheduler
/// implements it; `wait_or_drive` calls it on waiting stage workers.
pub trait PumpDriver {
    /// Runs one pump pass and reports whether it did anything.
    fn pump_once(&self) -> PumpOutcome;

    /// The signal this driver raises whenever an idle pump might now make
    /// progress (a new inbox item, new ready or queued work, released
    /// capacity) and whenever it answers a waiter.
    ///
    /// `None` (the default) means it raises none: idle waiters can then only
    /// rely on their cell and the backstop.
    fn progress(&self) -> Option<&ProgressSignal> {
        None
    }
}

impl<D: PumpDriver + ?Sized> PumpDriver for &D {
    fn pump_once(&self) -> PumpOutcome {
        (**self).pump_once()
    }

    fn progress(&self) -> Option<&ProgressSignal> {
        (**self).progress()
    }
}

/// The default idle backstop a host may choose: how long a driving waiter
/// parks after an idle pump before pumping again.
///
/// A backstop, not synchronisation: the awaited value's `set`, or the
/// driver's [`ProgressSignal`], wakes the waiter immediately. It only bounds
/// how late a waiter notices pumpable work that appeared without anything
/// announcing it, which also means it hides lost wake-ups; tests pass `None`
/// to [`wait_or_drive_with`] instead.
pub const IDLE_PUMP_BACKSTOP: Duration = Duration::from_millis(1);

/// Waits for `cell`'s value the way the current thread's [`CallerKind`]
/// allows, with the default [`IDLE_PUMP_BACKSTOP`]:
/// `wait_or_drive_with(cell, driver, Some(IDLE_PUMP_BACKSTOP))`.
pub fn wait_or_drive<T: Clone>(cell: &WaitCell<T>, driver: &dyn PumpDriver) -> T {
    wait_or_drive_with(cell, driver, Some(IDLE_PUMP_BACKSTOP))
}

/// [`wait_or_drive`] with an explicit idle backstop:
/// `wait_or_drive_with(cell, driver, Some(idle_backstop))`.
pub fn wait_or_drive_with_backstop<T: Clone>(
    cell: &WaitCell<T>,
    driver: &dyn PumpDriver,
    idle_backstop: Duration,
) -> T {
    wait_or_drive_with(cell, driver, Some(idle_backstop))
}

/// Waits for `cell`'s value the way the current thread's [`CallerKind`]
/// allows, parking after an idle pump for at most `backstop` (`None`: until
/// woken).
///
/// On an `External`, `IoWorker` or `Driver` thread it only parks on the cell.
/// On a `CpuWorker` or `Inline` thread it loops:
/// 1. reads the epoch of `driver.progress()`, if the driver has a signal,
///    *before* checking the cell, so no later notify can be missed;
/// 2. returns the value if the cell is set;
/// 3. calls `driver.pump_once()`; after `Progressed` goes back to 1;
/// 4. after `Idle`: with a signal, parks on it with the epoch from step 1
///    (for at most `backstop`) and goes back to 1; without one, parks on the
///    cell, for at most `backstop` and then back to 1, or with no backstop
///    until the value is set.
pub fn wait_or_drive_with<T: Clone>(
    cell: &WaitCell<T>,
    driver: &dyn PumpDriver,
    backstop: Option<Duration>,
) -> T {
    if !CallerKind::current().drives_while_waiting() {
        return cell.wait();
    }
    let signal = driver.progress();
    loop {
        // Read before the cell check: a notify raised after it moves the
        // epoch past `seen`, so the park below returns.
        let signal_seen = signal.map(|signal| (signal, signal.epoch()));
        if let Some(value) = cell.try_get() {
            return value;
        }
        match driver.pump_once() {
            PumpOutcome::Progressed => {}
            PumpOutcome::Idle => match signal_seen {
                Some((signal, seen)) => signal.park(seen, backstop),
                None => match backstop {
                    Some(backstop) => {
                        if let Some(value) = cell.wait_timeout(backstop) {
                            return value;
                        }
                    }
                    // Nothing but the cell can announce progress.
                    None => return cell.wait(),
                },
            },
        }
    }
}

impl fmt::Display for PumpOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests;
