//! A package's Cargo targets: which files are crate roots, read from its
//! `Cargo.toml` the way cargo reads it (explicit targets with their `path`,
//! then auto-discovery unless it is switched off).
//!
//! This module owns the mapping from a manifest to root files. It reads the
//! manifest and lists directories through the loader (confined, regular
//! files only, within the size limit, never blocking), and stats candidate
//! files; it never reads a source file and never talks to the scheduler.
//! An entry it cannot use costs one warning ([`DiscoveryWarning`]) and
//! nothing else.
//!
//! # Rules
//! 1. The library is `[lib] path`, else `src/lib.rs`.
//! 2. Binaries are every `[[bin]]` (its `path`, else `src/bin/<name>.rs`,
//!    `src/bin/<name>/main.rs`, or `src/main.rs` for the package's own name),
//!    plus, unless `autobins = false`, `src/main.rs`, `src/bin/*.rs` and
//!    `src/bin/*/main.rs`.
//! 3. Examples, tests and benches likewise: `[[example]]`, `[[test]]`,
//!    `[[bench]]` with `path` or by name under `examples/`, `tests/`,
//!    `benches/`, plus `x.rs` and `x/main.rs` there unless
//!    `autoexamples`/`autotests`/`autobenches` is `false`.
//! 4. The build script is `package.build` when it is a path, none when it is
//!    `false`, else `build.rs`.
//! 5. Only files that exist are roots; the order is library, binaries,
//!    examples, tests, benches, build script, each group sorted, without
//!    duplicates (`every_cargo_target_kind_is_a_root`).
//! 6. A manifest that does not parse as TOML, or that cannot be read or is
//!    refused by the loader (with a warning saying why), is read as if it
//!    declared nothing: the conventional layout alone gives the roots (cargo
//!    would refuse it; the indexer still indexes what it can). One that is
//!    not UTF-8 is read with the invalid bytes replaced, with a warning
//!    (`a_manifest_that_cannot_be_read_costs_a_warning_and_the_layout_still_gives_roots`).
//! 7. A candidate that cannot be inspected (a directory without search
//!    permission on the way, a link loop) costs one warning for the entry
//!    at fault and is not a root; a target file or directory whose name is
//!    not UTF-8 costs one warning and is not a root.

use std::io;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::error::{DiscoveryWarning, Warnings};
use crate::loader::{FsLoader, reason};

/// One kind of target directory and how its targets are found.
struct TargetKind {
    /// The manifest's array of tables (`bin`, `example`, …).
    table: &'static str,
    /// The `auto…` switch in `[package]`.
    auto: &'static str,
    /// The directory its auto-discovered targets live in.
    dir: &'static str,
}

const BINS: TargetKind = TargetKind {
    table: "bin",
    auto: "autobins",
    dir: "src/bin",
};
const OTHERS: [TargetKind; 3] = [
    TargetKind {
        table: "example",
        auto: "autoexamples",
        dir: "examples",
    },
    TargetKind {
        table: "test",
        auto: "autotests",
        dir: "tests",
    },
    TargetKind {
        table: "bench",
        auto: "autobenches",
        dir: "benches",
    },
];

/// The crate root files of the package whose manifest is
/// `package_dir/Cargo.toml` (see the module rules), read through `loader`.
/// Empty for a virtual manifest (one without `[package]`). Every entry it
/// cannot use costs one warning in `warnings`.
pub(crate) fn targets(
    loader: &FsLoader,
    package_dir: &Path,
    warnings: &mut Warnings,
) -> Vec<PathBuf> {
    let manifest_path = package_dir.join("Cargo.toml");
    let text = match loader.read_bytes(&manifest_path) {
        Ok(bytes) => Some(String::from_utf8(bytes).unwrap_or_else(|error| {
            warnings.push(DiscoveryWarning::ManifestNotUtf8 {
                path: manifest_path.clone(),
            });
            String::from_utf8_lossy(error.as_bytes()).into_owned()
        })),
        Err(error) => {
            warnings.push(DiscoveryWarning::ManifestUnread {
                path: manifest_path.clone(),
                reason: reason(&error),
            });
            None
        }
    };
    let (manifest, parsed) = match text.as_deref().map(str::parse::<Table>) {
        Some(Ok(manifest)) => (manifest, true),
        _ => (Table::new(), false), // rule 6
    };
    let empty = Table::new();
    let package = match manifest.get("package") {
        Some(Value::Table(package)) => package,
        _ if !parsed => &empty,
        _ => return Vec::new(), // a virtual manifest
    };
    let auto = |key: &str| !matches!(package.get(key), Some(Value::Boolean(false)));
    let name = package.get("name").and_then(Value::as_str);
    let mut probe = Probe { loader, warnings };
    let file = |probe: &mut Probe<'_>, relative: &str| {
        let path = package_dir.join(relative);
        probe.is_file(&path).then_some(path)
    };

    let mut roots = Vec::new();
    let lib = explicit_paths(&manifest, "lib");
    if lib.is_empty() {
        roots.extend(file(&mut probe, "src/lib.rs"));
    } else {
        for path in lib {
            roots.extend(file(&mut probe, &path));
        }
    }

    let mut bins = named_targets(&manifest, &BINS, package_dir, &mut probe, |bin| {
        (Some(bin) == name).then(|| package_dir.join("src/main.rs"))
    });
    if auto(BINS.auto) {
        bins.extend(file(&mut probe, "src/main.rs"));
        bins.extend(probe.discovered(&package_dir.join(BINS.dir)));
    }
    probe.push_group(&mut roots, bins);

    for kind in &OTHERS {
        let mut group = named_targets(&manifest, kind, package_dir, &mut probe, |_| None);
        if auto(kind.auto) {
            group.extend(probe.discovered(&package_dir.join(kind.dir)));
        }
        probe.push_group(&mut roots, group);
    }

    match package.get("build") {
        Some(Value::String(path)) => roots.extend(file(&mut probe, path)),
        Some(Value::Boolean(false)) => {}
        _ => roots.extend(file(&mut probe, "build.rs")),
    }
    let mut seen = std::collections::HashSet::new();
    roots.retain(|root| seen.insert(root.clone()));
    roots
}

/// What a path is, by `stat` (following links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
    Other,
    /// Nothing there, or an entry that could not be inspected (warned).
    Absent,
}

/// Stats candidates and lists target directories, warning once per entry
/// at fault (rule 7).
struct Probe<'a> {
    loader: &'a FsLoader,
    warnings: &'a mut Warnings,
}

impl Probe<'_> {
    fn kind(&mut self, path: &Path) -> Kind {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => Kind::File,
            Ok(metadata) if metadata.is_dir() => Kind::Directory,
            Ok(_) => Kind::Other,
            // `InvalidInput`: a manifest's path with a NUL byte, which no
            // file can have.
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::NotADirectory
                        | io::ErrorKind::InvalidInput
                ) =>
            {
                Kind::Absent
            }
            Err(error) => {
                // A path that cannot even be looked at (`lstat`) is the
                // fault of a directory on the way (no search permission,
                // too long); one that can is the fault of the entry itself
                // (a link loop).
                let at_fault = match (std::fs::symlink_metadata(path), path.parent()) {
                    (Err(_), Some(parent)) => parent,
                    _ => path,
                };
                self.warnings.push(DiscoveryWarning::Unreadable {
                    path: at_fault.to_path_buf(),
                    reason: error.to_string(),
                });
                Kind::Absent
            }
        }
    }

    fn is_file(&mut self, path: &Path) -> bool {
        self.kind(path) == Kind::File
    }

    /// Appends `group`, sorted, keeping the main binary (`src/main.rs`)
    /// first, without the files that do not exist.
    fn push_group(&mut self, roots: &mut Vec<PathBuf>, mut group: Vec<PathBuf>) {
        group.sort_by_key(|path| (!path.ends_with("src/main.rs"), path.clone()));
        group.retain(|path| self.is_file(path));
        roots.extend(group);
    }

    /// `dir/x.rs` and `dir/x/main.rs` for every `x` in `dir` (none if `dir`
    /// is not a directory), listed through the loader.
    fn discovered(&mut self, dir: &Path) -> Vec<PathBuf> {
        if self.kind(dir) != Kind::Directory {
            return Vec::new();
        }
        let entries = match self.loader.list_dir(dir) {
            Ok(entries) => entries,
            Err(error) => {
                self.warnings.push(DiscoveryWarning::Unreadable {
                    path: dir.to_path_buf(),
                    reason: reason(&error),
                });
                return Vec::new();
            }
        };
        let mut found = Vec::new();
        for entry in entries {
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(error) => {
                    self.warnings.push(DiscoveryWarning::Unreadable {
                        path: dir.to_path_buf(),
                        reason: error.to_string(),
                    });
                    break;
                }
            };
            let target = if path.extension().is_some_and(|ext| ext == "rs") && self.is_file(&path) {
                path.clone()
            } else if self.is_file(&path.join("main.rs")) {
                path.join("main.rs")
            } else {
                continue;
            };
            if path.file_name().is_some_and(|name| name.to_str().is_none()) {
                self.warnings
                    .push(DiscoveryWarning::NameNotUtf8 { path: path.clone() });
                continue;
            }
            found.push(target);
        }
        found
    }
}

/// The `path`s of the table (`[lib]`) or array of tables (`[[bin]]`) `key`.
fn explicit_paths(manifest: &Table, key: &str) -> Vec<String> {
    let path = |table: &Table| table.get("path").and_then(Value::as_str).map(str::to_owned);
    match manifest.get(key) {
        Some(Value::Table(table)) => path(table).into_iter().collect(),
        Some(Value::Array(tables)) => tables
            .iter()
            .filter_map(Value::as_table)
            .filter_map(path)
            .collect(),
        _ => Vec::new(),
    }
}

/// The files of the explicit `[[kind]]` targets: their `path`, else by name
/// under the kind's directory (`x.rs`, then `x/main.rs`), else what
/// `fallback(name)` gives.
fn named_targets(
    manifest: &Table,
    kind: &TargetKind,
    package_dir: &Path,
    probe: &mut Probe<'_>,
    fallback: impl Fn(&str) -> Option<PathBuf>,
) -> Vec<PathBuf> {
    let Some(Value::Array(tables)) = manifest.get(kind.table) else {
        return Vec::new();
    };
    let dir = package_dir.join(kind.dir);
    let mut found = Vec::new();
    for table in tables.iter().filter_map(Value::as_table) {
        if let Some(path) = table.get("path").and_then(Value::as_str) {
            found.push(package_dir.join(path));
            continue;
        }
        let Some(name) = table.get("name").and_then(Value::as_str) else {
            continue;
        };
        let by_name = [
            dir.join(format!("{name}.rs")),
            dir.join(name).join("main.rs"),
        ]
        .into_iter()
        .find(|candidate| probe.is_file(candidate));
        found.extend(by_name.or_else(|| fallback(name)));
    }
    found
}

#[cfg(test)]
mod tests;
