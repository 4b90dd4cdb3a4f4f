//! The topologies cuberoute routes on, named as on the command line: `q:N`, `eh:S,T`, `hhc:M`,
//! `mc:K,M` and `rdn:BASE,K`: the bottom layer of the crate. Everything here is a fact of a
//! network (ids, neighbours, distance, connectivity) and imports nothing from the layers above.
//!
//! * [`node`]: node ids and how they are read;
//! * [`Topology`]: the five families behind one type: names, validity of ids, neighbours,
//!   distance, diameter, connectivity, k(u,v), display of ids;
//! * [`hypercube`], [`exchanged`], [`hhc`], [`metacube`], [`dualnet`]: each family's id layout,
//!   adjacency and closed forms;
//! * [`bits`]: masks as sets of bits; [`tour`]: shortest walks through a set of vertices of a
//!   small cube (the distance of HHC and the metacube); [`bfs`]: shortest paths by
//!   breadth-first search.
//!
//! The guarded-action protocol (`crate::routing`) exists for Q_n and EH(s,t) only
//! ([`Topology::has_guarded_protocol`]); the other three families are routed by their papers'
//! algorithms at the source (`crate::paths`) and sent along source routes.

pub mod bfs;
pub mod bits;
pub mod dualnet;
pub mod exchanged;
pub mod hhc;
pub mod hypercube;
pub mod metacube;
pub mod node;
pub mod tour;

use bits::BitIter;
use dualnet::{Base, DualNet};
use exchanged::Exchanged;
use hhc::Hhc;
use hypercube::Hypercube;
use metacube::Metacube;
use node::{NodeId, ParseNodeError, parse_node_id};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use tour::Walk;

/// A network topology. Every edge of every variant but [`Topology::DualNet`] flips one bit of
/// the node id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Topology {
    /// The binary hypercube Q_n.
    Hypercube(Hypercube),
    /// The exchanged hypercube EH(s,t).
    Exchanged(Exchanged),
    /// The perfect hierarchical hypercube HHC_{2^m+m}.
    Hhc(Hhc),
    /// The metacube MC(k,m).
    Metacube(Metacube),
    /// The recursive dual-net RDN^k(B).
    DualNet(DualNet),
}

/// The five families of [`Topology`], without their sizes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Family {
    Hypercube,
    Exchanged,
    Hhc,
    Metacube,
    DualNet,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Hypercube,
        Family::Exchanged,
        Family::Hhc,
        Family::Metacube,
        Family::DualNet,
    ];

    /// The command-line form of the family's names: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M`,
    /// `rdn:BASE,K`.
    pub fn pattern(self) -> &'static str {
        match self {
            Family::Hypercube => "q:N",
            Family::Exchanged => "eh:S,T",
            Family::Hhc => "hhc:M",
            Family::Metacube => "mc:K,M",
            Family::DualNet => "rdn:BASE,K",
        }
    }
}

/// Why a topology name could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseTopologyError {
    #[error(
        "unknown topology {0:?}: expected q:N (hypercube), eh:S,T (exchanged hypercube), hhc:M (hierarchical hypercube), mc:K,M (metacube) or rdn:BASE,K (recursive dual-net)"
    )]
    Unknown(String),
    #[error(
        "malformed topology {0:?}: expected q:N, eh:S,T, hhc:M, mc:K,M or rdn:BASE,K with decimal numbers"
    )]
    Malformed(String),
    #[error("q:{0} is out of range: the hypercube dimension N must be 1..=63")]
    HypercubeRange(u64),
    #[error("eh:{0},{1} is out of range: S and T must be >= 1 with S+T+1 <= 63")]
    ExchangedRange(u64, u64),
    #[error(
        "hhc:{0} is out of range: M must be 1..=5 (ids of HHC_(2^M+M) are 2^M+M bits, at most 64)"
    )]
    HhcRange(u64),
    #[error("mc:{0},{1} is out of range: K and M must be >= 1 with K + M*2^K <= 63")]
    MetacubeRange(u64, u64),
    #[error(
        "rdn:{0},{1} is out of range: BASE is ring3, q2, q3 or q4 and K is 1..=4 (1..=3 for q4)"
    )]
    DualNetRange(String, u64),
}

/// Why a node id is not a node of a given topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Parse(#[from] ParseNodeError),
    #[error("node {id} is not in {topology}: ids run from 0 to {max}")]
    OutOfRange {
        id: u64,
        topology: Topology,
        max: u64,
    },
    #[error("node {text:?} is grouped wrongly for {topology}: expected {expected}")]
    Grouping {
        text: String,
        topology: Topology,
        expected: String,
    },
}

impl FromStr for Topology {
    type Err = ParseTopologyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let malformed = || ParseTopologyError::Malformed(text.to_string());
        let number = |x: &str| x.trim().parse::<u64>().map_err(|_| malformed());
        let (kind, args) = text
            .split_once(':')
            .ok_or_else(|| ParseTopologyError::Unknown(text.to_string()))?;
        let pair = |args: &str| {
            let (a, b) = args.split_once(',').ok_or_else(malformed)?;
            Ok::<_, ParseTopologyError>((number(a)?, number(b)?))
        };
        match kind.trim().to_ascii_lowercase().as_str() {
            "q" => {
                let n = number(args)?;
                Topology::hypercube(n).ok_or(ParseTopologyError::HypercubeRange(n))
            }
            "eh" => {
                let (s, t) = pair(args)?;
                Topology::exchanged(s, t).ok_or(ParseTopologyError::ExchangedRange(s, t))
            }
            "hhc" => {
                let m = number(args)?;
                Topology::hhc(m).ok_or(ParseTopologyError::HhcRange(m))
            }
            "mc" => {
                let (k, m) = pair(args)?;
                Topology::metacube(k, m).ok_or(ParseTopologyError::MetacubeRange(k, m))
            }
            "rdn" => {
                let (base, k) = args.split_once(',').ok_or_else(malformed)?;
                let base = base.trim().to_ascii_lowercase();
                let k = number(k)?;
                Base::from_name(&base)
                    .and_then(|b| Topology::dualnet(b, k))
                    .ok_or(ParseTopologyError::DualNetRange(base, k))
            }
            _ => Err(ParseTopologyError::Unknown(text.to_string())),
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Hypercube(q) => write!(f, "q:{}", q.n),
            Topology::Exchanged(eh) => write!(f, "eh:{},{}", eh.s, eh.t),
            Topology::Hhc(h) => write!(f, "hhc:{}", h.m),
            Topology::Metacube(mc) => write!(f, "mc:{},{}", mc.k, mc.m),
            Topology::DualNet(r) => write!(f, "rdn:{},{}", r.base.name(), r.k),
        }
    }
}

impl Serialize for Topology {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Topology {
    /// Q_n, if `1 <= n <= 63`.
    pub fn hypercube(n: u64) -> Option<Topology> {
        (1..=Hypercube::MAX_DIMENSION as u64)
            .contains(&n)
            .then_some(Topology::Hypercube(Hypercube { n: n as u32 }))
    }

    /// EH(s,t), if `s, t >= 1` and `s + t + 1 <= 63`.
    pub fn exchanged(s: u64, t: u64) -> Option<Topology> {
        (s >= 1 && t >= 1 && s + t < Exchanged::MAX_BITS as u64).then_some(Topology::Exchanged(
            Exchanged {
                s: s as u32,
                t: t as u32,
            },
        ))
    }

    /// HHC_{2^m+m}, if `1 <= m <= 5`.
    pub fn hhc(m: u64) -> Option<Topology> {
        u32::try_from(m).ok().and_then(Hhc::new).map(Topology::Hhc)
    }

    /// MC(k,m), if `k, m >= 1` and `k + m 2^k <= 63`.
    pub fn metacube(k: u64, m: u64) -> Option<Topology> {
        if k > 5 || m > 63 {
            return None;
        }
        Metacube::new(k as u32, m as u32).map(Topology::Metacube)
    }

    /// RDN^k(B), if `1 <= k <=` [`Base::max_level`].
    pub fn dualnet(base: Base, k: u64) -> Option<Topology> {
        u32::try_from(k)
            .ok()
            .and_then(|k| DualNet::new(base, k))
            .map(Topology::DualNet)
    }

    /// Its family.
    pub fn family(self) -> Family {
        match self {
            Topology::Hypercube(_) => Family::Hypercube,
            Topology::Exchanged(_) => Family::Exchanged,
            Topology::Hhc(_) => Family::Hhc,
            Topology::Metacube(_) => Family::Metacube,
            Topology::DualNet(_) => Family::DualNet,
        }
    }

    /// Whether the guarded-action protocol of seed 004 (map, input, receive) routes on this
    /// topology: Q_n and EH(s,t) only.
    pub fn has_guarded_protocol(self) -> bool {
        matches!(self, Topology::Hypercube(_) | Topology::Exchanged(_))
    }

    /// Number of bits in a node id (for RDN, the bits of the largest id).
    pub fn bits(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.n,
            Topology::Exchanged(eh) => eh.bits(),
            Topology::Hhc(h) => h.bits(),
            Topology::Metacube(mc) => mc.bits(),
            Topology::DualNet(r) => r.bits(),
        }
    }

    pub fn node_count(self) -> u64 {
        match self {
            Topology::DualNet(r) => r.node_count(),
            _ => 1u64 << self.bits(),
        }
    }

    pub fn contains(self, v: NodeId) -> bool {
        match self {
            Topology::DualNet(r) => r.contains(v),
            _ => v.0 >> self.bits() == 0,
        }
    }

    /// All nodes, in id order. Only sensible for small topologies.
    pub fn nodes(self) -> impl Iterator<Item = NodeId> {
        (0..self.node_count()).map(NodeId)
    }

    /// Mask of the bits `v` may flip, each set bit one edge; `None` for the recursive dual-net,
    /// whose cross edges are not bit flips.
    pub fn flip_mask(self, v: NodeId) -> Option<u64> {
        match self {
            Topology::Hypercube(q) => Some(q.dimension_mask()),
            Topology::Exchanged(eh) => Some(eh.edge_mask(v)),
            Topology::Hhc(h) => Some(h.edge_mask(v)),
            Topology::Metacube(mc) => Some(mc.edge_mask(v)),
            Topology::DualNet(_) => None,
        }
    }

    pub fn degree(self, v: NodeId) -> u32 {
        match self {
            Topology::DualNet(r) => r.degree(),
            _ => self.flip_mask(v).unwrap_or(0).count_ones(),
        }
    }

    /// The neighbours of `v`: for the bit-flip families in increasing order of the bit flipped,
    /// for RDN in the paper's order u^(1), ..., u^(d_0+k).
    pub fn neighbours(self, v: NodeId) -> Neighbours {
        match self {
            Topology::DualNet(rdn) => Neighbours::Dual { rdn, v, next: 1 },
            _ => Neighbours::Flips {
                v,
                bits: BitIter(self.flip_mask(v).unwrap_or(0)),
            },
        }
    }

    pub fn is_adjacent(self, u: NodeId, v: NodeId) -> bool {
        match self {
            Topology::DualNet(r) => r.is_adjacent(u, v),
            _ => {
                let x = u.0 ^ v.0;
                x.count_ones() == 1 && x & self.flip_mask(u).unwrap_or(0) != 0
            }
        }
    }

    /// The shortest-path distance: in closed form for Q_n, EH and RDN; for HHC and MC an exact
    /// shortest walk ([`tour`]). Where that walk would be too costly (HHC with m = 5 or
    /// MC(5,1), with more than 16 differing subcube bits or fields) it is an upper bound:
    /// [`Topology::distance_or_bound`] says which.
    pub fn distance(self, u: NodeId, v: NodeId) -> u32 {
        self.distance_or_bound(u, v).length
    }

    /// The distance with whether it is exact (`exact: false`: an upper bound, see
    /// [`Topology::distance`]).
    pub fn distance_or_bound(self, u: NodeId, v: NodeId) -> Walk {
        let exact = |length| Walk {
            length,
            exact: true,
        };
        match self {
            Topology::Hypercube(q) => exact(q.distance(u, v)),
            Topology::Exchanged(eh) => exact(eh.distance(u, v)),
            Topology::Hhc(h) => h.distance(u, v),
            Topology::Metacube(mc) => mc.distance(u, v),
            Topology::DualNet(r) => exact(r.distance(u, v)),
        }
    }

    pub fn diameter(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.n,
            Topology::Exchanged(eh) => eh.diameter(),
            Topology::Hhc(h) => h.diameter(),
            Topology::Metacube(mc) => mc.diameter(),
            Topology::DualNet(r) => r.diameter(),
        }
    }

    /// Vertex connectivity of the whole graph.
    pub fn connectivity(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.connectivity(),
            Topology::Exchanged(eh) => eh.connectivity(),
            Topology::Hhc(h) => h.connectivity(),
            Topology::Metacube(mc) => mc.connectivity(),
            Topology::DualNet(r) => r.connectivity(),
        }
    }

    /// k(u,v): the number of internally node-disjoint paths between two distinct nodes. Only
    /// EH has pairs above its connectivity; HHC, MC and RDN are regular with connectivity equal
    /// to the degree (max flow on every pair of the small instances in the tests).
    pub fn local_connectivity(self, u: NodeId, v: NodeId) -> u32 {
        match self {
            Topology::Exchanged(eh) => eh.local_connectivity(u, v),
            _ => self.connectivity(),
        }
    }

    /// Read a node id (decimal, `0b...` binary, the dotted binary of [`Self::format_node`], or for
    /// RDN the paper's nested triple) and check that it is a node of this topology.
    pub fn parse_node(self, text: &str) -> Result<NodeId, NodeError> {
        if let Topology::DualNet(r) = self
            && text.trim_start().starts_with('(')
        {
            return r.parse_triple(text).ok_or_else(|| NodeError::Grouping {
                text: text.to_string(),
                topology: self,
                expected: format!(
                    "a nested triple (type,cluster,node) of depth {} with base ids 0..{}",
                    r.k,
                    r.base.nodes() - 1
                ),
            });
        }
        let v = parse_node_id(text)?;
        if text.contains('.')
            && let Some((widths, expected)) = self.grouping()
        {
            let body = text
                .trim()
                .trim_start_matches("0b")
                .trim_start_matches("0B");
            let given: Vec<usize> = body.split('.').map(str::len).collect();
            if given != widths {
                return Err(NodeError::Grouping {
                    text: text.to_string(),
                    topology: self,
                    expected,
                });
            }
        }
        self.check_node(v)
    }

    /// The widths of the dotted binary groups, and how to say them; `None` when any grouping
    /// is accepted.
    fn grouping(self) -> Option<(Vec<usize>, String)> {
        match self {
            Topology::Exchanged(eh) => Some((
                vec![eh.s as usize, eh.t as usize, 1],
                format!("{} a bits . {} b bits . 1 c bit", eh.s, eh.t),
            )),
            Topology::Hhc(h) => Some((
                vec![h.cube_dimension() as usize, h.m as usize],
                format!(
                    "{} subcube bits . {} processor bits",
                    h.cube_dimension(),
                    h.m
                ),
            )),
            Topology::Metacube(mc) => {
                let mut widths = vec![mc.k as usize];
                widths.extend(std::iter::repeat_n(mc.m as usize, mc.classes() as usize));
                Some((
                    widths,
                    format!(
                        "{} class bits then {} fields of {} bits, dot-separated",
                        mc.k,
                        mc.classes(),
                        mc.m
                    ),
                ))
            }
            _ => None,
        }
    }

    /// `Ok(v)` when `v` is a node of this topology.
    pub fn check_node(self, v: NodeId) -> Result<NodeId, NodeError> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(NodeError::OutOfRange {
                id: v.0,
                topology: self,
                max: self.node_count() - 1,
            })
        }
    }

    /// The id as the papers write it: n binary digits for Q_n, `a.b.c` for EH, `sigma.pi` for
    /// HHC, `c.M[h-1]...M[0]` for MC, the nested triple `(b,x,y)` for RDN.
    pub fn format_node(self, v: NodeId) -> String {
        match self {
            Topology::Hypercube(q) => format!("{:0w$b}", v.0, w = q.n as usize),
            Topology::Exchanged(eh) => format!(
                "{:0ws$b}.{:0wt$b}.{}",
                eh.a_of(v),
                eh.b_of(v),
                v.0 & 1,
                ws = eh.s as usize,
                wt = eh.t as usize
            ),
            Topology::Hhc(h) => h.format(v),
            Topology::Metacube(mc) => mc.format(v),
            Topology::DualNet(r) => r.format(v),
        }
    }

    /// A short human description, e.g. "exchanged hypercube EH(2,2)".
    pub fn describe(self) -> String {
        match self {
            Topology::Hypercube(q) => format!("binary hypercube Q_{}", q.n),
            Topology::Exchanged(eh) => format!("exchanged hypercube EH({},{})", eh.s, eh.t),
            Topology::Hhc(h) => format!("perfect hierarchical hypercube HHC_{}", h.bits()),
            Topology::Metacube(mc) => format!("metacube MC({},{})", mc.k, mc.m),
            Topology::DualNet(r) => format!(
                "recursive dual-net RDN^{}({})",
                r.k,
                match r.base {
                    Base::Ring3 => "ring of 3".to_string(),
                    b => format!("Q_{}", b.degree()),
                }
            ),
        }
    }
}

/// The neighbours of a node; see [`Topology::neighbours`].
#[derive(Clone, Debug)]
pub enum Neighbours {
    Flips { v: NodeId, bits: BitIter },
    Dual { rdn: DualNet, v: NodeId, next: u32 },
}

impl Iterator for Neighbours {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        match self {
            Neighbours::Flips { v, bits } => bits.next().map(|bit| v.flip(bit)),
            Neighbours::Dual { rdn, v, next } => (*next <= rdn.degree()).then(|| {
                *next += 1;
                rdn.neighbour(*v, *next - 1)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        for name in ["q:1", "q:63", "eh:1,1", "eh:31,31", "eh:2,5"] {
            let t: Topology = name.parse().unwrap();
            assert_eq!(t.to_string(), name);
        }
        assert_eq!(
            "EH: 2 , 3".parse::<Topology>().unwrap().to_string(),
            "eh:2,3"
        );
    }

    #[test]
    fn rejects_bad_topologies() {
        use ParseTopologyError::*;
        assert!(matches!("q:0".parse::<Topology>(), Err(HypercubeRange(0))));
        assert!(matches!(
            "q:64".parse::<Topology>(),
            Err(HypercubeRange(64))
        ));
        assert!(matches!(
            "eh:0,3".parse::<Topology>(),
            Err(ExchangedRange(0, 3))
        ));
        assert!(matches!(
            "eh:31,32".parse::<Topology>(),
            Err(ExchangedRange(31, 32))
        ));
        assert!(matches!("eh:2".parse::<Topology>(), Err(Malformed(_))));
        assert!(matches!("eh:a,2".parse::<Topology>(), Err(Malformed(_))));
        assert!(matches!("mesh:4".parse::<Topology>(), Err(Unknown(_))));
        assert!(matches!("q4".parse::<Topology>(), Err(Unknown(_))));
    }

    #[test]
    fn node_parsing_checks_range_and_grouping() {
        let eh: Topology = "eh:2,2".parse().unwrap();
        assert_eq!(eh.parse_node("31"), Ok(NodeId(31)));
        assert_eq!(eh.parse_node("10.01.1"), Ok(NodeId(0b10011)));
        assert!(matches!(
            eh.parse_node("32"),
            Err(NodeError::OutOfRange { .. })
        ));
        assert!(matches!(
            eh.parse_node("1.001.1"),
            Err(NodeError::Grouping { .. })
        ));
        assert_eq!(eh.format_node(NodeId(0b10011)), "10.01.1");
        let q: Topology = "q:4".parse().unwrap();
        assert_eq!(q.format_node(NodeId(5)), "0101");
    }

    #[test]
    fn largest_sizes_do_not_overflow() {
        let eh: Topology = "eh:31,31".parse().unwrap();
        assert_eq!(eh.node_count(), 1 << 63);
        assert!(eh.contains(NodeId((1 << 63) - 1)));
        assert!(!eh.contains(NodeId(1 << 63)));
        let q: Topology = "q:63".parse().unwrap();
        assert_eq!(q.degree(NodeId(0)), 63);
    }

    #[test]
    fn mc_k_1_is_an_hhc() {
        for k in 1..=3 {
            let mc = Metacube { k, m: 1 };
            let mc_t = Topology::Metacube(mc);
            for u in mc_t.nodes() {
                let (h, hu) = metacube::hhc_isomorphism(mc, u);
                assert_eq!(metacube::from_hhc(mc, hu), u);
                for v in mc_t.neighbours(u) {
                    let (_, hv) = metacube::hhc_isomorphism(mc, v);
                    assert!(Topology::Hhc(h).is_adjacent(hu, hv));
                }
            }
        }
    }
}
