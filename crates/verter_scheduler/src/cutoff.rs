//! Early cutoff (docs/design.md, "Early cutoff"): the outputs a file
//! stopped serving that its stages may still be verified against, and the
//! decisions a worker makes with them outside the lock: whether a stage can
//! be verified instead of run, and whether a stage that ran produced what
//! it produced before.
//!
//! The priors live in the file's slot, under the DAG lock. A new
//! generation's view, or a blocker's change that evicts an artifact, hands
//! them the outputs it stops serving ([`Priors::keep_view`],
//! [`Priors::keep_artifact`]); the job that runs the stage again captures
//! its stage's prior at dispatch; its commit lets the prior go
//! ([`Priors::forget`]). Everything they let go of is a host output, so it
//! leaves through the post-work and is dropped after the lock.
//!
//! This module takes no lock and calls no host code but the executor's
//! `same_*` comparisons, on the worker that ran the stage.

use std::sync::Arc;

use smallvec::SmallVec;
use verter_dag::{Incarnation, ProfileHash, TargetStage};

use crate::node::NodeView;
use crate::post::PostWork;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, Revision, SourceSnapshot};
use crate::traits::StageExecutor;

/// The scheduler's revision clock (see [`Revision`]), under the DAG lock:
/// a changed output draws its revision in the hold that commits it, so
/// revisions follow the one order of commits, and a change committed after
/// a job's dispatch hold is later than every input that job captured.
#[derive(Debug, Default)]
pub(crate) struct RevisionClock(u64);

impl RevisionClock {
    /// A revision later than every one handed out before.
    pub(crate) fn next(&mut self) -> Revision {
        self.0 += 1;
        Revision(self.0)
    }

    /// Stamps a new output that a run found changed (its `changed_at` still
    /// [`Revision::NEVER`]) with the next revision; an unchanged one keeps
    /// its prior's. Returns the revision it now carries.
    pub(crate) fn stamp(&mut self, changed_at: &mut Revision) -> Revision {
        if *changed_at == Revision::NEVER {
            *changed_at = self.next();
        }
        *changed_at
    }
}

/// What a file keeps of the outputs it stopped serving, per stage: the
/// newest of each, of the file's live object only.
pub(crate) struct Priors<E: StageExecutor> {
    source: Option<Arc<SourceSnapshot<E::Source>>>,
    analysis: Option<Arc<AnalysisSnapshot<E::Analysis>>>,
    artifacts: SmallVec<[Arc<ArtifactSnapshot<E::Artifact>>; 1]>,
}

/// A file's priors, boxed: most files have none, and a slot stays small.
pub(crate) type PriorSlot<E> = Option<Box<Priors<E>>>;

impl<E: StageExecutor> Priors<E> {
    fn empty() -> Self {
        Self {
            source: None,
            analysis: None,
            artifacts: SmallVec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.source.is_none() && self.analysis.is_none() && self.artifacts.is_empty()
    }

    /// Keeps what `view` (a view a new generation replaced) served, each
    /// output replacing its stage's older prior; what they replace is
    /// dropped after the lock.
    pub(crate) fn keep_view(slot: &mut PriorSlot<E>, view: &NodeView<E>, post: &mut PostWork<E>) {
        let mut artifacts = view.artifacts().peekable();
        if view.source().is_none() && view.analysis().is_none() && artifacts.peek().is_none() {
            return;
        }
        let priors = slot.get_or_insert_with(|| Box::new(Self::empty()));
        if let Some(source) = view.source()
            && let Some(old) = priors.source.replace(Arc::clone(source))
        {
            post.discard(old);
        }
        if let Some(analysis) = view.analysis()
            && let Some(old) = priors.analysis.replace(Arc::clone(analysis))
        {
            post.discard(old);
        }
        for artifact in artifacts {
            priors.put_artifact(Arc::clone(artifact), post);
        }
    }

    /// Keeps `artifact`, which a blocker's change stopped serving.
    pub(crate) fn keep_artifact(
        slot: &mut PriorSlot<E>,
        artifact: Arc<ArtifactSnapshot<E::Artifact>>,
        post: &mut PostWork<E>,
    ) {
        slot.get_or_insert_with(|| Box::new(Self::empty()))
            .put_artifact(artifact, post);
    }

    fn put_artifact(
        &mut self,
        artifact: Arc<ArtifactSnapshot<E::Artifact>>,
        post: &mut PostWork<E>,
    ) {
        match self
            .artifacts
            .iter_mut()
            .find(|kept| kept.profile == artifact.profile)
        {
            Some(kept) => post.discard(std::mem::replace(kept, artifact)),
            None => self.artifacts.push(artifact),
        }
    }

    /// Lets `stage`'s prior go (it committed again), after the lock.
    pub(crate) fn forget(slot: &mut PriorSlot<E>, stage: TargetStage, post: &mut PostWork<E>) {
        let Some(priors) = slot.as_mut() else {
            return;
        };
        match stage {
            TargetStage::Source => {
                if let Some(old) = priors.source.take() {
                    post.discard(old);
                }
            }
            TargetStage::Analysis => {
                if let Some(old) = priors.analysis.take() {
                    post.discard(old);
                }
            }
            TargetStage::Artifact(profile) => {
                if let Some(at) = priors.artifacts.iter().position(|a| a.profile == profile) {
                    post.discard(priors.artifacts.swap_remove(at));
                }
            }
        }
        if priors.is_empty() {
            *slot = None;
        }
    }

    /// Lets every prior go (the file became another object), after the lock.
    pub(crate) fn clear(slot: &mut PriorSlot<E>, post: &mut PostWork<E>) {
        if let Some(priors) = slot.take() {
            post.discard(priors);
        }
    }

    /// The Source prior of `incarnation`, for a parse's job.
    pub(crate) fn source(
        slot: &PriorSlot<E>,
        incarnation: Incarnation,
    ) -> Option<Arc<SourceSnapshot<E::Source>>> {
        let prior = slot.as_ref()?.source.as_ref()?;
        (prior.version().incarnation == incarnation).then(|| Arc::clone(prior))
    }

    /// The Analysis prior of `incarnation`, for an Analysis job.
    pub(crate) fn analysis(
        slot: &PriorSlot<E>,
        incarnation: Incarnation,
    ) -> Option<Arc<AnalysisSnapshot<E::Analysis>>> {
        let prior = slot.as_ref()?.analysis.as_ref()?;
        (prior.version.incarnation == incarnation).then(|| Arc::clone(prior))
    }

    /// The `profile` Artifact prior of `incarnation`, for an Artifact job.
    pub(crate) fn artifact(
        slot: &PriorSlot<E>,
        incarnation: Incarnation,
        profile: ProfileHash,
    ) -> Option<Arc<ArtifactSnapshot<E::Artifact>>> {
        let prior = slot
            .as_ref()?
            .artifacts
            .iter()
            .find(|a| a.profile == profile)?;
        (prior.version.incarnation == incarnation).then(|| Arc::clone(prior))
    }
}

impl<E: StageExecutor> Drop for Priors<E> {
    fn drop(&mut self) {
        debug_assert!(
            !crate::post::holds_dag_lock() || self.is_empty(),
            "priors hold host outputs: they are dropped after the DAG lock"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed output (still unstamped) draws the next revision, once; an
    /// unchanged one keeps the revision it carries; revisions only grow.
    #[test]
    fn a_stamp_draws_a_new_revision_only_for_a_changed_output() {
        let mut clock = RevisionClock::default();
        let mut changed = Revision::NEVER;
        let first = clock.stamp(&mut changed);
        assert_eq!(first, Revision(1));
        assert_eq!(changed, first);
        assert_eq!(clock.stamp(&mut changed), first, "stamped once");
        let mut kept = first;
        assert_eq!(
            clock.stamp(&mut kept),
            first,
            "an unchanged output keeps it"
        );
        let mut next = Revision::NEVER;
        assert!(clock.stamp(&mut next) > first);
        assert!(Revision::NEVER < first);
    }
}
