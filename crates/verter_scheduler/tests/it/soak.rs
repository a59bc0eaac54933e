//! A seeded random soak: 8 threads upsert, invalidate, remove and request on
//! 50 files whose blocker graphs change with every edit (cycles included),
//! 10 000 operations in all. At quiescence every handle is answered, the
//! ledger is zero, and every file's rebuilt Artifact names exactly the live
//! versions of its blockers. `VERTER_SOAK_OPS` raises the operation count.
//!
//! During the run, the scheduler's own `assert!` at every Artifact commit
//! checks that a current build was made from blocker versions that are all
//! live at that moment (one consistent moment); a violation would panic a
//! worker, leak its reservation and fail the ledger check below.

use std::sync::{Arc, Barrier};

use verter_dag::{Canonical, Priority, TargetStage};
use verter_scheduler::{Request, RequestError};

use crate::support::*;

const FILES: usize = 50;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: small, seeded, reproducible.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_text(rng: &mut Rng) -> String {
    let mut lines = vec![format!("word{}", rng.below(100))];
    for _ in 0..rng.below(3) {
        lines.push(format!("use f{}.rs", rng.below(FILES)));
    }
    lines.join("\n")
}

#[test]
fn a_seeded_soak_answers_everything_and_publishes_nothing_stale() {
    let total_ops: usize = std::env::var("VERTER_SOAK_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    watchdog("soak", move || {
        let files = MemFiles::default();
        let mut seed_rng = Rng(0x005e_ed0f_5eed);
        for i in 0..FILES {
            files.write(&format!("f{i}.rs"), &random_text(&mut seed_rng));
        }
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let start = Arc::new(Barrier::new(8));
        let workers: Vec<_> = (0..8u64)
            .map(|t| {
                let (scheduler, files, start) =
                    (Arc::clone(&scheduler), files.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                    let mut handles = Vec::new();
                    start.wait();
                    for _ in 0..total_ops / 8 {
                        let path = format!("f{}.rs", rng.below(FILES));
                        match rng.below(10) {
                            0 | 1 => {
                                let text = random_text(&mut rng);
                                files.write(&path, &text);
                                handles.push(scheduler.upsert(&path, text, Priority::High));
                            }
                            2 => {
                                let _ = scheduler.invalidate(&path).expect("canonical");
                            }
                            3 => scheduler.remove(&path).expect("canonical"),
                            4 | 5 => handles.push(
                                scheduler.submit_request(Request::new(path, TargetStage::Analysis)),
                            ),
                            _ => handles.push(scheduler.submit_request(
                                Request::new(path, ARTIFACT).priority(Priority::ALL[rng.below(4)]),
                            )),
                        }
                        if rng.below(50) == 0 {
                            // Now and then, wait for everything so far.
                            for handle in &handles {
                                let _ = scheduler.wait(handle);
                            }
                        }
                    }
                    handles
                })
            })
            .collect();
        let handles: Vec<_> = workers
            .into_iter()
            .flat_map(|w| w.join().expect("a soak thread panicked"))
            .collect();
        // Subscribed before the final waits, so no completion event after
        // this point is missed by the quiescence loop below.
        let events = hooks.subscribe();
        for handle in &handles {
            match scheduler.wait(handle) {
                Ok(_)
                | Err(RequestError::Superseded { .. })
                | Err(RequestError::Shutdown { .. })
                | Err(RequestError::DependencyFailed { .. }) => {}
                Err(other) => panic!("unexpected answer: {other:?}"),
            }
        }
        // Quiescence: nothing waits, nothing runs. Work nobody waits for (a
        // blocker's Analysis admitted by demand) may still be finishing:
        // wait for the ledger through events, not a clock.
        while scheduler.observe().ledger().in_use() > 0
            || scheduler.observe().ready_queue_depth() > 0
        {
            let _ = events.recv_timeout(std::time::Duration::from_secs(60));
        }
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
        // Final consistency: every file's Artifact names its blockers' live
        // versions.
        for i in 0..FILES {
            let path = format!("f{i}.rs");
            let handle = scheduler.ask(Artifact(PROFILE).of(path.as_str()));
            let Ok(artifact) = scheduler.wait(&handle) else {
                continue; // e.g. a blocker whose file was removed: a typed failure
            };
            let live = scheduler
                .snapshot()
                .version_of(&Canonical::from(path.as_str()))
                .expect("built, so live");
            assert_eq!(artifact.version, live, "{path}");
            for part in artifact.data().split(',').skip(1) {
                let (blocker, rest) = part.split_once("@g").expect("blocker@gN=words");
                let generation: u64 = rest.split('=').next().unwrap().parse().unwrap();
                let blocker_live = scheduler
                    .snapshot()
                    .version_of(&Canonical::from(blocker))
                    .expect("a blocker of a built artifact is live");
                assert_eq!(
                    generation,
                    blocker_live.generation.get(),
                    "{path} uses {blocker}"
                );
            }
        }
    });
}
