//! Content digests and store keys: 32-byte values the caller computes. This
//! module owns their representation and text form; it never hashes anything,
//! so the store never decides what a key covers.

use std::fmt;

/// A 32-byte content digest.
///
/// The store never computes one: the caller hashes with the digest function
/// of its choice. The remote execution tier names every blob and action by
/// its SHA-256 (the Remote Execution API's default digest function), and a
/// scheduler that uses both should compute these with the same SHA-256 so one
/// digest names an output in either place.
///
/// Displays as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl From<[u8; 32]> for Digest {
    fn from(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// The key of one stored output: a digest the caller computes from
/// everything the output was computed from (the executor's inputs, the
/// versions of the sources it read, the stage, the profile).
///
/// The store compares keys and nothing else, so a key that misses one input
/// would answer a stale output: the whole burden of "never stale" rests on
/// how the caller derives it. Derive it with the same SHA-256 the remote
/// execution tier uses for its action digests (see [`Digest`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(pub Digest);

impl StoreKey {
    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }
}

impl From<[u8; 32]> for StoreKey {
    fn from(bytes: [u8; 32]) -> Self {
        Self(Digest(bytes))
    }
}

impl From<Digest> for StoreKey {
    fn from(digest: Digest) -> Self {
        Self(digest)
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreKey({})", self.0)
    }
}

#[cfg(test)]
mod tests;
