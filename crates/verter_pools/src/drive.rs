//! `wait_or_drive`: the one waiting primitive. A stage worker that waits
//! drives the scheduler instead of sleeping; every other thread parks
//! (SPEC §11).
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
//! # Invariants
//! 1. On a `CpuWorker` or `Inline` thread, `wait_or_drive` pumps until the
//!    value is there, checking the cell before every pump
//!    (`a_cpu_worker_pumps_until_the_value_arrives`).
//! 2. On any other thread it only parks: external, I/O and driver threads
//!    never run pumped work (`an_external_thread_never_pumps`).
//! 3. After an `Idle` pump it parks on the cell for at most
//!    [`IDLE_PUMP_BACKSTOP`]; a `set` wakes it at once, the backstop only
//!    bounds how late it notices new pumpable work that no cell announces
//!    (`a_set_wakes_an_idle_driver_without_the_backstop`).

use std::fmt;
use std::time::Duration;

use crate::caller_kind::CallerKind;
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
}

impl<D: PumpDriver + ?Sized> PumpDriver for &D {
    fn pump_once(&self) -> PumpOutcome {
        (**self).pump_once()
    }
}

/// How long a driving waiter parks after an idle pump before pumping again.
///
/// A backstop, not synchronisation: the awaited value's `set` wakes the
/// waiter immediately. It only bounds how late a waiter notices pumpable
/// work that appeared without anything being set on its cell.
pub const IDLE_PUMP_BACKSTOP: Duration = Duration::from_millis(1);

/// Waits for `cell`'s value the way the current thread's [`CallerKind`]
/// allows, with the default [`IDLE_PUMP_BACKSTOP`].
///
/// On a `CpuWorker` or `Inline` thread it calls `driver.pump_once()` until
/// the value is set, parking for at most the backstop after an idle pump. On
/// an `External`, `IoWorker` or `Driver` thread it only parks on the cell.
pub fn wait_or_drive<T: Clone>(cell: &WaitCell<T>, driver: &dyn PumpDriver) -> T {
    wait_or_drive_with_backstop(cell, driver, IDLE_PUMP_BACKSTOP)
}

/// [`wait_or_drive`] with an explicit idle backstop.
pub fn wait_or_drive_with_backstop<T: Clone>(
    cell: &WaitCell<T>,
    driver: &dyn PumpDriver,
    idle_backstop: Duration,
) -> T {
    if !CallerKind::current().drives_while_waiting() {
        return cell.wait();
    }
    loop {
        if let Some(value) = cell.try_get() {
            return value;
        }
        match driver.pump_once() {
            PumpOutcome::Progressed => {}
            PumpOutcome::Idle => {
                if let Some(value) = cell.wait_timeout(idle_backstop) {
                    return value;
                }
            }
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
