//! A real executor for the scheduler: a Rust source indexer built on `syn`.
//!
//! - [`FsLoader`] is the [`verter_scheduler::SourceLoader`] on the file
//!   system (canonical paths, typed `Missing` / `NotUtf8` / `Io` errors).
//! - [`RustIndexer`] is the [`verter_scheduler::StageExecutor`]: Source
//!   parses a file and keeps a `Send + Sync` [`RustSource`] (module path,
//!   items, `mod` children, flattened `use`s); its forward dependencies are
//!   the `mod` children, so submitting a crate root discovers the whole
//!   module tree; its blockers are the crate-local files its `use`s point
//!   into. Analysis is the file's item table ([`FileIndex`]); the Artifact
//!   resolves each `use` to a defining file and line ([`FileArtifact`]).
//! - [`index_roots`] walks crates through a scheduler into an [`Index`]
//!   that serialises to JSON; [`package_roots`] and
//!   [`discover_crate_roots`] find the roots.
//!
//! This crate never schedules anything itself and holds no lock across a
//! call into the scheduler. The rules it resolves names by are documented on
//! the private `layout` and `resolve` modules and summarised on the items
//! above.
//!
//! # Example
//! ```no_run
//! use verter_index::{FsLoader, RustIndexer, index_roots, package_roots};
//! use verter_scheduler::{Scheduler, SchedulerConfig};
//!
//! let scheduler = Scheduler::new_inline(SchedulerConfig::default(), FsLoader, RustIndexer::new());
//! let roots = package_roots(std::path::Path::new(".")).expect("a crate");
//! let index = index_roots(&scheduler, &roots).expect("roots exist");
//! println!("{} files, {} items, {} uses resolved, {} unresolved, {} failed",
//!     index.files.len(), index.item_count(), index.resolved_count(),
//!     index.unresolved_count(), index.failures.len());
//! ```

mod declarations;
mod error;
mod executor;
mod index;
mod layout;
mod loader;
mod model;
mod resolve;
mod summary;
mod sync;

pub use error::IndexError;
pub use executor::{RustIndexer, RustSource};
pub use index::{
    FileEntry, FileFailure, INDEX_PROFILE, Index, discover_crate_roots, index_roots, package_roots,
};
pub use layout::ModuleLocation;
pub use loader::{FsLoader, realpath};
pub use model::{
    CratePath, FileArtifact, FileIndex, Item, ItemKind, ModDecl, ResolvedUse, Target, UseDecl,
    Visibility,
};
