//! `cargo xtask bare TREE`: `verter build` side by side with the bare loop
//! it is measured against (`crates/verter_index/examples/bare_parse.rs`:
//! read and `syn`-parse exactly the files the build reached, on a plain
//! rayon pool), in one run, alternating, at 1 and 2 threads. Prints wall
//! time and peak RSS of each (through `/usr/bin/time` when present) and
//! the ratios.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs the task.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut tree = None;
    let mut rounds = 2_usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .context("--rounds needs a number")?
                    .parse()
                    .context("--rounds needs a number")?;
            }
            other if tree.is_none() => tree = Some(PathBuf::from(other)),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let tree = tree.context("usage: cargo xtask bare TREE [--rounds N]")?;
    let tree = tree
        .canonicalize()
        .with_context(|| format!("{} does not exist", tree.display()))?;
    for (what, args) in [
        ("verter", &["-p", "verter_cli"][..]),
        (
            "the bare loop",
            &["-p", "verter_index", "--example", "bare_parse"][..],
        ),
    ] {
        let status = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(["build", "--release", "--quiet"])
            .args(args)
            .status()
            .with_context(|| format!("building {what}"))?;
        if !status.success() {
            bail!("building {what} failed");
        }
    }
    let release = root.join("target").join("release");
    let verter = release.join("verter");
    let bare = release.join("examples").join("bare_parse");
    let work = root.join("target").join("bare");
    std::fs::create_dir_all(&work)?;

    // The file list: every file the build reached, indexed or failed.
    let index = work.join("index.json");
    let status = Command::new(&verter)
        .arg("build")
        .arg(&tree)
        .args(["--progress", "off", "--out"])
        .arg(&index)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running verter build")?;
    if !status.success() {
        bail!("verter build {} failed", tree.display());
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&index)?)?;
    let mut list = String::new();
    for section in ["files", "failures"] {
        for entry in json[section].as_array().context("an index")? {
            let path = entry["path"].as_str().context("a path")?;
            writeln!(list, "{}", tree.join(path).display())?;
        }
    }
    let files = work.join("files.txt");
    std::fs::write(&files, &list)?;
    println!(
        "bare: {} files under {}",
        list.lines().count(),
        tree.display()
    );

    let timer = Path::new("/usr/bin/time").exists();
    for round in 1..=rounds {
        for threads in ["1", "2"] {
            let mut ours = Command::new(&verter);
            ours.arg("build")
                .arg(&tree)
                .args(["--progress", "off", "--threads", threads]);
            let mut floor = Command::new(&bare);
            floor.arg(&files).arg(threads);
            let (ours_s, ours_mb) = measure(ours, timer)?;
            let (floor_s, floor_mb) = measure(floor, timer)?;
            let memory = match (ours_mb, floor_mb) {
                (Some(a), Some(b)) => format!(
                    "{a:.0} MB vs {b:.0} MB ({:.2}x memory)",
                    a / b.max(f64::EPSILON)
                ),
                _ => "peak RSS not measured (no /usr/bin/time)".to_owned(),
            };
            println!(
                "round {round}, {threads} thread(s): verter {ours_s:.2} s, bare {floor_s:.2} s ({:.2}x the time); {memory}",
                ours_s / floor_s.max(f64::EPSILON)
            );
        }
    }
    Ok(())
}

/// Wall seconds and peak RSS in MB (decimal) of one run of `command`.
fn measure(mut command: Command, timer: bool) -> Result<(f64, Option<f64>)> {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if !timer {
        let started = std::time::Instant::now();
        let status = command.status().context("running a measured command")?;
        if !status.success() {
            bail!("{command:?} failed");
        }
        return Ok((started.elapsed().as_secs_f64(), None));
    }
    let report = tempfile_path()?;
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%e %M", "-o"])
        .arg(&report)
        .arg(command.get_program())
        .args(command.get_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running /usr/bin/time")?;
    if !status.success() {
        bail!("{command:?} failed");
    }
    let text = std::fs::read_to_string(&report)?;
    let mut fields = text.split_whitespace();
    let seconds: f64 = fields.next().context("elapsed")?.parse()?;
    let kilobytes: f64 = fields.next().context("max RSS")?.parse()?;
    Ok((seconds, Some(kilobytes * 1024.0 / 1e6)))
}

fn tempfile_path() -> Result<PathBuf> {
    let dir = std::env::temp_dir();
    Ok(dir.join(format!("verter-bare-{}.time", std::process::id())))
}
