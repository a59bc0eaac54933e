//! Unit tests of status code names and one-line messages.

use super::*;

#[test]
fn status_codes_have_their_canonical_names() {
    assert_eq!(
        StatusCode::FAILED_PRECONDITION.to_string(),
        "FAILED_PRECONDITION"
    );
    assert_eq!(StatusCode::UNAUTHENTICATED.name(), "UNAUTHENTICATED");
    assert_eq!(StatusCode(99).name(), "UNRECOGNIZED");
    assert_eq!(StatusCode(-1).name(), "UNRECOGNIZED");
}

#[test]
fn messages_are_folded_onto_one_line() {
    assert_eq!(one_line("a\nb\t c\r\n"), "a b c");
    let long = "x".repeat(1000);
    assert_eq!(one_line(&long).chars().count(), MAX_MESSAGE_CHARS + 1);
}

#[test]
fn non_zero_exit_shows_the_last_stderr_line() {
    let err = RemoteError::NonZeroExit {
        code: 2,
        stderr: "warning: x\nerror: y\n\n".to_owned(),
        action_digest: Digest::of(b""),
    };
    let text = err.to_string();
    assert!(text.ends_with("exited with code 2: error: y"), "{text}");
    assert!(!text.contains('\n'));
}
