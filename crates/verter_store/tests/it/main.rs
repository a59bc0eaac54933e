//! The store's public behaviour, through its public API only: entries
//! (`entries.rs`), eviction (`eviction.rs`), discarded stores
//! (`bad_store.rs`), locking (`locking.rs`), crash safety (the `crash` target, alone in its
//! process: the writers it spawns share the open files of every test
//! running beside it until they exec, a store's lock file among them),
//! and a model-based property test against an LRU map (`model.rs`).

mod bad_store;
mod entries;
mod eviction;
mod locking;
mod model;

#[path = "../support/mod.rs"]
mod support;

use support::*;
