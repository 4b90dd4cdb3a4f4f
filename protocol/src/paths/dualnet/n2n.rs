//! Node-to-node disjoint paths in RDN^k(B): the d_0+k paths between two nodes, derived from
//! node-to-set ([`super::n2s`]). Seed 003 gives none (its reference [16] does, not among our
//! sources); this one is ours, and `cuberoute paths rdn:BASE,K FROM TO` uses it.
//!
//! Node-to-set from s to the d_0+k neighbours of d, then one edge to d: no path passes through d
//! (its node before d would be a neighbour of d, a target inside another path). When s and d are
//! adjacent, s is one of those neighbours; then d itself replaces s among the targets, so that no
//! other path may pass through it, and the path that reaches d is kept as it is.

use super::n2s::rdn_n2s;
use crate::NodeId;
use crate::Topology;
use crate::paths::check::check_node_to_node;
use crate::paths::error::PathError;
use crate::paths::system::PathSystem;
use crate::paths::verify::{Shape, check};
use crate::topology::dualnet::DualNet;

/// The d_0+k disjoint paths from `s` to `d`, each from `s` to `d` inclusive.
pub fn rdn_n2n(rdn: DualNet, s: NodeId, d: NodeId) -> Result<PathSystem, PathError> {
    let topology = Topology::DualNet(rdn);
    check_node_to_node(topology, s, d)?;
    let targets: Vec<NodeId> = rdn
        .neighbours(d)
        .map(|y| if y == s { d } else { y })
        .collect();
    let mut system = rdn_n2s(rdn, s, &targets)?;
    for p in &mut system.paths {
        if *p.last().expect("non-empty") != d {
            p.push(d);
        }
    }
    let k = rdn.connectivity() as usize;
    check(topology, Shape::NodeToNode { s, d, k }, &system.paths)
        .map_err(|e| PathError::internal(format!("RDN node-to-node: {e}")))?;
    Ok(system)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::dualnet::Base;

    #[test]
    fn every_pair_of_rdn_1_of_the_ring() {
        let rdn = DualNet {
            base: Base::Ring3,
            k: 1,
        };
        for s in 0..18 {
            for d in (0..18).filter(|&d| d != s) {
                let system = rdn_n2n(rdn, NodeId(s), NodeId(d)).unwrap();
                assert_eq!(system.paths.len(), 3);
            }
        }
    }
}
