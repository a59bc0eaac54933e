//! Witnesses: proof of which file object and generation a source
//! snapshot came from, and the artifact commits they fence.
//!
//! A [`SourceWitness`] is minted only by [`Snapshot::try_get_witnessed_source`],
//! together with the text it witnesses. [`Scheduler::commit_artifact`]
//! publishes only into the live, unretired object the witness came from, at
//! exactly that generation; [`Scheduler::remove_artifact_not_newer_than`]
//! evicts only from that object, only artifacts no newer than the witness.
//! A witness of a removed, reset or re-homed object is rejected even when the
//! successor serves the same bytes at the same generation: the incarnation
//! differs, and it is compared under the DAG lock. Like every call that
//! takes the lock, each first admits what the caller submitted before, so a
//! witness reflects the caller's own earlier upserts.

use std::sync::Arc;

use verter_dag::{
    Canonical, FileIdentity, Generation, Incarnation, ProfileHash, SourceVersion, TargetStage,
    WorkNodeIdentity,
};

use crate::node::FileNode;
use crate::snapshot::ArtifactSnapshot;
use crate::state::Scheduler;
use crate::traits::StageExecutor;

/// Which file object and generation a source snapshot came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceWitness {
    pub(crate) file: FileIdentity,
}

impl SourceWitness {
    /// The file.
    pub fn canonical(&self) -> &Canonical {
        &self.file.canonical
    }

    /// The object the snapshot came from.
    pub fn incarnation(&self) -> Incarnation {
        self.file.incarnation
    }

    /// The generation the snapshot came from.
    pub fn generation(&self) -> Generation {
        self.file.generation
    }

    /// `(incarnation, generation)`.
    pub fn version(&self) -> SourceVersion {
        self.file.version()
    }
}

/// Why a witnessed operation was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessError {
    /// The witnessed object was removed, reset or re-homed.
    #[error("the witnessed object of {path} is gone (removed, reset or re-homed)")]
    ObjectGone {
        /// The file.
        path: Canonical,
    },
    /// The object moved on to a newer generation.
    #[error("{path} moved on from the witnessed generation {witnessed} to {live}")]
    Superseded {
        /// The file.
        path: Canonical,
        /// The witnessed generation.
        witnessed: Generation,
        /// The live generation.
        live: Generation,
    },
    /// The profile is the one the scheduler reserves
    /// ([`crate::RequestError::ReservedProfile`]).
    #[error("{path}: the Artifact profile {} is reserved", u64::MAX)]
    ReservedProfile {
        /// The file.
        path: Canonical,
    },
}

/// How many waiters and wait-for relations the scheduler holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitGraphOccupancy {
    /// Request waiters registered and not yet answered.
    pub request_waiters: usize,
    /// Waiter groups (distinct pieces of work with request waiters).
    pub groups: usize,
    /// Admitted work gated on at least one dependency.
    pub gated_consumers: usize,
    /// Dependency edges (consumer → producer).
    pub edges: usize,
    /// Producers with at least one gated consumer.
    pub producers_with_waiters: usize,
}

impl<E: StageExecutor> Scheduler<E> {
    /// Publishes `data` as the `profile` artifact of the object `witness` came
    /// from, at the witnessed generation. Refused unless that object is live
    /// and still at that generation. Readers of the node's view see it; a
    /// request for that Artifact that the scheduler has not built yet still
    /// runs the executor, whose output then replaces it.
    pub fn commit_artifact(
        &self,
        witness: &SourceWitness,
        profile: ProfileHash,
        data: E::Artifact,
    ) -> Result<Arc<ArtifactSnapshot<E::Artifact>>, WitnessError> {
        if profile == ProfileHash::SAME {
            return Err(WitnessError::ReservedProfile {
                path: witness.file.canonical,
            });
        }
        self.transact(|locked, post| {
            self.admit_sent(locked, post);
            let node = Self::witnessed_node(&locked.dag, witness)?;
            let live = locked
                .dag
                .live_file(&witness.file.canonical)
                .expect("a witnessed node is live");
            if live.generation != witness.generation() {
                return Err(WitnessError::Superseded {
                    path: witness.file.canonical,
                    witnessed: witness.generation(),
                    live: live.generation,
                });
            }
            // The host's own value: a change, and verified against nothing,
            // so no later build takes it for one it would have made.
            let artifact = Arc::new(ArtifactSnapshot::built(
                witness.file.canonical,
                witness.version(),
                profile,
                data,
                locked.revisions.next(),
                crate::snapshot::Revision::NEVER,
            ));
            let published = match locked.dag.payload_mut(&witness.file.canonical) {
                Some(slot) => node.publish_artifact(
                    &mut slot.view,
                    witness.generation(),
                    Arc::clone(&artifact),
                ),
                None => Err(Arc::clone(&artifact)),
            };
            match published {
                Ok(Some(replaced)) => post.discard_view(replaced),
                Ok(None) => {}
                Err(refused) => {
                    debug_assert!(false, "a live node's view is at its live generation");
                    post.discard(refused);
                }
            }
            // What was built on the artifact it replaced is stale.
            let effects = locked.dag.invalidate_artifact_dependents(&live);
            self.absorb(locked, effects, post);
            Ok(artifact)
        })
    }

    /// Evicts the `profile` artifact of the object `witness` came from, if it
    /// is no newer than the witnessed generation. Returns whether one was
    /// evicted; refused for a witness of a removed, reset or re-homed object.
    pub fn remove_artifact_not_newer_than(
        &self,
        witness: &SourceWitness,
        profile: ProfileHash,
    ) -> Result<bool, WitnessError> {
        self.transact(|locked, post| {
            self.admit_sent(locked, post);
            let node = Self::witnessed_node(&locked.dag, witness)?;
            let Some(slot) = locked.dag.payload_mut(&witness.file.canonical) else {
                return Ok(false);
            };
            let view = Arc::clone(&slot.view);
            let evicted = view.artifact(profile).filter(|artifact| {
                artifact.version.incarnation == witness.incarnation()
                    && artifact.version.generation <= witness.generation()
            });
            let Some(evicted) = evicted else {
                return Ok(false);
            };
            // The evicted artifact and the view that held it are the host's
            // outputs: dropped after the lock.
            if let Ok(Some(replaced)) =
                node.remove_artifact(&mut slot.view, view.generation, profile)
            {
                post.discard_view(replaced);
            }
            // The DAG must forget the build too, or the next request would be
            // answered "done" with no output to serve: it rebuilds instead.
            let built = FileIdentity::new(
                witness.file.canonical,
                evicted.version.incarnation,
                evicted.version.generation,
            );
            locked.dag.forget_done(&WorkNodeIdentity::File(
                built.at(TargetStage::Artifact(profile)),
            ));
            // What was built on it is rebuilt with it (and cut off, if the
            // rebuild is equal).
            let effects = locked.dag.invalidate_artifact_dependents(&built);
            self.absorb(locked, effects, post);
            Ok(true)
        })
    }

    /// The published node of the witnessed object, if it is that object.
    fn witnessed_node(
        dag: &verter_dag::SchedulerDag<crate::state::FileSlot<E>>,
        witness: &SourceWitness,
    ) -> Result<Arc<FileNode<E>>, WitnessError> {
        let gone = || WitnessError::ObjectGone {
            path: witness.file.canonical,
        };
        let object = dag.object(&witness.file.canonical).ok_or_else(gone)?;
        if object.incarnation != witness.incarnation() {
            return Err(gone());
        }
        // The file's slot: the caller holds the DAG lock, and the public
        // `node` admits pending submissions (it takes the lock).
        let node = dag
            .payload(&witness.file.canonical)
            .map(|slot| Arc::clone(&slot.node))
            .ok_or_else(gone)?;
        if node.incarnation() != witness.incarnation() || node.is_retired() {
            return Err(gone());
        }
        Ok(node)
    }
}
