//! The DAG's costs (issue 3): admitting, dequeuing and completing one stage
//! node; retiring one file's generation in a DAG of 1k, 10k and 100k other
//! files, which must stay flat; linking and unlinking one edge.
//!
//! Run with `cargo bench -p verter_dag`. Setup (building the DAG, preparing
//! the file to retire) stays outside the timed region, and every benchmark
//! has bounded samples, so the whole run takes well under two minutes on two
//! cores.

use std::cell::RefCell;

use divan::Bencher;
use verter_dag::{
    Canonical, DagConfig, DepKey, FileIdentity, Incarnation, Priority, ProfileHash, ResourceClass,
    SchedulerDag, TargetStage, WaitPolicy, WorkNodeIdentity,
};

fn main() {
    divan::main();
}

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// How many other files the retirement benchmark's DAG holds.
const DAG_SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// Files retired in turn: a sample retires each at most once, and each is
/// prepared again (untimed) before its next retirement.
const TARGETS: usize = 64;

/// Retirements per sample; at most [`TARGETS`].
const RETIREMENTS_PER_SAMPLE: u32 = 32;

/// Runs every ready piece of work to completion: loads move to the CPU
/// budget, everything else completes.
fn run_to_quiescence(dag: &mut SchedulerDag) {
    loop {
        if let Some(load) = dag.dequeue_ready(ResourceClass::Io) {
            let _effects = dag.continue_on(load, ResourceClass::Cpu);
        } else if let Some(dispatch) = dag.dequeue_ready(ResourceClass::Cpu) {
            let _effects = dag.complete(dispatch);
        } else {
            break;
        }
    }
}

fn live(dag: &mut SchedulerDag, canonical: &Canonical) -> FileIdentity {
    dag.ensure_object(canonical);
    dag.live_file(canonical).expect("just ensured")
}

fn analysis(file: &FileIdentity) -> DepKey {
    (*file).at(TargetStage::Analysis)
}

/// Admits `file`'s Artifact (with its Analysis and Source, and the analyses
/// its blocker record names) and runs it all to completion.
fn build_artifact(dag: &mut SchedulerDag, file: &FileIdentity) {
    let artifact = WorkNodeIdentity::File((*file).at(ARTIFACT));
    let _effects = dag.submit_file(file, &artifact).expect("the file is live");
    run_to_quiescence(dag);
    debug_assert!(dag.is_done(&artifact));
}

/// Pool of file names used round robin by the admission benchmarks: each is
/// removed and added again (untimed) two samples after it was used, so the
/// DAG stays small and its tables warm.
struct Recycler {
    names: Vec<Canonical>,
    next: usize,
}

impl Recycler {
    fn new(len: usize) -> Self {
        Self {
            names: (0..len)
                .map(|index| format!("src/admit_{index}.rs").into())
                .collect(),
            next: 0,
        }
    }

    /// A fresh live object for the next name.
    fn fresh(&mut self, dag: &mut SchedulerDag) -> FileIdentity {
        let canonical = &self.names[self.next % self.names.len()];
        self.next += 1;
        let _effects = dag.remove_object(canonical);
        live(dag, canonical)
    }
}

const ADMIT_SAMPLE_SIZE: u32 = 100;

/// `submit_file` of a Source with no dependencies, `dequeue_ready` on the I/O
/// budget and `complete`: the bare admission cycle of one stage node.
#[divan::bench(sample_count = 1_000, sample_size = ADMIT_SAMPLE_SIZE)]
fn admit_dequeue_complete_source(bencher: Bencher) {
    let dag = RefCell::new(SchedulerDag::new(DagConfig::default()));
    let mut recycler = Recycler::new(2 * ADMIT_SAMPLE_SIZE as usize);
    bencher
        .with_inputs(|| {
            let file = recycler.fresh(&mut dag.borrow_mut());
            let work = WorkNodeIdentity::File(file.at(TargetStage::Source));
            (file, work)
        })
        .bench_local_values(|(file, work)| {
            let mut dag = dag.borrow_mut();
            let admitted = dag.submit_file(&file, &work).expect("the file is live");
            let dispatch = dag.dequeue_ready(ResourceClass::Io).expect("ready");
            let (current, completed) = dag.complete(dispatch);
            debug_assert!(current);
            (admitted, completed)
        });
}

/// The same cycle as a request: `register_request`, `submit_file`,
/// `dequeue_ready`, `complete`, whose effects carry the waiter's answer.
#[divan::bench(sample_count = 1_000, sample_size = ADMIT_SAMPLE_SIZE)]
fn request_admit_dequeue_complete_source(bencher: Bencher) {
    let dag = RefCell::new(SchedulerDag::new(DagConfig::default()));
    let mut recycler = Recycler::new(2 * ADMIT_SAMPLE_SIZE as usize);
    bencher
        .with_inputs(|| {
            recycler
                .fresh(&mut dag.borrow_mut())
                .at(TargetStage::Source)
        })
        .bench_local_values(|key| {
            let mut dag = dag.borrow_mut();
            let registration = dag.register_request(key, WaitPolicy::Follow, Priority::Normal);
            let work = WorkNodeIdentity::File(registration.key);
            let admitted = dag
                .submit_file(&registration.key.file, &work)
                .expect("the file is live");
            let dispatch = dag.dequeue_ready(ResourceClass::Io).expect("ready");
            let (current, completed) = dag.complete(dispatch);
            debug_assert!(current && completed.answers.len() == 1);
            (registration, admitted, completed)
        });
}

/// A quiescent DAG of `others` files, each with its Source, Analysis and
/// Artifact done and a blocker record naming two other files' analyses, plus
/// [`TARGETS`] target files. The blocker records of the first [`TARGETS`]
/// other files also name one target's Analysis, so retiring a target moves a
/// reference held by another file.
fn populated(others: usize) -> (SchedulerDag, Vec<Canonical>, Vec<FileIdentity>) {
    let mut dag = SchedulerDag::new(DagConfig::default());
    let targets: Vec<Canonical> = (0..TARGETS)
        .map(|index| format!("src/target_{index}.rs").into())
        .collect();
    let target_files: Vec<FileIdentity> = targets
        .iter()
        .map(|canonical| live(&mut dag, canonical))
        .collect();
    let files: Vec<FileIdentity> = (0..others)
        .map(|index| live(&mut dag, &format!("src/module_{index}.rs").into()))
        .collect();
    for (index, file) in files.iter().enumerate() {
        let mut blockers = vec![
            analysis(&files[(index + 1) % others]),
            analysis(&files[(index + 2) % others]),
        ];
        if let Some(target) = target_files.get(index) {
            blockers.push(analysis(target));
        }
        let _effects = dag.record_blockers(file, blockers).expect("live");
        build_artifact(&mut dag, file);
    }
    (dag, targets, files)
}

/// Gives `target` done Source, Analysis and Artifact nodes at its live
/// generation, with a blocker record naming two other files' analyses.
fn prepare_target(
    dag: &mut SchedulerDag,
    target: &Canonical,
    files: &[FileIdentity],
) -> Incarnation {
    let file = dag.live_file(target).expect("targets stay live");
    let _effects = dag
        .record_blockers(&file, [analysis(&files[0]), analysis(&files[1])])
        .expect("live");
    build_artifact(dag, &file);
    file.incarnation
}

/// `advance_generation` of one file whose Source, Analysis and Artifact are
/// done, in a DAG of `others` other files: retirement is driven by the file's
/// own indices, so it must cost the same at every size.
#[divan::bench(args = DAG_SIZES, sample_count = 300, sample_size = RETIREMENTS_PER_SAMPLE)]
fn retire_one_file(bencher: Bencher, others: usize) {
    let (dag, targets, files) = populated(others);
    let dag = RefCell::new(dag);
    let mut next = 0;
    bencher
        .with_inputs(|| {
            let target = targets[next % TARGETS];
            next += 1;
            let incarnation = prepare_target(&mut dag.borrow_mut(), &target, &files);
            (target, incarnation)
        })
        .bench_local_values(|(target, incarnation)| {
            dag.borrow_mut()
                .advance_generation(&target, incarnation)
                .expect("the target is live")
        });
}

/// `link` of an admitted, gated Artifact to another file's admitted Analysis,
/// then `unlink` of the same edge (the Artifact stays gated on its own
/// Analysis throughout, so the pair leaves the DAG as it found it).
#[divan::bench(sample_count = 1_000, sample_size = 1_000)]
fn link_then_unlink_one_edge(bencher: Bencher) {
    let mut dag = SchedulerDag::new(DagConfig::default());
    let a = live(&mut dag, &"src/a.rs".into());
    let b = live(&mut dag, &"src/b.rs".into());
    let consumer = WorkNodeIdentity::File(a.at(ARTIFACT));
    let _effects = dag.submit_file(&a, &consumer).expect("live");
    let dep = analysis(&b);
    let _effects = dag
        .submit_file(&b, &WorkNodeIdentity::File(dep))
        .expect("live");
    bencher.bench_local(|| {
        let (outcome, linked) = dag.link(&consumer, dep).expect("rank is kept");
        let unlinked = dag.unlink(&consumer, &dep);
        (outcome, linked, unlinked)
    });
}
