//! `VerterHost`: a scheduler and the host's coordinator pool, and the batch
//! APIs a host drives them with.
//!
//! This module owns the host's two halves — an `Arc<Scheduler>` and a
//! [`HostCpuPool`] that is never passed into the scheduler — and what each
//! batch API submits and how it reads the answers. It never coordinates a
//! batch itself: every batch API goes through the one primitive in
//! `crate::batch`, which owns placement, fast paths, order, panics, spans,
//! accounting and re-entrancy.
//!
//! # Batches and the scheduler
//! Each batch API makes one scheduler submission and one wait for its whole
//! batch (its batch-wide half), then reads each item's answer (its per-item
//! half):
//!
//! | API | submission | wait |
//! |---|---|---|
//! | `upsert_many_with_priority` | one `submit_batch_atomic` of Source requests carrying text | one `wait_batch` |
//! | `compile_paths` | one `submit_batch` of Artifact requests | one `wait_batch` |
//! | `compile_many` | the `upsert_many_with_priority` batch, then the `compile_paths` submission for the files it published | one `wait_batch` each |
//! | `request_many` | one `submit_batch` of the requests as given | one `wait_batch` |
//! | `map_batch` | nothing: host code per item | — |
//!
//! # Invariants
//! 1. An upsert batch is one atomic submission: every file of the batch is
//!    published before any of them is parsed
//!    (`upsert_many_publishes_every_file_before_the_first_parse`).
//! 2. `compile_many` answers each file with its own Artifact, or with the
//!    error that stopped it (its upsert's or its build's), in input order
//!    (`compile_many_upserts_then_builds_every_artifact_in_input_order`,
//!    `compile_many_reports_a_failed_file_as_its_own_error_and_builds_the_rest`).

use std::fmt;
use std::sync::Arc;

use verter_dag::{Priority, ProfileHash, TargetStage};
use verter_pools::HostCpuPool;
use verter_scheduler::{
    ArtifactSnapshot, Request, RequestResult, Scheduler, SourceLoader, SourceSnapshot,
    StageExecutor, StageOutput,
};

use crate::batch::Coordinator;
use crate::config::HostConfig;
use crate::error::HostError;

/// What an upsert answers: the file's parsed source at the generation the
/// upsert published.
pub type SourceOutput<E> = Arc<SourceSnapshot<<E as StageExecutor>::Source>>;

/// What a compile answers: the file's Artifact for the profile asked.
pub type ArtifactOutput<E> = Arc<ArtifactSnapshot<<E as StageExecutor>::Artifact>>;

/// A host embedding verter: a [`Scheduler`] plus the host's coordinator
/// pool, driven in batches. See the crate docs for an example.
///
/// Every batch API answers one result per input, in input order, and never
/// fails as a whole: an item that fails or panics is answered with its own
/// [`HostError`].
pub struct VerterHost<E: StageExecutor> {
    scheduler: Arc<Scheduler<E>>,
    /// The coordinator pool; `None` for an inline host. Dropping it joins
    /// its workers, which hold nothing of the scheduler between batches.
    pool: Option<HostCpuPool>,
}

impl<E: StageExecutor> VerterHost<E> {
    /// A threaded host: a scheduler on stage pools built with
    /// [`verter_scheduler::SchedulerConfig::build_pools`], with its driver
    /// thread, and a coordinator pool of `config.host_cpu_threads` workers.
    ///
    /// # Errors
    /// [`HostError::Pools`] when a pool cannot be built, including a
    /// `host_cpu_threads` of zero; [`HostError::Config`] when the scheduler's
    /// configuration is unusable.
    pub fn new(
        config: HostConfig,
        loader: impl SourceLoader,
        executor: E,
    ) -> Result<Self, HostError> {
        let pool = HostCpuPool::new(config.host_cpu_threads)?;
        let (cpu, io) = config.scheduler.build_pools()?;
        let scheduler = Scheduler::new(config.scheduler, loader, executor, cpu, io)?;
        Ok(Self {
            scheduler,
            pool: Some(pool),
        })
    }

    /// An inline host with no threads at all: an inline scheduler
    /// ([`Scheduler::new_inline`]) and no coordinator pool. Every batch runs
    /// on its caller, which pumps the scheduler while it waits;
    /// `config.host_cpu_threads` is not used. What wasm hosts and
    /// deterministic tests use.
    ///
    /// # Errors
    /// [`HostError::Config`] when the scheduler's configuration is unusable.
    pub fn new_inline(
        config: HostConfig,
        loader: impl SourceLoader,
        executor: E,
    ) -> Result<Self, HostError> {
        Ok(Self {
            scheduler: Scheduler::new_inline(config.scheduler, loader, executor)?,
            pool: None,
        })
    }

    /// The scheduler, for single requests, lifecycle calls (`remove`,
    /// `invalidate`, `reset`), reads and counters.
    pub fn scheduler(&self) -> &Arc<Scheduler<E>> {
        &self.scheduler
    }

    /// Whether this host has no threads (built with [`Self::new_inline`]).
    pub fn is_inline(&self) -> bool {
        self.pool.is_none()
    }

    /// Publishes new text for every file as one atomic batch at `priority`
    /// and answers each with its parsed source, in input order: one
    /// `submit_batch_atomic` and one `wait_batch` for the whole batch, so
    /// every file's new generation is published before any of them is
    /// parsed. A file superseded by a newer edit (including a later entry of
    /// the same batch) is answered `Superseded`.
    pub fn upsert_many_with_priority<P, T>(
        &self,
        files: impl IntoIterator<Item = (P, T)>,
        priority: Priority,
    ) -> Vec<Result<SourceOutput<E>, HostError>>
    where
        P: Into<String>,
        T: Into<Arc<str>>,
    {
        let requests: Vec<Request> = files
            .into_iter()
            .map(|(path, text)| {
                Request::new(path.into(), TargetStage::Source)
                    .text(text)
                    .priority(priority)
            })
            .collect();
        self.coordinator().run(
            "upsert_many",
            requests,
            |requests| {
                let batch = self.scheduler.submit_batch_atomic(requests);
                self.scheduler.wait_batch(&batch)
            },
            |answer| {
                let StageOutput::Source(source) = answer? else {
                    unreachable!("the scheduler answers a Source request with a Source output")
                };
                Ok(source)
            },
        )
    }

    /// [`Self::upsert_many_with_priority`] at [`Priority::Normal`].
    pub fn upsert_many<P, T>(
        &self,
        files: impl IntoIterator<Item = (P, T)>,
    ) -> Vec<Result<SourceOutput<E>, HostError>>
    where
        P: Into<String>,
        T: Into<Arc<str>>,
    {
        self.upsert_many_with_priority(files, Priority::Normal)
    }

    /// Compiles files whose text the host holds (an editor's buffers): their
    /// upserts go through [`Self::upsert_many_with_priority`] (one atomic
    /// batch), then the Artifact of `profile` of every file the upsert
    /// published is requested as one more batch. Answers, in input order,
    /// each file's Artifact or the error that stopped it (its upsert's, or
    /// its build's). That is two batches, accounted as two.
    ///
    /// The Artifact request carries no text, so a newer edit that lands
    /// between the two batches is followed: the file is built at its newest
    /// generation.
    pub fn compile_many<P, T>(
        &self,
        files: impl IntoIterator<Item = (P, T)>,
        profile: ProfileHash,
        priority: Priority,
    ) -> Vec<Result<ArtifactOutput<E>, HostError>>
    where
        P: Into<String>,
        T: Into<Arc<str>>,
    {
        let (paths, texts): (Vec<String>, Vec<Arc<str>>) = files
            .into_iter()
            .map(|(path, text)| (path.into(), text.into()))
            .unzip();
        let upserts = self.upsert_many_with_priority(paths.iter().cloned().zip(texts), priority);
        let items: Vec<(String, Result<SourceOutput<E>, HostError>)> =
            paths.into_iter().zip(upserts).collect();
        self.coordinator().run(
            "compile_many",
            items,
            |items| {
                let requests: Vec<Request> = items
                    .iter()
                    .filter(|(_, upsert)| upsert.is_ok())
                    .map(|(path, _)| artifact_request(path, profile, priority))
                    .collect();
                let batch = self.scheduler.submit_batch(requests);
                let mut answers = self.scheduler.wait_batch(&batch).into_iter();
                items
                    .into_iter()
                    .map(|(_, upsert)| match upsert {
                        Ok(_) => Ok(answers
                            .next()
                            .expect("the batch answers every request it was given")),
                        Err(error) => Err(error),
                    })
                    .collect()
            },
            |item| artifact_of::<E>(item?),
        )
    }

    /// Compiles files the loader reads: requests the Artifact of `profile`
    /// of every path as one batch (one `submit_batch`, one `wait_batch`)
    /// and answers each, in input order.
    pub fn compile_paths<P>(
        &self,
        paths: impl IntoIterator<Item = P>,
        profile: ProfileHash,
        priority: Priority,
    ) -> Vec<Result<ArtifactOutput<E>, HostError>>
    where
        P: Into<String>,
    {
        let requests: Vec<Request> = paths
            .into_iter()
            .map(|path| artifact_request(path, profile, priority))
            .collect();
        self.coordinator().run(
            "compile_paths",
            requests,
            |requests| {
                let batch = self.scheduler.submit_batch(requests);
                self.scheduler.wait_batch(&batch)
            },
            artifact_of::<E>,
        )
    }

    /// Submits `requests` as one batch (one `submit_batch`, one
    /// `wait_batch`) and answers each with its stage output, in input order.
    pub fn request_many(&self, requests: Vec<Request>) -> Vec<Result<StageOutput<E>, HostError>> {
        self.coordinator().run(
            "request_many",
            requests,
            |requests| {
                let batch = self.scheduler.submit_batch(requests);
                self.scheduler.wait_batch(&batch)
            },
            |answer| Ok(answer?),
        )
    }

    /// Runs host code once per item as a batch named `batch`, with every
    /// guarantee of the batch primitive: on the coordinator pool (items in
    /// parallel) or inline on the caller for a single item or a nested
    /// batch, results in input order, and a panicking item answered
    /// [`HostError::Panicked`] without disturbing the others. `per_item` may
    /// use this host (or another), including starting batches of its own.
    pub fn map_batch<T, R>(
        &self,
        batch: &'static str,
        items: Vec<T>,
        per_item: impl Fn(T) -> R + Sync,
    ) -> Vec<Result<R, HostError>>
    where
        T: Send,
        R: Send,
    {
        self.coordinator()
            .run(batch, items, |items| items, |item| Ok(per_item(item)))
    }

    fn coordinator(&self) -> Coordinator<'_> {
        Coordinator {
            pool: self.pool.as_ref(),
            accounting: &*self.scheduler,
        }
    }
}

fn artifact_request(path: impl Into<String>, profile: ProfileHash, priority: Priority) -> Request {
    Request::new(path.into(), TargetStage::Artifact(profile)).priority(priority)
}

/// The Artifact an Artifact request was answered with.
fn artifact_of<E: StageExecutor>(answer: RequestResult<E>) -> Result<ArtifactOutput<E>, HostError> {
    let StageOutput::Artifact(artifact) = answer? else {
        unreachable!("the scheduler answers an Artifact request with an Artifact output")
    };
    Ok(artifact)
}

impl<E: StageExecutor> fmt::Debug for VerterHost<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerterHost")
            .field("inline", &self.is_inline())
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}
