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
    /// Runs it; the instance must be of [`Algorithm::kind`].
    pub run: fn(Topology, &Instance) -> Result<PathSystem, PathError>,
}

impl Algorithm {
    /// Whether it serves `topology`.
    pub fn serves(&self, topology: Topology) -> bool {
        self.families.contains(&topology.family())
    }

    /// Its bound on the widest instance of its kind on `topology`: the most edges any path it
    /// builds there may have (for the bounds of this table, which grow with the Hamming
    /// distance of the ends and the number of destinations, the instance from node 0 to the
    /// last node, or to as many destinations as there are disjoint paths).
    pub fn widest_bound(&self, topology: Topology) -> usize {
        let s = NodeId(0);
        let last = NodeId(topology.node_count() - 1);
        let k = topology.connectivity() as usize;
        let set: Vec<NodeId> = topology.nodes().skip(1).take(k).collect();
        let instance = match self.kind {
            Kind::NodeToNode => Instance::NodeToNode { s, d: last },
            Kind::NodeToSet => Instance::NodeToSet { s, dests: &set },
            Kind::FaultTolerantNodeToSet => Instance::FaultTolerantNodeToSet {
                s,
                dests: &set,
                faults: &[],
            },
            Kind::SetToSet => Instance::SetToSet {
                sources: &set,
                dests: &set,
            },
            Kind::ConstrainedNodeToNode => {
                // The widest container: k = min(n-i, i+1) is largest at i = floor(n/2).
                let i = topology.bits() / 2;
                Instance::ConstrainedNodeToNode { s, d: last, i }
            }
        };
        (self.bound)(topology, &instance)
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
