//! A process of the paper (Alsulaiman and Karaata, §VII): its id, and the variables it keeps
//! (`k`, `curPhase`, `posToFlip`, the map of its last `input`, the last header it handled).
//! [`Process`] assigns them as the paper's actions do and never reads them: every decision is
//! the front door's ([`Routes::start`], [`hop`]), a pure function of the id and the packet. So
//! corrupting them changes nothing: inherent stabilization. docs/protocol.md lists them; the
//! chaos tooling overwrites them.

use super::header::Header;
use super::hop::{Action, hop};
use super::packet::{Packet, Route};
use super::request::Routes;
use crate::NodeId;
use crate::paths::guarded::map::Plan;
use crate::paths::guarded::route::{self, Phase};
use crate::topology::Topology;

/// The variables a process keeps.
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

    /// The action `input(M, D)`: the set's first packets ([`Routes::start`]).
    pub fn start<M>(&mut self, routes: &Routes, messages: Vec<M>) -> Vec<(NodeId, Packet<M>)> {
        self.start_from(routes, 0, messages)
    }

    /// [`Process::start`] from route `first` on ([`Routes::start_from`]).
    pub fn start_from<M>(
        &mut self,
        routes: &Routes,
        first: usize,
        messages: Vec<M>,
    ) -> Vec<(NodeId, Packet<M>)> {
        if let Some(plans) = routes.plans() {
            self.vars.k = plans.len() as u32;
            self.vars.map = plans.to_vec();
        }
        routes.start_from(first, messages)
    }

    /// The action `rcv(m) from q` ([`hop`]).
    pub fn hop<M>(&mut self, packet: Packet<M>, from: NodeId) -> Action<M> {
        if let Route::Guarded(header) = &packet.route {
            self.vars.last_header = Some(*header);
        }
        let action = hop(self.topology, self.id, packet, from);
        if let Action::Forward { to, packet } = &action
            && let Route::Guarded(header) = &packet.route
        {
            self.vars.cur_phase = match route::decide_phase(self.topology, self.id, header.target())
            {
                Phase::Switch => 0,
                Phase::Own => 1,
                Phase::Arrived => 2,
            };
            self.vars.pos_to_flip = self.id.edge_bit(*to);
        }
        action
    }
}
