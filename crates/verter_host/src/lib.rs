//! The host layer: the batch-coordination primitive every host batch API
//! shares (coordinator install, fast paths, input-order results, per-item
//! panic boundary, re-entrancy collapse), `compile_many` and the upsert
//! engine, on top of the scheduler facade.
//!
//! Nothing is implemented here yet; the host-layer issue delivers it.
