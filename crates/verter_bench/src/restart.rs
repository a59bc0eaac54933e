//! W6, a restart (issue 45): W1's cold build by verter with an output store
//! (a `RedbStore` file in a fresh directory), the scheduler dropped, a new
//! one opened on the same store, and every Artifact requested again: how
//! long the warm build takes against verter's and salsa's cold builds, and
//! what the store costs a cold build. Each build is timed alone, per build;
//! every answer is checked against the reference.
//!
//! Owns the workload only: the store and the scheduler are used through
//! their public APIs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use verter_scheduler::OutputStore;
use verter_store::{RedbStore, StoreOptions};

use crate::generator::{GenConfig, Project, Sources};
use crate::kernel::reference_build;
use crate::report::Record;
use crate::system::System;
use crate::verter_runner::VerterSystem;
use crate::workloads::SystemKind;

/// The shape of one W6 run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartShape {
    /// Stage threads.
    pub threads: usize,
    /// Files.
    pub files: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Timed repetitions of each build.
    pub iterations: usize,
}

fn median(mut walls: Vec<Duration>) -> Duration {
    walls.sort();
    walls[walls.len() / 2]
}

/// A fresh store directory for one repetition.
fn store_dir(iteration: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("verter-w6-{}-{iteration}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(dir: &std::path::Path) -> Arc<dyn OutputStore> {
    let opened = RedbStore::open(dir, StoreOptions::new("verter_bench w6", 4 << 30))
        .expect("opening the W6 store");
    Arc::new(opened.store)
}

/// Runs W6: verter cold without a store, salsa cold, verter cold with a
/// store, and the restart answered from it; one record per build and one
/// of ratios.
pub fn w6(shape: RestartShape) -> Vec<Record> {
    let sources: Sources = Project::generate(GenConfig::new(shape.files)).sources();
    let reference = reference_build(&sources);
    let cold = |system: SystemKind| {
        let walls: Vec<Duration> = (0..shape.iterations.max(1))
            .map(|_| {
                let mut built = system.make(
                    shape.threads,
                    shape.spin_us,
                    false,
                    true,
                    Default::default(),
                );
                let start = Instant::now();
                let answers = built.cold(&sources, None);
                let wall = start.elapsed();
                assert_eq!(answers.hashes, reference, "{} cold", system.name());
                wall
            })
            .collect();
        median(walls)
    };
    let verter_cold = cold(SystemKind::Verter);
    let salsa_cold = cold(SystemKind::Salsa);
    let mut stored_colds = Vec::new();
    let mut warms = Vec::new();
    let mut from_store = 0;
    let mut file_bytes = 0;
    for iteration in 0..shape.iterations.max(1) {
        let dir = store_dir(iteration);
        {
            let mut first = VerterSystem::with_store(shape.threads, shape.spin_us, open(&dir));
            let start = Instant::now();
            let answers = first.cold(&sources, None);
            stored_colds.push(start.elapsed());
            assert_eq!(answers.hashes, reference, "verter cold with a store");
            // Its writes land and the store closes with the scheduler.
            first.scheduler().shutdown();
        }
        let store = open(&dir);
        let mut second = VerterSystem::with_store(shape.threads, shape.spin_us, Arc::clone(&store));
        let start = Instant::now();
        let answers = second.cold(&sources, None);
        warms.push(start.elapsed());
        assert_eq!(answers.hashes, reference, "verter after the restart");
        from_store = second.counters().from_store;
        file_bytes = store.stats().map_or(0, |stats| stats.file_bytes);
        second.scheduler().shutdown();
        drop(second);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let stored_cold = median(stored_colds);
    let warm = median(warms);
    let record = |case: &str| {
        Record::new()
            .field("workload", "w6")
            .field("case", case)
            .field("threads", shape.threads)
            .field("n", shape.files)
            .field("c", shape.spin_us)
    };
    let ratio = |a: Duration, b: Duration| format!("{:.3}", a.as_secs_f64() / b.as_secs_f64());
    vec![
        record("verter_cold").micros("wall_us", verter_cold),
        record("salsa_cold").micros("wall_us", salsa_cold),
        record("verter_cold_with_store").micros("wall_us", stored_cold),
        record("verter_warm")
            .micros("wall_us", warm)
            .field("from_store", from_store)
            .field("store_file_bytes", file_bytes),
        record("ratio")
            .field("warm_vs_verter_cold", ratio(warm, verter_cold))
            .field("warm_vs_salsa_cold", ratio(warm, salsa_cold))
            .field(
                "cold_with_store_vs_without",
                ratio(stored_cold, verter_cold),
            ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small W6: every build agrees with the reference (asserted inside),
    /// and the restart answers every stage from the store.
    #[test]
    fn a_restart_answers_every_stage_from_the_store() {
        let records = w6(RestartShape {
            threads: 2,
            files: 200,
            spin_us: 0,
            iterations: 1,
        });
        let warm = records
            .iter()
            .find(|record| record.get("case") == Some("verter_warm"))
            .expect("the warm record");
        let stages: u64 = warm.get("from_store").unwrap().parse().unwrap();
        assert!(stages >= 3 * 200, "{}", warm.line());
    }
}
