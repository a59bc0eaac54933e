//! Unit tests of the progress signal: threads with handshakes, and loom
//! models of a notify racing a park.

#[cfg(not(verter_loom))]
mod threads {
    use std::sync::{Arc, Barrier};
    use std::thread;
    use std::time::Duration;

    use crate::progress::ProgressSignal;
    use crate::test_support::with_watchdog;

    /// Yields until `n` threads are registered on `signal`: the handshake
    /// that a notify sent now has parked threads to find.
    fn until_parked(signal: &ProgressSignal, n: usize) {
        while signal.parked_threads() < n {
            thread::yield_now();
        }
    }

    #[test]
    fn a_notify_with_nobody_parked_only_bumps_the_epoch() {
        let signal = ProgressSignal::default();
        assert_eq!(signal.epoch(), 0);
        signal.notify();
        signal.notify();
        assert_eq!(signal.epoch(), 2);
        assert_eq!(signal.parked_threads(), 0);
        assert!(format!("{signal:?}").contains("epoch: 2"));
    }

    /// A park with a stale `seen` returns at once, even without a deadline:
    /// a hang here is the lost wake-up, and the watchdog reports it.
    #[test]
    fn a_notify_before_park_is_not_lost() {
        with_watchdog("park after notify", || {
            let signal = ProgressSignal::new();
            let seen = signal.epoch();
            signal.notify();
            signal.park(seen, None);
            assert_eq!(signal.epoch(), seen + 1);
            assert_eq!(signal.parked_threads(), 0);
        });
    }

    #[test]
    fn a_park_always_deregisters_its_thread() {
        let signal = ProgressSignal::new();
        let seen = signal.epoch();
        signal.notify();
        // Returns at once (stale `seen`) and through the timeout path.
        signal.park(seen, Some(Duration::ZERO));
        signal.park(seen, None);
        assert_eq!(signal.parked_threads(), 0);
        assert!(signal.parked.lock().is_empty());
    }

    /// Times nothing: only that a park with a deadline and no notify returns.
    #[test]
    fn a_park_with_a_timeout_returns_without_a_notify() {
        with_watchdog("park timeout", || {
            let signal = ProgressSignal::new();
            let seen = signal.epoch();
            signal.park(seen, Some(Duration::from_millis(1)));
            assert_eq!(signal.epoch(), seen);
            assert_eq!(signal.parked_threads(), 0);
        });
    }

    /// ```text
    /// 3 parker threads                    test thread
    /// seen = epoch(); barrier ──────────▶ barrier
    /// park(seen, None)                    until 3 are registered
    ///                                     notify()
    /// each park returns ◀──────────────── unpark every registered thread
    /// ```
    /// Each parker loops on its own condition (the epoch moved), as callers
    /// do, so a spurious return cannot end the test early.
    #[test]
    fn a_notify_wakes_every_parked_thread() {
        with_watchdog("notify wakes every parker", || {
            let signal = Arc::new(ProgressSignal::new());
            let started = Arc::new(Barrier::new(4));
            let parkers: Vec<_> = (0..3)
                .map(|_| {
                    let signal = Arc::clone(&signal);
                    let started = Arc::clone(&started);
                    thread::spawn(move || {
                        let first_seen = signal.epoch();
                        started.wait();
                        loop {
                            let seen = signal.epoch();
                            if seen != first_seen {
                                return seen;
                            }
                            signal.park(seen, None);
                        }
                    })
                })
                .collect();
            started.wait();
            until_parked(&signal, 3);
            signal.notify();
            for parker in parkers {
                assert_eq!(parker.join().expect("a parker finishes"), 1);
            }
            assert_eq!(signal.parked_threads(), 0);
        });
    }
}

#[cfg(verter_loom)]
mod models {
    use crate::progress::ProgressSignal;
    use crate::sync::{Arc, AtomicUsize, Ordering};

    /// Parks the way every caller does: read the epoch, check the condition
    /// (`work` non-zero), park with the epoch read, loop.
    fn park_until_work(signal: &ProgressSignal, work: &AtomicUsize) {
        loop {
            let seen = signal.epoch();
            if work.load(Ordering::SeqCst) != 0 {
                return;
            }
            signal.park(seen, None);
        }
    }

    /// One thread parks with the epoch it read while the other makes work
    /// visible and notifies: the parker always returns; loom reports a lost
    /// wake-up as a deadlock.
    #[test]
    fn loom_a_notify_racing_a_park_is_never_lost() {
        loom::model(|| {
            let signal = Arc::new(ProgressSignal::new());
            let work = Arc::new(AtomicUsize::new(0));
            let parker = {
                let signal = Arc::clone(&signal);
                let work = Arc::clone(&work);
                loom::thread::spawn(move || park_until_work(&signal, &work))
            };
            work.store(1, Ordering::SeqCst);
            signal.notify();
            parker.join().expect("the parker finishes");
            assert_eq!(signal.epoch(), 1);
        });
    }

    /// Two parkers and one notify: both always return.
    #[test]
    fn loom_one_notify_wakes_both_parked_threads() {
        loom::model(|| {
            let signal = Arc::new(ProgressSignal::new());
            let work = Arc::new(AtomicUsize::new(0));
            let parkers: Vec<_> = (0..2)
                .map(|_| {
                    let signal = Arc::clone(&signal);
                    let work = Arc::clone(&work);
                    loom::thread::spawn(move || park_until_work(&signal, &work))
                })
                .collect();
            work.store(1, Ordering::SeqCst);
            signal.notify();
            for parker in parkers {
                parker.join().expect("a parker finishes");
            }
        });
    }
}
