//! The directory's own contracts: one epoch per transition, all-or-nothing
//! publication, re-entrancy, and where payloads are dropped. These tests use
//! real locks, so they do not build into the loom models.
#![cfg(not(verter_loom))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock, Weak};

use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};

use super::*;
use crate::source_state::ContentHash;

fn version(incarnation: Incarnation, generation: u64) -> SourceVersion {
    SourceVersion::new(incarnation, Generation::new(generation))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|it| (*it).to_owned()))
        .unwrap_or_default()
}

#[test]
fn a_reset_of_many_files_is_one_epoch() {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let object = Incarnation::allocate();
    let files: Vec<Canonical> = (0..50).map(|index| format!("f{index}.rs").into()).collect();
    directory.publish_transition(|tx| {
        for file in &files {
            tx.present(*file, version(object, 0), ContentHash(1), 1, 1);
        }
    });
    let before_reset = directory.capture_root();
    let stamped = directory.publish_transition(|tx| {
        for file in &files {
            tx.absent(*file, version(object, 0));
        }
        assert_eq!(tx.recorded(), files.len());
        tx.epoch()
    });
    assert_eq!(stamped, before_reset.visible_epoch().next());
    assert_eq!(directory.current_epoch(), stamped);
    let after_reset = directory.capture_root();
    for file in &files {
        assert!(directory.state_at(&before_reset, file).is_present());
        assert_eq!(
            directory.state_at(&after_reset, file),
            SourceState::Absent {
                version: version(object, 0)
            }
        );
    }
}

#[test]
fn a_transition_that_records_nothing_keeps_the_epoch() {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let answer = directory.publish_transition(|tx| tx.epoch().get() * 10);
    assert_eq!(answer, 10, "the closure saw the epoch it would stamp");
    assert_eq!(directory.current_epoch(), Epoch::INITIAL);
    assert_eq!(directory.stats().epoch, Epoch::INITIAL);
}

#[test]
fn a_panicking_transition_publishes_nothing() {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let object = Incarnation::allocate();
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 0), ContentHash(1), 1, 10);
    });
    let before = directory.stats();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        directory.publish_transition(|tx| {
            tx.present("a.rs".into(), version(object, 1), ContentHash(2), 2, 20);
            tx.absent("b.rs".into(), version(object, 0));
            panic!("the host's transition failed");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(directory.current_epoch(), before.epoch);
    assert_eq!(directory.state_now("a.rs").hash(), Some(ContentHash(1)));
    assert_eq!(directory.state_now("b.rs"), SourceState::Unknown);
    let after = directory.stats();
    assert_eq!(after.retained_versions, before.retained_versions);
    assert_eq!(after.retained_bytes, before.retained_bytes);
    assert_eq!(after.tracked_files, before.tracked_files);
    // The lock was released and the publisher mark cleared: the next
    // publication works and is stamped with the next epoch.
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 1), ContentHash(3), 3, 30);
    });
    assert_eq!(directory.current_epoch(), before.epoch.next());
}

#[test]
fn reading_inside_the_publication_closure_panics_instead_of_deadlocking() {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let root = directory.capture_root();
    type Call<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let calls: Vec<Call<'_>> = vec![
        ("capture_root", Box::new(|| drop(directory.capture_root()))),
        (
            "state_at",
            Box::new(|| {
                let _ = directory.state_at(&root, "a.rs");
            }),
        ),
        (
            "state_now",
            Box::new(|| {
                let _ = directory.state_now("a.rs");
            }),
        ),
        (
            "gc",
            Box::new(|| {
                let _ = directory.gc();
            }),
        ),
        (
            "stats",
            Box::new(|| {
                let _ = directory.stats();
            }),
        ),
        (
            "publish_transition",
            Box::new(|| directory.publish_transition(|_| ())),
        ),
    ];
    for (operation, call) in &calls {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            directory.publish_transition(|_| call());
        }));
        let message = panic_message(&*outcome.expect_err(operation));
        assert!(
            message.starts_with(&format!(
                "{operation} was called from inside publish_transition"
            )),
            "{operation}: {message}"
        );
    }
    // Lock-free calls are fine inside the closure.
    directory.publish_transition(|_| {
        assert_eq!(directory.current_epoch(), Epoch::INITIAL);
        assert!(format!("{directory:?}").contains("Epoch(0)"));
    });
    // Nothing is left locked.
    assert_eq!(directory.stats().live_roots, 1);
}

#[test]
fn dropping_a_root_inside_the_publication_closure_does_not_deadlock() {
    let directory =
        SchedulerSourceDirectory::<u64>::with_config(SourceRootConfig { gc_every: None });
    let object = Incarnation::allocate();
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 0), ContentHash(1), 1, 1);
    });
    let root = directory.capture_root();
    let clone = root.clone();
    directory.publish_transition(|tx| {
        drop(root);
        tx.present("a.rs".into(), version(object, 1), ContentHash(2), 2, 1);
        drop(clone);
    });
    assert_eq!(directory.stats().live_roots, 0);
    assert_eq!(directory.gc().reclaimed_versions, 1);
}

#[test]
#[should_panic(expected = "captured from another source directory")]
fn a_root_from_another_directory_is_refused() {
    let first = SchedulerSourceDirectory::<u64>::new();
    let second = SchedulerSourceDirectory::<u64>::new();
    let root = first.capture_root();
    let _ = second.state_at(&root, "a.rs");
}

/// A payload that records, when dropped, whether its directory's
/// publication lock was free.
#[derive(Clone)]
struct DropProbe {
    directory: Arc<OnceLock<Weak<SchedulerSourceDirectory<DropProbe>>>>,
    dropped_under_lock: Arc<AtomicUsize>,
    dropped_unlocked: Arc<AtomicUsize>,
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        let Some(directory) = self.directory.get().and_then(Weak::upgrade) else {
            return;
        };
        let counter = match directory.store.try_lock() {
            Some(_) => &self.dropped_unlocked,
            None => &self.dropped_under_lock,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn payloads_leave_the_directory_after_the_lock_is_released() {
    let directory = Arc::new(SchedulerSourceDirectory::with_config(SourceRootConfig {
        gc_every: Some(std::num::NonZeroUsize::MIN),
    }));
    let probe = DropProbe {
        directory: Arc::new(OnceLock::new()),
        dropped_under_lock: Arc::new(AtomicUsize::new(0)),
        dropped_unlocked: Arc::new(AtomicUsize::new(0)),
    };
    assert!(probe.directory.set(Arc::downgrade(&directory)).is_ok());
    let object = Incarnation::allocate();
    // Superseded within one transition: the replaced payload leaves on commit.
    directory.publish_transition(|tx| {
        tx.present(
            "a.rs".into(),
            version(object, 0),
            ContentHash(0),
            probe.clone(),
            1,
        );
        tx.present(
            "a.rs".into(),
            version(object, 1),
            ContentHash(1),
            probe.clone(),
            1,
        );
    });
    // Superseded across transitions: automatic GC (every change) reclaims it.
    directory.publish_transition(|tx| {
        tx.present(
            "a.rs".into(),
            version(object, 2),
            ContentHash(2),
            probe.clone(),
            1,
        );
    });
    // Pinned, then released and reclaimed by an explicit GC.
    let root = directory.capture_root();
    directory.publish_transition(|tx| {
        tx.present(
            "a.rs".into(),
            version(object, 3),
            ContentHash(3),
            probe.clone(),
            1,
        );
    });
    drop(root);
    assert_eq!(directory.gc().reclaimed_versions, 1);
    assert_eq!(directory.stats().retained_versions, 1);
    assert_eq!(probe.dropped_under_lock.load(Ordering::Relaxed), 0);
    // The clones passed in above and the three reclaimed payloads.
    assert!(probe.dropped_unlocked.load(Ordering::Relaxed) >= 3);
}

#[test]
fn a_root_captured_before_a_pending_transition_keeps_reading_the_old_text() {
    let directory =
        SchedulerSourceDirectory::<u64>::with_config(SourceRootConfig { gc_every: None });
    let object = Incarnation::allocate();
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 0), ContentHash(1), 1, 10);
    });
    let before_invalidation = directory.capture_root();
    let stamped = directory.publish_transition(|tx| {
        tx.pending("a.rs".into(), version(object, 1));
        tx.epoch()
    });
    assert_eq!(stamped, before_invalidation.visible_epoch().next());
    assert_eq!(directory.current_epoch(), stamped);
    assert_eq!(
        directory.state_at(&before_invalidation, "a.rs"),
        SourceState::Present {
            version: version(object, 0),
            hash: ContentHash(1),
            payload: 1,
        }
    );
    let now = directory.state_now("a.rs");
    assert_eq!(
        now,
        SourceState::Pending {
            version: version(object, 1)
        }
    );
    assert!(now.is_pending() && !now.is_present());
    assert_eq!((now.hash(), now.payload()), (None, None));
    // A root captured after the invalidation reads what the current snapshot reads.
    let after_invalidation = directory.capture_root();
    assert_eq!(directory.state_at(&after_invalidation, "a.rs"), now);
    // The pending entry accounts for no bytes; the pinned text still does.
    let stats = directory.stats();
    assert_eq!(stats.retained_versions, 2);
    assert_eq!(stats.retained_bytes, 10);
    assert_eq!(stats.tracked_files, 1);
}

#[test]
fn a_present_after_pending_serves_the_reloaded_text() {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let object = Incarnation::allocate();
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 0), ContentHash(1), 1, 10);
    });
    directory.publish_transition(|tx| tx.pending("a.rs".into(), version(object, 1)));
    let while_pending = directory.capture_root();
    // The reload completes at the version the invalidation announced.
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 1), ContentHash(2), 2, 20);
    });
    assert_eq!(
        directory.state_now("a.rs"),
        SourceState::Present {
            version: version(object, 1),
            hash: ContentHash(2),
            payload: 2,
        }
    );
    assert!(directory.state_at(&while_pending, "a.rs").is_pending());
}

#[test]
fn a_panicking_transition_with_a_pending_record_publishes_nothing() {
    let directory =
        SchedulerSourceDirectory::<u64>::with_config(SourceRootConfig { gc_every: None });
    let object = Incarnation::allocate();
    directory.publish_transition(|tx| {
        tx.present("a.rs".into(), version(object, 0), ContentHash(1), 1, 10);
        tx.present("b.rs".into(), version(object, 0), ContentHash(2), 2, 20);
    });
    let before = directory.stats();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        directory.publish_transition(|tx| {
            // Superseded within the transition, then invalidated.
            tx.present("a.rs".into(), version(object, 1), ContentHash(3), 3, 30);
            tx.pending("a.rs".into(), version(object, 2));
            tx.pending("b.rs".into(), version(object, 1));
            tx.pending("new.rs".into(), version(object, 0));
            assert_eq!(tx.recorded(), 4);
            panic!("the host's transition failed");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(directory.current_epoch(), before.epoch);
    assert_eq!(directory.state_now("a.rs").hash(), Some(ContentHash(1)));
    assert_eq!(directory.state_now("b.rs").hash(), Some(ContentHash(2)));
    assert_eq!(directory.state_now("new.rs"), SourceState::Unknown);
    let after = directory.stats();
    assert_eq!(after.retained_versions, before.retained_versions);
    assert_eq!(after.retained_bytes, before.retained_bytes);
    assert_eq!(after.tracked_files, before.tracked_files);
    // The next publication works, at the next epoch, and may invalidate.
    directory.publish_transition(|tx| tx.pending("a.rs".into(), version(object, 1)));
    assert_eq!(directory.current_epoch(), before.epoch.next());
    assert!(directory.state_now("a.rs").is_pending());
}
