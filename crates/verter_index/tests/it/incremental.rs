//! One edit, rebuilt incrementally: only the edited file's stages and the
//! artifacts of the files blocked on it run again (counted by the
//! scheduler's stage-run counters).

use std::fs;
use std::path::Path;

use verter_index::realpath;

use crate::support::{fixture, index_package, inline_scheduler, render};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn editing_one_module_reruns_only_it_and_the_artifacts_blocked_on_it() {
    let temp = tempfile::tempdir().expect("a temp dir");
    let dir = realpath(temp.path()).expect("canonical").join("tree");
    copy_dir(&fixture("tree"), &dir);
    let scheduler = inline_scheduler();
    let before = render(&index_package(&scheduler, &dir), &dir);
    let cold = scheduler.observe().counters();
    assert_eq!(
        (cold.source_runs, cold.analysis_runs, cold.artifact_runs),
        (7, 7, 7)
    );

    // `util/strings.rs` gains an item; `lib.rs` and `shapes/circle.rs` use it.
    let strings = dir.join("src/util/strings.rs");
    let text = fs::read_to_string(&strings).expect("read") + "\npub fn mumble() {}\n";
    fs::write(&strings, text).expect("write");
    scheduler
        .invalidate(strings.to_str().expect("utf-8 path"))
        .expect("invalidated");
    let after = render(&index_package(&scheduler, &dir), &dir);
    let warm = scheduler.observe().counters();
    assert_eq!(
        (
            warm.source_runs - cold.source_runs,
            warm.analysis_runs - cold.analysis_runs,
            warm.artifact_runs - cold.artifact_runs,
        ),
        (1, 1, 3),
        "one parse, one analysis, three artifacts (strings.rs, lib.rs, circle.rs)"
    );
    assert!(after.contains("pub fn mumble"), "{after}");
    assert_eq!(
        before
            .lines()
            .filter(|l| !l.contains("src/util/strings.rs"))
            .count(),
        after
            .lines()
            .filter(|l| !l.contains("src/util/strings.rs") && !l.contains("mumble"))
            .count(),
    );
}
