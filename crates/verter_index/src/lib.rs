//! A real executor for the scheduler: a Rust source indexer built on `syn`.
//!
//! - [`FsLoader`] is the [`verter_scheduler::SourceLoader`] on the file
//!   system (canonical paths, typed `Missing` / `NotUtf8` / `Io` errors).
//!   It reads only regular files, within a size limit and, when confined,
//!   only inside its roots, confined at the open itself (a file swapped for
//!   a link out of the root after its check is not followed); it refuses
//!   the rest typed, unopened. Manifests and target directories are read
//!   through it too.
//! - Before `syn` parses a file, a guard refuses one that would recurse
//!   past [`MAX_NESTING`] levels, build a syntax tree deeper than
//!   [`MAX_TREE_DEPTH`] (a chain of operators, calls or fields), or declare
//!   more than [`MAX_DECLARATIONS`] files ([`NestingError`]); stage threads
//!   have a stack sized for those limits
//!   (`SchedulerConfig::stage_stack_size`).
//! - [`RustIndexer`] is the [`verter_scheduler::StageExecutor`]: Source
//!   parses a file and keeps a `Send + Sync` [`RustSource`] (module path,
//!   items, `mod` children, flattened `use`s); its forward dependencies are
//!   the `mod` children, so submitting a crate root discovers the whole
//!   module tree; its blockers are the crate-local files its `use`s point
//!   into. Analysis is the file's item table ([`FileIndex`]); the Artifact
//!   resolves each `use` to a defining file and line ([`FileArtifact`]).
//! - [`index_roots`] walks crates through a scheduler into an [`Index`]
//!   that serialises to JSON; [`IndexSession`] keeps one and, after
//!   changes, asks again only about the files they reach;
//!   [`package_roots`] and [`discover_crate_roots_with`] find the roots;
//!   an entry of the tree they cannot use costs one [`DiscoveryWarning`].
//!
//! This crate never schedules anything itself and holds no lock across a
//! call into the scheduler.
//!
//! # Rules
//! - **Crate roots.** [`package_roots`] reads the manifest (`src/manifest.rs`):
//!   every Cargo target is a root — `[lib]`, `[[bin]]` and `src/bin/*`,
//!   `examples/*`, `tests/*`, `benches/*` (by `path` or by name, following
//!   `autobins` and its siblings), and the build script (`build.rs` or
//!   `package.build`). A manifest that is not valid TOML, or that cannot be
//!   read, is read as if it declared nothing: the conventional layout
//!   alone. Names that are not UTF-8 are skipped with a warning (indexed
//!   files are named by UTF-8 paths); a module linked to such a name fails
//!   alone with `LoadError::NameNotUtf8`.
//! - **Module paths.** The crate directory is the nearest ancestor with a
//!   `Cargo.toml`; a root is `crate`; below a root, `a/b.rs` and
//!   `a/b/mod.rs` are `crate::a::b`. A file declared by a parsed parent
//!   (`mod x;`, with or without `#[path]`) takes the module path the parent
//!   gives it instead (see [`RustIndexer::new`]).
//! - **Child files.** `mod x;` in a root, a `mod.rs` or a `#[path]` file
//!   names `x.rs` or `x/mod.rs` beside it; in any other `y.rs` it names
//!   `y/x.rs` or `y/x/mod.rs`; `#[path = "p"]` names `p` relative to the
//!   declaring file's directory (inside inline modules, relative to the
//!   directory they name). A missing child is still a forward dependency,
//!   so it fails as `SourceMissing` on its own.
//! - **Candidates.** rustc expands macros and evaluates `cfg`; this crate
//!   does neither, so it declares what they could produce as *optional*
//!   children ([`ModDecl::optional`]): one whose file exists is indexed, one
//!   whose file does not is no error. They are `mod` items inside a macro
//!   invocation's tokens (`cfg_if! { … }`, `cfg_rt! { mod … }`) and inside a
//!   `macro_rules!` body (also tried relative to the crate root, where such
//!   a macro is usually expanded), with their `#[path]`s; every path any
//!   branch of `#[cfg_attr(pred, path = "…")]` names; and a `mod` behind
//!   `#[cfg(…)]`.
//! - **`include!`.** An item-position `include!("file.rs")` indexes that
//!   file as its own entry, with the module path of the scope that includes
//!   it ([`IncludeDecl`]); its items are not merged into the includer's.
//! - **Degrade, don't drop.** A file that does not parse fails alone: its
//!   Source and Analysis answer with no items (and the `mod`s and
//!   `include!`s its tokens still show, as candidates), so files importing
//!   from it index with those `use`s unresolved; its own Artifact answers
//!   the [`ParseError`].
//! - **Blockers.** Each crate-local `use` (starting with `crate`, `self`,
//!   `super`, or a name declared in its scope) blocks on the file of the
//!   longest prefix that names a module with an existing file, never on the
//!   file itself.
//! - **Resolution.** In the file's own analysis, then its blockers': a file
//!   whose module is the path (line 1); an item with that full path; a
//!   `use` binding of that name in that module; an enum, re-export or
//!   binding the path runs through (a variant import). Anything else —
//!   `std::…`, other crates, items generated by macros — is counted
//!   unresolved. Re-exports are not chased: the `use` line is the target.
//! - **Derived facts.** A file's module path and blockers derive from
//!   other files' declarations and from which files exist; the scheduler
//!   does not see that edge, so [`IndexSession::refresh`] re-derives every
//!   file when a change alters the module tree (see its module docs).
//!
//! # Example
//! ```no_run
//! use verter_index::{FsLoader, RustIndexer, index_roots, package_roots};
//! use verter_scheduler::{Scheduler, SchedulerConfig};
//!
//! let scheduler = Scheduler::new_inline(SchedulerConfig::default(), FsLoader::default(), RustIndexer::new()).expect("a valid scheduler configuration");
//! let roots = package_roots(std::path::Path::new(".")).expect("a crate");
//! let index = index_roots(&scheduler, &roots).expect("roots exist");
//! println!("{} files, {} items, {} uses resolved, {} unresolved, {} failed",
//!     index.files.len(), index.item_count(), index.resolved_count(),
//!     index.unresolved_count(), index.failures.len());
//! ```

mod declarations;
mod error;
mod executor;
mod guard;
mod index;
mod layout;
mod loader;
mod manifest;
mod model;
mod probe;
mod resolve;
mod session;
mod summary;
mod sync;
mod walk;

pub use declarations::ModuleRead;
pub use error::{DiscoveryWarning, IndexError, ParseError};
pub use executor::{DerivedReads, RustIndexer, RustSource};
pub use guard::{MAX_DECLARATIONS, MAX_NESTING, MAX_TREE_DEPTH, NestingError};
pub use index::{DeclaredAt, FileEntry, FileFailure, INDEX_PROFILE, Index, WalkProgress};
pub use layout::ModuleLocation;
pub use loader::{FsLoader, realpath};
pub use model::{
    CratePath, FileArtifact, FileIndex, IncludeDecl, Item, ItemKind, ModDecl, ResolvedUse, Target,
    UseDecl, Visibility,
};
pub use session::{IndexSession, Refresh};
pub use walk::{
    Discovery, discover_crate_roots, discover_crate_roots_with, index_roots, index_roots_observed,
    is_package_target, package_roots,
};
