//! Every system agrees with the reference build on W1 and W2 (small N).

use super::*;

#[test]
fn every_system_agrees_with_the_reference_on_w1_and_w2() {
    for system in SystemKind::ALL {
        for threads in [1, 2] {
            let shape = Shape {
                system,
                threads,
                files: 120,
                spin_us: 0,
                iterations: 2,
            };
            let w1 = w1(shape);
            assert_eq!(w1.get("tasks"), Some("240"), "{w1:?}");
            assert_eq!(
                w1.get("executions"),
                Some("240"),
                "{} ran each kernel once: {w1:?}",
                system.name()
            );
            let w2 = w2(shape);
            assert_eq!(w2.len(), EditCase::ALL.len());
        }
    }
}

#[test]
fn system_names_round_trip() {
    for system in SystemKind::ALL {
        assert_eq!(SystemKind::parse(system.name()), Some(system));
    }
    assert_eq!(SystemKind::parse("make"), None);
}
