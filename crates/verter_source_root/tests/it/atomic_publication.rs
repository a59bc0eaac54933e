//! Atomic publication under real threads: two publishers change two files in
//! every transition while two capturers take roots and read both files; no
//! root ever shows one file changed and the other not.
//!
//! Each iteration is released by one barrier and joined by another, so the
//! threads' operations overlap by handshake, never by sleeping. What each
//! thread does per iteration comes from a seeded generator. Violations are
//! collected rather than asserted on worker threads, so a failure cannot
//! strand the other threads at a barrier.
#![cfg(not(verter_loom))]

use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use verter_dag::{Canonical, Incarnation};
use verter_source_root::{ContentHash, SchedulerSourceDirectory, SchedulerSourceRoot};

use crate::{SplitMix, auto_gc_directory, seed, version, with_watchdog};

const ITERATIONS: usize = 2_000;
const PUBLISHERS: u64 = 2;
const CAPTURERS: u64 = 2;

#[test]
fn no_root_sees_half_of_a_two_file_transition() {
    let seed = seed(0xa70_41c);
    with_watchdog("no_root_sees_half_of_a_two_file_transition", move || {
        run(seed);
    });
}

struct Files {
    object: Incarnation,
    a: Canonical,
    b: Canonical,
}

impl Files {
    /// One transition setting both files to the transition's own epoch:
    /// generation, hash and payload all equal the epoch.
    fn publish_both(&self, directory: &SchedulerSourceDirectory<u64>) {
        directory.publish_transition(|tx| {
            let epoch = tx.epoch().get();
            for file in [&self.a, &self.b] {
                tx.present(
                    *file,
                    version(self.object, epoch),
                    ContentHash(epoch),
                    epoch,
                    16,
                );
            }
        });
    }

    /// Both files must read the root's own epoch: every transition changed
    /// both to its epoch, so anything else is half a transition.
    fn check(
        &self,
        directory: &SchedulerSourceDirectory<u64>,
        root: &SchedulerSourceRoot,
        violations: &Mutex<Vec<String>>,
    ) {
        let expected = Some(ContentHash(root.visible_epoch().get()));
        let a = directory.state_at(root, self.a).hash();
        let b = directory.state_at(root, self.b).hash();
        if a != expected || b != expected {
            violations.lock().expect("violations").push(format!(
                "root at {} read a.rs {a:?} and b.rs {b:?}",
                root.visible_epoch()
            ));
        }
    }
}

fn run(seed: u64) {
    let directory = Arc::new(auto_gc_directory(64));
    let files = Arc::new(Files {
        object: Incarnation::allocate(),
        a: "a.rs".into(),
        b: "b.rs".into(),
    });
    // Epoch 1 sets both files, so every root reads a present source.
    files.publish_both(&directory);
    let parties = (PUBLISHERS + CAPTURERS) as usize + 1;
    let start = Arc::new(Barrier::new(parties));
    let end = Arc::new(Barrier::new(parties));
    let violations = Arc::new(Mutex::new(Vec::new()));

    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|index| {
            let (directory, files) = (Arc::clone(&directory), Arc::clone(&files));
            let (start, end) = (Arc::clone(&start), Arc::clone(&end));
            let mut rng = SplitMix(seed ^ (index + 1).wrapping_mul(0x1000_0001));
            thread::spawn(move || {
                let mut published = 0;
                for _ in 0..ITERATIONS {
                    start.wait();
                    for _ in 0..=rng.below(3) {
                        files.publish_both(&directory);
                        published += 1;
                    }
                    end.wait();
                }
                published
            })
        })
        .collect();

    let capturers: Vec<_> = (0..CAPTURERS)
        .map(|index| {
            let (directory, files) = (Arc::clone(&directory), Arc::clone(&files));
            let (start, end) = (Arc::clone(&start), Arc::clone(&end));
            let violations = Arc::clone(&violations);
            let mut rng = SplitMix(seed ^ (index + 1).wrapping_mul(0x2000_0003));
            thread::spawn(move || {
                // Roots kept across iterations pin versions while GC runs.
                let mut held: Vec<SchedulerSourceRoot> = Vec::new();
                let mut captured = 0;
                for _ in 0..ITERATIONS {
                    start.wait();
                    for _ in 0..=rng.below(3) {
                        let root = directory.capture_root();
                        files.check(&directory, &root, &violations);
                        captured += 1;
                        if rng.below(4) == 0 {
                            held.push(root);
                        }
                    }
                    if rng.below(8) == 0 {
                        let _ = directory.gc();
                    }
                    if held.len() > 8 {
                        held.swap_remove(rng.below(held.len() as u64) as usize);
                    }
                    end.wait();
                }
                // Sealed: the roots still held answer as they did.
                for root in &held {
                    files.check(&directory, root, &violations);
                }
                captured
            })
        })
        .collect();

    for _ in 0..ITERATIONS {
        start.wait();
        end.wait();
    }
    let published: u64 = publishers
        .into_iter()
        .map(|publisher| publisher.join().expect("publisher panicked"))
        .sum();
    let captured: u64 = capturers
        .into_iter()
        .map(|capturer| capturer.join().expect("capturer panicked"))
        .sum();
    let violations = violations.lock().expect("violations");
    assert!(
        violations.is_empty(),
        "{} violations, first: {:?}",
        violations.len(),
        violations.first()
    );
    assert!(captured >= (ITERATIONS as u64) * CAPTURERS);
    // Every publication got its own epoch, after the initial one.
    assert_eq!(directory.current_epoch().get(), 1 + published);
    assert_eq!(directory.stats().live_roots, 0);
}
