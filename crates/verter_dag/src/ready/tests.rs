//! Unit tests of the ready lanes and the capacity ledger: exact counts,
//! fairness, compaction, release exactly once.

use super::*;
use crate::identity::{Canonical, FileIdentity, Generation, Incarnation, TargetStage};

fn work(i: usize) -> WorkNodeIdentity {
    WorkNodeIdentity::File(
        FileIdentity::new(
            Canonical::from(format!("f{i}.rs")),
            Incarnation::allocate(),
            Generation::ZERO,
        )
        .at(TargetStage::Analysis),
    )
}

/// The queue with a membership table beside it, standing in for the DAG's
/// nodes (which keep their tickets): the old map-backed API, built on the
/// queue's entry points as the DAG uses them.
struct Queue {
    queue: ReadyQueue,
    members: std::collections::HashMap<WorkNodeIdentity, (Ticket, ResourceClass, Priority)>,
}

impl Queue {
    fn new() -> Self {
        Self {
            queue: ReadyQueue::new(DEFAULT_LANE_WEIGHTS),
            members: Default::default(),
        }
    }

    fn insert(&mut self, identity: WorkNodeIdentity, class: ResourceClass, priority: Priority) {
        self.insert_at(identity, class, priority, Place::Back);
    }

    fn insert_at(
        &mut self,
        identity: WorkNodeIdentity,
        class: ResourceClass,
        priority: Priority,
        place: Place,
    ) {
        assert!(!self.members.contains_key(&identity), "inserted twice");
        let ticket = self.queue.issue();
        self.members.insert(identity, (ticket, class, priority));
        let members = &self.members;
        self.queue.insert(
            identity,
            class,
            priority,
            ticket,
            place,
            |identity, ticket| members.get(identity).is_some_and(|m| m.0 == ticket),
        );
    }

    fn raise(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        if let Some(&(_, class, old)) = self.members.get(identity)
            && old < priority
        {
            self.remove(identity);
            self.insert(*identity, class, priority);
        }
    }

    fn remove(&mut self, identity: &WorkNodeIdentity) -> bool {
        match self.members.remove(identity) {
            Some((_, class, priority)) => {
                self.queue.remove(class, priority);
                true
            }
            None => false,
        }
    }

    fn pop(&mut self, class: ResourceClass) -> Option<(WorkNodeIdentity, Priority)> {
        let pick = self.queue.pick(class)?;
        loop {
            let (ticket, identity) = self.queue.next_entry(pick);
            if self.members.get(&identity).is_some_and(|m| m.0 == ticket) {
                self.members.remove(&identity);
                self.queue.taken(pick);
                return Some((identity, pick.priority()));
            }
        }
    }

    fn pending_counts(&self, class: ResourceClass) -> [usize; 4] {
        self.queue.pending_counts(class)
    }

    fn len(&self, class: ResourceClass) -> usize {
        self.queue.len(class)
    }

    fn backing_entries(&self) -> usize {
        self.queue.backing_entries()
    }
}

#[test]
fn pending_counts_match_membership() {
    let mut queue = Queue::new();
    let items: Vec<_> = (0..6).map(work).collect();
    for (i, item) in items.iter().enumerate() {
        queue.insert(*item, ResourceClass::Cpu, Priority::ALL[i % 4]);
    }
    assert_eq!(queue.pending_counts(ResourceClass::Cpu), [2, 2, 1, 1]);
    assert_eq!(queue.len(ResourceClass::Io), 0);
    queue.raise(&items[0], Priority::Critical);
    assert_eq!(queue.pending_counts(ResourceClass::Cpu), [1, 2, 1, 2]);
    queue.raise(&items[3], Priority::Low); // never lowers
    assert_eq!(queue.pending_counts(ResourceClass::Cpu), [1, 2, 1, 2]);
    assert!(queue.remove(&items[1]));
    assert!(!queue.remove(&items[1]));
    assert_eq!(queue.pending_counts(ResourceClass::Cpu), [1, 1, 1, 2]);
    let mut popped = 0;
    while queue.pop(ResourceClass::Cpu).is_some() {
        popped += 1;
    }
    assert_eq!(popped, 5);
    assert_eq!(queue.pending_counts(ResourceClass::Cpu), [0; 4]);
}

#[test]
fn low_priority_is_never_starved() {
    let mut queue = Queue::new();
    let mut next = 0;
    let mut add = |queue: &mut Queue, priority| {
        queue.insert(work(next), ResourceClass::Cpu, priority);
        next += 1;
    };
    for _ in 0..10 {
        add(&mut queue, Priority::Low);
    }
    // Keep the Critical lane permanently busy: refill after every pick.
    let mut picks = [0usize; 4];
    for _ in 0..150 {
        add(&mut queue, Priority::Critical);
        let (_, priority) = queue.pop(ResourceClass::Cpu).expect("work is ready");
        picks[priority.lane()] += 1;
    }
    // Weights 1:8 → Low gets one pick in nine while both lanes have work.
    assert!(
        picks[0] >= 10,
        "low lane picked {} times: {picks:?}",
        picks[0]
    );
    assert!(picks[3] >= 8 * 10, "{picks:?}");
}

#[test]
fn higher_lanes_go_first_when_weights_tie_break() {
    let mut queue = Queue::new();
    let low = work(0);
    let high = work(1);
    queue.insert(low, ResourceClass::Cpu, Priority::Low);
    queue.insert(high, ResourceClass::Cpu, Priority::High);
    assert_eq!(queue.pop(ResourceClass::Cpu), Some((high, Priority::High)));
    assert_eq!(queue.pop(ResourceClass::Cpu), Some((low, Priority::Low)));
    assert_eq!(queue.pop(ResourceClass::Cpu), None);
}

#[test]
fn classes_are_independent() {
    let mut queue = Queue::new();
    queue.insert(work(0), ResourceClass::Io, Priority::Normal);
    assert_eq!(queue.pop(ResourceClass::Cpu), None);
    assert!(queue.pop(ResourceClass::Io).is_some());
}

#[test]
fn stale_entries_are_skipped_and_compacted() {
    let mut queue = Queue::new();
    let keep = work(0);
    queue.insert(keep, ResourceClass::Cpu, Priority::Normal);
    // Churn one identity through remove/insert many times: stale entries pile
    // up behind `keep` until compaction drops them.
    let churn = work(1);
    for _ in 0..1000 {
        queue.insert(churn, ResourceClass::Cpu, Priority::Normal);
        queue.remove(&churn);
    }
    assert!(
        queue.backing_entries() <= 2 + 64 + 1,
        "{}",
        queue.backing_entries()
    );
    assert_eq!(
        queue.pop(ResourceClass::Cpu),
        Some((keep, Priority::Normal))
    );
    assert_eq!(queue.pop(ResourceClass::Cpu), None);
}

#[test]
fn ledger_counts_each_reservation_until_its_release() {
    let mut ledger = CapacityLedger::new(2, 1, 1);
    assert!(ledger.has_room(ResourceClass::Cpu));
    let first = ledger.reserve(ResourceClass::Cpu);
    let second = ledger.reserve(ResourceClass::Cpu);
    assert!(!ledger.has_room(ResourceClass::Cpu));
    let io = ledger.reserve(ResourceClass::Io);
    assert!(!ledger.has_room(ResourceClass::Io));
    // A batched reservation is held but leaves the budget's room alone.
    let batched = ledger.reserve_batched(ResourceClass::Io);
    assert_eq!(ledger.snapshot().in_use(), 4);
    assert_eq!(ledger.snapshot().io_batched, 1);
    ledger.release(batched);
    assert_eq!(ledger.snapshot().io_batched, 0);
    assert!(!ledger.has_room(ResourceClass::Io));
    ledger.release(first);
    assert!(ledger.has_room(ResourceClass::Cpu));
    ledger.release(second);
    ledger.release(io);
    assert_eq!(ledger.snapshot().in_use(), 0);
}

#[test]
#[should_panic(expected = "capacity budgets must be at least 1")]
fn a_zero_budget_is_refused() {
    let _ = CapacityLedger::new(0, 1, 1);
}

/// A continuation enters its lane at the front, ahead of admitted work
/// (which keeps its order behind it), and never crosses lanes: a
/// continuation at `Low` still waits for the weighted pick of its lane.
#[test]
fn a_continuation_enters_its_lane_at_the_front() {
    let mut queue = Queue::new();
    for i in 0..3 {
        queue.insert(work(i), ResourceClass::Cpu, Priority::Normal);
    }
    queue.insert_at(work(10), ResourceClass::Cpu, Priority::Normal, Place::Front);
    queue.insert_at(work(11), ResourceClass::Cpu, Priority::Normal, Place::Front);
    let name = |(identity, priority): (WorkNodeIdentity, Priority)| {
        let file = identity.file().expect("file work");
        (file.canonical.as_str().to_owned(), priority)
    };
    let order: Vec<String> = std::iter::from_fn(|| queue.pop(ResourceClass::Cpu))
        .map(|popped| name(popped).0)
        .collect();
    assert_eq!(order, ["f11.rs", "f10.rs", "f0.rs", "f1.rs", "f2.rs"]);
    // Lanes still decide first: a front entry of a lower lane does not
    // overtake a higher lane's weighted share.
    queue.insert(work(20), ResourceClass::Cpu, Priority::Critical);
    queue.insert_at(work(21), ResourceClass::Cpu, Priority::Low, Place::Front);
    let popped = |queue: &mut Queue| queue.pop(ResourceClass::Cpu).map(name);
    assert_eq!(
        popped(&mut queue),
        Some(("f20.rs".into(), Priority::Critical))
    );
    assert_eq!(popped(&mut queue), Some(("f21.rs".into(), Priority::Low)));
}
