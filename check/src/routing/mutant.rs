//! The deliberately broken variants of the routing (`cuberoute check routing --mutant NAME`):
//! `hop` with one of its guarded checks left out. Each must be caught: a property of the model
//! breaks without the check, which shows what the check guards.

pub use crate::run::Mutants;
use cuberoute_protocol::DropReason;
use cuberoute_protocol::routing::guarded::Checks;
use serde::{Deserialize, Serialize};

/// A check left out of `hop`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// The budget: remaining hops plus hops made within d(S,D) + stretch.
    NoBudget,
    /// Pd a neighbour of D.
    NoPdCheck,
    /// An index below k(S,D).
    NoIndexCheck,
    /// S other than D.
    NoSourceCheck,
    /// No turning point on Q_n.
    NoTurningPointCheck,
    /// Every node of the header a node of the topology.
    NoNodeCheck,
    /// Each anchor a position of its subsequence.
    NoAnchorCheck,
}

impl Mutant {
    /// The check it leaves out, by the reason that check drops with.
    pub fn left_out(self) -> DropReason {
        match self {
            Mutant::NoBudget => DropReason::OverBudget,
            Mutant::NoPdCheck => DropReason::PdNotNeighbour,
            Mutant::NoIndexCheck => DropReason::BadIndex,
            Mutant::NoSourceCheck => DropReason::SourceIsDestination,
            Mutant::NoTurningPointCheck => DropReason::TurningPointOnHypercube,
            Mutant::NoNodeCheck => DropReason::UnknownNode,
            Mutant::NoAnchorCheck => DropReason::BadAnchor,
        }
    }
}

impl Mutants for Mutant {
    const MODEL: &'static str = "routing";
    const ALL: &'static [Mutant] = &[
        Mutant::NoBudget,
        Mutant::NoPdCheck,
        Mutant::NoIndexCheck,
        Mutant::NoSourceCheck,
        Mutant::NoTurningPointCheck,
        Mutant::NoNodeCheck,
        Mutant::NoAnchorCheck,
    ];

    fn name(self) -> &'static str {
        match self {
            Mutant::NoBudget => "no-budget",
            Mutant::NoPdCheck => "no-pd-check",
            Mutant::NoIndexCheck => "no-index-check",
            Mutant::NoSourceCheck => "no-source-check",
            Mutant::NoTurningPointCheck => "no-turning-point-check",
            Mutant::NoNodeCheck => "no-node-check",
            Mutant::NoAnchorCheck => "no-anchor-check",
        }
    }
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The checks `hop` makes under `mutant`: all of them without one.
pub fn checks(mutant: Option<Mutant>) -> Checks {
    match mutant {
        None => Checks::ALL,
        Some(m) => Checks::ALL.without(m.left_out()),
    }
}
