//! What a fresh scheduler answers for an Artifact: built from the file's
//! analysis, its blockers' analyses and its dependencies' Artifacts (`dep`
//! lines, [`crate::lang`]), at any depth; or the failure of one of them; or
//! a dependency cycle.
//!
//! # Rules
//! An answer is judged against **one choice of state per file** (the file
//! asked about among its own candidate states, every other file among its
//! candidates): a file that appears twice in an answer (a blocker of two
//! files, a dependency reached along two paths) must appear in one state.
//! The choice is narrowed part by part as the answer is read ([`Choice`]),
//! and forks only where the rules offer alternatives.
//!
//! - A value is the Artifact [`lang::build`] makes from the chosen states:
//!   its own summary, each blocker's, and each dependency's whole Artifact
//!   (itself judged the same way, at the same profile).
//! - An error is one of: the file's own Source or Analysis error; a
//!   blocker's Analysis failure (`DependencyFailed`, any failing input may
//!   fail it first); a dependency's Artifact failure (`DependencyFailed`
//!   whose cause is an answer that dependency's Artifact may give, judged
//!   by these rules, with no file repeated along the chain of requesters);
//!   `DependencyCycle` naming a real simple cycle of Artifact dependencies
//!   that starts and ends at the file (a file on a cycle may instead be
//!   answered through another stage of it, or another cycle it reaches, by
//!   the `DependencyFailed` rule, as the engine's docs allow); or the
//!   file's own Artifact fault, only when every input builds (every
//!   blocker's Analysis, every dependency's Artifact, no cycle on the way).
//!
//! This module owns those rules; it keeps no history and never calls the
//! scheduler.

use std::collections::{BTreeMap, BTreeSet};

use verter_dag::ProfileHash;

use crate::lang::{self, ArtifactTree, Parsed};

use super::history::FileState;
use super::outcome::{Outcome, Sig};
use super::stages::{analysis_of, artifact_deps_of, blockers_of, fault_sig, source_of};

/// The candidate states of every file, as an answer narrows them.
#[derive(Clone)]
pub(super) struct Choice<'a> {
    root: &'a str,
    own: &'a [FileState],
    others: &'a dyn Fn(&str) -> Vec<FileState>,
    narrowed: BTreeMap<String, Vec<FileState>>,
}

impl<'a> Choice<'a> {
    /// Every state still possible: `own` for `root`, `others` for the rest.
    pub(super) fn new(
        root: &'a str,
        own: &'a [FileState],
        others: &'a dyn Fn(&str) -> Vec<FileState>,
    ) -> Self {
        Self {
            root,
            own,
            others,
            narrowed: BTreeMap::new(),
        }
    }

    /// The states `path` may still be in.
    fn states(&self, path: &str) -> Vec<FileState> {
        match self.narrowed.get(path) {
            Some(states) => states.clone(),
            None if path == self.root => self.own.to_vec(),
            None => (self.others)(path),
        }
    }

    /// Keeps only `path`'s states that `keep` accepts; `false` when none is
    /// left.
    fn narrow(&mut self, path: &str, keep: impl Fn(&FileState) -> bool) -> bool {
        let mut states = self.states(path);
        states.retain(|state| keep(state));
        let left = !states.is_empty();
        self.narrowed.insert(path.to_owned(), states);
        left
    }
}

/// The parse of `path` in `state`, if it parses.
fn parsed(path: &str, state: &FileState) -> Option<Parsed> {
    source_of(path, state).ok().map(|(_, parsed)| parsed)
}

/// Whether `path` in `state` builds its own Artifact once its inputs did:
/// it parses, analyses, and carries no Artifact fault.
fn builds_alone(path: &str, state: &FileState) -> bool {
    analysis_of(path, state).is_ok_and(|analysis| analysis.artifact_fault.is_none())
}

/// Whether `answer` is one a fresh scheduler may give for the Artifact of
/// `profile` of `path` over some choice of states (module docs).
pub(super) fn admits_artifact(
    answer: &Outcome,
    profile: ProfileHash,
    path: &str,
    choice: &Choice<'_>,
) -> bool {
    match answer {
        Outcome::Value(value) => ArtifactTree::parse(value)
            .is_some_and(|tree| value_fits(&tree, profile, path, &mut choice.clone())),
        Outcome::Error(sig) => error_fits(sig, path, choice, &mut Vec::new()),
    }
}

/// Whether `tree` is the Artifact of `path` built from states `choice`
/// still allows, narrowing it to them.
fn value_fits(
    tree: &ArtifactTree,
    profile: ProfileHash,
    path: &str,
    choice: &mut Choice<'_>,
) -> bool {
    if tree.profile != profile.to_string() || tree.path != path {
        return false;
    }
    let blocker_names: Vec<&str> = tree
        .blockers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let dependency_names: Vec<&str> = tree
        .dependencies
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let own = choice.narrow(path, |state| {
        let Some(parsed) = parsed(path, state) else {
            return false;
        };
        let mut blockers = blockers_of(path, &parsed);
        blockers.sort();
        let mut dependencies = artifact_deps_of(path, &parsed);
        dependencies.sort();
        builds_alone(path, state)
            && analysis_of(path, state).is_ok_and(|analysis| analysis.summary == tree.summary)
            && blockers == blocker_names
            && dependencies == dependency_names
    });
    own && tree.blockers.iter().all(|(blocker, summary)| {
        choice.narrow(blocker, |state| {
            analysis_of(blocker, state).is_ok_and(|analysis| analysis.summary == *summary)
        })
    }) && tree
        .dependencies
        .iter()
        .all(|(dependency, nested)| value_fits(nested, profile, dependency, choice))
}

/// Whether `sig` is a failure the Artifact of `path` may be answered with
/// over `choice` (module docs); `chain` holds the requesters whose
/// `DependencyFailed` led here.
fn error_fits(sig: &Sig, path: &str, choice: &Choice<'_>, chain: &mut Vec<String>) -> bool {
    // Its own Source or Analysis error.
    let own = |state: &FileState| match source_of(path, state) {
        Err(own) => own == *sig,
        Ok((_, parsed)) => lang::analyse(&parsed, &state.language_of(path))
            .is_err_and(|fault| fault_sig(fault, path, "Analysis") == *sig),
    };
    if choice.clone().narrow(path, own) {
        return true;
    }
    match sig {
        Sig::Dependency(requester, dep, stage, cause)
            if requester == path && stage == "Analysis" =>
        {
            let mut choice = choice.clone();
            choice.narrow(path, |state| {
                parsed(path, state).is_some_and(|parsed| blockers_of(path, &parsed).contains(dep))
            }) && choice.narrow(dep, |state| {
                analysis_of(dep, state).err().as_ref() == Some(cause)
            })
        }
        Sig::Dependency(requester, dep, stage, cause)
            if requester == path && stage == "Artifact" && dep != path && !chain.contains(dep) =>
        {
            let mut choice = choice.clone();
            if !choice.narrow(path, |state| {
                parsed(path, state)
                    .is_some_and(|parsed| artifact_deps_of(path, &parsed).contains(dep))
            }) {
                return false;
            }
            chain.push(path.to_owned());
            let fits = error_fits(cause, dep, &choice, chain);
            chain.pop();
            fits
        }
        Sig::Cycle(cycle) => cycle_fits(cycle, path, &mut choice.clone()),
        Sig::Failed(p, stage) | Sig::Panicked(p, stage) if p == path && stage == "Artifact" => {
            let mut choice = choice.clone();
            choice.narrow(path, |state| {
                analysis_of(path, state).is_ok_and(|analysis| {
                    analysis
                        .artifact_fault
                        .is_some_and(|fault| fault_sig(fault, path, "Artifact") == *sig)
                })
            }) && {
                let goals = vec![(path.to_owned(), Vec::new())];
                let mut budget = SEARCH_BUDGET;
                match inputs_build(&choice, goals.clone(), &mut budget) {
                    Some(builds) => builds,
                    None => inputs_build_each(&choice, goals),
                }
            }
        }
        _ => false,
    }
}

/// Whether `cycle` (first file repeated at the end) is a simple cycle of
/// Artifact dependencies through `path`, starting there, in states
/// `choice` allows.
fn cycle_fits(cycle: &[String], path: &str, choice: &mut Choice<'_>) -> bool {
    let [first, .., last] = cycle else {
        return false;
    };
    let ring = &cycle[..cycle.len() - 1];
    let distinct: BTreeSet<&String> = ring.iter().collect();
    first == path
        && last == path
        && ring.len() >= 2
        && distinct.len() == ring.len()
        && cycle.windows(2).all(|pair| {
            let (from, to) = (&pair[0], &pair[1]);
            choice.narrow(from, |state| {
                parsed(from, state)
                    .is_some_and(|parsed| artifact_deps_of(from, &parsed).contains(to))
            })
        })
}

/// Whether, for some choice `choice` allows, every goal's inputs build: for
/// a goal `(x, above)`, `x` parses, each of its blockers' Analyses builds,
/// and each of its dependencies' Artifacts builds (its own stages, and its
/// inputs in turn), none of them one of `above` or `x` (a cycle). Searched
/// depth first, one state of a file at a time, so a file reached twice is
/// in one state.
///
/// `None` when the search took more than `budget` steps: the states a
/// threaded run allows multiply along every path, so the exact search can
/// grow without bound; the caller then asks [`inputs_build_each`].
fn inputs_build(
    choice: &Choice<'_>,
    mut goals: Vec<(String, Vec<String>)>,
    budget: &mut usize,
) -> Option<bool> {
    let Some((path, above)) = goals.pop() else {
        return Some(true);
    };
    'states: for state in choice.states(&path) {
        *budget = budget.checked_sub(1)?;
        let Some(parsed) = parsed(&path, &state) else {
            continue;
        };
        let dependencies = artifact_deps_of(&path, &parsed);
        if dependencies
            .iter()
            .any(|dep| *dep == path || above.contains(dep))
        {
            continue;
        }
        let mut next = choice.clone();
        next.narrow(&path, |s| *s == state);
        for blocker in blockers_of(&path, &parsed) {
            if !next.narrow(&blocker, |s| analysis_of(&blocker, s).is_ok()) {
                continue 'states;
            }
        }
        let mut goals = goals.clone();
        let mut below = above.clone();
        below.push(path.clone());
        for dep in dependencies {
            if !next.narrow(&dep, |s| builds_alone(&dep, s)) {
                continue 'states;
            }
            goals.push((dep, below.clone()));
        }
        if inputs_build(&next, goals, budget)? {
            return Some(true);
        }
    }
    Some(false)
}

/// The steps [`inputs_build`] may take before it gives up.
const SEARCH_BUDGET: usize = 20_000;

/// [`inputs_build`] without its one-state-per-file rule: whether every
/// file the goals reach has some state that parses and whose own inputs
/// build, each file judged once, with a dependency on a file above it on
/// the path still refused (a cycle). Weaker than the exact search (it may
/// take two states of one file on two paths), so it is asked only when that
/// search ran out of steps; linear in the files and their states.
fn inputs_build_each(choice: &Choice<'_>, goals: Vec<(String, Vec<String>)>) -> bool {
    fn builds(
        choice: &Choice<'_>,
        path: &str,
        above: &mut Vec<String>,
        known: &mut BTreeMap<String, bool>,
    ) -> bool {
        if let Some(known) = known.get(path) {
            return *known;
        }
        let mut any = false;
        for state in choice.states(path) {
            let Some(parsed) = parsed(path, &state) else {
                continue;
            };
            let dependencies = artifact_deps_of(path, &parsed);
            if dependencies
                .iter()
                .any(|dep| dep == path || above.contains(dep))
            {
                continue;
            }
            let blockers_build = blockers_of(path, &parsed).iter().all(|blocker| {
                choice
                    .states(blocker)
                    .iter()
                    .any(|s| analysis_of(blocker, s).is_ok())
            });
            if !blockers_build {
                continue;
            }
            above.push(path.to_owned());
            let dependencies_build = dependencies.iter().all(|dep| {
                choice.states(dep).iter().any(|s| builds_alone(dep, s))
                    && builds(choice, dep, above, known)
            });
            above.pop();
            if dependencies_build {
                any = true;
                break;
            }
        }
        known.insert(path.to_owned(), any);
        any
    }
    let mut known = BTreeMap::new();
    goals
        .into_iter()
        .all(|(path, mut above)| builds(choice, &path, &mut above, &mut known))
}

/// Every answer the Artifact of `profile` of `path` may be given over
/// `choice` (for reports and the oracle's own tests: [`admits_artifact`]
/// decides a verdict). Candidates are drawn generously, at most `limit`
/// of them, and kept only where [`admits_artifact`] admits them.
pub(super) fn artifact_outcomes(
    profile: ProfileHash,
    path: &str,
    choice: &Choice<'_>,
    limit: usize,
) -> BTreeSet<Outcome> {
    let mut drawn = BTreeSet::new();
    draw(
        profile,
        path,
        choice,
        &mut vec![path.to_owned()],
        limit,
        &mut drawn,
    );
    drawn
        .into_iter()
        .filter(|outcome| admits_artifact(outcome, profile, path, choice))
        .collect()
}

/// Draws candidate answers for `path` (the last of `chain`) into `out`.
fn draw(
    profile: ProfileHash,
    path: &str,
    choice: &Choice<'_>,
    chain: &mut Vec<String>,
    limit: usize,
    out: &mut BTreeSet<Outcome>,
) {
    for state in choice.states(path) {
        if out.len() >= limit {
            return;
        }
        let parsed = match source_of(path, &state) {
            Ok((_, parsed)) => parsed,
            Err(sig) => {
                out.insert(Outcome::Error(sig));
                continue;
            }
        };
        let own = lang::analyse(&parsed, &state.language_of(path));
        if let Err(fault) = &own {
            out.insert(Outcome::Error(fault_sig(*fault, path, "Analysis")));
        }
        let mut inputs_ok = own.is_ok();
        let mut blockers = Vec::new();
        for blocker in blockers_of(path, &parsed) {
            let mut values = Vec::new();
            for blocker_state in choice.states(&blocker) {
                match analysis_of(&blocker, &blocker_state) {
                    Ok(analysis) if !values.contains(&analysis) => values.push(analysis),
                    Ok(_) => {}
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
            inputs_ok &= !values.is_empty();
            blockers.push((blocker, values));
        }
        for cycle in cycles_from(path, choice) {
            out.insert(Outcome::Error(Sig::Cycle(cycle)));
        }
        let mut dependencies = Vec::new();
        for dep in artifact_deps_of(path, &parsed) {
            if chain.contains(&dep) {
                inputs_ok = false;
                continue;
            }
            let mut theirs = BTreeSet::new();
            chain.push(dep.clone());
            draw(profile, &dep, choice, chain, limit, &mut theirs);
            chain.pop();
            let mut values = Vec::new();
            for answer in theirs {
                match answer {
                    Outcome::Value(value) => values.push(value),
                    Outcome::Error(sig) => {
                        out.insert(Outcome::Error(Sig::Dependency(
                            path.to_owned(),
                            dep.clone(),
                            "Artifact".into(),
                            Box::new(sig),
                        )));
                    }
                }
            }
            inputs_ok &= !values.is_empty();
            dependencies.push((dep, values));
        }
        let Ok(own) = own else { continue };
        if !inputs_ok {
            continue;
        }
        // Every combination of the inputs' possible answers (odometer),
        // up to the limit.
        let sizes: Vec<usize> = blockers
            .iter()
            .map(|(_, values)| values.len())
            .chain(dependencies.iter().map(|(_, values)| values.len()))
            .collect();
        let mut at = vec![0usize; sizes.len()];
        loop {
            let blocker_inputs: Vec<(&str, &lang::SimAnalysis)> = blockers
                .iter()
                .zip(&at)
                .map(|((name, values), &i)| (name.as_str(), &values[i]))
                .collect();
            let dependency_inputs: Vec<(&str, &str)> = dependencies
                .iter()
                .zip(&at[blockers.len()..])
                .map(|((name, values), &i)| (name.as_str(), values[i].as_str()))
                .collect();
            out.insert(
                match lang::build(profile, path, &own, &blocker_inputs, &dependency_inputs) {
                    Ok(value) => Outcome::Value(value),
                    Err(fault) => Outcome::Error(fault_sig(fault, path, "Artifact")),
                },
            );
            if out.len() >= limit {
                return;
            }
            let mut digit = 0;
            loop {
                if digit == at.len() {
                    break;
                }
                at[digit] += 1;
                if at[digit] < sizes[digit] {
                    break;
                }
                at[digit] = 0;
                digit += 1;
            }
            if digit == at.len() {
                break;
            }
        }
    }
}

/// Every simple cycle of Artifact dependencies from `path` back to it, over
/// any states `choice` allows (first file repeated at the end).
fn cycles_from(path: &str, choice: &Choice<'_>) -> Vec<Vec<String>> {
    fn walk(
        at: &str,
        start: &str,
        choice: &Choice<'_>,
        trail: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        let mut next: BTreeSet<String> = BTreeSet::new();
        for state in choice.states(at) {
            if let Some(parsed) = parsed(at, &state) {
                next.extend(artifact_deps_of(at, &parsed));
            }
        }
        for dep in next {
            if dep == start {
                let mut cycle = trail.clone();
                cycle.push(dep);
                out.push(cycle);
            } else if !trail.contains(&dep) {
                trail.push(dep.clone());
                walk(&dep, start, choice, trail, out);
                trail.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(path, path, choice, &mut vec![path.to_owned()], &mut out);
    out
}
