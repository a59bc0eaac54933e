//! Ready work and the capacity ledger.
//!
//! The ready queue holds work whose dependencies are all done, in one lane
//! per (resource class, priority): admitted work enters at the back, a
//! continuation (work the completion of what it waited on just made ready)
//! at the front ([`Place`]). Work leaves by smooth weighted round
//! robin across the non-empty lanes of a class, so `Low` work is delayed but
//! never starved. Membership is not kept here: each entry carries a ticket,
//! and the member itself (the DAG's work node) keeps the ticket of its one
//! current entry. An entry whose ticket its member no longer holds is stale
//! and is skipped when it reaches the front, so leaving the queue or moving
//! between lanes (priority inheritance) costs nothing here but a count.
//! Pending counts per lane are maintained, never recounted.
//!
//! The capacity ledger is the one admission gate for running work: a
//! reservation is taken when work is dequeued and released exactly once when
//! its worker reports back, whatever happened to the work meanwhile.
//!
//! # Invariants
//! 1. `live[class][lane]` equals the number of members in that lane: every
//!    member enters through [`ReadyQueue::insert`] and leaves through
//!    [`ReadyQueue::taken`] or [`ReadyQueue::remove`], exactly once
//!    (`pending_counts_match_membership`; the DAG checks it against a
//!    recount of its ready nodes on every debug occupancy read).
//! 2. A lane with a live member always yields one from its front after
//!    skipping stale entries, so a pick is O(1) amortised
//!    (`stale_entries_are_skipped_and_compacted`).
//! 3. Over any window, each non-empty lane is picked in proportion to its
//!    weight (`low_priority_is_never_starved`).
//! 4. A reservation is released at most once; in-use never exceeds the
//!    budget and never goes negative (`ledger_releases_each_reservation_once`).

use std::collections::VecDeque;

use crate::identity::{Priority, WorkNodeIdentity};

/// Which budget running work draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceClass {
    /// Computation: parsing, analysis, artifacts, cache nodes.
    Cpu,
    /// Pure I/O: reading a file's bytes.
    Io,
    /// Work that waits on another machine or process: it is started, then
    /// completed later from any thread, and holds none of the CPU or I/O
    /// slots while it waits (an action on a remote-execution cluster, say).
    /// Only the stages [`crate::DagConfig::remote`] routes here draw on it.
    Remote,
}

impl ResourceClass {
    /// Every class.
    pub const ALL: [Self; 3] = [Self::Cpu, Self::Io, Self::Remote];

    /// The class's position in [`Self::ALL`], for per-class tables.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            Self::Cpu => 0,
            Self::Io => 1,
            Self::Remote => 2,
        }
    }
}

/// How many resource classes there are.
const CLASSES: usize = ResourceClass::ALL.len();

const LANES: usize = Priority::ALL.len();

/// Lane weights for the round robin, `Low` first: a `Critical` lane is picked
/// eight times as often as a `Low` one while both have work.
pub const DEFAULT_LANE_WEIGHTS: [u32; LANES] = [1, 2, 4, 8];

#[derive(Debug, Default)]
struct ClassLanes {
    lanes: [VecDeque<(u64, WorkNodeIdentity)>; LANES],
    live: [usize; LANES],
    credit: [i64; LANES],
}

/// Where in its lane a member enters (docs/design.md, "Continuations
/// first").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Behind everything in the lane: admitted work, in admission order.
    Back,
    /// Ahead of everything in the lane: a continuation, made ready by the
    /// completion of what it waited on, runs while that work's records
    /// (and the outputs it reads) are still in cache.
    Front,
}

/// The ticket of one queue entry: its member keeps it while the entry is
/// current.
pub(crate) type Ticket = u64;

/// The lane [`ReadyQueue::pick`] chose; entries are drawn from its front
/// until one is current, which is then [`ReadyQueue::taken`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pick {
    class: ResourceClass,
    lane: usize,
}

impl Pick {
    /// The priority of the chosen lane.
    #[inline]
    pub(crate) fn priority(self) -> Priority {
        Priority::ALL[self.lane]
    }
}

/// Ready work by class and priority lane.
#[derive(Debug)]
pub(crate) struct ReadyQueue {
    classes: [ClassLanes; CLASSES],
    weights: [u32; LANES],
    next_ticket: Ticket,
}

impl ReadyQueue {
    pub(crate) fn new(weights: [u32; LANES]) -> Self {
        assert!(
            weights.iter().all(|w| *w > 0),
            "every lane weight must be positive, or its lane would starve"
        );
        Self {
            classes: Default::default(),
            weights,
            next_ticket: 0,
        }
    }

    /// How many tickets were issued so far.
    pub(crate) fn tickets_issued(&self) -> Ticket {
        self.next_ticket
    }

    /// A fresh ticket, for a member to keep before it is inserted with it
    /// (an unused one is harmless).
    #[inline]
    pub(crate) fn issue(&mut self) -> Ticket {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        ticket
    }

    /// Makes `identity`, which keeps `ticket` and is not a member, ready in
    /// `class` at `priority`, at `place` in its lane. `is_current` says
    /// whether an entry's member still keeps its ticket; it is asked only
    /// to compact the lane.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        identity: WorkNodeIdentity,
        class: ResourceClass,
        priority: Priority,
        ticket: Ticket,
        place: Place,
        is_current: impl Fn(&WorkNodeIdentity, Ticket) -> bool,
    ) {
        let lane = priority.lane();
        let lanes = &mut self.classes[class.index()];
        match place {
            Place::Back => lanes.lanes[lane].push_back((ticket, identity)),
            Place::Front => lanes.lanes[lane].push_front((ticket, identity)),
        }
        lanes.live[lane] += 1;
        // Drop stale entries once they outnumber the live ones, so backing
        // storage stays proportional to membership.
        let entries = lanes.lanes[lane].len();
        if entries > 2 * lanes.live[lane] + 64 {
            lanes.lanes[lane].retain(|(ticket, identity)| is_current(identity, *ticket));
        }
    }

    /// A member of `class` at `priority` left the queue (its entry is now
    /// stale: the member no longer keeps its ticket).
    #[inline]
    pub(crate) fn remove(&mut self, class: ResourceClass, priority: Priority) {
        let live = &mut self.classes[class.index()].live[priority.lane()];
        debug_assert!(*live > 0, "a member left an empty lane");
        *live -= 1;
    }

    /// Chooses the lane of `class` to take from next, by weighted round
    /// robin; `None` when the class has no member.
    #[inline]
    pub(crate) fn pick(&mut self, class: ResourceClass) -> Option<Pick> {
        let weights = self.weights;
        let lanes = &mut self.classes[class.index()];
        let mut total = 0i64;
        let mut best: Option<usize> = None;
        for (lane, weight) in weights.iter().enumerate() {
            if lanes.live[lane] == 0 {
                continue;
            }
            let weight = i64::from(*weight);
            lanes.credit[lane] += weight;
            total += weight;
            // Ties go to the higher lane (iterated last).
            if best.is_none_or(|b| lanes.credit[lane] >= lanes.credit[b]) {
                best = Some(lane);
            }
        }
        let lane = best?;
        lanes.credit[lane] -= total;
        Some(Pick { class, lane })
    }

    /// The next entry of the picked lane; the caller checks it is current
    /// and, if so, reports it [`Self::taken`], else asks again. A lane with
    /// a member always has a current entry before it runs out.
    #[inline]
    pub(crate) fn next_entry(&mut self, pick: Pick) -> (Ticket, WorkNodeIdentity) {
        self.classes[pick.class.index()].lanes[pick.lane]
            .pop_front()
            .expect("a lane with live members has a live entry")
    }

    /// The current entry just drawn from `pick` left the queue.
    #[inline]
    pub(crate) fn taken(&mut self, pick: Pick) {
        let lanes = &mut self.classes[pick.class.index()];
        lanes.live[pick.lane] -= 1;
        if lanes.live[pick.lane] == 0 {
            // An emptied lane forgets its credit, so it cannot burst later.
            lanes.credit[pick.lane] = 0;
            lanes.lanes[pick.lane].clear();
        }
    }

    /// Ready members per lane of `class`, `Low` first. O(1).
    pub(crate) fn pending_counts(&self, class: ResourceClass) -> [usize; LANES] {
        self.classes[class.index()].live
    }

    /// Ready members of `class`. O(1).
    #[inline]
    pub(crate) fn len(&self, class: ResourceClass) -> usize {
        self.pending_counts(class).iter().sum()
    }

    /// Ready members of every class. O(1).
    #[inline]
    pub(crate) fn total_len(&self) -> usize {
        ResourceClass::ALL
            .iter()
            .map(|class| self.len(*class))
            .sum()
    }

    /// Entries held by the lanes, live or stale: the queue's backing size.
    pub(crate) fn backing_entries(&self) -> usize {
        self.classes
            .iter()
            .flat_map(|class| class.lanes.iter())
            .map(VecDeque::len)
            .sum()
    }

    /// Whether no lane holds backing storage.
    #[inline]
    pub(crate) fn is_released(&self) -> bool {
        self.classes
            .iter()
            .flat_map(|class| class.lanes.iter())
            .all(|lane| lane.capacity() == 0)
    }

    /// Drops every entry and releases the backing storage (the caller
    /// drops the members). Tickets keep counting up.
    pub(crate) fn clear_and_release(&mut self) {
        let weights = self.weights;
        let next_ticket = self.next_ticket;
        *self = Self::new(weights);
        self.next_ticket = next_ticket;
    }
}

/// The id of one admission of a piece of work. Dispatched work carries it, so
/// a completion can tell its own admission from a later one of the same
/// identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdmissionId(pub(crate) u64);

impl AdmissionId {
    /// The raw value, for tracing.
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }
}

/// CPU and I/O budgets and the reservations held against them.
///
/// A reservation is *budgeted* (counted against the budget), *lent* (a
/// blocked holder's idle slot: counted, but taken beyond the budget) or
/// *batched* (more work for a thread that already holds a budgeted
/// reservation and runs the work one after another: held and released like
/// any other, but not counted against the budget, so the budget counts
/// threads running work rather than work handed out).
///
/// The ledger keeps counts only. Each reservation is a [`Reserved`] that
/// the dispatch holding it carries, and the dispatch (not `Clone`, made
/// only by `SchedulerDag::take_ready`) is consumed by the one completion,
/// failure or move that releases it, so a reservation is released exactly
/// once without a table of who holds one.
#[derive(Debug)]
pub(crate) struct CapacityLedger {
    budget: [usize; CLASSES],
    /// Every reservation held, per class.
    in_use: [usize; CLASSES],
    /// The batched ones among them.
    batched: [usize; CLASSES],
}

/// One capacity reservation: its class and whether it is batched. Carried
/// by its [`crate::Dispatch`] and handed back to [`CapacityLedger::release`]
/// by whatever consumes the dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reserved {
    class: ResourceClass,
    batched: bool,
}

/// What the ledger holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// CPU reservations held (batched ones included).
    pub cpu_in_use: usize,
    /// The batched CPU reservations among them (not counted against the
    /// budget).
    pub cpu_batched: usize,
    /// CPU budget.
    pub cpu_budget: usize,
    /// I/O reservations held (batched ones included).
    pub io_in_use: usize,
    /// The batched I/O reservations among them.
    pub io_batched: usize,
    /// I/O budget.
    pub io_budget: usize,
    /// Remote reservations held: work started elsewhere that has not
    /// completed ([`ResourceClass::Remote`]).
    pub remote_in_use: usize,
    /// The batched remote reservations among them.
    pub remote_batched: usize,
    /// Remote budget.
    pub remote_budget: usize,
}

impl LedgerSnapshot {
    /// Reservations held across every class.
    #[inline]
    pub fn in_use(&self) -> usize {
        self.cpu_in_use + self.io_in_use + self.remote_in_use
    }
}

impl CapacityLedger {
    pub(crate) fn new(cpu_budget: usize, io_budget: usize, remote_budget: usize) -> Self {
        assert!(
            cpu_budget > 0 && io_budget > 0 && remote_budget > 0,
            "capacity budgets must be at least 1, or no work could ever run"
        );
        Self {
            budget: [cpu_budget, io_budget, remote_budget],
            in_use: [0; CLASSES],
            batched: [0; CLASSES],
        }
    }

    #[inline]
    pub(crate) fn has_room(&self, class: ResourceClass) -> bool {
        let i = class.index();
        self.in_use[i] - self.batched[i] < self.budget[i]
    }

    /// Reserves one unit of `class`. The caller checked [`Self::has_room`].
    #[inline]
    pub(crate) fn reserve(&mut self, class: ResourceClass) -> Reserved {
        debug_assert!(self.has_room(class));
        self.reserve_lent(class)
    }

    /// Reserves one unit of `class` beyond the budget: a blocked holder
    /// lends its slot (see `SchedulerDag::dequeue_ready_lent`).
    #[inline]
    pub(crate) fn reserve_lent(&mut self, class: ResourceClass) -> Reserved {
        self.in_use[class.index()] += 1;
        Reserved {
            class,
            batched: false,
        }
    }

    /// Reserves one unit of `class` outside the budget: more work for a
    /// thread that holds a budgeted reservation (see
    /// `SchedulerDag::dequeue_ready_batched`).
    #[inline]
    pub(crate) fn reserve_batched(&mut self, class: ResourceClass) -> Reserved {
        self.in_use[class.index()] += 1;
        self.batched[class.index()] += 1;
        Reserved {
            class,
            batched: true,
        }
    }

    /// Releases `reserved`, which its dispatch carried here.
    #[inline]
    pub(crate) fn release(&mut self, reserved: Reserved) {
        let i = reserved.class.index();
        debug_assert!(self.in_use[i] > 0, "a reservation released twice");
        self.in_use[i] -= 1;
        if reserved.batched {
            self.batched[i] -= 1;
        }
    }

    pub(crate) fn snapshot(&self) -> LedgerSnapshot {
        LedgerSnapshot {
            cpu_in_use: self.in_use[0],
            cpu_batched: self.batched[0],
            cpu_budget: self.budget[0],
            io_in_use: self.in_use[1],
            io_batched: self.batched[1],
            io_budget: self.budget[1],
            remote_in_use: self.in_use[2],
            remote_batched: self.batched[2],
            remote_budget: self.budget[2],
        }
    }
}

#[cfg(test)]
mod tests;
