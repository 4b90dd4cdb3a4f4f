//! Node ids: parsing and display.
//!
//! Every node of every supported topology is a `u64`. For Q_n it is the n-bit address; for
//! EH(s,t) it is `a << (t+1) | b << 1 | c`, the bit sequence `a_{s-1}..a_0 b_{t-1}..b_0 c` of
//! Alsulaiman and Karaata, *An Optimal Inherently Stabilizing Algorithm for Routing over All
//! Node-Disjoint Paths in Exchanged Hypercubes*, §II (after Loh, Hsu and Pan), with `c` the dummy
//! bit. Every edge of both families flips exactly one bit of the id, which is why most of this
//! crate talks about *bit positions* rather than neighbour lists.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A node id. Which ids are valid depends on the [`Topology`](super::Topology).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u64);

impl NodeId {
    /// The neighbour across the edge that flips bit `bit`.
    #[inline]
    pub fn flip(self, bit: u32) -> NodeId {
        NodeId(self.0 ^ (1u64 << bit))
    }

    /// The bit position that separates two adjacent ids (`None` unless they differ in one bit).
    #[inline]
    pub fn edge_bit(self, other: NodeId) -> Option<u32> {
        let x = self.0 ^ other.0;
        (x.count_ones() == 1).then(|| x.trailing_zeros())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a node id could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseNodeError {
    #[error("empty node id")]
    Empty,
    #[error("node id {0:?} is not a decimal number or a 0b... binary number")]
    Malformed(String),
    #[error("node id {0:?} does not fit in 64 bits")]
    TooLarge(String),
}

/// Read a node id written in decimal (`42`) or binary (`0b101010`). Underscores and dots are
/// allowed as separators in binary, and a dotted id is binary even without the `0b`, so the grouped
/// form printed by [`Topology::format_node`](super::Topology::format_node) (`10.01.0`) reads back.
pub fn parse_node_id(text: &str) -> Result<NodeId, ParseNodeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseNodeError::Empty);
    }
    let (digits, radix) = match text.strip_prefix("0b").or_else(|| text.strip_prefix("0B")) {
        Some(rest) => (rest.replace(['_', '.'], ""), 2),
        None if text.contains('.') => (text.replace(['_', '.'], ""), 2),
        None => (text.replace('_', ""), 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(ParseNodeError::Malformed(text.to_string()));
    }
    u64::from_str_radix(&digits, radix)
        .map(NodeId)
        .map_err(|_| ParseNodeError::TooLarge(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_and_binary() {
        assert_eq!(parse_node_id("42"), Ok(NodeId(42)));
        assert_eq!(parse_node_id("0b101010"), Ok(NodeId(42)));
        assert_eq!(parse_node_id("0b10.101.0"), Ok(NodeId(42)));
        assert_eq!(parse_node_id("10.101.0"), Ok(NodeId(42)));
        assert_eq!(parse_node_id(" 7 "), Ok(NodeId(7)));
        assert_eq!(parse_node_id("18446744073709551615"), Ok(NodeId(u64::MAX)));
    }

    #[test]
    fn rejects_bad_ids() {
        assert_eq!(parse_node_id(""), Err(ParseNodeError::Empty));
        assert!(matches!(
            parse_node_id("0b"),
            Err(ParseNodeError::Malformed(_))
        ));
        assert!(matches!(
            parse_node_id("0b102"),
            Err(ParseNodeError::Malformed(_))
        ));
        assert!(matches!(
            parse_node_id("-1"),
            Err(ParseNodeError::Malformed(_))
        ));
        assert!(matches!(
            parse_node_id("0x10"),
            Err(ParseNodeError::Malformed(_))
        ));
        assert!(matches!(
            parse_node_id("18446744073709551616"),
            Err(ParseNodeError::TooLarge(_))
        ));
    }

    #[test]
    fn edge_bit_of_neighbours() {
        assert_eq!(NodeId(0b100).edge_bit(NodeId(0b110)), Some(1));
        assert_eq!(NodeId(0b100).edge_bit(NodeId(0b111)), None);
        assert_eq!(NodeId(5).edge_bit(NodeId(5)), None);
    }
}
