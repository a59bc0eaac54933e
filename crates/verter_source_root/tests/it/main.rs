//! The public behaviour of `verter_source_root`, through its public API only.

mod api;
mod atomic_publication;
mod capture;
mod model;
mod reclamation;
mod removal;
mod sealing;

use std::num::NonZeroUsize;

use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};
use verter_source_root::{ContentHash, SchedulerSourceDirectory, SourceRootConfig};

/// `incarnation` at `generation`.
fn version(incarnation: Incarnation, generation: u64) -> SourceVersion {
    SourceVersion::new(incarnation, Generation::new(generation))
}

/// A directory whose GC runs only when asked, so tests control it.
fn manual_gc_directory() -> SchedulerSourceDirectory<u64> {
    SchedulerSourceDirectory::with_config(SourceRootConfig { gc_every: None })
}

/// A directory that collects after every `every` superseding changes.
fn auto_gc_directory(every: usize) -> SchedulerSourceDirectory<u64> {
    SchedulerSourceDirectory::with_config(SourceRootConfig {
        gc_every: Some(NonZeroUsize::new(every).expect("non-zero")),
    })
}

/// Publishes `file` as present at `version`, with hash and payload `value`.
fn publish_present(
    directory: &SchedulerSourceDirectory<u64>,
    file: &str,
    version: SourceVersion,
    value: u64,
    bytes: usize,
) {
    directory.publish_transition(|tx| {
        tx.present(
            Canonical::from(file),
            version,
            ContentHash(value),
            value,
            bytes,
        );
    });
}

/// The seed of a seeded test: `VERTER_SEED` if set, else `default`. Printed
/// so a failure can be replayed.
fn seed(default: u64) -> u64 {
    let seed = std::env::var("VERTER_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default);
    eprintln!("seed {seed} (replay with VERTER_SEED={seed})");
    seed
}

/// A small, seeded generator (SplitMix64): tests that use it replay exactly.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// Runs `body` on its own thread and fails the test if it does not finish
/// within a generous 60 s, so a deadlock fails instead of stalling CI. A
/// panic in `body` is re-raised here.
#[cfg(not(verter_loom))]
fn with_watchdog(name: &str, body: impl FnOnce() + Send + 'static) {
    use std::sync::mpsc;
    use std::time::Duration;

    let (done_tx, done_rx) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        body();
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => runner.join().expect("finished"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match runner.join() {
            Ok(()) => unreachable!("the runner sends before it returns"),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name} did not finish within 60 s: a publication or capture deadlocked")
        }
    }
}
