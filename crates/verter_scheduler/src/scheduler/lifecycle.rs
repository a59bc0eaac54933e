//! `Scheduler`: Lifecycle: invalidate, close, remove and reset, each one lock hold that first admits what is pending.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;

use crate::cutoff::Priors;

/// What [`Scheduler::invalidate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Invalidation {
    /// The loader's bytes are the text the scheduler already had: nothing
    /// changed, nothing will run (early cutoff at the door).
    Unchanged,
    /// A new generation: the file's stages run again for whoever asks (or
    /// waits), each cut off if its output turns out unchanged.
    Changed,
    /// The scheduler does not track the path: nothing to do.
    Untracked,
}

/// When an invalidation reads the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Now, on the calling thread, with the cutoff at the door.
    Now,
    /// Now, without the cutoff at the door ([`Scheduler::invalidate_always`]).
    NowWithoutDoor,
    /// Later, on the I/O pool, by the file's Source
    /// ([`Scheduler::mark_changed`]).
    Later,
}

impl<E: StageExecutor> Scheduler<E> {
    /// The file may have changed on disk: reads it through the loader now,
    /// on the calling thread, outside the lock. Bytes equal to the text
    /// already known for the file's live version change nothing
    /// ([`Invalidation::Unchanged`]: no new generation, no stage run, every
    /// answer kept; docs/design.md, "Early cutoff"). Anything else bumps
    /// the generation: the loaded bytes become the new version's text at
    /// once (its Source needs no second load), or, when the read failed,
    /// the file reads `Pending` in the source root until its Source loads
    /// it again. Waiters without text follow to the new generation (their
    /// work is re-admitted); waiters that carried text are answered
    /// `Superseded`. Everything the caller submitted before is admitted
    /// first.
    ///
    /// A path is tracked while the scheduler has a live object for it: a
    /// file a request or an upsert named, or one the scheduler took in
    /// itself — a dependency a parse named, or a removed blocker an
    /// importer needs again — whether its load succeeded or failed. A
    /// failed load is an answer like an output: a file missing when it was
    /// loaded answers `SourceMissing` (and its importers
    /// `DependencyFailed`) until it is invalidated, also after it is back
    /// on disk; invalidating it reads it again. This is how a host says a
    /// file it removed is back ([`Invalidation::Changed`] when the scheduler
    /// had taken it in again for an importer). A path the scheduler does
    /// not track is ignored ([`Invalidation::Untracked`]): a request for it
    /// reads the loader anyway.
    ///
    /// A host that must not block on the disk here (an async task, a
    /// watcher thread) calls [`Self::mark_changed`] instead.
    pub fn invalidate(&self, path: &str) -> Result<Invalidation, RequestError> {
        self.invalidate_with(path, Read::Now)
    }

    /// [`Self::invalidate`] without any file I/O on the calling thread: for
    /// an async host, or a watcher thread that must not block on the disk.
    /// A tracked file gets a new generation whose text is pending (the
    /// source root reads `Pending`); its Source loads it on the I/O pool
    /// when someone asks or waits, as for a file whose read failed. There
    /// is no cutoff at the door (nothing was read to compare), so the
    /// answer is [`Invalidation::Changed`] or [`Invalidation::Untracked`];
    /// a text that turns out unchanged parses the same and is cut off
    /// there (`StageExecutor::same_source`): the file's Analysis and
    /// Artifacts are verified, not run. Canonicalising `path` still asks
    /// the loader's `realpath` on this thread; a host that passes canonical
    /// paths (the loader's default `realpath`) does no I/O at all.
    pub fn mark_changed(&self, path: &str) -> Result<Invalidation, RequestError> {
        self.invalidate_with(path, Read::Later)
    }

    /// [`Self::invalidate`] without the cutoff at the door: a new
    /// generation even when the loader's bytes are the text already known.
    /// For a host whose stages read state outside the file that changed
    /// (a module table, say): every stage of the file runs again, each
    /// still cut off if its output is unchanged. Returns
    /// [`Invalidation::Changed`] or [`Invalidation::Untracked`].
    pub fn invalidate_always(&self, path: &str) -> Result<Invalidation, RequestError> {
        self.invalidate_with(path, Read::NowWithoutDoor)
    }

    /// [`Self::invalidate`], reading as `read` says.
    fn invalidate_with(&self, path: &str, read: Read) -> Result<Invalidation, RequestError> {
        let canonical = self.canonicalize(path)?;
        let door = read == Read::Now;
        // A tracked file is read before the hold (an untracked one is
        // ignored, so it is not read at all), unless the read is left to
        // its Source.
        let published = (read != Read::Later)
            .then(|| self.nodes.get(&canonical).map(|node| Arc::clone(&node)))
            .flatten();
        let loaded = published.as_deref().and_then(|node| {
            let (text, hash) = self.load_now(&canonical)?;
            Some((super::submission::door_text(Some(node), text, hash), hash))
        });
        self.transact(|locked, post| {
            self.admit_sent(locked, post);
            let Some(node) = locked
                .dag
                .payload(&canonical)
                .map(|slot| Arc::clone(&slot.node))
            else {
                return Ok(Invalidation::Untracked);
            };
            let before = locked
                .dag
                .live_file(&canonical)
                .expect("the node is published, so its object is live");
            if door
                && let Some((text, hash)) = &loaded
                && self.same_text_at_the_door(locked, &before, *hash, text)
            {
                return Ok(Invalidation::Unchanged);
            }
            match locked
                .dag
                .advance_generation(&canonical, node.incarnation())
            {
                Ok((live, effects)) => {
                    let known = loaded.is_some();
                    let source = loaded.map(|(text, hash)| SourceText {
                        canonical,
                        version: live.version(),
                        text,
                        hash,
                    });
                    // The node was read from this slot above, in this hold.
                    let mut slot = locked.dag.payload_mut(&canonical);
                    let (replaced, epoch) = self.source_root.publish_transition(|tx| {
                        match &source {
                            Some(source) => present(tx, source),
                            None => tx.pending(canonical, live.version()),
                        }
                        let replaced = slot
                            .as_deref_mut()
                            .map(|slot| node.reset_view(&mut slot.view, live.generation));
                        (replaced, tx.epoch())
                    });
                    post.act(|| HostAction::Invalidated {
                        file: live,
                        epoch: epoch.get(),
                    });
                    if let Some(slot) = slot {
                        // What the old generation served is what the new
                        // one's stages are verified against.
                        if let Some(replaced) = &replaced {
                            Priors::keep_view(&mut slot.priors, replaced, post);
                        }
                        slot.text = source.map(|text| KnownText {
                            text,
                            published: true,
                            from_loader: true,
                        });
                    }
                    if let Some(replaced) = replaced {
                        post.discard_view(replaced);
                    }
                    if known {
                        // Its Source needs no load: it starts on the CPU
                        // budget.
                        locked.dag.note_text_known(&live);
                    }
                    self.absorb(locked, effects, post);
                    Ok(Invalidation::Changed)
                }
                Err(ObjectError::Exhausted(_)) => {
                    Err(RequestError::GenerationExhausted { path: canonical })
                }
                Err(other) => unreachable!("the published node's object is live: {other}"),
            }
        })
    }

    /// Reads `canonical` through the loader on the calling thread, with its
    /// hash: `None` when the read fails or panics (the file's Source then
    /// loads it, and reports the failure, as if it had not been read).
    fn load_now(&self, canonical: &Canonical) -> Option<(Arc<str>, ContentHash)> {
        if self.is_shut_down() {
            return None;
        }
        self.counters.loads.fetch_add(1, Ordering::Relaxed);
        match catch_unwind(AssertUnwindSafe(|| self.loader.load(canonical))) {
            Ok(Ok(text)) => {
                let hash = content_hash(&text);
                Some((text, hash))
            }
            Ok(Err(_)) => None,
            Err(_) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Removes the file: its waiters are answered `Shutdown`, its work is
    /// cancelled, the node is unpublished and the source root records it
    /// `Absent` — in one lock hold, the node map and the source root in one
    /// transition. Files whose Artifacts wait on it keep depending on it:
    /// the next build of one asks the loader for it again (a successor
    /// object, new incarnation, generation 0, which the scheduler then
    /// tracks) and fails with `DependencyFailed` if it has none. That
    /// answer stands, as every answer does, until the host says the file
    /// changed: once it is back on disk, [`Self::invalidate`] it (or upsert
    /// it), and the importers' next builds read it. A later request for the
    /// file itself finds that successor, or, if no importer made one,
    /// creates one and reads the loader. Unknown paths are ignored.
    /// Everything the caller submitted before is admitted first.
    pub fn remove(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        // The retired node leaves the hold with the caller: its outputs are
        // the host's values, dropped after the lock.
        let _retired = self.transact(|locked, post| {
            self.admit_sent(locked, post);
            let node = locked
                .dag
                .payload(&canonical)
                .map(|slot| Arc::clone(&slot.node))?;
            let version = node.version();
            post.act(|| HostAction::Removed { path: canonical });
            let effects = locked.dag.remove_object(&canonical);
            // The slot (this node and its text) leaves with the node map's
            // entry, in the same hold.
            let mut slot = locked.dag.take_payload(&canonical);
            // What a parse named it as outlives the node: an importer may
            // need the file again.
            if let Some(language) = slot.as_mut().and_then(|slot| slot.named_language.take()) {
                locked.languages.insert(canonical, language);
            }
            self.source_root.publish_transition(|tx| {
                self.nodes.remove(&canonical);
                node.retire();
                tx.absent(canonical, version);
            });
            self.absorb(locked, effects, post);
            Some((node, slot))
        });
        Ok(())
    }

    /// Removes every file at once (one source-root epoch, with the node map
    /// cleared inside it): every waiter is answered `Shutdown`, work in
    /// flight is cancelled and refused when it returns. Then the source
    /// root forgets every file no live root reads, so each reads `Unknown`
    /// as in a new scheduler (a root captured before keeps reading what it
    /// read), and the DAG's, the node map's and the source root's backing
    /// storage is released. Everything submitted before is admitted first
    /// (and so shut down).
    ///
    /// Once it returns, no executor or loader call for work it cancelled
    /// starts, and none is still running: it waits for the stages that
    /// were running (each sees its cancelled token and may return early;
    /// one that ignores it is waited for). A waiting stage thread or
    /// inline caller runs other work meanwhile. The one exception is a
    /// reset called from inside a stage (an executor or a loader, or a hook
    /// it calls): it returns without waiting, since the stages on its own
    /// stack end only after it returns, and stages that waited for each
    /// other's end would wait forever.
    /// (`remove`, an edit and a cancelled DAG do not wait: their running
    /// stages may finish after the call returns, and are refused.)
    pub fn reset(&self) {
        if self.is_shut_down() {
            return;
        }
        // The retired nodes leave the hold with the caller: their outputs
        // are the host's values, dropped after the lock.
        let (retired, running) = self.transact(|locked, post| {
            self.admit_sent(locked, post);
            post.act(|| HostAction::Reset);
            // What runs now, before anything forgets it: what this hold
            // cancels and the call then waits for.
            let running = locked.dag.running_tokens();
            // Host DAGs are answered whole (their unanswered nodes
            // `Cancelled`) and their cache flights cancelled, before the
            // DAG forgets every work node. A fresh scheduler has no cache
            // memos either.
            locked.dags.forget_memos(None);
            self.cancel_all_dags(locked, post);
            // The DAG's tables, with the files' slots (nodes and texts),
            // leave whole with the node map's entries: one move, no walk
            // of a DAG where nothing waits or runs.
            let (effects, tables) = locked.dag.dismantle();
            let nodes = self.forget_every_file(locked, []);
            self.absorb(locked, effects, post);
            debug_assert!(locked.waiters.is_empty(), "reset answers every waiter");
            ((nodes, tables), running)
        });
        drop(retired);
        self.await_runs(running);
    }

    /// After a reset's hold, which cancelled every token of `running`:
    /// waits until no run of that work is in progress (docs/design.md,
    /// "Reset"). A reset called from inside a stage (this thread runs a job,
    /// or one of the runs is its own) does not wait: its own runs end only
    /// after it returns, and a stage that waited for other stages could
    /// wait for one that waits for it. Wakes on the progress signal, which
    /// a run cancelled while it lasted raises as it ends; a thread that
    /// drives while it waits (a stage thread, an inline caller) pumps
    /// meanwhile, since what those runs wait for may be work only it can
    /// run.
    pub(super) fn await_runs(&self, mut running: Vec<CancellationToken>) {
        let me = crate::exec::this_runner();
        if crate::exec::in_job() || running.iter().any(|token| token.runner() == Some(me)) {
            return;
        }
        let elsewhere = |token: &CancellationToken| token.runner().is_some();
        running.retain(elsewhere);
        if running.is_empty() {
            return;
        }
        let drives = self.is_inline() || CallerKind::current().drives_while_waiting();
        loop {
            // Read before the check: a run that ends after it raises the
            // signal past `seen`, so the park returns.
            let seen = self.progress.epoch();
            running.retain(elsewhere);
            if running.is_empty() {
                return;
            }
            if drives && self.pump_pass() {
                continue;
            }
            self.progress.park(seen, self.config.wait_backstop);
        }
    }

    /// Under the lock: what `reset` and a recovered hold
    /// (`Scheduler::recover_hold`) both do to what was published. Every
    /// node of the node map, and each of `also` (the nodes a broken hold
    /// may have left out of it), is retired and recorded `Absent`, in one
    /// source-root transition that also clears the node map. Then, as in a
    /// new scheduler, the source root forgets every file no live root
    /// reads (it reads `Unknown`, not `Absent`), the tables' memory is
    /// given back, and the languages of removed files are forgotten.
    /// Returns the retired nodes: they hold the host's outputs, so they
    /// leave the hold with the caller.
    pub(crate) fn forget_every_file(
        &self,
        locked: &mut Locked<E>,
        also: impl IntoIterator<Item = Arc<FileNode<E>>>,
    ) -> Vec<Arc<FileNode<E>>> {
        let nodes = self.source_root.publish_transition(|tx| {
            let mut nodes: Vec<Arc<FileNode<E>>> = self
                .nodes
                .iter()
                .map(|entry| Arc::clone(entry.value()))
                .collect();
            self.nodes.clear();
            for node in &nodes {
                node.retire();
                tx.absent(*node.canonical(), node.version());
            }
            // A node left out of the map is recorded too, unless the map
            // had one of its file: one record per file.
            let mut recorded: Option<std::collections::HashSet<Canonical>> = None;
            for node in also {
                node.retire();
                let recorded = recorded
                    .get_or_insert_with(|| nodes.iter().map(|node| *node.canonical()).collect());
                if recorded.insert(*node.canonical()) {
                    tx.absent(*node.canonical(), node.version());
                }
                nodes.push(node);
            }
            nodes
        });
        self.source_root.forget_removed();
        self.nodes.shrink_to_fit();
        locked.languages = HashMap::default();
        nodes
    }

    /// Under the lock, in a recovered hold whose [`Self::forget_every_file`]
    /// broke too (the source root could not be read): the node map is
    /// emptied, so no reader finds a node of the broken state.
    pub(crate) fn clear_node_map(&self) {
        self.nodes.clear();
    }
}
