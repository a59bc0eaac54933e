//! The `verter_bench` binary: runs one workload on one system per process
//! (so each peak RSS is that system's own) and prints `result key=value`
//! lines; `quick` runs the whole correctness pass in one process.
//!
//! ```text
//! verter_bench w1 --system verter --threads 2 --n 10000 --c 0 --iterations 3
//! verter_bench w1 --system salsa --threads 1 --n 10000 --c 0 --only-build
//! verter_bench w1 --system salsa --threads 1 --n 10000 --c 0 --only-generate
//! verter_bench w2 --system salsa --threads 1 --n 10000 --c 0 --iterations 3
//! verter_bench w3 --system verter --threads 2 --n 10000 --c 0 --edits 2000
//! verter_bench w1 --system verter --threads 1 --n 10000 --c 0 --iterations 5 --causal-log default
//! verter_bench w2 --system verter --threads 2 --n 10000 --c 0 --iterations 5 --stage-stats
//! verter_bench w3 --system verter --threads 2 --n 10000 --c 0 --edits 2000 --no-cutoff
//! verter_bench w4 --system tokio --threads 2 --n 10000 --c 10 --factor 10
//! verter_bench w4 --system verter --threads 2 --n 10000 --c 0 --factor 10 --submit try-dag --retry answer
//! verter_bench dag --threads 2 --n 10000 --c 0 --iterations 5 [--files 0] [--ready-depth 64]
//! verter_bench w5 [--system verter] --threads 1 --n 10000 --chain 100 --c 0 --iterations 5
//! verter_bench w5 --system salsa --threads 1 --n 10000 --chain 100 --c 0 --only-build
//! verter_bench quick [--n 1000] [--edits 200]
//! ```
//!
//! `w1 --only-build` runs one cold build of a fresh system and drops it,
//! nothing else (no reference build, serial kernel run, urgent build or hash
//! check; one build whatever `--iterations` says); its line says
//! `mode=only_build` and reports the build (`wall_us`), the drop
//! (`teardown_us`), the peak RSS, the allocations and, for verter, the share
//! of the build its DAG lock was held (`lock_held_share`, also on the full
//! W1 line). `w1 --only-generate` generates the same sources and stops
//! (`mode=only_generate`). Under callgrind, the instructions of the first
//! minus the second, at N = 10k minus N = 1k over 9 000, are the system's
//! own per file per build, teardown included (`cargo xtask bench`).
//!
//! `dag` runs one host DAG of `--n` nodes through verter, a serial
//! topological loop and rayon in one process (three result lines);
//! `--files F` makes its first layer the Analysis of F generated files.
//! `w4 --submit try-dag` (verter only) submits each request as a one-node
//! DAG through `try_submit_dag`, retrying when backpressured as `--retry`
//! says (`answer`: park until another answer lands; `yield`: yield the
//! thread and try again).
//!
//! `w5` (deep chains, `verter_bench::chains`) runs verter and salsa in one
//! process, or only `--system`: the cold build, edits at a chain's head,
//! and with both systems the cold wall ratio. `w5 --system S --only-build`
//! and `--only-generate` are W1's single-build modes for callgrind.
//!
//! `--no-cutoff` (verter only, W1–W3) turns verter's early cutoff off: the
//! executor never calls two outputs equal, and the result lines say
//! `cutoff=off`. `--causal-log N` and `--stage-stats` (verter only, W1 and
//! W2) turn on what verter records about its own work (issue 17):
//! `SchedulerConfig::causal_log` = N events (`default`:
//! `verter_scheduler::DEFAULT_CAUSAL_LOG`) and `SchedulerConfig::stage_stats`;
//! the result lines then say `causal_log=N` and `stage_stats=on`. Every other
//! option takes a value.
//!
//! Owns argument parsing only; the workloads live in the library.

use std::alloc::System;
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use verter_bench::alloc_count::Counting;
use verter_bench::chains::{ChainShape, w5, w5_only};
use verter_bench::dag::{DagShape, dag};
use verter_bench::overload::{OverloadShape, Retry, Submission, w4};
use verter_bench::quick;
use verter_bench::restart::{RestartShape, w6};
use verter_bench::storm::{StormShape, w3};
use verter_bench::verter_runner::Observability;
use verter_bench::workloads::{Shape, SystemKind, only_build, only_generate, w1, w2};

/// The allocator the binary always used (the system's), counted, so W1 can
/// report allocations per file.
#[global_allocator]
static ALLOCATOR: Counting = Counting::new(System);

const USAGE: &str = "usage: verter_bench (w1|w2|w3|w4) --system (verter|salsa|rayon|tokio) \
[--threads 2] [--n 1000] [--c 0] [--iterations 3] [--edits 2000] [--factor 10] [--no-cutoff] \
[--submit (request|try-dag)] [--retry (answer|yield)] [--causal-log (N|default)] [--stage-stats]
       verter_bench w1 --system (verter|salsa|rayon|tokio) [--threads 2] [--n 1000] [--c 0] (--only-build|--only-generate)
       verter_bench w5 [--system (verter|salsa)] [--threads 1] [--n 10000] [--chain 100] [--c 0] [--iterations 5] [--only-build|--only-generate]
       verter_bench w6 [--threads 2] [--n 100000] [--c 0] [--iterations 3]
       verter_bench dag [--threads 2] [--n 10000] [--c 0] [--iterations 3] [--files 0] [--ready-depth 64]
       verter_bench quick [--n 1000] [--edits 200]
--no-cutoff: verter only, w1 to w3: early cutoff off (the `before` measurement)
--causal-log, --stage-stats: verter only, w1 and w2: the causal log of N events (default: 16384) and per-stage statistics on
--only-build: w1 and w5 (with --system): one cold build of a fresh system, then its drop, nothing else (for callgrind)
--only-generate: w1 and w5 (with --system): generate the sources and stop (subtracted from --only-build)";

/// The options that take no value.
const NO_CUTOFF: &str = "no-cutoff";
const STAGE_STATS: &str = "stage-stats";
const ONLY_BUILD: &str = "only-build";
const ONLY_GENERATE: &str = "only-generate";
const FLAGS: [&str; 4] = [NO_CUTOFF, STAGE_STATS, ONLY_BUILD, ONLY_GENERATE];

fn main() -> ExitCode {
    // The harness's host threads get the stage threads' stack, as a host
    // embedding verter should give any thread that waits for answers: such
    // a thread runs urgent stages itself, and on a smaller stack it would
    // first allocate one for them (SchedulerConfig::callers_run_urgent_work).
    // Every system's harness runs on it alike.
    verter_bench::host_thread("bench-host")
        .spawn(run)
        .expect("spawn the harness thread")
        .join()
        .expect("the harness panicked")
}

fn run() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((workload, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let options = match parse_options(rest) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let number = |key: &str, default: usize| -> usize {
        options
            .get(key)
            .map_or(Some(default), |value| value.parse().ok())
            .unwrap_or_else(|| panic!("--{key} takes a number\n{USAGE}"))
    };
    let system = options.get("system").map(|name| {
        SystemKind::parse(name).unwrap_or_else(|| panic!("unknown system `{name}`\n{USAGE}"))
    });
    let cutoff = !options.contains_key(NO_CUTOFF);
    if !cutoff
        && (system != Some(SystemKind::Verter)
            || matches!(workload.as_str(), "w4" | "w5" | "quick"))
    {
        eprintln!("--no-cutoff is for verter on w1, w2 or w3 only\n{USAGE}");
        return ExitCode::from(2);
    }
    let causal_log = match options.get("causal-log").map(String::as_str) {
        None => 0,
        Some("default") => verter_scheduler::DEFAULT_CAUSAL_LOG,
        Some(size) => match size.parse() {
            Ok(size) => size,
            Err(_) => {
                eprintln!("--causal-log takes a number of events or `default`\n{USAGE}");
                return ExitCode::from(2);
            }
        },
    };
    let observability = Observability {
        causal_log,
        stage_stats: options.contains_key(STAGE_STATS),
    };
    if observability.is_on()
        && (system != Some(SystemKind::Verter) || !matches!(workload.as_str(), "w1" | "w2"))
    {
        eprintln!("--causal-log and --stage-stats are for verter on w1 or w2 only\n{USAGE}");
        return ExitCode::from(2);
    }
    let (build_only, generate_only) = (
        options.contains_key(ONLY_BUILD),
        options.contains_key(ONLY_GENERATE),
    );
    if (build_only || generate_only) && !(workload == "w1" || workload == "w5" && system.is_some())
    {
        eprintln!("--only-build and --only-generate are for w1, and w5 with --system\n{USAGE}");
        return ExitCode::from(2);
    }
    if build_only && generate_only {
        eprintln!("--only-build and --only-generate exclude each other\n{USAGE}");
        return ExitCode::from(2);
    }
    let shape = |system: SystemKind| Shape {
        cutoff,
        observability,
        ..Shape::new(
            system,
            number("threads", 2),
            number("n", 1_000),
            number("c", 0) as u64,
            number("iterations", 3),
        )
    };
    let records = match (workload.as_str(), system) {
        ("quick", _) => {
            let (files, edits) = (number("n", 1_000), number("edits", 200));
            quick::with_watchdog("the quick pass", Duration::from_secs(600), move || {
                quick::run(files, edits)
            })
        }
        ("w1", Some(system)) if build_only => vec![only_build(shape(system))],
        ("w1", Some(system)) if generate_only => vec![only_generate(shape(system))],
        ("w1", Some(system)) => vec![w1(shape(system))],
        ("w2", Some(system)) => w2(shape(system)),
        ("w3", Some(system)) => vec![w3(StormShape {
            system,
            threads: number("threads", 2),
            files: number("n", 1_000),
            spin_us: number("c", 0) as u64,
            edits: number("edits", 2_000),
            cutoff,
        })],
        ("w4", Some(system)) => {
            let submission = match options.get("submit").map(String::as_str) {
                None | Some("request") if options.contains_key("retry") => {
                    eprintln!("--retry goes with --submit try-dag\n{USAGE}");
                    return ExitCode::from(2);
                }
                None | Some("request") => Submission::Request,
                Some("try-dag") => {
                    match Retry::parse(options.get("retry").map_or("answer", String::as_str)) {
                        Some(retry) => Submission::TryDag(retry),
                        None => {
                            eprintln!("--retry is answer or yield\n{USAGE}");
                            return ExitCode::from(2);
                        }
                    }
                }
                Some(other) => {
                    eprintln!("unknown --submit `{other}`\n{USAGE}");
                    return ExitCode::from(2);
                }
            };
            if submission != Submission::Request && system != SystemKind::Verter {
                eprintln!("--submit try-dag is for verter only\n{USAGE}");
                return ExitCode::from(2);
            }
            vec![w4(OverloadShape {
                system,
                threads: number("threads", 2),
                files: number("n", 1_000),
                spin_us: number("c", 0) as u64,
                factor: number("factor", 10),
                submission,
            })]
        }
        ("w5", system) => {
            if system
                .is_some_and(|system| !matches!(system, SystemKind::Verter | SystemKind::Salsa))
            {
                eprintln!("w5 runs verter and salsa only\n{USAGE}");
                return ExitCode::from(2);
            }
            let chain_shape = ChainShape {
                system: system.unwrap_or(SystemKind::Verter),
                threads: number("threads", 1),
                files: number("n", 10_000),
                chain: number("chain", 100).max(1),
                spin_us: number("c", 0) as u64,
                iterations: number("iterations", 5),
            };
            if build_only || generate_only {
                vec![w5_only(chain_shape, generate_only)]
            } else {
                w5(chain_shape, system)
            }
        }
        ("w6", None) => w6(RestartShape {
            threads: number("threads", 2),
            files: number("n", 100_000),
            spin_us: number("c", 0) as u64,
            iterations: number("iterations", 3),
        }),
        ("dag", None) => dag(DagShape {
            files: number("files", 0),
            ready_depth: number("ready-depth", verter_scheduler::MAX_READY_QUEUE_DEPTH),
            ..DagShape::new(
                number("threads", 2),
                number("n", 10_000),
                number("c", 0) as u64,
                number("iterations", 3),
            )
        }),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    for record in records {
        println!("{}", record.line());
    }
    ExitCode::SUCCESS
}

/// `--key value` pairs, and the [`FLAGS`] alone.
fn parse_options(args: &[String]) -> Result<HashMap<String, String>, String> {
    let mut options = HashMap::new();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let key = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument `{flag}`"))?;
        if FLAGS.contains(&key) {
            options.insert(key.to_owned(), String::new());
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("--{key} needs a value"))?;
        options.insert(key.to_owned(), value.clone());
    }
    Ok(options)
}
