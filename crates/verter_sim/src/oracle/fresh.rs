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

use super::history::FileState;
use super::outcome::{Outcome, Sig, render_analysis, render_source};

fn fault_sig(fault: Fault, path: &str, stage: &str) -> Sig {
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

/// Every answer a fresh scheduler could give for `stage` of `path` when
/// `own` lists the states `path` may be in and `others` gives the states
/// any other file may be in.
pub fn outcomes(
    path: &str,
    stage: TargetStage,
    own: &[FileState],
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> BTreeSet<Outcome> {
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
            TargetStage::Artifact(profile) => {
                artifact_outcomes(profile, path, state, others, &mut out)
            }
        }
    }
    out
}

fn artifact_outcomes(
    profile: ProfileHash,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
    out: &mut BTreeSet<Outcome>,
) {
    let (_, parsed) = match source_of(path, state) {
        Ok(source) => source,
        Err(sig) => {
            out.insert(Outcome::Error(sig));
            return;
        }
    };
    let mut failed = false;
    let own = lang::analyse(&parsed, &state.language_of(path));
    if let Err(fault) = own {
        out.insert(Outcome::Error(fault_sig(fault, path, "Analysis")));
        failed = true;
    }
    // Per blocker, every analysis it may have, and every failure: any
    // failing dependency may be the one that fails the Artifact first.
    let mut choices: Vec<(String, Vec<SimAnalysis>)> = Vec::new();
    for blocker in blockers_of(path, &parsed) {
        let mut values = Vec::new();
        for blocker_state in others(&blocker) {
            match analysis_of(&blocker, &blocker_state) {
                Ok(analysis) => {
                    if !values.contains(&analysis) {
                        values.push(analysis);
                    }
                }
                Err(sig) => {
                    out.insert(Outcome::Error(Sig::Dependency(
                        path.to_owned(),
                        blocker.clone(),
                        "Analysis".into(),
                        Box::new(sig),
                    )));
                }
            }
        }
        if values.is_empty() {
            failed = true;
        }
        choices.push((blocker, values));
    }
    let Ok(own) = own else { return };
    if failed {
        return;
    }
    // Every combination of the blockers' possible analyses.
    let mut combination = vec![0usize; choices.len()];
    loop {
        let inputs: Vec<(&str, &SimAnalysis)> = choices
            .iter()
            .zip(&combination)
            .map(|((blocker, values), &i)| (blocker.as_str(), &values[i]))
            .collect();
        out.insert(match lang::build(profile, path, &own, &inputs) {
            Ok(data) => Outcome::Value(data),
            Err(fault) => Outcome::Error(fault_sig(fault, path, "Artifact")),
        });
        // Next combination (odometer).
        let mut digit = 0;
        loop {
            if digit == combination.len() {
                return;
            }
            combination[digit] += 1;
            if combination[digit] < choices[digit].1.len() {
                break;
            }
            combination[digit] = 0;
            digit += 1;
        }
    }
}

/// The Artifact the executor builds for `text` processed as `language`,
/// when it depends on nothing but that text (no blockers) and builds: what
/// a host may commit with a witness of that text without being wrong.
pub fn committable_artifact(
    path: &str,
    text: &Arc<str>,
    language: &str,
    profile: ProfileHash,
) -> Option<String> {
    let parsed = lang::parse(text).ok()?;
    if !blockers_of(path, &parsed).is_empty() {
        return None;
    }
    let analysis = lang::analyse(&parsed, language).ok()?;
    lang::build(profile, path, &analysis, &[]).ok()
}

/// Whether a fresh scheduler could answer `answer` for `stage` of `path`
/// over some choice of states: `path` in one of `own`, every other file in
/// one of `others(file)`. Decided part by part (an Artifact's value names
/// each input it was built from), so it costs the sum of the candidate
/// sets, not their product.
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
    match answer {
        Outcome::Value(value) => own
            .iter()
            .any(|state| artifact_value_fits(value, profile, path, state, others)),
        Outcome::Error(sig) => own
            .iter()
            .any(|state| artifact_error_fits(sig, path, state, others)),
    }
}

/// Whether `value` is the Artifact built from `state` and some state of
/// each blocker it names.
fn artifact_value_fits(
    value: &str,
    profile: ProfileHash,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let Ok((_, parsed)) = source_of(path, state) else {
        return false;
    };
    let Ok(own) = lang::analyse(&parsed, &state.language_of(path)) else {
        return false;
    };
    if own.artifact_fault.is_some() {
        return false;
    }
    let mut parts = value.split('|');
    if parts.next() != Some(profile.to_string().as_str()) {
        return false;
    }
    if parts.next() != Some(format!("{path}={}", own.summary).as_str()) {
        return false;
    }
    let mut blockers = blockers_of(path, &parsed);
    blockers.sort();
    let named: Vec<(&str, &str)> = parts.filter_map(|part| part.split_once('=')).collect();
    named.len() == blockers.len()
        && named
            .iter()
            .zip(&blockers)
            .all(|((name, summary), blocker)| {
                name == blocker
                    && others(blocker).iter().any(|blocker_state| {
                        analysis_of(blocker, blocker_state)
                            .is_ok_and(|analysis| analysis.summary == *summary)
                    })
            })
}

/// Whether `sig` is an error the Artifact of `state` can fail with: its own
/// Source or Analysis error, a blocker's failure (any failing input may be
/// the one that fails it first), or its own fault when every input built.
fn artifact_error_fits(
    sig: &Sig,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let (_, parsed) = match source_of(path, state) {
        Ok(source) => source,
        Err(own) => return own == *sig,
    };
    let own = lang::analyse(&parsed, &state.language_of(path));
    if let Err(fault) = &own
        && fault_sig(*fault, path, "Analysis") == *sig
    {
        return true;
    }
    let mut every_blocker_builds = true;
    for blocker in blockers_of(path, &parsed) {
        let states = others(&blocker);
        let mut builds = false;
        for blocker_state in &states {
            match analysis_of(&blocker, blocker_state) {
                Ok(_) => builds = true,
                Err(cause) => {
                    if *sig
                        == Sig::Dependency(
                            path.to_owned(),
                            blocker.clone(),
                            "Analysis".into(),
                            Box::new(cause),
                        )
                    {
                        return true;
                    }
                }
            }
        }
        every_blocker_builds &= builds;
    }
    match own {
        Ok(analysis) => {
            every_blocker_builds
                && analysis
                    .artifact_fault
                    .is_some_and(|fault| fault_sig(fault, path, "Artifact") == *sig)
        }
        Err(_) => false,
    }
}
