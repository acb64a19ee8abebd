//! The checker side's one source of randomness: SplitMix64 (Steele, Lea and Flood, "Fast
//! splittable pseudorandom number generators", OOPSLA 2014). A seed names the same
//! sequence on every platform and with every version of every dependency, so a seeded
//! walk (conformance's random walks, the swarm's shard seeds) replays exactly.

/// Each output of SplitMix64 first adds this odd constant to the state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A seeded SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0, "a choice among no options");
        (self.next_u64() % n as u64) as usize
    }

    /// The `i`-th output (counting from 1) of the generator of `seed`, in constant time:
    /// the state before it is `seed + (i - 1) * GAMMA`.
    pub fn nth_output(seed: u64, i: u64) -> u64 {
        Rng::new(seed.wrapping_add(i.wrapping_sub(1).wrapping_mul(GAMMA))).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nth_output_is_the_nth_of_the_sequence() {
        let mut rng = Rng::new(42);
        let outputs: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        let direct: Vec<u64> = (1..=5).map(|i| Rng::nth_output(42, i)).collect();
        assert_eq!(direct, outputs);
    }

    #[test]
    fn seed_zero_gives_the_published_first_output() {
        // The reference implementation's first output for seed 0
        // (Vigna's splitmix64.c, also the first value of Java's SplittableRandom(0)).
        assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}
