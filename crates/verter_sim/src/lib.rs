//! A deterministic simulator of a host, and the oracle that judges the
//! scheduler by **from-scratch consistency**: after any sequence of edits,
//! every answer equals what a fresh scheduler over the same loader contents,
//! upserted texts and named languages answers; while operations race, every
//! answer equals the fresh answer over states that existed between its
//! submission and its answer, or is a typed error the result table allows.
//!
//! # Parts
//! - [`fs`]: the fake file system and its loader, with faults (missing
//!   files, read errors, non-UTF-8 bytes, a panicking load).
//! - [`lang`]: what a file's text means — blockers, forward dependencies,
//!   stage faults — as pure functions the executor and the oracle share.
//! - [`ops`]: the operations a host performs, drawn by seed (host DAG
//!   submissions of file reads and cache nodes among them).
//! - [`oracle`]: per-file state histories, the candidate states of a
//!   request's window, and the judgement of every answer (a host DAG's:
//!   each node's, and the gates between them).
//! - [`causes`]: the rules of the scheduler's causal log — every run and
//!   dispatch traced to a host action, every run recorded by the hold that
//!   commits it, one `Ran` per executor or loader call, cancellations
//!   naming actions the log holds — as pure functions of its records.
//! - [`remote`]: the fake remote executor — routed Artifacts and cache
//!   nodes are started, parked with their completion, and answered later
//!   in any order (rightly, wrongly only when cancelled, or dropped) — and
//!   the checks of the remote-work protocol around them.
//! - [`inline`]: one trace on an inline scheduler: fully deterministic,
//!   operations placed inside hook windows, quiescent checks, shrinking;
//!   on some seeds, lock holds broken on purpose (a panic under the lock,
//!   through the scheduler's `test-support` seam) and judged as resets.
//! - [`threaded`]: the same operation mix from many threads on real pools,
//!   with seeded pauses at the hook points (`cargo xtask soak`).
//!
//! This crate is the top layer: it names the scheduler and the crates below
//! it and nothing names it. It never changes the scheduler's behaviour; it
//! only drives it through its public API, as a host would.
//!
//! # Replaying a failure
//! A failure prints its seed and a shrunk trace. `cargo xtask sim --seed S`
//! runs seed `S` again and prints the whole trace and the violation.

pub mod causes;
pub mod fault;
pub mod fs;
pub mod inline;
pub mod lang;
pub mod ops;
pub mod oracle;
pub mod remote;
pub mod rng;
pub mod threaded;

pub use inline::{Failure, LoggedRun, RunReport, logged_run, replay, run_seed, run_trace};
pub use ops::SimConfig;
