//! The instance generator: splitmix64, a small, seedable, well-mixed generator (no dependency
//! needed), and the draws the studies make with it. A study seeds one generator per size from
//! `--seed`, so every size's instances are fixed by the seed alone and the tables repeat run to
//! run (only the times move).

/// splitmix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift, without the rejection step: the bias is at
    /// most n / 2^64).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// `count` distinct values below `n`, none in `avoid`, in the order drawn.
    pub fn distinct(&mut self, n: u64, count: usize, avoid: &[u64]) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::with_capacity(count);
        while out.len() < count {
            let v = self.below(n);
            if !avoid.contains(&v) && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// A node of Q_n of weight i or i+1 (one satisfying the bit constraint gamma_i), uniform
    /// among them.
    pub fn constrained(&mut self, n: u32, i: u32) -> u64 {
        let (a, b) = (binomial(n, i), binomial(n, i + 1));
        let w = if self.below((a + b) as u64) < a as u64 {
            i
        } else {
            i + 1
        };
        // A uniform w-subset of the n positions (partial Fisher-Yates).
        let mut pos: Vec<u32> = (0..n).collect();
        for j in 0..w as usize {
            let r = j + self.below((n as usize - j) as u64) as usize;
            pos.swap(j, r);
        }
        pos[..w as usize].iter().map(|&p| 1u64 << p).sum()
    }
}

/// n choose k.
fn binomial(n: u32, k: u32) -> u128 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u128, |acc, j| acc * (n - j) as u128 / (j + 1) as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_outputs() {
        // The reference implementation's first outputs from seed 0.
        let mut rng = Rng::new(0);
        assert_eq!(rng.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn below_stays_below_and_reaches_every_value() {
        let mut rng = Rng::new(7);
        let mut seen = [0usize; 5];
        for _ in 0..1000 {
            seen[rng.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 100), "{seen:?}");
    }

    #[test]
    fn distinct_values_avoid_the_given_ones() {
        let mut rng = Rng::new(3);
        for _ in 0..100 {
            let v = rng.distinct(16, 10, &[0, 5]);
            let mut sorted = v.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), 10);
            assert!(v.iter().all(|&x| x < 16 && x != 0 && x != 5), "{v:?}");
        }
        // Every value left is drawn when all of them are asked for.
        let mut all = rng.distinct(8, 7, &[3]);
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 4, 5, 6, 7]);
    }

    #[test]
    fn constrained_nodes_have_weight_i_or_i_plus_1_and_both_occur() {
        let mut rng = Rng::new(11);
        let mut weights = [0usize; 9];
        for _ in 0..2000 {
            let v = rng.constrained(8, 2);
            assert!(v < 1 << 8);
            weights[v.count_ones() as usize] += 1;
        }
        // C(8,2) = 28 nodes of weight 2 against C(8,3) = 56 of weight 3: about 1 to 2.
        assert_eq!(weights[2] + weights[3], 2000);
        assert!(weights[2] > 500 && weights[3] > 1000, "{weights:?}");
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(8, 2), 28);
        assert_eq!(binomial(8, 3), 56);
        assert_eq!(binomial(16, 0), 1);
        assert_eq!(binomial(3, 4), 0);
        assert_eq!(binomial(64, 32), 1_832_624_140_942_590_534);
    }
}
