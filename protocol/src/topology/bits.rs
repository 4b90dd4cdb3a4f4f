//! Bit masks as sets: every topology but the recursive dual-net names its edges by the bit of
//! the id they flip, so a set of edges (or of dimensions, or of subcubes) is a mask.

/// Iterates the set bits of a mask, lowest first.
#[derive(Clone, Copy, Debug)]
pub struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_bit_first() {
        assert_eq!(BitIter(0b1010_0100).collect::<Vec<_>>(), [2, 5, 7]);
        assert_eq!(BitIter(0).next(), None);
        assert_eq!(BitIter(1 << 63).collect::<Vec<_>>(), [63]);
    }
}
