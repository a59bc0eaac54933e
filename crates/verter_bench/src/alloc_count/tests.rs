//! A known allocation is counted exactly on its thread, and at least once in
//! the global counts; harness scopes count apart.

use std::hint::black_box;

use super::*;

/// The library's unit tests count their allocations as the binary does.
#[global_allocator]
static ALLOCATOR: Counting = Counting::new(System);

#[test]
fn a_known_allocation_is_counted_on_this_thread() {
    assert!(is_installed());
    let (thread_before, global_before) = (this_thread(), global());
    let block = black_box(vec![7_u8; 4096]);
    let (thread_during, global_during) = (this_thread(), global());
    drop(black_box(block));
    let after = this_thread();
    assert_eq!(
        thread_during.since(thread_before),
        Counts {
            allocs: 1,
            bytes: 4096,
            ..Counts::default()
        }
    );
    assert_eq!(after.since(thread_during).freed_bytes, 4096);
    assert_eq!(after.since(thread_before).live_bytes(), 0);
    // Other tests allocate concurrently: the process saw at least as much.
    let global = global_during.since(global_before);
    assert!(global.allocs >= 1 && global.bytes >= 4096, "{global:?}");
}

#[test]
fn a_reallocation_counts_its_new_size_and_frees_its_old_one() {
    let mut bytes: Vec<u8> = black_box(Vec::with_capacity(64));
    let before = this_thread();
    bytes.reserve_exact(1024);
    let grown = this_thread().since(before);
    black_box(&bytes);
    assert_eq!(
        (grown.allocs, grown.bytes, grown.freed_bytes),
        (1, 1024, 64)
    );
}

#[test]
fn harness_scopes_count_apart_and_held_scopes_record_what_they_keep() {
    let before = this_thread();
    let scratch = harness(|| black_box(vec![1_u8; 100]));
    let kept = harness_held(|| {
        let dropped = black_box(vec![2_u8; 50]);
        drop(dropped);
        black_box(vec![3_u8; 300])
    });
    let counts = this_thread().since(before);
    assert_eq!((counts.allocs, counts.bytes), (0, 0), "{counts:?}");
    assert_eq!(
        (
            counts.harness_allocs,
            counts.harness_bytes,
            counts.freed_bytes
        ),
        (3, 450, 50)
    );
    assert_eq!(counts.held(), 300);
    assert_eq!(counts.live_bytes(), 400);
    drop((scratch, kept));
    assert_eq!(this_thread().since(before).live_bytes(), 0);
}

#[test]
fn another_thread_is_not_in_this_threads_harness_scope() {
    let counts = harness(|| {
        std::thread::spawn(|| {
            let before = this_thread();
            black_box(Box::new(5_u64));
            this_thread().since(before)
        })
        .join()
        .expect("the thread ran")
    });
    assert_eq!(
        (counts.allocs, counts.bytes, counts.harness_allocs),
        (1, 8, 0)
    );
}
