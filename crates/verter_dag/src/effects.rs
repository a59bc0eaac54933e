//! What a DAG operation asks its caller to do after unlocking: answer
//! waiters, fire dedupe-joiner events, wake pumps for newly ready work, and
//! stop work that was cancelled while running.
//!
//! Nothing here runs anything. The DAG returns these values from each
//! operation; the layer above carries them out after its lock guard drops,
//! because an answer or a joiner callback may re-enter the scheduler.

use std::sync::Arc;

use crate::error::DagFailure;
use crate::identity::{
    CancellationToken, Canonical, DepKey, ObjectRecord, Priority, WorkNodeIdentity,
};
use crate::ready::{AdmissionId, ResourceClass};

/// The id of one registered request waiter, allocated by the DAG: a slot
/// and a tag. The waiters registered at one time have distinct slots,
/// numbered from zero, so a caller can keep what it holds per waiter in a
/// table indexed by [`WaiterId::slot`]. A slot is reused only after its id
/// was given back with `SchedulerDag::recycle_waiter`, and then under
/// another tag, so an old id never equals a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaiterId(pub(crate) u64);

impl WaiterId {
    pub(crate) fn new(slot: u32, tag: u32) -> Self {
        Self(u64::from(tag) << 32 | u64::from(slot))
    }

    /// The raw value, for tracing.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The id whose raw value ([`Self::get`]) is `raw`: how a handle that
    /// kept the raw value names its waiter again.
    pub fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// Its slot: distinct among the waiters registered at one time.
    pub fn slot(self) -> usize {
        (self.0 & u64::from(u32::MAX)) as usize
    }

    pub(crate) fn tag(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// What a request waiter does when a newer edit supersedes the generation it
/// waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitPolicy {
    /// A request without source text: it follows its file to the newest
    /// generation.
    Follow,
    /// A request that carried source text: a newer source update answers it
    /// `Superseded`. It still follows a language re-home (same lifetime).
    Pinned,
}

/// One answer to deliver to one waiter.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Who to answer.
    pub waiter: WaiterId,
    /// The work the answer is about: after following, the newest version.
    pub key: DepKey,
    /// `Ok` when `key`'s work is done (the caller reads its output), or why
    /// it can never be.
    pub outcome: Result<(), DagFailure>,
}

/// A request joined an existing waiter group instead of admitting work. The
/// caller fires it after unlocking: its callback may re-enter the scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupJoinerEvent {
    /// The shared work.
    pub key: DepKey,
    /// The joiner.
    pub waiter: WaiterId,
    /// Members of the group, the joiner included.
    pub group_size: usize,
}

/// Work handed to a worker: its carried identity and admission. Not `Clone`:
/// it is consumed by exactly one completion, failure or refusal, which is
/// what releases its capacity reservation exactly once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a dispatch holds a capacity reservation until it is completed, failed or refused"]
pub struct Dispatch {
    /// The work, with the identity it was admitted under.
    pub identity: WorkNodeIdentity,
    /// Which admission of that identity this is.
    pub admission: AdmissionId,
    /// The budget it draws on.
    pub class: ResourceClass,
    /// Its effective priority when dequeued.
    pub priority: Priority,
    /// Cancelled (in the same call that retires the work) when the work is
    /// removed, reset, superseded or cancelled while it runs: a worker checks
    /// it before running the executor, and a long stage may stop early. Its
    /// result is refused either way.
    pub cancel: CancellationToken,
    /// The capacity reservation it holds, handed back to the ledger by
    /// whatever consumes it (private: only the DAG makes a dispatch).
    pub(crate) reserved: crate::ready::Reserved,
    /// The ticket of the ready-queue entry it was taken from.
    pub(crate) ticket: u64,
    /// The DAG that made it (`SchedulerDag::successor`): a dispatch made by
    /// a DAG another one succeeded is refused by the successor without
    /// touching its ledger. (Four bytes that were padding.)
    pub(crate) instance: u32,
}

impl Dispatch {
    /// The ticket of the ready-queue entry it was taken from: issued when
    /// the work was made ready (or moved lanes) and counting up, so with
    /// [`crate::SchedulerDag::tickets_issued`] read at the end of each lock
    /// hold a caller can tell in which hold the work became ready.
    pub fn ready_ticket(&self) -> u64 {
        self.ticket
    }
}

/// Work that failed without running, each with the failure its waiters
/// were answered ([`Effects::failed`]).
pub type FailedWork = Vec<(WorkNodeIdentity, Arc<DagFailure>)>;

/// The effects of one DAG operation, for the caller to run after unlocking.
#[derive(Debug, Default)]
#[must_use = "effects must be carried out after the lock is released, or waiters hang"]
pub struct Effects {
    /// Waiters to answer, in the order the DAG decided them. One inline: a
    /// completion most often answers one request.
    pub answers: smallvec::SmallVec<[Answer; 1]>,
    /// Dedupe joins to report.
    pub joiners: Vec<DedupJoinerEvent>,
    /// Work items that became ready: pumps to wake.
    pub newly_ready: usize,
    /// Work that was running when it was cancelled or retired: its result
    /// will be refused, and its dispatch's [`CancellationToken`] is already
    /// cancelled.
    pub abandoned_running: Vec<WorkNodeIdentity>,
    /// Done work dropped because something it was built from changed (an
    /// Artifact whose blocker was edited or removed): the caller must stop
    /// serving its output.
    pub invalidated: Vec<WorkNodeIdentity>,
    /// File objects the DAG created itself, because live work names a file
    /// that has no object (an Artifact whose blocker was removed needs it
    /// again): the caller must publish a node for each.
    pub ingested: Vec<(Canonical, ObjectRecord)>,
    /// Failures of nodes the DAG let go of (a failed node retired by a
    /// sweep, dropped, or reset). A failure may hold the host's error, whose
    /// `Drop` is host code, so the caller drops these after its lock, like
    /// the failures in `answers`.
    pub released: Vec<Arc<DagFailure>>,
    /// Work that failed without running because a dependency failed, with
    /// the failure its waiters were answered: for the caller to report.
    /// Like `released`, dropped after the lock. Boxed (one word while
    /// empty): effects move by value on every completion, and failures are
    /// rare.
    pub failed: Option<Box<FailedWork>>,
}

impl Effects {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
            && self.joiners.is_empty()
            && self.newly_ready == 0
            && self.abandoned_running.is_empty()
            && self.invalidated.is_empty()
            && self.ingested.is_empty()
            && self.released.is_empty()
            && self.failed.is_none()
    }

    /// Appends `other`'s effects after this one's.
    pub fn merge(&mut self, other: Effects) {
        self.answers.extend(other.answers);
        self.joiners.extend(other.joiners);
        self.newly_ready += other.newly_ready;
        self.abandoned_running.extend(other.abandoned_running);
        self.invalidated.extend(other.invalidated);
        self.ingested.extend(other.ingested);
        self.released.extend(other.released);
        if let Some(other) = other.failed {
            self.failed.get_or_insert_default().extend(*other);
        }
    }
}
