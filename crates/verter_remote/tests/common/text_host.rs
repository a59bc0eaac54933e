//! The scheduler host the scheduler-level tests share (against the fake
//! server in `it/schedule.rs`, against BuildGrid in `buildgrid.rs`): files
//! in memory, Source and Analysis keep the text, and the Artifact is one
//! remote action over it, started through `verter_remote::schedule`.

use std::collections::BTreeMap;
use std::sync::Arc;

use verter_remote::{ActionOutcome, ActionSpec, CacheSource, RemoteExecutor, schedule};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, Canonical, Completion, ExecutorError, LoadError, RemoteRoutes,
    Scheduler, SchedulerConfig, SourceDeps, SourceInput, SourceLoader, StageExecutor,
};

/// Files in memory.
#[derive(Clone, Default)]
pub(crate) struct Files(Arc<parking_lot::Mutex<BTreeMap<String, String>>>);

impl Files {
    pub(crate) fn write(&self, path: &str, text: &str) {
        self.0.lock().insert(path.to_owned(), text.to_owned());
    }
}

impl SourceLoader for Files {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.0
            .lock()
            .get(canonical.as_str())
            .map(|text| Arc::from(text.as_str()))
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }
}

/// One Artifact: the action's `out.txt` and where the result came from.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) text: String,
    pub(crate) by: CacheSource,
}

/// The action a file's text becomes; it must write `out.txt`.
pub(crate) type ActionOf = Box<dyn Fn(&str) -> ActionSpec + Send + Sync>;

/// Artifacts run remotely: `action(text)`, answered with its `out.txt`.
pub(crate) struct TextHost {
    pub(crate) remote: RemoteExecutor,
    pub(crate) action: ActionOf,
}

impl StageExecutor for TextHost {
    type Source = Arc<str>;
    type Analysis = Arc<str>;
    type Artifact = Built;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<Arc<str>, ExecutorError> {
        Ok(Arc::from(input.text))
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Arc<str>>,
    ) -> Result<Arc<str>, ExecutorError> {
        Ok(Arc::clone(&input.source.parsed))
    }

    fn execute_artifact(
        &self,
        _: &ArtifactInput<'_, Arc<str>, Built>,
    ) -> Result<Built, ExecutorError> {
        panic!("routed Artifacts are started, never executed here")
    }

    fn start_artifact(&self, input: &ArtifactInput<'_, Arc<str>, Built>, done: Completion<Built>) {
        let spec = (self.action)(input.analysis.data()).output("out.txt");
        schedule::start(&self.remote, spec, done, built);
    }
}

/// An outcome's `out.txt`.
fn built(outcome: ActionOutcome) -> Result<Built, ExecutorError> {
    let outcome = outcome.success().map_err(ExecutorError::from_error)?;
    let out = outcome
        .outputs
        .get("out.txt")
        .ok_or_else(|| ExecutorError::msg("no out.txt"))?;
    Ok(Built {
        text: String::from_utf8_lossy(out).into_owned(),
        by: outcome.from_cache,
    })
}

/// A threaded scheduler (one CPU thread) over `files` whose Artifacts are
/// routed to the remote class.
pub(crate) fn routed(files: &Files, host: TextHost) -> Arc<Scheduler<TextHost>> {
    let mut config = SchedulerConfig::with_threads(1, 1).with_remote(
        RemoteRoutes {
            artifacts: true,
            cache_nodes: false,
        },
        8,
    );
    config.idle_repump = None;
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, files.clone(), host, cpu, io).expect("a valid configuration")
}
