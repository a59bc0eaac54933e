//! [`RemoteConfig`] and [`RetryPolicy`]: where the server is and how patient
//! the client is with it. Plain data; never performs I/O.

use std::time::Duration;

use crate::error::RemoteError;

/// Blobs whose size is below this go through the batch calls by default.
pub const DEFAULT_BATCH_LIMIT_BYTES: usize = 1024 * 1024;

/// How to reach a REAPI server, and the limits of one action.
///
/// Start from [`RemoteConfig::new`] and adjust the fields or chain the
/// `with_*` setters:
///
/// ```
/// use std::time::Duration;
/// use verter_remote::RemoteConfig;
///
/// let config = RemoteConfig::new("http://127.0.0.1:50051")
///     .with_instance_name("main")
///     .with_execute_timeout(Duration::from_secs(600));
/// assert_eq!(config.instance_name, "main");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteConfig {
    /// The server, e.g. `http://127.0.0.1:50051` (`grpc://` is read as
    /// `http://`; a bare `host:port` gets `http://`). TLS is not supported.
    pub endpoint: String,
    /// The REAPI instance name (may be empty).
    pub instance_name: String,
    /// How long [`RemoteExecutor::connect`](crate::RemoteExecutor::connect)
    /// waits for the connection. Default 5 s.
    pub connect_timeout: Duration,
    /// The deadline of each call, a whole ByteStream transfer included;
    /// `Execute` and `WaitExecution` streams are bounded by
    /// `execute_timeout` instead. Default 60 s.
    pub rpc_timeout: Duration,
    /// The deadline of one whole action, from the cache lookup to the last
    /// output fetched. Default 30 min.
    pub execute_timeout: Duration,
    /// How often and how patiently retryable failures are retried.
    pub retry: RetryPolicy,
    /// Blobs whose size (plus a small per-blob allowance) fits go through
    /// `BatchUpdateBlobs`/`BatchReadBlobs`, several per call up to this
    /// total; larger ones stream through ByteStream. The server's
    /// `max_batch_total_size_bytes`, when smaller, wins. Default 1 MiB.
    pub batch_limit_bytes: usize,
    /// The largest output file, stdout or stderr the client fetches; a
    /// larger one fails the action with
    /// [`RemoteError::OutputTooLarge`]. Default 256 MiB.
    pub max_output_bytes: u64,
}

impl RemoteConfig {
    /// The defaults for `endpoint` (see each field).
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            instance_name: String::new(),
            connect_timeout: Duration::from_secs(5),
            rpc_timeout: Duration::from_secs(60),
            execute_timeout: Duration::from_secs(30 * 60),
            retry: RetryPolicy::default(),
            batch_limit_bytes: DEFAULT_BATCH_LIMIT_BYTES,
            max_output_bytes: 256 * 1024 * 1024,
        }
    }

    /// Sets [`instance_name`](Self::instance_name).
    #[must_use]
    pub fn with_instance_name(mut self, instance_name: impl Into<String>) -> Self {
        self.instance_name = instance_name.into();
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`rpc_timeout`](Self::rpc_timeout).
    #[must_use]
    pub fn with_rpc_timeout(mut self, timeout: Duration) -> Self {
        self.rpc_timeout = timeout;
        self
    }

    /// Sets [`execute_timeout`](Self::execute_timeout).
    #[must_use]
    pub fn with_execute_timeout(mut self, timeout: Duration) -> Self {
        self.execute_timeout = timeout;
        self
    }

    /// Sets [`retry`](Self::retry).
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets [`batch_limit_bytes`](Self::batch_limit_bytes).
    #[must_use]
    pub fn with_batch_limit_bytes(mut self, limit: usize) -> Self {
        self.batch_limit_bytes = limit;
        self
    }

    /// Sets [`max_output_bytes`](Self::max_output_bytes).
    #[must_use]
    pub fn with_max_output_bytes(mut self, limit: u64) -> Self {
        self.max_output_bytes = limit;
        self
    }

    /// The endpoint as a URI tonic accepts, or why it cannot be one.
    pub(crate) fn endpoint_uri(&self) -> Result<String, RemoteError> {
        let endpoint = self.endpoint.trim();
        let invalid = |why: &str| RemoteError::InvalidConfig {
            message: format!("endpoint {endpoint:?} {why}"),
        };
        if endpoint.is_empty() {
            return Err(invalid("is empty"));
        }
        match endpoint.split_once("://") {
            None => Ok(format!("http://{endpoint}")),
            Some(("http", _)) => Ok(endpoint.to_owned()),
            Some(("grpc", rest)) => Ok(format!("http://{rest}")),
            Some(("https" | "grpcs", _)) => Err(invalid("needs TLS, which is not supported")),
            Some((scheme, _)) => Err(invalid(&format!("has unsupported scheme {scheme:?}"))),
        }
    }

    /// Refuses settings that cannot work.
    pub(crate) fn validate(&self) -> Result<(), RemoteError> {
        let invalid = |message: &str| {
            Err(RemoteError::InvalidConfig {
                message: message.to_owned(),
            })
        };
        self.endpoint_uri()?;
        if self.retry.max_attempts == 0 {
            return invalid("retry.max_attempts must be at least 1");
        }
        if self.batch_limit_bytes == 0 {
            return invalid("batch_limit_bytes must be positive");
        }
        if self.connect_timeout.is_zero()
            || self.rpc_timeout.is_zero()
            || self.execute_timeout.is_zero()
        {
            return invalid("timeouts must be positive");
        }
        Ok(())
    }
}

/// Retries of calls that failed with a retryable status: `UNAVAILABLE`
/// (which is also how connection failures surface) for every call, and
/// `RESOURCE_EXHAUSTED` for `Execute`, as REAPI asks.
///
/// The wait before retry `n` (1-based) is `initial_backoff * 2^(n-1)`,
/// capped at `max_backoff`, without jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts per call, the first included (at least 1). Default 8:
    /// about 11 s of waiting in all, enough to ride out a server restart
    /// (a BuildGrid restart took 3–8 s here; 5 attempts, 1.5 s, was not).
    pub max_attempts: u32,
    /// The wait before the first retry. Default 100 ms.
    pub initial_backoff: Duration,
    /// The longest wait between attempts. Default 5 s.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// A policy of `max_attempts` attempts with the given waits.
    pub fn new(max_attempts: u32, initial_backoff: Duration, max_backoff: Duration) -> Self {
        Self {
            max_attempts,
            initial_backoff,
            max_backoff,
        }
    }

    /// The wait before retry number `retry` (1 for the first retry).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new(8, Duration::from_millis(100), Duration::from_secs(5))
    }
}

#[cfg(test)]
mod tests;
