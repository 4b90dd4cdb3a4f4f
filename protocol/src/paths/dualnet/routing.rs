//! RDN_routing (seed 003, Algorithm 1): a path of length at most D_k between two nodes of
//! RDN^k(B), by recursion on the level.
//!
//! With u = (u_0, u_1, u_2) and v = (v_0, v_1, v_2) at level k:
//! - Case 1, same cluster: route inside it (level k-1);
//! - Case 2, different types: route u_2 -> v_1 inside C_u, reaching u' = (u_0, u_1, v_1); take the
//!   cross edge to v' = (v_0, v_1, u_1); route u_1 -> v_2 inside C_v;
//! - Case 3, same type, different clusters: take u's level-k cross edge, then Case 2.
//!
//! At level 0 the route is a shortest path in B. Lemma 2's bound D_k holds, and so does its claim
//! that the path is a shortest one, which one might doubt (pitfall 003-6 of
//! docs/family-algorithms.md): see
//! [`DualNet::distance`]; the tests compare every route with BFS.

use crate::NodeId;
use crate::topology::dualnet::DualNet;

/// RDN_routing(RDN^k(B), u, v): the path from `u` to `v`, inclusive.
pub fn route(rdn: DualNet, u: NodeId, v: NodeId) -> Vec<NodeId> {
    let mut path = vec![u];
    route_at(rdn, u, v, rdn.k, &mut path);
    path
}

/// Append the route from `u` (already in `path`) to `v`, two nodes of the same level-`level`
/// cluster.
pub(crate) fn route_at(rdn: DualNet, u: NodeId, v: NodeId, level: u32, path: &mut Vec<NodeId>) {
    if u == v {
        return;
    }
    if level == 0 {
        let n0 = rdn.base.nodes();
        let outer = u.0 - u.0 % n0;
        let steps = rdn.base.shortest_path(u.0 % n0, v.0 % n0);
        path.extend(steps[1..].iter().map(|&y| NodeId(outer + y)));
        return;
    }
    let (tu, tv) = (rdn.triple(u, level), rdn.triple(v, level));
    if tu.kind == tv.kind && tu.cluster == tv.cluster {
        return route_at(rdn, u, v, level - 1, path);
    }
    let u = if tu.kind == tv.kind {
        // Case 3: cross first.
        let w = rdn.cross(u, level);
        path.push(w);
        w
    } else {
        u
    };
    // Case 2.
    let tu = rdn.triple(u, level);
    let exit = rdn.with_triple(
        u,
        level,
        crate::topology::dualnet::Triple {
            node: tv.cluster,
            ..tu
        },
    );
    route_at(rdn, u, exit, level - 1, path);
    let entry = rdn.cross(exit, level);
    path.push(entry);
    route_at(rdn, entry, v, level - 1, path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::dualnet::Base;

    #[test]
    fn routes_are_paths_within_the_diameter() {
        for base in [Base::Ring3, Base::Q2, Base::Q3] {
            let rdn = DualNet { base, k: 1 };
            for u in 0..rdn.node_count() {
                for v in 0..rdn.node_count() {
                    let path = route(rdn, NodeId(u), NodeId(v));
                    assert_eq!(path.first(), Some(&NodeId(u)));
                    assert_eq!(path.last(), Some(&NodeId(v)));
                    assert!(path.windows(2).all(|w| rdn.is_adjacent(w[0], w[1])));
                    assert!(path.len() as u32 - 1 <= rdn.diameter());
                }
            }
        }
    }

    /// Pitfall 003-6 doubts Lemma 2's claim that Algorithm 1 is shortest; it holds
    /// (see [`DualNet::distance`]): every route has the BFS length.
    #[test]
    fn routes_are_shortest() {
        for base in [Base::Ring3, Base::Q2, Base::Q3] {
            for k in 1..=2 {
                let rdn = DualNet { base, k };
                let step = if rdn.node_count() > 1000 { 997 } else { 1 };
                for s in (0..rdn.node_count()).step_by(step) {
                    let dist = rdn.bfs(NodeId(s));
                    for v in 0..rdn.node_count() {
                        let length = route(rdn, NodeId(s), NodeId(v)).len() as u32 - 1;
                        assert_eq!(length, dist[v as usize], "{base:?} {k}: {s} -> {v}");
                        assert_eq!(rdn.distance(NodeId(s), NodeId(v)), length);
                    }
                }
            }
        }
    }
}
