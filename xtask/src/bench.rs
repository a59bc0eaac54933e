//! `cargo xtask bench [--quick]`: runs the side-by-side benchmarks of
//! `crates/verter_bench` and writes their tables into `docs/benchmarks.md`.
//!
//! Each measurement runs in its own process
//! (`cargo run --release -p verter_bench -- <workload> ...`), so each peak
//! RSS belongs to one system; the binary prints `result key=value ...`
//! lines, which this task parses and renders. The micro benchmarks run
//! through `cargo bench -p verter_bench --bench micro` (divan); their medians
//! are read from divan's table. Where `valgrind` is installed, callgrind
//! then counts each system's instructions per file (`instructions.rs`).
//!
//! `--quick` runs the correctness pass only (N = 1k, few iterations: equal
//! hashes, every request answered) and never writes the document: it is the
//! CI smoke test, and it asserts nothing about timing.
//!
//! The document keeps everything outside the `<!-- bench:begin -->` /
//! `<!-- bench:end -->` markers untouched, and inside them keeps the block
//! between `<!-- bench:notes:begin -->` and `<!-- bench:notes:end -->` (the
//! hand-written analysis) as it is.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

mod instructions;

const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";
const NOTES_BEGIN: &str = "<!-- bench:notes:begin -->";
const NOTES_END: &str = "<!-- bench:notes:end -->";

/// One `result` line: ordered key/value pairs.
#[derive(Debug, Clone, Default, PartialEq)]
struct Record(Vec<(String, String)>);

impl Record {
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("result ")?;
        rest.split_whitespace()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect::<Option<Vec<_>>>()
            .map(Self)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok()
    }

    fn is(&self, pairs: &[(&str, &str)]) -> bool {
        pairs.iter().all(|(k, v)| self.get(k) == Some(*v))
    }
}

/// Runs the task.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let quick = args.iter().any(|arg| arg == "--quick");
    if let Some(other) = args.iter().find(|arg| *arg != "--quick") {
        bail!("unknown option `{other}`: cargo xtask bench [--quick]");
    }
    let started = Instant::now();
    if quick {
        let records = bench_bin(root, &["quick", "--n", "1000", "--edits", "200"])?;
        println!(
            "bench --quick: {} measurements, every system's hashes equal the reference build, every request answered ({:.0} s)",
            records.len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let mut records = Vec::new();
    for args in full_plan() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        eprintln!("bench: verter_bench {}", args.join(" "));
        records.extend(bench_bin(root, &args)?);
    }
    if instructions::available() {
        eprintln!(
            "bench: callgrind of w1 at c = 0, one thread, per system ({} pairs of runs)",
            instructions::RUNS
        );
        records.extend(instructions::measure(root)?);
    } else {
        eprintln!("bench: valgrind is not installed: no instruction counts");
    }
    eprintln!("bench: cargo bench -p verter_bench --bench micro");
    let micro = run_micro(root)?;
    let machine = machine(root);
    let section = render(&records, &micro, &machine, started.elapsed().as_secs_f64());
    let path = root.join("docs/benchmarks.md");
    let document =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    std::fs::write(&path, replace_section(&document, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    println!(
        "bench: wrote {} ({} measurements, {:.0} s)",
        path.display(),
        records.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every process the full run starts, in order.
fn full_plan() -> Vec<Vec<String>> {
    let mut plan: Vec<String> = Vec::new();
    for (n, iterations) in [(1_000, 10), (10_000, 5), (100_000, 3)] {
        for c in [0, 10] {
            for system in ["verter", "salsa", "rayon", "tokio"] {
                for threads in [1, 2] {
                    plan.push(format!(
                        "w1 --system {system} --threads {threads} --n {n} --c {c} --iterations {iterations}"
                    ));
                }
            }
        }
    }
    for n in [10_000, 100_000] {
        for (system, threads) in [
            ("verter", 2),
            ("salsa", 1),
            ("salsa", 2),
            ("rayon", 2),
            ("tokio", 2),
        ] {
            plan.push(format!(
                "w2 --system {system} --threads {threads} --n {n} --c 0 --iterations 5"
            ));
        }
    }
    for n in [10_000, 100_000] {
        for system in ["verter", "salsa"] {
            plan.push(format!(
                "w3 --system {system} --threads 2 --n {n} --c 0 --edits 2000"
            ));
        }
    }
    for n in [1_000, 10_000] {
        for c in [0, 10] {
            for system in ["verter", "tokio"] {
                plan.push(format!(
                    "w4 --system {system} --threads 2 --n {n} --c {c} --factor 10"
                ));
            }
        }
    }
    plan.iter()
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// Runs the release benchmark binary with `args`; its `result` lines.
fn bench_bin(root: &Path, args: &[&str]) -> Result<Vec<Record>> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--release", "--quiet", "-p", "verter_bench", "--"])
        .args(args)
        .output()
        .context("starting cargo run -p verter_bench")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "verter_bench {} failed ({}):\n{}\n{}",
            args.join(" "),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let records: Vec<Record> = stdout.lines().filter_map(Record::parse).collect();
    if records.is_empty() {
        bail!("verter_bench {} printed no result", args.join(" "));
    }
    Ok(records)
}

/// Runs `command` to its end; its output, or an error naming `what` with
/// the command's standard error when it fails.
fn run_to_success(command: &mut Command, what: &str) -> Result<std::process::Output> {
    let output = command
        .output()
        .with_context(|| format!("starting {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

/// Runs the divan micro benchmarks; name → median as divan prints it.
fn run_micro(root: &Path) -> Result<BTreeMap<String, String>> {
    let output = run_to_success(
        Command::new(env!("CARGO")).current_dir(root).args([
            "bench",
            "--quiet",
            "-p",
            "verter_bench",
            "--bench",
            "micro",
        ]),
        "cargo bench -p verter_bench --bench micro",
    )?;
    Ok(parse_divan(&String::from_utf8_lossy(&output.stdout)))
}

/// Divan rows `├─ name  fastest │ slowest │ median │ ...` → name → median.
fn parse_divan(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|line| {
            let row = line
                .trim_start()
                .strip_prefix("├─ ")
                .or_else(|| line.trim_start().strip_prefix("╰─ "))?;
            let columns: Vec<&str> = row.split('│').collect();
            let name = columns.first()?.split_whitespace().next()?;
            let median = columns.get(2)?.trim();
            Some((name.to_owned(), median.to_owned()))
        })
        .collect()
}

/// Machine, toolchain, versions and date, as lines of text.
fn machine(root: &Path) -> Vec<String> {
    let shell = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .map_or_else(String::new, |kib| {
            format!(", {} GiB RAM", kib / (1024 * 1024))
        });
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let versions: Vec<String> = ["salsa", "tokio", "rayon", "divan"]
        .iter()
        .map(|name| format!("{name} {}", locked_version(&lock, name).unwrap_or("?")))
        .collect();
    vec![
        format!(
            "**Machine:** {cpu}, {} cores{memory}, {}; load average at the start: {}.",
            shell("nproc", &[]),
            shell("uname", &["-sr"]),
            std::fs::read_to_string("/proc/loadavg")
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        ),
        format!(
            "**Toolchain and versions:** {}; {}.",
            shell("rustc", &["--version"]),
            versions.join(", ")
        ),
        format!(
            "**Date:** {} (UTC).",
            shell("date", &["-u", "+%Y-%m-%d %H:%M"])
        ),
        format!(
            "**Commit measured:** {}{}.",
            shell("git", &["rev-parse", "--short", "HEAD"]),
            if shell("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
                ""
            } else {
                " with uncommitted changes in the work tree"
            }
        ),
    ]
}

/// The version of `name` in a Cargo.lock.
fn locked_version<'a>(lock: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!("name = \"{name}\"\nversion = \"");
    let start = lock.find(&marker)? + marker.len();
    lock[start..].split('"').next()
}

/// Replaces the marked section of `document` with `section`, keeping the
/// notes block; appends the section when the markers are missing.
fn replace_section(document: &str, section: &str) -> String {
    let notes = document
        .find(NOTES_BEGIN)
        .zip(document.find(NOTES_END))
        .filter(|(begin, end)| begin < end)
        .map(|(begin, end)| document[begin..end + NOTES_END.len()].to_owned())
        .unwrap_or_else(|| format!("{NOTES_BEGIN}\n{NOTES_END}"));
    let block = format!("{BEGIN}\n{section}\n{notes}\n{END}");
    match (document.find(BEGIN), document.find(END)) {
        (Some(begin), Some(end)) if begin < end => format!(
            "{}{block}{}",
            &document[..begin],
            &document[end + END.len()..]
        ),
        _ => format!("{}\n\n{block}\n", document.trim_end()),
    }
}

fn ms(micros: f64) -> String {
    if micros >= 1_000_000.0 {
        format!("{:.2} s", micros / 1e6)
    } else if micros >= 1_000.0 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{micros:.0} µs")
    }
}

fn ratio(value: Option<f64>, verter: Option<f64>) -> String {
    match (value, verter) {
        (Some(v), Some(base)) if base > 0.0 => format!("{:.2}x", v / base),
        _ => "—".to_owned(),
    }
}

fn mib(kib: Option<f64>) -> String {
    kib.map_or_else(|| "—".to_owned(), |k| format!("{:.0} MiB", k / 1024.0))
}

/// A byte count as B, KiB or MiB; — when absent.
fn bytes(count: Option<f64>) -> String {
    match count {
        None => "—".to_owned(),
        Some(b) if b.abs() >= 1024.0 * 1024.0 => format!("{:.1} MiB", b / (1024.0 * 1024.0)),
        Some(b) if b.abs() >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        Some(b) => format!("{b:.0} B"),
    }
}

/// The whole marked section.
fn render(
    records: &[Record],
    micro: &BTreeMap<String, String>,
    machine: &[String],
    seconds: f64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Side by side: verter, salsa, rayon, tokio (issue 9)\n"
    );
    let _ = writeln!(
        out,
        "Written by `cargo xtask bench` (this whole section except the notes at its end); \
         the full run took {:.0} min. Each row is one process \
         (`cargo run --release -p verter_bench -- <workload> --system <s> --threads <t> --n <N> --c <µs> ...`), \
         so peak RSS (`VmHWM`) is that system's alone (plus the generated sources and the reference build every \
         process holds). Every measurement ends by comparing the system's artifact hashes with a serial cold build \
         of the final sources; a mismatch fails the run. Micro benchmarks: `cargo bench -p verter_bench --bench micro`.\n",
        seconds / 60.0
    );
    for line in machine {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(
        out,
        "- **Kernels:** Analysis parses the `import` lines and digests the text (FNV-1a), Artifact hashes its \
         digest with its imports' digests; each then spins `c` µs. verter runs the import parsing in its Source \
         stage, so it runs 3 stages per file for the 2 kernel tasks. Tasks = 2N.\n\
         - **Sources:** N generated files, each importing K = 4 others (within ±8 ids, 5 % uniformly random); \
         W2 uses the hub variant (1 % of files are hubs; 10 % of files import one hub, Zipf-chosen).\n\
         - **Per-task overhead** = (wall × threads − Σ kernel time) / tasks, where Σ kernel time is one serial \
         run of all kernels in the same process. Ratios are to verter on the same number of threads.\n"
    );
    render_w1(&mut out, records);
    render_w2(&mut out, records);
    render_w3(&mut out, records);
    render_w4(&mut out, records);
    instructions::render(&mut out, records);
    render_micro(&mut out, micro);
    render_targets(&mut out, records, micro);
    out
}

fn w1_rows(records: &[Record]) -> impl Iterator<Item = &Record> {
    records.iter().filter(|r| r.is(&[("workload", "w1")]))
}

fn render_w1(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W1 — cold build\n\nMedian wall time of fresh systems; *first result*: one file requested at high \
         priority while the whole build runs at normal priority, from the start of the build (rayon, tokio: \
         no priorities, so when that file happens to finish; salsa 1 thread: asked for first; salsa 2 threads: \
         a third handle asks while two build). Speed-up = 1-thread wall / 2-thread wall. *allocs / file*, \
         *bytes / file*: heap allocations (a reallocation counts once, at its new size) and their bytes during \
         the timed builds, per file built, leaving out what the harness allocates to drive the system (request \
         vectors, the result map, the loader's in-memory files); *retained / file*: the live heap a build leaves \
         (allocated minus freed, before the system is dropped, without that harness data). Unlike wall time, \
         these do not move with the machine's load; — where a run did not count them.\n"
    );
    let mut cases: Vec<(String, String)> = Vec::new();
    for r in w1_rows(records) {
        let case = (
            r.get("n").unwrap_or("").to_owned(),
            r.get("c").unwrap_or("").to_owned(),
        );
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    for (n, c) in cases {
        let _ = writeln!(
            out,
            "**N = {n}, c = {c} µs**\n\n| system | threads | wall | vs verter | tasks/s | overhead / task | first result | peak RSS | speed-up 1→2 | allocs / file | bytes / file | retained / file |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        let find = |system: &str, threads: &str| {
            w1_rows(records).find(|r| {
                r.is(&[
                    ("system", system),
                    ("threads", threads),
                    ("n", &n),
                    ("c", &c),
                ])
            })
        };
        for system in ["verter", "salsa", "rayon", "tokio"] {
            for threads in ["1", "2"] {
                let Some(r) = find(system, threads) else {
                    continue;
                };
                let verter = find("verter", threads).and_then(|v| v.num("wall_us"));
                let speedup = match (find(system, "1"), find(system, "2")) {
                    (Some(one), Some(two)) if threads == "2" => one
                        .num("wall_us")
                        .zip(two.num("wall_us"))
                        .map_or_else(|| "—".to_owned(), |(a, b)| format!("{:.2}x", a / b)),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "| {system} | {threads} | {} | {} | {} | {} ns | {} | {} | {speedup} | {} | {} | {} |",
                    r.num("wall_us").map_or_else(String::new, ms),
                    ratio(r.num("wall_us"), verter),
                    r.get("tasks_per_s").unwrap_or("—"),
                    r.get("overhead_ns").unwrap_or("—"),
                    r.num("first_us").map_or_else(String::new, ms),
                    mib(r.num("peak_rss_kib")),
                    r.num("allocs_per_file")
                        .map_or_else(|| "—".to_owned(), |a| format!("{a:.1}")),
                    bytes(r.num("alloc_bytes_per_file")),
                    bytes(r.num("retained_bytes_per_file")),
                );
            }
        }
        let _ = writeln!(out);
    }
}

fn render_w2(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W2 — one-file edit after a cold build\n\nHub-variant sources, c = 0, 5 edits per case (medians). \
         *edited fresh*: from the edit until the edited file's artifact is answered (requested first, at high \
         priority; salsa, which has none, computes it before the rest); *all fresh*: from the edit until every artifact is answered; *of which harness*: the part of it the \
         harness spent filling its result map (the same map for every system), so all fresh minus it is the \
         system's own time. (d) requests only the edited \
         file. *re-request* asks for all artifacts again with no edit (pure re-validation). Executions = kernel \
         runs per edit; touched = verter: requests + stage runs, salsa: executed + re-validated queries (event \
         callback), tokio: kernels run, rayon: kernels run.\n"
    );
    let mut ns: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.is(&[("workload", "w2")])) {
        let n = r.get("n").unwrap_or("").to_owned();
        if !ns.contains(&n) {
            ns.push(n);
        }
    }
    for n in ns {
        let _ = writeln!(
            out,
            "**N = {n}**\n\n| case | system | threads | edited fresh | vs verter | all fresh | vs verter | of which harness | executions | touched |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for case in [
            "a_body",
            "b_imports",
            "c_hub",
            "d_only_edited",
            "rerequest_all",
        ] {
            let rows: Vec<&Record> = records
                .iter()
                .filter(|r| r.is(&[("workload", "w2"), ("n", &n), ("case", case)]))
                .collect();
            let verter = rows.iter().find(|r| r.is(&[("system", "verter")]));
            for r in &rows {
                let _ = writeln!(
                    out,
                    "| {case} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.get("system").unwrap_or(""),
                    r.get("threads").unwrap_or(""),
                    r.num("edited_fresh_us").map_or_else(|| "—".to_owned(), ms),
                    ratio(
                        r.num("edited_fresh_us"),
                        verter.and_then(|v| v.num("edited_fresh_us"))
                    ),
                    r.num("all_fresh_us").map_or_else(|| "—".to_owned(), ms),
                    ratio(
                        r.num("all_fresh_us"),
                        verter.and_then(|v| v.num("all_fresh_us"))
                    ),
                    r.num("harness_us").map_or_else(|| "—".to_owned(), ms),
                    r.get("executions").unwrap_or(""),
                    r.get("touched").unwrap_or(""),
                );
            }
        }
        let _ = writeln!(out);
    }
}

fn render_w3(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W3 — edit storm\n\nZipf-distributed edits (10 % change imports, 2 % remove a file — its importers \
         are rewritten first —, 2 % add one) while a background builder keeps requesting every artifact; after \
         each edit a foreground client requests the edited file's artifact at high priority and waits (each \
         answer is checked against the sources at that moment). verter: 2 CPU threads serve both; salsa: the \
         builder has one handle, the foreground uses the editor's handle (a write cancels the builder and waits \
         for its handle). *wasted* (verter) = completions refused as stale / stage runs started. *RSS after \
         reset*: verter after `reset()`, salsa after dropping its database. *heap kept by reset* (verter): the \
         live heap after `reset()` less the live heap before the cold build (counting allocator), so what the \
         reset scheduler holds beyond an empty one, plus the harness's own growth over the run.\n\n\
         | system | N | edits | fg p50 | fg p95 | fg p99 | edit blocks p50 / p99 / max | builder passes (cancelled) | wasted | RSS after ¼ / ½ / all edits | RSS after reset | heap kept by reset |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in records.iter().filter(|r| r.is(&[("workload", "w3")])) {
        let edits = r.get("edits").unwrap_or("0");
        let total: usize = edits.parse().unwrap_or(0);
        let rss: Vec<String> = [total / 4, total / 2, total]
            .iter()
            .map(|e| mib(r.num(&format!("rss_after_{e}_kib"))))
            .collect();
        let wasted = r.get("wasted_percent").map_or_else(
            || "—".to_owned(),
            |p| {
                format!(
                    "{p} % ({} of {})",
                    r.get("wasted").unwrap_or(""),
                    r.get("started").unwrap_or("")
                )
            },
        );
        let _ = writeln!(
            out,
            "| {} | {} | {edits} | {} | {} | {} | {} / {} / {} | {} ({}) | {wasted} | {} | {} | {} |",
            r.get("system").unwrap_or(""),
            r.get("n").unwrap_or(""),
            r.num("fg_p50_us").map_or_else(String::new, ms),
            r.num("fg_p95_us").map_or_else(String::new, ms),
            r.num("fg_p99_us").map_or_else(String::new, ms),
            r.num("edit_block_p50_us").map_or_else(String::new, ms),
            r.num("edit_block_p99_us").map_or_else(String::new, ms),
            r.num("edit_block_max_us").map_or_else(String::new, ms),
            r.get("builder_passes").unwrap_or(""),
            r.get("builder_cancelled").unwrap_or("0"),
            rss.join(" / "),
            mib(r.num("rss_after_reset_kib")),
            r.num("heap_after_reset_vs_before_kib")
                .map_or_else(|| "—".to_owned(), |kib| mib(Some(kib))),
        );
    }
    let _ = writeln!(out);
}

fn render_w4(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W4 — overload\n\nOn a cold project, one client submits 10 requests per file (shuffled) as fast as it \
         can — ten times the distinct work, all at once — and each request is timed from submission to answer \
         (awaited as a future on another thread). tokio: a pull-based hand-written scheduler (one `OnceCell` per \
         analysis and artifact, kernels behind a `Semaphore`, one task per request). *max queue*: verter, the \
         deepest of its inbox and ready queue seen; tokio, the most tasks waiting for a permit. *coalesced*: \
         requests that joined work already admitted (verter dedupe joins; tokio requests that did not initialise \
         their cell).\n\n\
         | N | c | system | requests | wall | p50 | p99 | p99 vs verter | max queue | coalesced | peak RSS |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.is(&[("workload", "w4")]))
        .collect();
    for r in &rows {
        let verter = rows.iter().find(|v| {
            v.is(&[
                ("system", "verter"),
                ("n", r.get("n").unwrap_or("")),
                ("c", r.get("c").unwrap_or("")),
            ])
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.get("n").unwrap_or(""),
            r.get("c").unwrap_or(""),
            r.get("system").unwrap_or(""),
            r.get("requests").unwrap_or(""),
            r.num("wall_us").map_or_else(String::new, ms),
            r.num("p50_us").map_or_else(String::new, ms),
            r.num("p99_us").map_or_else(String::new, ms),
            ratio(r.num("p99_us"), verter.and_then(|v| v.num("p99_us"))),
            r.get("max_queue").unwrap_or(""),
            r.get("coalesced").unwrap_or(""),
            mib(r.num("peak_rss_kib")),
        );
    }
    let _ = writeln!(out);
}

fn render_micro(out: &mut String, micro: &BTreeMap<String, String>) {
    let _ = writeln!(
        out,
        "### Micro (verter alone)\n\ndivan medians of `cargo bench -p verter_bench --bench micro`.\n\n| benchmark | median |\n|---|---|"
    );
    for (name, median) in micro {
        let _ = writeln!(out, "| `{name}` | {median} |");
    }
    let _ = writeln!(out);
}

/// A divan time (`110.8 ns`, `2.8 µs`) in nanoseconds.
fn divan_ns(text: &str) -> Option<f64> {
    let (value, unit) = text.split_once(' ')?;
    let value: f64 = value.parse().ok()?;
    Some(match unit {
        "ps" => value / 1e3,
        "ns" => value,
        "µs" | "us" => value * 1e3,
        "ms" => value * 1e6,
        "s" => value * 1e9,
        _ => return None,
    })
}

fn render_targets(out: &mut String, records: &[Record], micro: &BTreeMap<String, String>) {
    let _ = writeln!(
        out,
        "### Targets of issue 9\n\n| target | measured | met |\n|---|---|---|"
    );
    let w1 = |system: &str, threads: &str, n: &str, c: &str| {
        w1_rows(records)
            .find(|r| r.is(&[("system", system), ("threads", threads), ("n", n), ("c", c)]))
    };
    let mut row = |target: &str, measured: String, met: Option<bool>| {
        let met = match met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "not measured",
        };
        let _ = writeln!(out, "| {target} | {measured} | {met} |");
    };
    let overhead = w1("verter", "2", "100000", "0").and_then(|r| r.num("overhead_ns"));
    row(
        "per-task overhead ≤ 1 µs at c = 0 (verter, 2 threads, N = 100k)",
        overhead.map_or_else(|| "—".to_owned(), |v| format!("{v:.0} ns")),
        overhead.map(|v| v <= 1_000.0),
    );
    for (target, name) in [
        ("dedupe join ≤ 100 ns", "dedupe_join_in_the_dag"),
        ("`invalidate` ≤ 100 ns", "invalidate_end_to_end"),
    ] {
        let value = micro.get(name);
        row(
            target,
            value.map_or_else(|| "—".to_owned(), |v| format!("{v} (`{name}`)")),
            value.and_then(|v| divan_ns(v)).map(|ns| ns <= 100.0),
        );
    }
    for c in ["0", "10"] {
        let verter = w1("verter", "2", "100000", c).and_then(|r| r.num("wall_us"));
        let salsa = w1("salsa", "2", "100000", c).and_then(|r| r.num("wall_us"));
        let value = verter.zip(salsa).map(|(v, s)| v / s);
        row(
            &format!("W1 at 100k ≤ 0.5× salsa's wall time on 2 threads (c = {c})"),
            value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}× salsa")),
            value.map(|v| v <= 0.5),
        );
    }
    let w2 = |case: &str| {
        records.iter().find(|r| {
            r.is(&[
                ("workload", "w2"),
                ("system", "verter"),
                ("n", "100000"),
                ("case", case),
            ])
        })
    };
    let edited = w2("a_body").and_then(|r| r.num("edited_fresh_us"));
    row(
        "W2(a) at 100k: edited file's artifact fresh ≤ 1 ms",
        edited.map_or_else(|| "—".to_owned(), ms),
        edited.map(|v| v <= 1_000.0),
    );
    let rerequest = w2("rerequest_all").and_then(|r| r.num("all_fresh_us"));
    row(
        "re-requesting all 100k artifacts ≤ 10 ms",
        rerequest.map_or_else(|| "—".to_owned(), ms),
        rerequest.map(|v| v <= 10_000.0),
    );
    for c in ["0", "10"] {
        let speedup = w1("verter", "1", "100000", c)
            .and_then(|r| r.num("wall_us"))
            .zip(w1("verter", "2", "100000", c).and_then(|r| r.num("wall_us")))
            .map(|(one, two)| one / two);
        row(
            &format!("2-thread speed-up on W1 ≥ 1.8× (N = 100k, c = {c})"),
            speedup.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×")),
            speedup.map(|v| v >= 1.8),
        );
    }
    for r in records
        .iter()
        .filter(|r| r.is(&[("workload", "w3"), ("system", "verter")]))
    {
        let p99 = r.num("fg_p99_us");
        row(
            &format!(
                "W3 foreground p99 ≤ 5 ms (N = {})",
                r.get("n").unwrap_or("?")
            ),
            p99.map_or_else(|| "—".to_owned(), ms),
            p99.map(|v| v <= 5_000.0),
        );
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marked_section_is_replaced_and_the_rest_kept() {
        let document = format!(
            "# Benchmarks\n\nintro\n\n{BEGIN}\nold tables\n{NOTES_BEGIN}\nmy notes\n{NOTES_END}\n{END}\n\n## after\n"
        );
        let replaced = replace_section(&document, "new tables");
        assert_eq!(
            replaced,
            format!(
                "# Benchmarks\n\nintro\n\n{BEGIN}\nnew tables\n{NOTES_BEGIN}\nmy notes\n{NOTES_END}\n{END}\n\n## after\n"
            )
        );
    }

    #[test]
    fn a_document_without_markers_gets_the_section_appended() {
        let replaced = replace_section("# Benchmarks\n\nintro\n", "tables");
        assert!(replaced.starts_with("# Benchmarks\n\nintro\n\n"));
        assert!(replaced.ends_with(&format!(
            "{BEGIN}\ntables\n{NOTES_BEGIN}\n{NOTES_END}\n{END}\n"
        )));
    }

    #[test]
    fn result_lines_and_divan_rows_parse() {
        let record = Record::parse("result workload=w1 system=verter wall_us=12.500")
            .expect("a result line");
        assert_eq!(record.get("system"), Some("verter"));
        assert_eq!(record.num("wall_us"), Some(12.5));
        assert_eq!(Record::parse("Compiling"), None);
        let divan = "micro      fastest │ slowest │ median │ mean │ samples │ iters\n\
                     ├─ dedupe_join_in_the_dag   110.5 ns │ 166.9 ns │ 110.8 ns │ 112.4 ns │ 100 │ 100000\n\
                     ╰─ source_root_publication  50.85 ns │ 93.74 ns │ 63 ns    │ 63.49 ns │ 100 │ 100000\n";
        let parsed = parse_divan(divan);
        assert_eq!(
            parsed.get("dedupe_join_in_the_dag").map(String::as_str),
            Some("110.8 ns")
        );
        assert_eq!(
            parsed.get("source_root_publication").map(String::as_str),
            Some("63 ns")
        );
        assert_eq!(divan_ns("2.868 µs"), Some(2868.0));
    }

    #[test]
    fn w1_rows_show_allocation_columns_and_dashes_where_a_record_has_none() {
        let records: Vec<Record> = [
            "result workload=w1 system=verter threads=1 n=1000 c=0 wall_us=2000.0 first_us=10.0 \
             peak_rss_kib=20480 allocs_per_file=82.72 alloc_bytes_per_file=17928.5 retained_bytes_per_file=829.7",
            "result workload=w1 system=salsa threads=1 n=1000 c=0 wall_us=1000.0 first_us=5.0 peak_rss_kib=10240",
        ]
        .iter()
        .filter_map(|line| Record::parse(line))
        .collect();
        let mut out = String::new();
        render_w1(&mut out, &records);
        let row = |system: &str| {
            out.lines()
                .find(|line| line.starts_with(&format!("| {system} |")))
                .unwrap_or_else(|| panic!("no {system} row in\n{out}"))
                .to_owned()
        };
        assert!(
            row("verter").ends_with("| 20 MiB |  | 82.7 | 17.5 KiB | 830 B |"),
            "{}",
            row("verter")
        );
        assert!(
            row("salsa").ends_with("| 10 MiB |  | — | — | — |"),
            "{}",
            row("salsa")
        );
        let header = out
            .lines()
            .find(|line| line.starts_with("| system |"))
            .expect("a header");
        let separator = out
            .lines()
            .find(|line| line.starts_with("|---"))
            .expect("a separator");
        for line in [header, &row("verter"), &row("salsa")] {
            assert_eq!(
                line.matches('|').count(),
                separator.matches('|').count(),
                "{line}"
            );
        }
    }

    #[test]
    fn locked_versions_are_read_from_the_lock_file() {
        let lock = "[[package]]\nname = \"salsa\"\nversion = \"0.28.5\"\nsource = \"x\"\n";
        assert_eq!(locked_version(lock, "salsa"), Some("0.28.5"));
        assert_eq!(locked_version(lock, "tokio"), None);
    }
}
