//! The few wire messages and names REAPI uses that the generated bindings
//! lack: `google.rpc.PreconditionFailure` (how a server names missing
//! blobs), the `Any` type URLs, and the `blobs/{hash}/{size}` subjects.
//! Pure encoding; never performs I/O.

use bazel_remote_apis::google::protobuf::Any;
use prost::Message;

use crate::digest::Digest;

/// The type URL of an `ExecuteResponse` packed in an `Operation`.
pub(crate) const EXECUTE_RESPONSE_TYPE: &str =
    "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteResponse";

/// The type URL of `ExecuteOperationMetadata` packed in an `Operation`.
#[cfg_attr(not(any(test, feature = "fake")), allow(dead_code))]
pub(crate) const EXECUTE_METADATA_TYPE: &str =
    "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteOperationMetadata";

/// The type URL of a `PreconditionFailure` in a status's details.
pub(crate) const PRECONDITION_FAILURE_TYPE: &str =
    "type.googleapis.com/google.rpc.PreconditionFailure";

/// The violation type REAPI uses for a blob missing from the CAS.
pub(crate) const MISSING_VIOLATION: &str = "MISSING";

/// `google.rpc.PreconditionFailure`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct PreconditionFailure {
    /// What failed.
    #[prost(message, repeated, tag = "1")]
    pub(crate) violations: Vec<Violation>,
}

/// `google.rpc.PreconditionFailure.Violation`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Violation {
    /// The kind, e.g. `MISSING`.
    #[prost(string, tag = "1")]
    pub(crate) r#type: String,
    /// What it concerns, e.g. `blobs/{hash}/{size}`.
    #[prost(string, tag = "2")]
    pub(crate) subject: String,
    /// Free text.
    #[prost(string, tag = "3")]
    pub(crate) description: String,
}

/// The blobs a status's details name as missing, or `None` when the details
/// hold no `MISSING` violation.
pub(crate) fn missing_blobs(details: &[Any]) -> Option<Vec<Digest>> {
    let mut found = false;
    let mut missing = Vec::new();
    for detail in details {
        if detail.type_url != PRECONDITION_FAILURE_TYPE {
            continue;
        }
        let Ok(failure) = PreconditionFailure::decode(detail.value.as_slice()) else {
            continue;
        };
        for violation in failure.violations {
            if violation.r#type == MISSING_VIOLATION {
                found = true;
                missing.extend(parse_blob_subject(&violation.subject));
            }
        }
    }
    found.then_some(missing)
}

/// The subject REAPI gives a missing blob: `blobs/{hash}/{size}`.
#[cfg_attr(not(any(test, feature = "fake")), allow(dead_code))]
pub(crate) fn blob_subject(digest: &Digest) -> String {
    format!("blobs/{}/{}", digest.hash, digest.size)
}

/// The digest in a `blobs/{hash}/{size}` subject.
fn parse_blob_subject(subject: &str) -> Option<Digest> {
    let rest = subject.strip_prefix("blobs/")?;
    let (hash, size) = rest.split_once('/')?;
    let digest = Digest {
        hash: hash.to_owned(),
        size: size.parse().ok()?,
    };
    digest.is_well_formed().then_some(digest)
}

#[cfg(test)]
mod tests;
