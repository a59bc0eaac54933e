//! loom models of the directory's two concurrency claims: publication and
//! capture are totally ordered, and a root released while GC runs keeps its
//! versions until GC sees it released. Tiny on purpose; run with
//! `RUSTFLAGS="--cfg verter_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release
//! -p verter_source_root --lib loom_`.

use loom::thread;
use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};

use crate::{ContentHash, SchedulerSourceDirectory, SourceRootConfig, SourceState};

fn directory() -> SchedulerSourceDirectory<u64> {
    SchedulerSourceDirectory::with_config(SourceRootConfig { gc_every: None })
}

fn present(
    tx: &mut crate::SourceTransition<'_, u64>,
    file: &str,
    object: Incarnation,
    generation: u64,
) {
    let version = SourceVersion::new(object, Generation::new(generation));
    tx.present(
        Canonical::from(file),
        version,
        ContentHash(generation),
        generation,
        1,
    );
}

fn generation_of(state: &SourceState<u64>) -> u64 {
    state
        .version()
        .expect("published before the model forked")
        .generation
        .get()
}

#[test]
fn loom_a_root_sees_both_files_of_a_transition_or_neither() {
    let object = Incarnation::allocate();
    loom::model(move || {
        let directory = loom::sync::Arc::new(directory());
        directory.publish_transition(|tx| {
            present(tx, "a.rs", object, 0);
            present(tx, "b.rs", object, 0);
        });
        let publisher = {
            let directory = loom::sync::Arc::clone(&directory);
            thread::spawn(move || {
                directory.publish_transition(|tx| {
                    present(tx, "a.rs", object, 1);
                    present(tx, "b.rs", object, 1);
                });
            })
        };
        let root = directory.capture_root();
        let a = generation_of(&directory.state_at(&root, "a.rs"));
        let b = generation_of(&directory.state_at(&root, "b.rs"));
        assert_eq!(a, b, "a root saw half of a transition");
        assert_eq!(
            a + 1,
            root.visible_epoch().get(),
            "the epoch addresses the snapshot"
        );
        publisher.join().expect("publisher panicked");
        // Sealed: the root answers as before after the publication.
        assert_eq!(generation_of(&directory.state_at(&root, "b.rs")), b);
    });
}

#[test]
fn loom_a_root_dropped_during_gc_keeps_its_versions_until_released() {
    let object = Incarnation::allocate();
    loom::model(move || {
        let directory = loom::sync::Arc::new(directory());
        directory.publish_transition(|tx| present(tx, "a.rs", object, 0));
        let root = directory.capture_root();
        directory.publish_transition(|tx| present(tx, "a.rs", object, 1));
        let reader = {
            let directory = loom::sync::Arc::clone(&directory);
            thread::spawn(move || {
                let state = directory.state_at(&root, "a.rs");
                assert_eq!(
                    generation_of(&state),
                    0,
                    "GC freed a version a live root reads"
                );
                drop(root);
            })
        };
        let racing = directory.gc();
        reader.join().expect("reader panicked");
        let settled = directory.gc();
        assert_eq!(racing.reclaimed_versions + settled.reclaimed_versions, 1);
        assert_eq!(directory.stats().retained_versions, 1);
        assert_eq!(generation_of(&directory.state_now("a.rs")), 1);
    });
}
