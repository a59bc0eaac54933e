//! The generator's randomness: one seed, one sequence; ranges and the Zipf
//! skew hold.

use super::*;

#[test]
fn one_seed_draws_one_sequence() {
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    let first: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
    let second: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
    assert_eq!(first, second);
    assert_ne!(Rng::new(8).next_u64(), first[0]);
}

#[test]
fn below_stays_in_range_and_reaches_both_ends() {
    let mut rng = Rng::new(1);
    let draws: Vec<usize> = (0..10_000).map(|_| rng.below(10)).collect();
    assert!(draws.iter().all(|&d| d < 10));
    assert!(draws.contains(&0) && draws.contains(&9));
}

#[test]
fn zipf_draws_rank_zero_most_often() {
    let zipf = Zipf::new(100, 1.0);
    let mut rng = Rng::new(3);
    let mut counts = [0usize; 100];
    for _ in 0..20_000 {
        counts[zipf.sample(&mut rng)] += 1;
    }
    let max = counts.iter().copied().max().expect("non-empty");
    assert_eq!(counts[0], max);
    assert!(
        counts[0] > 4 * counts[20],
        "rank 0 ({}) vs rank 20 ({})",
        counts[0],
        counts[20]
    );
}
