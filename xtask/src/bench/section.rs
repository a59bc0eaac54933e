//! The whole marked section of `docs/benchmarks.md`: its introduction and
//! machine lines, then every part's tables in the document's order.
//!
//! This module owns that order and the introduction's prose; it never runs
//! a measurement, never reads or writes the document, and must keep every
//! line it writes byte for byte as the document expects. It names every
//! other part and no part names it, so that the parts import one way.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Record;
use super::tables::{
    render_dag, render_micro, render_single_builds, render_w1, render_w2, render_w3, render_w4,
};
use super::targets::render_targets;
use super::{instructions, observability};

/// The whole marked section.
pub(super) fn render(
    records: &[Record],
    micro: &BTreeMap<String, String>,
    machine: &[String],
    seconds: f64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Side by side: verter, salsa, rayon, tokio\n");
    let _ = writeln!(
        out,
        "Written by `cargo xtask bench` (this whole section except the notes at its end), all from one run, \
         which took {:.0} min. Each row is one process \
         (`cargo run --release -p verter_bench -- <workload> --system <s> --threads <t> --n <N> --c <µs> ...`), \
         so peak RSS (`VmHWM`) is that system's alone (plus the generated sources and, but for the single \
         builds, the reference build every process holds). Every measurement but the single builds ends by \
         comparing the system's artifact hashes with a serial cold build of the final sources; a mismatch \
         fails the run. Instruction counts: `valgrind --tool=callgrind --fair-sched=yes` over the same binary \
         (below). Micro benchmarks: `cargo bench -p verter_bench --bench micro`.\n",
        seconds / 60.0
    );
    for line in machine {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(
        out,
        "- **Kernels:** Analysis scans the text once: it collects the `import` lines and digests (FNV-1a) the \
         *analysis-visible* lines, that is every line but comment lines (`//`) and body lines (indented four \
         spaces); Artifact hashes its digest with its imports' digests; each then spins `c` µs. verter runs the \
         scan in its Source stage, so it runs 3 stages per file for the 2 kernel tasks, and compares scans, \
         analyses and artifacts with `==` (early cutoff; `--no-cutoff` turns it off); salsa backdates an \
         analysis equal to its previous one. Tasks = 2N.\n\
         - **Sources:** N generated files, each importing K = 4 others (within ±8 ids, 5 % uniformly random), \
         with a note comment line, a signature line and a body line; W2 uses the hub variant (1 % of files are hubs; 10 % of files import one hub, Zipf-chosen).\n\
         - **Per-task overhead** = (wall × threads − Σ kernel time) / tasks, where Σ kernel time is one serial \
         run of all kernels in the same process. W1's ratios, the single builds' and the targets' are to salsa \
         (on the same number of threads); W2's and W4's are to verter.\n"
    );
    render_targets(&mut out, records);
    render_w1(&mut out, records);
    render_single_builds(&mut out, records);
    instructions::render(&mut out, records);
    render_w2(&mut out, records);
    render_w3(&mut out, records);
    render_w4(&mut out, records);
    render_dag(&mut out, records);
    observability::render(&mut out, records);
    render_micro(&mut out, micro);
    out
}
