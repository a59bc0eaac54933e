//! A micro-benchmark of `verter_remote` against a running REAPI server
//! (made for the BuildGrid fixture in `.ci/buildgrid/`, whose workers run
//! on this machine). Prints markdown tables of medians and p90s.
//!
//! ```text
//! .ci/buildgrid/bench-rust                       # starts the fixture, runs everything, stops it
//! # or, with the fixture up:
//! set -a; . target/buildgrid/env; set +a
//! cargo run --release -p verter_remote --example reapi_bench -- [--n 20] [--sections all]
//! ```
//!
//! Sections (`--sections a,b,...`; default all):
//! - `latency`: the uncached round trip of a trivial salted action
//!   (`/bin/true`), with the client's [`Timings`] split.
//! - `throughput`: `--burst` salted `/bin/true` actions, `--inflight` at a
//!   time.
//! - `cache`: `run_blocking` of a cached action (`GetActionResult` plus the
//!   output fetch), the bare `GetActionResult` RPC, and an `Execute` the
//!   server answers from its cache. The client sends `Execute` only after
//!   its own lookup missed, so that last one is measured with a raw tonic
//!   client.
//! - `cancel`: from `RemoteJob::cancel` to `on_done`, to the server
//!   accepting `CancelOperation` (the client's `cancels_sent` counter), and
//!   to the command's process disappearing on the worker.
//! - `sleep`: when remote pays: `--count` actions of `/bin/sleep d` for each
//!   `--durations` d (ms), locally on `--local-threads` threads versus
//!   remotely with `--remote-inflight` in flight, `--reps` times each.
//!
//! Every uncached action carries a per-run nonce in its environment.

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::longrunning::operation;
use prost::Message;
use reapi::action_cache_client::ActionCacheClient;
use reapi::execution_client::ExecutionClient;
use verter_remote::{
    ActionOutcome, ActionSpec, CacheSource, Digest, RemoteConfig, RemoteError, RemoteExecutor,
    Timings,
};

const PATH: &str = "/usr/bin:/bin";

struct Options {
    url: String,
    instance: String,
    n: usize,
    burst: usize,
    inflight: usize,
    durations: Vec<u64>,
    count: usize,
    local_threads: usize,
    remote_inflight: usize,
    reps: usize,
    sections: Vec<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        url: std::env::var("VERTER_REMOTE_URL").unwrap_or_default(),
        instance: std::env::var("VERTER_REMOTE_INSTANCE").unwrap_or_default(),
        n: 20,
        burst: 200,
        inflight: 50,
        durations: vec![0, 50, 200, 1000],
        count: 16,
        local_threads: 2,
        remote_inflight: 16,
        reps: 3,
        sections: ["latency", "throughput", "cache", "cancel", "sleep"]
            .map(str::to_owned)
            .to_vec(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        let number = |text: String| {
            text.parse::<usize>()
                .map_err(|_| format!("{text:?} is not a count"))
        };
        match arg.as_str() {
            "--remote" => options.url = value()?,
            "--remote-instance" => options.instance = value()?,
            "--n" => options.n = number(value()?)?.max(1),
            "--burst" => options.burst = number(value()?)?,
            "--inflight" => options.inflight = number(value()?)?.max(1),
            "--count" => options.count = number(value()?)?,
            "--local-threads" => options.local_threads = number(value()?)?.max(1),
            "--remote-inflight" => options.remote_inflight = number(value()?)?.max(1),
            "--reps" => options.reps = number(value()?)?.max(1),
            "--durations" => {
                options.durations = value()?
                    .split(',')
                    .map(|d| d.parse().map_err(|_| format!("{d:?} is not milliseconds")))
                    .collect::<Result<_, _>>()?;
            }
            "--sections" => {
                let sections = value()?;
                if sections != "all" {
                    options.sections = sections.split(',').map(str::to_owned).collect();
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.url.is_empty() {
        return Err("no server: set VERTER_REMOTE_URL or pass --remote URL".to_owned());
    }
    Ok(options)
}

// --- statistics -------------------------------------------------------------------

/// The median and the p90 of `samples` (the same p90 as `.ci/buildgrid/bench.py`).
fn median_p90(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    assert!(n > 0, "no samples");
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    };
    let p90 = sorted[(n * 9 / 10).min(n - 1)];
    (median, p90)
}

fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// A markdown table being printed.
struct Table;

impl Table {
    fn start(title: &str) -> Self {
        println!("\n### {title}\n");
        println!("| what | median | p90 | n |");
        println!("| --- | ---: | ---: | ---: |");
        Self
    }

    fn row(&self, what: &str, samples: &[Duration]) {
        let (median, p90) = median_p90(samples);
        println!(
            "| {what} | {} | {} | {} |",
            ms(median),
            ms(p90),
            samples.len()
        );
    }

    fn note(&self, what: &str, value: &str) {
        println!("| {what} | {value} | | |");
    }
}

// --- actions ----------------------------------------------------------------------

/// Unique per run of the benchmark.
fn run_nonce() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_nanos();
    format!("{}-{nanos:x}", std::process::id())
}

fn salted(arguments: &[&str], salt: &str) -> ActionSpec {
    ActionSpec::new(arguments.iter().copied())
        .env("VERTER_BENCH_SALT", salt)
        .env("PATH", PATH)
}

fn timed<T>(body: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = body();
    (value, started.elapsed())
}

fn expect_ok(result: Result<ActionOutcome, RemoteError>) -> ActionOutcome {
    result
        .and_then(ActionOutcome::success)
        .unwrap_or_else(|err| panic!("a benchmark action failed: {err}"))
}

/// Runs `specs` with at most `inflight` submitted at once; returns each
/// one's outcome and submit-to-answer latency, and the wall time.
fn run_window(
    executor: &RemoteExecutor,
    specs: Vec<ActionSpec>,
    inflight: usize,
) -> (Vec<(ActionOutcome, Duration)>, Duration) {
    let started = Instant::now();
    let total = specs.len();
    let (sender, answers) = mpsc::channel();
    let mut pending = specs.into_iter();
    let submit_next = |pending: &mut std::vec::IntoIter<ActionSpec>| {
        if let Some(spec) = pending.next() {
            let sender = sender.clone();
            let submitted = Instant::now();
            executor.submit(spec, move |result| {
                let _ = sender.send((result, submitted.elapsed()));
            });
        }
    };
    for _ in 0..inflight {
        submit_next(&mut pending);
    }
    let mut done = Vec::with_capacity(total);
    while done.len() < total {
        let (result, latency) = answers
            .recv_timeout(Duration::from_secs(600))
            .expect("an answer within 10 minutes");
        done.push((expect_ok(result), latency));
        submit_next(&mut pending);
    }
    (done, started.elapsed())
}

// --- sections ---------------------------------------------------------------------

fn latency(executor: &RemoteExecutor, options: &Options, nonce: &str) {
    for i in 0..3 {
        expect_ok(executor.run_blocking(salted(&["/bin/true"], &format!("{nonce}-warm-{i}"))));
    }
    let mut walls = Vec::new();
    let mut timings = Vec::new();
    for i in 0..options.n {
        let spec = salted(&["/bin/true"], &format!("{nonce}-seq-{i}"));
        let (outcome, wall) = timed(|| expect_ok(executor.run_blocking(spec)));
        assert_eq!(outcome.from_cache, CacheSource::Executed);
        walls.push(wall);
        timings.push(outcome.timings);
    }
    let table = Table::start("uncached round trip, `/bin/true`, one at a time");
    table.row("`run_blocking` wall time", &walls);
    timing_rows(&table, &timings);
}

fn timing_rows(table: &Table, timings: &[Timings]) {
    let pick = |f: fn(&Timings) -> Duration| timings.iter().map(f).collect::<Vec<_>>();
    table.row("… `timings.total`", &pick(|t| t.total));
    table.row(
        "… `timings.upload` (FindMissingBlobs + uploads)",
        &pick(|t| t.upload),
    );
    table.row(
        "… `timings.queued_and_ran` (Execute stream)",
        &pick(|t| t.queued_and_ran),
    );
    table.row("… `timings.fetch` (outputs)", &pick(|t| t.fetch));
    table.row(
        "… the rest (AC lookup, message building)",
        &pick(|t| {
            t.total
                .saturating_sub(t.upload + t.queued_and_ran + t.fetch)
        }),
    );
}

fn throughput(executor: &RemoteExecutor, options: &Options, nonce: &str) {
    let specs = (0..options.burst)
        .map(|i| salted(&["/bin/true"], &format!("{nonce}-burst-{i}")))
        .collect();
    let (done, wall) = run_window(executor, specs, options.inflight);
    assert!(
        done.iter()
            .all(|(outcome, _)| outcome.from_cache == CacheSource::Executed)
    );
    let latencies: Vec<Duration> = done.iter().map(|(_, latency)| *latency).collect();
    let table = Table::start(&format!(
        "throughput, `/bin/true`, {} actions, {} in flight",
        options.burst, options.inflight
    ));
    table.note(
        "throughput",
        &format!(
            "**{:.1} actions/s** (wall {:.2} s)",
            options.burst as f64 / wall.as_secs_f64(),
            wall.as_secs_f64()
        ),
    );
    table.row("per-action latency (submit → on_done)", &latencies);
}

fn cache(executor: &RemoteExecutor, options: &Options, nonce: &str) {
    let spec = salted(
        &["/bin/sh", "-c", "echo hi > out.txt"],
        &format!("{nonce}-cached"),
    )
    .output("out.txt");
    let first = expect_ok(executor.run_blocking(spec.clone()));
    assert_eq!(first.from_cache, CacheSource::Executed);
    let rounds = options.n.max(30);
    let mut walls = Vec::new();
    let mut timings = Vec::new();
    for _ in 0..rounds {
        let (outcome, wall) = timed(|| expect_ok(executor.run_blocking(spec.clone())));
        assert_eq!(outcome.from_cache, CacheSource::ActionCache);
        assert_eq!(&outcome.outputs["out.txt"][..], b"hi\n");
        walls.push(wall);
        timings.push(outcome.timings);
    }
    let (gar, executes) = raw_cache_calls(options, &first.action_digest, rounds);
    let table = Table::start("cached action (`echo hi > out.txt`, one output file)");
    table.row(
        "`run_blocking` of a cached action (GetActionResult + fetch)",
        &walls,
    );
    table.row(
        "… `timings.total`",
        &timings.iter().map(|t| t.total).collect::<Vec<_>>(),
    );
    table.row(
        "… `timings.fetch` (BatchReadBlobs of out.txt)",
        &timings.iter().map(|t| t.fetch).collect::<Vec<_>>(),
    );
    table.row(
        "… total − fetch (GetActionResult, message building)",
        &timings
            .iter()
            .map(|t| t.total.saturating_sub(t.fetch))
            .collect::<Vec<_>>(),
    );
    table.row("bare GetActionResult RPC, hit (raw tonic)", &gar);
    table.row(
        "Execute answered from the cache, `skip_cache_lookup=false` (raw tonic)",
        &executes,
    );
}

/// `rounds` bare `GetActionResult` calls and `Execute` calls for a cached
/// action, on a tonic channel of their own.
fn raw_cache_calls(
    options: &Options,
    action: &Digest,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(options.url.clone())
            .expect("a valid URL")
            .tcp_nodelay(true)
            .connect()
            .await
            .expect("connect");
        let digest = reapi::Digest {
            hash: action.hash.clone(),
            size_bytes: action.size,
        };
        let mut cache = ActionCacheClient::new(channel.clone());
        let mut gar = Vec::new();
        for _ in 0..rounds {
            let request = reapi::GetActionResultRequest {
                instance_name: options.instance.clone(),
                action_digest: Some(digest.clone()),
                inline_stdout: true,
                inline_stderr: true,
                ..Default::default()
            };
            let started = Instant::now();
            cache.get_action_result(request).await.expect("a cache hit");
            gar.push(started.elapsed());
        }
        let mut execution = ExecutionClient::new(channel);
        let mut executes = Vec::new();
        for _ in 0..rounds {
            let request = reapi::ExecuteRequest {
                instance_name: options.instance.clone(),
                skip_cache_lookup: false,
                action_digest: Some(digest.clone()),
                ..Default::default()
            };
            let started = Instant::now();
            let mut stream = execution
                .execute(request)
                .await
                .expect("Execute")
                .into_inner();
            let response = loop {
                let op = stream
                    .message()
                    .await
                    .expect("the stream")
                    .expect("a done operation");
                if op.done {
                    match op.result {
                        Some(operation::Result::Response(any)) => {
                            break reapi::ExecuteResponse::decode(any.value.as_slice())
                                .expect("an ExecuteResponse");
                        }
                        other => panic!("Execute ended with {other:?}"),
                    }
                }
            };
            executes.push(started.elapsed());
            assert!(response.cached_result, "Execute answered from the cache");
        }
        (gar, executes)
    })
}

fn cancel(executor: &RemoteExecutor, options: &Options, nonce: &str) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let rounds = options.n.min(10);
    let (mut to_done, mut to_ack, mut to_kill) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let marker = dir.path().join(format!("pid-{i}"));
        let marker_tmp = dir.path().join(format!("pid-{i}.tmp"));
        let script = format!(
            "echo $$ > '{}' && mv '{}' '{}'; exec sleep 60",
            marker_tmp.display(),
            marker_tmp.display(),
            marker.display()
        );
        let spec = salted(&["/bin/sh", "-c", &script], &format!("{nonce}-cancel-{i}"));
        let (sender, answers) = mpsc::channel();
        let job = executor.submit(spec, move |result| {
            let _ = sender.send((result, Instant::now()));
        });
        let pid = wait_for_pid(&marker);
        let acks_before = executor.stats().cancels_sent;
        let cancelled = Instant::now();
        job.cancel();
        let (result, answered) = answers
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer");
        assert_eq!(result, Err(RemoteError::Cancelled));
        to_done.push(answered - cancelled);
        let (mut acked, mut killed) = (None, None);
        while acked.is_none() || killed.is_none() {
            if acked.is_none() && executor.stats().cancels_sent > acks_before {
                acked = Some(cancelled.elapsed());
            }
            if killed.is_none() && !alive(pid) {
                killed = Some(cancelled.elapsed());
            }
            assert!(
                cancelled.elapsed() < Duration::from_secs(30),
                "cancel not acknowledged or command not killed within 30 s"
            );
            pause(Duration::from_micros(200));
        }
        to_ack.extend(acked);
        to_kill.extend(killed);
    }
    let table = Table::start("cancelling a running `sleep 60`");
    table.row("`cancel()` → `on_done(Cancelled)`", &to_done);
    table.row(
        "`cancel()` → CancelOperation accepted (`stats().cancels_sent`)",
        &to_ack,
    );
    table.row(
        "`cancel()` → the command killed by the worker (its pid gone)",
        &to_kill,
    );
}

fn wait_for_pid(marker: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(marker)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} not written",
            marker.display()
        );
        pause(Duration::from_millis(1));
    }
}

/// Whether `pid` runs; a zombie counts as gone.
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

/// The pause between two polls for an event outside this process (a file
/// a worker writes, a process ending, a counter the runtime thread bumps).
#[expect(
    clippy::disallowed_methods,
    reason = "a benchmark polling for external events; nothing is synchronised by time"
)]
fn pause(duration: Duration) {
    std::thread::sleep(duration);
}

fn sleep_seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1e3)
}

/// `count` runs of `/bin/sleep d` on `threads` local threads.
fn local_sleeps(d_ms: u64, count: usize, threads: usize) -> Duration {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
                    let status = Command::new("/bin/sleep")
                        .arg(sleep_seconds(d_ms))
                        .status()
                        .expect("run /bin/sleep");
                    assert!(status.success());
                }
            });
        }
    });
    started.elapsed()
}

fn sleeps(executor: &RemoteExecutor, options: &Options, nonce: &str) {
    let workers = std::env::var("VERTER_BUILDGRID_WORKERS").unwrap_or_else(|_| "2?".to_owned());
    println!(
        "\n### `/bin/sleep d` × {}: local ({} threads) vs remote ({} in flight, {} workers); \
         wall times: median (p90) of {} repetitions\n",
        options.count, options.local_threads, options.remote_inflight, workers, options.reps
    );
    println!(
        "| d | local wall | remote wall | remote / local (medians) | remote per-action latency, median (p90) |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let wall = |samples: &[Duration]| {
        let (median, p90) = median_p90(samples);
        format!("{:.3} s ({:.3} s)", median.as_secs_f64(), p90.as_secs_f64())
    };
    for &d in &options.durations {
        let (mut locals, mut remotes, mut latencies) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..options.reps {
            locals.push(local_sleeps(d, options.count, options.local_threads));
            let specs = (0..options.count)
                .map(|i| {
                    salted(
                        &["/bin/sleep", &sleep_seconds(d)],
                        &format!("{nonce}-sleep-{d}-{rep}-{i}"),
                    )
                })
                .collect();
            let (done, remote) = run_window(executor, specs, options.remote_inflight);
            assert!(
                done.iter()
                    .all(|(outcome, _)| outcome.from_cache == CacheSource::Executed)
            );
            remotes.push(remote);
            latencies.extend(done.iter().map(|(_, latency)| *latency));
        }
        let (latency, latency_p90) = median_p90(&latencies);
        println!(
            "| {d} ms | {} | {} | {:.2} | {} ({}) |",
            wall(&locals),
            wall(&remotes),
            median_p90(&remotes).0.as_secs_f64() / median_p90(&locals).0.as_secs_f64(),
            ms(latency),
            ms(latency_p90)
        );
    }
}

fn main() {
    let options = parse_options().unwrap_or_else(|err| {
        eprintln!("reapi_bench: {err}");
        std::process::exit(2);
    });
    let executor = RemoteExecutor::connect(
        RemoteConfig::new(options.url.clone()).with_instance_name(options.instance.clone()),
    )
    .unwrap_or_else(|err| {
        eprintln!("reapi_bench: cannot connect to {}: {err}", options.url);
        std::process::exit(1);
    });
    let nonce = run_nonce();
    println!(
        "## verter_remote against {} (instance {:?}), {} CPUs, VERTER_BUILDGRID_WORKERS={}",
        options.url,
        options.instance,
        std::thread::available_parallelism().map_or(0, usize::from),
        std::env::var("VERTER_BUILDGRID_WORKERS").unwrap_or_else(|_| "unset (2)".to_owned())
    );
    for section in &options.sections {
        match section.as_str() {
            "latency" => latency(&executor, &options, &nonce),
            "throughput" => throughput(&executor, &options, &nonce),
            "cache" => cache(&executor, &options, &nonce),
            "cancel" => cancel(&executor, &options, &nonce),
            "sleep" => sleeps(&executor, &options, &nonce),
            other => {
                eprintln!(
                    "reapi_bench: unknown section {other} (latency, throughput, cache, cancel, sleep)"
                );
                std::process::exit(2);
            }
        }
    }
    let stats = executor.stats();
    println!(
        "\nclient totals: {} actions, {} executed, {} AC hits, {} failed (the cancels), {} retries, {} cancels sent",
        stats.actions,
        stats.executed,
        stats.ac_hits,
        stats.failed,
        stats.retries,
        stats.cancels_sent
    );
}
