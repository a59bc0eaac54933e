//! Ready work and the capacity ledger.
//!
//! The ready queue holds work whose dependencies are all done, in one FIFO
//! lane per (resource class, priority). Work leaves by smooth weighted round
//! robin across the non-empty lanes of a class, so `Low` work is delayed but
//! never starved. Membership lives in one map (identity → ticket); lane
//! entries whose ticket no longer matches are skipped when they reach the
//! front, so moving work between lanes (priority inheritance) and removing
//! it are O(1). Pending counts per lane are maintained, never recounted.
//!
//! The capacity ledger is the one admission gate for running work: a
//! reservation is taken when work is dequeued and released exactly once when
//! its worker reports back, whatever happened to the work meanwhile.
//!
//! # Invariants
//! 1. `live[class][lane]` equals the number of members in that lane
//!    (`pending_counts_match_membership`).
//! 2. A lane with a live member always yields one from its front after
//!    skipping stale entries, so a pick is O(1) amortised
//!    (`stale_entries_are_skipped_and_compacted`).
//! 3. Over any window, each non-empty lane is picked in proportion to its
//!    weight (`low_priority_is_never_starved`).
//! 4. A reservation is released at most once; in-use never exceeds the
//!    budget and never goes negative (`ledger_releases_each_reservation_once`).

use crate::hash::HashMap;
use std::collections::VecDeque;

use crate::identity::{Priority, WorkNodeIdentity};

/// Which budget running work draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceClass {
    /// Computation: parsing, analysis, artifacts, cache nodes.
    Cpu,
    /// Pure I/O: reading a file's bytes.
    Io,
}

impl ResourceClass {
    /// Both classes.
    pub const ALL: [Self; 2] = [Self::Cpu, Self::Io];

    fn index(self) -> usize {
        match self {
            Self::Cpu => 0,
            Self::Io => 1,
        }
    }
}

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

/// Where a ready member sits.
#[derive(Debug, Clone, Copy)]
struct Slot {
    ticket: u64,
    class: ResourceClass,
    lane: usize,
}

/// Ready work by class and priority lane.
#[derive(Debug)]
pub(crate) struct ReadyQueue {
    classes: [ClassLanes; 2],
    members: HashMap<WorkNodeIdentity, Slot>,
    weights: [u32; LANES],
    next_ticket: u64,
}

impl ReadyQueue {
    pub(crate) fn new(weights: [u32; LANES]) -> Self {
        assert!(
            weights.iter().all(|w| *w > 0),
            "every lane weight must be positive, or its lane would starve"
        );
        Self {
            classes: Default::default(),
            members: HashMap::default(),
            weights,
            next_ticket: 0,
        }
    }

    /// Makes `identity` ready in `class` at `priority`, or moves it there if it
    /// is already ready.
    pub(crate) fn insert(
        &mut self,
        identity: WorkNodeIdentity,
        class: ResourceClass,
        priority: Priority,
    ) {
        debug_assert!(
            !self.members.contains_key(&identity),
            "{identity} is inserted while ready: raise moves a member"
        );
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let lane = priority.lane();
        let lanes = &mut self.classes[class.index()];
        lanes.lanes[lane].push_back((ticket, identity.clone()));
        lanes.live[lane] += 1;
        self.members.insert(
            identity,
            Slot {
                ticket,
                class,
                lane,
            },
        );
        self.compact(class, lane);
    }

    /// Raises a ready member to `priority` if that is higher than its lane.
    pub(crate) fn raise(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        if let Some(slot) = self.members.get(identity)
            && slot.lane < priority.lane()
        {
            let class = slot.class;
            self.remove(identity);
            self.insert(identity.clone(), class, priority);
        }
    }

    /// Removes `identity` if ready. Returns whether it was.
    pub(crate) fn remove(&mut self, identity: &WorkNodeIdentity) -> bool {
        match self.members.remove(identity) {
            Some(slot) => {
                self.classes[slot.class.index()].live[slot.lane] -= 1;
                true
            }
            None => false,
        }
    }

    /// Takes the next member of `class` by weighted round robin.
    pub(crate) fn pop(&mut self, class: ResourceClass) -> Option<(WorkNodeIdentity, Priority)> {
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
        loop {
            let (ticket, identity) = lanes.lanes[lane]
                .pop_front()
                .expect("a lane with live members has a live entry");
            if self
                .members
                .get(&identity)
                .is_some_and(|slot| slot.ticket == ticket)
            {
                self.members.remove(&identity);
                lanes.live[lane] -= 1;
                if lanes.live[lane] == 0 {
                    // An emptied lane forgets its credit, so it cannot burst later.
                    lanes.credit[lane] = 0;
                    lanes.lanes[lane].clear();
                }
                return Some((identity, Priority::ALL[lane]));
            }
        }
    }

    /// Ready members per lane of `class`, `Low` first. O(1).
    pub(crate) fn pending_counts(&self, class: ResourceClass) -> [usize; LANES] {
        self.classes[class.index()].live
    }

    /// Ready members of `class`. O(1).
    pub(crate) fn len(&self, class: ResourceClass) -> usize {
        self.pending_counts(class).iter().sum()
    }

    /// Entries held by the lanes, live or stale: the queue's backing size.
    pub(crate) fn backing_entries(&self) -> usize {
        self.classes
            .iter()
            .flat_map(|class| class.lanes.iter())
            .map(VecDeque::len)
            .sum()
    }

    /// Whether no lane and no membership table holds backing storage.
    pub(crate) fn is_released(&self) -> bool {
        self.members.capacity() == 0
            && self
                .classes
                .iter()
                .flat_map(|class| class.lanes.iter())
                .all(|lane| lane.capacity() == 0)
    }

    /// Drops every member and releases the backing storage.
    pub(crate) fn clear_and_release(&mut self) {
        let weights = self.weights;
        let next_ticket = self.next_ticket;
        *self = Self::new(weights);
        self.next_ticket = next_ticket;
    }

    /// Drops stale entries of a lane once they outnumber the live ones, so
    /// backing storage stays proportional to membership.
    fn compact(&mut self, class: ResourceClass, lane: usize) {
        let lanes = &mut self.classes[class.index()];
        let entries = lanes.lanes[lane].len();
        if entries <= 2 * lanes.live[lane] + 64 {
            return;
        }
        let members = &self.members;
        lanes.lanes[lane].retain(|(ticket, identity)| {
            members
                .get(identity)
                .is_some_and(|slot| slot.ticket == *ticket)
        });
    }
}

/// The id of one admission of a piece of work. Dispatched work carries it, so
/// a completion can tell its own admission from a later one of the same
/// identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdmissionId(pub(crate) u64);

impl AdmissionId {
    /// The raw value, for tracing.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// CPU and I/O budgets and the reservations held against them.
#[derive(Debug)]
pub(crate) struct CapacityLedger {
    budget: [usize; 2],
    in_use: [usize; 2],
    reservations: HashMap<AdmissionId, ResourceClass>,
}

/// What the ledger holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// CPU reservations held.
    pub cpu_in_use: usize,
    /// CPU budget.
    pub cpu_budget: usize,
    /// I/O reservations held.
    pub io_in_use: usize,
    /// I/O budget.
    pub io_budget: usize,
}

impl LedgerSnapshot {
    /// Reservations held across both classes.
    pub fn in_use(&self) -> usize {
        self.cpu_in_use + self.io_in_use
    }
}

impl CapacityLedger {
    pub(crate) fn new(cpu_budget: usize, io_budget: usize) -> Self {
        assert!(
            cpu_budget > 0 && io_budget > 0,
            "capacity budgets must be at least 1, or no work could ever run"
        );
        Self {
            budget: [cpu_budget, io_budget],
            in_use: [0, 0],
            reservations: HashMap::default(),
        }
    }

    pub(crate) fn has_room(&self, class: ResourceClass) -> bool {
        self.in_use[class.index()] < self.budget[class.index()]
    }

    /// Reserves one unit of `class` for `admission`. The caller checked
    /// [`Self::has_room`].
    pub(crate) fn reserve(&mut self, class: ResourceClass, admission: AdmissionId) {
        debug_assert!(self.has_room(class));
        self.reserve_lent(class, admission);
    }

    /// Reserves one unit of `class` for `admission` beyond the budget: a
    /// blocked holder lends its slot (see `SchedulerDag::dequeue_ready_lent`).
    pub(crate) fn reserve_lent(&mut self, class: ResourceClass, admission: AdmissionId) {
        let previous = self.reservations.insert(admission, class);
        assert!(previous.is_none(), "admission {admission:?} reserved twice");
        self.in_use[class.index()] += 1;
    }

    /// Releases `admission`'s reservation. Returns `false` when it holds none
    /// (already released), so a second release is harmless and visible.
    pub(crate) fn release(&mut self, admission: AdmissionId) -> bool {
        match self.reservations.remove(&admission) {
            Some(class) => {
                self.in_use[class.index()] -= 1;
                true
            }
            None => false,
        }
    }
    #[cfg(test)]
    pub(crate) fn holds(&self, admission: AdmissionId) -> bool {
        self.reservations.contains_key(&admission)
    }

    pub(crate) fn snapshot(&self) -> LedgerSnapshot {
        LedgerSnapshot {
            cpu_in_use: self.in_use[0],
            cpu_budget: self.budget[0],
            io_in_use: self.in_use[1],
            io_budget: self.budget[1],
        }
    }
}

#[cfg(test)]
mod tests;
