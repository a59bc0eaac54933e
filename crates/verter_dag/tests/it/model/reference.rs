//! The sequential reference model the DAG is checked against ([`Model`]),
//! and what an operation may answer ([`Allowed`]).
//!
//! The model knows only what a host can know through the public API: which
//! version of each file is live, which versions it has seen, where each
//! unanswered waiter waits, and each owner's blocker record. It must never
//! read the DAG: it is what the DAG is compared with.

use super::*;

/// The failure a `Fail` operation reports.
#[derive(Debug, thiserror::Error)]
#[error("the model's executor failed")]
pub(super) struct ModelFailure;

/// Which answer outcomes an operation may produce.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Allowed {
    pub(super) ok: bool,
    pub(super) superseded: bool,
    pub(super) shutdown: bool,
    pub(super) cancelled: bool,
    pub(super) failed: bool,
    pub(super) dependency_failed: bool,
}

impl Allowed {
    pub(super) const NOTHING: Self = Self {
        ok: false,
        superseded: false,
        shutdown: false,
        cancelled: false,
        failed: false,
        dependency_failed: false,
    };
    pub(super) const DEPENDENCY_FAILED: Self = Self {
        dependency_failed: true,
        ..Self::NOTHING
    };
}

/// A waiter the model expects to be answered.
#[derive(Debug, Clone)]
pub(super) struct Waiting {
    pub(super) key: DepKey,
    pub(super) policy: WaitPolicy,
    pub(super) priority: Priority,
}

/// The sequential reference model.
#[derive(Debug, Default)]
pub(super) struct Model {
    /// Per file: the live version, if the file has an object.
    pub(super) live: [Option<SourceVersion>; FILES.len()],
    /// Per file: the live object's submission lifetime.
    pub(super) lifetime: [Option<SubmissionLifetime>; FILES.len()],
    /// Per file: every version seen, oldest first.
    pub(super) known: [Vec<SourceVersion>; FILES.len()],
    /// Registered waiters not yet answered, and where they wait.
    pub(super) waiting: BTreeMap<WaiterId, Waiting>,
    /// Waiters answered so far.
    pub(super) answered: BTreeSet<WaiterId>,
    /// Each owner's blocker record.
    pub(super) blockers: BTreeMap<FileIdentity, BTreeSet<DepKey>>,
}

impl Model {
    pub(super) fn index(canonical: &Canonical) -> usize {
        FILES
            .iter()
            .position(|path| *path == canonical.as_str())
            .expect("the test only uses its own files")
    }

    pub(super) fn is_live(&self, file: &FileIdentity) -> bool {
        self.live[Self::index(&file.canonical)] == Some(file.version())
    }

    /// Drops the records of owners of `file` below `bound` and moves the
    /// references to `file`'s versions below `bound` onto `replacement`, as a
    /// retirement does. Without a replacement (a removal) the references
    /// stay: the owners still depend on the file.
    pub(super) fn retire_blockers(
        &mut self,
        file: usize,
        bound: SourceVersion,
        replacement: Option<&FileIdentity>,
    ) {
        let path = FILES[file];
        self.blockers
            .retain(|owner, _| owner.canonical.as_str() != path || owner.version() >= bound);
        for keys in self.blockers.values_mut() {
            let retired: Vec<DepKey> = keys
                .iter()
                .filter(|key| key.file.canonical.as_str() == path && key.file.version() < bound)
                .cloned()
                .collect();
            let Some(live) = replacement else { continue };
            for key in retired {
                keys.remove(&key);
                keys.insert((*live).at(key.stage));
            }
        }
        self.blockers.retain(|_, keys| !keys.is_empty());
    }

    /// Waiters per key.
    pub(super) fn group_sizes(&self) -> BTreeMap<&DepKey, usize> {
        let mut sizes = BTreeMap::new();
        for waiting in self.waiting.values() {
            *sizes.entry(&waiting.key).or_insert(0) += 1;
        }
        sizes
    }
}
