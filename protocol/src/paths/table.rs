//! The one table of disjoint-path algorithms: for each, its name as the papers write it, the id
//! that picks it (`cuberoute paths --algorithm`), its paper, the kind of instance and the
//! topologies it serves, its length bound and the function that runs it. [`solve`] is the one
//! place where an instance meets its algorithm: the CLI, source routes (and so the daemon) and
//! the studies all go through it, and read names and bounds from here.
//!
//! The first entry that serves a topology and a kind of instance is the default for them; an
//! `--algorithm` id picks another one of the same kind.

use super::check::check_node_to_node;
use super::cube::{container, n2s as cube_n2s, s2s as cube_s2s, xftn2s};
use super::dualnet::{n2n as rdn_n2n, n2s as rdn_n2s};
use super::error::PathError;
use super::guarded::{self, max_stretch};
use super::hhc::{in2s, n2n as hhc_n2n, n2s as hhc_n2s, s2s as hhc_s2s};
use super::instance::{Instance, Kind};
use super::metacube::{self, k1, n2n as mc_n2n, n2s as mc_n2s};
use super::system::PathSystem;
use crate::topology::Family;
use crate::topology::hhc::Hhc;
use crate::topology::hypercube::Hypercube;
use crate::topology::metacube::Metacube;
use crate::{NodeId, Topology};

/// One algorithm of the table.
pub struct Algorithm {
    /// The name as the papers write it (for our own constructions, what they are made of).
    pub name: &'static str,
    /// The value of `--algorithm` that picks it; unique among the entries that serve one family
    /// and one kind of instance.
    pub id: &'static str,
    /// Where it comes from: the paper by title and section.
    pub paper: &'static str,
    /// The kind of instance it answers.
    pub kind: Kind,
    /// The families it serves.
    pub families: &'static [Family],
    /// Its longest path is the exact optimum L* (so the bound is L* itself).
    pub optimal: bool,
    /// Its length bound, in edges: no path it returns for `instance` on `topology` is longer,
    /// unless its [`Construction`](super::system::Construction) says an exact search answered
    /// instead (minimum total length, no paper bound).
    pub bound: fn(Topology, &Instance) -> usize,
    /// Its bound on the widest instance on `topology`: no path it builds there is longer.
    pub widest: fn(Topology) -> usize,
    /// Runs it; the instance must be of [`Algorithm::kind`].
    pub run: fn(Topology, &Instance) -> Result<PathSystem, PathError>,
}

impl std::fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Algorithm")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("families", &self.families)
            .finish_non_exhaustive()
    }
}

impl Algorithm {
    /// Whether it serves `topology`.
    pub fn serves(&self, topology: Topology) -> bool {
        self.families.contains(&topology.family())
    }
}

/// Every algorithm, defaults first.
pub static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "Q_n map (Saad-Schultz paths)",
        id: "map",
        paper: "Alsulaiman and Karaata, An Optimal Inherently Stabilizing Algorithm for Routing over All Node-Disjoint Paths in Exchanged Hypercubes, §V-§VII, on Q_n after Sinanoglu, Karaata and AlBdaiwi (docs/protocol.md, \"The map\")",
        kind: Kind::NodeToNode,
        families: &[Family::Hypercube],
        optimal: true,
        bound: guarded_bound,
        widest: |t| (t.diameter() + max_stretch(t).unwrap_or(0)) as usize,
        run: guarded_run,
    },
    Algorithm {
        name: "EH map (with turning points)",
        id: "map",
        paper: "Alsulaiman and Karaata, An Optimal Inherently Stabilizing Algorithm for Routing over All Node-Disjoint Paths in Exchanged Hypercubes, §V-§VII, extended to the exact optimum (docs/protocol.md, \"The map\")",
        kind: Kind::NodeToNode,
        families: &[Family::Exchanged],
        optimal: true,
        bound: guarded_bound,
        widest: |t| (t.diameter() + max_stretch(t).unwrap_or(0)) as usize,
        run: guarded_run,
    },
    Algorithm {
        name: "Cube-N2S",
        id: "n2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), chapter 4, Algorithm 3",
        kind: Kind::NodeToSet,
        families: &[Family::Hypercube],
        optimal: false,
        bound: |t, _| dimension(t) + 1,
        widest: |t| dimension(t) + 1,
        run: |t, inst| {
            let (s, dests) = node_to_set(inst)?;
            cube_n2s::cube_n2s(hypercube(t)?, s, dests, &[])
        },
    },
    Algorithm {
        name: "Cube-XFTN2S",
        id: "xftn2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), appendix A, Lemma 2.4",
        kind: Kind::FaultTolerantNodeToSet,
        families: &[Family::Hypercube],
        optimal: false,
        bound: |t, _| dimension(t) + 3,
        widest: |t| dimension(t) + 3,
        run: |t, inst| {
            let Instance::FaultTolerantNodeToSet { s, dests, faults } = *inst else {
                return Err(wrong_kind(inst));
            };
            xftn2s::cube_xftn2s(hypercube(t)?, s, dests, faults, None)
        },
    },
    Algorithm {
        name: "Cube-S2S",
        id: "s2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), Lemmas 11 and 19, after Gu, Okawa and Peng",
        kind: Kind::SetToSet,
        families: &[Family::Hypercube],
        optimal: false,
        bound: |t, inst| dimension(t) + inst.sources().len(),
        widest: |t| 2 * dimension(t),
        run: |t, inst| {
            let (sources, dests) = set_to_set(inst)?;
            cube_s2s::cube_s2s(hypercube(t)?, sources, dests, &[])
        },
    },
    Algorithm {
        name: "HC-CONTAINER",
        id: "container",
        paper: "Bossard and Kaneko, A Routing Algorithm Solving the Container Problem in a Hypercube with Bit Constraint, §3",
        kind: Kind::ConstrainedNodeToNode,
        families: &[Family::Hypercube],
        optimal: false,
        bound: |t, inst| {
            let n = dimension(t);
            n + 3 * container::container_width(n as u32, inst.constraint().unwrap_or(0))
        },
        widest: |t| {
            let n = dimension(t);
            let k = (0..n as u32).map(|i| container::container_width(n as u32, i));
            n + 3 * k.max().unwrap_or(0)
        },
        run: |t, inst| {
            let Instance::ConstrainedNodeToNode { s, d, i } = *inst else {
                return Err(wrong_kind(inst));
            };
            container::hc_container(hypercube(t)?, i, s, d)
        },
    },
    Algorithm {
        name: "node-to-node by HHC-iN2S to the neighbours of the destination",
        id: "n2n",
        paper: "ours, from HHC-iN2S (Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), appendix A, Algorithm 2; docs/family-algorithms.md)",
        kind: Kind::NodeToNode,
        families: &[Family::Hhc],
        optimal: false,
        bound: |t, _| in2s::bound(hhc(t).map_or(0, |h| h.m)) + 1,
        widest: |t| in2s::bound(hhc(t).map_or(0, |h| h.m)) + 1,
        run: |t, inst| {
            let (s, d) = node_to_node(inst)?;
            hhc_n2n::hhc_n2n(hhc(t)?, s, d)
        },
    },
    Algorithm {
        name: "HHC-iN2S",
        id: "in2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), appendix A, Algorithm 2",
        kind: Kind::NodeToSet,
        families: &[Family::Hhc],
        optimal: false,
        bound: |t, _| in2s::bound(hhc(t).map_or(0, |h| h.m)),
        widest: |t| in2s::bound(hhc(t).map_or(0, |h| h.m)),
        run: |t, inst| {
            let (s, dests) = node_to_set(inst)?;
            in2s::hhc_in2s(hhc(t)?, s, dests)
        },
    },
    Algorithm {
        name: "HHC-N2S",
        id: "n2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), chapter 5, Algorithm 6",
        kind: Kind::NodeToSet,
        families: &[Family::Hhc],
        optimal: false,
        bound: |t, _| hhc_n2s::bound(hhc(t).map_or(0, |h| h.m)),
        widest: |t| hhc_n2s::bound(hhc(t).map_or(0, |h| h.m)),
        run: |t, inst| {
            let (s, dests) = node_to_set(inst)?;
            hhc_n2s::hhc_n2s(hhc(t)?, s, dests)
        },
    },
    Algorithm {
        name: "HHC-S2S",
        id: "s2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), chapter 7",
        kind: Kind::SetToSet,
        families: &[Family::Hhc],
        optimal: false,
        bound: |t, inst| hhc_s2s::bound(hhc(t).map_or(0, |h| h.m), inst.sources().len()),
        widest: |t| hhc(t).map_or(0, |h| hhc_s2s::bound(h.m, h.m as usize + 1)),
        run: |t, inst| {
            let (sources, dests) = set_to_set(inst)?;
            hhc_s2s::hhc_s2s(hhc(t)?, sources, dests)
        },
    },
    Algorithm {
        name: "MC-N2N",
        id: "n2n",
        paper: "Li, Peng and Chu, Disjoint Paths in Metacube, Algorithm 4 and Theorem 2",
        kind: Kind::NodeToNode,
        families: &[Family::Metacube],
        optimal: false,
        bound: metacube_n2n_bound,
        widest: metacube_n2n_widest,
        run: |t, inst| {
            let (s, d) = node_to_node(inst)?;
            mc_n2n::mc_n2n(metacube(t)?, s, d)
        },
    },
    Algorithm {
        name: "MC(k,1) node-to-node through HHC_(2^k+k)",
        id: "k1",
        paper: "ours, for MC(k,1) = HHC_(2^k+k), where Li, Peng and Chu, Disjoint Paths in Metacube, Algorithm 4 needs a second local dimension (docs/family-algorithms.md, \"MC(k,1)\")",
        kind: Kind::NodeToNode,
        families: &[Family::Metacube],
        optimal: false,
        bound: metacube_n2n_bound,
        widest: metacube_n2n_widest,
        run: |t, inst| {
            let (s, d) = node_to_node(inst)?;
            let mc = metacube(t)?;
            if mc.m != 1 {
                return Err(PathError::WrongTopology {
                    algorithm: "MC(k,1) node-to-node",
                    expected: "mc:K,1",
                    topology: t,
                });
            }
            check_node_to_node(t, s, d)?;
            k1::node_to_node(mc, s, d, "chosen by --algorithm k1")
        },
    },
    Algorithm {
        name: "MC-N2S",
        id: "n2s",
        paper: "Bossard, Disjoint-path Routing in Hypercubes and their Variants (Ph.D. thesis, 2011), chapter 6, Theorem 3",
        kind: Kind::NodeToSet,
        families: &[Family::Metacube],
        optimal: false,
        bound: |t, inst| metacube(t).map_or(0, |mc| mc_n2s::bound(mc, inst.destinations().len())),
        widest: |t| metacube(t).map_or(0, |mc| mc_n2s::bound(mc, (mc.k + mc.m) as usize)),
        run: |t, inst| {
            let (s, dests) = node_to_set(inst)?;
            mc_n2s::mc_n2s(metacube(t)?, s, dests)
        },
    },
    Algorithm {
        name: "node-to-node by RDN N2S to the neighbours of the destination",
        id: "n2n",
        paper: "ours, from RDN N2S (Li, Peng and Chu, Node-to-Set Disjoint-Paths Routing in Recursive Dual-Net, Algorithm 4; docs/family-algorithms.md)",
        kind: Kind::NodeToNode,
        families: &[Family::DualNet],
        optimal: false,
        bound: |t, _| dualnet_n2s_bound(t) + 1,
        widest: |t| dualnet_n2s_bound(t) + 1,
        run: |t, inst| {
            let (s, d) = node_to_node(inst)?;
            rdn_n2n::rdn_n2n(dualnet(t)?, s, d)
        },
    },
    Algorithm {
        name: "RDN N2S",
        id: "n2s",
        paper: "Li, Peng and Chu, Node-to-Set Disjoint-Paths Routing in Recursive Dual-Net, Algorithm 4 (with Algorithms 2 and 3) and Theorem 1",
        kind: Kind::NodeToSet,
        families: &[Family::DualNet],
        optimal: false,
        bound: |t, _| dualnet_n2s_bound(t),
        widest: dualnet_n2s_bound,
        run: |t, inst| {
            let (s, dests) = node_to_set(inst)?;
            rdn_n2s::rdn_n2s(dualnet(t)?, s, dests)
        },
    },
];

/// The algorithm for `kind` on `topology`: the one whose id is `name`, or the default (the first
/// entry that serves them).
pub fn choose(
    topology: Topology,
    kind: Kind,
    name: Option<&str>,
) -> Result<&'static Algorithm, PathError> {
    let mut serving = ALGORITHMS
        .iter()
        .filter(|a| a.kind == kind && a.serves(topology))
        .peekable();
    if serving.peek().is_none() {
        return Err(PathError::NoAlgorithm {
            topology,
            kind,
            served: served(kind),
        });
    }
    let Some(name) = name else {
        return Ok(serving.next().expect("peeked"));
    };
    let serving: Vec<&Algorithm> = serving.collect();
    serving
        .iter()
        .find(|a| a.id == name)
        .copied()
        .ok_or_else(|| PathError::UnknownAlgorithm {
            name: name.to_string(),
            expected: or_list(
                serving
                    .iter()
                    .map(|a| format!("{} ({})", a.id, a.name))
                    .collect(),
            ),
        })
}

/// Answer `instance` on `topology` with the algorithm [`choose`] picks: the algorithm and its
/// paths.
pub fn solve(
    topology: Topology,
    instance: &Instance,
    name: Option<&str>,
) -> Result<(&'static Algorithm, PathSystem), PathError> {
    let algorithm = choose(topology, instance.kind(), name)?;
    (algorithm.run)(topology, instance).map(|system| (algorithm, system))
}

/// The k paths the table's node-to-node answer gives from `src` to `dst` (none if it has
/// none): the paths a cluster routes every copy on.
pub fn node_to_node_paths(topology: Topology, src: NodeId, dst: NodeId) -> Vec<Vec<NodeId>> {
    solve(topology, &Instance::NodeToNode { s: src, d: dst }, None)
        .map(|(_, system)| system.paths)
        .unwrap_or_default()
}

/// The entry named `name` (as the papers write it).
pub fn by_name(name: &str) -> Option<&'static Algorithm> {
    ALGORITHMS.iter().find(|a| a.name == name)
}

/// Where the table has an algorithm of `kind`: "q:N (Cube-S2S) and hhc:M (HHC-S2S)".
fn served(kind: Kind) -> String {
    let items = Family::ALL
        .into_iter()
        .filter_map(|family| {
            let names: Vec<&str> = ALGORITHMS
                .iter()
                .filter(|a| a.kind == kind && a.families.contains(&family))
                .map(|a| a.name)
                .collect();
            (!names.is_empty()).then(|| format!("{} ({})", family.pattern(), names.join(", ")))
        })
        .collect();
    and_list(items, "and")
}

fn or_list(items: Vec<String>) -> String {
    and_list(items, "or")
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(mut items: Vec<String>, word: &str) -> String {
    match items.len() {
        0 => String::new(),
        1 => items.remove(0),
        _ => {
            let last = items.pop().expect("two or more");
            format!("{} {word} {last}", items.join(", "))
        }
    }
}

fn guarded_bound(topology: Topology, instance: &Instance) -> usize {
    let (s, d) = match *instance {
        Instance::NodeToNode { s, d } => (s, d),
        _ => return 0,
    };
    (topology.distance(s, d) + max_stretch(topology).unwrap_or(0)) as usize
}

fn guarded_run(topology: Topology, instance: &Instance) -> Result<PathSystem, PathError> {
    let (s, d) = node_to_node(instance)?;
    check_node_to_node(topology, s, d)?;
    guarded::disjoint_paths(topology, s, d)
        .map(|set| PathSystem::paper(set.paths))
        .map_err(|e| PathError::internal(e.to_string()))
}

/// MC-N2N's bound for two nodes that differ in every bit.
fn metacube_n2n_widest(topology: Topology) -> usize {
    let last = NodeId(topology.node_count() - 1);
    metacube(topology).map_or(0, |mc| metacube::n2n_bound(mc, NodeId(0), last))
}

fn metacube_n2n_bound(topology: Topology, instance: &Instance) -> usize {
    match (metacube(topology), *instance) {
        (Ok(mc), Instance::NodeToNode { s, d }) => metacube::n2n_bound(mc, s, d),
        _ => 0,
    }
}

fn dualnet_n2s_bound(topology: Topology) -> usize {
    dualnet(topology).map_or(0, rdn_n2s::bound)
}

/// n of Q_n (0 for the other families).
fn dimension(topology: Topology) -> usize {
    match topology {
        Topology::Hypercube(q) => q.n as usize,
        _ => 0,
    }
}

fn wrong_topology(expected: &'static str, topology: Topology) -> PathError {
    PathError::WrongTopology {
        algorithm: "this algorithm",
        expected,
        topology,
    }
}

fn hypercube(topology: Topology) -> Result<Hypercube, PathError> {
    match topology {
        Topology::Hypercube(q) => Ok(q),
        t => Err(wrong_topology("q:N", t)),
    }
}

fn hhc(topology: Topology) -> Result<Hhc, PathError> {
    match topology {
        Topology::Hhc(h) => Ok(h),
        t => Err(wrong_topology("hhc:M", t)),
    }
}

fn metacube(topology: Topology) -> Result<Metacube, PathError> {
    match topology {
        Topology::Metacube(mc) => Ok(mc),
        t => Err(wrong_topology("mc:K,M", t)),
    }
}

fn dualnet(topology: Topology) -> Result<crate::topology::dualnet::DualNet, PathError> {
    match topology {
        Topology::DualNet(r) => Ok(r),
        t => Err(wrong_topology("rdn:BASE,K", t)),
    }
}

fn wrong_kind(instance: &Instance) -> PathError {
    PathError::internal(format!(
        "a {} instance was given to an algorithm of another kind",
        instance.kind()
    ))
}

fn node_to_node(instance: &Instance) -> Result<(NodeId, NodeId), PathError> {
    match *instance {
        Instance::NodeToNode { s, d } => Ok((s, d)),
        _ => Err(wrong_kind(instance)),
    }
}

fn node_to_set<'a>(instance: &Instance<'a>) -> Result<(NodeId, &'a [NodeId]), PathError> {
    match *instance {
        Instance::NodeToSet { s, dests } => Ok((s, dests)),
        _ => Err(wrong_kind(instance)),
    }
}

fn set_to_set<'a>(instance: &Instance<'a>) -> Result<(&'a [NodeId], &'a [NodeId]), PathError> {
    match *instance {
        Instance::SetToSet { sources, dests } => Ok((sources, dests)),
        _ => Err(wrong_kind(instance)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// splitmix64, for reproducible samples without a dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (((z ^ (z >> 31)) as u128 * n as u128) >> 64) as u64
        }

        /// `count` distinct nodes of `topology`, none in `avoid`, each accepted by `ok`.
        fn nodes(
            &mut self,
            topology: Topology,
            count: usize,
            avoid: &[NodeId],
            ok: impl Fn(NodeId) -> bool,
        ) -> Vec<NodeId> {
            let mut out: Vec<NodeId> = Vec::new();
            while out.len() < count {
                let v = NodeId(self.below(topology.node_count()));
                if ok(v) && !avoid.contains(&v) && !out.contains(&v) {
                    out.push(v);
                }
            }
            out
        }
    }

    /// The small topologies of every family the samples run on.
    fn samples() -> Vec<Topology> {
        [
            "q:3",
            "q:4",
            "q:5",
            "q:6",
            "eh:1,1",
            "eh:1,2",
            "eh:2,2",
            "eh:3,1",
            "hhc:1",
            "hhc:2",
            "hhc:3",
            "mc:1,1",
            "mc:1,2",
            "mc:2,1",
            "mc:2,2",
            "mc:1,3",
            "rdn:ring3,1",
            "rdn:q2,1",
            "rdn:ring3,2",
        ]
        .iter()
        .map(|name| name.parse().unwrap())
        .collect()
    }

    /// A random instance of `kind` on `topology`, as large as the kind allows; the node lists
    /// are returned for the instance to borrow.
    fn instance_nodes(
        kind: Kind,
        topology: Topology,
        rng: &mut Rng,
    ) -> (Vec<NodeId>, Vec<NodeId>, Vec<NodeId>, u32) {
        let n = topology.bits();
        let k = topology.connectivity() as usize;
        let any = |_: NodeId| true;
        match kind {
            Kind::NodeToNode => {
                let s = rng.nodes(topology, 1, &[], any);
                let d = rng.nodes(topology, 1, &s, any);
                (s, d, vec![], 0)
            }
            Kind::NodeToSet => {
                let s = rng.nodes(topology, 1, &[], any);
                let count = 1 + rng.below(k as u64) as usize;
                let d = rng.nodes(topology, count, &s, any);
                (s, d, vec![], 0)
            }
            Kind::FaultTolerantNodeToSet => {
                // |D| + |F| = n - 1, as Cube-XFTN2S allows.
                let s = rng.nodes(topology, 1, &[], any);
                let d = rng.nodes(topology, (n as usize - 1).div_ceil(2).max(1), &s, any);
                let taken: Vec<NodeId> = s.iter().chain(&d).copied().collect();
                let f = rng.nodes(topology, n as usize - 1 - d.len(), &taken, any);
                (s, d, f, 0)
            }
            Kind::SetToSet => {
                let s = rng.nodes(topology, k, &[], any);
                let d = rng.nodes(topology, k, &s, any);
                (s, d, vec![], 0)
            }
            Kind::ConstrainedNodeToNode => {
                let i = 1 + rng.below(n as u64 - 2) as u32;
                let ok = move |v: NodeId| matches!(v.0.count_ones(), w if w == i || w == i + 1);
                let s = rng.nodes(topology, 1, &[], ok);
                let d = rng.nodes(topology, 1, &s, ok);
                (s, d, vec![], i)
            }
        }
    }

    fn build<'a>(
        kind: Kind,
        (s, d, f, i): &'a (Vec<NodeId>, Vec<NodeId>, Vec<NodeId>, u32),
    ) -> Instance<'a> {
        match kind {
            Kind::NodeToNode => Instance::NodeToNode { s: s[0], d: d[0] },
            Kind::NodeToSet => Instance::NodeToSet { s: s[0], dests: d },
            Kind::FaultTolerantNodeToSet => Instance::FaultTolerantNodeToSet {
                s: s[0],
                dests: d,
                faults: f,
            },
            Kind::SetToSet => Instance::SetToSet {
                sources: s,
                dests: d,
            },
            Kind::ConstrainedNodeToNode => Instance::ConstrainedNodeToNode {
                s: s[0],
                d: d[0],
                i: *i,
            },
        }
    }

    #[test]
    fn names_are_unique_and_ids_unique_per_family_and_kind() {
        let names: HashSet<&str> = ALGORITHMS.iter().map(|a| a.name).collect();
        assert_eq!(names.len(), ALGORITHMS.len());
        let mut ids = HashSet::new();
        for a in ALGORITHMS {
            assert!(!a.families.is_empty() && !a.paper.is_empty(), "{}", a.name);
            for &family in a.families {
                assert!(ids.insert((family, a.kind, a.id)), "{}", a.name);
            }
            assert_eq!(by_name(a.name).map(|b| b.id), Some(a.id));
        }
    }

    /// Every entry on 30 random instances of each small topology it serves: it answers, within
    /// its bound (exact-search answers included: they hold on these samples, though nothing
    /// promises it), within its widest bound, and at L* for the optimal ones.
    #[test]
    fn every_bound_holds_on_sample_instances() {
        let mut rng = Rng(7);
        for a in ALGORITHMS {
            let mut ran = 0;
            for topology in samples().into_iter().filter(|&t| a.serves(t)) {
                for _ in 0..30 {
                    let nodes = instance_nodes(a.kind, topology, &mut rng);
                    let instance = build(a.kind, &nodes);
                    let system = match (a.run)(topology, &instance) {
                        // MC(k,1) node-to-node serves m = 1 only.
                        Err(PathError::WrongTopology { .. }) => break,
                        other => other.unwrap_or_else(|e| {
                            panic!("{} on {topology} refused {instance:?}: {e}", a.name)
                        }),
                    };
                    ran += 1;
                    let bound = (a.bound)(topology, &instance);
                    assert!(
                        system.longest() <= bound,
                        "{} on {topology}: {instance:?} has a path of {} > {bound} ({:?})",
                        a.name,
                        system.longest(),
                        system.construction
                    );
                    assert!(bound <= (a.widest)(topology), "{}", a.name);
                    if a.optimal {
                        let (s, d) = (nodes.0[0], nodes.1[0]);
                        if let Some(l) = crate::paths::optimum::l_star(topology, s, d) {
                            assert_eq!(system.longest(), l as usize, "{}", a.name);
                        }
                    }
                }
            }
            assert!(ran >= 30, "{} ran on {ran} samples", a.name);
        }
    }

    #[test]
    fn the_chooser_picks_what_source_routes_and_the_cli_picked_before() {
        use Kind::*;
        let expect = [
            ("q:4", NodeToNode, Some("Q_n map (Saad-Schultz paths)")),
            ("q:4", NodeToSet, Some("Cube-N2S")),
            ("q:4", FaultTolerantNodeToSet, Some("Cube-XFTN2S")),
            ("q:4", SetToSet, Some("Cube-S2S")),
            ("q:4", ConstrainedNodeToNode, Some("HC-CONTAINER")),
            ("eh:2,2", NodeToNode, Some("EH map (with turning points)")),
            ("eh:2,2", NodeToSet, None),
            ("eh:2,2", FaultTolerantNodeToSet, None),
            ("eh:2,2", SetToSet, None),
            ("eh:2,2", ConstrainedNodeToNode, None),
            (
                "hhc:3",
                NodeToNode,
                Some("node-to-node by HHC-iN2S to the neighbours of the destination"),
            ),
            ("hhc:3", NodeToSet, Some("HHC-iN2S")),
            ("hhc:3", SetToSet, Some("HHC-S2S")),
            ("hhc:3", FaultTolerantNodeToSet, None),
            ("hhc:3", ConstrainedNodeToNode, None),
            ("mc:2,2", NodeToNode, Some("MC-N2N")),
            ("mc:2,1", NodeToNode, Some("MC-N2N")),
            ("mc:2,2", NodeToSet, Some("MC-N2S")),
            ("mc:2,2", SetToSet, None),
            (
                "rdn:q3,1",
                NodeToNode,
                Some("node-to-node by RDN N2S to the neighbours of the destination"),
            ),
            ("rdn:q3,1", NodeToSet, Some("RDN N2S")),
            ("rdn:q3,1", SetToSet, None),
        ];
        for (name, kind, want) in expect {
            let t: Topology = name.parse().unwrap();
            match (choose(t, kind, None), want) {
                (Ok(a), Some(want)) => assert_eq!(a.name, want, "{name} {kind}"),
                (Err(PathError::NoAlgorithm { .. }), None) => {}
                (got, _) => panic!("{name} {kind}: {:?}", got.map(|a| a.name)),
            }
        }
        let hhc: Topology = "hhc:3".parse().unwrap();
        assert_eq!(choose(hhc, NodeToSet, Some("n2s")).unwrap().name, "HHC-N2S");
        assert_eq!(
            choose(hhc, NodeToSet, Some("fast"))
                .unwrap_err()
                .to_string(),
            "\"fast\": expected in2s (HHC-iN2S) or n2s (HHC-N2S)"
        );
        assert_eq!(
            choose("mc:2,2".parse().unwrap(), SetToSet, None)
                .unwrap_err()
                .to_string(),
            "mc:2,2 has no set-to-set algorithm: the papers give one for q:N (Cube-S2S) and \
             hhc:M (HHC-S2S)"
        );
    }

    #[test]
    fn solve_answers_as_the_algorithms_themselves() {
        let h = Hhc { m: 3 };
        let t = Topology::Hhc(h);
        let dests = [NodeId(0b0000_1010_000), NodeId(0b0011_1000_100), NodeId(77)];
        let instance = Instance::NodeToSet {
            s: NodeId(0),
            dests: &dests,
        };
        let (a, system) = solve(t, &instance, None).unwrap();
        assert_eq!(a.name, "HHC-iN2S");
        assert_eq!(system, in2s::hhc_in2s(h, NodeId(0), &dests).unwrap());
        let (_, system) = solve(t, &instance, Some("n2s")).unwrap();
        assert_eq!(system, hhc_n2s::hhc_n2s(h, NodeId(0), &dests).unwrap());
        let q: Topology = "q:5".parse().unwrap();
        let pair = Instance::NodeToNode {
            s: NodeId(3),
            d: NodeId(28),
        };
        let (_, system) = solve(q, &pair, None).unwrap();
        let set = guarded::disjoint_paths(q, NodeId(3), NodeId(28)).unwrap();
        assert_eq!(system.paths, set.paths);
        let same = Instance::NodeToNode {
            s: NodeId(3),
            d: NodeId(3),
        };
        assert_eq!(solve(q, &same, None).err(), Some(PathError::SameNode(3)));
    }
}
