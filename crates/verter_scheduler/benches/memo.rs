//! Cache-node memo hits (`cargo bench -p verter_scheduler --bench memo`):
//! re-submitting an unchanged DAG of 1k cache nodes to an inline scheduler
//! that has run it once, so that every node is answered from its memo and
//! none runs. The target ("Cache-node memo hit"): ≤ 100 ns per node.
//!
//! Each case ([`Case`]: independent nodes or 10 layers of 100, typed or
//! bare keys) is timed three ways, per node (`ItemsCount` of 1k):
//! building the DAG and re-submitting it (what a host pays), re-submitting
//! a DAG built outside the timed part, and building the DAG alone. Every
//! re-submission is checked once, before timing, to run nothing and hit
//! every memo ([`memo_common::warmed`]), and the timed ones after it.

mod memo_common;

use divan::Bencher;
use divan::counter::ItemsCount;
use memo_common::{Case, NODES, assert_only_memo_hits, build, resubmit, warmed};

fn main() {
    divan::main();
}

/// Builds a fresh DAG of the case, submits it, waits for its answers and
/// drops them.
#[divan::bench(args = Case::ALL)]
fn resubmit_with_dag_building(bencher: Bencher, case: Case) {
    let scheduler = warmed(case);
    let mut resubmissions = 0;
    bencher.counter(ItemsCount::new(NODES)).bench_local(|| {
        resubmissions += 1;
        resubmit(&scheduler, build(case))
    });
    assert_only_memo_hits(&scheduler, resubmissions);
}

/// Submits a DAG of the case built outside the timed part, waits for its
/// answers and drops them.
#[divan::bench(args = Case::ALL)]
fn resubmit_prebuilt_dag(bencher: Bencher, case: Case) {
    let scheduler = warmed(case);
    let mut resubmissions = 0;
    bencher
        .counter(ItemsCount::new(NODES))
        .with_inputs(|| build(case))
        .bench_local_values(|dag| {
            resubmissions += 1;
            resubmit(&scheduler, dag)
        });
    assert_only_memo_hits(&scheduler, resubmissions);
}

/// Builds the DAG of the case alone (dropped outside the timed part).
#[divan::bench(args = Case::ALL)]
fn dag_building_only(bencher: Bencher, case: Case) {
    bencher
        .counter(ItemsCount::new(NODES))
        .bench_local(|| build(case));
}
