//! The `faults` fixture: a syntax error, a missing module file, a file that
//! is not UTF-8, and a module blocked on the broken one. Each fails alone,
//! with its own typed error; every other file still indexes.

use verter_dag::TargetStage;
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

#[test]
fn a_file_blocked_on_a_broken_module_fails_with_dependency_failed() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    let blocked = index
        .failures
        .iter()
        .find(|failure| failure.path == "src/blocked.rs")
        .expect("blocked.rs failed");
    match &blocked.error {
        RequestError::DependencyFailed { dep, .. } => {
            assert!(
                dep.file.canonical.as_str().ends_with("src/broken.rs"),
                "{dep}"
            );
            assert_eq!(dep.stage, TargetStage::Analysis);
        }
        other => panic!("expected DependencyFailed, got {other:?}"),
    }
}

/// The error at the end of a `DependencyFailed` chain.
fn innermost(error: &RequestError) -> &RequestError {
    match error {
        RequestError::DependencyFailed { cause, .. } => innermost(cause),
        other => other,
    }
}
