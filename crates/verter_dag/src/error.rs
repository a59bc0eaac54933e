//! The typed errors of this crate's public operations. Every variant says
//! what was refused and leaves the state it refers to unchanged.

use crate::identity::Generation;

/// A [`Generation`] cannot advance: its counter is at its maximum.
///
/// The refusal leaves the generation unchanged and publishes nothing; the
/// file object must be replaced (a new incarnation restarts at zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("generation {current} cannot advance: the counter is exhausted")]
pub struct GenerationExhausted {
    /// The generation that could not advance.
    pub current: Generation,
}
