//! Early cutoff on the worker (docs/design.md, "Early cutoff"): whether a
//! stage can be verified against its prior instead of run, and whether a
//! stage that ran produced what its prior holds. Reads the job, calls
//! nothing but the executor's `same_*` comparisons (inside the panic
//! boundary), and takes no lock.
//!
//! Part of the `exec` module; see its docs for the protocol of one job.

use super::*;

/// The newest change among an Artifact's inputs: its file's Analysis, its
/// blocker and dependency lists, each blocker's Analysis and each
/// dependency's Artifact. The prior artifact is still what a run would
/// build when this is no newer than the revision it was verified at
/// (docs/design.md, "Early cutoff").
pub(super) fn artifact_inputs_changed_at<A, R>(
    analysis: &AnalysisSnapshot<A>,
    blockers: &[Arc<AnalysisSnapshot<A>>],
    dependencies: &[Arc<ArtifactSnapshot<R>>],
    blockers_changed_at: Revision,
) -> Revision {
    let blockers = blockers.iter().map(|blocker| blocker.changed_at());
    let dependencies = dependencies.iter().map(|dep| dep.changed_at());
    blockers.chain(dependencies).fold(
        analysis.changed_at().max(blockers_changed_at),
        Revision::max,
    )
}

/// What early cutoff made of a stage (docs/design.md, "Early cutoff"): how
/// it was cut off, if it was, and whether its job captured a prior (only
/// then does its commit look up the file's priors to let that one go: a
/// current job's stage cannot gain a prior after its dispatch, since what
/// adds one makes the job stale).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cut {
    pub(super) how: Option<CutOff>,
    pub(super) prior: bool,
}

impl Cut {
    /// A stage whose job captured `prior` (or none), not cut off (yet).
    pub(super) fn new<T>(prior: Option<&T>) -> Self {
        Self {
            how: None,
            prior: prior.is_some(),
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// Early cutoff's first rule, on the worker (docs/design.md, "Early
    /// cutoff"): an Analysis or Artifact whose prior output was built or
    /// verified against inputs none of which changed since is verified at
    /// this version, sharing the prior's value, without running. Reads the
    /// work without taking it apart: a stage with no prior (every stage of
    /// a cold build) pays one check.
    pub(super) fn verified(&self, file: &FileIdentity, work: &Work<E>) -> Option<Verified<E>> {
        let verified = match work {
            Work::Analysis {
                source,
                prior: Some(prior),
            } if source.changed_at <= prior.verified_at() => Verified::Analysis(Arc::new(
                AnalysisSnapshot::verified(prior, file.version(), source.changed_at),
            )),
            Work::Artifact {
                analysis,
                blockers,
                dependencies,
                blockers_changed_at,
                prior: Some(prior),
                ..
            } => {
                let inputs = artifact_inputs_changed_at(
                    analysis,
                    blockers,
                    dependencies,
                    *blockers_changed_at,
                );
                if inputs > prior.verified_at() {
                    return None;
                }
                Verified::Artifact(Arc::new(ArtifactSnapshot::verified(
                    prior,
                    file.version(),
                    inputs,
                )))
            }
            _ => return None,
        };
        self.counters
            .stages_verified
            .fetch_add(1, Ordering::Relaxed);
        Some(verified)
    }

    /// Early cutoff's second rule, on the worker: a run's output `next`
    /// against its prior's value and revision. Equal (by `same`), it keeps
    /// the prior's revision and is reported unchanged; otherwise its
    /// revision is left for its commit to draw, under the lock.
    pub(super) fn judge<T>(
        &self,
        previous: Option<(&T, Revision)>,
        next: &T,
        same: fn(&E, &T, &T) -> bool,
    ) -> (Revision, Option<CutOff>) {
        match previous {
            Some((value, changed_at)) if self.same(|executor| same(executor, value, next)) => {
                (changed_at, Some(CutOff::Unchanged))
            }
            _ => (Revision::NEVER, None),
        }
    }

    /// Calls one of the executor's `same_*` comparisons inside the panic
    /// boundary: a comparison that panics counts as "changed" (and as an
    /// executor panic), never as "the same".
    pub(super) fn same(&self, compare: impl FnOnce(&E) -> bool) -> bool {
        match catch_unwind(AssertUnwindSafe(|| compare(&self.executor))) {
            Ok(same) => same,
            Err(_) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}

/// A stage verified without running: its re-stamped output.
pub(super) enum Verified<E: StageExecutor> {
    Analysis(Arc<AnalysisSnapshot<E::Analysis>>),
    Artifact(Arc<ArtifactSnapshot<E::Artifact>>),
}

/// Why `work` of `file` runs rather than being verified (docs/design.md,
/// "Causes"): asked only for work [`Scheduler::verified`] did not verify,
/// and only when someone records causes. For an Artifact, the newest of
/// the inputs that changed since its prior was verified (its blocker list
/// named by its file's Source key).
pub(super) fn run_reason<E: StageExecutor>(file: &FileIdentity, work: &Work<E>) -> RunReason {
    match work {
        Work::Load | Work::Parse { .. } => RunReason::NewVersion,
        Work::Analysis { prior: None, .. } | Work::Artifact { prior: None, .. } => {
            RunReason::NoPrior
        }
        Work::Analysis { .. } => RunReason::InputChanged(file.at(TargetStage::Source)),
        Work::Artifact {
            analysis,
            blockers,
            dependencies,
            blockers_changed_at,
            ..
        } => {
            let mut newest = (analysis.changed_at(), file.at(TargetStage::Analysis));
            if *blockers_changed_at > newest.0 {
                newest = (*blockers_changed_at, file.at(TargetStage::Source));
            }
            for blocker in blockers {
                if blocker.changed_at() > newest.0 {
                    let version = blocker.version;
                    let owner = FileIdentity::new(
                        blocker.canonical,
                        version.incarnation,
                        version.generation,
                    );
                    newest = (blocker.changed_at(), owner.at(TargetStage::Analysis));
                }
            }
            for dep in dependencies {
                if dep.changed_at() > newest.0 {
                    let version = dep.version;
                    let owner =
                        FileIdentity::new(dep.canonical, version.incarnation, version.generation);
                    newest = (
                        dep.changed_at(),
                        owner.at(TargetStage::Artifact(dep.profile)),
                    );
                }
            }
            RunReason::InputChanged(newest.1)
        }
    }
}
