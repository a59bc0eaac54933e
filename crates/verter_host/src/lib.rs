//! The host layer: [`VerterHost`] embeds verter's scheduler in a host
//! program and drives it in batches.
//!
//! A host owns two things: a `Scheduler` (with its stage pools and driver
//! thread, or inline with no threads) and a coordinator pool, the
//! [`HostCpuPool`](verter_pools::HostCpuPool), where batches wait for their
//! answers. The coordinator pool is never passed into the scheduler: its
//! workers park while they wait and never run stage work, so a batch cannot
//! starve the stages it waits for.
//!
//! Every batch API — [`VerterHost::upsert_many_with_priority`],
//! [`VerterHost::compile_many`], [`VerterHost::compile_paths`],
//! [`VerterHost::request_many`], [`VerterHost::map_batch`] — runs through
//! one private batch primitive, which owns:
//! - the coordinator install, and the fast paths: an empty batch returns at
//!   once and accounts nothing; a single item runs inline on the caller;
//! - input-order results, one per item;
//! - a per-item panic boundary: a panicking item becomes that item's
//!   [`HostError::Panicked`], never the batch's failure;
//! - one `tracing` span (`host_batch`) per batch;
//! - exactly one `Scheduler::account_batch_submission` per non-empty batch;
//! - re-entrancy collapse: a batch started from inside a batch's code (or by
//!   a stage worker) runs inline on the current thread instead of installing
//!   again, so nested batches cannot deadlock even a one-thread coordinator.
//!
//! An upsert batch is one atomic submission and one wait: every file's new
//! generation is published before any of them is parsed. `compile_many`
//! routes its upserts through it, then builds every file's Artifact.
//!
//! # Example
//! A host that keeps files in memory and "compiles" each to its word count:
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use verter_host::{HostConfig, VerterHost};
//! use verter_scheduler::*;
//!
//! /// The files the host has on "disk".
//! struct Disk(HashMap<&'static str, &'static str>);
//! impl SourceLoader for Disk {
//!     fn load(&self, path: &Canonical) -> Result<Arc<str>, LoadError> {
//!         let text = self.0.get(path.as_str()).ok_or_else(|| LoadError::Missing { path: path.to_string() })?;
//!         Ok(Arc::from(*text))
//!     }
//! }
//!
//! struct WordCount;
//! impl StageExecutor for WordCount {
//!     type Source = Vec<String>;
//!     type Analysis = usize;
//!     type Artifact = String;
//!     type CacheOutput = ();
//!     fn execute_source(&self, input: &SourceInput<'_>, _: &mut SourceDeps) -> Result<Vec<String>, ExecutorError> {
//!         Ok(input.text.split_whitespace().map(str::to_owned).collect())
//!     }
//!     fn execute_analysis(&self, input: &AnalysisInput<'_, Vec<String>>) -> Result<usize, ExecutorError> {
//!         let source = input.source;
//!         Ok(source.parsed.len())
//!     }
//!     fn execute_artifact(&self, input: &ArtifactInput<'_, usize, String>) -> Result<String, ExecutorError> {
//!         let analysis = input.analysis;
//!         Ok(format!("{}: {} words", analysis.canonical, analysis.data()))
//!     }
//! }
//!
//! let disk = Disk(HashMap::from([("notes.txt", "one two three")]));
//! let mut config = HostConfig::default();
//! config.host_cpu_threads = 2;
//! config.scheduler = SchedulerConfig::with_threads(2, 1);
//! let host = VerterHost::new(config, disk, WordCount).expect("pools start");
//!
//! // Files the loader reads, built in one batch.
//! let built = host.compile_paths(["notes.txt"], ProfileHash(0), Priority::Normal);
//! assert_eq!(built[0].as_ref().expect("built").data(), "notes.txt: 3 words");
//!
//! // An editor's buffers: one atomic upsert batch, then one build batch.
//! let edited = host.compile_many(
//!     [("notes.txt", "one two three four"), ("draft.txt", "hello")],
//!     ProfileHash(0),
//!     Priority::High,
//! );
//! let outputs: Vec<&str> = edited.iter().map(|r| r.as_ref().expect("built").data().as_str()).collect();
//! assert_eq!(outputs, ["notes.txt: 4 words", "draft.txt: 1 words"]);
//! assert_eq!(host.scheduler().observe().counters().batches, 3);
//! ```

mod batch;
mod config;
mod error;
mod host;

pub use config::HostConfig;
pub use error::HostError;
pub use host::{ArtifactOutput, SourceOutput, VerterHost};

/// Hosts are shared across threads (a host's batch items use it from
/// coordinator workers).
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    // Never called: type-checking its body proves the bound for every
    // executor at once.
    #[expect(dead_code, reason = "a compile-time proof, never called")]
    const fn host_is_send_sync<E: verter_scheduler::StageExecutor>() {
        assert_send_sync::<VerterHost<E>>();
    }
    assert_send_sync::<HostError>();
    assert_send_sync::<HostConfig>();
};
