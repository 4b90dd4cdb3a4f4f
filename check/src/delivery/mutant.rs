//! The deliberately broken variants of the delivery (`cuberoute check delivery --mutant NAME`):
//! each changes one rule of what the ends do, as a bug would. Each must be caught: a property
//! breaks, which shows what the rule guards.

pub use crate::run::Mutants;
use serde::{Deserialize, Serialize};

/// One rule of the ends broken.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// The destination acknowledges a set when it becomes whole, before its store's write.
    AckBeforeWrite,
    /// The source answers "accepted" when it sends a set, before its store's write.
    AcceptBeforeWrite,
    /// A restart keeps the sessions (their keys) but forgets their replay windows.
    WindowForgottenAtRestart,
    /// Sealed messages are opened without their replay window's check.
    NoReplayWindow,
    /// The sets the outbox says are due are not sent again.
    NoResend,
    /// The destination hands a written set to its consumer without asking whether its store
    /// knew it (a resend after a restart handed over again).
    StoreNotConsulted,
    /// A restarted source does not put its unsettled sets back in the outbox.
    NotResumed,
}

impl Mutants for Mutant {
    const MODEL: &'static str = "delivery";
    const ALL: &'static [Mutant] = &[
        Mutant::AckBeforeWrite,
        Mutant::AcceptBeforeWrite,
        Mutant::WindowForgottenAtRestart,
        Mutant::NoReplayWindow,
        Mutant::NoResend,
        Mutant::StoreNotConsulted,
        Mutant::NotResumed,
    ];

    fn name(self) -> &'static str {
        match self {
            Mutant::AckBeforeWrite => "ack-before-write",
            Mutant::AcceptBeforeWrite => "accept-before-write",
            Mutant::WindowForgottenAtRestart => "window-forgotten-at-restart",
            Mutant::NoReplayWindow => "no-replay-window",
            Mutant::NoResend => "no-resend",
            Mutant::StoreNotConsulted => "store-not-consulted",
            Mutant::NotResumed => "not-resumed",
        }
    }
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
