//! Unit tests of reading missing blobs out of a status's details.

use super::*;

fn packed(failure: &PreconditionFailure) -> Any {
    Any {
        type_url: PRECONDITION_FAILURE_TYPE.to_owned(),
        value: failure.encode_to_vec(),
    }
}

#[test]
fn missing_violations_name_their_blobs() {
    let blob = Digest::of(b"lost");
    let failure = PreconditionFailure {
        violations: vec![
            Violation {
                r#type: MISSING_VIOLATION.to_owned(),
                subject: blob_subject(&blob),
                description: String::new(),
            },
            Violation {
                r#type: "OTHER".to_owned(),
                subject: "whatever".to_owned(),
                description: String::new(),
            },
        ],
    };
    assert_eq!(missing_blobs(&[packed(&failure)]), Some(vec![blob]));
}

#[test]
fn details_without_missing_violations_name_nothing() {
    let failure = PreconditionFailure {
        violations: vec![Violation {
            r#type: "OTHER".to_owned(),
            subject: "x".to_owned(),
            description: String::new(),
        }],
    };
    assert_eq!(missing_blobs(&[packed(&failure)]), None);
    assert_eq!(missing_blobs(&[]), None);
}

#[test]
fn malformed_subjects_are_skipped() {
    let failure = PreconditionFailure {
        violations: vec![Violation {
            r#type: MISSING_VIOLATION.to_owned(),
            subject: "blobs/nothex/12".to_owned(),
            description: String::new(),
        }],
    };
    assert_eq!(missing_blobs(&[packed(&failure)]), Some(vec![]));
}
