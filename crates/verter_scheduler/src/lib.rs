//! The scheduler facade: `Scheduler`, its file nodes, the driver thread, the
//! submission API and the traits a host implements (`SourceLoader`,
//! `StageExecutor`).
//!
//! This crate owns the one DAG lock. Every file state transition and every
//! admission happens under it; executor calls, loader I/O, host callbacks and
//! waiter wakes never do.
//!
//! Nothing is implemented here yet; the scheduler facade issue delivers it.
