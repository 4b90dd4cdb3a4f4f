//! What a run of a study is asked for. Each study reads `sizes` itself: what a size is, its
//! default and its limits differ from study to study.

use crate::error::Error;

/// The options of a study run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `A..B` inclusive: the dimension n on Q_n, m for HHC, k for the metacube; `None` for the
    /// study's default.
    pub sizes: Option<String>,
    /// Random instances per size.
    pub instances: usize,
    /// How many of them (the first ones) the generic max flow solves too (Q_n studies).
    pub maxflow_instances: usize,
    /// The bit constraint gamma_i of the container study.
    pub constraint: u32,
    /// Seed of the instance generator.
    pub seed: u64,
}

impl Default for Options {
    /// The papers' setup: 10,000 instances per size; the max flow on the first 100; gamma_2.
    fn default() -> Options {
        Options {
            sizes: None,
            instances: 10_000,
            maxflow_instances: 100,
            constraint: 2,
            seed: 1,
        }
    }
}

impl Options {
    /// The number of instances per size, which must be at least 1.
    pub(crate) fn instances(&self) -> Result<usize, Error> {
        match self.instances {
            0 => Err(Error::usage("--instances must be at least 1")),
            count => Ok(count),
        }
    }
}

/// `A..B` as two numbers with A <= B.
pub(crate) fn range(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.split_once("..")?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(range("4..16"), Some((4, 16)));
        assert_eq!(range(" 3 .. 3 "), Some((3, 3)));
        for bad in ["9..4", "4", "4..", "..4", "a..b", "-1..2", "1..2..3", "4-6"] {
            assert_eq!(range(bad), None, "{bad}");
        }
    }
}
