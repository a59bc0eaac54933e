//! Unit tests of `wait_or_drive` with a scripted pump driver.

#![cfg(not(verter_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use crate::caller_kind::CallerKind;
use crate::drive::{PumpDriver, PumpOutcome, wait_or_drive, wait_or_drive_with_backstop};
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
