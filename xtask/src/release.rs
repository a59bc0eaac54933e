//! The release `verter` binary the measuring tasks run (`recall`,
//! `watch-latency`): built once per task, found where cargo put it. Builds
//! nothing else and runs nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Builds the release `verter` in the workspace at `root` and returns its
/// path (under `CARGO_TARGET_DIR` when set, else `target/`).
pub(crate) fn verter(root: &Path) -> Result<PathBuf> {
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "verter_cli"])
        .status()
        .context("building verter")?;
    if !status.success() {
        bail!("building verter failed");
    }
    Ok(target_dir(root).join("release").join("verter"))
}

/// Where cargo puts the workspace's build output.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}
