//! Node-to-node on MC(k,1) where MC-N2N's printed construction does not apply (pitfall 002-6 of
//! docs/family-algorithms.md: its special cases need a second local dimension, and the tags of our
//! corrections two bits).
//!
//! MC(k,1) is HHC_{2^k+k} ([`crate::topology::metacube::hhc_isomorphism`]), so HHC node-to-node
//! answers, but no single answer keeps MC-N2N's bound H + 2^k + k + 5: measured on 20,000 random
//! pairs of MC(4,1), HHC node-to-node alone exceeded it on 646 (by up to 7). So this takes every
//! answer at hand and keeps the one with the shortest longest path:
//! - HHC node-to-node from s to t and from t to s (reversed), each by HHC-iN2S and by HHC-N2S;
//! - MC-N2S from s to the neighbours of t plus one edge, and the same from t (not for adjacent
//!   ends, where such a path could pass through the other end).
//!
//! If the best is still over the bound: on at most 4,096 nodes the exact search
//! ([`crate::paths::fallback`]) when it does better; up to 2^21 nodes [`shorten`], which reroutes
//! the longest path by BFS around the others while that helps. The tests hold every answer to the
//! bound on every pair of MC(1,1), MC(2,1) and MC(3,1) and on random pairs of MC(4,1), MC(5,1).

use super::{n2n_bound, n2s};
use crate::paths::error::PathError;
use crate::paths::hhc::{in2s::hhc_in2s, n2n::hhc_n2n_by, n2s::hhc_n2s};
use crate::paths::system::{Construction, Path, PathSystem};
use crate::paths::verify::{Shape, check};
use crate::topology::hhc::Hhc;
use crate::topology::metacube::{Metacube, from_hhc, hhc_isomorphism};
use crate::{NodeId, Topology};
use std::collections::VecDeque;

type NodeToSet = fn(Hhc, NodeId, &[NodeId]) -> Result<PathSystem, PathError>;

/// The most nodes [`shorten`] searches (a distance array of this many entries).
const MAX_SEARCH_NODES: u64 = 1 << 21;

/// The k+1 disjoint paths from `s` to `t` in MC(k,1), labelled [`Construction::Isomorphic`]
/// with `why` the printed construction failed.
pub(crate) fn node_to_node(
    mc: Metacube,
    s: NodeId,
    t: NodeId,
    why: &'static str,
) -> Result<PathSystem, PathError> {
    let topology = Topology::Metacube(mc);
    let k = mc.connectivity() as usize;
    let shape = Shape::NodeToNode { s, d: t, k };
    let mut candidates: Vec<Vec<Path>> = Vec::new();
    let (h, hs) = hhc_isomorphism(mc, s);
    let (_, ht) = hhc_isomorphism(mc, t);
    for alg in [hhc_in2s as NodeToSet, hhc_n2s] {
        for (from, to, reversed) in [(hs, ht, false), (ht, hs, true)] {
            let system = hhc_n2n_by(h, from, to, alg)?;
            candidates.push(oriented(system.paths, reversed, |v| from_hhc(mc, v)));
        }
    }
    if !topology.is_adjacent(s, t) {
        for (from, to, reversed) in [(s, t, false), (t, s, true)] {
            let around: Vec<NodeId> = topology.neighbours(to).collect();
            if let Ok(system) = n2s::mc_n2s(mc, from, &around) {
                let mut paths = system.paths;
                paths.iter_mut().for_each(|p| p.push(to));
                candidates.push(oriented(paths, reversed, |v| v));
            }
        }
    }
    let mut paths = candidates
        .into_iter()
        .filter(|paths| check(topology, shape, paths).is_ok())
        .min_by_key(|paths| longest(paths))
        .ok_or_else(|| PathError::internal("MC(k,1) node-to-node: no answer"))?;
    let bound = n2n_bound(mc, s, t);
    if longest(&paths) > bound {
        let nodes = topology.node_count();
        if nodes <= crate::paths::fallback::MAX_NODES {
            if let Some(exact) = crate::paths::fallback::node_to_node(topology, s, t, k)
                && longest(&exact) < longest(&paths)
            {
                paths = exact;
            }
        } else if nodes <= MAX_SEARCH_NODES {
            shorten(topology, &mut paths);
        }
    }
    check(topology, shape, &paths)
        .map_err(|e| PathError::internal(format!("MC(k,1) node-to-node: {e}")))?;
    Ok(PathSystem {
        paths,
        construction: Construction::Isomorphic(why),
    })
}

/// The paths with their nodes mapped, each turned round when `reversed`.
fn oriented(paths: Vec<Path>, reversed: bool, map: impl Fn(NodeId) -> NodeId) -> Vec<Path> {
    paths
        .into_iter()
        .map(|p| {
            let mut p: Path = p.into_iter().map(&map).collect();
            if reversed {
                p.reverse();
            }
            p
        })
        .collect()
}

/// The longest path, in edges.
fn longest(paths: &[Path]) -> usize {
    paths.iter().map(|p| p.len() - 1).max().unwrap_or(0)
}

/// Reroute the longest path of a node-to-node system by a shortest path around the others'
/// nodes, as long as that makes it shorter. Ids must be below `topology.node_count()`.
fn shorten(topology: Topology, paths: &mut [Path]) {
    loop {
        let i = (0..paths.len())
            .max_by_key(|&i| paths[i].len())
            .expect("k >= 1");
        let (s, t) = (paths[i][0], *paths[i].last().expect("non-empty"));
        let n = topology.node_count() as usize;
        let mut blocked = vec![false; n];
        let mut direct_taken = false;
        for (_, p) in paths.iter().enumerate().filter(|&(j, _)| j != i) {
            direct_taken |= p.len() == 2;
            for v in &p[1..p.len() - 1] {
                blocked[v.0 as usize] = true;
            }
        }
        match bfs(topology, s, t, &blocked, direct_taken) {
            Some(route) if route.len() < paths[i].len() => paths[i] = route,
            _ => return,
        }
    }
}

/// A shortest path from `s` to `t` through nodes not `blocked`, without the edge s-t when
/// `no_direct_edge`. Not [`crate::topology::bfs::shortest_path`]: this one may cross a whole
/// MC(4,1), a million nodes, where dense arrays indexed by id are several times faster than its
/// map.
fn bfs(
    topology: Topology,
    s: NodeId,
    t: NodeId,
    blocked: &[bool],
    no_direct_edge: bool,
) -> Option<Path> {
    const UNSEEN: u32 = u32::MAX;
    let mut parent = vec![UNSEEN; blocked.len()];
    parent[s.0 as usize] = s.0 as u32;
    let mut queue = VecDeque::from([s]);
    while let Some(u) = queue.pop_front() {
        for v in topology.neighbours(u) {
            let vi = v.0 as usize;
            if parent[vi] != UNSEEN || blocked[vi] || (no_direct_edge && u == s && v == t) {
                continue;
            }
            parent[vi] = u.0 as u32;
            if v == t {
                let mut path = vec![t];
                let mut at = t;
                while at != s {
                    at = NodeId(u64::from(parent[at.0 as usize]));
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfs_goes_round_blocked_nodes_and_a_taken_direct_edge() {
        // MC(1,1) is a cycle of 8 nodes.
        let mc = Metacube { k: 1, m: 1 };
        let t = Topology::Metacube(mc);
        let s = NodeId(0);
        let d = t.neighbours(s).next().unwrap();
        let free = vec![false; 8];
        assert_eq!(bfs(t, s, d, &free, false), Some(vec![s, d]));
        let round = bfs(t, s, d, &free, true).unwrap();
        assert_eq!(round.len(), 8, "the other way round the cycle: {round:?}");
        let mut blocked = free.clone();
        blocked[round[3].0 as usize] = true;
        assert_eq!(bfs(t, s, d, &blocked, true), None);
    }

    #[test]
    fn answers_on_every_pair_of_mc_2_1_are_within_the_bound() {
        let mc = Metacube { k: 2, m: 1 };
        for s in 0..64 {
            for d in (0..64).filter(|&d| d != s) {
                let (s, d) = (NodeId(s), NodeId(d));
                let system = node_to_node(mc, s, d, "test").unwrap();
                assert!(longest(&system.paths) <= n2n_bound(mc, s, d), "{s} -> {d}");
            }
        }
    }
}
