//! Remote work in a soak ([`crate::remote`]): a small pool of "remote"
//! threads answers the parked work in random order, with seeded pauses —
//! rightly, and, to work the scheduler abandoned, wrongly or by dropping
//! the completion — while the host threads wait on their answers; at every
//! quiescent checkpoint the leader checks that every started piece of work
//! was answered (and told of its cancellation when it was cancelled before
//! its answer), and that the scheduler holds no remote work and no
//! remote reservation.
//!
//! This module owns the remote threads and those checks; a remote thread
//! touches the scheduler only through the completions it delivers and one
//! read of a file's committed Artifact after a wrong answer.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::inline::panic_text;
use crate::ops::Delivery;
use crate::remote::{Delivered, RemoteDesk};
use crate::rng::SimRng;

use super::{WATCHDOG, World};

/// Starts `threads` remote threads answering `desk`'s parked work, each
/// drawing its pauses and choices from its own stream of `seed`.
pub(super) fn spawn_workers(
    world: &Arc<World>,
    desk: &Arc<RemoteDesk>,
    threads: usize,
    seed: u64,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut rng = SimRng::new(seed);
    (0..threads)
        .map(|id| {
            let (world, desk) = (Arc::clone(world), Arc::clone(desk));
            let rng = rng.fork();
            std::thread::Builder::new()
                .name(format!("sim-remote-{id}"))
                .spawn(move || work(&world, &desk, rng))
                .expect("spawning a simulated remote thread")
        })
        .collect()
}

/// One remote thread: takes a parked job at random, maybe pauses (a
/// seeded number of yields), and answers it.
fn work(world: &World, desk: &RemoteDesk, mut rng: SimRng) {
    while let Some(job) = desk.wait_take() {
        if rng.chance(5) {
            check_budget(world);
        }
        if rng.chance(30) {
            for _ in 0..rng.below(64) {
                std::thread::yield_now();
            }
        }
        // Cancelled work is answered every way; other work rightly, or,
        // when its answer is a failure anyway, now and then by a drop
        // (`deliver` answers it rightly when a drop is not allowed).
        let how = if job.is_cancelled() {
            *rng.pick(&[Delivery::Answer, Delivery::Garbage, Delivery::Drop])
        } else if rng.chance(25) {
            Delivery::Drop
        } else {
            Delivery::Answer
        };
        let delivered =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| desk.deliver(job, how)));
        match delivered {
            Ok(delivered) => check_refused(world, &delivered),
            Err(payload) => world.violate(format!(
                "a remote delivery panicked: {}",
                panic_text(&*payload)
            )),
        }
    }
}

/// No more remote work started and not committed than the budget allows
/// (batched reservations aside).
fn check_budget(world: &World) {
    let Some((budget, _)) = world.config.remote() else {
        return;
    };
    let ledger = world.scheduler.observe().ledger();
    let budgeted = ledger.remote_in_use.saturating_sub(ledger.remote_batched);
    if ledger.remote_budget != budget || budgeted > budget {
        world.violate(format!(
            "remote capacity over its budget of {budget}: {ledger:?}"
        ));
    }
}

/// A wrong answer to cancelled work must not be the file's output.
fn check_refused(world: &World, delivered: &Delivered) {
    let Some((verter_dag::WorkNodeIdentity::File(key), wrong)) = &delivered.garbage else {
        return;
    };
    let output = world
        .scheduler
        .snapshot()
        .committed_outputs([(&key.file.canonical, key.stage)])
        .pop()
        .flatten();
    let Some(output) = output else {
        return;
    };
    world.committed_hits.fetch_add(1, Ordering::Relaxed);
    if output
        .as_artifact()
        .is_some_and(|artifact| artifact.data() == wrong)
    {
        world.violate(format!(
            "a late answer to cancelled work was published: {} reads `{wrong}`",
            key.file.canonical
        ));
    }
}

/// At a checkpoint (the scheduler idle): every started job settled, no
/// remote work or remote reservation left, nothing the desk found.
pub(super) fn check_quiescent(world: &World, checkpoint: u64, when: &str) {
    let scheduler = &*world.scheduler;
    if let Some(desk) = &world.remote {
        if !desk.wait_settled(WATCHDOG) {
            for unsettled in desk.unsettled() {
                world.violate(format!(
                    "checkpoint {checkpoint}: remote work unsettled {when} after {WATCHDOG:?}: {unsettled}"
                ));
            }
        }
        for violation in desk.take_violations() {
            world.violate(format!("checkpoint {checkpoint}: {violation}"));
        }
    }
    let report = scheduler.observe().quiescence_report();
    let ledger = scheduler.observe().ledger();
    if report.remote_in_flight != 0 || ledger.remote_in_use != 0 {
        world.violate(format!(
            "checkpoint {checkpoint}: remote work left {when}: {} in flight, {} remote reservations",
            report.remote_in_flight, ledger.remote_in_use
        ));
    }
}
