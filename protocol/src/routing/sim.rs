//! A deterministic, round-based simulator of a whole network running the front door: every
//! packet kind (the guarded-action protocol's and source routes) on every topology.
//!
//! Seed 004 §I: "a round refers to the minimal execution in the system in which each process
//! executes all its enabled actions at the beginning of the round, and all the messages sent by
//! these executed actions are delivered to the neighboring destination message buffers."
//!
//! [`Network::round`] does exactly that: every process with a pending `input` or a non-empty
//! message buffer runs its actions on what the round began with; what they send lands in the
//! neighbours' buffers for the next round. A message sent in round r on the last hop of a path of
//! length L started in round 1 arrives in round L.
//!
//! The simulator is the stage for the stabilization tests: [`Network::processes_mut`] exposes
//! every process's variables and [`Network::in_flight_mut`] every buffered packet, so a test can
//! corrupt either at any round.

use super::hop::{Action, DropReason};
use super::packet::Packet;
use super::process::Process;
use super::request::{Routes, SendError, SendRequest};
use crate::NodeId;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// A packet sitting in a process's message buffer.
#[derive(Clone, Debug)]
pub struct InFlight<M> {
    /// The process whose buffer holds it.
    pub at: NodeId,
    /// The neighbour it came from.
    pub from: NodeId,
    pub packet: Packet<M>,
    /// Every node it has visited, the source first and `at` last.
    pub trace: Vec<NodeId>,
    /// A free mark for tests: e.g. the length of `trace` when the packet was corrupted.
    pub mark: Option<usize>,
}

/// A packet that left the network: output at its destination or dropped.
#[derive(Clone, Debug)]
pub struct Departed<M> {
    pub packet: Packet<M>,
    pub trace: Vec<NodeId>,
    pub mark: Option<usize>,
    /// The round in which the packet arrived where it was handled.
    pub round: u64,
    /// `None` if the packet was output, else why it was dropped.
    pub dropped: Option<DropReason>,
}

impl<M> Departed<M> {
    pub fn hops(&self) -> usize {
        self.trace.len() - 1
    }
}

/// A network of processes, all running the protocol in lock-step rounds.
pub struct Network<M> {
    topology: Topology,
    processes: BTreeMap<NodeId, Process>,
    pending_inputs: Vec<(NodeId, Routes, Vec<M>)>,
    buffers: Vec<InFlight<M>>,
    departed: Vec<Departed<M>>,
    round: u64,
}

impl<M> Network<M> {
    /// A network with one process per node. Processes are created when first used, so even
    /// EH(31,31) can be simulated for the pairs a test touches.
    pub fn new(topology: Topology) -> Network<M> {
        Network {
            topology,
            processes: BTreeMap::new(),
            pending_inputs: Vec::new(),
            buffers: Vec::new(),
            departed: Vec::new(),
            round: 0,
        }
    }

    /// Create every process now (for small topologies), so that all of them can be corrupted.
    pub fn with_all_processes(topology: Topology) -> Network<M> {
        let mut network = Network::new(topology);
        for v in topology.nodes() {
            network.process(v);
        }
        network
    }

    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u64 {
        self.round
    }

    /// Put `messages` for `dst` into `src`'s input buffer, a node-to-node set however the
    /// topology routes it; the input action runs next round. Returns the set's routes.
    pub fn input(
        &mut self,
        src: NodeId,
        dst: NodeId,
        messages: Vec<M>,
    ) -> Result<Routes, SendError> {
        self.send(src, &SendRequest::to(dst), messages)
    }

    /// Put a set for `request` into `src`'s input buffer, one message per copy (as many as the
    /// request's routes have: [`Routes::k`]); the input action runs next round.
    pub fn send(
        &mut self,
        src: NodeId,
        request: &SendRequest,
        messages: Vec<M>,
    ) -> Result<Routes, SendError> {
        let routes = request.routes(self.topology, src)?;
        if routes.k() != messages.len() {
            return Err(SendError::Invalid(format!(
                "{} messages for a set of {} copies",
                messages.len(),
                routes.k()
            )));
        }
        self.process(src);
        self.pending_inputs.push((src, routes.clone(), messages));
        Ok(routes)
    }

    /// Run one round. Returns how many actions ran.
    pub fn round(&mut self) -> usize {
        self.round += 1;
        let inputs = std::mem::take(&mut self.pending_inputs);
        let buffered = std::mem::take(&mut self.buffers);
        let actions = inputs.len() + buffered.len();
        for (src, routes, messages) in inputs {
            let sends = self.process(src).start(&routes, messages);
            for (to, packet) in sends {
                self.buffers.push(InFlight {
                    at: to,
                    from: src,
                    packet,
                    trace: vec![src, to],
                    mark: None,
                });
            }
        }
        for item in buffered {
            let InFlight {
                at,
                from,
                packet,
                mut trace,
                mark,
            } = item;
            let round = self.round;
            match self.process(at).hop(packet, from) {
                Action::Deliver(packet) => self.departed.push(Departed {
                    packet,
                    trace,
                    mark,
                    round: round - 1,
                    dropped: None,
                }),
                Action::Drop { reason, packet } => self.departed.push(Departed {
                    packet,
                    trace,
                    mark,
                    round: round - 1,
                    dropped: Some(reason),
                }),
                Action::Forward { to, packet } => {
                    trace.push(to);
                    self.buffers.push(InFlight {
                        at: to,
                        from: at,
                        packet,
                        trace,
                        mark,
                    });
                }
            }
        }
        actions
    }

    /// Run rounds until nothing is pending or in flight, at most `max_rounds`. Returns the number
    /// of rounds run.
    pub fn run(&mut self, max_rounds: u64) -> u64 {
        let start = self.round;
        while self.round - start < max_rounds && !self.is_idle() {
            self.round();
        }
        self.round - start
    }

    pub fn is_idle(&self) -> bool {
        self.pending_inputs.is_empty() && self.buffers.is_empty()
    }

    /// Every packet in a message buffer.
    pub fn in_flight_mut(&mut self) -> impl Iterator<Item = &mut InFlight<M>> {
        self.buffers.iter_mut()
    }

    /// Every process created so far, with its variables.
    pub fn processes_mut(&mut self) -> impl Iterator<Item = &mut Process> {
        self.processes.values_mut()
    }

    /// Packets output or dropped so far, in the order it happened.
    pub fn departed(&self) -> &[Departed<M>] {
        &self.departed
    }

    pub fn take_departed(&mut self) -> Vec<Departed<M>> {
        std::mem::take(&mut self.departed)
    }

    fn process(&mut self, id: NodeId) -> &mut Process {
        let topology = self.topology;
        self.processes
            .entry(id)
            .or_insert_with(|| Process::new(topology, id))
    }
}
