//! `verter-sim`: run the simulator from the command line (what
//! `cargo xtask sim` and `cargo xtask soak` call).
//!
//! ```text
//! verter-sim sim --seed S [--ops N] [--files F]      replay one inline seed
//! verter-sim seeds [--from S] [--count N] [--ops N]  run many inline seeds
//!                [--remote-percent P]  seeds routing work to the fake
//!                                      remote executor (default 50)
//!                [--break-percent P]   seeds breaking lock holds on
//!                                      purpose (default 25)
//!                [--shutdown-percent P] seeds ending with a shutdown
//!                                      (default 20)
//!                [--restart-percent P] seeds restarting their scheduler
//!                                      (default 50)
//! verter-sim soak [--ops N] [--threads T] [--seed S] the threaded simulator
//!                [--checkpoint-every N] [--causal-log N (0: off)]
//!                [--remote-budget B (0: off; default: by the seed)]
//!                [--remote-threads R (default 2)]
//!                [--store-bytes B (0: no output store; default 64 KiB)]
//! ```
//! The last line of every run says how many violations it found; the exit
//! code is 1 when it found any, 2 on wrong usage.

use std::process::ExitCode;
use std::time::Instant;

use verter_sim::causes::CauseStats;
use verter_sim::inline::{DagStats, RestartStats};
use verter_sim::oracle::DepStats;
use verter_sim::remote::RemoteStats;
use verter_sim::threaded::{SoakConfig, soak};
use verter_sim::{SimConfig, replay, run_seed};

fn main() -> ExitCode {
    // Stage panics are part of the simulation: the scheduler catches them and
    // the oracle judges what they turn into. Keep them off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| -> Option<u64> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.replace('_', "").parse().ok())
    };
    let mut config = SimConfig::default();
    if let Some(ops) = flag("--ops") {
        config.ops = ops as usize;
    }
    if let Some(files) = flag("--files") {
        config.files = files as usize;
    }
    if let Some(percent) = flag("--remote-percent") {
        config.remote_percent = percent.min(100) as u32;
    }
    if let Some(percent) = flag("--break-percent") {
        config.break_percent = percent.min(100) as u32;
    }
    if let Some(percent) = flag("--shutdown-percent") {
        config.shutdown_percent = percent.min(100) as u32;
    }
    if let Some(percent) = flag("--restart-percent") {
        config.restart_percent = percent.min(100) as u32;
    }
    match args.first().map(String::as_str) {
        Some("sim") => {
            let Some(seed) = flag("--seed") else {
                eprintln!("usage: verter-sim sim --seed S [--ops N] [--files F]");
                return ExitCode::from(2);
            };
            let (trace, result) = replay(seed, &config);
            match result {
                Ok(report) => {
                    println!(
                        "seed {seed}: {} operations, {} answers judged, {} quiescent checks, digest {:016x}",
                        report.ops, report.answers, report.checks, report.digest
                    );
                    println!("{}", report.dags);
                    println!("{}", report.causes);
                    if report.remote.started > 0 {
                        println!("{}", report.remote);
                    }
                    if report.restarts.restarts > 0 {
                        println!("{}", report.restarts);
                    }
                    println!("0 violations");
                    ExitCode::SUCCESS
                }
                Err(violation) => {
                    for (i, op) in trace.iter().enumerate() {
                        println!("  {i:4}  {op}");
                    }
                    println!("seed {seed}: violation: {violation}");
                    println!("1 violations");
                    ExitCode::FAILURE
                }
            }
        }
        Some("seeds") => {
            let from = flag("--from").unwrap_or(0);
            let count = flag("--count").unwrap_or(1000);
            let started = Instant::now();
            let mut failures = 0u64;
            let mut answers = 0u64;
            let mut artifact_deps = DepStats::default();
            let mut queued = 0u64;
            let mut cut_off = [0u64; 3];
            let mut dags = DagStats::default();
            let mut causes = CauseStats::default();
            let mut remote = RemoteStats::default();
            let mut remote_seeds = 0u64;
            let (mut break_seeds, mut breaks) = (0u64, [0u64; 2]);
            let (mut shutdown_seeds, mut in_flight) = (0u64, 0u64);
            let (mut restart_seeds, mut restarts) = (0u64, RestartStats::default());
            for seed in from..from + count {
                match run_seed(seed, &config) {
                    Ok(report) => {
                        answers += report.answers;
                        artifact_deps.add(&report.artifact_deps);
                        if let Some(answered) = report.shutdown {
                            shutdown_seeds += 1;
                            in_flight += answered;
                        }
                        restart_seeds += u64::from(report.restarts.restarts > 0);
                        restarts.add(&report.restarts);
                        break_seeds += u64::from(report.breaks[0] > 0);
                        breaks[0] += report.breaks[0];
                        breaks[1] += report.breaks[1];
                        remote.add(&report.remote);
                        remote_seeds += u64::from(report.remote.started > 0);
                        queued += report.queued_registrations;
                        for (sum, n) in cut_off.iter_mut().zip(report.cut_off) {
                            *sum += n;
                        }
                        dags.add(&report.dags);
                        causes.add(&report.causes);
                    }
                    Err(failure) => {
                        failures += 1;
                        println!("{failure}");
                        if failures >= flag("--max-failures").unwrap_or(5) {
                            break;
                        }
                    }
                }
            }
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{count} inline seeds from {from}: {answers} answers judged in {secs:.1} s ({:.0} seeds/s); {queued} batch registrations queued",
                count as f64 / secs
            );
            println!(
                "early cutoff judged: {} stages verified without running, {} outputs unchanged, {} texts unchanged at the door",
                cut_off[0], cut_off[1], cut_off[2]
            );
            println!("{artifact_deps}");
            println!("{dags}");
            println!("{causes}");
            println!(
                "{remote_seeds} seeds started remote work (remote routing on for {}% of seeds); {remote}",
                config.remote_percent
            );
            println!(
                "{break_seeds} seeds broke lock holds on purpose ({}% of seeds): {} breaks, {} holds panicked and were recovered",
                config.break_percent, breaks[0], breaks[1]
            );
            println!(
                "{shutdown_seeds} seeds ended with a shutdown ({}% of seeds): {in_flight} requests and DAGs in flight answered by it",
                config.shutdown_percent
            );
            println!(
                "{restart_seeds} seeds restarted their scheduler ({}% of seeds): {restarts}",
                config.restart_percent
            );
            println!("{failures} violations");
            if failures == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Some("soak") => {
            let mut soak_config = SoakConfig::default();
            if let Some(ops) = flag("--ops") {
                soak_config.ops = ops;
            }
            if let Some(threads) = flag("--threads") {
                soak_config.threads = threads.max(1) as usize;
            }
            if let Some(seed) = flag("--seed") {
                soak_config.seed = seed;
            }
            if let Some(every) = flag("--checkpoint-every") {
                soak_config.checkpoint_every = every.max(1);
            }
            soak_config.causal_log =
                SoakConfig::causal_log_for(soak_config.threads, soak_config.checkpoint_every);
            if let Some(size) = flag("--causal-log") {
                soak_config.causal_log = size as usize;
            }
            if let Some(budget) = flag("--remote-budget") {
                soak_config.remote_budget = Some(budget as usize);
            }
            if let Some(threads) = flag("--remote-threads") {
                soak_config.remote_threads = threads.max(1) as usize;
            }
            if let Some(bytes) = flag("--store-bytes") {
                soak_config.store_bytes = bytes;
            }
            println!(
                "soak: {} operations on {} host threads, seed {}, checkpoint every {} operations per thread, causal log of {} records",
                soak_config.ops,
                soak_config.threads,
                soak_config.seed,
                soak_config.checkpoint_every,
                soak_config.causal_log
            );
            match soak_config.remote() {
                Some((budget, cache_nodes)) => println!(
                    "remote: Artifacts{} routed to the fake remote executor, budget {budget}, answered by {} remote threads",
                    if cache_nodes { " and cache nodes" } else { "" },
                    soak_config.remote_threads
                ),
                None => println!("remote: off (nothing routed)"),
            }
            let report = soak(&soak_config);
            for violation in &report.violations {
                println!("violation: {violation}");
            }
            println!(
                "{} operations, {} answers judged, {} quiescent checkpoints in {:.1} s ({:.0} ops/s)",
                report.ops,
                report.answers,
                report.checkpoints,
                report.elapsed.as_secs_f64(),
                report.ops_per_second()
            );
            println!(
                "{} stages run, {} of them batched, {} run by waiting host threads, committed in {} completion holds; {} waits from inside a stage; {} batch registrations queued",
                report.stages,
                report.batched_stages,
                report.caller_stages,
                report.completion_holds,
                report.nested_waits,
                report.queued_registrations
            );
            println!(
                "early cutoff judged: {} stages verified without running, {} outputs unchanged, {} texts unchanged at the door",
                report.cut_off[0], report.cut_off[1], report.cut_off[2]
            );
            println!("{}", report.artifact_deps);
            println!("{}", report.dags);
            if soak_config.causal_log > 0 {
                println!("{}", report.causes);
            }
            if report.remote_routes.is_some() {
                println!("{}", report.remote);
            }
            if soak_config.store_bytes > 0 {
                println!(
                    "output store of {} bytes: {} stages answered from it, {} outputs written",
                    soak_config.store_bytes, report.store[0], report.store[1]
                );
            }
            println!("{} violations", report.violations.len());
            if report.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!(
                "usage: verter-sim (sim --seed S | seeds [--from S] [--count N] | soak [--ops N] [--threads T] [--seed S])"
            );
            ExitCode::from(2)
        }
    }
}
