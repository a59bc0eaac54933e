//! `cargo xtask bare TREE`: `verter build` side by side with the bare loops
//! it is measured against (`crates/verter_index/examples/bare_parse.rs`:
//! read and `syn`-parse exactly the files the build reached, on a plain
//! rayon pool), in one run, alternating, at 1 and 2 threads. The *bare*
//! loop keeps `proc-macro2`'s span table (every byte parsed stays in it);
//! the *lean* loop forgets it after each file, as `verter build` does, and
//! is the baseline: issue 44's targets are verter's CPU (user + system)
//! and peak RSS over the lean loop's. Prints wall time, CPU time and peak
//! RSS of each (CPU and RSS through `/usr/bin/time` when present), the
//! ratios per round, and their medians.

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
        .args(["--progress", "off", "--no-cache", "--out"])
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
    let mut ratios: Vec<(&str, f64, Option<f64>)> = Vec::new();
    for round in 1..=rounds {
        for threads in ["1", "2"] {
            let mut ours = Command::new(&verter);
            // A cold build each round: the output cache would answer the
            // second from disk.
            ours.arg("build").arg(&tree).args([
                "--progress",
                "off",
                "--no-cache",
                "--threads",
                threads,
            ]);
            let mut floor = Command::new(&bare);
            floor.arg(&files).arg(threads);
            let mut lean = Command::new(&bare);
            lean.arg(&files).arg(threads).arg("--lean");
            let ours = measure(ours, timer)?;
            let floor = measure(floor, timer)?;
            let lean = measure(lean, timer)?;
            let cpu = match (ours.cpu_s, lean.cpu_s) {
                (Some(a), Some(b)) => Some(a / b.max(f64::EPSILON)),
                _ => None,
            };
            let memory = match (ours.rss_mb, lean.rss_mb) {
                (Some(a), Some(b)) => Some(a / b.max(f64::EPSILON)),
                _ => None,
            };
            println!(
                "round {round}, {threads} thread(s): verter {}; bare {}; lean {}; verter vs lean: {} CPU, {} memory, {:.2}x wall",
                ours.describe(),
                floor.describe(),
                lean.describe(),
                ratio(cpu),
                ratio(memory),
                ours.wall_s / lean.wall_s.max(f64::EPSILON),
            );
            if let Some(cpu) = cpu {
                ratios.push((threads, cpu, memory));
            }
        }
    }
    for threads in ["1", "2"] {
        let mut cpu: Vec<f64> = ratios
            .iter()
            .filter(|(t, ..)| *t == threads)
            .map(|(_, cpu, _)| *cpu)
            .collect();
        let mut memory: Vec<f64> = ratios
            .iter()
            .filter(|(t, ..)| *t == threads)
            .filter_map(|(.., memory)| *memory)
            .collect();
        if !cpu.is_empty() {
            println!(
                "median over {} round(s), {threads} thread(s): verter vs lean {} CPU, {} memory",
                cpu.len(),
                ratio(median(&mut cpu)),
                ratio(median(&mut memory)),
            );
        }
    }
    Ok(())
}

/// `x` as a ratio, or a dash when it was not measured.
fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}x"))
}

/// The median of `values` (the upper one of an even count), if any.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// What one run of a measured command cost.
struct Measured {
    /// Wall seconds.
    wall_s: f64,
    /// User plus system CPU seconds, when `/usr/bin/time` measured them.
    cpu_s: Option<f64>,
    /// Peak RSS in MB (decimal), when `/usr/bin/time` measured it.
    rss_mb: Option<f64>,
}

impl Measured {
    fn describe(&self) -> String {
        match (self.cpu_s, self.rss_mb) {
            (Some(cpu), Some(rss)) => {
                format!("{:.2} s wall, {cpu:.2} s CPU, {rss:.0} MB", self.wall_s)
            }
            _ => format!("{:.2} s wall", self.wall_s),
        }
    }
}

/// Wall time, CPU time and peak RSS of one run of `command` (CPU and RSS
/// only through `/usr/bin/time`).
fn measure(mut command: Command, timer: bool) -> Result<Measured> {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if !timer {
        let started = std::time::Instant::now();
        let status = command.status().context("running a measured command")?;
        if !status.success() {
            bail!("{command:?} failed");
        }
        return Ok(Measured {
            wall_s: started.elapsed().as_secs_f64(),
            cpu_s: None,
            rss_mb: None,
        });
    }
    let report = tempfile_path()?;
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%e %U %S %M", "-o"])
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
    let mut next = |what: &str| -> Result<f64> {
        Ok(fields
            .next()
            .with_context(|| format!("/usr/bin/time printed no {what}"))?
            .parse()?)
    };
    let wall_s = next("elapsed time")?;
    let cpu_s = next("user time")? + next("system time")?;
    let kilobytes = next("max RSS")?;
    Ok(Measured {
        wall_s,
        cpu_s: Some(cpu_s),
        rss_mb: Some(kilobytes * 1024.0 / 1e6),
    })
}

fn tempfile_path() -> Result<PathBuf> {
    let dir = std::env::temp_dir();
    Ok(dir.join(format!("verter-bare-{}.time", std::process::id())))
}
