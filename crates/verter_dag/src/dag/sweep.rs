//! `SchedulerDag`: Retirement: sweeping one canonical's records below a version.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants.

use super::*;

impl<P> SchedulerDag<P> {
    /// Retires every record of `canonical` below `bound`, in one call. Driven
    /// by the canonical's own indices: its version slots (every key with
    /// waiting consumers has a node there) and the blocker registry's
    /// per-file indices.
    pub(super) fn sweep(
        &mut self,
        canonical: &Canonical,
        bound: SourceVersion,
        reason: SweepReason,
    ) -> Effects {
        let mut effects = Effects::default();
        // Waiters follow only to a live version the sweep leaves standing.
        let live = self
            .live_file(canonical)
            .filter(|live| live.version() >= bound);
        // The retired versions leave the records whole, nodes and groups
        // with them.
        let mut retired: Vec<(DepKey, slots::Stage)> = Vec::new();
        let mut retired_owners: Vec<(FileIdentity, Vec<DepKey>)> = Vec::new();
        if let Some((version, stages, blockers)) = self.take_versions_below(canonical, bound) {
            let file = FileIdentity::new(*canonical, version.incarnation, version.generation);
            for (stage, record) in stages {
                retired.push((file.at(stage), record));
            }
            if !blockers.is_empty() {
                retired_owners.push((file, blockers));
            }
        }
        retired.sort_by_key(|a| a.0);

        // 1. Nodes: drop them; move their consumers in other files onto the
        //    live version of the same stage. On removal there is none: the
        //    consumers (Artifacts of importers) are re-linked in step 5.
        let (orphans, producers) = self.detach_retired(canonical, &retired);
        for (key, slot) in &retired {
            if let Some(node) = &slot.node {
                let identity = WorkNodeIdentity::File(*key);
                self.abandon(&identity, node, internals::Dropped::Cancelled, &mut effects);
                if matches!(node.state, NodeState::Ready) {
                    self.ready.remove(node.class, node.priority);
                }
            }
        }
        let mut relink: Vec<(WorkNodeIdentity, DepKey)> = Vec::new();
        for (consumer, old) in orphans {
            if !self.has_node(&consumer) {
                continue; // retired itself (same file) or already failed
            }
            match &live {
                Some(live) => {
                    let _ = self.link_inner(&consumer, (*live).at(old.stage), &mut effects);
                    self.settle(&consumer, &mut effects);
                }
                None => relink.push((consumer, old)),
            }
        }

        // 2. Request waiters: follow, supersede or shut down. A retired
        //    failure leaves with the effects: it may hold the host's error.
        for (key, slot) in retired {
            if let Some(WorkNode {
                state: NodeState::Failed(failure),
                ..
            }) = slot.node
            {
                effects.released.push(failure);
            }
            for member in slot.group {
                let follows = match reason {
                    SweepReason::NewGeneration => member.policy == WaitPolicy::Follow,
                    SweepReason::Rehome => true,
                    SweepReason::Removal => false,
                };
                match (&live, follows) {
                    (Some(live), true) => {
                        self.counters.followed += 1;
                        let new_key = (*live).at(key.stage);
                        let identity = WorkNodeIdentity::File(new_key);
                        match self.node(&identity).map(|n| n.state.clone()) {
                            Some(NodeState::Done) => effects.answers.push(Answer {
                                waiter: member.waiter,
                                key: new_key,
                                outcome: Ok(()),
                            }),
                            Some(NodeState::Failed(failure)) => effects.answers.push(Answer {
                                waiter: member.waiter,
                                key: new_key,
                                outcome: Err((*failure).clone()),
                            }),
                            _ => {
                                let _ = self.add_member(&new_key, member);
                                self.ensure_file_node(&new_key, member.priority, &mut effects);
                            }
                        }
                    }
                    (Some(_), false) if matches!(reason, SweepReason::NewGeneration) => {
                        self.counters.superseded += 1;
                        effects.answers.push(Answer {
                            waiter: member.waiter,
                            key,
                            outcome: Err(DagFailure::Superseded {
                                canonical: *canonical,
                            }),
                        });
                    }
                    _ => effects.answers.push(Answer {
                        waiter: member.waiter,
                        key,
                        outcome: Err(DagFailure::Shutdown {
                            canonical: *canonical,
                        }),
                    }),
                }
            }
        }

        // 3. Blocker records: owners below the bound lose theirs; references
        //    to retired versions move to the live version (or are dropped).
        //    The retired owners' records left with their versions.
        for (owner, keys) in &retired_owners {
            self.blockers.forget(owner, keys);
        }
        let mut affected_owners: Vec<FileIdentity> = Vec::new();
        for (owner, old) in self.blockers.references_below(canonical, bound) {
            // On removal the reference stays, naming the removed version: the
            // owner still depends on the file, and its next Artifact ensures
            // the file again (`live_blockers_of`).
            if let Some(live) = &live {
                self.blockers.repoint(
                    &mut slots::FileOwners(&mut self.files),
                    &owner,
                    &old,
                    (*live).at(old.stage),
                );
            }
            if !affected_owners.contains(&owner) {
                affected_owners.push(owner);
            }
        }
        // 4. Artifacts built (or being built) on a retired blocker version are
        //    stale: drop them, and re-admit those that have waiters, gated on
        //    the blockers' live versions. Their waiters keep waiting on the
        //    same key; a running build's completion is refused (its admission
        //    is gone).
        //    Through Artifact-on-Artifact records this reaches the files
        //    built on those Artifacts too, transitively (`cycles.rs`).
        self.invalidate_owners(affected_owners, &mut effects);
        // 5. Consumers of a removed file that step 4 did not rebuild: an
        //    Artifact waits on its owner's blockers, ensured again; anything
        //    else fails, as the file it waited on is gone.
        for (consumer, old) in relink {
            if !self.has_node(&consumer) {
                continue;
            }
            let owner = match &consumer {
                WorkNodeIdentity::File(key) if matches!(key.stage, TargetStage::Artifact(_)) => {
                    Some(key.file)
                }
                _ => None,
            };
            let names_it = owner.as_ref().is_some_and(|owner| {
                slots::owner_keys(&self.files, owner).is_some_and(|keys| {
                    keys.iter()
                        .any(|blocker| blocker.file.canonical == *canonical)
                })
            });
            match owner {
                Some(owner) if names_it => {
                    let profile = match consumer {
                        WorkNodeIdentity::File(key) => match key.stage {
                            TargetStage::Artifact(profile) => profile,
                            _ => unreachable!("the owner is an Artifact's"),
                        },
                        WorkNodeIdentity::CacheNode { .. } => unreachable!("the owner is a file's"),
                    };
                    for blocker in self.live_blockers_of(&owner, &mut effects) {
                        if !self.has_node(&consumer) {
                            break;
                        }
                        let _ =
                            self.link_inner(&consumer, blocker.for_profile(profile), &mut effects);
                    }
                    self.settle(&consumer, &mut effects);
                }
                _ => {
                    let cause = Arc::new(DagFailure::Shutdown {
                        canonical: *canonical,
                    });
                    self.fail_node(&consumer, &old, &cause, &mut effects);
                }
            }
        }
        // 6. Work in other files that only the retired nodes needed (a
        //    blocker an Artifact of a retired version made live again, say)
        //    is cancelled: nothing would answer or explain it. What the
        //    steps above linked again is wanted and stays.
        if !producers.is_empty() {
            self.drop_unwanted(producers, false, &mut effects);
        }
        self.drop_file_if_empty(canonical);
        effects
    }
}
