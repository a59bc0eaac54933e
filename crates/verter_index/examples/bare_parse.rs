//! The floor `verter build` is measured against: read and `syn`-parse
//! exactly the files an index lists, on a plain `rayon` pool, and nothing
//! else (no scheduler, no summaries, no resolution).
//!
//! ```text
//! cargo run --release -p verter_index --example bare_parse -- FILES.txt T [--lean]
//! ```
//! (FILES.txt: one absolute path a line.) Prints
//! `result bare files=N parsed=P threads=T lean=L wall_ms=W`.
//!
//! With `--lean`, each thread forgets `proc-macro2`'s span table after
//! every file (`proc_macro2::extra::invalidate_current_thread_spans`, as
//! `verter build` does): the table otherwise keeps every byte of every
//! file parsed (the workspace enables `span-locations`), so the loop
//! without it is the memory floor a build is judged against. `cargo xtask
//! bare TREE` builds the list from `verter build TREE --out` and runs
//! verter and both loops side by side; `docs/benchmarks.md` has the
//! figures.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

/// The allocator `verter` itself runs on, so the comparison is like for like.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (list, threads, lean) = match args.as_slice() {
        [list, threads] => (list, threads, false),
        [list, threads, flag] if flag == "--lean" => (list, threads, true),
        _ => {
            eprintln!("usage: bare_parse FILES.txt THREADS [--lean]");
            std::process::exit(2);
        }
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
                let parsed = std::fs::read_to_string(file)
                    .ok()
                    .and_then(|text| syn::parse_file(&text).ok())
                    .map_or(0, |_| 1);
                // The tree (and every span in it) is gone: nothing on this
                // thread can read the table any more.
                if lean {
                    proc_macro2::extra::invalidate_current_thread_spans();
                }
                parsed
            })
            .sum()
    });
    println!(
        "result bare files={} parsed={parsed} threads={threads} lean={lean} wall_ms={}",
        files.len(),
        started.elapsed().as_millis()
    );
}
