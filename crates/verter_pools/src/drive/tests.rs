//! Unit tests of `wait_or_drive_with` (and its defaults) with scripted pump
//! drivers, with and without a progress signal. No test relies on a backstop
//! expiring: a lost wake-up hangs, and the watchdog reports it.

#![cfg(not(verter_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use crate::caller_kind::CallerKind;
use crate::drive::{
    PumpDriver, PumpOutcome, wait_or_drive, wait_or_drive_with, wait_or_drive_with_backstop,
};
use crate::progress::ProgressSignal;
use crate::test_support::with_watchdog;
use crate::wait_cell::WaitCell;

/// Pumps a fixed number of times, setting the cell on the last pump, and
/// records the kind of every thread that pumped.
struct ScriptedDriver {
    cell: Arc<WaitCell<u32>>,
    pumps: AtomicUsize,
    set_on_pump: usize,
    pumped_by: parking_lot::Mutex<Vec<CallerKind>>,
}

impl ScriptedDriver {
    fn new(cell: Arc<WaitCell<u32>>, set_on_pump: usize) -> Self {
        Self {
            cell,
            pumps: AtomicUsize::new(0),
            set_on_pump,
            pumped_by: parking_lot::Mutex::new(Vec::new()),
        }
    }
}

impl PumpDriver for ScriptedDriver {
    fn pump_once(&self) -> PumpOutcome {
        self.pumped_by.lock().push(CallerKind::current());
        let pump = self.pumps.fetch_add(1, Ordering::SeqCst) + 1;
        if pump == self.set_on_pump {
            self.cell
                .set(u32::try_from(pump).expect("small"))
                .expect("set once");
        }
        PumpOutcome::Progressed
    }
}

/// Never makes progress: it must not be called at all.
struct ForbiddenDriver;

impl PumpDriver for ForbiddenDriver {
    fn pump_once(&self) -> PumpOutcome {
        panic!("a thread that only parks pumped work");
    }
}

/// Always idle and without a signal; reports its first pump, so the test
/// knows the waiter went idle.
struct IdleDriver {
    pumps: AtomicUsize,
    first_pump: crossbeam_channel::Sender<()>,
}

impl PumpDriver for IdleDriver {
    fn pump_once(&self) -> PumpOutcome {
        if self.pumps.fetch_add(1, Ordering::SeqCst) == 0 {
            self.first_pump.send(()).expect("the test listens");
        }
        PumpOutcome::Idle
    }
}

/// A driver with a progress signal and a one-slot queue: idle until another
/// thread queues a value; the pump that finds it answers the waiter's cell
/// and raises the signal, as a scheduler answering a waiter does.
struct QueueDriver {
    cell: Arc<WaitCell<u32>>,
    queued: parking_lot::Mutex<Option<u32>>,
    signal: ProgressSignal,
    idle_pumps: AtomicUsize,
    progressed_pumps: AtomicUsize,
    first_idle: crossbeam_channel::Sender<()>,
}

impl QueueDriver {
    fn new(cell: Arc<WaitCell<u32>>, first_idle: crossbeam_channel::Sender<()>) -> Self {
        Self {
            cell,
            queued: parking_lot::Mutex::new(None),
            signal: ProgressSignal::new(),
            idle_pumps: AtomicUsize::new(0),
            progressed_pumps: AtomicUsize::new(0),
            first_idle,
        }
    }

    /// What another thread does: makes work pumpable, then announces it.
    fn queue(&self, value: u32) {
        *self.queued.lock() = Some(value);
        self.signal.notify();
    }

    /// Yields until a waiter is parked (or about to park) on the signal.
    fn until_a_waiter_parks(&self) {
        while self.signal.parked_threads() == 0 {
            thread::yield_now();
        }
    }
}

impl PumpDriver for QueueDriver {
    fn pump_once(&self) -> PumpOutcome {
        let queued = self.queued.lock().take();
        match queued {
            Some(value) => {
                self.cell.set(value).expect("set once");
                self.signal.notify();
                self.progressed_pumps.fetch_add(1, Ordering::SeqCst);
                PumpOutcome::Progressed
            }
            None => {
                if self.idle_pumps.fetch_add(1, Ordering::SeqCst) == 0 {
                    self.first_idle.send(()).expect("the test listens");
                }
                PumpOutcome::Idle
            }
        }
    }

    fn progress(&self) -> Option<&ProgressSignal> {
        Some(&self.signal)
    }
}

#[test]
fn a_cpu_worker_pumps_until_the_value_arrives() {
    let cell = Arc::new(WaitCell::new());
    let driver = ScriptedDriver::new(Arc::clone(&cell), 3);
    let value = {
        let _kind = CallerKind::enter(CallerKind::CpuWorker);
        wait_or_drive(&cell, &driver)
    };
    assert_eq!(value, 3);
    assert_eq!(
        driver.pumps.load(Ordering::SeqCst),
        3,
        "no pump after the set"
    );
    assert_eq!(*driver.pumped_by.lock(), [CallerKind::CpuWorker; 3]);
}

#[test]
fn an_inline_pump_drives_like_a_cpu_worker() {
    let cell = Arc::new(WaitCell::new());
    let driver = ScriptedDriver::new(Arc::clone(&cell), 2);
    let value = {
        let _kind = CallerKind::enter(CallerKind::Inline);
        wait_or_drive(&cell, &driver)
    };
    assert_eq!(value, 2);
}

#[test]
fn a_set_value_is_returned_without_pumping() {
    let cell = WaitCell::new();
    cell.set(11).expect("the cell was empty");
    let _kind = CallerKind::enter(CallerKind::CpuWorker);
    assert_eq!(wait_or_drive(&cell, &ForbiddenDriver), 11);
}

/// Each non-driving kind parks: the value comes from another thread, after
/// the waiter announced itself, and the driver is never called.
#[test]
fn an_external_thread_never_pumps() {
    for kind in [
        CallerKind::External,
        CallerKind::IoWorker,
        CallerKind::Driver,
    ] {
        with_watchdog("parking waiter", move || {
            let cell = Arc::new(WaitCell::new());
            let (about_to_wait_tx, about_to_wait_rx) = crossbeam_channel::bounded(1);
            let waiter = {
                let cell = Arc::clone(&cell);
                thread::spawn(move || {
                    let _kind = CallerKind::enter(kind);
                    about_to_wait_tx.send(()).expect("the test listens");
                    wait_or_drive(&cell, &ForbiddenDriver)
                })
            };
            about_to_wait_rx.recv().expect("the waiter starts");
            cell.set(5).expect("the cell was empty");
            assert_eq!(waiter.join().expect("the waiter parked, never pumped"), 5);
        });
    }
}

/// An idle driver with a backstop far longer than the watchdog: only the
/// set's wake-up can end the wait in time.
#[test]
fn a_set_wakes_an_idle_driver_without_the_backstop() {
    with_watchdog("idle driver wake", || {
        let cell = Arc::new(WaitCell::new());
        let (first_pump_tx, first_pump_rx) = crossbeam_channel::bounded(1);
        let waiter = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let _kind = CallerKind::enter(CallerKind::CpuWorker);
                let driver = IdleDriver {
                    pumps: AtomicUsize::new(0),
                    first_pump: first_pump_tx,
                };
                let value =
                    wait_or_drive_with_backstop(&cell, &driver, Duration::from_secs(24 * 3600));
                (value, driver.pumps.load(Ordering::SeqCst))
            })
        };
        first_pump_rx.recv().expect("the waiter pumps once");
        cell.set(8).expect("the cell was empty");
        let (value, pumps) = waiter.join().expect("the waiter finishes");
        assert_eq!(value, 8);
        assert_eq!(pumps, 1, "the set, not a backstop expiry, ended the wait");
    });
}

/// ```text
/// waiter (CpuWorker)                       test thread
/// seen = epoch(); cell empty
/// pump: Idle ────────────────────────────▶ first idle received
/// park(seen, None) on the signal           until the waiter is parked
///                                          queue(4): work, then notify()
/// unparked; pump: Progressed, sets 4 ◀────
/// cell set: returns 4
/// ```
/// No backstop and no cell set from outside: only the signal can wake the
/// waiter, so a lost wake-up hangs and the watchdog fails the test.
#[test]
fn an_idle_driving_waiter_wakes_when_work_appears_with_no_backstop() {
    for kind in [CallerKind::CpuWorker, CallerKind::Inline] {
        with_watchdog("idle waiter woken by progress", move || {
            let cell = Arc::new(WaitCell::new());
            let (first_idle_tx, first_idle_rx) = crossbeam_channel::bounded(1);
            let driver = Arc::new(QueueDriver::new(Arc::clone(&cell), first_idle_tx));
            let waiter = {
                let (cell, driver) = (Arc::clone(&cell), Arc::clone(&driver));
                thread::spawn(move || {
                    let _kind = CallerKind::enter(kind);
                    wait_or_drive_with(&cell, &*driver, None)
                })
            };
            first_idle_rx.recv().expect("the waiter goes idle");
            driver.until_a_waiter_parks();
            driver.queue(4);
            assert_eq!(waiter.join().expect("the waiter finishes"), 4);
            assert_eq!(
                driver.progressed_pumps.load(Ordering::SeqCst),
                1,
                "the pump that answered the waiter was its last"
            );
            assert!(driver.idle_pumps.load(Ordering::SeqCst) >= 1);
            assert_eq!(driver.signal.parked_threads(), 0);
        });
    }
}

/// ```text
/// waiter (CpuWorker)                       answering thread
/// pump: Idle ────────────────────────────▶ first idle received
/// park(seen, None) on the signal           until the waiter is parked
///                                          cell.set(6), then notify()
/// unparked; cell set: returns 6 ◀─────────
/// ```
/// The driver answers the waiter from elsewhere and raises the signal, as
/// `progress` documents; the waiter parked on the signal, not on its cell.
#[test]
fn a_driver_answering_the_waiter_wakes_it_through_the_signal() {
    with_watchdog("answered waiter woken by progress", || {
        let cell = Arc::new(WaitCell::new());
        let (first_idle_tx, first_idle_rx) = crossbeam_channel::bounded(1);
        let driver = Arc::new(QueueDriver::new(Arc::clone(&cell), first_idle_tx));
        let waiter = {
            let (cell, driver) = (Arc::clone(&cell), Arc::clone(&driver));
            thread::spawn(move || {
                let _kind = CallerKind::enter(CallerKind::CpuWorker);
                wait_or_drive_with(&cell, &*driver, None)
            })
        };
        first_idle_rx.recv().expect("the waiter goes idle");
        driver.until_a_waiter_parks();
        cell.set(6).expect("the cell was empty");
        driver.signal.notify();
        assert_eq!(waiter.join().expect("the waiter finishes"), 6);
        assert_eq!(driver.progressed_pumps.load(Ordering::SeqCst), 0);
    });
}

/// An idle driver without a signal and without a backstop: the waiter's
/// only wake-up is its cell, so it pumps exactly once and then waits there.
#[test]
fn without_a_signal_and_without_a_backstop_the_waiter_parks_on_its_cell() {
    with_watchdog("idle waiter parked on its cell", || {
        let cell = Arc::new(WaitCell::new());
        let (first_pump_tx, first_pump_rx) = crossbeam_channel::bounded(1);
        let waiter = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let _kind = CallerKind::enter(CallerKind::Inline);
                let driver = IdleDriver {
                    pumps: AtomicUsize::new(0),
                    first_pump: first_pump_tx,
                };
                assert!(driver.progress().is_none());
                let value = wait_or_drive_with(&cell, &driver, None);
                (value, driver.pumps.load(Ordering::SeqCst))
            })
        };
        first_pump_rx.recv().expect("the waiter pumps once");
        cell.set(9).expect("the cell was empty");
        let (value, pumps) = waiter.join().expect("the waiter finishes");
        assert_eq!(value, 9);
        assert_eq!(pumps, 1, "no pump after going idle without a backstop");
    });
}

#[test]
fn a_borrowed_driver_forwards_its_signal() {
    let cell = Arc::new(WaitCell::new());
    let (first_idle_tx, _first_idle_rx) = crossbeam_channel::bounded(1);
    let driver = QueueDriver::new(cell, first_idle_tx);
    let borrowed: &dyn PumpDriver = &&driver;
    assert!(
        borrowed
            .progress()
            .is_some_and(|signal| std::ptr::eq(signal, &driver.signal))
    );
}
