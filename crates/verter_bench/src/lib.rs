//! Side-by-side benchmarks: verter against salsa 0.28, rayon and a
//! hand-written tokio scheduler, on the same generated sources and the same
//! kernels.
//!
//! Every system implements [`system::System`]; the workloads in
//! [`workloads`] drive them and check that every system's final artifact
//! hashes equal a serial cold build of the final sources
//! ([`kernel::reference_build`]). The `verter_bench` binary runs one system
//! and one workload per process (so peak RSS does not mix) and prints
//! `result key=value ...` lines that `cargo xtask bench` turns into the
//! tables of `docs/benchmarks.md`.
//!
//! This crate measures; it never asserts on timing. Its tests run the quick
//! correctness path (equal hashes, every request answered) at small sizes.
//!
//! ```text
//! generator (sources, edits) ──▶ workloads ──▶ System: verter | salsa | rayon | tokio
//!                              │                 └─ kernels (identical)
//!                              └─ report (result lines, RSS), alloc_count (allocations)
//! ```

pub mod alloc_count;
pub mod chains;
pub mod dag;
pub mod generator;
pub mod kernel;
pub mod overload;
pub mod quick;
pub mod rayon_runner;
pub mod report;
pub mod restart;
pub mod rng;
pub mod salsa_runner;
pub mod storm;
pub mod system;
pub mod tokio_runner;
pub mod verter_runner;
pub mod workloads;

/// The stack of every harness thread that waits for answers: the stage
/// threads' default, so a verter scheduler's waiting host thread runs urgent
/// stages on its own stack (`SchedulerConfig::callers_run_urgent_work`
/// allocates one otherwise). Given to every system's harness alike.
pub const HOST_STACK: usize = verter_scheduler::SchedulerConfig::DEFAULT_STAGE_STACK * 2;

/// A thread builder named `name` with [`HOST_STACK`].
pub fn host_thread(name: &str) -> std::thread::Builder {
    std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(HOST_STACK)
}
