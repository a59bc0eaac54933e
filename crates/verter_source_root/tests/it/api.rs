//! The shape of the public API: thread safety and how values print.

use verter_dag::Incarnation;
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
