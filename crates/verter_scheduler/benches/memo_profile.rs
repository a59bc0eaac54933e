//! The memo-hit path in a plain loop, to count its instructions under
//! callgrind (no timing, no divan): builds an inline scheduler that has run
//! a DAG of 1k cache nodes once (`memo_common::warmed`), then re-submits a
//! fresh unchanged DAG `N` times. Only the two `profiled_*` functions are
//! worth collecting:
//!
//! ```text
//! cargo bench -p verter_scheduler --bench memo_profile --no-run
//! valgrind --tool=callgrind --toggle-collect='*profiled_*' \
//!     target/release/deps/memo_profile-* [CASE] [N] [prebuilt]
//! ```
//!
//! `CASE` is a `memo_common::Case` (`LayeredKeyed` by default; an argument
//! that names none, a filter meant for another bench, is ignored), `N` the
//! re-submissions (100), and `prebuilt` builds every DAG before the loop
//! (then only the re-submissions are collected, not the building). It
//! prints the allocations per node of the loop (a counting allocator: two
//! relaxed atomic adds per allocation, which callgrind counts too).

mod memo_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use memo_common::{Case, NODES, SumExec, assert_only_memo_hits, build, resubmit, warmed};
use verter_scheduler::{Dag, Scheduler};

/// The system allocator, counting allocations and the bytes they ask for.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is `System`'s, with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    // Run by `cargo bench`/`cargo test` with another target's filter: the
    // defaults.
    let args = match args.first() {
        Some(name) if named(name).is_none() => {
            eprintln!(
                "memo_profile: {name:?} is none of {:?}: the defaults",
                Case::ALL
            );
            &[][..]
        }
        _ => &args[..],
    };
    let case = args
        .first()
        .and_then(|name| named(name))
        .unwrap_or(Case::LayeredKeyed);
    let rounds: usize = args.get(1).map_or(100, |n| n.parse().expect("N, a count"));
    let prebuilt = args.get(2).is_some_and(|arg| arg == "prebuilt");
    let scheduler = warmed(case);
    let mut answered = 0;
    let dags: Vec<Dag> = if prebuilt {
        (0..rounds).map(|_| build(case)).collect()
    } else {
        Vec::new()
    };
    let (allocs, bytes) = (
        ALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    if prebuilt {
        for dag in dags {
            answered += profiled_resubmit(&scheduler, dag);
        }
    } else {
        for _ in 0..rounds {
            answered += profiled_build_and_resubmit(&scheduler, case);
        }
    }
    let per_node = |total: u64| total as f64 / (rounds * NODES) as f64;
    let allocs = per_node(ALLOCS.load(Ordering::Relaxed) - allocs);
    let bytes = per_node(BYTES.load(Ordering::Relaxed) - bytes);
    assert_eq!(answered, rounds * NODES);
    assert_only_memo_hits(&scheduler, rounds);
    println!(
        "{case:?}: {rounds} re-submissions of {NODES} nodes{}: \
         {allocs:.2} allocations ({bytes:.0} bytes) per node",
        if prebuilt { " (prebuilt DAGs)" } else { "" }
    );
}

/// The case `name` names (its `Debug` spelling, in any case).
fn named(name: &str) -> Option<Case> {
    Case::ALL
        .into_iter()
        .find(|case| format!("{case:?}").eq_ignore_ascii_case(name))
}

/// One re-submission of a DAG built here.
#[inline(never)]
fn profiled_build_and_resubmit(scheduler: &Scheduler<SumExec>, case: Case) -> usize {
    resubmit(scheduler, black_box(build(case)))
}

/// One re-submission of a DAG built before.
#[inline(never)]
fn profiled_resubmit(scheduler: &Scheduler<SumExec>, dag: Dag) -> usize {
    resubmit(scheduler, black_box(dag))
}
