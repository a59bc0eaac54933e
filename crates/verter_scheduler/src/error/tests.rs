//! Unit tests of the typed-cause look-ups.

use super::*;

#[derive(Debug, thiserror::Error)]
#[error("inner")]
struct Inner;

#[derive(Debug, thiserror::Error)]
#[error("outer: {0}")]
struct Outer(#[source] Inner);

fn failed(error: ExecutorError) -> RequestError {
    let (message, cause) = error.into_parts();
    RequestError::ExecutorFailed {
        path: Canonical::from("a.rs"),
        stage: "Artifact".into(),
        message,
        cause,
    }
}

#[test]
fn an_executor_cause_is_found_at_any_depth_of_its_source_chain() {
    let error = failed(ExecutorError::from_error(Outer(Inner)));
    assert!(error.executor_cause::<Outer>().is_some());
    assert!(error.executor_cause::<Inner>().is_some());
    assert!(error.executor_cause::<LoadError>().is_none());
    assert!(
        failed(ExecutorError::msg("plain"))
            .executor_cause::<Inner>()
            .is_none()
    );
}
