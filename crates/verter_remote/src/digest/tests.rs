//! Known-answer tests of the digest.

use super::*;

#[test]
fn digest_is_the_sha256_hex_with_the_size() {
    let abc = Digest::of(b"abc");
    assert_eq!(
        abc.hash,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(abc.size, 3);
    assert_eq!(abc.to_string(), format!("{}/3", abc.hash));
    assert!(abc.is_well_formed());
}

#[test]
fn the_empty_blob_is_recognised() {
    let empty = Digest::of(b"");
    assert_eq!(
        empty.hash,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert!(empty.is_empty_blob());
}

#[test]
fn digests_round_trip_through_the_wire_form() {
    let digest = Digest::of(b"hello");
    assert_eq!(Digest::from_proto(&digest.to_proto()), digest);
}

#[test]
fn malformed_digests_are_recognised() {
    let upper = Digest {
        hash: "A".repeat(64),
        size: 1,
    };
    let short = Digest {
        hash: "a".repeat(63),
        size: 1,
    };
    let negative = Digest {
        hash: "a".repeat(64),
        size: -1,
    };
    assert!(!upper.is_well_formed());
    assert!(!short.is_well_formed());
    assert!(!negative.is_well_formed());
}
