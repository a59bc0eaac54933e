//! A tiny loader and executor for the crate's unit tests.

use std::sync::Arc;

use verter_dag::Canonical;

use crate::error::{ExecutorError, LoadError};
use crate::language::Language;
use crate::traits::{
    AnalysisInput, ArtifactInput, SourceDeps, SourceInput, SourceLoader, StageExecutor,
};

/// Every path but the empty one loads as its own name; `use X` lines name
/// blockers.
pub(crate) struct Echo;

impl SourceLoader for Echo {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        // As a file system's: nothing backs the empty path.
        if path.is_empty() {
            return Err(LoadError::Missing {
                path: String::new(),
            });
        }
        Ok(Canonical::from(path))
    }
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from(canonical.as_str()))
    }
    fn classify(&self, _: &Canonical) -> Language {
        Language::new("text")
    }
}

/// Source: the text's lines; Analysis: their number; Artifact: a string.
pub(crate) struct Lines;

impl StageExecutor for Lines {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = usize;
    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        let lines: Vec<String> = input.text.lines().map(str::to_owned).collect();
        for blocker in lines.iter().filter_map(|line| line.strip_prefix("use ")) {
            deps.blocker(blocker);
        }
        Ok(lines)
    }
    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        Ok(input.source.parsed.len())
    }
    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        Ok(format!(
            "{}:{}",
            input.analysis.canonical,
            input.analysis.data()
        ))
    }
}

/// A configuration with both clock backstops off.
pub(crate) fn config() -> crate::config::SchedulerConfig {
    let mut config = crate::config::SchedulerConfig::with_threads(1, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config
}
