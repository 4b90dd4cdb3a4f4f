//! The check every path system of the seed-topology algorithms passes before it is returned:
//! each path is a path of the topology (consecutive nodes adjacent, no node twice), it has the
//! right ends, there are as many paths as asked, and the paths are disjoint as the problem
//! demands. It is cheap (one sort of the nodes of the paths), so it runs in release builds:
//! a construction that goes wrong returns an internal error, never a wrong path.
//!
//! The tests use their own, independent checker (`protocol/tests/common`), built from the
//! definitions without this crate's topology code.

use crate::paths::system::Path;
use crate::{NodeId, Topology};

/// Which disjoint-path problem a path system answers.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'a> {
    /// `paths[i]` from `s` to `dests[i]`; the paths share only `s`.
    NodeToSet { s: NodeId, dests: &'a [NodeId] },
    /// `paths[i]` from `sources[i]` to a destination, each destination reached once; the paths
    /// share no node.
    SetToSet {
        sources: &'a [NodeId],
        dests: &'a [NodeId],
    },
    /// `k` paths from `s` to `d`, sharing only their ends.
    NodeToNode { s: NodeId, d: NodeId, k: usize },
}

/// `Ok` when `paths` answers `shape` in `topology`; otherwise what is wrong.
pub fn check(topology: Topology, shape: Shape<'_>, paths: &[Path]) -> Result<(), String> {
    for (i, p) in paths.iter().enumerate() {
        check_path(topology, p).map_err(|e| format!("path {i}: {e}"))?;
    }
    // Every node that must appear once: all but the shared ends.
    let mut once: Vec<NodeId> = Vec::with_capacity(paths.iter().map(Vec::len).sum());
    match shape {
        Shape::NodeToSet { s, dests } => {
            if paths.len() != dests.len() {
                return Err(format!(
                    "{} paths for {} destinations",
                    paths.len(),
                    dests.len()
                ));
            }
            for (i, (p, &d)) in paths.iter().zip(dests).enumerate() {
                if p[0] != s || p[p.len() - 1] != d {
                    return Err(format!("path {i} does not run from {s} to {d}"));
                }
                once.extend_from_slice(&p[1..]);
            }
        }
        Shape::SetToSet { sources, dests } => {
            if paths.len() != sources.len() {
                return Err(format!(
                    "{} paths for {} sources",
                    paths.len(),
                    sources.len()
                ));
            }
            let mut reached: Vec<NodeId> = Vec::new();
            for (i, (p, &s)) in paths.iter().zip(sources).enumerate() {
                let last = p[p.len() - 1];
                if p[0] != s || !dests.contains(&last) || reached.contains(&last) {
                    return Err(format!(
                        "path {i} from {s} does not end at a new destination"
                    ));
                }
                reached.push(last);
                once.extend_from_slice(p);
            }
        }
        Shape::NodeToNode { s, d, k } => {
            if paths.len() != k {
                return Err(format!("{} paths, not k = {k}", paths.len()));
            }
            let mut direct = 0;
            for (i, p) in paths.iter().enumerate() {
                if p[0] != s || p[p.len() - 1] != d {
                    return Err(format!("path {i} does not run from {s} to {d}"));
                }
                direct += usize::from(p.len() == 2);
                once.extend_from_slice(&p[1..p.len() - 1]);
            }
            if direct > 1 {
                return Err("the direct edge is used twice".into());
            }
        }
    }
    once.sort_unstable();
    match once.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(format!("node {} is on two paths, or twice on one", w[0])),
        None => Ok(()),
    }
}

/// One path: non-empty, nodes of the topology, consecutive nodes adjacent. (No node twice is
/// checked with the disjointness, except for the shared ends, checked here.)
fn check_path(topology: Topology, p: &Path) -> Result<(), String> {
    if p.is_empty() {
        return Err("empty".into());
    }
    if let Some(v) = p.iter().find(|&&v| !topology.contains(v)) {
        return Err(format!("node {v} is not in {topology}"));
    }
    if let Some(w) = p.windows(2).find(|w| !topology.is_adjacent(w[0], w[1])) {
        return Err(format!("{} and {} are not adjacent", w[0], w[1]));
    }
    let (first, last) = (p[0], p[p.len() - 1]);
    if p.len() > 1 && (first == last || p[1..p.len() - 1].iter().any(|&v| v == first || v == last))
    {
        return Err("an end of the path appears twice".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u64]) -> Path {
        v.iter().map(|&x| NodeId(x)).collect()
    }

    #[test]
    fn catches_each_kind_of_mistake() {
        let q: Topology = "q:3".parse().unwrap();
        let s = NodeId(0);
        let dests = [NodeId(3), NodeId(5)];
        let good = [ids(&[0, 1, 3]), ids(&[0, 4, 5])];
        let shape = Shape::NodeToSet { s, dests: &dests };
        assert_eq!(check(q, shape, &good), Ok(()));
        let shared = [ids(&[0, 1, 3]), ids(&[0, 1, 5])];
        assert!(check(q, shape, &shared).unwrap_err().contains("two paths"));
        let cycle = [ids(&[0, 1, 3, 1, 3]), ids(&[0, 4, 5])];
        assert!(check(q, shape, &cycle).is_err());
        let jump = [ids(&[0, 3]), ids(&[0, 4, 5])];
        assert!(check(q, shape, &jump).unwrap_err().contains("adjacent"));
        let short = [ids(&[0, 1, 3])];
        assert!(check(q, shape, &short).is_err());
        let n2n = [ids(&[0, 1, 3]), ids(&[0, 2, 3])];
        let shape = Shape::NodeToNode {
            s,
            d: NodeId(3),
            k: 2,
        };
        assert_eq!(check(q, shape, &n2n), Ok(()));
        let srcs = [NodeId(0), NodeId(7)];
        let shape = Shape::SetToSet {
            sources: &srcs,
            dests: &dests,
        };
        assert_eq!(check(q, shape, &[ids(&[0, 1, 5]), ids(&[7, 3])]), Ok(()));
        assert!(check(q, shape, &[ids(&[0, 1, 3]), ids(&[7, 3])]).is_err());
    }
}
