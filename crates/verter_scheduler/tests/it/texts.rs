//! How long texts live (`SchedulerConfig::texts`, docs/design.md, "Texts"):
//! with `TextRetention::UntilParsed` a loaded text's bytes are let go once
//! its parse commits, and everything built from the parse is answered as
//! before.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use verter_dag::{Canonical, TargetStage};
use verter_scheduler::{
    Invalidation, Language, LoadError, Request, Scheduler, SchedulerConfig, SourceLoader,
    StageOutput, TextRetention, content_hash,
};

use crate::support::*;

/// `MemFiles`, keeping a weak reference to every text it hands out, so a
/// test can tell whether anyone still holds the bytes.
#[derive(Clone, Default)]
struct WatchedFiles {
    files: MemFiles,
    handed_out: Arc<Mutex<Vec<HandedOut>>>,
}

/// A text the loader handed out: its file, and a weak reference to it.
type HandedOut = (String, Weak<str>);

impl WatchedFiles {
    fn with(files: &[(&str, &str)]) -> Self {
        Self {
            files: MemFiles::with(files),
            handed_out: Arc::default(),
        }
    }

    /// The files some text handed out for is still held for.
    fn held(&self) -> Vec<String> {
        let mut held: Vec<String> = self
            .handed_out
            .lock()
            .iter()
            .filter(|(_, text)| text.upgrade().is_some())
            .map(|(path, _)| path.clone())
            .collect();
        held.sort();
        held.dedup();
        held
    }

    fn loads(&self) -> usize {
        self.handed_out.lock().len()
    }
}

impl SourceLoader for WatchedFiles {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        self.files.realpath(path)
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let text = self.files.load(canonical)?;
        self.handed_out
            .lock()
            .push((canonical.to_string(), Arc::downgrade(&text)));
        Ok(text)
    }

    fn classify(&self, canonical: &Canonical) -> Language {
        self.files.classify(canonical)
    }
}

/// An inline scheduler over `files` that keeps texts as `texts` says.
fn inline_watched(
    files: &WatchedFiles,
    texts: TextRetention,
    executor: LineExecutor,
) -> Arc<Scheduler<LineExecutor>> {
    Scheduler::new_inline(config(texts), files.clone(), executor).expect("a valid configuration")
}

fn config(texts: TextRetention) -> SchedulerConfig {
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.texts = texts;
    config
}

/// `a.rs` imports `b.rs` and waits on its Analysis.
const TREE: &[(&str, &str)] = &[("a.rs", "use b.rs\nlet a"), ("b.rs", "let b")];

/// The Artifact of `a.rs`, which reads `b.rs`'s Analysis.
fn build(scheduler: &Scheduler<LineExecutor>) -> String {
    let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    let answer = match scheduler.wait(&handle).expect("a.rs builds") {
        StageOutput::Artifact(artifact) => artifact.data().clone(),
        other => panic!("an Artifact was asked for, got {other:?}"),
    };
    assert_quiescent(scheduler, &[&handle]);
    answer
}

fn source_text(scheduler: &Scheduler<LineExecutor>, path: &str) -> verter_scheduler::SourceText {
    let node = scheduler
        .snapshot()
        .node(&Canonical::from(path))
        .expect("a live file");
    let view = node.view();
    view.source().expect("parsed").text.clone()
}

#[test]
fn a_loaded_text_is_let_go_once_its_parse_commits() {
    for threaded in [false, true] {
        let files = WatchedFiles::with(TREE);
        let executor = LineExecutor::default();
        let config = config(TextRetention::UntilParsed);
        let scheduler = if threaded {
            Scheduler::threaded(config, files.clone(), executor.clone())
        } else {
            Scheduler::new_inline(config, files.clone(), executor.clone()).map_err(Into::into)
        }
        .expect("a valid configuration");
        let kept = {
            let reference = Scheduler::new_inline(
                self::config(TextRetention::Kept),
                MemFiles::with(TREE),
                LineExecutor::default(),
            )
            .expect("a valid configuration");
            build(&reference)
        };
        assert_eq!(
            build(&scheduler),
            kept,
            "the same answer as with texts kept"
        );
        assert_eq!(files.held(), Vec::<String>::new(), "no text is held");
        for (path, text) in TREE {
            let released = source_text(&scheduler, path);
            assert!(released.is_released(), "{path}: released");
            assert_eq!(&*released.text, "");
            assert_eq!(released.hash, content_hash(text), "{path}: its hash kept");
            let root = scheduler
                .snapshot()
                .try_get_source(path)
                .expect("the root has it");
            assert!(root.is_released(), "{path}: released in the source root");
        }
    }
}

#[test]
fn with_texts_kept_the_loaded_texts_stay() {
    let files = WatchedFiles::with(TREE);
    let scheduler = inline_watched(&files, TextRetention::Kept, LineExecutor::default());
    build(&scheduler);
    assert_eq!(files.held(), ["a.rs", "b.rs"]);
    let text = source_text(&scheduler, "b.rs");
    assert!(!text.is_released());
    assert_eq!(&*text.text, "let b");
}

#[test]
fn an_unchanged_released_file_invalidated_gets_a_new_generation() {
    let files = WatchedFiles::with(TREE);
    let executor = LineExecutor::default();
    let scheduler = inline_watched(&files, TextRetention::UntilParsed, executor.clone());
    assert_eq!(build(&scheduler), "p7:a.rs=4,b.rs@g0=2");
    let loads = files.loads();
    // No bytes to compare at the door: a new generation, read again (an
    // executor that cuts off an equal parse then verifies what follows;
    // this one does not, so b.rs's Analysis and a.rs's Artifact run again).
    assert_eq!(
        scheduler.invalidate("b.rs").expect("tracked"),
        Invalidation::Changed
    );
    assert_eq!(files.loads(), loads + 1, "invalidate read b.rs");
    assert_eq!(build(&scheduler), "p7:a.rs=4,b.rs@g1=2");
    assert_eq!(executor.runs_of("b.rs", "Source"), 2);
    assert_eq!(executor.runs_of("a.rs", "Source"), 1);
    assert!(source_text(&scheduler, "b.rs").is_released());
    // The text `invalidate` read entered the source root at once; the
    // released record replaced it, and a collection frees it.
    scheduler.gc_source_root();
    assert_eq!(files.held(), Vec::<String>::new());
}

#[test]
fn a_text_the_host_gave_is_kept() {
    let files = WatchedFiles::with(TREE);
    let scheduler = inline_watched(&files, TextRetention::UntilParsed, LineExecutor::default());
    let handle =
        scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis).text("let host"));
    scheduler.wait(&handle).expect("analysed");
    let text = source_text(&scheduler, "b.rs");
    assert!(!text.is_released(), "an upsert's text only the host holds");
    assert_eq!(&*text.text, "let host");
    assert_eq!(
        &*scheduler
            .snapshot()
            .try_get_source("b.rs")
            .expect("in the root")
            .text,
        "let host"
    );
    // And it still counts for the door: the same text again is no change.
    let again =
        scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis).text("let host"));
    scheduler.wait(&again).expect("analysed");
    assert_quiescent(&scheduler, &[&handle, &again]);
}

#[test]
fn an_empty_file_is_not_taken_for_a_released_text() {
    let files = WatchedFiles::with(&[("e.rs", "")]);
    let scheduler = inline_watched(&files, TextRetention::Kept, LineExecutor::default());
    let handle = scheduler.submit_request(Request::new("e.rs", TargetStage::Source));
    scheduler.wait(&handle).expect("parsed");
    let text = source_text(&scheduler, "e.rs");
    assert_eq!(&*text.text, "");
    assert!(!text.is_released());
    assert!(text.released().is_released());
}
