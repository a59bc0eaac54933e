//! Unit tests of the one-shot wait cell: threads with handshakes, a
//! hand-rolled waker, and a loom model of set against wait.

#[cfg(not(verter_loom))]
mod threads {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread;
    use std::time::Duration;

    use crate::test_support::with_watchdog;
    use crate::wait_cell::WaitCell;

    /// A waker that counts how often it was woken.
    #[derive(Default)]
    struct CountingWaker {
        wakes: AtomicUsize,
    }

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.wakes.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        (counter, waker)
    }

    #[test]
    fn only_the_first_set_wins() {
        let cell = WaitCell::new();
        assert!(!cell.is_set());
        assert_eq!(cell.try_get(), None);
        assert_eq!(cell.set(1), Ok(()));
        assert_eq!(cell.set(2), Err(2));
        assert!(cell.is_set());
        assert_eq!(cell.try_get(), Some(1));
        assert_eq!(cell.wait(), 1);
    }

    #[test]
    fn wait_timeout_returns_none_when_unset() {
        let cell = WaitCell::<u32>::new();
        assert_eq!(cell.wait_timeout(Duration::from_millis(1)), None);
        assert_eq!(cell.wait_timeout(Duration::ZERO), None);
        cell.set(7).expect("the cell was empty");
        assert_eq!(cell.wait_timeout(Duration::ZERO), Some(7));
        assert_eq!(cell.wait_timeout(Duration::MAX), Some(7));
    }

    /// ```text
    /// 3 waiter threads                test thread
    /// report "about to wait"; wait    3 wakers polled: Pending (one polled twice)
    ///                                 every waiter reported; set(42)
    /// each wait returns 42 ◀───────── notify_all, each waker woken once
    /// ```
    /// A waiter that reported but has not parked yet still gets the value:
    /// it checks the cell under the lock before parking.
    #[test]
    fn every_waiter_is_woken_exactly_once() {
        with_watchdog("wait cell wakes", || {
            let cell = Arc::new(WaitCell::<u64>::new());
            let ready = Arc::new(Barrier::new(4));
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let cell = Arc::clone(&cell);
                    let ready = Arc::clone(&ready);
                    thread::spawn(move || {
                        ready.wait();
                        cell.wait()
                    })
                })
                .collect();

            let wakers: Vec<_> = (0..3).map(|_| counting_waker()).collect();
            for (_, waker) in &wakers {
                let mut cx = Context::from_waker(waker);
                assert_eq!(cell.poll_get(&mut cx), Poll::Pending);
            }
            // Polling the same task again registers no second waker.
            let mut cx = Context::from_waker(&wakers[0].1);
            assert_eq!(cell.poll_get(&mut cx), Poll::Pending);

            ready.wait();
            cell.set(42).expect("the cell was empty");
            for waiter in waiters {
                assert_eq!(waiter.join().expect("a waiter finishes"), 42);
            }
            for (counter, waker) in &wakers {
                assert_eq!(counter.wakes.load(Ordering::SeqCst), 1);
                let mut cx = Context::from_waker(waker);
                assert_eq!(cell.poll_get(&mut cx), Poll::Ready(42));
            }
            // A losing set wakes nobody again.
            assert_eq!(cell.set(43), Err(43));
            for (counter, _) in &wakers {
                assert_eq!(counter.wakes.load(Ordering::SeqCst), 1);
            }
        });
    }

    #[test]
    fn a_waker_polled_after_set_is_answered_without_registering() {
        let cell = WaitCell::new();
        cell.set("done").expect("the cell was empty");
        let (counter, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(cell.poll_get(&mut cx), Poll::Ready("done"));
        assert_eq!(counter.wakes.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn debug_shows_the_value() {
        let cell = WaitCell::new();
        cell.set(5u8).expect("the cell was empty");
        assert!(format!("{cell:?}").contains("Some(5)"));
    }
}

#[cfg(verter_loom)]
mod models {
    use crate::sync::Arc;
    use crate::wait_cell::WaitCell;

    /// A waiter parked (or about to park) on the cell is woken by `set`,
    /// whatever the interleaving; loom reports a lost wake-up as a deadlock.
    /// A second setter racing the first loses and gets its value back.
    #[test]
    fn loom_a_set_wakes_the_parked_waiter() {
        loom::model(|| {
            let cell = Arc::new(WaitCell::<u8>::new());
            let setter = {
                let cell = Arc::clone(&cell);
                loom::thread::spawn(move || cell.set(1).is_ok())
            };
            let racer_won = cell.set(2).is_ok();
            let setter_won = setter.join().expect("the setter finishes");
            assert!(racer_won != setter_won, "exactly one set wins");
            let expected = if setter_won { 1 } else { 2 };
            assert_eq!(cell.wait(), expected);
        });
    }

    /// A thread waiting while another sets: the waiter always returns.
    #[test]
    fn loom_a_waiter_never_misses_the_set() {
        loom::model(|| {
            let cell = Arc::new(WaitCell::<u8>::new());
            let waiter = {
                let cell = Arc::clone(&cell);
                loom::thread::spawn(move || cell.wait())
            };
            cell.set(9).expect("the only setter");
            assert_eq!(waiter.join().expect("the waiter finishes"), 9);
        });
    }
}
