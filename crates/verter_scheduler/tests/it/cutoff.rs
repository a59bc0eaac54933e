//! Early cutoff (docs/design.md, "Early cutoff"): unchanged bytes do
//! nothing, and an output equal to its previous one stops the wave at every
//! edge, with every answer still what a fresh scheduler would give.

use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::{Canonical, ProfileHash};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ArtifactSnapshot, CutOff, ExecutorError, Invalidation, Request,
    RequestError, Scheduler, SchedulerEvent, SourceDeps, SourceInput, StageExecutor,
};

use crate::support::*;

/// The Artifact profile that spells out every input.
const FULL: Artifact = Artifact(ProfileHash(1));
/// The Artifact profile that counts its blockers and nothing more of them.
const COUNT: Artifact = Artifact(ProfileHash(2));

/// A language where `#` lines are comments (not in the parse), `use X`
/// names a blocker, `import X` a forward dependency, and an Analysis counts
/// the words of the other lines. Outputs compare with `==`. Every run is
/// recorded as (path, stage).
#[derive(Clone, Default)]
pub(crate) struct Words {
    runs: Arc<Mutex<Vec<(String, &'static str)>>>,
}

impl Words {
    fn runs_of(&self, path: &str, stage: &str) -> usize {
        self.runs
            .lock()
            .iter()
            .filter(|(p, s)| p == path && *s == stage)
            .count()
    }

    fn record(&self, path: &Canonical, stage: &'static str) {
        self.runs.lock().push((path.to_string(), stage));
    }
}

impl StageExecutor for Words {
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
            if let Some(path) = line.strip_prefix("use ") {
                deps.blocker(path);
            } else if let Some(path) = line.strip_prefix("import ") {
                deps.forward(path);
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
            .filter(|line| !line.starts_with("use ") && !line.starts_with("import "))
            .map(|line| line.split_whitespace().count())
            .sum())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        self.record(&input.analysis.canonical, "Artifact");
        let own = format!("{}={}", input.analysis.canonical, input.analysis.data());
        Ok(if input.profile == ProfileHash(2) {
            format!("{own} with {} blockers", input.blockers.len())
        } else {
            input.blockers.iter().fold(own, |out, blocker| {
                format!("{out}|{}={}", blocker.canonical, blocker.data())
            })
        })
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

pub(crate) fn inline_words(files: &MemFiles, words: &Words) -> Arc<Scheduler<Words>> {
    let hooks = Arc::new(GateHooks::default());
    Scheduler::new_inline(test_config(hooks), files.clone(), words.clone())
        .expect("a valid configuration")
}

fn threaded_words(
    files: &MemFiles,
    words: &Words,
    hooks: &Arc<GateHooks>,
) -> Arc<Scheduler<Words>> {
    let config = test_config(Arc::clone(hooks));
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, files.clone(), words.clone(), cpu, io).expect("a valid configuration")
}

/// An Artifact request's answer for `Words`.
type Built = Result<Arc<ArtifactSnapshot<String>>, RequestError>;

/// The artifact `scheduler` answers for `path` at `stage`.
fn built(scheduler: &Scheduler<Words>, path: &str, stage: Artifact) -> Built {
    let handle = scheduler.ask(stage.of(path));
    scheduler.wait(&handle)
}

fn text_of(result: &Built) -> String {
    result.as_ref().expect("built").data().clone()
}

/// What a fresh scheduler over `files` answers for `path` at `stage`.
fn fresh(files: &MemFiles, path: &str, stage: Artifact) -> String {
    text_of(&built(&inline_words(files, &Words::default()), path, stage))
}

#[test]
fn the_door_cuts_off_an_invalidate_or_upsert_of_unchanged_bytes() {
    let files = MemFiles::with(&[("a.rs", "x y"), ("m.rs", "one")]);
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    let first = built(&scheduler, "a.rs", FULL);
    let node = scheduler
        .snapshot()
        .node(&Canonical::from("a.rs"))
        .expect("published");
    let generation = node.generation();
    // The loader's bytes are the known text: nothing changes.
    assert_eq!(
        scheduler.invalidate("a.rs").unwrap(),
        Invalidation::Unchanged
    );
    assert_eq!(
        scheduler.invalidate("a.rs").unwrap(),
        Invalidation::Unchanged
    );
    // An upsert of the same text: the same rule.
    let upsert = scheduler.upsert("a.rs", "x y", Default::default());
    scheduler.wait(&upsert).expect("parsed");
    assert_eq!(node.generation(), generation, "no new generation");
    // The committed artifact still answers, at submission: the same value.
    let again = scheduler.ask(FULL.of("a.rs"));
    let answer = again
        .try_result()
        .expect("answered at submission")
        .expect("ok");
    assert!(Arc::ptr_eq(&answer, first.as_ref().unwrap()));
    assert_eq!(words.runs.lock().len(), 3, "no stage ran again");
    assert_eq!(scheduler.observe().counters().unchanged_texts, 3);
    // Untracked paths are still ignored, and changed bytes still change.
    assert_eq!(
        scheduler.invalidate("m.rs").unwrap(),
        Invalidation::Untracked
    );
    files.write("a.rs", "x y z");
    assert_eq!(scheduler.invalidate("a.rs").unwrap(), Invalidation::Changed);
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=3");
    assert_quiescent(&scheduler, &[&upsert, again.untyped()]);
}

/// The door compares bytes outside the lock against the file's parsed
/// text; a text known but not parsed yet is still recognised, in the hold.
#[test]
fn the_door_recognises_a_known_text_before_it_is_parsed() {
    let files = MemFiles::default();
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    let first = scheduler.upsert("a.rs", "x y", Default::default());
    let again = scheduler.upsert("a.rs", "x y", Default::default());
    scheduler.wait(&again).expect("parsed");
    scheduler.wait(&first).expect("parsed");
    assert_eq!(scheduler.observe().counters().unchanged_texts, 1);
    assert_eq!(
        words.runs_of("a.rs", "Source"),
        1,
        "one generation, one parse"
    );
    assert_quiescent(&scheduler, &[&first, &again]);
}

#[test]
fn an_unchanged_source_verifies_its_analysis_and_artifact() {
    let files = MemFiles::with(&[("a.rs", "# first\nx y")]);
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    let first = built(&scheduler, "a.rs", FULL);
    // A comment edit: new bytes, the same parse.
    files.write("a.rs", "# second\nx y");
    assert_eq!(scheduler.invalidate("a.rs").unwrap(), Invalidation::Changed);
    let second = built(&scheduler, "a.rs", FULL);
    let (old, new) = (first.as_ref().unwrap(), second.as_ref().unwrap());
    assert_eq!(words.runs_of("a.rs", "Source"), 2);
    assert_eq!(words.runs_of("a.rs", "Analysis"), 1, "verified, not run");
    assert_eq!(words.runs_of("a.rs", "Artifact"), 1, "verified, not run");
    // Re-stamped at the new generation, the same value and revision.
    assert!(new.version > old.version);
    assert!(new.is_verified_copy());
    assert_eq!(new.data(), old.data());
    assert_eq!(new.changed_at(), old.changed_at());
    assert_eq!(*new.data(), fresh(&files, "a.rs", FULL));
    let counters = scheduler.observe().counters();
    assert_eq!(counters.stages_verified, 2);
    assert_eq!(counters.outputs_unchanged, 1, "the Source");
}

#[test]
fn an_unchanged_analysis_stops_the_wave_at_the_files_that_block_on_it() {
    watchdog("analysis cutoff across files", || {
        let files = MemFiles::with(&[
            ("m.rs", "alpha beta"),
            ("a.rs", "use m.rs\nz"),
            ("b.rs", "use m.rs\nimport a.rs"),
        ]);
        let words = Words::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded_words(&files, &words, &hooks);
        for path in ["a.rs", "b.rs"] {
            built(&scheduler, path, FULL).expect("built");
        }
        // m.rs's words change but not their number: its Source runs and
        // differs, its Analysis runs and is equal.
        files.write("m.rs", "beta alpha");
        assert_eq!(scheduler.invalidate("m.rs").unwrap(), Invalidation::Changed);
        let events = hooks.subscribe();
        for path in ["a.rs", "b.rs"] {
            let answer = built(&scheduler, path, FULL);
            let artifact = answer.as_ref().unwrap();
            assert!(artifact.is_verified_copy(), "{path} verified");
            assert_eq!(*artifact.data(), fresh(&files, path, FULL));
        }
        assert_eq!(words.runs_of("m.rs", "Source"), 2);
        assert_eq!(words.runs_of("m.rs", "Analysis"), 2);
        assert_eq!(words.runs_of("a.rs", "Artifact"), 1);
        assert_eq!(words.runs_of("b.rs", "Artifact"), 1);
        // The events say so.
        let seen: Vec<SchedulerEvent> = events.try_iter().collect();
        let cut = |path: &str, how: CutOff| {
            seen.iter().any(|event| {
                matches!(event,
                SchedulerEvent::DidCutOff(work, cut)
                    if work.file().is_some_and(|f| f.canonical == Canonical::from(path))
                        && *cut == how)
            })
        };
        assert!(cut("m.rs", CutOff::Unchanged), "m.rs's Analysis: {seen:?}");
        assert!(cut("a.rs", CutOff::Verified) && cut("b.rs", CutOff::Verified));
        assert_quiescent(&scheduler, &[]);
    });
}

#[test]
fn an_artifact_that_runs_again_to_an_equal_output_keeps_its_revision() {
    let files = MemFiles::with(&[("m.rs", "one"), ("a.rs", "use m.rs\nz")]);
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    let first = built(&scheduler, "a.rs", COUNT);
    // m.rs's Analysis changes (one word, then two): the counting Artifact
    // must run, and builds what it built before.
    files.write("m.rs", "one two");
    assert_eq!(scheduler.invalidate("m.rs").unwrap(), Invalidation::Changed);
    let second = built(&scheduler, "a.rs", COUNT);
    let (old, new) = (first.as_ref().unwrap(), second.as_ref().unwrap());
    assert_eq!(words.runs_of("a.rs", "Artifact"), 2, "it ran");
    assert!(!new.is_verified_copy());
    assert_eq!(new.data(), old.data());
    assert_eq!(
        new.changed_at(),
        old.changed_at(),
        "a host may skip writing it"
    );
    assert!(new.verified_at() > old.verified_at());
    assert_eq!(scheduler.observe().counters().outputs_unchanged, 1);
}

#[test]
fn a_flip_flop_edit_is_judged_against_the_latest_output() {
    let files = MemFiles::with(&[("m.rs", "one two"), ("a.rs", "use m.rs\nz")]);
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    let first = text_of(&built(&scheduler, "a.rs", FULL));
    // A → B, built: the importer runs on B.
    files.write("m.rs", "one two three");
    let _ = scheduler.invalidate("m.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=1|m.rs=3");
    // B → A, built: A differs from B, the latest output, so it runs again.
    files.write("m.rs", "one two");
    let _ = scheduler.invalidate("m.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), first);
    assert_eq!(words.runs_of("a.rs", "Artifact"), 3);
    // A → B → A with nothing built in between: B never became an output,
    // so A equals the latest one and nothing runs past m.rs's Analysis.
    files.write("m.rs", "one two three");
    let _ = scheduler.invalidate("m.rs").unwrap();
    files.write("m.rs", "two one");
    let _ = scheduler.invalidate("m.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), first);
    assert_eq!(words.runs_of("a.rs", "Artifact"), 3, "verified");
    assert_eq!(first, fresh(&files, "a.rs", FULL));
}

#[test]
fn cutoff_never_masks_a_real_change() {
    let files = MemFiles::with(&[
        ("m.rs", "one"),
        ("n.rs", "one two three"),
        ("a.rs", "x\nuse m.rs"),
    ]);
    let words = Words::default();
    let scheduler = inline_words(&files, &words);
    built(&scheduler, "a.rs", FULL).expect("built");
    // a.rs names another blocker: its Analysis is equal (one word), but the
    // Artifact's inputs are another file's.
    files.write("a.rs", "x\nuse n.rs");
    let _ = scheduler.invalidate("a.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=1|n.rs=3");
    // A blocker's Analysis really changes: the Artifact runs on it.
    files.write("n.rs", "one");
    let _ = scheduler.invalidate("n.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=1|n.rs=1");
    // The file's own Analysis changes with an unchanged blocker list.
    files.write("a.rs", "x y\nuse n.rs");
    let _ = scheduler.invalidate("a.rs").unwrap();
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=2|n.rs=1");
    // A removed and re-added blocker is another object: nothing of the
    // old one is taken for the new one's.
    scheduler.remove("n.rs").unwrap();
    files.write("n.rs", "one");
    assert_eq!(text_of(&built(&scheduler, "a.rs", FULL)), "a.rs=2|n.rs=1");
    assert_eq!(words.runs_of("a.rs", "Artifact"), 5);
    assert_eq!(
        text_of(&built(&scheduler, "a.rs", FULL)),
        fresh(&files, "a.rs", FULL)
    );
}

#[test]
fn an_executor_that_cannot_compare_cuts_off_nothing_but_unchanged_bytes() {
    let files = MemFiles::with(&[("m.rs", "one two"), ("a.rs", "use m.rs\nz")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let artifact = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&artifact).expect("built");
    files.write("m.rs", "two one");
    let _ = scheduler.invalidate("m.rs").unwrap();
    let again = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&again).expect("built");
    assert_eq!(executor.runs_of("a.rs", "Artifact"), 2, "no same_* given");
    let counters = scheduler.observe().counters();
    assert_eq!(
        (counters.stages_verified, counters.outputs_unchanged),
        (0, 0)
    );
    assert_quiescent(&scheduler, &[&artifact, &again]);
}
