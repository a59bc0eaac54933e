//! Unit tests of the semaphore: real threads with channel handshakes, and
//! loom models of acquire/release.

#[cfg(not(verter_loom))]
mod threads {
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;

    use crate::semaphore::CpuConcurrencySemaphore;
    use crate::test_support::{WATCHDOG, with_watchdog};

    #[test]
    #[should_panic(expected = "pass permits >= 1")]
    fn a_semaphore_without_permits_is_refused() {
        let _ = CpuConcurrencySemaphore::new(0);
    }

    #[test]
    fn dropping_a_permit_frees_its_slot() {
        let semaphore = Arc::new(CpuConcurrencySemaphore::new(2));
        let borrowed = semaphore.acquire();
        let owned = semaphore.acquire_owned();
        assert_eq!(semaphore.available(), 0);
        drop(borrowed);
        assert_eq!(semaphore.available(), 1);
        drop(owned);
        assert_eq!(semaphore.available(), 2);
        assert_eq!(semaphore.capacity(), 2);
    }

    #[test]
    fn try_acquire_owned_returns_none_when_exhausted() {
        let semaphore = Arc::new(CpuConcurrencySemaphore::new(2));
        let first = semaphore.try_acquire_owned().expect("a permit is free");
        let second = semaphore.try_acquire_owned().expect("a permit is free");
        assert!(semaphore.try_acquire_owned().is_none());
        assert!(semaphore.try_acquire().is_none());
        drop(first);
        let third = semaphore.try_acquire_owned();
        assert!(third.is_some(), "the dropped permit is free again");
        drop((second, third));
        assert_eq!(semaphore.available(), 2);
    }

    #[test]
    fn a_permit_is_released_when_its_holder_panics() {
        let semaphore = Arc::new(CpuConcurrencySemaphore::new(1));
        let holder = Arc::clone(&semaphore);
        let unwound = panic::catch_unwind(AssertUnwindSafe(move || {
            let _permit = holder.acquire_owned();
            panic!("the holder fails while holding its permit");
        }));
        assert!(unwound.is_err());
        assert_eq!(semaphore.available(), 1);

        let borrowed = panic::catch_unwind(AssertUnwindSafe(|| {
            let _permit = semaphore.acquire();
            panic!("the borrower fails while holding its permit");
        }));
        assert!(borrowed.is_err());
        assert_eq!(semaphore.available(), 1);
    }

    /// ```text
    /// test thread                         acquirer thread
    /// hold both permits
    /// spawn ────────────────────────────▶ "about to acquire"; acquire() parks
    /// released = true; drop one permit ─▶ acquire returns; reports `released`
    /// then: the acquirer saw `released == true`, so it got through only
    ///       after a permit dropped
    /// ```
    #[test]
    fn the_acquirer_past_capacity_blocks_until_a_permit_drops() {
        with_watchdog("capacity handshake", || {
            let semaphore = Arc::new(CpuConcurrencySemaphore::new(2));
            let first = semaphore.acquire_owned();
            let second = semaphore.acquire_owned();
            let released = Arc::new(AtomicBool::new(false));
            let (started_tx, started_rx) = crossbeam_channel::bounded(1);
            let (acquired_tx, acquired_rx) = crossbeam_channel::bounded(1);

            let acquirer = {
                let semaphore = Arc::clone(&semaphore);
                let released = Arc::clone(&released);
                thread::spawn(move || {
                    started_tx.send(()).expect("test thread listens");
                    let permit = semaphore.acquire();
                    acquired_tx
                        .send(released.load(Ordering::SeqCst))
                        .expect("test thread listens");
                    drop(permit);
                })
            };

            started_rx.recv().expect("the acquirer starts");
            assert!(
                acquired_rx.try_recv().is_err(),
                "the third acquirer got a permit while both were held"
            );
            released.store(true, Ordering::SeqCst);
            drop(first);
            let saw_release = acquired_rx
                .recv_timeout(WATCHDOG)
                .expect("the acquirer gets the dropped permit");
            assert!(saw_release, "the acquirer got through before a release");
            acquirer.join().expect("the acquirer finishes");
            drop(second);
            assert_eq!(semaphore.available(), 2);
        });
    }

    #[test]
    fn many_threads_never_hold_more_than_the_permits() {
        with_watchdog("many acquirers", || {
            const PERMITS: usize = 3;
            let semaphore = Arc::new(CpuConcurrencySemaphore::new(PERMITS));
            let in_use = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let workers: Vec<_> = (0..8)
                .map(|_| {
                    let semaphore = Arc::clone(&semaphore);
                    let in_use = Arc::clone(&in_use);
                    thread::spawn(move || {
                        for _ in 0..200 {
                            let _permit = semaphore.acquire_owned();
                            let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                            assert!(now <= PERMITS, "{now} permits held at once");
                            in_use.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            for worker in workers {
                worker.join().expect("a worker finishes");
            }
            assert_eq!(semaphore.available(), PERMITS);
        });
    }
}

#[cfg(verter_loom)]
mod models {
    use crate::semaphore::CpuConcurrencySemaphore;
    use crate::sync::{Arc, AtomicUsize, Ordering};

    /// Three threads (the model's main thread and two spawned) contend for
    /// two permits with blocking acquires: never more than two are held, no
    /// wake-up is lost (loom reports a deadlock otherwise) and every permit
    /// comes back.
    #[test]
    fn loom_three_threads_never_exceed_the_permits() {
        loom::model(|| {
            let semaphore = Arc::new(CpuConcurrencySemaphore::new(2));
            let in_use = Arc::new(AtomicUsize::new(0));
            let work = |semaphore: Arc<CpuConcurrencySemaphore>, in_use: Arc<AtomicUsize>| {
                let _permit = semaphore.acquire_owned();
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= 2, "{now} permits held at once");
                in_use.fetch_sub(1, Ordering::SeqCst);
            };
            let spawned: Vec<_> = (0..2)
                .map(|_| {
                    let semaphore = Arc::clone(&semaphore);
                    let in_use = Arc::clone(&in_use);
                    loom::thread::spawn(move || work(semaphore, in_use))
                })
                .collect();
            work(Arc::clone(&semaphore), Arc::clone(&in_use));
            for thread in spawned {
                thread.join().expect("a model thread finishes");
            }
            assert_eq!(semaphore.available(), 2);
        });
    }

    /// With one permit, a `try_acquire_owned` racing a blocking holder either
    /// gets the permit or `None`, never blocks, and never double-grants.
    #[test]
    fn loom_try_acquire_never_double_grants() {
        loom::model(|| {
            let semaphore = Arc::new(CpuConcurrencySemaphore::new(1));
            let in_use = Arc::new(AtomicUsize::new(0));
            let holder = {
                let semaphore = Arc::clone(&semaphore);
                let in_use = Arc::clone(&in_use);
                loom::thread::spawn(move || {
                    let _permit = semaphore.acquire();
                    assert_eq!(in_use.fetch_add(1, Ordering::SeqCst), 0);
                    in_use.fetch_sub(1, Ordering::SeqCst);
                })
            };
            if let Some(permit) = semaphore.try_acquire_owned() {
                assert_eq!(in_use.fetch_add(1, Ordering::SeqCst), 0);
                in_use.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
            }
            holder.join().expect("the holder finishes");
            assert_eq!(semaphore.available(), 1);
        });
    }
}
