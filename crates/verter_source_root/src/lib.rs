//! The MVCC source directory: for every canonical file, a version
//! history stamped with epochs; captured roots that act as retention leases;
//! and garbage collection that never frees a version a live root can still
//! see.
//!
//! This crate owns [`SchedulerSourceDirectory`], [`SchedulerSourceRoot`],
//! [`SourceTransition`] and the values they answer with. It never runs
//! executors, never performs I/O, spawns no thread and never takes a lock of
//! the layers above: those call into it while holding their DAG lock, so its
//! publication lock ranks below the DAG lock, and it calls out into nothing
//! but the publication closure while holding it.
//!
//! # Vocabulary
//! - [`Epoch`]: the stamp of one published transition; it addresses one
//!   snapshot of the whole directory and never validates a cache.
//! - [`SourceState`]: what a file reads as of an epoch: `Unknown`
//!   (untracked), `Absent` (removed), `Pending` (tracked at a version whose
//!   text is not known yet: invalidated or closed, waiting to be reloaded)
//!   or `Present` (a version, its [`ContentHash`] and the payload the
//!   publisher stored with it). GC forgets only removed files, never a
//!   pending one.
//! - [`SchedulerSourceRoot`]: the directory as of one epoch, held by a lease.
//! - [`SourceRootStats`], [`GcReport`], [`SourceRootConfig`]: what the
//!   directory retains, what a GC did, and when GC runs on its own.
//!
//! # Example
//! ```
//! use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};
//! use verter_source_root::{ContentHash, SchedulerSourceDirectory, SourceState};
//!
//! let directory = SchedulerSourceDirectory::<&'static str>::new();
//! let object = Incarnation::allocate();
//! let lib = Canonical::from("src/lib.rs");
//!
//! directory.publish_transition(|tx| {
//!     let version = SourceVersion::new(object, Generation::ZERO);
//!     tx.present(lib.clone(), version, ContentHash(1), "fn a() {}", 9);
//! });
//! let before_edit = directory.capture_root();
//! directory.publish_transition(|tx| {
//!     let version = SourceVersion::new(object, Generation::new(1));
//!     tx.present(lib.clone(), version, ContentHash(2), "fn b() {}", 9);
//! });
//!
//! // The root still reads the bytes it saw; the current snapshot the new ones.
//! assert_eq!(directory.state_at(&before_edit, &lib).payload(), Some(&"fn a() {}"));
//! assert_eq!(directory.state_now(&lib).payload(), Some(&"fn b() {}"));
//! assert_eq!(directory.state_now("src/main.rs"), SourceState::Unknown);
//! ```

mod directory;
mod epoch;
mod history;
mod lease;
mod source_state;
mod stats;
mod store;
mod sync;
mod transition;

#[cfg(all(test, verter_loom))]
mod loom_models;

pub use directory::SchedulerSourceDirectory;
pub use epoch::Epoch;
pub use lease::SchedulerSourceRoot;
pub use source_state::{ContentHash, SourceState};
pub use stats::{GcReport, SourceRootConfig, SourceRootStats};
pub use transition::SourceTransition;
