//! Moving blobs to and from the content-addressable storage: upload only
//! what `FindMissingBlobs` says is missing, small blobs in
//! `BatchUpdateBlobs` calls packed up to the batch limit, large ones through
//! `ByteStream.Write`; fetch small blobs with `BatchReadBlobs` and large ones
//! with `ByteStream.Read`. Runs only on the executor's runtime thread.
//!
//! # Invariants
//! 1. The empty blob is never uploaded or fetched: every server holds it.
//! 2. Every fetched blob is checked against its digest before anyone sees
//!    it; a mismatch is [`RemoteError::Protocol`].
//! 3. A batch call never carries more than the batch limit (blob bytes plus
//!    [`BATCH_BLOB_OVERHEAD`] each); a blob that cannot fit streams.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream::{ReadRequest, WriteRequest};
use bytes::Bytes;
use tonic::Code;

use crate::digest::Digest;
use crate::error::{RemoteError, StatusCode};
use crate::rpc::{Connection, status_error};
use crate::stats::Counters;

/// What one blob costs in a batch call beyond its bytes: its digest and the
/// message framing, generously.
pub(crate) const BATCH_BLOB_OVERHEAD: usize = 256;

/// Digests per `FindMissingBlobs` call.
const FIND_MISSING_CHUNK: usize = 4096;

/// Bytes per `ByteStream.Write` message.
const WRITE_CHUNK: usize = 256 * 1024;

/// Whether a blob of `size` bytes goes through the batch calls.
pub(crate) fn fits_batch(size: u64, batch_limit: usize) -> bool {
    usize::try_from(size)
        .ok()
        .and_then(|size| size.checked_add(BATCH_BLOB_OVERHEAD))
        .is_some_and(|cost| cost <= batch_limit)
}

/// Groups `digests` (all fitting a batch) into batches of at most
/// `batch_limit`, in order.
fn batches(digests: Vec<Digest>, batch_limit: usize) -> Vec<Vec<Digest>> {
    let mut batches = Vec::new();
    let mut current = Vec::new();
    let mut current_cost = 0;
    for digest in digests {
        let cost = usize::try_from(digest.len()).unwrap_or(usize::MAX) + BATCH_BLOB_OVERHEAD;
        if !current.is_empty() && current_cost + cost > batch_limit {
            batches.push(std::mem::take(&mut current));
            current_cost = 0;
        }
        current_cost += cost;
        current.push(digest);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// Uploads the blobs of `blobs` the server does not have.
///
/// # Errors
/// The errors of the calls involved; a blob the server refuses is
/// [`RemoteError::Server`].
pub(crate) async fn upload_missing(
    connection: &Connection,
    blobs: &BTreeMap<Digest, Bytes>,
) -> Result<(), RemoteError> {
    let candidates: Vec<Digest> = blobs
        .keys()
        .filter(|digest| !digest.is_empty_blob())
        .cloned()
        .collect();
    let missing = find_missing(connection, &candidates).await?;
    let (small, large): (Vec<Digest>, Vec<Digest>) = missing
        .into_iter()
        .partition(|digest| fits_batch(digest.len(), connection.batch_limit));
    tracing::debug!(
        candidates = candidates.len(),
        batched = small.len(),
        streamed = large.len(),
        "uploading missing blobs"
    );
    for batch in batches(small, connection.batch_limit) {
        batch_update(connection, &batch, blobs).await?;
    }
    for digest in large {
        byte_stream_write(connection, &digest, &blobs[&digest]).await?;
    }
    Ok(())
}

/// The digests among `candidates` the server lacks.
async fn find_missing(
    connection: &Connection,
    candidates: &[Digest],
) -> Result<Vec<Digest>, RemoteError> {
    let mut missing = Vec::new();
    for chunk in candidates.chunks(FIND_MISSING_CHUNK) {
        let request = reapi::FindMissingBlobsRequest {
            instance_name: connection.config.instance_name.clone(),
            blob_digests: chunk.iter().map(Digest::to_proto).collect(),
            ..reapi::FindMissingBlobsRequest::default()
        };
        let response = connection
            .with_retries("FindMissingBlobs", false, || {
                let mut client = connection.cas();
                let request = request.clone();
                async move { client.find_missing_blobs(request).await }
            })
            .await?
            .map_err(|status| status_error("FindMissingBlobs", &status))?
            .into_inner();
        let asked: HashSet<&Digest> = chunk.iter().collect();
        for digest in &response.missing_blob_digests {
            let digest = Digest::from_proto(digest);
            if !asked.contains(&digest) {
                return Err(RemoteError::protocol(format!(
                    "FindMissingBlobs answered with {digest}, which was not asked about"
                )));
            }
            missing.push(digest);
        }
    }
    missing.sort();
    missing.dedup();
    Ok(missing)
}

/// Uploads one batch of small blobs.
async fn batch_update(
    connection: &Connection,
    batch: &[Digest],
    blobs: &BTreeMap<Digest, Bytes>,
) -> Result<(), RemoteError> {
    let request = reapi::BatchUpdateBlobsRequest {
        instance_name: connection.config.instance_name.clone(),
        requests: batch
            .iter()
            .map(|digest| reapi::batch_update_blobs_request::Request {
                digest: Some(digest.to_proto()),
                data: blobs[digest].to_vec(),
                ..Default::default()
            })
            .collect(),
        ..reapi::BatchUpdateBlobsRequest::default()
    };
    let response = connection
        .with_retries("BatchUpdateBlobs", false, || {
            let mut client = connection.cas();
            let request = request.clone();
            async move { client.batch_update_blobs(request).await }
        })
        .await?
        .map_err(|status| status_error("BatchUpdateBlobs", &status))?
        .into_inner();
    let mut answered = HashSet::new();
    for answer in &response.responses {
        let digest = answer
            .digest
            .as_ref()
            .map(Digest::from_proto)
            .ok_or_else(|| RemoteError::protocol("BatchUpdateBlobs answered without a digest"))?;
        let status = answer.status.clone().unwrap_or_default();
        if status.code != 0 {
            return Err(RemoteError::server(
                "BatchUpdateBlobs",
                StatusCode(status.code),
                &format!("{digest}: {}", status.message),
            ));
        }
        answered.insert(digest);
    }
    if let Some(unanswered) = batch.iter().find(|digest| !answered.contains(*digest)) {
        return Err(RemoteError::protocol(format!(
            "BatchUpdateBlobs did not answer for {unanswered}"
        )));
    }
    Counters::add(&connection.counters.blobs_uploaded, batch.len() as u64);
    Counters::add(
        &connection.counters.bytes_uploaded,
        batch.iter().map(Digest::len).sum(),
    );
    Ok(())
}

/// Streams one large blob up.
async fn byte_stream_write(
    connection: &Connection,
    digest: &Digest,
    data: &Bytes,
) -> Result<(), RemoteError> {
    let prefix = connection.resource_prefix();
    let answer = connection
        .with_retries("ByteStream.Write", false, || {
            // A fresh upload id per attempt: a half-written attempt is not resumed.
            let resource_name = format!(
                "{prefix}uploads/{}/blobs/{}/{}",
                upload_id(),
                digest.hash,
                digest.size
            );
            let requests = write_requests(resource_name, data);
            let mut client = connection.byte_stream();
            async move { client.write(tokio_stream::iter(requests)).await }
        })
        .await?;
    match answer {
        Ok(response) => {
            let committed = response.into_inner().committed_size;
            if committed != digest.size {
                return Err(RemoteError::protocol(format!(
                    "ByteStream.Write of {digest} committed {committed} bytes"
                )));
            }
        }
        // The blob was there already.
        Err(status) if status.code() == Code::AlreadyExists => {}
        Err(status) => return Err(status_error("ByteStream.Write", &status)),
    }
    Counters::add(&connection.counters.blobs_uploaded, 1);
    Counters::add(&connection.counters.bytes_uploaded, digest.len());
    Ok(())
}

/// The messages of one write: the first names the resource, the last
/// finishes it.
fn write_requests(resource_name: String, data: &Bytes) -> Vec<WriteRequest> {
    let mut requests = Vec::with_capacity(data.len().div_ceil(WRITE_CHUNK).max(1));
    let mut offset = 0;
    let mut resource_name = Some(resource_name);
    loop {
        let end = (offset + WRITE_CHUNK).min(data.len());
        requests.push(WriteRequest {
            resource_name: resource_name.take().unwrap_or_default(),
            write_offset: i64::try_from(offset).expect("a blob's offset fits in i64"),
            finish_write: end == data.len(),
            data: data[offset..end].to_vec(),
        });
        if end == data.len() {
            return requests;
        }
        offset = end;
    }
}

/// A version-4-shaped UUID, unique within this process and unlikely to
/// collide across processes (REAPI only asks that upload ids not repeat).
fn upload_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let seed = format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let hash = Digest::of(seed.as_bytes()).hash;
    let variant = ["8", "9", "a", "b"][usize::from(hash.as_bytes()[16] % 4)];
    format!(
        "{}-{}-4{}-{variant}{}-{}",
        &hash[0..8],
        &hash[8..12],
        &hash[13..16],
        &hash[17..20],
        &hash[20..32]
    )
}

/// Fetches the blobs of `wanted` (digest and what it is, for errors),
/// verifying each.
///
/// # Errors
/// [`RemoteError::MissingBlob`] for a blob the CAS lacks,
/// [`RemoteError::Protocol`] for one that does not match its digest, and
/// the errors of the calls involved.
pub(crate) async fn fetch_blobs(
    connection: &Connection,
    wanted: &[(Digest, String)],
) -> Result<HashMap<Digest, Bytes>, RemoteError> {
    let mut fetched = HashMap::new();
    let mut what_of: HashMap<&Digest, &str> = HashMap::new();
    let mut small = Vec::new();
    let mut large = Vec::new();
    for (digest, what) in wanted {
        if !digest.is_well_formed() {
            return Err(RemoteError::protocol(format!(
                "malformed digest {digest} for {what}"
            )));
        }
        if what_of.insert(digest, what).is_some() {
            continue;
        }
        if digest.is_empty_blob() {
            fetched.insert(digest.clone(), Bytes::new());
        } else if fits_batch(digest.len(), connection.batch_limit) {
            small.push(digest.clone());
        } else {
            large.push(digest.clone());
        }
    }
    for batch in batches(small, connection.batch_limit) {
        batch_read(connection, &batch, &what_of, &mut fetched).await?;
    }
    for digest in large {
        let data = byte_stream_read(connection, &digest, what_of[&digest]).await?;
        fetched.insert(digest, data);
    }
    Ok(fetched)
}

/// Fetches one batch of small blobs into `fetched`.
async fn batch_read(
    connection: &Connection,
    batch: &[Digest],
    what_of: &HashMap<&Digest, &str>,
    fetched: &mut HashMap<Digest, Bytes>,
) -> Result<(), RemoteError> {
    let request = reapi::BatchReadBlobsRequest {
        instance_name: connection.config.instance_name.clone(),
        digests: batch.iter().map(Digest::to_proto).collect(),
        ..reapi::BatchReadBlobsRequest::default()
    };
    let response = connection
        .with_retries("BatchReadBlobs", false, || {
            let mut client = connection.cas();
            let request = request.clone();
            async move { client.batch_read_blobs(request).await }
        })
        .await?
        .map_err(|status| status_error("BatchReadBlobs", &status))?
        .into_inner();
    for answer in response.responses {
        let digest = answer
            .digest
            .as_ref()
            .map(Digest::from_proto)
            .ok_or_else(|| RemoteError::protocol("BatchReadBlobs answered without a digest"))?;
        let Some(what) = what_of.get(&digest) else {
            return Err(RemoteError::protocol(format!(
                "BatchReadBlobs answered with {digest}, which was not asked for"
            )));
        };
        let status = answer.status.unwrap_or_default();
        if status.code == Code::NotFound as i32 {
            return Err(RemoteError::MissingBlob {
                digest,
                what: (*what).to_owned(),
            });
        }
        if status.code != 0 {
            return Err(RemoteError::server(
                "BatchReadBlobs",
                StatusCode(status.code),
                &format!("{digest}: {}", status.message),
            ));
        }
        if answer.compressor != 0 {
            return Err(RemoteError::protocol(format!(
                "BatchReadBlobs sent {digest} compressed, which was not asked for"
            )));
        }
        let data = verified(&digest, Bytes::from(answer.data))?;
        fetched.insert(digest, data);
    }
    if let Some(unanswered) = batch.iter().find(|digest| !fetched.contains_key(*digest)) {
        return Err(RemoteError::protocol(format!(
            "BatchReadBlobs did not answer for {unanswered}"
        )));
    }
    Counters::add(&connection.counters.blobs_fetched, batch.len() as u64);
    Counters::add(
        &connection.counters.bytes_fetched,
        batch.iter().map(Digest::len).sum(),
    );
    Ok(())
}

/// Streams one large blob down.
async fn byte_stream_read(
    connection: &Connection,
    digest: &Digest,
    what: &str,
) -> Result<Bytes, RemoteError> {
    let request = ReadRequest {
        resource_name: format!(
            "{}blobs/{}/{}",
            connection.resource_prefix(),
            digest.hash,
            digest.size
        ),
        read_offset: 0,
        read_limit: 0,
    };
    let expected = usize::try_from(digest.len()).unwrap_or(usize::MAX);
    let answer = connection
        .with_retries("ByteStream.Read", false, || {
            let mut client = connection.byte_stream();
            let request = request.clone();
            async move {
                let mut stream = client.read(request).await?.into_inner();
                let mut data = Vec::with_capacity(expected);
                while let Some(message) = stream.message().await? {
                    data.extend_from_slice(&message.data);
                    // More than the digest's size cannot verify; stop reading.
                    if data.len() > expected {
                        break;
                    }
                }
                Ok(data)
            }
        })
        .await?;
    let data = match answer {
        Ok(data) => data,
        Err(status) if status.code() == Code::NotFound => {
            return Err(RemoteError::MissingBlob {
                digest: digest.clone(),
                what: what.to_owned(),
            });
        }
        Err(status) => return Err(status_error("ByteStream.Read", &status)),
    };
    let data = verified(digest, Bytes::from(data))?;
    Counters::add(&connection.counters.blobs_fetched, 1);
    Counters::add(&connection.counters.bytes_fetched, digest.len());
    Ok(data)
}

/// `data` if it matches `digest`.
pub(crate) fn verified(digest: &Digest, data: Bytes) -> Result<Bytes, RemoteError> {
    let actual = Digest::of(&data);
    if &actual != digest {
        return Err(RemoteError::protocol(format!(
            "fetched blob {digest} hashes to {actual}"
        )));
    }
    Ok(data)
}

#[cfg(test)]
mod tests;
