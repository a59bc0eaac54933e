//! `upsert_many_with_priority`: one atomic submission and one wait for the
//! whole batch, answered per file in input order.

use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use verter_dag::{Canonical, Priority};
use verter_host::HostError;
use verter_scheduler::{RequestError, Scheduler};

use crate::support::{
    GateHooks, LineExecutor, MemFiles, assert_quiescent, inline, threaded, watchdog,
};

/// ```text
/// test thread                    scheduler (one inbox item)          stage workers
/// upsert_many [f0 .. f7] ──────▶ admit all eight under one lock hold
///                                publish all eight nodes
///                                dispatch their parses ─────────────▶ first parse: every
///                                                                     node is published
/// ```
#[test]
fn upsert_many_publishes_every_file_before_the_first_parse() {
    watchdog("atomic", || {
        let hooks = Arc::new(GateHooks::default());
        let executor = LineExecutor::default();
        let host = threaded(&MemFiles::default(), &executor, &hooks, 2);
        let paths: Vec<String> = (0..8).map(|i| format!("f{i}.rs")).collect();
        let slot: Arc<OnceLock<Weak<Scheduler<LineExecutor>>>> = Arc::new(OnceLock::new());
        let at_first_parse: Arc<Mutex<Option<bool>>> = Arc::default();
        {
            let slot = Arc::clone(&slot);
            let at_first_parse = Arc::clone(&at_first_parse);
            let canonicals: Vec<Canonical> =
                paths.iter().map(|p| Canonical::from(p.as_str())).collect();
            let callback = Box::new(move |_path: &str| {
                let scheduler = slot
                    .get()
                    .and_then(Weak::upgrade)
                    .expect("the scheduler lives");
                let all_published = canonicals
                    .iter()
                    .all(|canonical| scheduler.snapshot().node(canonical).is_some());
                at_first_parse.lock().get_or_insert(all_published);
            });
            assert!(executor.on_source.set(callback).is_ok());
        }
        assert!(slot.set(Arc::downgrade(host.scheduler())).is_ok());

        let results = host.upsert_many_with_priority(
            paths
                .iter()
                .map(|path| (path.clone(), format!("text of {path}"))),
            Priority::High,
        );

        assert_eq!(*at_first_parse.lock(), Some(true));
        for (path, result) in paths.iter().zip(&results) {
            let source = result.as_ref().expect("every upsert parses");
            assert_eq!(source.canonical().as_str(), path);
            assert_eq!(&*source.text.text, format!("text of {path}"));
        }
        let counters = host.scheduler().observe().counters();
        assert_eq!(counters.batches, 1);
        assert_eq!(counters.submits, 8);
        assert_quiescent(&host);
    });
}

#[test]
fn upsert_many_answers_each_file_with_its_own_parse_in_input_order() {
    watchdog("upsert-order", || {
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&MemFiles::default(), &LineExecutor::default(), &hooks, 2);
        let generations =
            |results: &[Result<verter_host::SourceOutput<LineExecutor>, HostError>]| {
                results
                    .iter()
                    .map(|result| {
                        let source = result.as_ref().expect("parsed");
                        (
                            source.canonical().to_string(),
                            source.text.text.to_string(),
                            source.version().generation.get(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
        let first = host.upsert_many([("b.rs", "bee"), ("a.rs", "ay")]);
        assert_eq!(
            generations(&first),
            [
                ("b.rs".to_owned(), "bee".to_owned(), 0),
                ("a.rs".to_owned(), "ay".to_owned(), 0)
            ]
        );
        // An unchanged text keeps its generation; a changed one advances.
        let second = host.upsert_many([("a.rs", "ay"), ("b.rs", "bee bee")]);
        assert_eq!(
            generations(&second),
            [
                ("a.rs".to_owned(), "ay".to_owned(), 0),
                ("b.rs".to_owned(), "bee bee".to_owned(), 1)
            ]
        );
        assert_quiescent(&host);
    });
}

/// Both entries are admitted in one lock hold: the second bumps the file's
/// generation, which supersedes the first entry's pinned waiter before its
/// parse can commit.
#[test]
fn a_later_entry_of_the_same_batch_supersedes_an_earlier_one() {
    watchdog("supersede", || {
        let hooks = Arc::new(GateHooks::default());
        let host = inline(&MemFiles::default(), &LineExecutor::default(), &hooks);
        let results = host.upsert_many([("a.rs", "one"), ("a.rs", "two")]);
        assert!(
            matches!(
                &results[0],
                Err(HostError::Request(RequestError::Superseded { path })) if path.as_str() == "a.rs"
            ),
            "got {:?}",
            results[0]
        );
        let second = results[1].as_ref().expect("the newest text parses");
        assert_eq!(&*second.text.text, "two");
        assert_eq!(second.version().generation.get(), 1);
        assert_quiescent(&host);
    });
}
