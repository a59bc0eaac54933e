//! Counting allocations: a [`GlobalAlloc`] wrapper that counts every
//! allocation, its bytes and every freed byte, so a workload can report
//! allocations per file — a figure that, unlike wall time, a noisy machine
//! does not move.
//!
//! The `verter_bench` binary installs [`Counting`] over [`System`] (the
//! allocator it used before); the library's unit tests install it too. In a
//! process that installs no [`Counting`], every count stays zero and
//! [`is_installed`] is false.
//!
//! Allocations a thread makes inside [`harness`] (or [`harness_held`]) are
//! counted apart, as the harness's own: the runners wrap what they allocate
//! only to drive a system (request vectors, the result map, the in-memory
//! files standing in for a disk), so the system's figures leave it out.
//! Freed bytes are not split: a block is often freed by other code than the
//! code that allocated it.
//!
//! A `realloc` counts as one allocation of the new size and the freeing of
//! the old size (a `Vec` that doubles its way to n bytes counts about 2n
//! bytes allocated and n bytes live).
//!
//! Counts are kept per thread (read by [`this_thread`]) and in cache-line
//! sized shards that [`global`] sums: one shared counter would bounce between
//! the cores on every allocation and slow the very builds being measured.
//! Each of the first [`OWN_SHARDS`] threads to allocate gets a shard only it
//! writes, with a plain load and store (no locked instruction on the
//! allocation path); later threads share one more shard through
//! `fetch_add`. Every atomic is `Relaxed`; a [`global`] snapshot is exact for
//! the threads that synchronised with the reader some other way first (a
//! join, a channel, a lock), which is how the workloads read it after a build
//! answered.
//!
//! # Invariants
//! 1. Counting never allocates, never panics and never changes what the
//!    wrapped allocator is asked or returns
//!    (`a_known_allocation_is_counted_on_this_thread`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

/// A global allocator that forwards to `A` and counts what passes through.
///
/// ```
/// use std::alloc::System;
/// use std::hint::black_box;
///
/// use verter_bench::alloc_count::{Counting, this_thread};
///
/// #[global_allocator]
/// static ALLOCATOR: Counting = Counting::new(System);
///
/// fn main() {
///     let before = this_thread();
///     let block = black_box(vec![0_u8; 64]);
///     assert_eq!(this_thread().since(before).bytes, 64);
///     drop(block);
/// }
/// ```
#[derive(Debug, Default)]
pub struct Counting<A = System> {
    inner: A,
}

impl<A> Counting<A> {
    /// Counts the allocations made through `inner`.
    pub const fn new(inner: A) -> Self {
        Self { inner }
    }
}

// SAFETY: every method forwards its arguments unchanged to `inner` and
// returns `inner`'s result unchanged; the counting beside it touches only
// atomics and a `const`-initialised thread-local `Cell` (no allocation, no
// panic, no unwinding). `Counting<A>` so meets `GlobalAlloc`'s contract
// exactly when `A` does.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract
        // (`layout` has a non-zero size).
        let block = unsafe { self.inner.alloc(layout) };
        if !block.is_null() {
            allocated(layout.size());
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s
        // contract (`layout` has a non-zero size).
        let block = unsafe { self.inner.alloc_zeroed(layout) };
        if !block.is_null() {
            allocated(layout.size());
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds `dealloc`'s
        // contract (`block` came from this allocator, so from `inner`, with
        // `layout`).
        unsafe { self.inner.dealloc(block, layout) };
        freed(layout.size());
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s
        // contract (`block` came from this allocator, so from `inner`, with
        // `layout`; `new_size` is non-zero and fits `layout`'s alignment).
        let moved = unsafe { self.inner.realloc(block, layout, new_size) };
        if !moved.is_null() {
            freed(layout.size());
            allocated(new_size);
        }
        moved
    }
}

/// Allocation counts: of the whole process ([`global`]) or of one thread
/// ([`this_thread`]), or the difference of two snapshots ([`Counts::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Allocations (and reallocations) outside [`harness`] scopes: the
    /// measured system's.
    pub allocs: u64,
    /// Bytes of those.
    pub bytes: u64,
    /// Allocations (and reallocations) inside [`harness`] scopes.
    pub harness_allocs: u64,
    /// Bytes of those.
    pub harness_bytes: u64,
    /// Bytes freed, inside harness scopes or not (a `realloc` frees its old
    /// size).
    pub freed_bytes: u64,
    /// Net bytes [`harness_held`] scopes left allocated (allocated minus
    /// freed by their thread while they ran): harness data a system keeps
    /// holding.
    pub held_bytes: u64,
}

impl Counts {
    const ZERO: Self = Self {
        allocs: 0,
        bytes: 0,
        harness_allocs: 0,
        harness_bytes: 0,
        freed_bytes: 0,
        held_bytes: 0,
    };

    /// What happened between `earlier` and `self` (every field wraps, so
    /// [`Self::live_bytes`] and [`Self::held`] of a difference may be
    /// negative).
    pub fn since(self, earlier: Self) -> Self {
        Self {
            allocs: self.allocs.wrapping_sub(earlier.allocs),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
            harness_allocs: self.harness_allocs.wrapping_sub(earlier.harness_allocs),
            harness_bytes: self.harness_bytes.wrapping_sub(earlier.harness_bytes),
            freed_bytes: self.freed_bytes.wrapping_sub(earlier.freed_bytes),
            held_bytes: self.held_bytes.wrapping_sub(earlier.held_bytes),
        }
    }

    /// The sum of two differences.
    pub fn plus(self, other: Self) -> Self {
        Self {
            allocs: self.allocs.wrapping_add(other.allocs),
            bytes: self.bytes.wrapping_add(other.bytes),
            harness_allocs: self.harness_allocs.wrapping_add(other.harness_allocs),
            harness_bytes: self.harness_bytes.wrapping_add(other.harness_bytes),
            freed_bytes: self.freed_bytes.wrapping_add(other.freed_bytes),
            held_bytes: self.held_bytes.wrapping_add(other.held_bytes),
        }
    }

    /// Bytes allocated (by anyone) minus bytes freed: the live heap, or its
    /// growth for a difference.
    pub fn live_bytes(self) -> i64 {
        self.bytes
            .wrapping_add(self.harness_bytes)
            .wrapping_sub(self.freed_bytes) as i64
    }

    /// [`Self::held_bytes`] as the signed number it is.
    pub fn held(self) -> i64 {
        self.held_bytes as i64
    }
}

/// Runs `f` with the allocations this thread makes counted as the
/// harness's ([`Counts::harness_allocs`]), not the system's. Nests; other
/// threads (a system's workers) are unaffected.
pub fn harness<T>(f: impl FnOnce() -> T) -> T {
    /// Leaves the scope even if `f` unwinds.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            update(|local| local.harness_depth = local.harness_depth.saturating_sub(1));
        }
    }
    update(|local| local.harness_depth += 1);
    let _leave = Leave;
    f()
}

/// [`harness`], for harness data the system goes on holding (the in-memory
/// files its loader reads): what the scope leaves allocated — bytes this
/// thread allocated minus bytes it freed while `f` ran — is added to
/// [`Counts::held_bytes`], so the live heap a build leaves can be reported
/// without it.
pub fn harness_held<T>(f: impl FnOnce() -> T) -> T {
    let before = this_thread();
    let value = harness(f);
    let net = this_thread().since(before).live_bytes() as u64;
    let local = update(|local| local.counts.held_bytes = local.counts.held_bytes.wrapping_add(net));
    let (shard, own) = shard_of(local);
    add(&shard.held_bytes, net, own);
    value
}

/// The whole process's counts so far (the sum of every shard).
pub fn global() -> Counts {
    SHARDS.iter().fold(Counts::ZERO, |sum, shard| {
        sum.plus(Counts {
            allocs: shard.allocs.load(Relaxed),
            bytes: shard.bytes.load(Relaxed),
            harness_allocs: shard.harness_allocs.load(Relaxed),
            harness_bytes: shard.harness_bytes.load(Relaxed),
            freed_bytes: shard.freed_bytes.load(Relaxed),
            held_bytes: shard.held_bytes.load(Relaxed),
        })
    })
}

/// The calling thread's counts so far.
pub fn this_thread() -> Counts {
    LOCAL
        .try_with(|local| local.get().counts)
        .unwrap_or_default()
}

/// Whether a [`Counting`] allocator is installed (it has counted anything).
pub fn is_installed() -> bool {
    let counts = global();
    counts.allocs > 0 || counts.harness_allocs > 0
}

/// How many threads get a shard of their own; the threads after them share
/// one more.
pub const OWN_SHARDS: usize = 256;

/// One thread's global counts (or the late threads'), alone on its cache
/// lines.
#[repr(align(128))]
struct Shard {
    allocs: AtomicU64,
    bytes: AtomicU64,
    harness_allocs: AtomicU64,
    harness_bytes: AtomicU64,
    freed_bytes: AtomicU64,
    held_bytes: AtomicU64,
}

impl Shard {
    const fn new() -> Self {
        Self {
            allocs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            harness_allocs: AtomicU64::new(0),
            harness_bytes: AtomicU64::new(0),
            freed_bytes: AtomicU64::new(0),
            held_bytes: AtomicU64::new(0),
        }
    }
}

/// The threads' own shards, then the shared one.
static SHARDS: [Shard; OWN_SHARDS + 1] = [const { Shard::new() }; OWN_SHARDS + 1];

/// How many threads have taken a shard (saturates in practice far beyond
/// [`OWN_SHARDS`]; every thread from then on takes the shared one).
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

/// One thread's state.
#[derive(Clone, Copy)]
struct Local {
    /// Its shard, `usize::MAX` until it first counts.
    shard: usize,
    /// How many [`harness`] scopes it is inside.
    harness_depth: u32,
    /// Its own counts.
    counts: Counts,
}

thread_local! {
    // `const` and free of `Drop`: reading it never allocates and never
    // fails, not even while the thread exits.
    static LOCAL: Cell<Local> = const {
        Cell::new(Local {
            shard: usize::MAX,
            harness_depth: 0,
            counts: Counts::ZERO,
        })
    };
}

/// Changes this thread's state (nothing if it is gone) and returns it.
fn update(change: impl FnOnce(&mut Local)) -> Option<Local> {
    LOCAL
        .try_with(|cell| {
            let mut local = cell.get();
            if local.shard == usize::MAX {
                local.shard = NEXT_SHARD.fetch_add(1, Relaxed).min(OWN_SHARDS);
            }
            change(&mut local);
            cell.set(local);
            local
        })
        .ok()
}

/// The shard of the thread whose state is `local`, and whether that thread
/// is its only writer (the shared shard where thread-locals are gone).
fn shard_of(local: Option<Local>) -> (&'static Shard, bool) {
    let index = local.map_or(OWN_SHARDS, |local| local.shard);
    (&SHARDS[index], index < OWN_SHARDS)
}

/// Adds `value` to `counter`: a plain load and store on a shard the calling
/// thread alone writes (`own`), `fetch_add` on the shared one.
fn add(counter: &AtomicU64, value: u64, own: bool) {
    if own {
        counter.store(counter.load(Relaxed).wrapping_add(value), Relaxed);
    } else {
        counter.fetch_add(value, Relaxed);
    }
}

/// Counts an allocation of `size` bytes.
fn allocated(size: usize) {
    let size = size as u64;
    let local = update(|local| {
        let counts = &mut local.counts;
        if local.harness_depth > 0 {
            counts.harness_allocs = counts.harness_allocs.wrapping_add(1);
            counts.harness_bytes = counts.harness_bytes.wrapping_add(size);
        } else {
            counts.allocs = counts.allocs.wrapping_add(1);
            counts.bytes = counts.bytes.wrapping_add(size);
        }
    });
    let (shard, own) = shard_of(local);
    if local.is_some_and(|local| local.harness_depth > 0) {
        add(&shard.harness_allocs, 1, own);
        add(&shard.harness_bytes, size, own);
    } else {
        add(&shard.allocs, 1, own);
        add(&shard.bytes, size, own);
    }
}

/// Counts `size` freed bytes.
fn freed(size: usize) {
    let size = size as u64;
    let local = update(|local| {
        local.counts.freed_bytes = local.counts.freed_bytes.wrapping_add(size);
    });
    let (shard, own) = shard_of(local);
    add(&shard.freed_bytes, size, own);
}

#[cfg(test)]
mod tests;
