//! The connection to one REAPI server: the gRPC channel, the negotiated
//! batch limit, the counters, and [`Connection::with_retries`], the one
//! place calls are retried and given their deadline. Runs only on the
//! executor's runtime thread.
//!
//! # Retries
//! A call is retried when it fails with `UNAVAILABLE` (how connection
//! failures surface too) and, when the caller says so, `RESOURCE_EXHAUSTED`,
//! waiting [`RetryPolicy::backoff`](crate::RetryPolicy::backoff) between
//! attempts, at most `max_attempts` attempts in all. Every other status goes
//! back to the caller, which knows what `NOT_FOUND` means for its call.

use std::error::Error as _;
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream::byte_stream_client::ByteStreamClient;
use bazel_remote_apis::google::longrunning::operations_client::OperationsClient;
use reapi::action_cache_client::ActionCacheClient;
use reapi::capabilities_client::CapabilitiesClient;
use reapi::content_addressable_storage_client::ContentAddressableStorageClient;
use reapi::execution_client::ExecutionClient;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::config::RemoteConfig;
use crate::error::{RemoteError, StatusCode, one_line};
use crate::stats::Counters;

/// Room for a batch call's framing beyond its blobs' bytes.
const MESSAGE_SLACK: usize = 1024 * 1024;

/// The smallest message limit the clients accept (gRPC's usual default).
const MIN_MESSAGE_LIMIT: usize = 4 * 1024 * 1024;

/// One server, as the runtime thread's tasks share it.
#[derive(Debug)]
pub(crate) struct Connection {
    channel: Channel,
    /// The configuration the executor was connected with.
    pub(crate) config: RemoteConfig,
    /// The effective batch limit: the configured one, or the server's
    /// `max_batch_total_size_bytes` when smaller.
    pub(crate) batch_limit: usize,
    /// What the client did.
    pub(crate) counters: Counters,
    /// The largest message the clients encode or decode.
    message_limit: usize,
}

impl Connection {
    /// Connects eagerly (bounded by `connect_timeout`) and asks the server's
    /// capabilities for its batch limit. Must run inside the runtime: the
    /// channel spawns its worker there.
    ///
    /// # Errors
    /// [`RemoteError::InvalidConfig`] for a bad endpoint,
    /// [`RemoteError::Unreachable`] when no connection is made in time, and
    /// the errors of a retried call for `GetCapabilities`.
    pub(crate) async fn connect(config: RemoteConfig) -> Result<Self, RemoteError> {
        let uri = config.endpoint_uri()?;
        let endpoint = Endpoint::from_shared(uri).map_err(|err| RemoteError::InvalidConfig {
            message: format!("endpoint {:?}: {err}", config.endpoint),
        })?;
        let endpoint = endpoint
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_while_idle(true);
        let unreachable = |message: String| RemoteError::Unreachable {
            endpoint: config.endpoint.clone(),
            message: one_line(&message),
        };
        let channel = match tokio::time::timeout(config.connect_timeout, endpoint.connect()).await {
            Err(_) => {
                return Err(unreachable(format!(
                    "no connection within {:?}",
                    config.connect_timeout
                )));
            }
            Ok(Err(err)) => return Err(unreachable(error_chain(&err))),
            Ok(Ok(channel)) => channel,
        };
        let message_limit = config
            .batch_limit_bytes
            .saturating_add(MESSAGE_SLACK)
            .max(MIN_MESSAGE_LIMIT);
        let mut connection = Self {
            channel,
            batch_limit: config.batch_limit_bytes,
            config,
            counters: Counters::default(),
            message_limit,
        };
        connection.batch_limit = connection.negotiate_batch_limit().await?;
        Ok(connection)
    }

    /// The configured batch limit, lowered to the server's if it announces
    /// a smaller one. A server without the Capabilities service keeps the
    /// configured limit.
    async fn negotiate_batch_limit(&self) -> Result<usize, RemoteError> {
        let request = reapi::GetCapabilitiesRequest {
            instance_name: self.config.instance_name.clone(),
        };
        let answer = self
            .with_retries("GetCapabilities", false, || {
                let mut client = self.capabilities();
                let request = request.clone();
                async move { client.get_capabilities(request).await }
            })
            .await?;
        let configured = self.config.batch_limit_bytes;
        match answer {
            Ok(response) => {
                let server_limit = response
                    .into_inner()
                    .cache_capabilities
                    .map_or(0, |cache| cache.max_batch_total_size_bytes);
                Ok(match usize::try_from(server_limit) {
                    Ok(limit) if limit > 0 => configured.min(limit),
                    _ => configured,
                })
            }
            Err(status) => {
                tracing::debug!(code = ?status.code(), "GetCapabilities failed; keeping the configured batch limit");
                Ok(configured)
            }
        }
    }

    /// Runs `attempt` until it succeeds, fails with a status the caller
    /// must judge, or runs out of attempts; each attempt is bounded by
    /// `rpc_timeout`. `resource_exhausted_retries` also retries
    /// `RESOURCE_EXHAUSTED` (for `Execute`).
    ///
    /// # Errors
    /// The outer error is final: [`RemoteError::Timeout`] when an attempt
    /// overran `rpc_timeout`, [`RemoteError::Unavailable`] when the attempts
    /// ran out. The inner `Err` is a non-retryable status.
    pub(crate) async fn with_retries<T, F, Fut>(
        &self,
        what: &str,
        resource_exhausted_retries: bool,
        mut attempt: F,
    ) -> Result<Result<T, Status>, RemoteError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let policy = self.config.retry;
        let mut attempts = 1;
        loop {
            let status = match tokio::time::timeout(self.config.rpc_timeout, attempt()).await {
                Err(_) => return Err(RemoteError::timeout(what)),
                Ok(Ok(value)) => return Ok(Ok(value)),
                Ok(Err(status)) => status,
            };
            if !is_retryable(status.code(), resource_exhausted_retries) {
                return Ok(Err(status));
            }
            if attempts >= policy.max_attempts {
                return Err(RemoteError::Unavailable {
                    what: what.to_owned(),
                    attempts,
                    message: one_line(&status_text(&status)),
                });
            }
            self.note_retry(what, attempts, &status);
            tokio::time::sleep(policy.backoff(attempts)).await;
            attempts += 1;
        }
    }

    /// Counts and logs one retry.
    pub(crate) fn note_retry(&self, what: &str, attempt: u32, status: &Status) {
        Counters::add(&self.counters.retries, 1);
        tracing::debug!(
            what,
            attempt,
            code = ?status.code(),
            message = status.message(),
            "retrying"
        );
    }

    /// `{instance}/`, or nothing for the empty instance: the prefix of
    /// ByteStream resource names.
    pub(crate) fn resource_prefix(&self) -> String {
        if self.config.instance_name.is_empty() {
            String::new()
        } else {
            format!("{}/", self.config.instance_name)
        }
    }

    pub(crate) fn cas(&self) -> ContentAddressableStorageClient<Channel> {
        ContentAddressableStorageClient::new(self.channel.clone())
            .max_decoding_message_size(self.message_limit)
            .max_encoding_message_size(self.message_limit)
    }

    pub(crate) fn action_cache(&self) -> ActionCacheClient<Channel> {
        ActionCacheClient::new(self.channel.clone())
            .max_decoding_message_size(self.message_limit)
            .max_encoding_message_size(self.message_limit)
    }

    pub(crate) fn execution(&self) -> ExecutionClient<Channel> {
        ExecutionClient::new(self.channel.clone())
            .max_decoding_message_size(self.message_limit)
            .max_encoding_message_size(self.message_limit)
    }

    pub(crate) fn byte_stream(&self) -> ByteStreamClient<Channel> {
        ByteStreamClient::new(self.channel.clone())
            .max_decoding_message_size(self.message_limit)
            .max_encoding_message_size(self.message_limit)
    }

    pub(crate) fn operations(&self) -> OperationsClient<Channel> {
        OperationsClient::new(self.channel.clone())
    }

    fn capabilities(&self) -> CapabilitiesClient<Channel> {
        CapabilitiesClient::new(self.channel.clone())
    }
}

/// Whether a call that failed with `code` may be repeated.
pub(crate) fn is_retryable(code: Code, resource_exhausted_retries: bool) -> bool {
    code == Code::Unavailable || (resource_exhausted_retries && code == Code::ResourceExhausted)
}

/// The error for a call `what` that failed with a status nobody handled.
pub(crate) fn status_error(what: &str, status: &Status) -> RemoteError {
    match status.code() {
        Code::DeadlineExceeded => RemoteError::timeout(format!("{what} (the server's deadline)")),
        code => RemoteError::server(what, StatusCode(code as i32), &status_text(status)),
    }
}

/// A status's message, or its transport cause when the message is empty.
fn status_text(status: &Status) -> String {
    if !status.message().is_empty() {
        return status.message().to_owned();
    }
    match status.source() {
        Some(source) => error_chain(source),
        None => format!("{:?}", status.code()),
    }
}

/// An error and its causes on one line: `transport error: tcp connect
/// error: Connection refused`.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
