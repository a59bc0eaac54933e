//! The completion protocol from the inside.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use verter_dag::{Canonical, FileIdentity, Generation, Incarnation, ProfileHash, TargetStage};

use super::*;
use crate::error::ExecutorError;
use crate::handle::Request;
use crate::scheduler::QuiescenceReport;
use crate::stage::StageKind;
use crate::test_support::{Echo, Lines, config};
use crate::traits::{AnalysisInput, ArtifactInput, SourceDeps, SourceInput};

const PROFILE: ProfileHash = ProfileHash(3);

/// [`Lines`], whose Artifact lists its blockers in the order it got them.
struct BlockerOrder;

impl StageExecutor for BlockerOrder {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();
    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        Lines.execute_source(input, deps)
    }
    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        Lines.execute_analysis(input)
    }
    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        let order: Vec<&str> = input
            .blockers
            .iter()
            .map(|blocker| blocker.canonical.as_str())
            .collect();
        Ok(order.join(","))
    }
}

/// An executor receives an Artifact's blockers sorted by path, as
/// `ArtifactInput` promises, whatever order the process first saw the paths
/// in: canonicals order by first sight, and the blocker record is sorted
/// that way.
#[test]
fn an_artifact_gets_its_blockers_sorted_by_path_not_by_first_sight() {
    let (z, a) = (
        Canonical::from("blocker_order/z.rs"),
        Canonical::from("blocker_order/a.rs"),
    );
    assert!(z < a, "z.rs was seen first, so it orders first");
    let scheduler = Scheduler::new_inline(config(), Echo, BlockerOrder).unwrap();
    let handle = scheduler.ask(
        crate::stage::Artifact(PROFILE)
            .of("blocker_order/owner.rs")
            .text("use blocker_order/z.rs\nuse blocker_order/a.rs"),
    );
    let output = scheduler.wait(&handle).expect("builds");
    assert_eq!(*output.data(), "blocker_order/a.rs,blocker_order/z.rs");
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}

/// A broken invariant at an Artifact commit (a current dispatch built from
/// an input that is not live) publishes nothing and answers every waiter
/// `Internal`, counted — no reservation leaks, nobody hangs. The debug
/// assertion fires only after the answers are out.
#[test]
fn a_broken_artifact_invariant_answers_internal_and_counts_it() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Artifact(PROFILE)));
    let mut caught = None;
    for _ in 0..100 {
        scheduler.drain_inbox();
        scheduler.dispatch_ready();
        let Some(job) = scheduler.jobs[0].pop().or_else(|| scheduler.jobs[1].pop()) else {
            break;
        };
        match job {
            Job::File(FileJob {
                dispatch,
                node,
                work: Work::Artifact { profile, .. },
                ..
            }) => {
                let file = dispatch.identity.file().cloned().unwrap();
                let output = Ok(Arc::new(ArtifactSnapshot::new(
                    file.canonical,
                    file.version(),
                    profile,
                    "never published".to_owned(),
                )));
                let retired = FileIdentity::new(
                    Canonical::from("m.rs"),
                    Incarnation::allocate(),
                    Generation::ZERO,
                );
                let finished = run::Finished {
                    dispatch,
                    outcome: run::Outcome::Built {
                        node,
                        result: output,
                        blockers: smallvec::smallvec![Arc::new(AnalysisSnapshot::new(
                            retired.canonical,
                            retired.version(),
                            0,
                        ))],
                        cut: verify::Cut::default(),
                    },
                    ran: None,
                };
                caught = Some(catch_unwind(AssertUnwindSafe(|| {
                    let next = scheduler.complete(finished, None);
                    assert!(next.is_none(), "an inline completion keeps no job");
                })));
            }
            job => scheduler.run_chain(job),
        }
    }
    let caught = caught.expect("the Artifact was dispatched");
    assert_eq!(
        caught.is_err(),
        cfg!(debug_assertions),
        "the debug assertion fires after the answers"
    );
    assert!(matches!(
        handle.try_result(),
        Some(Err(crate::RequestError::Internal { .. }))
    ));
    assert_eq!(scheduler.observe().counters().internal_errors, 1);
    assert_eq!(scheduler.observe().ledger().in_use(), 0);
    let node = scheduler.snapshot().node(&Canonical::from("a.rs")).unwrap();
    assert!(
        node.view().artifact(PROFILE).is_none(),
        "nothing was published"
    );
}
