//! `Snapshot`: reads of what a scheduler has published: source texts by
//! path or as of a captured root, published nodes and their versions,
//! committed outputs, and witnessed sources (`Scheduler::snapshot`).
//!
//! Part of the `scheduler` module. A read here never runs a stage and never
//! answers a waiter; the reads that say so first admit what the caller
//! submitted before (a caller reads its own writes), which takes the DAG
//! lock for that admission only.

use super::*;
use crate::output::StageOutput;
use crate::witness::SourceWitness;

/// Reads of what a scheduler has published. A view: it holds the scheduler
/// borrowed, and each method reads as of its call.
#[derive(Clone, Copy)]
pub struct Snapshot<'a, E: StageExecutor> {
    scheduler: &'a Scheduler<E>,
}

impl<E: StageExecutor> Scheduler<E> {
    /// Reads of what this scheduler has published (see [`Snapshot`]).
    pub fn snapshot(&self) -> Snapshot<'_, E> {
        Snapshot { scheduler: self }
    }
}

impl<E: StageExecutor> Snapshot<'_, E> {
    /// The newest source text of `path` the source root holds, if present
    /// (after admitting what the caller submitted before).
    pub fn try_get_source(&self, path: &str) -> Option<SourceText> {
        let canonical = self.scheduler.canonicalize(path).ok()?;
        self.scheduler.admit_everything_sent();
        self.scheduler
            .source_root
            .state_now(canonical)
            .payload()
            .cloned()
    }

    /// A root that reads every file's source as of now, for as long as it
    /// lives (a retention lease); it sees everything the caller submitted
    /// before.
    pub fn capture_root(&self) -> SchedulerSourceRoot {
        self.scheduler.admit_everything_sent();
        self.scheduler.source_root.capture_root()
    }

    /// The source text of `path` as of `root`, if present then.
    pub fn try_get_source_at(&self, root: &SchedulerSourceRoot, path: &str) -> Option<SourceText> {
        let canonical = self.scheduler.canonicalize(path).ok()?;
        self.scheduler
            .source_root
            .state_at(root, canonical)
            .payload()
            .cloned()
    }

    /// The full state of `path` as of `root`: unknown, absent, pending or
    /// present.
    pub fn source_state_at(
        &self,
        root: &SchedulerSourceRoot,
        canonical: &Canonical,
    ) -> SourceState<SourceText> {
        self.scheduler.source_root.state_at(root, canonical)
    }

    /// The committed output of each `(canonical, stage)`, read without the
    /// DAG lock and without a handle: the output the live object committed
    /// for its current generation, or `None` — not committed yet, no such
    /// file, or a write sent earlier (by any thread) still waits for
    /// admission (then every item is `None`, so the caller never misses a
    /// write sent before; submit requests for the `None`s).
    ///
    /// The read path of a host that re-asks for what is built: no
    /// canonicalisation (the caller names files by canonical), no answer
    /// slot, no inbox; it allocates the result vector only. An answer is as
    /// current as a request answered at submission would be.
    pub fn committed_outputs<'a>(
        &self,
        items: impl IntoIterator<Item = (&'a Canonical, TargetStage)>,
    ) -> Vec<Option<StageOutput<E>>> {
        let items = items.into_iter();
        let mut outputs = Vec::with_capacity(items.size_hint().0);
        // Acquire, once: when no write waits, every write sent before the
        // call has been admitted and its effects are visible.
        let settled = !self.scheduler.inbox.writes_waiting();
        let mut answered = 0;
        for (canonical, stage) in items {
            let output = settled
                .then(|| self.scheduler.nodes.get(canonical))
                .flatten()
                .filter(|node| !node.is_retired())
                .and_then(|node| node.committed(stage));
            answered += u64::from(output.is_some());
            outputs.push(output);
        }
        self.scheduler
            .counters
            .answered_without_admission
            .fetch_add(answered, Ordering::Relaxed);
        outputs
    }

    /// The published node of `canonical`, if any (after admitting what the
    /// caller submitted before).
    pub fn node(&self, canonical: &Canonical) -> Option<Arc<FileNode<E>>> {
        self.scheduler.admit_everything_sent();
        self.scheduler
            .nodes
            .get(canonical)
            .map(|node| Arc::clone(&node))
    }

    /// The published version of `canonical`, if any (after admitting what
    /// the caller submitted before).
    pub fn version_of(&self, canonical: &Canonical) -> Option<SourceVersion> {
        self.scheduler.admit_everything_sent();
        self.scheduler
            .nodes
            .get(canonical)
            .map(|node| node.version())
    }

    /// The text of `path`'s live version, if it is known, with a witness of
    /// the object and generation it belongs to.
    pub fn try_get_witnessed_source(&self, path: &str) -> Option<(SourceText, SourceWitness)> {
        let canonical = self.scheduler.canonicalize(path).ok()?;
        self.scheduler.transact(|locked, post| {
            self.scheduler.admit_sent(locked, post);
            let live = locked.dag.live_file(&canonical)?;
            let known = locked.dag.payload(&canonical)?.text.as_ref()?;
            (known.text.version == live.version())
                .then(|| (known.text.clone(), SourceWitness { file: live }))
        })
    }

    /// The text `witness` was minted with, if its object is still live at
    /// that generation (the host's publication fence gets the same answer as
    /// [`Scheduler::commit_artifact`] would).
    pub fn try_get_source_for_witness(&self, witness: &SourceWitness) -> Option<SourceText> {
        self.scheduler.transact(|locked, post| {
            self.scheduler.admit_sent(locked, post);
            if !locked.dag.is_live(&witness.file) {
                return None;
            }
            let known = locked.dag.payload(&witness.file.canonical)?.text.as_ref()?;
            (known.text.version == witness.version()).then(|| known.text.clone())
        })
    }
}
