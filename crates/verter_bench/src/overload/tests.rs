//! A small overload answers every request and coalesces the repeats.

use super::*;

#[test]
fn overload_answers_every_request_and_coalesces_repeats() {
    for system in [SystemKind::Verter, SystemKind::Tokio] {
        let record = w4(OverloadShape {
            system,
            threads: 2,
            files: 100,
            spin_us: 0,
            factor: 10,
        });
        assert_eq!(record.get("requests"), Some("1000"), "{record:?}");
        let coalesced: u64 = record
            .get("coalesced")
            .and_then(|v| v.parse().ok())
            .expect("coalesced is reported");
        assert!(coalesced > 0, "{}: {record:?}", system.name());
    }
}

#[test]
fn the_request_order_holds_every_file_factor_times() {
    let sources = Project::generate(GenConfig::new(20)).sources();
    let order = request_order(&sources, 3);
    assert_eq!(order.len(), 60);
    for path in sources.keys() {
        assert_eq!(order.iter().filter(|p| *p == path).count(), 3);
    }
}
