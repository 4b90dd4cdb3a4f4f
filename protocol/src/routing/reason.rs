//! Why a node discards a packet: one reason type for both routing modes.

use super::packet::RouteKind;

/// Why a node discarded a packet: each is a check on (own id, route, sender). A packet that
/// passes all of them is on a route of bounded length (docs/protocol.md, "Stabilization").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DropReason {
    /// Guarded: S, D, Pd or the turning point is not a node of the topology.
    UnknownNode,
    /// Guarded: S = D; nothing routes a message from a node to itself.
    SourceIsDestination,
    /// Guarded: Pd is not a neighbour of D. This is the paper's check `p = N(Pd, f) != D`, read
    /// as its prose means it (docs/protocol.md, "Errors and gaps", item 4).
    PdNotNeighbour,
    /// Guarded: the message index is not below k(S, D).
    BadIndex,
    /// Guarded: an anchor is not a position of its subsequence.
    BadAnchor,
    /// Guarded: a turning point on Q_n, where the map never sets one.
    TurningPointOnHypercube,
    /// Guarded: the packet came from a node that is not a neighbour of this one.
    NotFromNeighbour,
    /// Guarded: the hops this header still needs, plus the hops it must already have made,
    /// exceed the longest route the map ever builds for (S, D). This check bounds the life of
    /// any header.
    OverBudget,
    /// Guarded: the topology has no guarded-action routing (HHC, metacube, recursive dual-net:
    /// see [`crate::Topology::has_guarded_protocol`]); such a packet is dropped, never routed.
    UnsupportedTopology,
    /// Source: the route is longer than any this topology's algorithms build.
    RouteTooLong,
    /// Source: the packet came from another node than the route's previous one.
    RouteNotFromPrevious,
    /// Source: the position is past the end of the route.
    RoutePastTheEnd,
    /// Source: the route names another node at this position.
    RouteNotThisNode,
    /// Source: the route's next node is not a neighbour of this one.
    RouteNotANeighbour,
}

impl DropReason {
    pub const ALL: [DropReason; 14] = [
        DropReason::UnknownNode,
        DropReason::SourceIsDestination,
        DropReason::PdNotNeighbour,
        DropReason::BadIndex,
        DropReason::BadAnchor,
        DropReason::TurningPointOnHypercube,
        DropReason::NotFromNeighbour,
        DropReason::OverBudget,
        DropReason::UnsupportedTopology,
        DropReason::RouteTooLong,
        DropReason::RouteNotFromPrevious,
        DropReason::RoutePastTheEnd,
        DropReason::RouteNotThisNode,
        DropReason::RouteNotANeighbour,
    ];

    /// A stable snake_case name, for metrics labels and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::UnknownNode => "unknown_node",
            DropReason::SourceIsDestination => "source_is_destination",
            DropReason::PdNotNeighbour => "pd_not_neighbour",
            DropReason::BadIndex => "bad_index",
            DropReason::BadAnchor => "bad_anchor",
            DropReason::TurningPointOnHypercube => "turning_point_on_hypercube",
            DropReason::NotFromNeighbour => "not_from_neighbour",
            DropReason::OverBudget => "over_budget",
            DropReason::UnsupportedTopology => "unsupported_topology",
            DropReason::RouteTooLong => "route_too_long",
            DropReason::RouteNotFromPrevious => "route_not_from_previous",
            DropReason::RoutePastTheEnd => "route_past_the_end",
            DropReason::RouteNotThisNode => "route_not_this_node",
            DropReason::RouteNotANeighbour => "route_not_a_neighbour",
        }
    }

    /// The routing mode whose check this is.
    pub fn kind(self) -> RouteKind {
        match self {
            DropReason::RouteTooLong
            | DropReason::RouteNotFromPrevious
            | DropReason::RoutePastTheEnd
            | DropReason::RouteNotThisNode
            | DropReason::RouteNotANeighbour => RouteKind::Source,
            _ => RouteKind::Guarded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_reasons_have_distinct_names_and_their_mode() {
        let names: std::collections::BTreeSet<&str> =
            DropReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), DropReason::ALL.len());
        assert_eq!(DropReason::RouteTooLong.kind(), RouteKind::Source);
        assert_eq!(DropReason::OverBudget.kind(), RouteKind::Guarded);
    }
}
