//! Content digests: SHA-256 over the exact bytes, with the size, as REAPI
//! names every blob (a file's contents or a serialized message). Pure
//! computation; never performs I/O.

use std::fmt;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bytes::Bytes;
use prost::Message;
use sha2::{Digest as _, Sha256};

/// A blob's REAPI digest: the lowercase hex SHA-256 of its bytes and their
/// length. Displays as `hash/size`, the form resource names use.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    /// Lowercase hex SHA-256, 64 characters.
    pub hash: String,
    /// The blob's length in bytes.
    pub size: i64,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            hash: hex(&Sha256::digest(bytes)),
            size: i64::try_from(bytes.len()).expect("a blob's length fits in i64"),
        }
    }

    /// Whether this is the digest of the empty blob, which every REAPI
    /// server holds implicitly (it is never uploaded or fetched).
    pub fn is_empty_blob(&self) -> bool {
        self.size == 0
    }

    /// The size as a `u64` (negative sizes, which only a broken server
    /// sends, read as zero).
    pub(crate) fn len(&self) -> u64 {
        u64::try_from(self.size).unwrap_or(0)
    }

    /// The wire form.
    pub(crate) fn to_proto(&self) -> reapi::Digest {
        reapi::Digest {
            hash: self.hash.clone(),
            size_bytes: self.size,
        }
    }

    /// From the wire form.
    pub(crate) fn from_proto(digest: &reapi::Digest) -> Self {
        Self {
            hash: digest.hash.clone(),
            size: digest.size_bytes,
        }
    }

    /// Whether `hash` looks like a SHA-256 digest (64 lowercase hex digits)
    /// and the size is not negative.
    pub(crate) fn is_well_formed(&self) -> bool {
        self.size >= 0
            && self.hash.len() == 64
            && self
                .hash
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.hash, self.size)
    }
}

/// A message serialized as REAPI digests it (prost's canonical encoding:
/// fields in tag order, defaults omitted), with its digest.
pub(crate) fn encode_message<M: Message>(message: &M) -> (Digest, Bytes) {
    let bytes = Bytes::from(message.encode_to_vec());
    (Digest::of(&bytes), bytes)
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests;
