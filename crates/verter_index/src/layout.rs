//! Where files sit in a crate's module tree: a file's module path from its
//! location, the file a `mod name;` declaration names, and the file a module
//! path names by convention.
//!
//! Every function here is pure over an `is_file` probe the caller passes, so
//! the rules are tested without a file system. Nothing here parses, reads a
//! file's text, or remembers anything.
//!
//! # Rules
//! 1. The crate directory is the nearest ancestor holding a `Cargo.toml`.
//!    `src/lib.rs`, `src/main.rs`, `src/bin/x.rs`, `src/bin/x/main.rs`,
//!    `build.rs`, and `x.rs` or `x/main.rs` under `tests/`, `benches/` or
//!    `examples/` are crate roots (`crate`), and so is a file outside any of
//!    those places (`a_file_outside_any_target_is_its_own_crate_root`).
//! 2. Below a target's root directory, `a/b.rs` and `a/b/mod.rs` are
//!    `crate::a::b` (`module_paths_follow_the_file_layout`).
//! 3. Roots, `mod.rs` files and files reached through `#[path]` are *mod-rs*
//!    files: their `mod c;` children live in their own directory; any other
//!    file `x.rs` keeps its children in `x/` (`children_of_a_non_mod_rs_file_live_in_its_stem_directory`).
//! 4. `#[path = "p"]` outside inline modules is relative to the declaring
//!    file's directory; inside inline modules it is relative to the
//!    directory the inline modules name, as rustc does
//!    (`a_path_attribute_inside_an_inline_module_is_relative_to_its_directory`).

use std::path::{Path, PathBuf};

use crate::model::CratePath;

/// Where a file sits in its crate: what the indexer needs to name its module
/// and to find other modules' files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleLocation {
    /// The module the file defines.
    pub module_path: CratePath,
    /// The crate root file (`src/lib.rs`, …). For a file that is not a root
    /// it is the root its location implies, which may not exist.
    pub crate_root: PathBuf,
    /// The directory `crate::a` lives under (`src/` for a library).
    pub root_dir: PathBuf,
    /// Whether the file keeps its children in its own directory (rule 3).
    pub mod_rs: bool,
}

/// Directories whose `x.rs` and `x/main.rs` are crate roots of their own.
const TARGET_DIRS: [&str; 3] = ["tests", "benches", "examples"];

/// The location of `file` (an absolute path) from the layout alone (rules 1
/// and 2). `is_file` answers whether a path is an existing file.
pub(crate) fn locate(file: &Path, is_file: &dyn Fn(&Path) -> bool) -> ModuleLocation {
    let own_root = || root_location(file);
    let Some(crate_dir) = file
        .ancestors()
        .skip(1)
        .find(|dir| is_file(&dir.join("Cargo.toml")))
    else {
        return own_root();
    };
    let Ok(relative) = file.strip_prefix(crate_dir) else {
        return own_root();
    };
    let parts: Vec<&str> = relative
        .components()
        .filter_map(|component| component.as_os_str().to_str())
        .collect();
    match parts.as_slice() {
        ["build.rs"] => own_root(),
        ["src", "lib.rs" | "main.rs"] => own_root(),
        ["src", "bin", rest @ ..] => {
            locate_in_target(file, &crate_dir.join("src").join("bin"), rest)
        }
        ["src", rest @ ..] => {
            let src = crate_dir.join("src");
            let lib = src.join("lib.rs");
            let crate_root = if is_file(&lib) {
                lib
            } else {
                src.join("main.rs")
            };
            below_root(&src, crate_root, rest).unwrap_or_else(own_root)
        }
        [top, rest @ ..] if TARGET_DIRS.contains(top) => {
            locate_in_target(file, &crate_dir.join(top), rest)
        }
        _ => own_root(),
    }
}

/// The location of `file` as the root of its own crate.
pub(crate) fn root_location(file: &Path) -> ModuleLocation {
    ModuleLocation {
        module_path: CratePath::root(),
        crate_root: file.to_path_buf(),
        root_dir: parent_dir(file),
        mod_rs: true,
    }
}

/// A file under a directory of single-file or directory targets
/// (`src/bin`, `tests`, …): `x.rs` and `x/main.rs` are roots; `x/a/b.rs`
/// belongs to the target rooted at `x/main.rs`.
fn locate_in_target(file: &Path, targets_dir: &Path, rest: &[&str]) -> ModuleLocation {
    let own_root = root_location(file);
    match rest {
        [single] if single.ends_with(".rs") => own_root,
        [_, "main.rs"] => own_root,
        [target, below @ ..] if !below.is_empty() => {
            let root_dir = targets_dir.join(target);
            let crate_root = root_dir.join("main.rs");
            below_root(&root_dir, crate_root, below).unwrap_or(own_root)
        }
        _ => own_root,
    }
}

/// The location of a file at `below` (directories then the file name) under
/// a crate's `root_dir` (rule 2); `None` when `below` is not a `.rs` file.
fn below_root(root_dir: &Path, crate_root: PathBuf, below: &[&str]) -> Option<ModuleLocation> {
    let (file_name, dirs) = below.split_last()?;
    let stem = file_name.strip_suffix(".rs")?;
    let (module_path, mod_rs) = if stem == "mod" {
        (CratePath::from_segments(dirs.iter().copied()), true)
    } else {
        (
            CratePath::from_segments(dirs.iter().copied().chain([stem])),
            false,
        )
    };
    Some(ModuleLocation {
        module_path,
        crate_root,
        root_dir: root_dir.to_path_buf(),
        mod_rs,
    })
}

/// The directory holding `file` (`.` for a bare file name).
pub(crate) fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The location of the child module `name`, declared in `scope` (inline
/// modules) of a file at `parent`, found at `child_file`: it inherits the
/// parent's crate, and is mod-rs when it is a `mod.rs` or was reached through
/// `#[path]` (rule 3).
pub(crate) fn child_location(
    parent: &ModuleLocation,
    scope: &[String],
    name: &str,
    child_file: &Path,
    via_path_attr: bool,
) -> ModuleLocation {
    ModuleLocation {
        module_path: parent.module_path.join(scope).join(&[name]),
        crate_root: parent.crate_root.clone(),
        root_dir: parent.root_dir.clone(),
        mod_rs: via_path_attr || child_file.file_name().is_some_and(|n| n == "mod.rs"),
    }
}

/// The candidate files of `mod name;` declared in `scope` (inline modules)
/// of `parent_file`, in the order rustc tries them (rules 3 and 4).
pub(crate) fn child_candidates(
    parent_file: &Path,
    parent_mod_rs: bool,
    scope: &[String],
    name: &str,
    path_attr: Option<&str>,
) -> Vec<PathBuf> {
    let parent_dir = parent_dir(parent_file);
    // The directory the file's own children live in (rule 3).
    let own_dir = || {
        if parent_mod_rs {
            parent_dir.clone()
        } else {
            let stem = parent_file
                .file_stem()
                .map(PathBuf::from)
                .unwrap_or_default();
            parent_dir.join(stem)
        }
    };
    let in_scope = |mut dir: PathBuf| {
        for module in scope {
            dir.push(module);
        }
        dir
    };
    match path_attr {
        Some(path) if scope.is_empty() => vec![parent_dir.join(path)],
        Some(path) => vec![in_scope(own_dir()).join(path)],
        None => {
            let dir = in_scope(own_dir());
            vec![
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ]
        }
    }
}

/// The file that defines `module` by convention in the crate of `location`:
/// the crate root for `crate`, else `root_dir/a/b.rs` or
/// `root_dir/a/b/mod.rs`, whichever exists.
pub(crate) fn module_file(
    location: &ModuleLocation,
    module: &CratePath,
    is_file: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if module.is_root() {
        return is_file(&location.crate_root).then(|| location.crate_root.clone());
    }
    let (last, dirs) = module.segments().split_last()?;
    let mut dir = location.root_dir.clone();
    for segment in dirs {
        dir.push(segment);
    }
    [
        dir.join(format!("{last}.rs")),
        dir.join(last).join("mod.rs"),
    ]
    .into_iter()
    .find(|candidate| is_file(candidate))
}

#[cfg(test)]
mod tests;
