//! The crate's error type: why a pool could not be built. Owns nothing else;
//! saturation is not an error of this kind but a give-back ([`crate::Full`]).

use std::error::Error;

/// Why a pool could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// A pool was asked for zero threads.
    #[error("the {pool} pool needs at least one thread; pass threads >= 1")]
    ZeroThreads {
        /// Which pool (`"cpu"`, `"io"` or `"host"`).
        pool: &'static str,
    },
    /// The operating system refused to start a worker thread.
    #[error("could not spawn worker thread {index} of the {pool} pool")]
    Spawn {
        /// Which pool.
        pool: &'static str,
        /// The index of the thread that failed to start.
        index: usize,
        /// The operating system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// The underlying thread pool could not be built.
    #[error("could not build the {pool} pool")]
    Build {
        /// Which pool.
        pool: &'static str,
        /// The thread pool library's error.
        #[source]
        source: Box<dyn Error + Send + Sync + 'static>,
    },
}
