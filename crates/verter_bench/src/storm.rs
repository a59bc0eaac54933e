//! W3, the edit storm (verter and salsa, the two incremental systems that
//! can take edits while building): an editor applies Zipf-distributed edits
//! while a background builder keeps requesting every artifact, and after
//! each edit a foreground client requests the open file (the file just
//! edited) at high priority and waits for it. The edits ([`EDIT_MIX`]):
//! 10 % change imports, 2 % remove a file, 2 % add one, 15 % change only
//! the note comment and 15 % only the body line (the 30 % an early cutoff
//! can stop at the edited file's Analysis), and the rest, 56 %, change the
//! signature line (the Analysis changes).
//!
//! Owns the storm's threads and its figures: foreground latency
//! percentiles, how long each edit call blocks, wasted work, stages
//! verified instead of run (verter), RSS along the way and after reset.
//! verter runs with cutoff or without it ([`StormShape::cutoff`]) on the
//! same edit script, so one run of each gives the work before and after.
//! Every foreground answer is checked against the reference hash of the
//! sources at that moment (no stale result), and the final state against a
//! cold build of the final sources.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use verter_dag::Priority;
use verter_scheduler::Request;

use crate::alloc_count;
use crate::generator::{Change, GenConfig, Project, Sources, path_of};
use crate::kernel::{reference_artifact, reference_build};
use crate::report::{Record, proc_status_kib, quantile};
use crate::rng::Zipf;
use crate::salsa_runner::{SalsaSystem, artifact, catch_cancelled};
use crate::system::System;
use crate::verter_runner::{ARTIFACT, VerterSystem, artifact_of};
use crate::workloads::{SystemKind, assert_hashes};

/// The shape of one storm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StormShape {
    /// verter or salsa.
    pub system: SystemKind,
    /// Worker threads (salsa: one background handle plus the foreground).
    pub threads: usize,
    /// Files.
    pub files: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Edits applied.
    pub edits: usize,
    /// verter's early cutoff. salsa's backdating cannot be turned off, so
    /// a salsa storm takes `true` only.
    pub cutoff: bool,
}

/// The storm's edits, as cumulative percent bounds of one roll in
/// `0..100`: imports below 10, removal below 12, addition below 14, comment
/// only below 29, body line only below 44, signature line the rest.
pub const EDIT_MIX: EditMix = EditMix {
    imports: 10,
    remove: 12,
    add: 14,
    comment: 29,
    inner_body: 44,
};

/// Cumulative percent bounds of the storm's edit kinds (see [`EDIT_MIX`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditMix {
    /// Rolls below this change one import (and the signature).
    pub imports: usize,
    /// Rolls below this (and not below `imports`) remove a file.
    pub remove: usize,
    /// Rolls below this add a file.
    pub add: usize,
    /// Rolls below this change only the note comment.
    pub comment: usize,
    /// Rolls below this change only the body line; the rest change the
    /// signature line.
    pub inner_body: usize,
}

/// The editor's script: the next edit's changes and the open file after it.
struct Editor {
    project: Project,
    sources: Sources,
    zipf: Zipf,
}

impl Editor {
    fn new(files: usize) -> Self {
        let project = Project::generate(GenConfig {
            seed: 0x5707,
            ..GenConfig::new(files)
        });
        let sources = project.sources();
        Self {
            zipf: Zipf::new(files, 1.0),
            project,
            sources,
        }
    }

    /// Draws and applies (to the model) the next edit.
    fn next(&mut self) -> (Vec<Change>, Option<Arc<str>>) {
        let ids = self.project.ids();
        let id = ids[self.zipf.sample(self.project.rng()) % ids.len()];
        let roll = self.project.rng().below(100);
        let mix = EDIT_MIX;
        let (changes, open) = if roll < mix.imports {
            (self.project.edit_imports(id), Some(path_of(id)))
        } else if roll < mix.remove && ids.len() > 16 {
            let changes = self.project.remove(id);
            let open = changes.first().and_then(|change| match change {
                Change::Write { path, .. } => Some(Arc::clone(path)),
                Change::Remove { .. } => None,
            });
            (changes, open)
        } else if roll < mix.add {
            let (added, changes) = self.project.add();
            (changes, Some(path_of(added)))
        } else if roll < mix.comment {
            (self.project.edit_comment(id), Some(path_of(id)))
        } else if roll < mix.inner_body {
            (self.project.edit_inner_body(id), Some(path_of(id)))
        } else {
            (self.project.edit_signature(id), Some(path_of(id)))
        };
        for change in &changes {
            change.apply_to(&mut self.sources);
        }
        (changes, open)
    }

    fn paths(&self) -> Vec<Arc<str>> {
        self.sources.keys().cloned().collect()
    }
}

/// What both storms measure.
#[derive(Default)]
struct Figures {
    foreground: Vec<Duration>,
    edit_block: Vec<Duration>,
    rss_kib: Vec<(usize, u64)>,
}

impl Figures {
    fn checkpoint(&mut self, edits_done: usize, total: usize) {
        let marks = [total / 4, total / 2, total];
        if marks.contains(&edits_done) {
            self.rss_kib
                .push((edits_done, proc_status_kib("VmRSS").unwrap_or(0)));
        }
    }

    fn record(&self, shape: StormShape) -> Record {
        let mut record = Record::new()
            .field("workload", "w3")
            .field("system", shape.system.name())
            .field("threads", shape.threads)
            .field("n", shape.files)
            .field("c", shape.spin_us);
        // Only a run without cutoff says so (as in W2).
        if !shape.cutoff {
            record = record.field("cutoff", "off");
        }
        let mut record = record
            .field("edits", shape.edits)
            .field("foreground_requests", self.foreground.len())
            .micros("fg_p50_us", quantile(&self.foreground, 0.5))
            .micros("fg_p95_us", quantile(&self.foreground, 0.95))
            .micros("fg_p99_us", quantile(&self.foreground, 0.99))
            .micros("edit_block_p50_us", quantile(&self.edit_block, 0.5))
            .micros("edit_block_p99_us", quantile(&self.edit_block, 0.99))
            .micros(
                "edit_block_max_us",
                self.edit_block.iter().max().copied().unwrap_or_default(),
            );
        for (edits, kib) in &self.rss_kib {
            record = record.field(&format!("rss_after_{edits}_kib"), kib);
        }
        record
    }
}

/// Runs one storm and returns its record.
///
/// # Panics
/// If `shape.system` is not verter or salsa, or on any wrong answer.
/// salsa cannot run without its cutoff: `shape.cutoff` is `false` only for
/// verter.
pub fn w3(shape: StormShape) -> Record {
    match shape.system {
        SystemKind::Verter => verter_storm(shape),
        SystemKind::Salsa => salsa_storm(shape),
        other => panic!("W3 runs verter and salsa only, not {}", other.name()),
    }
}

fn verter_storm(shape: StormShape) -> Record {
    let mut editor = Editor::new(shape.files);
    let mut system = VerterSystem::with_cutoff(shape.threads, shape.spin_us, shape.cutoff);
    // The live heap before the build (sources, an empty scheduler and its
    // pools), to compare with what is left after `reset()`.
    let heap_before = alloc_count::global().live_bytes();
    let built = system.cold(&editor.sources, None);
    assert_hashes(
        "verter W3 cold",
        &built.hashes,
        &reference_build(&editor.sources),
    );
    let scheduler = Arc::clone(system.scheduler());
    let live = Arc::new(RwLock::new(editor.paths()));
    let stop = Arc::new(AtomicBool::new(false));
    let (passes, failed_answers) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let builder = {
        let (scheduler, live, stop) =
            (Arc::clone(&scheduler), Arc::clone(&live), Arc::clone(&stop));
        let (passes, failed_answers) = (Arc::clone(&passes), Arc::clone(&failed_answers));
        crate::host_thread("w3-builder")
            .spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let requests = live
                        .read()
                        .iter()
                        .map(|path| Request::new(path.as_ref(), ARTIFACT))
                        .collect();
                    let batch = scheduler.submit_batch(requests);
                    // Answers for files removed meanwhile are errors; they are
                    // still answers (nothing hangs), which is what is checked.
                    let failed = scheduler
                        .wait_batch(&batch)
                        .iter()
                        .filter(|result| result.is_err())
                        .count();
                    failed_answers.fetch_add(failed as u64, Ordering::Relaxed);
                    passes.fetch_add(1, Ordering::Relaxed);
                }
            })
            .expect("spawn the builder")
    };
    let before = system.counters();
    let mut figures = Figures::default();
    for edit in 1..=shape.edits {
        let (changes, open) = editor.next();
        *live.write() = editor.paths();
        let start = Instant::now();
        for change in &changes {
            system.apply(change);
        }
        figures.edit_block.push(start.elapsed());
        if let Some(open) = open {
            let start = Instant::now();
            let handle = scheduler
                .submit_request(Request::new(open.as_ref(), ARTIFACT).priority(Priority::High));
            let hash = artifact_of(&open, scheduler.wait(&handle));
            figures.foreground.push(start.elapsed());
            assert_eq!(
                hash,
                reference_artifact(&editor.sources, &open),
                "verter W3 edit {edit}: the open file {open} was answered with a stale artifact"
            );
        }
        figures.checkpoint(edit, shape.edits);
    }
    stop.store(true, Ordering::Release);
    builder.join().expect("the background builder panicked");
    let after = system.counters();
    let paths = editor.paths();
    let built = system.request(&paths, None);
    assert_hashes(
        "verter W3 final",
        &built.hashes,
        &reference_build(&editor.sources),
    );
    let started = (after.source_runs + after.analysis_runs + after.artifact_runs)
        - (before.source_runs + before.analysis_runs + before.artifact_runs);
    let wasted = after.stale_completion_refusals - before.stale_completion_refusals;
    let verified = after.stages_verified - before.stages_verified;
    let unchanged = after.outputs_unchanged - before.outputs_unchanged;
    drop(built);
    scheduler.reset();
    let rss_reset = proc_status_kib("VmRSS").unwrap_or(0);
    let heap_after_reset = alloc_count::global().live_bytes();
    let record = figures.record(shape);
    let record = if alloc_count::is_installed() {
        // What the reset scheduler holds beyond the empty one, plus the
        // harness's growth over the run (its sources after the edits, the
        // loader's copy of them): a few MiB at 100k.
        record.field(
            "heap_after_reset_vs_before_kib",
            (heap_after_reset - heap_before) / 1024,
        )
    } else {
        record
    };
    record
        .field("builder_passes", passes.load(Ordering::Relaxed))
        .field(
            "builder_failed_answers",
            failed_answers.load(Ordering::Relaxed),
        )
        .field("started", started)
        .field("wasted", wasted)
        .field(
            "wasted_percent",
            format!("{:.2}", 100.0 * wasted as f64 / started.max(1) as f64),
        )
        .field("rss_after_reset_kib", rss_reset)
        .field("verified", verified)
        .field("unchanged", unchanged)
}

fn salsa_storm(shape: StormShape) -> Record {
    assert!(
        shape.cutoff,
        "salsa always backdates equal outputs: W3 runs it with cutoff only"
    );
    let mut editor = Editor::new(shape.files);
    let mut system = SalsaSystem::new(1, shape.spin_us, false);
    let built = system.cold(&editor.sources, None);
    assert_hashes(
        "salsa W3 cold",
        &built.hashes,
        &reference_build(&editor.sources),
    );
    let (passes, cancelled) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (snapshot_tx, snapshot_rx) = crossbeam_channel::unbounded::<Snapshot>();
    let builder = {
        let (passes, cancelled) = (Arc::clone(&passes), Arc::clone(&cancelled));
        crate::host_thread("w3-builder")
            .spawn(move || {
                while let Ok(mut snapshot) = snapshot_rx.recv() {
                    // Only the newest handle is worth building on; older ones
                    // are dropped at once so the editor's next write can go on.
                    while let Ok(newer) = snapshot_rx.try_recv() {
                        snapshot = newer;
                    }
                    let Snapshot { db, project, files } = snapshot;
                    let pass = catch_cancelled(std::panic::AssertUnwindSafe(|| {
                        for file in files.iter() {
                            let _ = artifact(&db, project, *file);
                        }
                    }));
                    drop(db);
                    match pass {
                        Some(()) => passes.fetch_add(1, Ordering::Relaxed),
                        None => cancelled.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
            .expect("spawn the builder")
    };
    let snapshot = |system: &SalsaSystem, editor: &Editor| Snapshot {
        db: system.db().clone(),
        project: system.project(),
        files: Arc::new(
            editor
                .sources
                .keys()
                .map(|path| system.file(path).expect("every live path is an input"))
                .collect(),
        ),
    };
    snapshot_tx
        .send(snapshot(&system, &editor))
        .expect("the builder is running");
    let executions_before = system.kernels().stats.executions();
    let mut figures = Figures::default();
    for edit in 1..=shape.edits {
        let (changes, open) = editor.next();
        // salsa's write cancels the builder and waits for its handle.
        let start = Instant::now();
        for change in &changes {
            system.apply(change);
        }
        figures.edit_block.push(start.elapsed());
        snapshot_tx
            .send(snapshot(&system, &editor))
            .expect("the builder is running");
        if let Some(open) = open {
            let start = Instant::now();
            let file = system.file(&open).expect("the open file is an input");
            let hash = artifact(system.db(), system.project(), file);
            figures.foreground.push(start.elapsed());
            assert_eq!(
                hash,
                reference_artifact(&editor.sources, &open),
                "salsa W3 edit {edit}: the open file {open} was answered with a stale artifact"
            );
        }
        figures.checkpoint(edit, shape.edits);
    }
    drop(snapshot_tx);
    builder.join().expect("the background builder panicked");
    let executions = system.kernels().stats.executions() - executions_before;
    let paths = editor.paths();
    let built = system.request(&paths, None);
    assert_hashes(
        "salsa W3 final",
        &built.hashes,
        &reference_build(&editor.sources),
    );
    drop(system);
    let rss_reset = proc_status_kib("VmRSS").unwrap_or(0);
    figures
        .record(shape)
        .field("builder_passes", passes.load(Ordering::Relaxed))
        .field("builder_cancelled", cancelled.load(Ordering::Relaxed))
        .field("executions", executions)
        .field("rss_after_reset_kib", rss_reset)
}

/// A database handle for the background builder, with what it builds.
struct Snapshot {
    db: crate::salsa_runner::BenchDatabase,
    project: crate::salsa_runner::ProjectFiles,
    files: Arc<Vec<crate::salsa_runner::SourceFile>>,
}

#[cfg(test)]
mod tests;
