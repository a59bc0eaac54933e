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
            submission: Submission::Request,
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

#[test]
fn the_non_blocking_client_answers_every_request_whatever_its_retry_policy() {
    for retry in [Retry::Answer, Retry::Yield] {
        let record = w4(OverloadShape {
            system: SystemKind::Verter,
            threads: 2,
            files: 100,
            spin_us: 0,
            factor: 10,
            submission: Submission::TryDag(retry),
        });
        assert_eq!(record.get("requests"), Some("1000"), "{record:?}");
        assert_eq!(record.get("submit"), Some("try_dag"), "{record:?}");
        assert_eq!(record.get("retry"), Some(retry.name()), "{record:?}");
        let count = |key: &str| -> u64 {
            record
                .get(key)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{key} is reported: {record:?}"))
        };
        assert!(count("backpressured_requests") <= count("backpressured"));
        assert!(count("backpressured_requests") <= 1000);
    }
}

#[test]
fn retry_policies_parse_by_name() {
    for retry in [Retry::Answer, Retry::Yield] {
        assert_eq!(Retry::parse(retry.name()), Some(retry));
    }
    assert_eq!(Retry::parse("sleep"), None);
}
