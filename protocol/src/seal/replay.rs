//! The anti-replay window of one pair's nonces (as IPsec's and DTLS's): the highest nonce seen
//! and which of the [`WINDOW`] below it were seen. A nonce seen before, or older than the
//! window, is refused.

/// How far below the highest nonce seen a message may still arrive: messages of one pair cross
/// k paths and overtake each other, never by thousands.
pub const WINDOW: u64 = 4096;

const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ReplayWindow {
    /// The highest nonce seen, if any.
    top: Option<u64>,
    /// Bit `n % WINDOW` is set when nonce `n` (within the window below `top`) was seen.
    seen: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> ReplayWindow {
        ReplayWindow {
            top: None,
            seen: [0; WORDS],
        }
    }
}

impl ReplayWindow {
    /// Whether `nonce` is new; if it is, it is marked seen.
    pub fn accept(&mut self, nonce: u64) -> bool {
        match self.top {
            None => {
                self.top = Some(nonce);
                self.mark(nonce);
                true
            }
            Some(top) if nonce > top => {
                // Forget the slots the window slides past, then take the new top.
                let slide = nonce - top;
                if slide >= WINDOW {
                    self.seen = [0; WORDS];
                } else {
                    for n in top + 1..=nonce {
                        self.clear(n);
                    }
                }
                self.top = Some(nonce);
                self.mark(nonce);
                true
            }
            Some(top) if top - nonce >= WINDOW => false,
            Some(_) => {
                if self.is_marked(nonce) {
                    false
                } else {
                    self.mark(nonce);
                    true
                }
            }
        }
    }

    fn slot(nonce: u64) -> (usize, u64) {
        let bit = nonce % WINDOW;
        ((bit / 64) as usize, 1 << (bit % 64))
    }

    fn mark(&mut self, nonce: u64) {
        let (word, bit) = Self::slot(nonce);
        self.seen[word] |= bit;
    }

    fn clear(&mut self, nonce: u64) {
        let (word, bit) = Self::slot(nonce);
        self.seen[word] &= !bit;
    }

    fn is_marked(&self, nonce: u64) -> bool {
        let (word, bit) = Self::slot(nonce);
        self.seen[word] & bit != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_nonce_once_in_any_order_within_the_window() {
        let mut w = ReplayWindow::default();
        assert!(w.accept(10));
        assert!(!w.accept(10));
        assert!(w.accept(3), "below the top, within the window");
        assert!(!w.accept(3));
        assert!(w.accept(10 + WINDOW - 1));
        assert!(w.accept(11));
        assert!(!w.accept(10), "still seen");
        assert!(w.accept(10 + WINDOW));
        assert!(!w.accept(10), "now older than the window");
        assert!(w.accept(5 * WINDOW));
        assert!(!w.accept(5 * WINDOW));
        assert!(!w.accept(11), "long gone");
    }

    proptest! {
        /// Against a set of every nonce seen: a nonce is accepted exactly when it was never
        /// seen and is within the window below the highest seen.
        #[test]
        fn matches_a_model(nonces in proptest::collection::vec(0u64..3 * WINDOW, 1..600)) {
            let mut w = ReplayWindow::default();
            let mut seen = std::collections::BTreeSet::new();
            let mut top: Option<u64> = None;
            for n in nonces {
                let fresh = !seen.contains(&n) && top.is_none_or(|t| n > t || t - n < WINDOW);
                prop_assert_eq!(w.accept(n), fresh, "nonce {}", n);
                if fresh {
                    seen.insert(n);
                    top = Some(top.map_or(n, |t| t.max(n)));
                }
            }
        }
    }
}
