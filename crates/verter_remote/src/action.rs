//! The life of one remote action, start to finish, as one future on the
//! runtime thread. Never runs anything locally and never blocks a thread.
//!
//! # Steps
//! 1. Build the messages and blobs ([`crate::merkle`]); the same spec gives
//!    the same action digest.
//! 2. Unless `skip_cache_lookup`: `GetActionResult`. A hit whose outputs
//!    all fetch is the answer. A hit naming a blob the CAS lost is stale:
//!    go on, and execute with `skip_cache_lookup` so the server does not
//!    answer with the same stale result.
//! 3. `FindMissingBlobs`, then upload only what is missing ([`crate::cas`]).
//! 4. `Execute` ([`crate::execute`]). If the server says inputs are missing,
//!    upload again (once) and execute again; if they are missing after that,
//!    [`RemoteError::MissingBlob`].
//! 5. Fetch stdout, stderr and the output files, each within
//!    `max_output_bytes` and checked against its digest. A result `Execute`
//!    served from its cache whose blobs are gone is executed again with
//!    `skip_cache_lookup`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bytes::Bytes;
use tonic::Code;

use crate::cas;
use crate::digest::Digest;
use crate::error::RemoteError;
use crate::execute::{ExecuteAnswer, execute};
use crate::job::JobState;
use crate::merkle::{PreparedAction, prepare};
use crate::rpc::{Connection, status_error};
use crate::spec::{ActionOutcome, ActionSpec, CacheSource, Timings};
use crate::stats::Counters;

/// Runs `spec` on the server `connection` leads to.
///
/// # Errors
/// Everything [`RemoteError`] lists except `Cancelled`, `NonZeroExit` and
/// `BlockingOnRuntimeThread` (a non-zero exit is an `Ok` outcome).
pub(crate) async fn run_action(
    connection: &Connection,
    spec: &ActionSpec,
    job: &JobState,
) -> Result<ActionOutcome, RemoteError> {
    let started = Instant::now();
    let prepared = prepare(spec)?;
    let action_digest = prepared.action_digest.clone();
    tracing::debug!(action = %action_digest, "remote action starts");
    let mut skip_cache_lookup = spec.skip_cache_lookup;
    let mut timings = Timings::default();

    if !skip_cache_lookup
        && let Some(result) = get_action_result(connection, &action_digest).await?
    {
        let fetch_started = Instant::now();
        match fetch_result(connection, &result).await {
            Ok(fetched) => {
                Counters::add(&connection.counters.ac_hits, 1);
                timings.fetch = fetch_started.elapsed();
                timings.total = started.elapsed();
                return Ok(fetched.into_outcome(CacheSource::ActionCache, action_digest, timings));
            }
            Err(RemoteError::MissingBlob { digest, what }) => {
                tracing::debug!(action = %action_digest, lost = %digest, what, "cached result is stale; executing");
                skip_cache_lookup = true;
            }
            Err(err) => return Err(err),
        }
    }

    let upload_started = Instant::now();
    cas::upload_missing(connection, &prepared.blobs).await?;
    timings.upload = upload_started.elapsed();

    loop {
        let (response, upload_again) =
            execute_uploaded(connection, &prepared, spec.priority, skip_cache_lookup, job).await?;
        timings.upload += upload_again;
        timings.queued_and_ran += response.elapsed;
        let source = if response.response.cached_result {
            CacheSource::ExecuteCached
        } else {
            CacheSource::Executed
        };
        let result = response
            .response
            .result
            .expect("execute answers Done only with a result");
        let fetch_started = Instant::now();
        match fetch_result(connection, &result).await {
            Ok(fetched) => {
                let counter = match source {
                    CacheSource::ExecuteCached => &connection.counters.execute_cached,
                    _ => &connection.counters.executed,
                };
                Counters::add(counter, 1);
                timings.fetch += fetch_started.elapsed();
                timings.total = started.elapsed();
                return Ok(fetched.into_outcome(source, action_digest, timings));
            }
            Err(RemoteError::MissingBlob { digest, what })
                if source == CacheSource::ExecuteCached && !skip_cache_lookup =>
            {
                tracing::debug!(action = %action_digest, lost = %digest, what, "cached result is stale; executing again");
                skip_cache_lookup = true;
            }
            Err(err) => return Err(err),
        }
    }
}

/// An `ExecuteResponse` and the time spent executing (uploads excluded).
struct Executed {
    response: Box<reapi::ExecuteResponse>,
    elapsed: Duration,
}

/// Executes the uploaded action, uploading again once if the server lost
/// inputs. Returns the response and the time the second upload took.
async fn execute_uploaded(
    connection: &Connection,
    prepared: &PreparedAction,
    priority: i32,
    skip_cache_lookup: bool,
    job: &JobState,
) -> Result<(Executed, Duration), RemoteError> {
    let mut upload_again = Duration::ZERO;
    let mut uploaded_again = false;
    let mut elapsed = Duration::ZERO;
    loop {
        let execute_started = Instant::now();
        let answer = execute(
            connection,
            &prepared.action_digest,
            priority,
            skip_cache_lookup,
            job,
        )
        .await?;
        elapsed += execute_started.elapsed();
        match answer {
            ExecuteAnswer::Done(response) => {
                return Ok((Executed { response, elapsed }, upload_again));
            }
            ExecuteAnswer::MissingInputs(missing) if !uploaded_again => {
                tracing::debug!(action = %prepared.action_digest, missing = missing.len(), "server lost inputs; uploading again");
                uploaded_again = true;
                let upload_started = Instant::now();
                cas::upload_missing(connection, &prepared.blobs).await?;
                upload_again += upload_started.elapsed();
            }
            ExecuteAnswer::MissingInputs(missing) => {
                return Err(RemoteError::MissingBlob {
                    digest: missing
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| prepared.action_digest.clone()),
                    what: "action input, missing again after a second upload".to_owned(),
                });
            }
        }
    }
}

/// The action cache's result for `action_digest`, if any.
async fn get_action_result(
    connection: &Connection,
    action_digest: &Digest,
) -> Result<Option<reapi::ActionResult>, RemoteError> {
    let request = reapi::GetActionResultRequest {
        instance_name: connection.config.instance_name.clone(),
        action_digest: Some(action_digest.to_proto()),
        inline_stdout: true,
        inline_stderr: true,
        ..reapi::GetActionResultRequest::default()
    };
    let answer = connection
        .with_retries("GetActionResult", false, || {
            let mut client = connection.action_cache();
            let request = request.clone();
            async move { client.get_action_result(request).await }
        })
        .await?;
    match answer {
        Ok(response) => Ok(Some(response.into_inner())),
        Err(status) if status.code() == Code::NotFound => Ok(None),
        Err(status) => Err(status_error("GetActionResult", &status)),
    }
}

/// An action result's streams and files, fetched.
struct Fetched {
    exit_code: i32,
    stdout: Bytes,
    stderr: Bytes,
    outputs: BTreeMap<String, Bytes>,
}

impl Fetched {
    fn into_outcome(
        self,
        from_cache: CacheSource,
        action_digest: Digest,
        timings: Timings,
    ) -> ActionOutcome {
        ActionOutcome {
            exit_code: self.exit_code,
            stdout: self.stdout,
            stderr: self.stderr,
            outputs: self.outputs,
            from_cache,
            action_digest,
            timings,
        }
    }
}

/// Where one piece of a result comes from.
enum Source {
    Inline(Bytes),
    Cas(Digest),
}

/// Fetches what `result` names, each piece within `max_output_bytes`.
async fn fetch_result(
    connection: &Connection,
    result: &reapi::ActionResult,
) -> Result<Fetched, RemoteError> {
    let limit = connection.config.max_output_bytes;
    let mut wanted: Vec<(Digest, String)> = Vec::new();
    let mut stream =
        |label: &str, raw: &[u8], digest: Option<&reapi::Digest>| -> Result<Source, RemoteError> {
            if !raw.is_empty() {
                check_size(label, raw.len() as u64, limit)?;
                return Ok(Source::Inline(Bytes::copy_from_slice(raw)));
            }
            match digest.map(Digest::from_proto) {
                None => Ok(Source::Inline(Bytes::new())),
                Some(digest) => {
                    check_size(label, digest.len(), limit)?;
                    wanted.push((digest.clone(), label.to_owned()));
                    Ok(Source::Cas(digest))
                }
            }
        };
    let stdout = stream(
        "<stdout>",
        &result.stdout_raw,
        result.stdout_digest.as_ref(),
    )?;
    let stderr = stream(
        "<stderr>",
        &result.stderr_raw,
        result.stderr_digest.as_ref(),
    )?;

    let mut files = Vec::with_capacity(result.output_files.len());
    for file in &result.output_files {
        let digest = file
            .digest
            .as_ref()
            .map(Digest::from_proto)
            .ok_or_else(|| {
                RemoteError::protocol(format!("output file {} has no digest", file.path))
            })?;
        check_size(&file.path, digest.len(), limit)?;
        let source = if file.contents.is_empty() {
            wanted.push((digest.clone(), format!("output file {}", file.path)));
            Source::Cas(digest)
        } else {
            Source::Inline(cas::verified(
                &digest,
                Bytes::copy_from_slice(&file.contents),
            )?)
        };
        files.push((file.path.clone(), source));
    }

    // Every wanted digest is in `blobs` (or the fetch failed); a digest
    // named twice was fetched once, and its uses share the bytes.
    let blobs = cas::fetch_blobs(connection, &wanted).await?;
    let resolve = |source: Source| match source {
        Source::Inline(bytes) => bytes,
        Source::Cas(digest) => blobs.get(&digest).cloned().unwrap_or_default(),
    };
    let outputs = files
        .into_iter()
        .map(|(path, source)| (path, resolve(source)))
        .collect();
    Ok(Fetched {
        exit_code: result.exit_code,
        stdout: resolve(stdout),
        stderr: resolve(stderr),
        outputs,
    })
}

/// Refuses a piece larger than `limit`.
fn check_size(path: &str, size: u64, limit: u64) -> Result<(), RemoteError> {
    if size > limit {
        return Err(RemoteError::OutputTooLarge {
            path: path.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}
