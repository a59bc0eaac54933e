//! Persistent outputs (docs/design.md, "Persistent outputs"): a scheduler
//! given an [`OutputStore`] answers a stage from it when the store holds the
//! output of the same stage computed from the same inputs, and writes what
//! its stages compute for the next scheduler opened on that store.
//!
//! This module owns the key scheme (what a key covers: a verifying trace of
//! digests), the Source envelope (the parse's declared dependencies beside
//! the host's bytes), and the writer thread that batches writes. It never
//! takes the DAG lock and is never called under it: every read and every
//! send to the writer happens on the worker that runs the stage, before its
//! completion hold. A store that fails never fails a request: a failed read
//! is a miss, a failed write is dropped, each reported once
//! ([`tracing::warn`]) and counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use sha2::{Digest as _, Sha256};
use verter_dag::{Canonical, ProfileHash};
use verter_store::{Digest, Entry, OutputStore, StoreKey};

use crate::language::Language;
use crate::traits::{DepPath, SourceDeps};

/// The format of keys and of the Source envelope: a change to either makes
/// every stored entry a miss, never a misread.
const SCHEME: &[u8] = b"verter-persist/1";

/// At most this many entries go to the store in one transaction.
const MAX_BATCH: usize = 512;

/// How a scheduler persists its outputs ([`crate::SchedulerConfig::store`]).
///
/// Every key the scheduler derives covers `version`: outputs written by an
/// executor that declared another version are never read (a new version
/// of a host's stages makes every stored output a miss, not a stale hit).
#[derive(Clone)]
pub struct OutputStoreConfig {
    /// Where outputs are read from and written to.
    pub store: Arc<dyn OutputStore>,
    /// The executor's declared version: change it whenever what a stage
    /// computes from the same inputs changes (a new release of the host's
    /// stages, another build option that outputs depend on).
    pub version: String,
}

impl OutputStoreConfig {
    /// Outputs of an executor of `version`, kept in `store`.
    pub fn new(store: Arc<dyn OutputStore>, version: impl Into<String>) -> Self {
        Self {
            store,
            version: version.into(),
        }
    }
}

impl std::fmt::Debug for OutputStoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputStoreConfig")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// What a scheduler's store did, counted outside the lock.
#[derive(Default)]
pub(crate) struct PersistCounters {
    /// Stages answered from the store (the executor not called).
    pub(crate) hits: AtomicU64,
    /// Entries written.
    pub(crate) written: AtomicU64,
    /// Reads and writes that failed, and stored entries that did not
    /// decode.
    pub(crate) errors: AtomicU64,
}

/// A scheduler's store, its key namespace and its writer thread.
pub(crate) struct Persist {
    /// `None` once closed ([`Self::close`]): reads miss from then on.
    store: RwLock<Option<Arc<dyn OutputStore>>>,
    /// SHA-256 of the scheme and the executor's version: the first input
    /// of every key.
    namespace: [u8; 32],
    writer: Mutex<Option<Writer>>,
    pub(crate) counters: Arc<PersistCounters>,
    /// Whether a failure was reported already (one warning per scheduler).
    warned: Arc<AtomicBool>,
}

struct Writer {
    sender: Sender<Message>,
    thread: JoinHandle<()>,
}

enum Message {
    Put(StoreKey, Entry),
    /// Answered once everything sent before it is written (or dropped).
    Flush(Sender<()>),
}

impl Persist {
    /// Opens `config`'s store with a writer thread (`threaded`), or, for an
    /// inline scheduler, with none: every write then happens where its
    /// stage ran, before that stage's completion, so an inline run reads
    /// the store the same way every time it is replayed (a writer thread
    /// would make whether a later stage finds an entry depend on timing).
    pub(crate) fn start(config: &OutputStoreConfig, threaded: bool) -> std::io::Result<Self> {
        let mut hasher = Sha256::new();
        field(&mut hasher, SCHEME);
        field(&mut hasher, config.version.as_bytes());
        let namespace: [u8; 32] = hasher.finalize().into();
        let counters = Arc::new(PersistCounters::default());
        let warned = Arc::new(AtomicBool::new(false));
        if !threaded {
            return Ok(Self {
                store: RwLock::new(Some(Arc::clone(&config.store))),
                namespace,
                writer: Mutex::new(None),
                counters,
                warned,
            });
        }
        let (sender, receiver) = crossbeam_channel::unbounded();
        let thread = {
            let store = Arc::clone(&config.store);
            let counters = Arc::clone(&counters);
            let warned = Arc::clone(&warned);
            std::thread::Builder::new()
                .name("verter-store".into())
                .spawn(move || write_loop(&*store, &receiver, &counters, &warned))?
        };
        Ok(Self {
            store: RwLock::new(Some(Arc::clone(&config.store))),
            namespace,
            writer: Mutex::new(Some(Writer { sender, thread })),
            counters,
            warned,
        })
    }

    /// The entry under `key`, if the store has one whose bytes still have
    /// the digest they were stored with; a failed read, or bytes changed
    /// under the store, is a miss (reported once).
    pub(crate) fn get(&self, key: &StoreKey) -> Option<Entry> {
        let store = self.store.read();
        match store.as_ref()?.get(key) {
            Ok(Some(entry)) if digest_of(&entry.value) != entry.digest => {
                self.failed(&format_args!(
                    "the entry under {key} changed since it was stored"
                ));
                None
            }
            Ok(entry) => entry,
            Err(error) => {
                self.failed(&format_args!("a read failed: {error}"));
                None
            }
        }
    }

    /// Queues `value` to be stored under `key` (its digest computed here),
    /// and returns that digest. Never blocks on the store.
    pub(crate) fn put(&self, key: StoreKey, value: Vec<u8>, path: &Canonical) -> Digest {
        let digest = digest_of(&value);
        let entry = Entry::new(value, digest, Some(path.as_str().to_owned()));
        match &*self.writer.lock() {
            // The writer lives as long as its sender: a send cannot fail.
            Some(writer) => {
                let _ = writer.sender.send(Message::Put(key, entry));
            }
            // Inline: written here and now (see `start`).
            None => {
                if let Some(store) = &*self.store.read() {
                    write_batch(&**store, &[(key, entry)], &self.counters, &self.warned);
                }
            }
        }
        digest
    }

    /// Waits until every write queued before the call is in the store
    /// (or dropped after a failure), durably (`OutputStore::sync`).
    pub(crate) fn flush(&self) {
        let (done, wait) = crossbeam_channel::bounded(1);
        let sent = match &*self.writer.lock() {
            Some(writer) => writer.sender.send(Message::Flush(done)).is_ok(),
            None => false,
        };
        if sent {
            let _ = wait.recv();
        } else if let Some(store) = &*self.store.read() {
            // Inline: every write is in the store already.
            sync(&**store, &self.counters, &self.warned);
        }
    }

    fn failed(&self, what: &dyn std::fmt::Display) {
        failed(&self.counters, &self.warned, what);
    }

    /// The key of a parse of `text` as `canonical` in `language`.
    pub(crate) fn source_key(
        &self,
        canonical: &Canonical,
        language: &Language,
        text: &str,
    ) -> StoreKey {
        self.key(b"source", |hasher| {
            field(hasher, canonical.as_str().as_bytes());
            field(hasher, language.as_str().as_bytes());
            field(hasher, text.as_bytes());
        })
    }

    /// What an Analysis can read of a Source, as one digest: the parse's
    /// key (so its path, language and text), the digest of its stored
    /// bytes (the parse and the dependencies it declared) and the files
    /// those resolved to. Two Sources with equal digests are the same
    /// input to an Analysis: a parse of equal bytes in another language,
    /// or whose declared paths resolve elsewhere now, is not.
    pub(crate) fn source_input_digest(
        &self,
        key: &StoreKey,
        stored: &Digest,
        resolved: [&[Canonical]; 3],
    ) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(key.as_bytes());
        hasher.update(stored.as_bytes());
        for list in resolved {
            hasher.update((list.len() as u64).to_le_bytes());
            for canonical in list {
                field(&mut hasher, canonical.as_str().as_bytes());
            }
        }
        let bytes: [u8; 32] = hasher.finalize().into();
        Digest::from(bytes)
    }

    /// What names an Analysis' or an Artifact's value to the keys of the
    /// stages built on it: its key (everything it was computed from) with
    /// the digest of its stored bytes. The bytes alone do not name it: a
    /// host may store an output relative to its input (an analysis that is
    /// a view of its parse stores nothing of it), so equal bytes can stand
    /// for different values.
    pub(crate) fn output_digest(&self, key: &StoreKey, stored: &Digest) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(key.as_bytes());
        hasher.update(stored.as_bytes());
        let bytes: [u8; 32] = hasher.finalize().into();
        Digest::from(bytes)
    }

    /// The key of the Analysis of `canonical` built from the Source whose
    /// input digest ([`Self::source_input_digest`]) is `source`.
    pub(crate) fn analysis_key(&self, canonical: &Canonical, source: &Digest) -> StoreKey {
        self.key(b"analysis", |hasher| {
            field(hasher, canonical.as_str().as_bytes());
            field(hasher, source.as_bytes());
        })
    }

    /// The key of the Artifact of `profile` of `canonical` built from the
    /// Analysis of digest `analysis`, its blockers' Analyses and its
    /// dependencies' Artifacts (each a path and a digest, sorted by path as
    /// the executor receives them).
    pub(crate) fn artifact_key<'a>(
        &self,
        canonical: &Canonical,
        profile: ProfileHash,
        analysis: &Digest,
        blockers: impl Iterator<Item = (&'a Canonical, &'a Digest)>,
        dependencies: impl Iterator<Item = (&'a Canonical, &'a Digest)>,
    ) -> StoreKey {
        self.key(b"artifact", |hasher| {
            field(hasher, canonical.as_str().as_bytes());
            hasher.update(profile.0.to_le_bytes());
            field(hasher, analysis.as_bytes());
            for (tag, inputs) in [
                (b"b", blockers.collect::<Vec<_>>()),
                (b"d", dependencies.collect()),
            ] {
                hasher.update(tag);
                hasher.update((inputs.len() as u64).to_le_bytes());
                for (path, digest) in inputs {
                    field(hasher, path.as_str().as_bytes());
                    field(hasher, digest.as_bytes());
                }
            }
        })
    }

    fn key(&self, kind: &[u8], inputs: impl FnOnce(&mut Sha256)) -> StoreKey {
        let mut hasher = Sha256::new();
        hasher.update(self.namespace);
        field(&mut hasher, kind);
        inputs(&mut hasher);
        let bytes: [u8; 32] = hasher.finalize().into();
        StoreKey::from(bytes)
    }
}

impl Persist {
    /// Writes what was queued, joins the writer and lets the store go (a
    /// file store's lock with it, once nothing else holds it): a scheduler
    /// opened on the store afterwards reads everything this one wrote.
    /// Reads miss and writes are dropped from then on. The scheduler's
    /// shutdown and drop call it.
    pub(crate) fn close(&self) {
        let writer = self.writer.lock().take();
        if let Some(writer) = writer {
            drop(writer.sender);
            let _ = writer.thread.join();
        }
        if let Some(store) = self.store.write().take() {
            sync(&*store, &self.counters, &self.warned);
        }
    }
}

impl Drop for Persist {
    fn drop(&mut self) {
        self.close();
    }
}

/// The SHA-256 of `bytes`, as the store and the remote tier name values.
pub(crate) fn digest_of(bytes: &[u8]) -> Digest {
    let bytes: [u8; 32] = Sha256::digest(bytes).into();
    Digest::from(bytes)
}

/// One length-prefixed input of a key: no two sequences of fields hash the
/// same bytes.
fn field(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

fn failed(counters: &PersistCounters, warned: &AtomicBool, what: &dyn std::fmt::Display) {
    counters.errors.fetch_add(1, Ordering::Relaxed);
    if !warned.swap(true, Ordering::Relaxed) {
        tracing::warn!("output store: {what}; recomputing instead (reported once)");
    }
}

/// Writes `batch` in one transaction, counting what was written or the
/// failure.
fn write_batch(
    store: &dyn OutputStore,
    batch: &[(StoreKey, Entry)],
    counters: &PersistCounters,
    warned: &AtomicBool,
) {
    match store.put_batch(batch) {
        Ok(report) => {
            counters
                .written
                .fetch_add(report.written, Ordering::Relaxed);
        }
        Err(error) => failed(counters, warned, &format_args!("a write failed: {error}")),
    }
}

/// Makes what was written durable, counting a failure.
fn sync(store: &dyn OutputStore, counters: &PersistCounters, warned: &AtomicBool) {
    if let Err(error) = store.sync() {
        failed(counters, warned, &format_args!("a sync failed: {error}"));
    }
}

/// The writer thread: takes what is queued, up to [`MAX_BATCH`] entries per
/// transaction, until its sender drops; a flush also syncs.
fn write_loop(
    store: &dyn OutputStore,
    receiver: &Receiver<Message>,
    counters: &PersistCounters,
    warned: &AtomicBool,
) {
    let mut batch = Vec::new();
    let mut flushes = Vec::new();
    while let Ok(first) = receiver.recv() {
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Put(key, entry) => batch.push((key, entry)),
                Message::Flush(done) => flushes.push(done),
            }
            next = match batch.len() < MAX_BATCH {
                true => receiver.try_recv().ok(),
                false => None,
            };
        }
        if !batch.is_empty() {
            write_batch(store, &batch, counters, warned);
            batch.clear();
        }
        if !flushes.is_empty() {
            sync(store, counters, warned);
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

/// The Source's stored form: the host's bytes after the dependencies the
/// parse declared, as it declared them (resolved again when read, as a
/// fresh parse's are).
pub(crate) fn encode_source_envelope(declared: &SourceDeps, host: &[u8]) -> Vec<u8> {
    let lists = [&declared.forward, &declared.blockers, &declared.artifacts];
    let named: usize = lists
        .iter()
        .flat_map(|list| list.iter())
        .map(|dep| dep_len(dep) + 5)
        .sum();
    let mut out = Vec::with_capacity(named + 12 + host.len());
    for list in lists {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for dep in list {
            let (tag, text) = match dep {
                DepPath::Path(path) => (0u8, path.as_str()),
                DepPath::Canonical(canonical) => (1u8, canonical.as_str()),
            };
            out.push(tag);
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
    }
    out.extend_from_slice(host);
    out
}

fn dep_len(dep: &DepPath) -> usize {
    match dep {
        DepPath::Path(path) => path.len(),
        DepPath::Canonical(canonical) => canonical.as_str().len(),
    }
}

/// [`encode_source_envelope`]'s inverse: the declared dependencies and the
/// host's bytes, or `None` for bytes it did not write.
pub(crate) fn decode_source_envelope(bytes: &[u8]) -> Option<(SourceDeps, &[u8])> {
    let mut rest = bytes;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
        rest = tail;
        Some(head)
    };
    let mut lists: [Vec<DepPath>; 3] = Default::default();
    for list in &mut lists {
        let count = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        for _ in 0..count {
            let tag = take(1)?[0];
            let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            let text = std::str::from_utf8(take(len)?).ok()?;
            list.push(match tag {
                0 => DepPath::Path(text.to_owned()),
                1 => DepPath::Canonical(Canonical::from(text)),
                _ => return None,
            });
        }
    }
    let [forward, blockers, artifacts] = lists;
    Some((
        SourceDeps {
            forward,
            blockers,
            artifacts,
        },
        rest,
    ))
}

#[cfg(test)]
mod tests;
