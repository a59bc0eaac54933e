//! One file's stages over one of its states, with the executor's own pure
//! functions ([`crate::lang`]): its Source (text and parse, or the error),
//! its Analysis, and the files its parse names, as the scheduler resolves
//! them. What the fresh answers ([`super::fresh`]) and the Artifact rules
//! ([`super::artifact`]) are both built from; it names neither.

use std::sync::Arc;

use crate::fs::{Entry, canonical_name};
use crate::lang::{self, Fault, Parsed, SimAnalysis};

use super::history::FileState;
use super::outcome::Sig;

/// The signature of `fault` at `stage` of `path`.
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
