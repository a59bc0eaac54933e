//! The inbox: two bounded lanes of prepared submissions, and the rule that
//! keeps every sender's submissions in the order it sent them.
//!
//! An urgent request (`High` or `Critical`, sent alone) goes through the
//! urgent lane, which every pump drains before the normal lane, so it is not
//! admitted behind thousands of background requests (docs/design.md, "The
//! inbox"). Reordering across senders is free: nothing orders two threads'
//! submissions except their own synchronisation, which happens outside.
//! Reordering one sender's own submissions is not: a thread's read must see
//! its earlier write. So each (thread, scheduler) pair has a [`Sender`]
//! state that counts its items not yet admitted and remembers their lane;
//! while any is pending, its next item goes to the same lane, whatever its
//! priority. Both lanes are FIFO, so a sender's items are admitted in order.
//!
//! This module owns the lanes and the lane choice. It never admits anything:
//! the pump takes items out (`try_recv`) in the lock hold that admits them,
//! and reports each admitted envelope back with [`Envelope::admitted`].
//!
//! # Invariants
//! 1. All of one sender's pending items are in one lane
//!    (`a_senders_urgent_item_waits_behind_its_own_normal_items`).
//! 2. An urgent item of a sender with nothing pending is taken before every
//!    normal item (`an_urgent_request_overtakes_other_senders_normal_items`).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender as ChannelSender, TrySendError};

/// Which lane an item travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Drained first.
    Urgent,
    /// Everything else.
    Normal,
}

/// One sender's items not yet admitted, and their lane.
#[derive(Debug, Default)]
pub(crate) struct SenderState {
    pending: AtomicUsize,
    /// Whether the pending items are in the urgent lane. Written only by the
    /// owning thread, and only while nothing of its is pending.
    urgent: AtomicBool,
}

impl SenderState {
    /// The lane for this sender's next item, and counts it as pending. Only
    /// the owning thread calls this.
    fn lane_for(&self, wants_urgent: bool) -> Lane {
        // Acquire pairs with the admitting hold's Release: seeing zero means
        // every earlier item of this sender has been admitted.
        if self.pending.load(Ordering::Acquire) == 0 {
            self.urgent.store(wants_urgent, Ordering::Relaxed);
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        if self.urgent.load(Ordering::Relaxed) {
            Lane::Urgent
        } else {
            Lane::Normal
        }
    }
}

/// Distinguishes schedulers in the per-thread sender table. Never reused.
static NEXT_INBOX: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's sender state per inbox it has sent to.
    static SENDERS: RefCell<Vec<(u64, Arc<SenderState>)>> = const { RefCell::new(Vec::new()) };
}

/// An item with its sender, so its admission can be reported back.
pub(crate) struct Envelope<T> {
    item: T,
    sender: Arc<SenderState>,
}

impl<T> Envelope<T> {
    /// The item; call [`Envelope::admitted`] with the sender once it is
    /// admitted (or answered without admission).
    pub(crate) fn open(self) -> (T, Admitted) {
        (self.item, Admitted(self.sender))
    }
}

/// Proof that an envelope was opened; consumed when its item is admitted.
#[must_use = "an admitted item must be reported, or its sender's later items stay in its lane"]
pub(crate) struct Admitted(Arc<SenderState>);

impl Admitted {
    /// Reports the item admitted (under the DAG lock, in the admitting
    /// hold).
    pub(crate) fn admitted(self) {
        self.0.pending.fetch_sub(1, Ordering::Release);
    }
}

/// The two lanes.
pub(crate) struct Inbox<T> {
    id: u64,
    urgent: (ChannelSender<Envelope<T>>, Receiver<Envelope<T>>),
    normal: (ChannelSender<Envelope<T>>, Receiver<Envelope<T>>),
}

/// Why a send did not go through.
pub(crate) enum SendError<T> {
    /// The lane is full; the item comes back (send it again to the same
    /// lane).
    Full(Envelope<T>),
    /// The inbox was torn down; the item comes back.
    Disconnected(Envelope<T>),
}

impl<T> Inbox<T> {
    /// Two lanes: `capacity` normal items and `urgent_capacity` urgent ones.
    pub(crate) fn new(capacity: usize, urgent_capacity: usize) -> Self {
        Self {
            id: NEXT_INBOX.fetch_add(1, Ordering::Relaxed),
            urgent: crossbeam_channel::bounded(urgent_capacity),
            normal: crossbeam_channel::bounded(capacity),
        }
    }

    /// The calling thread's sender state for this inbox.
    fn sender(&self) -> Arc<SenderState> {
        SENDERS.with(|senders| {
            let mut senders = senders.borrow_mut();
            if let Some((_, state)) = senders.iter().find(|(id, _)| *id == self.id) {
                return Arc::clone(state);
            }
            if senders.len() >= 8 {
                // Forget the states nothing else holds (no item in flight):
                // most belong to schedulers that are gone.
                senders.retain(|(_, state)| Arc::strong_count(state) > 1);
            }
            let state = Arc::new(SenderState::default());
            senders.push((self.id, Arc::clone(&state)));
            state
        })
    }

    /// Wraps `item` for sending from this thread: picks its lane (see the
    /// module docs) and counts it as pending.
    pub(crate) fn seal(&self, item: T, wants_urgent: bool) -> (Envelope<T>, Lane) {
        let sender = self.sender();
        let lane = sender.lane_for(wants_urgent);
        (Envelope { item, sender }, lane)
    }

    fn lane(&self, lane: Lane) -> &(ChannelSender<Envelope<T>>, Receiver<Envelope<T>>) {
        match lane {
            Lane::Urgent => &self.urgent,
            Lane::Normal => &self.normal,
        }
    }

    /// Sends without blocking.
    pub(crate) fn try_send(&self, envelope: Envelope<T>, lane: Lane) -> Result<(), SendError<T>> {
        match self.lane(lane).0.try_send(envelope) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(back)) => Err(SendError::Full(back)),
            Err(TrySendError::Disconnected(back)) => Err(SendError::Disconnected(back)),
        }
    }

    /// Sends, waiting for room; the envelope comes back if the inbox was
    /// torn down.
    pub(crate) fn send(&self, envelope: Envelope<T>, lane: Lane) -> Result<(), Envelope<T>> {
        self.lane(lane)
            .0
            .send(envelope)
            .map_err(|err| err.into_inner())
    }

    /// The next item to admit: the urgent lane first.
    pub(crate) fn try_recv(&self) -> Option<Envelope<T>> {
        self.urgent
            .1
            .try_recv()
            .or_else(|_| self.normal.1.try_recv())
            .ok()
    }

    /// Whether both lanes are empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.urgent.1.is_empty() && self.normal.1.is_empty()
    }

    /// Items in both lanes.
    pub(crate) fn len(&self) -> usize {
        self.urgent.1.len() + self.normal.1.len()
    }

    /// The receiving ends, urgent first (for a thread that waits on both).
    pub(crate) fn receivers(&self) -> [Receiver<Envelope<T>>; 2] {
        [self.urgent.1.clone(), self.normal.1.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(inbox: &Inbox<&'static str>) -> Option<&'static str> {
        inbox.try_recv().map(|envelope| {
            let (item, admitted) = envelope.open();
            admitted.admitted();
            item
        })
    }

    /// Invariant 2, from two threads: the urgent item of a sender with
    /// nothing pending is taken before another sender's earlier normal ones.
    #[test]
    fn an_urgent_request_overtakes_other_senders_normal_items() {
        let inbox = Inbox::new(16, 4);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for item in ["b1", "b2", "b3"] {
                    let (envelope, lane) = inbox.seal(item, false);
                    assert_eq!(lane, Lane::Normal);
                    assert!(inbox.try_send(envelope, lane).is_ok());
                }
            });
        });
        let (envelope, lane) = inbox.seal("urgent", true);
        assert_eq!(lane, Lane::Urgent);
        assert!(inbox.try_send(envelope, lane).is_ok());
        assert_eq!(take(&inbox), Some("urgent"));
        assert_eq!(take(&inbox), Some("b1"));
        assert_eq!(inbox.len(), 2);
    }

    /// Invariant 1: while a sender has normal items pending, its urgent item
    /// follows them in the normal lane; once they are admitted, its next
    /// urgent item takes the urgent lane again.
    #[test]
    fn a_senders_urgent_item_waits_behind_its_own_normal_items() {
        let inbox = Inbox::new(16, 4);
        let (write, lane) = inbox.seal("write", false);
        assert!(inbox.try_send(write, lane).is_ok());
        let (read, lane) = inbox.seal("read", true);
        assert_eq!(lane, Lane::Normal, "it must not overtake its own write");
        assert!(inbox.try_send(read, lane).is_ok());
        assert_eq!(take(&inbox), Some("write"));
        assert_eq!(take(&inbox), Some("read"));
        let (later, lane) = inbox.seal("later", true);
        assert_eq!(lane, Lane::Urgent, "nothing of this sender is pending now");
        assert!(inbox.try_send(later, lane).is_ok());
        // And a normal item sent while the urgent one is pending follows it.
        let (after, lane) = inbox.seal("after", false);
        assert_eq!(lane, Lane::Urgent);
        assert!(inbox.try_send(after, lane).is_ok());
        assert_eq!(take(&inbox), Some("later"));
        assert_eq!(take(&inbox), Some("after"));
        assert!(inbox.is_empty());
    }
}
