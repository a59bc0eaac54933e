//! The lifecycle authority's state, starting with the identities every layer
//! shares (SPEC §3).
//!
//! This crate is the bottom layer: it names no other verter crate, does no
//! I/O, spawns no thread and wakes no one. The layers above keep its state
//! under their one DAG lock and carry out the effects it returns after they
//! unlock.
//!
//! # Identities
//! - [`Canonical`]: the canonical path of a file, cheap to clone.
//! - [`Incarnation`]: a process-unique, monotonic id of one file object,
//!   allocated only by [`Incarnation::allocate`].
//! - [`Generation`]: a per-object counter of source versions with a checked
//!   [`Generation::advance`].
//! - [`SourceVersion`]: `(incarnation, generation)`, ordered incarnation first.
//! - [`SubmissionLifetime`]: what a request is bound to from submission until
//!   the file is removed or reset.
//! - [`TargetStage`], [`ProfileHash`]: which stage of a file is wanted.
//! - [`FileIdentity`], [`DepKey`], [`WorkNodeIdentity`]: the one identity
//!   shape for work on files (a file identity plus a stage) and for cache nodes.
//! - [`Priority`], [`SchedulerCacheId`], [`CancellationToken`].

mod error;
mod identity;

pub use error::GenerationExhausted;
pub use identity::{
    CancellationToken, Canonical, DepKey, FileIdentity, Generation, Incarnation, Priority,
    ProfileHash, SchedulerCacheId, SourceVersion, SubmissionLifetime, TargetStage,
    WorkNodeIdentity,
};
