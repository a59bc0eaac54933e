//! A small storm answers every foreground request with a fresh artifact,
//! for verter and salsa.

use super::*;

#[test]
fn storms_answer_every_foreground_request_with_a_fresh_artifact() {
    for system in [SystemKind::Verter, SystemKind::Salsa] {
        let record = w3(StormShape {
            system,
            threads: 2,
            files: 150,
            spin_us: 0,
            edits: 120,
        });
        let answered: usize = record
            .get("foreground_requests")
            .and_then(|v| v.parse().ok())
            .expect("the storm reports its foreground requests");
        assert!(answered > 100, "{}: {record:?}", system.name());
    }
}
