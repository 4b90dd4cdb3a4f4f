//! `rcv` of the guarded-action protocol (Alsulaiman and Karaata, *An Optimal Inherently
//! Stabilizing Algorithm for Routing over All Node-Disjoint Paths in Exchanged Hypercubes*,
//! §VII): the checks on a header and the next hop, a pure function of (own id, header, sender).
//! The per-hop rule itself (decidePhase, nextPos) is the construction's, in
//! [`crate::paths::guarded::route`]; [`crate::routing::hop`] calls this for guarded packets.

use super::header::Header;
use super::reason::DropReason;
use crate::NodeId;
use crate::paths::guarded::max_stretch;
use crate::paths::guarded::route::{self, Phase};
use crate::topology::Topology;

/// The checks [`decide`] makes, each named by the reason it drops a packet with. Every one of
/// them in production ([`Checks::ALL`]); the model checker leaves one out to show what it
/// guards (`cuberoute check routing --mutant`, docs/verification.md).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Checks(u16);

impl Checks {
    /// Every check: what `hop` makes.
    pub const ALL: Checks = Checks(u16::MAX);

    /// These checks but the one that drops with `reason`.
    pub fn without(self, reason: DropReason) -> Checks {
        Checks(self.0 & !(1 << reason as u16))
    }

    /// Whether the check that drops with `reason` is made.
    pub fn make(self, reason: DropReason) -> bool {
        self.0 & (1 << reason as u16) != 0
    }
}

/// The decision of `rcv`: `Ok(None)` to deliver, `Ok(Some((next, header)))` to forward with the
/// header as it leaves (its turning point cleared if it was this node).
pub fn decide(
    topology: Topology,
    me: NodeId,
    header: &Header,
    from: NodeId,
) -> Result<Option<(NodeId, Header)>, DropReason> {
    decide_checked(topology, me, header, from, Checks::ALL)
}

/// [`decide`] making only the checks `checks` names.
pub fn decide_checked(
    topology: Topology,
    me: NodeId,
    header: &Header,
    from: NodeId,
    checks: Checks,
) -> Result<Option<(NodeId, Header)>, DropReason> {
    let Some(stretch) = max_stretch(topology) else {
        return Err(DropReason::UnsupportedTopology);
    };
    check(topology, header, checks)?;
    if checks.make(DropReason::NotFromNeighbour) && !topology.is_adjacent(me, from) {
        return Err(DropReason::NotFromNeighbour);
    }
    if me == header.dst {
        return Ok(None);
    }
    let mut header = *header;
    if header.via == Some(me) {
        header.via = None;
    }
    if checks.make(DropReason::OverBudget)
        && remaining_hops(topology, me, &header) + topology.distance(header.src, me)
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

/// The checks that depend on the header alone, those of `checks`.
fn check(topology: Topology, header: &Header, checks: Checks) -> Result<(), DropReason> {
    use DropReason::*;
    let make = |reason| checks.make(reason);
    let nodes = [header.src, header.dst, header.pd];
    if make(UnknownNode)
        && !nodes
            .iter()
            .chain(&header.via)
            .all(|&v| topology.contains(v))
    {
        return Err(DropReason::UnknownNode);
    }
    if make(SourceIsDestination) && header.src == header.dst {
        return Err(DropReason::SourceIsDestination);
    }
    if make(PdNotNeighbour) && !topology.is_adjacent(header.pd, header.dst) {
        return Err(DropReason::PdNotNeighbour);
    }
    if make(BadIndex) && header.index as u32 >= topology.local_connectivity(header.src, header.dst)
    {
        return Err(DropReason::BadIndex);
    }
    let (fa, fb) = (header.anchors.fa as u32, header.anchors.fb as u32);
    let anchors_ok = match topology {
        Topology::Hypercube(q) => fa < q.n && fb == 0,
        Topology::Exchanged(eh) => fa < eh.s && fb < eh.t,
        _ => false,
    };
    if make(BadAnchor) && !anchors_ok {
        return Err(DropReason::BadAnchor);
    }
    // The Q_n map never sets a turning point (Saad-Schultz paths change subcube never): one in
    // a Q_n header is a corruption, and accepting it would let the header live a detour longer
    // than the flush bound allows (docs/protocol.md, "Stabilization").
    if make(TurningPointOnHypercube)
        && matches!(topology, Topology::Hypercube(_))
        && header.via.is_some()
    {
        return Err(DropReason::TurningPointOnHypercube);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::packet::RouteKind;

    #[test]
    fn a_check_left_out_is_the_only_one_not_made() {
        let guarded: Vec<DropReason> = DropReason::ALL
            .into_iter()
            .filter(|r| r.kind() == RouteKind::Guarded)
            .collect();
        assert!(guarded.len() >= 8, "{guarded:?}");
        for &out in &guarded {
            let checks = Checks::ALL.without(out);
            for &reason in &guarded {
                assert_eq!(checks.make(reason), reason != out, "{out:?} {reason:?}");
            }
        }
    }
}
