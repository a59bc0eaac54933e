//! The simulator's public behaviour: seeds pass, runs are deterministic,
//! and a bounded threaded soak finds nothing.

mod inline;
mod threaded;
