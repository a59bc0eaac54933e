//! `cargo xtask recall`: how many of the files rustc reads does
//! `verter build` reach, on real registry crates.
//!
//! ```text
//! cargo xtask recall [--dep 'name = "req"']... [--dep-info DIR]
//! ```
//! The task writes a probe package under `target/recall/` that depends on
//! the crates (tokio with every feature, serde, libc, hashbrown,
//! portable-atomic, parking_lot, regex by default), runs `cargo check` on
//! it, and reads rustc's dep-info (`target/debug/deps/*.d`: every file
//! rustc read for each crate and build script). For every registry package
//! named there it runs the release `verter build` on the package's
//! directory and compares the `.rs` files rustc read inside that directory
//! with the files verter reached (indexed or failed). It prints one line
//! per package with a miss, every missed file, and a last line
//! `result recall packages=P rustc_files=R reached=H recall=X` that
//! `docs/benchmarks.md` quotes. `--dep-info DIR` reads an existing
//! build's dep-info instead (this workspace's `target/debug/deps`, say).
//!
//! rustc reads only the files its `cfg` selects, while verter reads every
//! candidate, so only recall is measured: extra files verter reads are not
//! misses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The probe's dependencies when `--dep` is not given.
const DEFAULT_DEPS: [&str; 7] = [
    r#"tokio = { version = "1", features = ["full"] }"#,
    r#"serde = { version = "1", features = ["derive"] }"#,
    r#"libc = "0.2""#,
    r#"hashbrown = "0.15""#,
    r#"portable-atomic = "1""#,
    r#"parking_lot = "0.12""#,
    r#"regex = "1""#,
];

/// Runs the task.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut deps: Vec<String> = Vec::new();
    let mut dep_info: Option<PathBuf> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dep" => deps.push(args.next().context("--dep needs a value")?.clone()),
            "--dep-info" => {
                dep_info = Some(PathBuf::from(
                    args.next().context("--dep-info needs a directory")?,
                ));
            }
            other => bail!("unknown argument {other}"),
        }
    }
    if deps.is_empty() {
        deps = DEFAULT_DEPS.iter().map(|dep| (*dep).to_owned()).collect();
    }
    let probe = root.join("target").join("recall").join("probe");
    write_probe(&probe, &deps)?;
    let deps_dir = match dep_info {
        Some(dir) => dir,
        None => {
            let status = Command::new(env!("CARGO"))
                .current_dir(&probe)
                .args(["check", "--quiet"])
                .status()
                .context("running cargo check on the probe")?;
            if !status.success() {
                bail!("cargo check of the probe failed");
            }
            probe.join("target").join("debug").join("deps")
        }
    };
    let verter = crate::release::verter(root)?;

    let rustc = rustc_files(&deps_dir)?;
    let mut report = String::new();
    let (mut total, mut reached_total) = (0, 0);
    for (package, files) in &rustc {
        let reached = verter_files(&verter, package, &probe)?;
        let missed: Vec<&PathBuf> = files.iter().filter(|f| !reached.contains(*f)).collect();
        total += files.len();
        reached_total += files.len() - missed.len();
        if !missed.is_empty() {
            let name = package.file_name().map_or_else(
                || package.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            writeln!(
                report,
                "{name}: {} of {} files",
                files.len() - missed.len(),
                files.len()
            )?;
            for file in missed {
                let relative = file.strip_prefix(package).unwrap_or(file);
                writeln!(report, "  missed {}", relative.display())?;
            }
        }
    }
    print!("{report}");
    let recall = if total == 0 {
        1.0
    } else {
        reached_total as f64 / total as f64
    };
    println!(
        "result recall packages={} rustc_files={total} reached={reached_total} recall={recall:.4}",
        rustc.len()
    );
    Ok(())
}

/// Writes the probe package: a library depending on `deps`, in its own
/// workspace so the enclosing one does not claim it.
fn write_probe(probe: &Path, deps: &[String]) -> Result<()> {
    std::fs::create_dir_all(probe.join("src")).context("creating the probe")?;
    let mut manifest = String::from(
        "[package]\nname = \"verter-recall-probe\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for dep in deps {
        writeln!(manifest, "{dep}")?;
    }
    std::fs::write(probe.join("Cargo.toml"), manifest).context("writing the probe manifest")?;
    std::fs::write(probe.join("src").join("lib.rs"), "//! The recall probe.\n")
        .context("writing the probe library")?;
    Ok(())
}

/// Per registry package directory, the `.rs` files inside it that rustc
/// read, from every dep-info file in `deps_dir`.
fn rustc_files(deps_dir: &Path) -> Result<BTreeMap<PathBuf, BTreeSet<PathBuf>>> {
    let mut packages: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let entries =
        std::fs::read_dir(deps_dir).with_context(|| format!("reading {}", deps_dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|ext| ext != "d") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        for file in dep_info_files(&text) {
            // rustc writes paths as it opened them (`a/../b.rs`); verter
            // reports canonical ones.
            let file = std::fs::canonicalize(&file).unwrap_or(file);
            if let Some(package) = registry_package(&file)
                && file.extension().is_some_and(|ext| ext == "rs")
            {
                packages.entry(package).or_default().insert(file);
            }
        }
    }
    Ok(packages)
}

/// The files a dep-info (Makefile) text names: every path after the first
/// line's colon, with `\ ` unescaped. Its other lines (`path:`) repeat
/// them.
fn dep_info_files(text: &str) -> Vec<PathBuf> {
    let Some(first) = text.lines().next() else {
        return Vec::new();
    };
    let Some((_, deps)) = first.split_once(": ") else {
        return Vec::new();
    };
    let mut files = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                current.push(' ');
                chars.next();
            }
            ' ' => {
                if !current.is_empty() {
                    files.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        files.push(PathBuf::from(current));
    }
    files
}

/// The package directory of a file under cargo's registry sources
/// (`…/registry/src/<index>/<name>-<version>/…`).
fn registry_package(file: &Path) -> Option<PathBuf> {
    let components: Vec<_> = file.components().collect();
    let at = components
        .windows(2)
        .position(|pair| pair[0].as_os_str() == "registry" && pair[1].as_os_str() == "src")?;
    if components.len() <= at + 4 {
        return None;
    }
    Some(components[..at + 4].iter().collect())
}

/// The files `verter build` reached in `package` (indexed or failed), as
/// absolute paths.
fn verter_files(verter: &Path, package: &Path, probe: &Path) -> Result<BTreeSet<PathBuf>> {
    let out = probe.join("index.json");
    let output = Command::new(verter)
        .arg("build")
        .arg(package)
        .arg("--no-cache")
        .arg("--out")
        .arg(&out)
        .output()
        .with_context(|| format!("running verter on {}", package.display()))?;
    if !output.status.success() {
        bail!(
            "verter build {} failed: {}",
            package.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let index: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out)?)?;
    let mut reached = BTreeSet::new();
    for list in ["files", "failures"] {
        for entry in index[list].as_array().into_iter().flatten() {
            if let Some(path) = entry["path"].as_str() {
                reached.insert(package.join(path));
            }
        }
    }
    Ok(reached)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_names_every_file_with_escaped_spaces() {
        let text = "/t/debug/deps/libx-1.rmeta: /r/src/lib.rs /r/src/a\\ b.rs /r/README.md\n\n/r/src/lib.rs:\n";
        assert_eq!(
            dep_info_files(text),
            [
                PathBuf::from("/r/src/lib.rs"),
                PathBuf::from("/r/src/a b.rs"),
                PathBuf::from("/r/README.md")
            ]
        );
        assert!(dep_info_files("").is_empty());
    }

    #[test]
    fn a_registry_file_belongs_to_its_package_directory() {
        let file = Path::new("/h/.cargo/registry/src/index.crates.io-1/tokio-1.0.0/src/lib.rs");
        assert_eq!(
            registry_package(file),
            Some(PathBuf::from(
                "/h/.cargo/registry/src/index.crates.io-1/tokio-1.0.0"
            ))
        );
        assert_eq!(registry_package(Path::new("/work/src/lib.rs")), None);
    }
}
