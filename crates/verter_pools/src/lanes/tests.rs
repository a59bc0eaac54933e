//! Unit tests of the lane choice, and loom models of racing seals.

#[cfg(not(verter_loom))]
mod threads {
    use crate::lanes::{Lane, WriteLanes};

    /// Invariant 2 in one thread: with no write waiting an urgent item takes
    /// the urgent lane; while writes wait, every item takes their lane; the
    /// counts return to zero as writes are admitted.
    #[test]
    fn every_item_follows_the_waiting_writes() {
        let lanes = WriteLanes::new();
        assert_eq!(lanes.seal(true, false), Lane::Urgent);
        assert_eq!(lanes.seal(false, false), Lane::Normal);

        assert_eq!(lanes.seal(false, true), Lane::Normal, "a background write");
        assert_eq!(
            lanes.seal(true, false),
            Lane::Normal,
            "an urgent read follows it"
        );
        assert_eq!(
            lanes.seal(true, true),
            Lane::Normal,
            "so does an urgent write"
        );
        assert_eq!(lanes.waiting(Lane::Normal), 2);
        lanes.admitted(Lane::Normal);
        lanes.admitted(Lane::Normal);

        assert_eq!(
            lanes.seal(true, true),
            Lane::Urgent,
            "an edit overtakes reads"
        );
        assert_eq!(
            lanes.seal(false, false),
            Lane::Urgent,
            "what follows it too"
        );
        assert_eq!(lanes.seal(false, true), Lane::Urgent);
        assert_eq!(lanes.waiting(Lane::Urgent), 2);
        assert_eq!(lanes.waiting(Lane::Normal), 0);
        lanes.admitted(Lane::Urgent);
        lanes.admitted(Lane::Urgent);
        assert_eq!(lanes.seal(false, false), Lane::Normal);
    }

    /// Invariant 1 under real threads: racing writes share one lane.
    #[test]
    fn racing_writes_share_one_lane() {
        for _ in 0..200 {
            let lanes = WriteLanes::new();
            let sealed: Vec<Lane> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..4)
                    .map(|i| {
                        let lanes = &lanes;
                        scope.spawn(move || lanes.seal(i % 2 == 0, true))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(sealed.iter().all(|lane| *lane == sealed[0]), "{sealed:?}");
            assert_eq!(lanes.waiting(sealed[0]), 4);
        }
    }
}

#[cfg(verter_loom)]
mod models {
    use crate::lanes::{Lane, WriteLanes};
    use crate::sync::{Arc, AtomicUsize, Ordering};

    /// Invariant 1: an urgent and a normal write sealed concurrently land in
    /// one lane, and an item sealed after both follows them.
    #[test]
    fn loom_racing_writes_never_wait_in_both_lanes() {
        loom::model(|| {
            let lanes = Arc::new(WriteLanes::new());
            let urgent = {
                let lanes = Arc::clone(&lanes);
                loom::thread::spawn(move || lanes.seal(true, true))
            };
            let normal = lanes.seal(false, true);
            let urgent = urgent.join().expect("the sealer finishes");
            assert_eq!(urgent, normal, "writes wait in one lane");
            assert_eq!(lanes.seal(true, false), normal, "a later item follows them");
        });
    }

    /// Invariant 2 across threads: a reader that saw the writer's flag (set
    /// after its seal) takes the write's lane, whatever it asks for.
    #[test]
    fn loom_an_item_sealed_after_a_write_follows_it() {
        loom::model(|| {
            let lanes = Arc::new(WriteLanes::new());
            let sent = Arc::new(AtomicUsize::new(0));
            let writer = {
                let (lanes, sent) = (Arc::clone(&lanes), Arc::clone(&sent));
                loom::thread::spawn(move || {
                    let lane = lanes.seal(false, true);
                    sent.store(1, Ordering::Release);
                    lane
                })
            };
            let seen = sent.load(Ordering::Acquire) == 1;
            let read = lanes.seal(true, false);
            let write = writer.join().expect("the writer finishes");
            if seen {
                assert_eq!(read, write, "the urgent read must not overtake the write");
            }
            lanes.admitted(write);
            assert_eq!(lanes.waiting(Lane::Normal) + lanes.waiting(Lane::Urgent), 0);
        });
    }
}
