//! The k disjoint paths of a pair, obtained by running the protocol.
//!
//! There is one source of truth for routes: [`disjoint_paths`] runs `input` at the source and
//! `rcv` hop by hop, exactly as the network does, and records where each packet goes.

use crate::NodeId;
use crate::actions::{self, Action, InputError};
use crate::topology::Topology;

/// The k paths between two nodes, each from `src` to `dst` inclusive, in message-index order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PathSet {
    pub topology: Topology,
    pub src: NodeId,
    pub dst: NodeId,
    pub paths: Vec<Vec<NodeId>>,
}

impl PathSet {
    pub fn k(&self) -> usize {
        self.paths.len()
    }

    pub fn distance(&self) -> u32 {
        self.topology.distance(self.src, self.dst)
    }

    /// Length in hops of the longest path.
    pub fn longest(&self) -> u32 {
        self.paths
            .iter()
            .map(|p| p.len() as u32 - 1)
            .max()
            .unwrap_or(0)
    }
}

/// The k internally node-disjoint paths from `src` to `dst`, as the protocol routes them.
pub fn disjoint_paths(topology: Topology, src: NodeId, dst: NodeId) -> Result<PathSet, InputError> {
    let k = topology.local_connectivity(src, dst) as usize;
    let sends = actions::input(topology, src, dst, vec![(); k])?;
    let paths = sends
        .into_iter()
        .map(|(first, packet)| follow(topology, src, first, packet))
        .collect();
    Ok(PathSet {
        topology,
        src,
        dst,
        paths,
    })
}

/// Walk one packet from its first hop to delivery.
fn follow(
    topology: Topology,
    src: NodeId,
    first: NodeId,
    packet: actions::Packet<()>,
) -> Vec<NodeId> {
    let limit = actions::flush_bound(topology).expect("input succeeded, so the topology routes")
        as usize
        + 1;
    let mut path = vec![src, first];
    let (mut at, mut from, mut packet) = (first, src, packet);
    while path.len() <= limit + 1 {
        match actions::receive(topology, at, packet, from) {
            Action::Deliver(_) => return path,
            Action::Forward { to, packet: next } => {
                path.push(to);
                (from, at, packet) = (at, to, next);
            }
            Action::Drop { reason, packet } => panic!(
                "the protocol dropped its own packet {:?} at {at} ({reason:?}) on {topology} \
                 {src} -> {}: a bug in the map",
                packet.header, packet.header.dst
            ),
        }
    }
    panic!("a packet of {topology} {src} -> ? outlived the flush bound: a bug in the map")
}
