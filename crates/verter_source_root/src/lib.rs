//! The MVCC source directory: for every canonical file, a version history
//! stamped with epochs, captured roots that act as retention leases, and
//! garbage collection that never frees a version a live root can still see.
//!
//! This crate will own `SchedulerSourceDirectory`, `SchedulerSourceRoot` and
//! their statistics. It never runs executors, never performs I/O and never
//! takes the DAG lock: the layers above call into it while holding theirs, so
//! its publication lock ranks below the DAG lock.
//!
//! Nothing is implemented here yet; the source-root issue delivers it.
