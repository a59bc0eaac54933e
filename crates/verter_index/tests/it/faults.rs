//! The `faults` fixture: a syntax error, a missing module file, a file that
//! is not UTF-8, and a module importing from the broken one. Each faulty
//! file fails alone, with its own typed error; every other file still
//! indexes, the importer with its `use` into the broken file unresolved.

use verter_index::ParseError;
use verter_scheduler::RequestError;

use crate::support::{fixture, index_package, inline_scheduler, render};

#[test]
fn each_faulty_file_fails_alone_and_the_rest_of_the_crate_indexes() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("faults", render(&index, &dir));
    });
}

#[test]
fn a_syntax_error_is_an_executor_error_naming_file_line_and_column() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    let broken = index
        .failures
        .iter()
        .find(|failure| failure.path == "src/broken.rs")
        .expect("broken.rs failed");
    let expected_prefix = format!("{}:3:", dir.join("src/broken.rs").display());
    let message = innermost(&broken.error);
    assert!(
        matches!(message, RequestError::ExecutorFailed { message, .. } if message.starts_with(&expected_prefix)),
        "{message:?} does not start with {expected_prefix}"
    );
}

#[test]
fn a_missing_module_file_is_source_missing() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    let gone = index
        .failures
        .iter()
        .find(|failure| failure.path == "src/gone.rs")
        .expect("gone.rs failed");
    assert!(
        matches!(innermost(&gone.error), RequestError::SourceMissing { .. }),
        "{:?}",
        gone.error
    );
}

/// Degrade, don't drop: a file that imports from an unparsable one still
/// indexes, with the `use`s into it unresolved; only the broken file fails.
#[test]
fn a_file_importing_from_a_broken_module_indexes_with_those_uses_unresolved() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    assert!(
        index.failures.iter().all(|f| f.path != "src/blocked.rs"),
        "{:?}",
        index.failures
    );
    let blocked = index
        .files
        .iter()
        .find(|file| file.path == "src/blocked.rs")
        .expect("blocked.rs indexed");
    assert_eq!(blocked.artifact.items.len(), 1);
    assert_eq!(
        (blocked.artifact.resolved, blocked.artifact.unresolved),
        (0, 1)
    );
    assert_eq!(blocked.artifact.uses[0].path, "crate::broken::ok");
    assert_eq!(blocked.artifact.uses[0].target, None);
    let broken = index
        .failures
        .iter()
        .find(|failure| failure.path == "src/broken.rs")
        .expect("broken.rs failed");
    assert!(
        matches!(
            broken.error.executor_cause::<ParseError>(),
            Some(ParseError::Syntax { line: 3, .. })
        ),
        "{:?}",
        broken.error
    );
}

/// The error at the end of a `DependencyFailed` chain.
fn innermost(error: &RequestError) -> &RequestError {
    match error {
        RequestError::DependencyFailed { cause, .. } => innermost(cause),
        other => other,
    }
}
