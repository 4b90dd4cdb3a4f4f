//! DISTRIB (thesis §5.1, Lemma 3 and Algorithm 4; appendix A, Lemma 2.5): paths of at most two
//! edges that move destinations into distinct subcubes.
//!
//! A node d = (sigma, p) has m+1 disjoint *candidate* paths into m+1 distinct subcubes:
//! - d -> (sigma xor 2^p, p), its external edge;
//! - d -> (sigma, p xor 2^h) -> (sigma xor 2^(p xor 2^h), p xor 2^h), for h = 0..m-1.
//!
//! The thesis writes a chosen path d -> d'' -> d' (d'' = d for the one-edge candidate): d' is
//! the *distributed destination*, d'' the node before it. Lemma 3 shows that each other chosen
//! path blocks at most one candidate, so a free one remains for up to m+1 destinations. The
//! candidates are tried in the thesis's order (external edge first, then h ascending), the first
//! acceptable one is taken; what "acceptable" means is each algorithm's condition list, given as
//! a predicate, on top of the conditions every caller shares (see [`distribute`]).

use crate::NodeId;
use crate::topology::hhc::Hhc;

/// A chosen distribution path d -> (d'' ->) d'.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Distribution {
    /// Index of the destination in the caller's list.
    pub index: usize,
    /// `[d, d']` or `[d, d'', d']`.
    pub path: Vec<NodeId>,
}

impl Distribution {
    pub fn destination(&self) -> NodeId {
        self.path[0]
    }

    /// d'': the node whose external edge leads to d' (d itself for a one-edge path).
    pub fn before(&self) -> NodeId {
        self.path[self.path.len() - 2]
    }

    /// d', the distributed destination.
    pub fn target(&self) -> NodeId {
        self.path[self.path.len() - 1]
    }
}

/// The m+1 candidates of Lemma 3 for `d`, external edge first.
pub fn candidates(h: Hhc, d: NodeId) -> Vec<Vec<NodeId>> {
    let mut out = vec![vec![d, h.external(d)]];
    for bit in 0..h.m {
        let next = d.flip(bit);
        out.push(vec![d, next, h.external(next)]);
    }
    out
}

/// Distribute `dests[i]` for every `i` of `which`, in that order. A candidate is taken when
/// - no node but its first is a destination;
/// - it shares no node with a path already chosen;
/// - its target's subcube holds no destination and no earlier target;
/// - `accept(candidate)` holds (the caller's own conditions).
///
/// `None` when some destination has no acceptable candidate (Lemma 3 says this cannot happen
/// under the callers' preconditions; the callers turn it into an internal error).
pub fn distribute(
    h: Hhc,
    dests: &[NodeId],
    which: &[usize],
    accept: impl Fn(&[NodeId]) -> bool,
) -> Option<Vec<Distribution>> {
    let occupied: Vec<u64> = dests.iter().map(|&d| h.subcube(d)).collect();
    let mut chosen: Vec<Distribution> = Vec::with_capacity(which.len());
    for &i in which {
        let pick = candidates(h, dests[i]).into_iter().find(|path| {
            let target = path[path.len() - 1];
            path[1..].iter().all(|v| !dests.contains(v))
                && chosen
                    .iter()
                    .all(|c| c.path.iter().all(|v| !path.contains(v)))
                && !occupied.contains(&h.subcube(target))
                && chosen
                    .iter()
                    .all(|c| h.subcube(c.target()) != h.subcube(target))
                && accept(path)
        })?;
        chosen.push(Distribution {
            index: i,
            path: pick,
        });
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_reach_m_plus_1_distinct_subcubes() {
        let h = Hhc { m: 3 };
        let d = h.node(0b0000_1010, 0b001);
        let c = candidates(h, d);
        assert_eq!(c.len(), 4);
        // Table 5.1: d_2 = (00001010, 001) is distributed by its external edge to (00001000, 001).
        assert_eq!(c[0], vec![d, h.node(0b0000_1000, 0b001)]);
        let mut subcubes: Vec<u64> = c.iter().map(|p| h.subcube(p[p.len() - 1])).collect();
        subcubes.sort_unstable();
        subcubes.dedup();
        assert_eq!(subcubes.len(), 4);
    }
}
