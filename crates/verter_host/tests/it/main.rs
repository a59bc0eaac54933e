//! The public behaviour of the host layer, one module per area, each test
//! named after the rule it pins. Every test that could hang runs under a
//! 60 s watchdog, with the scheduler's idle re-pump disabled, and ends with
//! the scheduler quiescent.
//!
//! The tests use real threads, which loom's primitives (swapped into the
//! lower layers under `cfg(verter_loom)`) do not allow outside a model, so
//! the binary is empty under that cfg.

#[cfg(not(verter_loom))]
mod support;

#[cfg(not(verter_loom))]
mod batch;
#[cfg(not(verter_loom))]
mod compile;
#[cfg(not(verter_loom))]
mod upserts;
