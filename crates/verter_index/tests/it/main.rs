//! The public behaviour of the indexer, driven through a real scheduler:
//! fixture crates under `tests/fixtures` (pinned with insta snapshots under
//! `tests/snapshots`), this repository's own `verter_dag`, JSON output,
//! crate-root discovery, and one edit rebuilt incrementally. Every scheduler
//! here runs with the idle re-pump disabled, and threaded runs sit under a
//! watchdog, so a lost wake-up fails instead of hanging.

mod support;

mod discovery;
mod faults;
mod hostile;
mod incremental;
mod json;
mod macros;
mod own_repository;
mod scale;
mod stored;
mod targets;
mod threaded;
mod tree;
