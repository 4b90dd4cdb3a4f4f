//! L*, the exact optimum: the smallest L such that k(S,D) internally disjoint S-D paths of
//! length at most L exist. Exponential search, for small topologies only (the CLI prints it
//! where it is cheap). The test suite holds its own independent search and checks this one too.

use crate::NodeId;
use crate::topology::Topology;

/// Largest topology [`l_star`] accepts, in nodes.
pub const MAX_NODES: u64 = 64;

/// L* for `src -> dst`, or `None` when the topology has more than [`MAX_NODES`] nodes or
/// `src = dst`.
pub fn l_star(topology: Topology, src: NodeId, dst: NodeId) -> Option<u32> {
    if topology.node_count() > MAX_NODES || src == dst {
        return None;
    }
    let k = topology.local_connectivity(src, dst) as usize;
    let d = topology.distance(src, dst);
    let firsts: Vec<NodeId> = topology.neighbours(src).collect();
    (d..=d + 2 * topology.diameter() + 2).find(|&limit| {
        let by_first: Vec<Vec<u64>> = firsts
            .iter()
            .map(|&first| interiors(topology, src, dst, first, limit))
            .collect();
        pick_disjoint(&by_first, 0, 0, k)
    })
}

/// The interior node sets (as masks) of every simple path `src, first, ..., dst` of length at
/// most `limit`.
fn interiors(topology: Topology, src: NodeId, dst: NodeId, first: NodeId, limit: u32) -> Vec<u64> {
    if first == dst {
        return vec![0];
    }
    let mut found = Vec::new();
    let mut stack = vec![(first, 1u64 << first.0, 1u32)];
    while let Some((u, mask, len)) = stack.pop() {
        for w in topology.neighbours(u) {
            if w == dst {
                found.push(mask);
            } else if w != src
                && mask >> w.0 & 1 == 0
                && len + 1 + topology.distance(w, dst) <= limit
            {
                stack.push((w, mask | 1 << w.0, len + 1));
            }
        }
    }
    found
}

/// Whether `k` paths with pairwise disjoint interiors can be taken, at most one per first hop.
fn pick_disjoint(by_first: &[Vec<u64>], slot: usize, used: u64, k: usize) -> bool {
    if k == 0 {
        return true;
    }
    if by_first.len() - slot < k {
        return false;
    }
    by_first[slot]
        .iter()
        .any(|&mask| mask & used == 0 && pick_disjoint(by_first, slot + 1, used | mask, k - 1))
        || pick_disjoint(by_first, slot + 1, used, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let eh: Topology = "eh:2,2".parse().unwrap();
        // Adjacent across a_0, both s-type: the dummy path needs d + 6 (docs/protocol.md,
        // "Optimality").
        assert_eq!(l_star(eh, NodeId(0), NodeId(0b01_00_0)), Some(7));
        // Antipodal s-type pair: d = 6 and L* = d.
        assert_eq!(l_star(eh, NodeId(0), NodeId(0b11_11_0)), Some(6));
        let q: Topology = "q:4".parse().unwrap();
        assert_eq!(l_star(q, NodeId(0), NodeId(0b0011)), Some(4));
        assert_eq!(l_star(q, NodeId(0), NodeId(0b1111)), Some(4));
        assert_eq!(l_star("q:7".parse().unwrap(), NodeId(0), NodeId(1)), None);
    }
}
