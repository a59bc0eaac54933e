//! The inbox: two bounded lanes of prepared submissions, and the rules that
//! keep every item behind every write sent before it.
//!
//! An urgent item (a lone `High` or `Critical` request) goes through the
//! urgent lane, which every pump drains before the normal lane, so it is not
//! admitted behind thousands of background requests (docs/design.md, "The
//! inbox"). Overtaking a read is harmless (a read may see newer state);
//! overtaking a write is not: an item must see every write sent before it,
//! by any thread (a host that upserts on one thread and then asks on another
//! relies on it). The lane choice is `verter_pools::WriteLanes`: it counts
//! the writes waiting in each lane (never in both at once) and sends every
//! item sealed while writes wait to their lane, behind them.
//!
//! This module owns the lanes and the lane choice. It never admits anything:
//! the pump takes items out (`try_recv`) in the lock hold that admits them,
//! and reports each one admitted there ([`Inbox::admitted`]).
//!
//! # Invariants
//! 1. No item is admitted before a write sent before it
//!    (`an_urgent_item_never_overtakes_a_pending_write`,
//!    `everything_follows_a_pending_urgent_write`).
//! 2. An urgent item sent while no write waits is taken before every normal
//!    item (`an_urgent_read_overtakes_pending_reads`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Waker;

use crossbeam_channel::{Receiver, Sender as ChannelSender, TrySendError};
use verter_pools::{Lane, WriteLanes};

/// An item on its way to admission.
pub(crate) struct Envelope<T> {
    item: T,
    /// The write counter it holds a unit of, if it is a write.
    write: Option<Lane>,
}

impl<T> Envelope<T> {
    /// The item, and the receipt to hand to [`Inbox::admitted`] once it is
    /// admitted (or answered without admission).
    pub(crate) fn open(self) -> (T, Admitted) {
        (self.item, Admitted { write: self.write })
    }
}

/// The receipt of an opened envelope.
#[must_use = "an admitted write must be reported, or the lanes stay pinned"]
pub(crate) struct Admitted {
    write: Option<Lane>,
}

/// The two lanes.
pub(crate) struct Inbox<T> {
    urgent: (ChannelSender<Envelope<T>>, Receiver<Envelope<T>>),
    normal: (ChannelSender<Envelope<T>>, Receiver<Envelope<T>>),
    /// The writes waiting in each lane, and the lane choice.
    writes: WriteLanes,
    /// Items taken out so far: a room future is ready once it moved.
    taken: AtomicU64,
    /// Tasks waiting for room ([`crate::InboxRoom`]), woken after the
    /// hold that took items out (never under the DAG lock).
    room_wakers: parking_lot::Mutex<Vec<Waker>>,
    /// Whether `room_wakers` may hold a waker: one load per hold when
    /// nobody waits.
    room_waiting: AtomicBool,
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
            urgent: crossbeam_channel::bounded(urgent_capacity),
            normal: crossbeam_channel::bounded(capacity),
            writes: WriteLanes::new(),
            taken: AtomicU64::new(0),
            room_wakers: parking_lot::Mutex::new(Vec::new()),
            room_waiting: AtomicBool::new(false),
        }
    }

    /// Wraps `item` for sending and picks its lane (see the module docs).
    /// `write`: whether it changes a file (text or language).
    pub(crate) fn seal(&self, item: T, urgent: bool, write: bool) -> (Envelope<T>, Lane) {
        let lane = self.writes.seal(urgent, write);
        (
            Envelope {
                item,
                write: write.then_some(lane),
            },
            lane,
        )
    }

    /// Reports an opened item admitted (under the DAG lock, in the hold
    /// that admitted it), or refused.
    pub(crate) fn admitted(&self, receipt: Admitted) {
        if let Some(lane) = receipt.write {
            self.writes.admitted(lane);
        }
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
        let taken = self
            .urgent
            .1
            .try_recv()
            .or_else(|_| self.normal.1.try_recv())
            .ok();
        self.count_taken(taken.is_some());
        taken
    }

    /// The next item of `lane` alone.
    pub(crate) fn try_recv_lane(&self, lane: Lane) -> Option<Envelope<T>> {
        let taken = self.lane(lane).1.try_recv().ok();
        self.count_taken(taken.is_some());
        taken
    }

    fn count_taken(&self, taken: bool) {
        if taken {
            self.taken.fetch_add(1, Ordering::Release);
        }
    }

    /// How many items were taken out so far.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Acquire)
    }

    /// Whether the normal lane has room for an item now.
    pub(crate) fn has_room(&self) -> bool {
        !self.normal.0.is_full()
    }

    /// Registers `waker` to be woken after the next hold that takes items
    /// out ([`Self::wake_room`]).
    pub(crate) fn wait_for_room(&self, waker: &Waker) {
        let mut wakers = self.room_wakers.lock();
        if !wakers.iter().any(|known| known.will_wake(waker)) {
            wakers.push(waker.clone());
        }
        self.room_waiting.store(true, Ordering::SeqCst);
    }

    /// Wakes every task waiting for room. Called after each hold, outside
    /// the DAG lock; one load when nobody waits.
    pub(crate) fn wake_room(&self) {
        if !self.room_waiting.load(Ordering::SeqCst) {
            return;
        }
        let wakers = {
            let mut wakers = self.room_wakers.lock();
            self.room_waiting.store(false, Ordering::SeqCst);
            std::mem::take(&mut *wakers)
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Items in the urgent and the normal lane now.
    pub(crate) fn lens(&self) -> (usize, usize) {
        (self.urgent.1.len(), self.normal.1.len())
    }

    /// Whether a write sent before this call still waits for admission.
    /// While none does, a read sees every write sent before it, so it may
    /// be answered from committed state (docs/design.md, "The inbox").
    pub(crate) fn writes_waiting(&self) -> bool {
        self.writes.any_waiting()
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
            let (item, receipt) = envelope.open();
            inbox.admitted(receipt);
            item
        })
    }

    fn send(inbox: &Inbox<&'static str>, item: &'static str, urgent: bool, write: bool) -> Lane {
        let (envelope, lane) = inbox.seal(item, urgent, write);
        assert!(inbox.try_send(envelope, lane).is_ok());
        lane
    }

    /// Invariant 2: with no write waiting, an urgent item is taken before
    /// reads sent earlier (by this thread or another).
    #[test]
    fn an_urgent_read_overtakes_pending_reads() {
        let inbox = Inbox::new(16, 4);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for item in ["b1", "b2"] {
                    assert_eq!(send(&inbox, item, false, false), Lane::Normal);
                }
            });
        });
        assert_eq!(send(&inbox, "urgent", true, false), Lane::Urgent);
        assert_eq!(take(&inbox), Some("urgent"));
        assert_eq!(take(&inbox), Some("b1"));
        assert_eq!(take(&inbox), Some("b2"));
        assert!(inbox.is_empty());
    }

    /// Invariant 1, normal lane: while a write (from any thread) waits there,
    /// urgent items follow it; once it is admitted, they overtake again.
    #[test]
    fn an_urgent_item_never_overtakes_a_pending_write() {
        let inbox = Inbox::new(16, 4);
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(send(&inbox, "write", false, true), Lane::Normal));
        });
        assert_eq!(send(&inbox, "read", true, false), Lane::Normal);
        assert_eq!(send(&inbox, "urgent write", true, true), Lane::Normal);
        assert_eq!(take(&inbox), Some("write"));
        assert_eq!(take(&inbox), Some("read"));
        assert_eq!(take(&inbox), Some("urgent write"));
        assert_eq!(send(&inbox, "later", true, false), Lane::Urgent);
        assert_eq!(take(&inbox), Some("later"));
        assert!(inbox.is_empty());
    }

    /// Invariant 1, urgent lane: an urgent write overtakes waiting reads,
    /// and everything sent after it, urgent or not, follows it.
    #[test]
    fn everything_follows_a_pending_urgent_write() {
        let inbox = Inbox::new(16, 4);
        assert_eq!(send(&inbox, "background read", false, false), Lane::Normal);
        assert_eq!(send(&inbox, "edit", true, true), Lane::Urgent);
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(send(&inbox, "normal read", false, false), Lane::Urgent));
        });
        assert_eq!(send(&inbox, "normal write", false, true), Lane::Urgent);
        assert_eq!(take(&inbox), Some("edit"));
        assert_eq!(take(&inbox), Some("normal read"));
        assert_eq!(take(&inbox), Some("normal write"));
        assert_eq!(take(&inbox), Some("background read"));
        assert_eq!(send(&inbox, "after", false, false), Lane::Normal);
        assert_eq!(take(&inbox), Some("after"));
        assert!(inbox.is_empty());
    }

    /// Invariant 1 across lanes: a write waiting in the normal lane keeps an
    /// urgent write (and what follows it) behind it, so a thread's normal
    /// write is never overtaken by its later urgent one, nor by another
    /// thread's item that comes after both.
    #[test]
    fn writes_never_wait_in_both_lanes() {
        let inbox = Inbox::new(16, 4);
        assert_eq!(send(&inbox, "write 1", false, true), Lane::Normal);
        assert_eq!(send(&inbox, "urgent write 2", true, true), Lane::Normal);
        assert_eq!(send(&inbox, "low read", false, false), Lane::Normal);
        assert_eq!(take(&inbox), Some("write 1"));
        assert_eq!(take(&inbox), Some("urgent write 2"));
        assert_eq!(take(&inbox), Some("low read"));
    }
}
