//! The request groups in the stage records: joining, reading and taking
//! them out, and listing them all.
//!
//! Part of `slots.rs`. Every change to a group goes through here or
//! through `slots.rs`, which keep the group and waiter counts exact; this
//! module never answers a waiter (the caller does, from what it takes out)
//! and never admits, runs or drops a node.

use super::*;

/// What [`SchedulerDag::join_group`] did.
pub(in crate::dag) enum Joined {
    /// The node is finished: nothing joined; this is the member's answer.
    Finished(Result<(), DagFailure>),
    /// The member joined a group now `size` strong; the stage's node, if
    /// any, runs at `node_priority`.
    Member {
        size: usize,
        node_priority: Option<Priority>,
    },
}

impl<P> SchedulerDag<P> {
    /// `key`'s request group, if it has one (never empty).
    pub(in crate::dag) fn group(&self, key: &DepKey) -> Option<&[Member]> {
        self.stage_slot(key)
            .map(|slot| slot.group.as_slice())
            .filter(|group| !group.is_empty())
    }

    /// Adds `member` to `key`'s group (made when absent); returns the
    /// group's new size.
    pub(in crate::dag) fn push_member(&mut self, key: &DepKey, member: Member) -> usize {
        let group = &mut self.stage_entry(key).group;
        group.push(member);
        let size = group.len();
        if size == 1 {
            self.group_count += 1;
        }
        self.waiter_count += 1;
        size
    }

    /// Adds `member` to `key`'s group in one visit of its record, unless
    /// `key`'s node is finished: then the group is left alone and the
    /// finished outcome is returned for the member's answer.
    pub(in crate::dag) fn join_group(&mut self, key: &DepKey, member: Member) -> Joined {
        let slot = self.stage_entry(key);
        let node_priority = match slot.node.as_ref() {
            Some(node) => match &node.state {
                NodeState::Done => return Joined::Finished(Ok(())),
                NodeState::Failed(failure) => return Joined::Finished(Err((**failure).clone())),
                _ => Some(node.priority),
            },
            None => None,
        };
        slot.group.push(member);
        let size = slot.group.len();
        if size == 1 {
            self.group_count += 1;
        }
        self.waiter_count += 1;
        Joined::Member {
            size,
            node_priority,
        }
    }

    /// Takes `key`'s whole group out (empty when it had none), pruning the
    /// records it leaves empty.
    pub(in crate::dag) fn take_group(&mut self, key: &DepKey) -> Group {
        let Some(slot) = self.stage_slot_mut(key) else {
            return Group::new();
        };
        let members = std::mem::take(&mut slot.group);
        if !members.is_empty() {
            self.group_count -= 1;
            self.waiter_count -= members.len();
            self.prune(key);
        }
        members
    }

    /// Every request group, in no set order.
    pub(in crate::dag) fn all_groups(&self) -> impl Iterator<Item = (DepKey, &[Member])> + '_ {
        self.all_records()
            .filter(|(_, _, record)| !record.group.is_empty())
            .map(|(file, stage, record)| (file.at(stage), record.group.as_slice()))
    }
}
