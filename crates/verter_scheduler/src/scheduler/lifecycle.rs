//! `Scheduler`: Lifecycle: invalidate, close, remove and reset, each one lock hold that first admits what is pending.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;

impl<E: StageExecutor> Scheduler<E> {
    /// Drops the file's current text and bumps its generation, so its next
    /// request reloads it through the loader; the source root stops serving
    /// the old text at once (the file reads `Pending` until the reload).
    /// Waiters without text follow to the new generation (their work is
    /// re-admitted); waiters that carried text are answered `Superseded`.
    /// Unknown paths are ignored. Everything the caller submitted before is
    /// admitted first.
    pub fn invalidate(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        self.transact(|locked, post| {
            self.admit_sent(locked, post);
            let Some(node) = locked
                .dag
                .payload(&canonical)
                .map(|slot| Arc::clone(&slot.node))
            else {
                return Ok(());
            };
            match locked
                .dag
                .advance_generation(&canonical, node.incarnation())
            {
                Ok((live, effects)) => {
                    if let Some(slot) = locked.dag.payload_mut(&canonical) {
                        slot.text = None;
                    }
                    let replaced = self.source_root.publish_transition(|tx| {
                        tx.pending(canonical, live.version());
                        node.reset_view(live.generation)
                    });
                    post.discard_view(replaced);
                    self.absorb(locked, effects, post);
                    Ok(())
                }
                Err(ObjectError::Exhausted(_)) => {
                    Err(RequestError::GenerationExhausted { path: canonical })
                }
                Err(other) => unreachable!("the published node's object is live: {other}"),
            }
        })
    }

    /// Closes an editor's overlay: the file reverts to the loader's bytes.
    /// The same transition as [`Self::invalidate`].
    pub fn close_file(&self, path: &str) -> Result<(), RequestError> {
        self.invalidate(path)
    }

    /// Removes the file: its waiters are answered `Shutdown`, its work is
    /// cancelled, the node is unpublished and the source root records it
    /// `Absent` — in one lock hold, the node map and the source root in one
    /// transition. Files whose Artifacts wait on it keep depending on it:
    /// they ask the loader for it again (a successor object) and fail with
    /// `DependencyFailed` if it has none. A later request creates a
    /// successor (new incarnation, generation 0). Unknown paths are ignored.
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
    pub fn reset(&self) {
        // The retired nodes leave the hold with the caller: their outputs
        // are the host's values, dropped after the lock.
        let _retired = self.transact(|locked, post| {
            self.admit_sent(locked, post);
            // The slots (nodes and texts) leave with the node map's entries.
            let slots = locked.dag.take_payloads();
            let effects = locked.dag.reset();
            let nodes = self.source_root.publish_transition(|tx| {
                let nodes: Vec<Arc<FileNode<E>>> = self
                    .nodes
                    .iter()
                    .map(|entry| Arc::clone(entry.value()))
                    .collect();
                self.nodes.clear();
                for node in &nodes {
                    node.retire();
                    tx.absent(*node.canonical(), node.version());
                }
                nodes
            });
            // As a new scheduler: every file no live root reads is forgotten
            // (it reads `Unknown`, not `Absent`), and the tables' memory is
            // given back.
            self.source_root.forget_removed();
            self.nodes.shrink_to_fit();
            locked.languages = HashMap::default();
            self.absorb(locked, effects, post);
            debug_assert!(locked.waiters.is_empty(), "reset answers every waiter");
            (nodes, slots)
        });
    }
}
