//! Answers in the form the oracle compares them: an error's shape without
//! its versions ([`Sig`]), an [`Outcome`], and the rendering of what the
//! scheduler answered.
//!
//! This module owns how answers are written down; it never decides which
//! answers are allowed.

use std::fmt;

use verter_dag::TargetStage;
use verter_scheduler::{NodeOutput, RequestError, RequestResult};

use crate::lang::{SimExecutor, render_cache_value};
pub(super) use crate::lang::{render_analysis, render_source};

/// An error's shape, without the versions a fresh scheduler would number
/// differently.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sig {
    /// `Superseded`.
    Superseded(String),
    /// `Shutdown`.
    Shutdown(String),
    /// `Cancelled`.
    Cancelled,
    /// `SourceMissing`.
    SourceMissing(String),
    /// `LoadFailed`.
    LoadFailed(String),
    /// `ExecutorFailed` at a stage.
    Failed(String, String),
    /// `ExecutorPanicked` at a stage.
    Panicked(String, String),
    /// `DependencyFailed`: the requesting file, the dependency's file and
    /// stage, and the dependency's own answer.
    Dependency(String, String, String, Box<Sig>),
    /// `DependencyCycle`: the files of the cycle, starting at the one
    /// answered, the first repeated at the end.
    Cycle(Vec<String>),
    /// `UpstreamFailed`: a DAG node skipped because of the upstream node
    /// (its label) that gave this answer.
    Upstream(String, Box<Sig>),
    /// `Internal`: a broken invariant, or a lock hold that panicked and was
    /// recovered (allowed only in a window with such a recovery).
    Internal(String),
    /// Anything else (a violation wherever it appears).
    Other(String),
}

impl From<&RequestError> for Sig {
    fn from(error: &RequestError) -> Self {
        match error {
            RequestError::Superseded { path } => Self::Superseded(path.to_string()),
            RequestError::Shutdown { path } => Self::Shutdown(path.to_string()),
            RequestError::Cancelled => Self::Cancelled,
            RequestError::SourceMissing { path, .. } => Self::SourceMissing(path.to_string()),
            RequestError::LoadFailed { path, .. } => Self::LoadFailed(path.to_string()),
            RequestError::ExecutorFailed { path, stage, .. } => {
                Self::Failed(path.to_string(), stage.to_string())
            }
            RequestError::ExecutorPanicked { path, stage, .. } => {
                Self::Panicked(path.to_string(), stage.to_string())
            }
            RequestError::DependencyFailed {
                requester,
                dep,
                cause,
            } => Self::Dependency(
                requester.to_string(),
                dep.file.canonical.to_string(),
                stage_name(dep.stage).to_owned(),
                Box::new(Self::from(&**cause)),
            ),
            RequestError::DependencyCycle { path } => {
                Self::Cycle(path.iter().map(ToString::to_string).collect())
            }
            RequestError::UpstreamFailed { node, cause } => {
                Self::Upstream(node.to_string(), Box::new(Self::from(&**cause)))
            }
            RequestError::Internal { path, .. } => Self::Internal(path.to_string()),
            other => Self::Other(format!("{other:?}")),
        }
    }
}

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Superseded(p) => write!(f, "Superseded({p})"),
            Self::Shutdown(p) => write!(f, "Shutdown({p})"),
            Self::Cancelled => f.write_str("Cancelled"),
            Self::SourceMissing(p) => write!(f, "SourceMissing({p})"),
            Self::LoadFailed(p) => write!(f, "LoadFailed({p})"),
            Self::Failed(p, s) => write!(f, "Failed({s} {p})"),
            Self::Panicked(p, s) => write!(f, "Panicked({s} {p})"),
            Self::Dependency(r, p, s, cause) => {
                write!(f, "DependencyFailed({r} needs {s} {p}: {cause})")
            }
            Self::Cycle(path) => write!(f, "DependencyCycle({})", path.join(" -> ")),
            Self::Upstream(node, cause) => write!(f, "UpstreamFailed({node}: {cause})"),
            Self::Internal(p) => write!(f, "Internal({p})"),
            Self::Other(text) => write!(f, "Other({text})"),
        }
    }
}

/// One answer, as the oracle compares it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A value, rendered.
    Value(String),
    /// A typed error.
    Error(Sig),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => write!(f, "{value}"),
            Self::Error(sig) => write!(f, "error {sig}"),
        }
    }
}

/// The stage's name as errors spell it.
pub fn stage_name(stage: TargetStage) -> &'static str {
    match stage {
        TargetStage::Source => "Source",
        TargetStage::Analysis => "Analysis",
        TargetStage::Artifact(_) => "Artifact",
    }
}

/// Renders what the scheduler answered.
pub fn render(result: &RequestResult<SimExecutor>) -> Outcome {
    match result {
        Ok(output) => {
            if let Some(source) = output.as_source() {
                Outcome::Value(render_source(
                    &source.language.to_string(),
                    &source.text.text,
                ))
            } else if let Some(analysis) = output.as_analysis() {
                Outcome::Value(render_analysis(analysis.data()))
            } else if let Some(artifact) = output.as_artifact() {
                Outcome::Value(artifact.data().clone())
            } else {
                Outcome::Error(Sig::Other("an output of no known stage".into()))
            }
        }
        Err(error) => Outcome::Error(Sig::from(error)),
    }
}

/// Renders one DAG node's answer: a file stage's as [`render`] does, a
/// cache node's value as `cache[v]`.
pub fn render_node(result: &Result<NodeOutput<SimExecutor>, RequestError>) -> Outcome {
    match result {
        Ok(NodeOutput::Stage(output)) => render(&Ok(output.clone())),
        Ok(NodeOutput::Cache(value)) => render_cache(**value),
        Err(error) => Outcome::Error(Sig::from(error)),
    }
}

/// A cache node's value as the oracle compares it.
pub fn render_cache(value: u64) -> Outcome {
    Outcome::Value(render_cache_value(value))
}

/// How many judged answers exercised Artifact dependencies: the coverage
/// of `dep` lines a run reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DepStats {
    /// Artifact values built on at least one dependency's Artifact.
    pub built_on_deps: u64,
    /// The deepest chain of dependencies in one of those values.
    pub deepest: u64,
    /// Answers `DependencyCycle`.
    pub cycles: u64,
    /// Answers `DependencyFailed` whose cause chain ends in a
    /// `DependencyCycle`.
    pub through_cycles: u64,
    /// Answers `DependencyFailed` on a dependency's Artifact, for another
    /// cause.
    pub failed_deps: u64,
}

impl DepStats {
    /// Counts one judged answer.
    pub fn count(&mut self, answer: &Outcome) {
        match answer {
            Outcome::Value(value) => {
                if let Some(tree) = crate::lang::ArtifactTree::parse(value) {
                    let depth = tree.depth();
                    if depth > 0 {
                        self.built_on_deps += 1;
                        self.deepest = self.deepest.max(depth);
                    }
                }
            }
            Outcome::Error(Sig::Cycle(_)) => self.cycles += 1,
            Outcome::Error(sig @ Sig::Dependency(..)) => {
                let mut at = sig;
                let mut on_artifact = false;
                while let Sig::Dependency(_, _, stage, cause) = at {
                    on_artifact |= stage == "Artifact";
                    at = cause;
                }
                if matches!(at, Sig::Cycle(_)) {
                    self.through_cycles += 1;
                } else if on_artifact {
                    self.failed_deps += 1;
                }
            }
            Outcome::Error(_) => {}
        }
    }

    /// The sum of two counts (the deepest chain: the deeper).
    pub fn add(&mut self, other: &Self) {
        self.built_on_deps += other.built_on_deps;
        self.deepest = self.deepest.max(other.deepest);
        self.cycles += other.cycles;
        self.through_cycles += other.through_cycles;
        self.failed_deps += other.failed_deps;
    }
}

impl fmt::Display for DepStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Artifact dependencies judged: {} values built on dependencies' Artifacts (deepest chain {}), {} DependencyCycle answers, {} DependencyFailed ending in a cycle, {} DependencyFailed on a dependency's Artifact for another cause",
            self.built_on_deps, self.deepest, self.cycles, self.through_cycles, self.failed_deps
        )
    }
}
