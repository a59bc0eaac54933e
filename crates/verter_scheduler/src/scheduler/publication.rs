//! `Scheduler`: publication under the lock: the one place a file's node
//! enters the node map and the DAG record's slot together (`publish`), a
//! re-homed file's replacement node, and the source-root transitions
//! admission records through (`Publish`).
//!
//! Part of the `scheduler` module, which owns the DAG lock. Everything here
//! runs inside a hold; nothing here answers a waiter, calls the loader or
//! fires a hook: what it produces leaves as post-work.

use super::*;

use verter_source_root::{SchedulerSourceDirectory, SourceTransition};

use crate::state::FileSlot;

/// Where an admission records its source-root changes: a transition of its
/// own, or the one transition of the atomic batch it belongs to (so a root
/// captured meanwhile reads the whole batch or none of it).
pub(super) enum Publish<'a, 't> {
    /// One transition per change, as the change is made.
    Own,
    /// The batch's transition, open for the whole batch.
    Batch(&'a mut SourceTransition<'t, SourceText>),
}

impl Publish<'_, '_> {
    /// Records `f`'s changes: in a transition of their own, or in the
    /// batch's.
    pub(super) fn record(
        &mut self,
        root: &SchedulerSourceDirectory<SourceText>,
        f: impl FnOnce(&mut SourceTransition<'_, SourceText>),
    ) {
        match self {
            Self::Own => root.publish_transition(f),
            Self::Batch(tx) => f(tx),
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// Under the lock: publishes a node for `object`, a new object of
    /// `canonical` (creating a node publishes nothing to the source root).
    pub(crate) fn publish_node(
        &self,
        locked: &mut Locked<E>,
        canonical: &Canonical,
        object: ObjectRecord,
        language: Language,
    ) -> Arc<FileNode<E>> {
        let node = Arc::new(FileNode::new(
            *canonical,
            object.incarnation,
            object.lifetime,
            language,
            object.generation,
        ));
        self.publish(locked, canonical, &node);
        node
    }

    /// Under the lock: publishes `node` as `canonical`'s, in the node map
    /// and in the file's slot of the DAG record: the one place both are
    /// set for a new object.
    pub(super) fn publish(
        &self,
        locked: &mut Locked<E>,
        canonical: &Canonical,
        node: &Arc<FileNode<E>>,
    ) {
        self.nodes.insert(*canonical, Arc::clone(node));
        let slot = FileSlot {
            node: Arc::clone(node),
            view: node.current_view(),
            text: None,
            priors: None,
            // A removed file's named language comes back with its node.
            named_language: if locked.languages.is_empty() {
                None
            } else {
                locked.languages.remove(canonical)
            },
        };
        match locked.dag.set_payload(canonical, slot) {
            Ok(previous) => {
                debug_assert!(previous.is_none(), "{canonical}'s slot outlived its object")
            }
            Err(_) => unreachable!("a node is published for a live object"),
        }
    }

    /// Under the lock: [`Self::publish_node`] with the node its request's
    /// preparation built ([`Fresh`]), bound to `object`: no allocation.
    pub(super) fn publish_fresh(
        &self,
        locked: &mut Locked<E>,
        canonical: &Canonical,
        object: ObjectRecord,
        mut node: Arc<FileNode<E>>,
    ) -> Arc<FileNode<E>> {
        debug_assert_eq!(object.generation, Generation::ZERO);
        Arc::get_mut(&mut node)
            .expect("a prepared node is not shared before admission")
            .bind(object.incarnation, object.lifetime);
        self.publish(locked, canonical, &node);
        node
    }

    /// Under the lock: replaces `node` with a new object of the same lifetime
    /// processed as `language`; its waiters follow the replacement. The
    /// swap of nodes and the source root's record of the new version are
    /// one transition.
    pub(super) fn rehome(
        &self,
        locked: &mut Locked<E>,
        node: &Arc<FileNode<E>>,
        language: Language,
        post: &mut PostWork<E>,
        publish: &mut Publish<'_, '_>,
    ) -> Arc<FileNode<E>> {
        let canonical = *node.canonical();
        let (live, effects) = locked
            .dag
            .rehome_object(&canonical, node.incarnation())
            .expect("the node is published, so its object is live");
        post.act(|| HostAction::Rehomed { file: live });
        let replacement = Arc::new(FileNode::new(
            canonical,
            live.incarnation,
            node.lifetime(),
            language,
            live.generation,
        ));
        // The replacement starts from the same text, if it was known.
        let known = locked
            .dag
            .payload_mut(&canonical)
            .and_then(|slot| slot.text.take())
            .map(|known| {
                let text = SourceText {
                    version: live.version(),
                    ..known.text.clone()
                };
                (text, known.from_loader)
            });
        publish.record(&self.source_root, |tx| {
            node.retire();
            self.nodes.insert(canonical, Arc::clone(&replacement));
            match &known {
                Some((source, _)) => present(tx, source),
                None => tx.pending(canonical, live.version()),
            }
        });
        // The slot follows the node map: the replacement, with the text.
        if let Some(slot) = locked.dag.payload_mut(&canonical) {
            slot.view = replacement.current_view();
            slot.node = Arc::clone(&replacement);
            slot.text = known.map(|(source, from_loader)| KnownText {
                text: source,
                published: true,
                from_loader,
            });
            // Another object: nothing it built is an earlier output of the
            // replacement's stages.
            crate::cutoff::Priors::clear(&mut slot.priors, post);
        }
        self.absorb(locked, effects, post);
        replacement
    }

    /// Under the lock: records `source` (a loaded text) as present, in a
    /// transition of its own.
    pub(crate) fn publish_present(&self, source: &SourceText) {
        self.source_root
            .publish_transition(|tx| present(tx, source));
    }
}
