//! The quick correctness pass: every system through every workload at a
//! small size, checking only correctness (equal hashes, every request
//! answered) — never timing. `cargo xtask bench --quick` and the crate's
//! integration test run it.
//!
//! Owns the list of what the quick pass covers and the watchdog that turns
//! a hang into a failure. Never measures anything it reports as a figure.

use std::time::Duration;

use crate::chains::{ChainShape, w5};
use crate::dag::{DagShape, dag};
use crate::overload::{OverloadShape, Retry, Submission, w4};
use crate::report::Record;
use crate::storm::{StormShape, w3};
use crate::verter_runner::Observability;
use crate::workloads::{Shape, SystemKind, only_build, only_generate, w1, w2};

/// Runs every system through W1, W2, W3 and W4 on `files` files (W3 with
/// `edits` edits) and through W1's single build (`--only-build`; then the
/// sources alone once, `--only-generate`), verter through W2 and W3 again
/// without early cutoff,
/// through W2 once more with its causal log (at its default size) and
/// stage statistics on, and
/// through W4 again with non-blocking DAG submission (both retry
/// policies), and the host DAG workload on `10 × files` nodes (on one and
/// two threads; then with `files / 10` file nodes), and verter and salsa
/// through W5 (deep chains: `files` files in chains of 100, on two
/// threads), and returns their records. Panics on any wrong answer.
pub fn run(files: usize, edits: usize) -> Vec<Record> {
    let mut records = Vec::new();
    for system in SystemKind::ALL {
        for threads in [1, 2] {
            let shape = Shape::new(system, threads, files, 0, 1);
            records.push(w1(shape));
            records.extend(w2(shape));
        }
        records.push(only_build(Shape::new(system, 1, files, 0, 1)));
    }
    records.push(only_generate(Shape::new(
        SystemKind::Verter,
        1,
        files,
        0,
        1,
    )));
    // verter once more without cutoff: its correctness does not rest on it.
    records.extend(w2(Shape {
        cutoff: false,
        ..Shape::new(SystemKind::Verter, 2, files, 0, 1)
    }));
    // And once with everything it records about its own work on (issue 17):
    // recording changes no answer. W2, because its edits produce every kind
    // of event a cold build does and more (verifications, supersessions).
    records.extend(w2(Shape {
        observability: Observability {
            causal_log: verter_scheduler::DEFAULT_CAUSAL_LOG,
            stage_stats: true,
        },
        ..Shape::new(SystemKind::Verter, 2, files, 0, 1)
    }));
    for (system, cutoff) in [
        (SystemKind::Verter, true),
        (SystemKind::Verter, false),
        (SystemKind::Salsa, true),
    ] {
        records.push(w3(StormShape {
            system,
            threads: 2,
            files,
            spin_us: 0,
            edits,
            cutoff,
        }));
    }
    for (system, submission) in [
        (SystemKind::Verter, Submission::Request),
        (SystemKind::Verter, Submission::TryDag(Retry::Answer)),
        (SystemKind::Verter, Submission::TryDag(Retry::Yield)),
        (SystemKind::Tokio, Submission::Request),
    ] {
        records.push(w4(OverloadShape {
            system,
            threads: 2,
            files,
            spin_us: 0,
            factor: 10,
            submission,
        }));
    }
    for (threads, dag_files) in [(1, 0), (2, 0), (2, files / 10)] {
        records.extend(dag(DagShape {
            files: dag_files,
            ..DagShape::new(threads, 10 * files, 0, 1)
        }));
    }
    records.extend(w5(
        ChainShape {
            system: SystemKind::Verter,
            threads: 2,
            files,
            chain: 100.min(files.max(1)),
            spin_us: 0,
            iterations: 1,
        },
        None,
    ));
    records
}

/// Runs `body` on its own thread and panics with `what` if it has not
/// finished within `limit`: a deadlock fails instead of stalling CI.
///
/// # Panics
/// If `body` panics (its panic is re-raised) or outlives `limit`.
pub fn with_watchdog<T: Send + 'static>(
    what: &str,
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let worker = std::thread::spawn(move || {
        let value = body();
        let _ = done_tx.send(());
        value
    });
    match done_rx.recv_timeout(limit) {
        Ok(()) => worker.join().expect("the watched body finished"),
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            panic!("{what} did not finish within {limit:?}: a request hangs or a system deadlocked")
        }
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(value) => value,
            Err(payload) => std::panic::resume_unwind(payload),
        },
    }
}
