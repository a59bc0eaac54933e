//! A package's Cargo targets: which files are crate roots, read from its
//! `Cargo.toml` the way cargo reads it (explicit targets with their `path`,
//! then auto-discovery unless it is switched off).
//!
//! This module owns the mapping from a manifest to root files. It reads the
//! manifest and lists directories; it never reads a source file and never
//! talks to the scheduler.
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
//! 6. A manifest that does not parse as TOML is read as if it declared
//!    nothing: the conventional layout alone gives the roots (cargo would
//!    refuse it; the indexer still indexes what it can).

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::error::IndexError;

/// One kind of target directory and how its targets are found.
struct Kind {
    /// The manifest's array of tables (`bin`, `example`, …).
    table: &'static str,
    /// The `auto…` switch in `[package]`.
    auto: &'static str,
    /// The directory its auto-discovered targets live in.
    dir: &'static str,
}

const BINS: Kind = Kind {
    table: "bin",
    auto: "autobins",
    dir: "src/bin",
};
const OTHERS: [Kind; 3] = [
    Kind {
        table: "example",
        auto: "autoexamples",
        dir: "examples",
    },
    Kind {
        table: "test",
        auto: "autotests",
        dir: "tests",
    },
    Kind {
        table: "bench",
        auto: "autobenches",
        dir: "benches",
    },
];

/// The crate root files of the package whose manifest is
/// `package_dir/Cargo.toml` (see the module rules). Empty for a virtual
/// manifest (one without `[package]`).
///
/// # Errors
/// [`IndexError::Io`] if the manifest or a target directory cannot be read.
pub(crate) fn targets(package_dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    let manifest_path = package_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest_path).map_err(|source| IndexError::Io {
        path: manifest_path.clone(),
        source,
    })?;
    let (manifest, parsed) = match text.parse::<Table>() {
        Ok(manifest) => (manifest, true),
        Err(_) => (Table::new(), false), // rule 6
    };
    let empty = Table::new();
    let package = match manifest.get("package") {
        Some(Value::Table(package)) => package,
        _ if !parsed => &empty,
        _ => return Ok(Vec::new()), // a virtual manifest
    };
    let auto = |key: &str| !matches!(package.get(key), Some(Value::Boolean(false)));
    let name = package.get("name").and_then(Value::as_str);
    let file = |relative: &str| {
        let path = package_dir.join(relative);
        path.is_file().then_some(path)
    };

    let mut roots = Vec::new();
    let lib = explicit_paths(&manifest, "lib");
    roots.extend(if lib.is_empty() {
        file("src/lib.rs").into_iter().collect()
    } else {
        lib.into_iter().filter_map(|p| file(&p)).collect::<Vec<_>>()
    });

    let mut bins = named_targets(&manifest, &BINS, package_dir, |bin| {
        (Some(bin) == name).then(|| package_dir.join("src/main.rs"))
    });
    if auto(BINS.auto) {
        bins.extend(file("src/main.rs"));
        bins.extend(discovered(&package_dir.join(BINS.dir))?);
    }
    push_group(&mut roots, bins);

    for kind in &OTHERS {
        let mut group = named_targets(&manifest, kind, package_dir, |_| None);
        if auto(kind.auto) {
            group.extend(discovered(&package_dir.join(kind.dir))?);
        }
        push_group(&mut roots, group);
    }

    match package.get("build") {
        Some(Value::String(path)) => roots.extend(file(path)),
        Some(Value::Boolean(false)) => {}
        _ => roots.extend(file("build.rs")),
    }
    let mut seen = std::collections::HashSet::new();
    roots.retain(|root| seen.insert(root.clone()));
    Ok(roots)
}

/// Appends `group`, sorted, keeping the main binary (`src/main.rs`) first.
fn push_group(roots: &mut Vec<PathBuf>, mut group: Vec<PathBuf>) {
    group.sort_by_key(|path| (!path.ends_with("src/main.rs"), path.clone()));
    group.retain(|path| path.is_file());
    roots.extend(group);
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
    kind: &Kind,
    package_dir: &Path,
    fallback: impl Fn(&str) -> Option<PathBuf>,
) -> Vec<PathBuf> {
    let Some(Value::Array(tables)) = manifest.get(kind.table) else {
        return Vec::new();
    };
    let dir = package_dir.join(kind.dir);
    tables
        .iter()
        .filter_map(Value::as_table)
        .filter_map(|table| {
            if let Some(path) = table.get("path").and_then(Value::as_str) {
                return Some(package_dir.join(path));
            }
            let name = table.get("name").and_then(Value::as_str)?;
            [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("main.rs"),
            ]
            .into_iter()
            .find(|candidate| candidate.is_file())
            .or_else(|| fallback(name))
        })
        .collect()
}

/// `dir/x.rs` and `dir/x/main.rs` for every `x` in `dir` (none if `dir` is
/// not a directory).
fn discovered(dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let io = |source| IndexError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|ext| ext == "rs") && path.is_file() {
            found.push(path);
        } else if path.join("main.rs").is_file() {
            found.push(path.join("main.rs"));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
