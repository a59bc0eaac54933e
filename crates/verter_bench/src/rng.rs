//! A small seeded random number generator (SplitMix64) and a Zipf sampler.
//! Owns nothing but arithmetic: every workload that draws a random number
//! draws it from here, so one seed reproduces one run exactly. Never reads a
//! clock or the operating system's entropy.

/// SplitMix64: fast, seedable, good enough for workload generation.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose whole sequence is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    ///
    /// # Panics
    /// If `bound` is zero: there is no number to draw; pass at least 1.
    pub fn below(&mut self, bound: usize) -> usize {
        assert!(
            bound > 0,
            "Rng::below(0) has no value to return: pass at least 1"
        );
        // Multiply-shift: unbiased enough for workload shapes.
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }

    /// `true` with probability `percent / 100`.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
}

/// Draws ranks `0..n` with probability proportional to `1 / (rank + 1)^s`.
#[derive(Debug, Clone)]
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    /// A sampler over `n` ranks with exponent `s`.
    ///
    /// # Panics
    /// If `n` is zero: a distribution needs at least one rank.
    pub fn new(n: usize, s: f64) -> Self {
        assert!(
            n > 0,
            "Zipf::new(0, _) has no rank to draw: pass at least 1"
        );
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|rank| {
                total += 1.0 / ((rank + 1) as f64).powf(s);
                total
            })
            .collect();
        Self { cumulative }
    }

    /// One rank, rank 0 the most likely.
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().expect("at least one rank");
        let target = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        self.cumulative
            .partition_point(|&c| c <= target)
            .min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests;
