//! A small seeded generator (SplitMix64): the only source of randomness in
//! the simulator, so a seed reproduces an operation trace exactly.
//!
//! Never reads a clock, a thread id or an address.

/// SplitMix64: fast, and every seed (zero included) gives a full-period
/// stream.
#[derive(Debug, Clone)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0, "below(0) has no value");
        (self.next_u64() % n as u64) as usize
    }

    /// `true` with probability `percent / 100`.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.next_u64() % 100 < u64::from(percent)
    }

    /// One element of `items` (non-empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// An independent generator derived from this one's next value.
    pub fn fork(&mut self) -> Self {
        Self(self.next_u64() ^ 0xd1b5_4a32_d192_ed03)
    }
}

/// The SplitMix64 finaliser: a stable 64-bit mix of `z`.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a over `bytes`: a stable hash for digests the oracle recomputes.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_reproduces_its_stream() {
        let (mut a, mut b) = (SimRng::new(42), SimRng::new(42));
        let first: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let second: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        assert_eq!(first, second);
        assert_ne!(SimRng::new(43).next_u64(), first[0]);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SimRng::new(7);
        assert!((0..1000).all(|_| rng.below(5) < 5));
    }
}
