//! Node-to-node disjoint paths in HHC_{2^m+m}: the m+1 paths between two nodes, *derived* from
//! node-to-set. The thesis gives no node-to-node algorithm (it cites Wu et al. for one, not among
//! our sources); this is ours, and `cuberoute paths hhc:M FROM TO` uses it.
//!
//! - **s and d not adjacent**: HHC-iN2S (HHC-N2S for m <= 2, the exact search for m = 1) from s
//!   to the m+1 neighbours of d, then one edge to d. No path passes through d: its node before d
//!   would be a neighbour of d, hence a destination inside another path.
//! - **s and d adjacent** (node-to-set would let a path run s -> d -> y): the direct edge, and
//!   - internal edge (d = (sigma, pi xor 2^j)): for each other processor dimension h the square
//!     s -> (sigma, pi xor 2^h) -> (sigma, pi xor 2^h xor 2^j) -> d, and around the square of
//!     subcubes sigma, sigma xor 2^pi, sigma xor 2^pi xor 2^(pi xor 2^j), sigma xor 2^(pi xor 2^j):
//!     HHC-N2S's Case I-b path, length 7;
//!   - external edge (d = (sigma xor 2^pi, pi)): for each processor dimension h, with
//!     pi' = pi xor 2^h, s -> (sigma, pi') and around the square of subcubes sigma,
//!     sigma xor 2^pi', sigma xor 2^pi' xor 2^pi, sigma xor 2^pi, into d from (sigma xor 2^pi, pi'):
//!     length 7.
//!
//!   The squares use distinct middle nodes and distinct subcubes, so the paths are disjoint.

use super::conv::conv;
use super::in2s::hhc_in2s;
use crate::NodeId;
use crate::Topology;
use crate::paths::check::check_node_to_node;
use crate::paths::error::PathError;
use crate::paths::system::{Path, PathSystem};
use crate::paths::verify::{Shape, check};
use crate::topology::hhc::Hhc;

/// The m+1 disjoint paths from `s` to `d`, each from `s` to `d` inclusive.
pub fn hhc_n2n(h: Hhc, s: NodeId, d: NodeId) -> Result<PathSystem, PathError> {
    hhc_n2n_by(h, s, d, hhc_in2s)
}

/// [`hhc_n2n`] with another node-to-set algorithm for the non-adjacent case (HHC-N2S, say):
/// the metacube's MC(k,1) takes the shorter of several answers.
pub fn hhc_n2n_by(
    h: Hhc,
    s: NodeId,
    d: NodeId,
    node_to_set: fn(Hhc, NodeId, &[NodeId]) -> Result<PathSystem, PathError>,
) -> Result<PathSystem, PathError> {
    let topology = Topology::Hhc(h);
    check_node_to_node(topology, s, d)?;
    let system = if topology.is_adjacent(s, d) {
        PathSystem::paper(adjacent(h, s, d))
    } else {
        let around: Vec<NodeId> = topology.neighbours(d).collect();
        let mut system = node_to_set(h, s, &around)?;
        for p in &mut system.paths {
            p.push(d);
        }
        system
    };
    let k = h.connectivity() as usize;
    check(topology, Shape::NodeToNode { s, d, k }, &system.paths)
        .map_err(|e| PathError::internal(format!("HHC node-to-node: {e}")))?;
    Ok(system)
}

/// The m+1 paths between two adjacent nodes.
fn adjacent(h: Hhc, s: NodeId, d: NodeId) -> Vec<Path> {
    let (sigma, pi) = (h.subcube(s), h.processor(s));
    let mut out = vec![vec![s, d]];
    if h.subcube(d) == sigma {
        let pd = h.processor(d);
        for bit in (0..h.m).filter(|&b| 1 << b != pi ^ pd) {
            let a = s.flip(bit);
            out.push(vec![s, a, a.flip((pi ^ pd).trailing_zeros()), d]);
        }
        // Around: sigma -> sigma^2^pi -> ^2^pd -> sigma^2^pd -> sigma, from pi to pd.
        let a = sigma ^ 1 << pi;
        out.push(conv(
            h,
            &[sigma, a, a ^ 1 << pd, sigma ^ 1 << pd, sigma],
            pi,
            pd,
        ));
    } else {
        for bit in 0..h.m {
            let p2 = pi ^ 1 << bit;
            let b = sigma ^ 1 << p2;
            let mut path = vec![s];
            path.extend(conv(h, &[sigma, b, b ^ 1 << pi, sigma ^ 1 << pi], p2, pi));
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_pairs_of_hhc_6_and_hhc_11() {
        for m in [1, 2, 3] {
            let h = Hhc { m };
            let t = Topology::Hhc(h);
            for s in [NodeId(0), NodeId(5)] {
                for d in t.neighbours(s) {
                    let system = hhc_n2n(h, s, d).unwrap();
                    assert!(system.longest() <= 7);
                }
            }
        }
    }
}
