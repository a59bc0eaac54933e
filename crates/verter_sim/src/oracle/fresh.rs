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

use crate::fs::{Entry, canonical_name};
use crate::lang::{self, Fault, Parsed, SimAnalysis};

use super::artifact::{Choice, admits_artifact, artifact_outcomes};
use super::history::FileState;
use super::outcome::{Outcome, Sig, render_analysis, render_source};

pub(super) fn fault_sig(fault: Fault, path: &str, stage: &str) -> Sig {
    match fault {
        Fault::Panic => Sig::Panicked(path.to_owned(), stage.to_owned()),
        Fault::Fail => Sig::Failed(path.to_owned(), stage.to_owned()),
    }
}

/// The Source stage over one state: the text and its parse, or the error.
pub fn source_of(path: &str, state: &FileState) -> Result<(Arc<str>, Parsed), Sig> {
    let text = match state.content() {
        Entry::Text(text) => text,
        Entry::Missing => return Err(Sig::SourceMissing(path.to_owned())),
        Entry::NotUtf8 | Entry::ReadError | Entry::LoadPanics => {
            return Err(Sig::LoadFailed(path.to_owned()));
        }
    };
    let parsed = lang::parse(&text).map_err(|fault| fault_sig(fault, path, "Source"))?;
    Ok((text, parsed))
}

/// The Analysis stage over one state.
pub fn analysis_of(path: &str, state: &FileState) -> Result<SimAnalysis, Sig> {
    let (_, parsed) = source_of(path, state)?;
    lang::analyse(&parsed, &state.language_of(path))
        .map_err(|fault| fault_sig(fault, path, "Analysis"))
}

/// The blockers a parse names, as the scheduler resolves them: canonical,
/// without the file itself, each once.
pub fn blockers_of(path: &str, parsed: &Parsed) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for blocker in &parsed.blockers {
        let canonical = canonical_name(blocker);
        if canonical != path && !out.iter().any(|b| b == canonical) {
            out.push(canonical.to_owned());
        }
    }
    out
}

/// The Artifact dependencies (`dep` lines) a parse names, as the scheduler
/// resolves them: canonical, without the file itself (a self-dependency is
/// dropped), each once.
pub fn artifact_deps_of(path: &str, parsed: &Parsed) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dep in &parsed.artifacts {
        let canonical = canonical_name(dep);
        if canonical != path && !out.iter().any(|d| d == canonical) {
            out.push(canonical.to_owned());
        }
    }
    out
}

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
