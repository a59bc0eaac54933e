//! The public behaviour of `verter_pools`, through its public API only.
//!
//! Every test here uses real threads, so the binary is empty under the loom
//! cfg (loom models live beside the primitives, in the library).

#![cfg(not(verter_loom))]

mod caller_kinds;
mod deadlock_isolation;
#[path = "../../src/test_support/watchdog.rs"]
mod support;
