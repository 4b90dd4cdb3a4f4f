//! The guarded actions of Alsulaiman and Karaata, *An Optimal Inherently Stabilizing Algorithm for
//! Routing over All Node-Disjoint Paths in Exchanged Hypercubes*, §VII, as pure functions: `input`
//! at the source and `rcv` at every other node.
//!
//! ```text
//! input(M, D)            -> k sends (N(S,i), m_i with its header)
//! rcv(m_i, header) from q -> deliver | forward(neighbour, m_i with header) | drop(reason)
//! ```
//!
//! Both depend on (own id, header, the topology) and nothing else. [`Process`] wraps them with
//! the variables the paper's processes keep (k, curPhase, posToFlip, the map), which the actions
//! assign and never read: corrupting them cannot change a decision. That is inherent
//! stabilization, and the simulator's tests show it.

use super::header::Header;
use crate::NodeId;
use crate::paths::guarded::map::{self, MapError, Plan};
use crate::paths::guarded::max_stretch;
use crate::paths::guarded::route::{self, Phase};
use crate::topology::Topology;

/// A message with its routing header. `M` is whatever the caller carries: a
/// `wire::message::Message` in the daemon, small integers in the simulator.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Packet<M> {
    pub header: Header,
    pub message: M,
}

/// What `rcv` decides for one packet.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Action<M> {
    /// This node is the destination: output the message.
    Deliver(Packet<M>),
    /// Send the packet, with its possibly updated header, to neighbour `to`.
    Forward { to: NodeId, packet: Packet<M> },
    /// The header fails a check: the packet is discarded.
    Drop {
        reason: DropReason,
        packet: Packet<M>,
    },
}

/// Why `rcv` discarded a packet. Each is a check on (own id, header, sender); a packet that
/// passes all of them is on a route of bounded length (docs/protocol.md, "Stabilization").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DropReason {
    /// S, D, Pd or the turning point is not a node of the topology.
    UnknownNode,
    /// S = D: nothing routes a message from a node to itself.
    SourceIsDestination,
    /// Pd is not a neighbour of D. This is the paper's check `p = N(Pd, f) != D`, read as its
    /// prose means it (docs/protocol.md, "Errors and gaps", item 4).
    PdNotNeighbour,
    /// The message index is not below k(S, D).
    BadIndex,
    /// An anchor is not a position of its subsequence.
    BadAnchor,
    /// The packet came from a node that is not a neighbour of this one.
    NotFromNeighbour,
    /// The hops this header still needs, plus the hops it must already have made, exceed the
    /// longest route the map ever builds for (S, D). This check bounds the life of any header.
    OverBudget,
    /// The topology has no guarded-action routing (HHC, metacube, recursive dual-net: see
    /// [`Topology::has_guarded_protocol`]); such a packet is dropped, never routed.
    UnsupportedTopology,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::UnknownNode,
        DropReason::SourceIsDestination,
        DropReason::PdNotNeighbour,
        DropReason::BadIndex,
        DropReason::BadAnchor,
        DropReason::NotFromNeighbour,
        DropReason::OverBudget,
        DropReason::UnsupportedTopology,
    ];

    /// A stable snake_case name, for metrics labels and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::UnknownNode => "unknown_node",
            DropReason::SourceIsDestination => "source_is_destination",
            DropReason::PdNotNeighbour => "pd_not_neighbour",
            DropReason::BadIndex => "bad_index",
            DropReason::BadAnchor => "bad_anchor",
            DropReason::NotFromNeighbour => "not_from_neighbour",
            DropReason::OverBudget => "over_budget",
            DropReason::UnsupportedTopology => "unsupported_topology",
        }
    }
}

/// Why `input` refused a message sequence.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum InputError {
    #[error(transparent)]
    Map(#[from] MapError),
    #[error("{expected} messages are routed from this source to this destination, not {got}")]
    WrongMessageCount { expected: u32, got: usize },
}

/// B: no packet, whatever its header, makes more hops than this after the last corruption.
/// A packet that passes the [`DropReason::OverBudget`] check needs at most
/// `d(S,D) + stretch - d(S,p) <= diameter + stretch` more hops, and each hop takes one off.
/// `None` for the topologies without guarded-action routing: their packets are dropped at the
/// first hop ([`DropReason::UnsupportedTopology`]).
pub fn flush_bound(topology: Topology) -> Option<u32> {
    max_stretch(topology).map(|stretch| topology.diameter() + stretch)
}

/// The paper's `input(M, D)` at source `me`: one packet per message, each for a distinct
/// neighbour. `messages` must hold exactly k(me, dst) messages.
pub fn input<M>(
    topology: Topology,
    me: NodeId,
    dst: NodeId,
    messages: Vec<M>,
) -> Result<Vec<(NodeId, Packet<M>)>, InputError> {
    sends(&map::map(topology, me, dst)?, me, dst, messages)
}

/// One packet per plan, message `i` on plan `i`.
fn sends<M>(
    plans: &[Plan],
    me: NodeId,
    dst: NodeId,
    messages: Vec<M>,
) -> Result<Vec<(NodeId, Packet<M>)>, InputError> {
    if plans.len() != messages.len() {
        return Err(InputError::WrongMessageCount {
            expected: plans.len() as u32,
            got: messages.len(),
        });
    }
    Ok(plans
        .iter()
        .zip(messages)
        .enumerate()
        .map(|(i, (plan, message))| {
            let header = Header::for_plan(plan, me, dst, i as u8);
            (plan.first, Packet { header, message })
        })
        .collect())
}

/// The paper's `rcv(m_i, S, D, Pd, ...) from q` at node `me`.
pub fn receive<M>(topology: Topology, me: NodeId, packet: Packet<M>, from: NodeId) -> Action<M> {
    match decide(topology, me, &packet.header, from) {
        Err(reason) => Action::Drop { reason, packet },
        Ok(None) => Action::Deliver(packet),
        Ok(Some((to, header))) => Action::Forward {
            to,
            packet: Packet { header, ..packet },
        },
    }
}

/// The decision of `rcv`: `Ok(None)` to deliver, `Ok(Some((next, header)))` to forward.
pub fn decide(
    topology: Topology,
    me: NodeId,
    header: &Header,
    from: NodeId,
) -> Result<Option<(NodeId, Header)>, DropReason> {
    let Some(stretch) = max_stretch(topology) else {
        return Err(DropReason::UnsupportedTopology);
    };
    check(topology, header)?;
    if !topology.is_adjacent(me, from) {
        return Err(DropReason::NotFromNeighbour);
    }
    if me == header.dst {
        return Ok(None);
    }
    let mut header = *header;
    if header.via == Some(me) {
        header.via = None;
    }
    if remaining_hops(topology, me, &header) + topology.distance(header.src, me)
        > topology.distance(header.src, header.dst) + stretch
    {
        return Err(DropReason::OverBudget);
    }
    let next = match route::decide_phase(topology, me, header.target()) {
        Phase::Arrived => header.dst,
        _ => route::next_hop(topology, me, header.target(), header.anchors)
            .expect("a node that is not the target has a next hop"),
    };
    Ok(Some((next, header)))
}

/// The checks that depend on the header alone.
fn check(topology: Topology, header: &Header) -> Result<(), DropReason> {
    let nodes = [header.src, header.dst, header.pd];
    if !nodes
        .iter()
        .chain(&header.via)
        .all(|&v| topology.contains(v))
    {
        return Err(DropReason::UnknownNode);
    }
    if header.src == header.dst {
        return Err(DropReason::SourceIsDestination);
    }
    if !topology.is_adjacent(header.pd, header.dst) {
        return Err(DropReason::PdNotNeighbour);
    }
    if header.index as u32 >= topology.local_connectivity(header.src, header.dst) {
        return Err(DropReason::BadIndex);
    }
    let (fa, fb) = (header.anchors.fa as u32, header.anchors.fb as u32);
    let anchors_ok = match topology {
        Topology::Hypercube(q) => fa < q.n && fb == 0,
        Topology::Exchanged(eh) => fa < eh.s && fb < eh.t,
        _ => false,
    };
    if !anchors_ok {
        return Err(DropReason::BadAnchor);
    }
    Ok(())
}

/// Hops from `me` to the destination under `header` (whose turning point, if `me`, is cleared).
pub fn remaining_hops(topology: Topology, me: NodeId, header: &Header) -> u32 {
    if me == header.dst {
        return 0;
    }
    let to_pd = match header.via {
        Some(w) => topology.distance(me, w) + topology.distance(w, header.pd),
        None => topology.distance(me, header.pd),
    };
    to_pd + 1
}

/// The variables a process of seed 004 keeps (§VII): `k`, `curPhase`, `posToFlip`, and the map it
/// computed at its last `input`, plus the last header it handled.
///
/// [`Process`] assigns them as the paper's actions do and never reads them. docs/protocol.md
/// lists them; the chaos tooling overwrites them.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ProcessVars {
    pub k: u32,
    /// 0: subcube switch (dummy edge), 1: routing in the own subsequence, 2: at the target.
    pub cur_phase: u8,
    pub pos_to_flip: Option<u32>,
    pub map: Vec<Plan>,
    pub last_header: Option<Header>,
}

/// One process: its id, and the variables the paper's process keeps.
#[derive(Clone, Debug)]
pub struct Process {
    pub topology: Topology,
    pub id: NodeId,
    pub vars: ProcessVars,
}

impl Process {
    pub fn new(topology: Topology, id: NodeId) -> Process {
        Process {
            topology,
            id,
            vars: ProcessVars::default(),
        }
    }

    /// The guarded action `input(M, D)`.
    pub fn input<M>(
        &mut self,
        dst: NodeId,
        messages: Vec<M>,
    ) -> Result<Vec<(NodeId, Packet<M>)>, InputError> {
        let plans = map::map(self.topology, self.id, dst)?;
        let sends = sends(&plans, self.id, dst, messages)?;
        self.vars.k = plans.len() as u32;
        self.vars.map = plans;
        Ok(sends)
    }

    /// The guarded action `rcv(m) from q`.
    pub fn receive<M>(&mut self, packet: Packet<M>, from: NodeId) -> Action<M> {
        self.vars.last_header = Some(packet.header);
        let action = receive(self.topology, self.id, packet, from);
        if let Action::Forward { to, packet } = &action {
            self.vars.cur_phase =
                match route::decide_phase(self.topology, self.id, packet.header.target()) {
                    Phase::Switch => 0,
                    Phase::Own => 1,
                    Phase::Arrived => 2,
                };
            self.vars.pos_to_flip = self.id.edge_bit(*to);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;
    use crate::paths::guarded::route::Anchors;
    use proptest::prelude::*;

    fn topologies() -> impl Strategy<Value = Topology> {
        prop_oneof![
            (1u64..=63).prop_map(|n| Topology::hypercube(n).unwrap()),
            (1u64..=61)
                .prop_flat_map(|s| (Just(s), 1u64..=(62 - s)))
                .prop_map(|(s, t)| Topology::exchanged(s, t).unwrap()),
            (1u64..=5).prop_map(|m| Topology::hhc(m).unwrap()),
            (1u64..=3, 1u64..=3).prop_map(|(k, m)| Topology::metacube(k, m).unwrap()),
            (0usize..4, 1u64..=3).prop_map(|(b, k)| {
                Topology::dualnet(crate::topology::dualnet::Base::ALL[b], k).unwrap()
            }),
        ]
    }

    fn small_id(topology: Topology) -> impl Strategy<Value = NodeId> {
        // Mostly ids of the topology, sometimes any u64: both must be handled.
        let count = topology.node_count();
        prop_oneof![
            4 => any::<u64>().prop_map(move |x| NodeId(x % count)),
            1 => any::<u64>().prop_map(NodeId),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// `receive` runs on whatever arrives from the network: any header, any sender, at any
        /// node. It decides, and never panics.
        #[test]
        fn receive_never_panics_on_any_header(
            (topology, me, from, src, dst, pd, via, fa, fb, index) in topologies().prop_flat_map(|t| (
                Just(t), small_id(t), small_id(t), small_id(t), small_id(t), small_id(t),
                proptest::option::of(small_id(t)), any::<u8>(), any::<u8>(), any::<u8>(),
            ))
        ) {
            let header = Header { src, dst, pd, via, anchors: Anchors { fa, fb }, index };
            let _ = receive(topology, me, Packet { header, message: () }, from);
        }
    }
}
