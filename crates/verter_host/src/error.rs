//! `HostError`: what a host batch answers an item with when it has no value,
//! and why a host could not be built. Owns no behaviour; the batch primitive
//! and the constructors create these values.

use std::sync::Arc;

use verter_pools::PoolError;
use verter_scheduler::{ConfigError, RequestError};

/// Why a host batch item has no value, or why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The scheduler answered the item's request with an error.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// Host code of the item panicked. The batch primitive caught the panic
    /// at the item's boundary: the other items of the batch were unaffected.
    /// When the batch-wide half (its one submission and wait) panics, every
    /// item of the batch reports it.
    #[error("item {index} of the {batch} batch panicked: {message}")]
    Panicked {
        /// The batch's name (`"upsert_many"`, `"request_many"`, ...).
        batch: &'static str,
        /// The item's position in the batch's input.
        index: usize,
        /// The panic payload, if it was a string.
        message: Arc<str>,
    },
    /// The host's pools could not be built.
    #[error("could not build the host's pools")]
    Pools(#[from] PoolError),
    /// The scheduler's configuration is unusable.
    #[error("the scheduler's configuration is unusable")]
    Config(#[from] ConfigError),
}

impl HostError {
    /// The scheduler's answer, when this is a request error.
    pub fn as_request(&self) -> Option<&RequestError> {
        match self {
            Self::Request(error) => Some(error),
            _ => None,
        }
    }
}
