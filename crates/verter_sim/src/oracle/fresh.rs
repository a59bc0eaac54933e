//! What a fresh scheduler answers over given file states: the Source,
//! Analysis and Artifact stages computed with the executor's own pure
//! functions ([`crate::lang`]), the set of every answer a choice of states
//! allows, and whether one answer is in that set.
//!
//! This module owns those pure computations; it keeps no history and never
//! calls the scheduler.

use std::collections::BTreeSet;
use std::sync::Arc;

use verter_dag::{ProfileHash, TargetStage};

use crate::lang;

use super::artifact::{Choice, admits_artifact, artifact_outcomes};
use super::history::FileState;
use super::outcome::{Outcome, render_analysis, render_source};
pub use super::stages::{analysis_of, artifact_deps_of, blockers_of, source_of};

/// At most this many answers are drawn for an Artifact's report.
const DRAWN: usize = 64;

/// Every answer a fresh scheduler could give for `stage` of `path` when
/// `own` lists the states `path` may be in and `others` gives the states
/// any other file may be in.
pub fn outcomes(
    path: &str,
    stage: TargetStage,
    own: &[FileState],
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> BTreeSet<Outcome> {
    if let TargetStage::Artifact(profile) = stage {
        return artifact_outcomes(profile, path, &Choice::new(path, own, others), DRAWN);
    }
    let mut out = BTreeSet::new();
    for state in own {
        match stage {
            TargetStage::Source => {
                out.insert(match source_of(path, state) {
                    Ok((text, _)) => Outcome::Value(render_source(&state.language_of(path), &text)),
                    Err(sig) => Outcome::Error(sig),
                });
            }
            TargetStage::Analysis => {
                out.insert(match analysis_of(path, state) {
                    Ok(analysis) => Outcome::Value(render_analysis(&analysis)),
                    Err(sig) => Outcome::Error(sig),
                });
            }
            TargetStage::Artifact(_) => unreachable!("answered above"),
        }
    }
    out
}

/// The Artifact the executor builds for `text` processed as `language`,
/// when it depends on nothing but that text (no blockers, no Artifact
/// dependencies) and builds: what
/// a host may commit with a witness of that text without being wrong.
pub fn committable_artifact(
    path: &str,
    text: &Arc<str>,
    language: &str,
    profile: ProfileHash,
) -> Option<String> {
    let parsed = lang::parse(text).ok()?;
    if !blockers_of(path, &parsed).is_empty() || !artifact_deps_of(path, &parsed).is_empty() {
        return None;
    }
    let analysis = lang::analyse(&parsed, language).ok()?;
    lang::build(profile, path, &analysis, &[], &[]).ok()
}

/// Whether a fresh scheduler could answer `answer` for `stage` of `path`
/// over some choice of states: `path` in one of `own`, every other file in
/// one of `others(file)`, one state per file. Decided part by part (an
/// Artifact's value names each input it was built from, at any depth:
/// `artifact.rs`), so it costs about the sum of the candidate sets, not
/// their product.
pub fn admits(
    answer: &Outcome,
    path: &str,
    stage: TargetStage,
    own: &[FileState],
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let TargetStage::Artifact(profile) = stage else {
        return outcomes(path, stage, own, others).contains(answer);
    };
    admits_artifact(answer, profile, path, &Choice::new(path, own, others))
}
