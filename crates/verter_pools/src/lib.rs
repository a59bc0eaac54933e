//! The execution substrate: the stage CPU pool, the I/O pool, the host's
//! coordinator pool, the CPU concurrency semaphore, the per-thread
//! `CallerKind` registration and the one waiting primitive, `wait_or_drive`.
//!
//! This crate names no other verter crate. It never inspects the work it
//! runs: commands arrive as owner-affine closures, and the scheduler that
//! drives cooperative waits is reached only through a trait.
//!
//! Nothing is implemented here yet; the pools issue delivers it.
