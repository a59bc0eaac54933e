//! Dependencies at any depth (docs/design.md, "Dependencies at any
//! depth"): an Artifact that reads other files' Artifacts, through chains
//! of any length, rebuilt (or verified) when any of them changes, and a
//! cycle answered as one to every Artifact on it, never a hang.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::{Canonical, ProfileHash};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ArtifactSnapshot, ExecutorError, RequestError, Scheduler,
    SourceDeps, SourceInput, StageExecutor,
};

use crate::support::*;

/// The profile every test builds.
const BUILD: Artifact = Artifact(ProfileHash(7));
/// A profile whose Artifact names its dependencies' lengths, not their
/// text: for chains too long to nest.
const SHALLOW: Artifact = Artifact(ProfileHash(8));

/// A language where `dep X` makes this file's Artifact read `X`'s, `use X`
/// names a blocker, `#` lines are comments (left out of the parse) and
/// every other word counts. An Artifact is `path:words` followed by each
/// dependency's Artifact in brackets, so a stale dependency shows. Outputs
/// compare with `==`; every run is recorded as (path, stage).
#[derive(Clone, Default)]
struct Nest {
    runs: Arc<Mutex<Vec<(String, &'static str)>>>,
}

impl Nest {
    fn runs_of(&self, stage: &str) -> BTreeMap<String, usize> {
        let mut runs = BTreeMap::new();
        for (path, ran) in self.runs.lock().iter() {
            if *ran == stage {
                *runs.entry(path.clone()).or_default() += 1;
            }
        }
        runs
    }

    fn forget_runs(&self) {
        self.runs.lock().clear();
    }

    fn record(&self, path: &Canonical, stage: &'static str) {
        self.runs.lock().push((path.to_string(), stage));
    }
}

impl StageExecutor for Nest {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        self.record(input.canonical, "Source");
        let lines: Vec<String> = input
            .text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(str::to_owned)
            .collect();
        for line in &lines {
            if let Some(path) = line.strip_prefix("dep ") {
                deps.artifact(path);
            } else if let Some(path) = line.strip_prefix("use ") {
                deps.blocker(path);
            }
        }
        Ok(lines)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        self.record(input.source.canonical(), "Analysis");
        Ok(input
            .source
            .parsed
            .iter()
            .filter(|line| !line.starts_with("dep ") && !line.starts_with("use "))
            .map(|line| line.split_whitespace().count())
            .sum())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        self.record(&input.analysis.canonical, "Artifact");
        let own = format!("{}:{}", input.analysis.canonical, input.analysis.data());
        let blockers = input.blockers.iter().fold(own, |out, blocker| {
            format!("{out}|{}={}", blocker.canonical, blocker.data())
        });
        if input.profile == SHALLOW.0 {
            // Depth without the nested text: the dependencies' lengths.
            let lengths: usize = input.dependencies.iter().map(|dep| dep.data().len()).sum();
            return Ok(format!("{blockers}+{lengths}"));
        }
        Ok(input
            .dependencies
            .iter()
            .fold(blockers, |out, dep| format!("{out}[{}]", dep.data())))
    }

    fn same_source(&self, previous: &Vec<String>, next: &Vec<String>) -> bool {
        previous == next
    }

    fn same_analysis(&self, previous: &usize, next: &usize) -> bool {
        previous == next
    }

    fn same_artifact(&self, previous: &String, next: &String) -> bool {
        previous == next
    }
}

fn inline_nest(files: &MemFiles, nest: &Nest) -> Arc<Scheduler<Nest>> {
    let hooks = Arc::new(GateHooks::default());
    Scheduler::new_inline(test_config(hooks), files.clone(), nest.clone())
        .expect("a valid configuration")
}

fn threaded_nest(files: &MemFiles, nest: &Nest) -> Arc<Scheduler<Nest>> {
    let hooks = Arc::new(GateHooks::default());
    Scheduler::threaded(test_config(hooks), files.clone(), nest.clone())
        .expect("a valid configuration")
}

type Built = Result<Arc<ArtifactSnapshot<String>>, RequestError>;

fn built(scheduler: &Scheduler<Nest>, path: &str) -> Built {
    let handle = scheduler.ask(BUILD.of(path));
    scheduler.wait(&handle)
}

fn value(result: &Built) -> String {
    result.as_ref().expect("built").data().clone()
}

/// What an answer says, comparable across schedulers: the value, or the
/// error's kind with the files of a cycle.
fn summary(result: &Built) -> String {
    match result {
        Ok(artifact) => artifact.data().clone(),
        Err(RequestError::DependencyCycle { path }) => format!(
            "cycle {}",
            path.iter()
                .map(Canonical::as_str)
                .collect::<Vec<_>>()
                .join(" -> ")
        ),
        Err(RequestError::DependencyFailed { .. }) => "dependency failed".into(),
        Err(other) => format!("error {other}"),
    }
}

/// What a fresh scheduler over `files` answers for `path`.
fn fresh(files: &MemFiles, path: &str) -> String {
    summary(&built(&inline_nest(files, &Nest::default()), path))
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect()
}

#[test]
fn an_artifact_reads_its_dependencies_artifacts_through_every_level() {
    let files = MemFiles::with(&[
        ("a.cfg", "dep b.cfg\nv"),
        ("b.cfg", "dep c.cfg\nw w"),
        ("c.cfg", "k k k"),
    ]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    let a = built(&scheduler, "a.cfg");
    assert_eq!(value(&a), "a.cfg:1[b.cfg:2[c.cfg:3]]");
    assert_eq!(
        nest.runs_of("Artifact"),
        counts(&[("a.cfg", 1), ("b.cfg", 1), ("c.cfg", 1)])
    );
    // The dependencies' own requests are answered from what was built.
    assert_eq!(value(&built(&scheduler, "b.cfg")), "b.cfg:2[c.cfg:3]");
    assert_eq!(nest.runs_of("Artifact").values().sum::<usize>(), 3);
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn an_edit_at_the_bottom_of_a_chain_rebuilds_every_artifact_above_it() {
    let files = MemFiles::with(&[
        ("a.cfg", "dep b.cfg\nv"),
        ("b.cfg", "dep c.cfg\nw w"),
        ("c.cfg", "k k k"),
        ("other.cfg", "dep c.cfg\nz"),
    ]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    built(&scheduler, "a.cfg").expect("built");
    nest.forget_runs();
    files.write("c.cfg", "k k k k");
    scheduler.invalidate("c.cfg").expect("invalidated");
    let a = built(&scheduler, "a.cfg");
    assert_eq!(value(&a), "a.cfg:1[b.cfg:2[c.cfg:4]]");
    assert_eq!(summary(&a), fresh(&files, "a.cfg"));
    assert_eq!(
        nest.runs_of("Artifact"),
        counts(&[("a.cfg", 1), ("b.cfg", 1), ("c.cfg", 1)]),
        "exactly the chain above c.cfg, once each (other.cfg was never asked for)"
    );
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn an_unchanged_artifact_at_the_bottom_verifies_every_artifact_above_it() {
    let files = MemFiles::with(&[
        ("a.cfg", "dep b.cfg\nv"),
        ("b.cfg", "dep c.cfg\nw w"),
        ("c.cfg", "k j"),
    ]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    let before = built(&scheduler, "a.cfg");
    nest.forget_runs();
    // Another parse and the same word count: c.cfg's Source and Analysis
    // run, its Artifact is verified, and so is everything above it.
    files.write("c.cfg", "j k");
    scheduler.invalidate("c.cfg").expect("invalidated");
    let after = built(&scheduler, "a.cfg");
    assert_eq!(value(&after), value(&before));
    assert_eq!(nest.runs_of("Artifact"), counts(&[]), "nothing rebuilt");
    assert_eq!(nest.runs_of("Source"), counts(&[("c.cfg", 1)]));
    assert_eq!(nest.runs_of("Analysis"), counts(&[("c.cfg", 1)]));
    assert!(after.as_ref().unwrap().is_verified_copy());
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn a_cycle_is_answered_to_every_artifact_on_it_and_to_nothing_else() {
    watchdog("cycle", || {
        for threads in [false, true] {
            let files = MemFiles::with(&[
                ("x.cfg", "dep y.cfg\nx"),
                ("y.cfg", "dep x.cfg\ny"),
                ("z.cfg", "dep x.cfg\nz"),
                ("w.cfg", "w"),
            ]);
            let nest = Nest::default();
            let scheduler = if threads {
                threaded_nest(&files, &nest)
            } else {
                inline_nest(&files, &nest)
            };
            let handles: Vec<_> = ["x.cfg", "y.cfg", "z.cfg", "w.cfg"]
                .iter()
                .map(|path| scheduler.ask(BUILD.of(*path)))
                .collect();
            let answers: Vec<String> = handles
                .iter()
                .map(|handle| summary(&scheduler.wait(handle)))
                .collect();
            assert_eq!(answers[0], "cycle x.cfg -> y.cfg -> x.cfg");
            assert_eq!(answers[1], "cycle y.cfg -> x.cfg -> y.cfg");
            assert_eq!(answers[2], "dependency failed");
            assert_eq!(answers[3], "w.cfg:1");
            // The cycle is named in the error a person reads.
            let z = scheduler.wait(&handles[2]).unwrap_err();
            assert!(
                z.to_string().contains("z.cfg depends on"),
                "{z} names its requester"
            );
            assert!(
                std::error::Error::source(&z)
                    .is_some_and(|cause| cause.to_string().contains("x.cfg -> y.cfg -> x.cfg")),
                "{z:?} carries the cycle"
            );
            assert_eq!(nest.runs_of("Artifact"), counts(&[("w.cfg", 1)]));
            // Found at least once: the stages on a cycle are dropped, so
            // z.cfg's link may admit them again and find it a second time.
            assert!(scheduler.observe().counters().dependency_cycles >= 1);
            let untyped: Vec<_> = handles.iter().map(|handle| handle.untyped()).collect();
            assert_quiescent(&scheduler, &untyped);
        }
    });
}

#[test]
fn an_edit_that_closes_a_cycle_fails_it_and_an_edit_that_breaks_it_builds_again() {
    let files = MemFiles::with(&[("x.cfg", "dep y.cfg\nx"), ("y.cfg", "y")]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    assert_eq!(value(&built(&scheduler, "x.cfg")), "x.cfg:1[y.cfg:1]");
    // y.cfg now reads x.cfg: the cycle closes.
    files.write("y.cfg", "dep x.cfg\ny");
    scheduler.invalidate("y.cfg").expect("invalidated");
    assert_eq!(
        summary(&built(&scheduler, "x.cfg")),
        "cycle x.cfg -> y.cfg -> x.cfg"
    );
    assert_eq!(
        summary(&built(&scheduler, "y.cfg")),
        "cycle y.cfg -> x.cfg -> y.cfg"
    );
    assert_eq!(summary(&built(&scheduler, "y.cfg")), fresh(&files, "y.cfg"));
    // And opens again.
    files.write("y.cfg", "y y");
    scheduler.invalidate("y.cfg").expect("invalidated");
    assert_eq!(value(&built(&scheduler, "x.cfg")), "x.cfg:1[y.cfg:2]");
    assert_eq!(summary(&built(&scheduler, "x.cfg")), fresh(&files, "x.cfg"));
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn a_removed_dependency_fails_its_readers_and_its_return_rebuilds_them() {
    let files = MemFiles::with(&[("a.cfg", "dep b.cfg\nv"), ("b.cfg", "w")]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    built(&scheduler, "a.cfg").expect("built");
    files.delete("b.cfg");
    scheduler.remove("b.cfg").expect("removed");
    let gone = built(&scheduler, "a.cfg").unwrap_err();
    assert!(
        matches!(&gone, RequestError::DependencyFailed { dep, .. } if dep.file.canonical.as_str() == "b.cfg"),
        "{gone:?}"
    );
    assert_eq!(summary(&Err(gone)), fresh(&files, "a.cfg"));
    files.write("b.cfg", "w w");
    scheduler.invalidate("b.cfg").expect("invalidated");
    assert_eq!(value(&built(&scheduler, "a.cfg")), "a.cfg:1[b.cfg:2]");
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn a_host_committed_artifact_is_what_its_readers_are_rebuilt_from() {
    let files = MemFiles::with(&[("a.cfg", "dep b.cfg\nv"), ("b.cfg", "w")]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    built(&scheduler, "a.cfg").expect("built");
    let (_, witness) = scheduler
        .snapshot()
        .try_get_witnessed_source("b.cfg")
        .expect("parsed");
    scheduler
        .commit_artifact(&witness, BUILD.0, "host's b".to_owned())
        .expect("committed");
    assert_eq!(value(&built(&scheduler, "a.cfg")), "a.cfg:1[host's b]");
    // Evicting it rebuilds b.cfg's, and a.cfg's from that.
    scheduler
        .remove_artifact_not_newer_than(&witness, BUILD.0)
        .expect("evicted");
    assert_eq!(value(&built(&scheduler, "a.cfg")), "a.cfg:1[b.cfg:1]");
    assert_quiescent(&scheduler, &[]);
}

/// Seeded edits over eight files whose Artifacts read each other at
/// random (chains, diamonds and cycles), on a threaded scheduler: after
/// every edit, every file's answer is what a fresh scheduler answers.
#[test]
fn every_answer_after_random_edits_is_what_a_fresh_scheduler_answers() {
    let mut seen = (0, 0);
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 7, 1_000_003, 0xdead_beef] {
        let (cycles, values) = random_deep_edits(seed);
        seen = (seen.0 + cycles, seen.1 + values);
    }
    // The rounds met cycles and values both: the check is not vacuous.
    assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
}

/// One seed of [`every_answer_after_random_edits_is_what_a_fresh_scheduler_answers`]:
/// how many cycle answers and values it checked.
fn random_deep_edits(seed: u64) -> (usize, usize) {
    watchdog("random deep edits", move || {
        let paths: Vec<String> = (0..8).map(|i| format!("f{i}.cfg")).collect();
        let mut seed = seed;
        let (mut cycles, mut values) = (0, 0);
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let text_for = |next: &mut dyn FnMut(usize) -> usize, me: usize| {
            let mut lines = Vec::new();
            for _ in 0..next(3) {
                let other = next(8);
                if other != me {
                    lines.push(format!("dep f{other}.cfg"));
                }
            }
            if next(4) == 0 {
                lines.push(format!("use f{}.cfg", next(8)));
            }
            lines.push("w ".repeat(1 + next(3)));
            if next(3) == 0 {
                lines.push(format!("# note {}", next(100)));
            }
            lines.join("\n")
        };
        let files = MemFiles::default();
        let mut texts = Vec::new();
        for (me, path) in paths.iter().enumerate() {
            texts.push(text_for(&mut next, me));
            files.write(path, &texts[me]);
        }
        // Whether `answer` names a cycle the texts really have: each file
        // reads the next.
        let real_cycle = |texts: &[String], answer: &str| {
            let Some(files) = answer.strip_prefix("cycle ") else {
                return false;
            };
            let files: Vec<&str> = files.split(" -> ").collect();
            files.len() > 2
                && files.first() == files.last()
                && files.windows(2).all(|pair| {
                    let at: usize = pair[0][1..pair[0].len() - 4].parse().expect("fN.cfg");
                    texts[at]
                        .lines()
                        .any(|line| line == format!("dep {}", pair[1]))
                })
        };
        let nest = Nest::default();
        let scheduler = threaded_nest(&files, &nest);
        for round in 0..40 {
            let handles: Vec<_> = paths
                .iter()
                .map(|path| scheduler.ask(BUILD.of(path.as_str())))
                .collect();
            for (path, handle) in paths.iter().zip(&handles) {
                let answer = summary(&scheduler.wait(handle));
                let expected = fresh(&files, path);
                // A file on a cycle is answered with a cycle through it,
                // or, when a neighbour's was found first, with its
                // neighbour's failure: timing decides, in a fresh
                // scheduler too. A value is always the fresh one.
                let failed = |s: &str| s.starts_with("cycle") || s == "dependency failed";
                if failed(&expected) {
                    assert!(
                        failed(&answer),
                        "round {round}: {path}: {answer} vs {expected}"
                    );
                } else {
                    assert_eq!(answer, expected, "round {round}: {path}");
                }
                if failed(&answer) {
                    cycles += usize::from(answer.starts_with("cycle"));
                } else {
                    values += 1;
                }
                if answer.starts_with("cycle") {
                    assert!(
                        real_cycle(&texts, &answer),
                        "round {round}: {path}: {answer}"
                    );
                    assert!(answer.starts_with(&format!("cycle {path} ")), "{answer}");
                }
            }
            let edited = next(8);
            texts[edited] = text_for(&mut next, edited);
            files.write(&paths[edited], &texts[edited]);
            scheduler.invalidate(&paths[edited]).expect("invalidated");
        }
        assert_quiescent(&scheduler, &[]);
        (cycles, values)
    })
}

/// A chain of 20 000 files, all parsed, then the Artifact at its top
/// asked for: admission links the whole chain without a recursion as deep
/// as it (it overflowed the test thread's stack before).
#[test]
fn a_chain_of_twenty_thousand_is_admitted_without_deep_recursion() {
    let n = 20_000;
    let texts: Vec<(String, String)> = (0..n)
        .map(|i| {
            let text = match i {
                0 => "k".to_owned(),
                _ => format!("dep f{}.cfg\nk", i - 1),
            };
            (format!("f{i}.cfg"), text)
        })
        .collect();
    let pairs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let files = MemFiles::with(&pairs);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    let parsed: Vec<_> = texts
        .iter()
        .map(|(path, _)| scheduler.ask(verter_scheduler::stage::Source.of(path.as_str())))
        .collect();
    for handle in &parsed {
        scheduler.wait(handle).expect("parsed");
    }
    let top = scheduler.ask(SHALLOW.of(format!("f{}.cfg", n - 1).as_str()));
    let top = scheduler.wait(&top).expect("built");
    assert!(top.data().starts_with(&format!("f{}.cfg:1+", n - 1)));
    assert_eq!(nest.runs_of("Artifact").len(), n);
}

/// The profile dependency records reserve for "the reader's own"
/// (`ProfileHash::SAME`) is refused, typed, wherever a host names it: a
/// request, a DAG's file node, a host's commit. Nothing runs for it, and
/// the files' own builds are untouched.
#[test]
fn the_reserved_profile_is_refused_wherever_a_host_names_it() {
    let files = MemFiles::with(&[("a.cfg", "dep b.cfg\nv"), ("b.cfg", "w")]);
    let nest = Nest::default();
    let scheduler = inline_nest(&files, &nest);
    let reserved = Artifact(ProfileHash::SAME);
    let handle = scheduler.ask(reserved.of("a.cfg"));
    match scheduler.wait(&handle) {
        Err(RequestError::ReservedProfile { path }) => assert_eq!(path.as_str(), "a.cfg"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut dag = verter_scheduler::Dag::new();
    let node = dag.add(reserved.of("b.cfg"));
    let dag = match scheduler.submit_dag(dag, &verter_scheduler::NoDedupeHook) {
        Ok(verter_scheduler::Admission::Admitted(dag)) => dag,
        other => panic!("expected admission, got {other:?}"),
    };
    let results = scheduler.wait(&dag);
    assert!(
        matches!(results.get(node), Err(RequestError::ReservedProfile { .. })),
        "{:?}",
        results.get(node)
    );
    assert!(nest.runs.lock().is_empty(), "nothing ran");
    assert_eq!(value(&built(&scheduler, "a.cfg")), "a.cfg:1[b.cfg:1]");
    let (_, witness) = scheduler
        .snapshot()
        .try_get_witnessed_source("b.cfg")
        .expect("parsed");
    assert!(matches!(
        scheduler.commit_artifact(&witness, ProfileHash::SAME, "host's".to_owned()),
        Err(verter_scheduler::WitnessError::ReservedProfile { .. })
    ));
    assert_eq!(value(&built(&scheduler, "a.cfg")), "a.cfg:1[b.cfg:1]");
    assert_quiescent(&scheduler, &[]);
}
