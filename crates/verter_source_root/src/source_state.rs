//! What a read of the directory answers: [`SourceState`] and the
//! [`ContentHash`] it carries.
//!
//! This module owns the answer types only; it never reads the directory.

use std::fmt;

use verter_dag::SourceVersion;

/// The host's hash of a source's bytes. The directory stores and returns it
/// and never computes or interprets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ContentHash(pub u64);

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{:016x}", self.0)
    }
}

/// The source of one canonical file as of one epoch.
///
/// `T` is the payload the layer above stores with each present version (the
/// bytes it committed), so a root captured earlier can still read what it
/// saw.
///
/// Of the four states, `Present` and `Pending` describe a live file and
/// `Absent` a removed one; `Unknown` says nothing was published (or the
/// removal was forgotten). GC forgets only a file that reads `Absent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceState<T> {
    /// Nothing was published for the file as of that epoch: it is untracked
    /// (creating a file object publishes nothing), or it was removed and
    /// then forgotten by GC.
    Unknown,
    /// The file was removed (or reset); `version` is the version of the
    /// object that was removed.
    Absent {
        /// The version the removal was recorded at.
        version: SourceVersion,
    },
    /// The file is tracked at `version`, but its text is not known yet: it
    /// was invalidated (changed on disk) or closed and could not be read
    /// then, and waits to be reloaded. The old text is no longer served; unlike `Absent`, this
    /// does not claim the file is gone, and GC never forgets it.
    Pending {
        /// The version the text will be reloaded at.
        version: SourceVersion,
    },
    /// The file had a source.
    Present {
        /// Which object and generation the source belongs to.
        version: SourceVersion,
        /// The host's hash of the bytes.
        hash: ContentHash,
        /// What the layer above stored with the version.
        payload: T,
    },
}

impl<T> SourceState<T> {
    /// The recorded version, or `None` for [`SourceState::Unknown`].
    pub fn version(&self) -> Option<SourceVersion> {
        match self {
            Self::Unknown => None,
            Self::Absent { version }
            | Self::Pending { version }
            | Self::Present { version, .. } => Some(*version),
        }
    }

    /// The content hash, if the file had a source (`None` while it is
    /// pending).
    pub fn hash(&self) -> Option<ContentHash> {
        match self {
            Self::Present { hash, .. } => Some(*hash),
            Self::Unknown | Self::Absent { .. } | Self::Pending { .. } => None,
        }
    }

    /// The payload, if the file had a source (`None` while it is pending).
    pub fn payload(&self) -> Option<&T> {
        match self {
            Self::Present { payload, .. } => Some(payload),
            Self::Unknown | Self::Absent { .. } | Self::Pending { .. } => None,
        }
    }

    /// Whether the file had a source.
    pub fn is_present(&self) -> bool {
        matches!(self, Self::Present { .. })
    }

    /// Whether the file is tracked but its text waits to be reloaded.
    pub fn is_pending(&self) -> bool {
        matches!(self, Self::Pending { .. })
    }
}
