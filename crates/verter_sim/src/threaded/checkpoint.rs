//! The leader's part of a quiescent checkpoint: the scheduler is idle, its
//! invariants hold, every stage of every file equals the oracle's answer,
//! the causal log's new records are traced to host actions (`causes.rs`),
//! and now and then a reset empties every table or a fresh scheduler
//! agrees with the oracle.
//!
//! This module owns those checks; it runs only while every host thread
//! waits at the barrier, and it never changes a file's state except by the
//! reset it records.

use std::sync::atomic::Ordering;
use std::time::Duration;

use verter_dag::Priority;
use verter_scheduler::{CompletionHandle, QuiescenceReport};

use crate::inline::{counters_agree, fresh_disagreement};
use crate::lang::SimExecutor;
use crate::ops::STAGES;
use crate::oracle::{Asked, Change, OPEN, Reader, render};

use super::{WATCHDOG, World};

/// The leader's part of a checkpoint: quiescence, invariants, an exact
/// comparison of every stage of every file, and now and then a reset or a
/// comparison with a fresh scheduler.
pub(super) fn leader_check(world: &World) {
    let scheduler = &*world.scheduler;
    let checkpoint = world.checkpoints.fetch_add(1, Ordering::SeqCst) + 1;
    // A liveness watchdog, not a timing assertion: a scheduler that is not
    // idle a minute after every request was answered has lost work.
    if !scheduler.wait_idle(Duration::from_secs(60)) {
        world.violate(format!(
            "checkpoint {checkpoint}: not idle a minute after every request was answered"
        ));
        return;
    }
    check_quiescent(world, checkpoint, "at the checkpoint");
    world.oracle.collapse();
    let reader = Reader {
        thread: usize::MAX,
        seq: u64::MAX,
    };
    let start = world.tick();
    let asked: Vec<(CompletionHandle<SimExecutor>, Asked)> = world
        .paths
        .iter()
        .flat_map(|path| STAGES.iter().map(move |stage| (path, *stage)))
        .map(|(path, stage)| {
            let request =
                verter_scheduler::Request::new(path.as_str(), stage).priority(Priority::Normal);
            let handle = scheduler.submit_request(request);
            world.submitted.fetch_add(1, Ordering::SeqCst);
            let asked = Asked {
                path: path.clone(),
                stage,
                start,
                end: OPEN,
                reader: Some(reader),
                own_record: None,
                carried_text: false,
            };
            (handle, asked)
        })
        .collect();
    for (handle, mut asked) in asked {
        let Some(result) = handle.wait_timeout(WATCHDOG) else {
            world.violate(format!(
                "checkpoint {checkpoint}: {} of {} was not answered within {WATCHDOG:?}",
                asked.stage, asked.path
            ));
            return;
        };
        asked.end = world.tick();
        world.answers.fetch_add(1, Ordering::Relaxed);
        let answer = render(&result);
        world.artifact_deps.lock().count(&answer);
        if let Err(message) = world.oracle.judge(&asked, &answer) {
            world.violate(format!("checkpoint {checkpoint}, exact: {message}"));
        }
    }
    if !scheduler.wait_idle(Duration::from_secs(60)) {
        world.violate(format!(
            "checkpoint {checkpoint}: not idle after the exact comparison"
        ));
        return;
    }
    check_quiescent(world, checkpoint, "after the exact comparison");
    if let Some(window) = &world.causes {
        for violation in window.lock().check(scheduler, checkpoint) {
            world.violate(violation);
        }
    }
    if checkpoint.is_multiple_of(4)
        && let Some(message) = fresh_disagreement(&world.fs, &world.oracle)
    {
        world.violate(format!("checkpoint {checkpoint}: {message}"));
    }
    if checkpoint.is_multiple_of(3) {
        let start = world.tick();
        let records: Vec<usize> = world
            .paths
            .iter()
            .map(|path| {
                world
                    .oracle
                    .apply(path, &Change::Remove, start, OPEN, usize::MAX, u64::MAX)
            })
            .collect();
        scheduler.reset();
        world.resets.fetch_add(1, Ordering::SeqCst);
        if let Some(window) = &world.causes {
            window.lock().reset();
        }
        let end = world.tick();
        for (path, index) in world.paths.iter().zip(records) {
            world.oracle.close(path, index, end);
        }
        if !scheduler.wait_idle(Duration::from_secs(60)) {
            world.violate(format!("checkpoint {checkpoint}: not idle after reset"));
            return;
        }
        super::remote::check_quiescent(world, checkpoint, "after reset");
        let occupancy = scheduler.observe().dependency_occupancy();
        if !occupancy.is_empty() {
            world.violate(format!(
                "checkpoint {checkpoint}: dependency state left after reset: {occupancy:?}"
            ));
        }
        world.oracle.collapse();
    }
    // No root is alive now: after a collection the source root keeps at most
    // one version per file it tracks.
    let _ = scheduler.gc_source_root();
    let stats = scheduler.observe().source_root_stats();
    if stats.live_roots != 0 || stats.retained_versions > stats.tracked_files {
        world.violate(format!(
            "checkpoint {checkpoint}: the source root retains more than the live state: {stats:?}"
        ));
    }
}

fn check_quiescent(world: &World, checkpoint: u64, when: &str) {
    super::remote::check_quiescent(world, checkpoint, when);
    let scheduler = &*world.scheduler;
    let report = scheduler.observe().quiescence_report();
    if report != QuiescenceReport::clean() {
        world.violate(format!(
            "checkpoint {checkpoint}: not quiescent {when}: {report:?}"
        ));
    }
    let misrouted = scheduler
        .executor()
        .misrouted_contexts
        .load(Ordering::SeqCst);
    if misrouted != 0 {
        world.violate(format!(
            "checkpoint {checkpoint}: {misrouted} cache runs were handed another key's context"
        ));
    }
    let counters = scheduler.observe().counters();
    // The hosts' requests, and those the executor made from inside a stage.
    let submitted = world.submitted.load(Ordering::SeqCst)
        + world
            .scheduler
            .executor()
            .nested_waits
            .load(Ordering::SeqCst);
    let committed_hits = world.committed_hits.load(Ordering::SeqCst);
    if !counters_agree(&counters, submitted, committed_hits) {
        world.violate(format!(
            "checkpoint {checkpoint}: counters disagree with the hosts {when}: {submitted} requests submitted, {counters:?}"
        ));
    }
}
