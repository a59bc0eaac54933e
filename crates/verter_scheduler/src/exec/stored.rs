//! A stage's output from the output store, or into it (docs/design.md,
//! "Persistent outputs"): on the worker that runs the stage, outside the
//! lock, after the stage was found neither stale nor verifiable and before
//! the executor would be called.
//!
//! Part of the `exec` module. The key scheme, the Source envelope and the
//! writer are `crate::persist`'s; this module only reads and writes through
//! them, with the executor's codec inside a panic boundary (a codec that
//! panics is a miss, or an output not stored).

use super::*;
use crate::persist::Persist;
use crate::remote_work::Answer;
use verter_store::{Digest, StoreKey};

impl<E: StageExecutor> Scheduler<E> {
    /// A stage's answer: the output stored under `persist`'s key, if one
    /// decodes; else `run`'s (which calls the executor), stored under that
    /// key when it is an output the executor encodes. Also the digest of
    /// the output's stored bytes, and whether it came from the store. (A
    /// caller names the output to later keys by that digest with its key:
    /// `Persist::output_digest`, `Persist::source_input_digest`.)
    ///
    /// An output of work cancelled by the time its run returned is not
    /// stored: the executor may have stopped early and answered what it
    /// had (cancellation only ever goes one way, so a run that saw its
    /// token cancelled returns with it cancelled).
    pub(super) fn stored_or_run<T>(
        &self,
        path: &Canonical,
        cancel: &CancellationToken,
        persist: Option<(&Persist, StoreKey)>,
        decode: impl FnOnce(&[u8]) -> Option<T>,
        run: impl FnOnce() -> Answer<T>,
        encode: impl FnOnce(&T, &mut Vec<u8>) -> bool,
    ) -> (Answer<T>, Option<Digest>, bool) {
        let stored = persist.and_then(|(persist, key)| self.read_stored(persist, &key, decode));
        if let Some((output, digest)) = stored {
            return (Ok(Ok(output)), Some(digest), true);
        }
        let answer = run();
        let digest = match (&answer, persist) {
            (Ok(Ok(output)), Some((persist, key))) if !cancel.is_cancelled() => {
                self.write_stored(persist, key, path, output, encode)
            }
            _ => None,
        };
        (answer, digest, false)
    }

    /// The output stored under `key`, decoded by `decode` (host code, in a
    /// panic boundary), with the digest of its bytes; `None` when the
    /// store has nothing there, fails, holds bytes changed since they were
    /// stored, or the host refuses them.
    /// A hit counts in `SchedulerCounters::from_store`.
    pub(super) fn read_stored<T>(
        &self,
        persist: &Persist,
        key: &StoreKey,
        decode: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Option<(T, Digest)> {
        let entry = persist.get(key)?;
        match catch_unwind(AssertUnwindSafe(|| decode(&entry.value))) {
            Ok(Some(value)) => {
                persist.counters.hits.fetch_add(1, Ordering::Relaxed);
                Some((value, entry.digest))
            }
            // The host refused the bytes (they do not decode, or its
            // parse would come out otherwise now): a miss like any other.
            // A panic in its decoder is one too.
            _ => None,
        }
    }

    /// Encodes `output` with `encode` (host code, in a panic boundary) and
    /// queues it for the store under `key`; the digest of its bytes, or
    /// `None` when the executor keeps this output out of the store.
    pub(super) fn write_stored<T>(
        &self,
        persist: &Persist,
        key: StoreKey,
        path: &Canonical,
        output: &T,
        encode: impl FnOnce(&T, &mut Vec<u8>) -> bool,
    ) -> Option<Digest> {
        let mut bytes = Vec::new();
        match catch_unwind(AssertUnwindSafe(|| encode(output, &mut bytes))) {
            Ok(true) => Some(persist.put(key, bytes, path)),
            _ => None,
        }
    }

    /// The store and the key of the Artifact `input` describes, or `None`
    /// without a store or when one of its inputs has no stored digest
    /// (then neither does the artifact: it is run, and not stored).
    pub(super) fn artifact_store(
        &self,
        input: &ArtifactInput<'_, E::Analysis, E::Artifact>,
    ) -> Option<(&Persist, StoreKey)> {
        let persist = self.persist.as_ref()?;
        let analysis = input.analysis.stored_digest()?;
        let all_stored = input.blockers.iter().all(|b| b.stored_digest().is_some())
            && input
                .dependencies
                .iter()
                .all(|d| d.stored_digest().is_some());
        if !all_stored {
            return None;
        }
        let key = persist.artifact_key(
            &input.analysis.canonical,
            input.profile,
            analysis,
            input
                .blockers
                .iter()
                .filter_map(|b| Some((&b.canonical, b.stored_digest()?))),
            input
                .dependencies
                .iter()
                .filter_map(|d| Some((&d.canonical, d.stored_digest()?))),
        );
        Some((persist, key))
    }

    /// What names a stored output to the keys built on it
    /// ([`Persist::output_digest`]), for the stage keyed by `persist`.
    pub(super) fn output_digest(
        persist: Option<(&Persist, StoreKey)>,
        stored: Option<Digest>,
    ) -> Option<Digest> {
        let (persist, key) = persist?;
        Some(persist.output_digest(&key, &stored?))
    }
}
