//! The shape of the public API: thread safety and how values print.

use verter_dag::{Canonical, Incarnation};
use verter_source_root::{
    ContentHash, Epoch, GcReport, SchedulerSourceDirectory, SchedulerSourceRoot, SourceRootConfig,
    SourceRootStats, SourceState,
};

use crate::{manual_gc_directory, version};

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SchedulerSourceDirectory<std::sync::Arc<Vec<u8>>>>();
    send_sync::<SchedulerSourceRoot>();
    send_sync::<SourceState<std::sync::Arc<Vec<u8>>>>();
    send_sync::<Epoch>();
    send_sync::<SourceRootStats>();
    send_sync::<GcReport>();
    send_sync::<SourceRootConfig>();
};

#[test]
fn a_new_directory_is_empty_at_the_initial_epoch() {
    let directory = SchedulerSourceDirectory::<u64>::default();
    assert_eq!(directory.current_epoch(), Epoch::INITIAL);
    let stats = directory.stats();
    assert_eq!(stats.epoch, Epoch::INITIAL);
    assert_eq!(stats.tracked_files, 0);
    assert_eq!(stats.retained_versions, 0);
    assert_eq!(stats.live_roots, 0);
    assert_eq!(
        SourceRootConfig::default().gc_every,
        Some(SourceRootConfig::DEFAULT_GC_EVERY)
    );
}

#[test]
fn epochs_and_hashes_print_compactly() {
    let directory = manual_gc_directory();
    crate::publish_present(
        &directory,
        "a.rs",
        version(Incarnation::allocate(), 0),
        1,
        1,
    );
    assert_eq!(directory.current_epoch().to_string(), "e1");
    assert_eq!(ContentHash(0xab).to_string(), "h00000000000000ab");
    let root = directory.capture_root();
    assert_eq!(
        format!("{root:?}"),
        "SchedulerSourceRoot { visible_epoch: Epoch(1), .. }"
    );
}

#[test]
fn a_state_answers_its_parts() {
    let object = Incarnation::allocate();
    let present = SourceState::Present {
        version: version(object, 2),
        hash: ContentHash(7),
        payload: "bytes",
    };
    assert_eq!(present.version(), Some(version(object, 2)));
    assert_eq!(present.hash(), Some(ContentHash(7)));
    assert_eq!(present.payload(), Some(&"bytes"));
    assert!(present.is_present());
    let absent = SourceState::<&str>::Absent {
        version: version(object, 2),
    };
    assert_eq!(absent.version(), Some(version(object, 2)));
    assert_eq!(
        (absent.hash(), absent.payload(), absent.is_present()),
        (None, None, false)
    );
    let unknown = SourceState::<&str>::Unknown;
    assert_eq!((unknown.version(), unknown.hash()), (None, None));
}

#[test]
fn a_pending_state_answers_its_version_and_no_text() {
    let object = Incarnation::allocate();
    let pending = SourceState::<&str>::Pending {
        version: version(object, 3),
    };
    assert_eq!(pending.version(), Some(version(object, 3)));
    assert_eq!((pending.hash(), pending.payload()), (None, None));
    assert!(pending.is_pending());
    assert!(!pending.is_present());
    let present = SourceState::Present {
        version: version(object, 3),
        hash: ContentHash(7),
        payload: "bytes",
    };
    assert!(!present.is_pending());
    assert!(!SourceState::<&str>::Unknown.is_pending());
    let absent = SourceState::<&str>::Absent {
        version: version(object, 3),
    };
    assert!(!absent.is_pending());
}

/// `SourceTransition::reserve` is a capacity hint: a transition that
/// reserves for new files, some of them reusing slots a forgotten file
/// freed, records and publishes exactly what one without it does.
#[test]
fn reserving_in_a_transition_changes_nothing_it_publishes() {
    let object = Incarnation::allocate();
    let directory = SchedulerSourceDirectory::<u64>::new();
    let names: Vec<Canonical> = (0..64)
        .map(|i| Canonical::from(format!("f{i}.rs")))
        .collect();
    directory.publish_transition(|tx| {
        tx.reserve(names.len(), names.len());
        for (i, name) in names.iter().enumerate() {
            tx.present(
                *name,
                version(object, 0),
                ContentHash(i as u64),
                i as u64,
                8,
            );
        }
    });
    // Forget half (freeing their slots), then reserve more than is freed.
    directory.publish_transition(|tx| {
        for name in &names[..32] {
            tx.absent(*name, version(object, 1));
        }
    });
    directory.publish_transition(|tx| {
        tx.present(
            Canonical::from("x.rs"),
            version(object, 0),
            ContentHash(1),
            1,
            8,
        );
    });
    let _ = directory.gc();
    // Their slots are free now.
    assert!(directory.state_now(names[0]).version().is_none());
    directory.publish_transition(|tx| {
        tx.reserve(100, 100);
        tx.present(
            Canonical::from("new.rs"),
            version(object, 0),
            ContentHash(99),
            99,
            8,
        );
    });
    for (i, name) in names.iter().enumerate().skip(32) {
        assert_eq!(directory.state_now(*name).payload(), Some(&(i as u64)));
    }
    assert_eq!(directory.state_now("new.rs").payload(), Some(&99));
}
