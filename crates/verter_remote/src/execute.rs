//! One `Execute`: send the request, follow the operation stream to its done
//! message, resume with `WaitExecution` when the stream drops, and read the
//! `ExecuteResponse` out of the done operation. Runs only on the executor's
//! runtime thread; never uploads or fetches.
//!
//! # The loop
//! 1. No operation name known: call `Execute` (marking it sent first).
//!    Known: call `WaitExecution(name)`.
//! 2. Read messages; the first that names the operation publishes the name
//!    to the job; a `done` one ends the loop with its answer.
//! 3. The stream ended or broke before `done`: count a failure and go back
//!    to 1 after the backoff. A server that forgot the operation
//!    (`NOT_FOUND` for `WaitExecution`) gets a fresh `Execute`. Any message
//!    received resets the count, so only failures in a row exhaust
//!    `max_attempts`.
//!
//! Dropping the stream does not cancel the execution on the server; only
//! `CancelOperation` does (see [`RemoteJob::cancel`](crate::RemoteJob::cancel)).

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::longrunning::{Operation, operation};
use bazel_remote_apis::google::rpc;
use prost::Message;
use tonic::{Code, Status};

use crate::digest::Digest;
use crate::error::{RemoteError, StatusCode, one_line};
use crate::job::JobState;
use crate::proto::{EXECUTE_RESPONSE_TYPE, missing_blobs};
use crate::rpc::{Connection, is_retryable, status_error};

/// How an `Execute` ended, short of an error.
#[derive(Debug)]
pub(crate) enum ExecuteAnswer {
    /// The action has a result (`status` OK, `result` present).
    Done(Box<reapi::ExecuteResponse>),
    /// The server lacks inputs (`FAILED_PRECONDITION` with `MISSING`
    /// violations): upload again and retry.
    MissingInputs(Vec<Digest>),
}

/// Executes the uploaded action `action_digest`.
///
/// # Errors
/// [`RemoteError::Unavailable`] when streams kept failing, a timeout when
/// opening a stream overran `rpc_timeout` or the server's timeout killed the
/// action, and [`RemoteError::Server`] for any other failure status.
pub(crate) async fn execute(
    connection: &Connection,
    action_digest: &Digest,
    priority: i32,
    skip_cache_lookup: bool,
    job: &JobState,
) -> Result<ExecuteAnswer, RemoteError> {
    let request = reapi::ExecuteRequest {
        instance_name: connection.config.instance_name.clone(),
        skip_cache_lookup,
        action_digest: Some(action_digest.to_proto()),
        execution_policy: Some(reapi::ExecutionPolicy { priority }),
        results_cache_policy: Some(reapi::ResultsCachePolicy { priority }),
        inline_stdout: true,
        inline_stderr: true,
        ..reapi::ExecuteRequest::default()
    };
    let policy = connection.config.retry;
    let mut failures_in_a_row = 0;
    let mut operation_name: Option<String> = None;
    loop {
        let mut client = connection.execution();
        let deadline = connection.config.rpc_timeout;
        let (what, opened) = match &operation_name {
            None => {
                job.mark_execute_sent();
                let opening = client.execute(request.clone());
                ("Execute", tokio::time::timeout(deadline, opening).await)
            }
            Some(name) => {
                let wait = reapi::WaitExecutionRequest { name: name.clone() };
                let opening = client.wait_execution(wait);
                (
                    "WaitExecution",
                    tokio::time::timeout(deadline, opening).await,
                )
            }
        };
        let opened = opened.map_err(|_| RemoteError::timeout(what))?;
        // The stream's own messages are bounded only by the whole action's
        // deadline: an action may run for long without news.
        let (status, opened_stream) = match opened {
            Err(status) => (status, false),
            Ok(response) => {
                let mut stream = response.into_inner();
                let status = loop {
                    match stream.message().await {
                        Ok(Some(operation)) => {
                            failures_in_a_row = 0;
                            if !operation.name.is_empty()
                                && operation_name.as_deref() != Some(&operation.name)
                            {
                                operation_name = Some(operation.name.clone());
                                job.set_operation_name(Some(operation.name.clone()));
                            }
                            if operation.done {
                                return done(operation);
                            }
                        }
                        Ok(None) => {
                            break Status::unavailable(
                                "the stream ended before the operation was done",
                            );
                        }
                        Err(status) => break status,
                    }
                };
                (status, true)
            }
        };
        let code = status.code();
        if code == Code::NotFound && operation_name.is_some() {
            // The server forgot the operation (it restarted, or expired
            // it): execute afresh.
            operation_name = None;
            job.set_operation_name(None);
        } else if code == Code::FailedPrecondition {
            if let Some(missing) = missing_in_status(&status) {
                return Ok(ExecuteAnswer::MissingInputs(missing));
            }
            return Err(status_error(what, &status));
        } else if !(is_retryable(code, true) || (opened_stream && is_stream_break(code))) {
            return Err(status_error(what, &status));
        }
        failures_in_a_row += 1;
        if failures_in_a_row >= policy.max_attempts {
            return Err(RemoteError::Unavailable {
                what: what.to_owned(),
                attempts: failures_in_a_row,
                message: one_line(status.message()),
            });
        }
        connection.note_retry(what, failures_in_a_row, &status);
        tokio::time::sleep(policy.backoff(failures_in_a_row)).await;
    }
}

/// Whether an open stream failing with `code` means the connection broke
/// (resume) rather than the server refusing (give up).
fn is_stream_break(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::Internal
            | Code::Aborted
            | Code::Cancelled
            | Code::DeadlineExceeded
    )
}

/// The blobs a failed call's rich status names as missing.
fn missing_in_status(status: &Status) -> Option<Vec<Digest>> {
    let details = rpc::Status::decode(status.details()).ok()?;
    missing_blobs(&details.details)
}

/// The answer a done operation carries.
fn done(operation: Operation) -> Result<ExecuteAnswer, RemoteError> {
    let name = operation.name;
    let any = match operation.result {
        None => {
            return Err(RemoteError::protocol(format!(
                "operation {name} is done without a result"
            )));
        }
        Some(operation::Result::Error(status)) => {
            return Err(RemoteError::server(
                "Execute",
                StatusCode(status.code),
                &status.message,
            ));
        }
        Some(operation::Result::Response(any)) => any,
    };
    if any.type_url != EXECUTE_RESPONSE_TYPE {
        return Err(RemoteError::protocol(format!(
            "operation {name} answered with {:?}, not an ExecuteResponse",
            any.type_url
        )));
    }
    let response = reapi::ExecuteResponse::decode(any.value.as_slice()).map_err(|err| {
        RemoteError::protocol(format!(
            "operation {name}: undecodable ExecuteResponse: {err}"
        ))
    })?;
    let status = response.status.clone().unwrap_or_default();
    match StatusCode(status.code) {
        StatusCode::OK if response.result.is_none() => Err(RemoteError::protocol(format!(
            "operation {name} succeeded without an ActionResult"
        ))),
        StatusCode::OK => Ok(ExecuteAnswer::Done(Box::new(response))),
        StatusCode::FAILED_PRECONDITION => match missing_blobs(&status.details) {
            Some(missing) => Ok(ExecuteAnswer::MissingInputs(missing)),
            None => Err(RemoteError::server(
                "Execute",
                StatusCode(status.code),
                &status.message,
            )),
        },
        StatusCode::DEADLINE_EXCEEDED => Err(RemoteError::timeout(
            "the action's own timeout on the server (Action.timeout)",
        )),
        code => Err(RemoteError::server("Execute", code, &status.message)),
    }
}

/// Sends `CancelOperation(name)`; a failure is logged, not returned: the
/// caller has already been told the job was cancelled.
pub(crate) async fn cancel_operation(connection: &Connection, name: String) {
    let request = bazel_remote_apis::google::longrunning::CancelOperationRequest { name };
    let answer = connection
        .with_retries("CancelOperation", false, || {
            let mut client = connection.operations();
            let request = request.clone();
            async move { client.cancel_operation(request).await }
        })
        .await;
    match answer {
        Ok(Ok(_)) => crate::stats::Counters::add(&connection.counters.cancels_sent, 1),
        Ok(Err(status)) => {
            tracing::debug!(operation = request.name, code = ?status.code(), "CancelOperation refused");
        }
        Err(err) => tracing::debug!(operation = request.name, %err, "CancelOperation failed"),
    }
}
