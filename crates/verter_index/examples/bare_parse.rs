//! The floor `verter build` is measured against: read and `syn`-parse
//! exactly the files an index lists, on a plain `rayon` pool, and nothing
//! else (no scheduler, no summaries, no resolution).
//!
//! ```text
//! cargo run --release -p verter_index --example bare_parse -- FILES.txt T
//! ```
//! (FILES.txt: one absolute path a line.) Prints
//! `result bare files=N parsed=P threads=T wall_ms=W`. `cargo xtask bare
//! TREE` builds the list from `verter build TREE --out` and runs both side
//! by side; `docs/benchmarks.md` has the figures.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

/// The allocator `verter` itself runs on, so the comparison is like for like.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [list, threads] = args.as_slice() else {
        eprintln!("usage: bare_parse FILES.txt THREADS");
        std::process::exit(2);
    };
    let threads: usize = threads.parse().expect("THREADS is a number");
    let list = std::fs::read_to_string(list).expect("the file list");
    let files: Vec<&Path> = list.lines().map(Path::new).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(16 << 20)
        .build()
        .expect("a pool");
    let started = Instant::now();
    let parsed: usize = pool.install(|| {
        files
            .par_iter()
            .map(|file| {
                std::fs::read_to_string(file)
                    .ok()
                    .and_then(|text| syn::parse_file(&text).ok())
                    .map_or(0, |_| 1)
            })
            .sum()
    });
    println!(
        "result bare files={} parsed={parsed} threads={threads} wall_ms={}",
        files.len(),
        started.elapsed().as_millis()
    );
}
