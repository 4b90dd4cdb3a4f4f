//! How often a node runs a key agreement for others: token buckets, refilled by the clock the
//! caller passes.

/// A rate: one token every `every_us`, at most `burst` saved up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Rate {
    pub burst: u32,
    pub every_us: u64,
}

/// Tokens left of a [`Rate`] at a time: full when made.
#[derive(Clone, Copy, Debug)]
pub struct Bucket {
    tokens: u32,
    /// When the tokens were last counted up to.
    at_us: u64,
}

impl Bucket {
    pub fn full(rate: Rate, now_us: u64) -> Bucket {
        Bucket {
            tokens: rate.burst,
            at_us: now_us,
        }
    }

    fn refill(&mut self, rate: Rate, now_us: u64) {
        if self.tokens >= rate.burst {
            self.at_us = now_us;
            return;
        }
        let every = rate.every_us.max(1);
        let earned = now_us.saturating_sub(self.at_us) / every;
        if earned > 0 {
            self.tokens = (u64::from(self.tokens) + earned).min(u64::from(rate.burst)) as u32;
            self.at_us = if self.tokens >= rate.burst {
                now_us
            } else {
                self.at_us + earned * every
            };
        }
    }

    /// Whether a token is there at `now_us` (none taken).
    pub fn has(&mut self, rate: Rate, now_us: u64) -> bool {
        self.refill(rate, now_us);
        self.tokens > 0
    }

    /// Take a token; false if there is none.
    pub fn take(&mut self, rate: Rate, now_us: u64) -> bool {
        let has = self.has(rate, now_us);
        if has {
            self.tokens -= 1;
        }
        has
    }

    /// Whether the bucket is full at `now_us`: forgetting it changes nothing.
    pub fn is_full(&mut self, rate: Rate, now_us: u64) -> bool {
        self.refill(rate, now_us);
        self.tokens >= rate.burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_token_per_period() {
        let rate = Rate {
            burst: 3,
            every_us: 100,
        };
        let mut b = Bucket::full(rate, 1_000);
        assert!(b.take(rate, 1_000) && b.take(rate, 1_000) && b.take(rate, 1_000));
        assert!(!b.take(rate, 1_050));
        assert!(b.take(rate, 1_100));
        assert!(!b.take(rate, 1_199));
        // Time earned while not full counts from the last token's period, not from the take.
        assert!(b.take(rate, 1_200));
        assert!(!b.has(rate, 1_250));
        assert!(b.is_full(rate, 10_000));
        assert!(b.take(rate, 10_000) && b.take(rate, 10_000) && b.take(rate, 10_000));
        assert!(!b.take(rate, 10_000));
        // A clock that goes back earns nothing and takes nothing away.
        assert!(!b.take(rate, 5));
        assert!(b.take(rate, 10_100));
    }
}
