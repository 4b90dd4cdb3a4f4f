//! The topologies cuberoute routes on, named as on the command line: `q:N` and `eh:S,T`.

use crate::exchanged::Exchanged;
use crate::hypercube::Hypercube;
use crate::node::{NodeId, ParseNodeError, parse_node_id};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A network topology. Every edge of every variant flips one bit of the node id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Topology {
    /// The binary hypercube Q_n.
    Hypercube(Hypercube),
    /// The exchanged hypercube EH(s,t).
    Exchanged(Exchanged),
}

/// Why a topology name could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseTopologyError {
    #[error("unknown topology {0:?}: expected q:N (hypercube) or eh:S,T (exchanged hypercube)")]
    Unknown(String),
    #[error("malformed topology {0:?}: expected q:N or eh:S,T with decimal N, S, T")]
    Malformed(String),
    #[error("q:{0} is out of range: the hypercube dimension N must be 1..=63")]
    HypercubeRange(u64),
    #[error("eh:{0},{1} is out of range: S and T must be >= 1 with S+T+1 <= 63")]
    ExchangedRange(u64, u64),
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
        match kind.trim().to_ascii_lowercase().as_str() {
            "q" => {
                let n = number(args)?;
                Topology::hypercube(n).ok_or(ParseTopologyError::HypercubeRange(n))
            }
            "eh" => {
                let (s, t) = args.split_once(',').ok_or_else(malformed)?;
                let (s, t) = (number(s)?, number(t)?);
                Topology::exchanged(s, t).ok_or(ParseTopologyError::ExchangedRange(s, t))
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

    /// Number of bits in a node id.
    pub fn bits(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.n,
            Topology::Exchanged(eh) => eh.bits(),
        }
    }

    pub fn node_count(self) -> u64 {
        1u64 << self.bits()
    }

    pub fn contains(self, v: NodeId) -> bool {
        v.0 >> self.bits() == 0
    }

    /// All nodes, in id order. Only sensible for small topologies.
    pub fn nodes(self) -> impl Iterator<Item = NodeId> {
        (0..self.node_count()).map(NodeId)
    }

    /// Mask of the bits `v` may flip: each set bit is one edge.
    pub fn edge_mask(self, v: NodeId) -> u64 {
        match self {
            Topology::Hypercube(q) => q.dimension_mask(),
            Topology::Exchanged(eh) => eh.edge_mask(v),
        }
    }

    pub fn degree(self, v: NodeId) -> u32 {
        self.edge_mask(v).count_ones()
    }

    /// The neighbours of `v`, in increasing order of the bit flipped to reach them.
    pub fn neighbours(self, v: NodeId) -> impl Iterator<Item = NodeId> {
        BitIter(self.edge_mask(v)).map(move |bit| v.flip(bit))
    }

    pub fn is_adjacent(self, u: NodeId, v: NodeId) -> bool {
        let x = u.0 ^ v.0;
        x.count_ones() == 1 && x & self.edge_mask(u) != 0
    }

    /// The shortest-path distance, in closed form.
    pub fn distance(self, u: NodeId, v: NodeId) -> u32 {
        match self {
            Topology::Hypercube(q) => q.distance(u, v),
            Topology::Exchanged(eh) => eh.distance(u, v),
        }
    }

    pub fn diameter(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.n,
            Topology::Exchanged(eh) => eh.diameter(),
        }
    }

    /// Vertex connectivity of the whole graph.
    pub fn connectivity(self) -> u32 {
        match self {
            Topology::Hypercube(q) => q.connectivity(),
            Topology::Exchanged(eh) => eh.connectivity(),
        }
    }

    /// k(u,v): the number of internally node-disjoint paths between two distinct nodes.
    pub fn local_connectivity(self, u: NodeId, v: NodeId) -> u32 {
        match self {
            Topology::Hypercube(q) => q.connectivity(),
            Topology::Exchanged(eh) => eh.local_connectivity(u, v),
        }
    }

    /// Read a node id (decimal, `0b...` binary, or the dotted binary of [`Self::format_node`])
    /// and check that it is a node of this topology.
    pub fn parse_node(self, text: &str) -> Result<NodeId, NodeError> {
        let v = parse_node_id(text)?;
        if let (Topology::Exchanged(eh), true) = (self, text.contains('.')) {
            let body = text
                .trim()
                .trim_start_matches("0b")
                .trim_start_matches("0B");
            let widths: Vec<usize> = body.split('.').map(str::len).collect();
            if widths != [eh.s as usize, eh.t as usize, 1] {
                return Err(NodeError::Grouping {
                    text: text.to_string(),
                    topology: self,
                    expected: format!("{} a bits . {} b bits . 1 c bit", eh.s, eh.t),
                });
            }
        }
        self.check_node(v)
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

    /// The id in binary: `a.b.c` for EH, n digits for Q_n.
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
        }
    }

    /// A short human description, e.g. "exchanged hypercube EH(2,2)".
    pub fn describe(self) -> String {
        match self {
            Topology::Hypercube(q) => format!("binary hypercube Q_{}", q.n),
            Topology::Exchanged(eh) => format!("exchanged hypercube EH({},{})", eh.s, eh.t),
        }
    }
}

/// Iterates the set bits of a mask, lowest first.
#[derive(Clone, Copy, Debug)]
pub struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
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
}
