//! A small storm answers every foreground request with a fresh artifact,
//! for verter (with and without cutoff) and salsa; verter's cutoff verifies
//! stages only when it is on.

use super::*;

#[test]
fn storms_answer_every_foreground_request_with_a_fresh_artifact() {
    for (system, cutoff) in [
        (SystemKind::Verter, true),
        (SystemKind::Verter, false),
        (SystemKind::Salsa, true),
    ] {
        let record = w3(StormShape {
            system,
            threads: 2,
            files: 150,
            spin_us: 0,
            edits: 120,
            cutoff,
        });
        let answered: usize = record
            .get("foreground_requests")
            .and_then(|v| v.parse().ok())
            .expect("the storm reports its foreground requests");
        assert!(answered > 100, "{}: {record:?}", system.name());
        assert_eq!(record.get("cutoff"), (!cutoff).then_some("off"));
        if system == SystemKind::Verter {
            let verified: u64 = record
                .get("verified")
                .and_then(|v| v.parse().ok())
                .expect("verter reports its verified stages");
            // 30 % of 120 edits leave the Analysis equal: with cutoff each
            // verifies at least the edited file's Analysis.
            assert_eq!(verified > 0, cutoff, "{record:?}");
        }
    }
}

#[test]
fn the_edit_mix_is_ordered_and_leaves_signature_edits_the_most() {
    let mix = EDIT_MIX;
    assert!(mix.imports < mix.remove && mix.remove < mix.add);
    assert!(mix.add < mix.comment && mix.comment < mix.inner_body && mix.inner_body < 100);
    assert_eq!(mix.inner_body - mix.add, 30, "the cutoff-able share");
}
