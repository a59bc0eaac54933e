//! A small host: a loader, an executor, and one request on two threads.
use std::sync::Arc;
use verter_scheduler::*;

struct Disk;
impl SourceLoader for Disk {
    fn load(&self, p: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(format!("fn {p}").into())
    }
}

struct Lines;
impl StageExecutor for Lines {
    type Source = usize;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();
    fn execute_source(
        &self,
        i: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<usize, ExecutorError> {
        Ok(i.text.len())
    }
    fn execute_analysis(&self, i: &AnalysisInput<'_, usize>) -> Result<usize, ExecutorError> {
        Ok(i.source.parsed * 2)
    }
    fn execute_artifact(
        &self,
        i: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        Ok(format!("{} -> {}", i.analysis.canonical, i.analysis.data()))
    }
}

fn main() {
    let config = SchedulerConfig::with_threads(2, 1);
    let scheduler = Scheduler::threaded(config, Disk, Lines).expect("a valid configuration");
    // The handle's answer is an artifact: no match on the stage.
    let handle = scheduler.ask(stage::Artifact(ProfileHash(0)).of("main.rs"));
    println!("{}", scheduler.wait(&handle).expect("built").data());
}
