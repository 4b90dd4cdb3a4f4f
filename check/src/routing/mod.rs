//! The guarded-action protocol, every interleaving: a network of Q_n or EH(s,t) whose nodes each
//! hold a bounded buffer of packets that arrived and wait for `rcv`. It starts from a corrupted
//! configuration (each buffer holding any packets a corruption can make: [`classes`]), and
//! genuine sets are input at their sources at any moment. A step is one node's `rcv` of one
//! packet of its buffer, in any order ([`cuberoute_protocol::hop`], the production function; a
//! mutant makes it with one check left out), or one set's `input`
//! ([`cuberoute_protocol::Process::start`]). A forwarded packet joins the next node's buffer, or
//! is dropped if that buffer is full, as a daemon drops one for a full link buffer.
//!
//! Checked in every state reached:
//! * **within B**: no packet makes more than B hops after its corruption (the flush bound,
//!   [`cuberoute_protocol::flush_bound`], counted as a daemon counts);
//! * **copies only**: what a node delivers is a copy of a set it is the destination of;
//! * **genuine kept**: no check drops a genuine copy (only a full buffer may);
//! * **no panic**: `hop` never panics;
//! * **all accounted for**: once nothing is left to do, every genuine copy was delivered or
//!   dropped for a full buffer.
//!
//! No livelock follows: a step ends a packet or adds a hop to it, so while the bound holds every
//! interleaving ends. What the variables of a process hold takes no part: `hop` is given none
//! (its signature is the proof), so their corruption changes no step.

pub mod classes;
pub mod mutant;

use crate::run::Trace;
use classes::Class;
use cuberoute_protocol::routing::guarded::{self, Checks};
use cuberoute_protocol::routing::hop::hop_checked;
use cuberoute_protocol::{
    Action, DropReason, Header, NodeId, Packet, Process, Route, RouteKind, SendRequest, Topology,
    flush_bound,
};
use serde::{Deserialize, Serialize};
use stateright::{Model, Property};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// How a packet ends, as far as the properties care.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Ends {
    /// Delivered: as a copy of a set (`copy`), or as something the destination may not take
    /// for one.
    Delivered {
        copy: bool,
    },
    Dropped,
    Panicked,
    /// Still forwarded after [`classes::walk_limit`] hops.
    Walking,
}

impl Ends {
    /// How a packet delivered at `at` ends: a copy of a set if its header passes the production
    /// checks a destination makes of a header (`guarded::decide_checked`: its nodes nodes of
    /// the topology, a source other than `at`, a Pd next to it, an index below k, each anchor a
    /// position of its subsequence) and names `at` as its destination. Not the sender's check
    /// nor the turning point's on Q_n: those bound a route, which "within B" checks.
    pub fn delivered(topology: Topology, at: NodeId, packet: &Packet<()>) -> Ends {
        let Route::Guarded(h) = &packet.route else {
            return Ends::Delivered { copy: false };
        };
        let header_checks = Checks::ALL
            .without(DropReason::NotFromNeighbour)
            .without(DropReason::TurningPointOnHypercube);
        let copy = guarded::decide_checked(topology, at, h, at, header_checks) == Ok(None);
        Ends::Delivered { copy }
    }
}

/// What a model of the routing is asked to check.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Params {
    pub topology: Topology,
    /// Corrupted packets in the initial configuration.
    pub corrupted: usize,
    /// Packets each node's buffer holds.
    pub capacity: usize,
    /// Genuine sets input during the run: between the first node and the farthest from it,
    /// then back, then again.
    pub sets: usize,
    /// The check left out of `hop`, if any (a mutant).
    pub mutant: Option<mutant::Mutant>,
}

impl Params {
    /// Why these cannot be checked, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if !self.topology.has_guarded_protocol() {
            return Err(format!(
                "{} has no guarded-action routing: Q_n or EH(s,t)",
                self.topology
            ));
        }
        if self.topology.node_count() > 32 {
            return Err(format!(
                "{} has {} nodes; the routing model takes at most 32 (Q_5, EH(1,3), EH(2,2))",
                self.topology,
                self.topology.node_count()
            ));
        }
        if !(1..=4).contains(&self.capacity) {
            return Err(format!("capacity {}: 1 to 4 packets a node", self.capacity));
        }
        if self.corrupted > 3 {
            return Err(format!("{} corrupted packets: at most 3", self.corrupted));
        }
        if self.sets > 3 {
            return Err(format!("{} genuine sets: at most 3", self.sets));
        }
        Ok(())
    }
}

/// The model: its parameters, what they make, and what exploring it measured.
pub struct Routing {
    pub params: Params,
    checks: Checks,
    bound: u32,
    classes: Vec<Class>,
    /// The genuine sets: source, destination and k.
    sets: Vec<(NodeId, NodeId, u32)>,
    /// The longest life of a corrupted packet seen end, in hops.
    longest: AtomicU32,
}

/// A packet in a node's buffer.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Waiting {
    pub header: Header,
    pub from: NodeId,
    /// Hops made since its corruption, or since its source for a genuine copy.
    pub hops: u32,
    /// The genuine set it is a copy of, if it is one.
    pub set: Option<u8>,
}

impl Waiting {
    /// What orders packets in a buffer (one buffer, one representation).
    #[allow(clippy::type_complexity)]
    fn key(&self) -> (u64, u64, u64, Option<u64>, u8, u8, u8, u64, u32, Option<u8>) {
        let h = &self.header;
        (
            h.src.0,
            h.dst.0,
            h.pd.0,
            h.via.map(|v| v.0),
            h.anchors.fa,
            h.anchors.fb,
            h.index,
            self.from.0,
            self.hops,
            self.set,
        )
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Waiting) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Waiting) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What broke a property on the way to a state (a state where one broke has no step after).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Broken {
    /// A packet was forwarded past the bound.
    PastBound { hops: u32 },
    /// A node delivered what is not a copy of a set it is the destination of.
    NotACopy { at: u64 },
    /// A check dropped a genuine copy.
    GenuineDropped { at: u64, reason: String },
    /// `hop` panicked.
    Panicked { at: u64 },
}

/// A state of the network.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Net {
    /// Each node's buffer, sorted (a buffer is a set of packets: `rcv` takes them in any order).
    pub buffers: Vec<Vec<Waiting>>,
    /// The genuine sets input so far.
    pub input: u8,
    /// For each genuine set, its copies delivered and dropped for a full buffer.
    pub delivered: Vec<u8>,
    pub full: Vec<u8>,
    pub broken: Option<Broken>,
}

/// A step.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Step {
    /// Node `node` takes the packet at `slot` of its buffer.
    Rcv { node: u64, slot: usize },
    /// The source of genuine set `set` inputs it.
    Input { set: usize },
}

impl Routing {
    /// The model of `params` (checked first with [`Params::check`]).
    pub fn new(params: Params) -> Routing {
        let topology = params.topology;
        let checks = mutant::checks(params.mutant);
        let bound = flush_bound(topology, RouteKind::Guarded);
        let classes = if params.corrupted > 0 {
            classes::classes(topology, checks, bound)
        } else {
            Vec::new()
        };
        let first = NodeId(0);
        let far = topology
            .nodes()
            .max_by_key(|&v| (topology.distance(first, v), v))
            .expect("nodes");
        let sets = (0..params.sets)
            .map(|i| {
                let (src, dst) = if i % 2 == 0 {
                    (first, far)
                } else {
                    (far, first)
                };
                (src, dst, topology.local_connectivity(src, dst))
            })
            .collect();
        Routing {
            params,
            checks,
            bound,
            classes,
            sets,
            longest: AtomicU32::new(0),
        }
    }

    /// B, the flush bound of the topology.
    pub fn bound(&self) -> u32 {
        self.bound
    }

    /// The classes of corrupted packets the configurations choose from.
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The longest life of a corrupted packet seen end while exploring, in hops.
    pub fn longest_life(&self) -> u32 {
        self.longest.load(Relaxed)
    }

    /// Every choice of `corrupted` classes (with repeats, in order), as buffers within
    /// capacity.
    fn configurations(&self) -> Vec<Net> {
        let n = self.params.topology.node_count() as usize;
        let empty = Net {
            buffers: vec![Vec::new(); n],
            input: 0,
            delivered: vec![0; self.sets.len()],
            full: vec![0; self.sets.len()],
            broken: None,
        };
        let mut nets = Vec::new();
        let mut choice = Vec::new();
        self.choose(0, &mut choice, &empty, &mut nets);
        nets
    }

    fn choose(&self, from: usize, choice: &mut Vec<usize>, empty: &Net, nets: &mut Vec<Net>) {
        if choice.len() == self.params.corrupted {
            let mut net = empty.clone();
            for &c in choice.iter() {
                let class = &self.classes[c];
                let buffer = &mut net.buffers[class.at.0 as usize];
                if buffer.len() == self.params.capacity {
                    return;
                }
                buffer.push(Waiting {
                    header: class.header,
                    from: class.from,
                    hops: 1,
                    set: None,
                });
            }
            for buffer in &mut net.buffers {
                buffer.sort();
            }
            nets.push(net);
            return;
        }
        for c in from..self.classes.len() {
            choice.push(c);
            self.choose(c, choice, empty, nets);
            choice.pop();
        }
    }

    /// `packet` (a copy of `set`, or corrupted) forwarded to `to` after `hops` hops: into its
    /// buffer, or dropped there if it is full.
    fn forward(&self, net: &mut Net, to: NodeId, waiting: Waiting) {
        let buffer = &mut net.buffers[to.0 as usize];
        if buffer.len() < self.params.capacity {
            let at = buffer.binary_search(&waiting).unwrap_or_else(|i| i);
            buffer.insert(at, waiting);
        } else if let Some(set) = waiting.set {
            net.full[set as usize] += 1;
        } else {
            // Dropped where it waited to be sent: the hop was not made.
            self.ended(waiting.hops - 1);
        }
    }

    fn ended(&self, hops: u32) {
        self.longest.fetch_max(hops, Relaxed);
    }

    /// Whether nothing is left to do in `net`.
    fn is_done(&self, net: &Net) -> bool {
        net.buffers.iter().all(Vec::is_empty) && net.input as usize == self.sets.len()
    }
}

impl Model for Routing {
    type State = Net;
    type Action = Step;

    fn init_states(&self) -> Vec<Net> {
        self.configurations()
    }

    fn actions(&self, net: &Net, steps: &mut Vec<Step>) {
        if net.broken.is_some() {
            return;
        }
        for (node, buffer) in net.buffers.iter().enumerate() {
            for slot in 0..buffer.len() {
                // Two equal packets in one buffer: taking either is the same step.
                if slot == 0 || buffer[slot] != buffer[slot - 1] {
                    steps.push(Step::Rcv {
                        node: node as u64,
                        slot,
                    });
                }
            }
        }
        // Sets are input in order, each at any moment after the one before.
        if (net.input as usize) < self.sets.len() {
            steps.push(Step::Input {
                set: net.input as usize,
            });
        }
    }

    fn next_state(&self, net: &Net, step: Step) -> Option<Net> {
        let topology = self.params.topology;
        let mut next = net.clone();
        match step {
            Step::Input { set } => {
                let (src, dst, k) = self.sets[set];
                let routes = SendRequest::to(dst).routes(topology, src).ok()?;
                let mut process = Process::new(topology, src);
                for (to, packet) in process.start(&routes, vec![(); k as usize]) {
                    let Route::Guarded(header) = packet.route else {
                        return None;
                    };
                    let waiting = Waiting {
                        header,
                        from: src,
                        hops: 1,
                        set: Some(set as u8),
                    };
                    self.forward(&mut next, to, waiting);
                }
                next.input += 1;
            }
            Step::Rcv { node, slot } => {
                let at = NodeId(node);
                let waiting = next.buffers[node as usize].remove(slot);
                let packet = Packet {
                    route: Route::Guarded(waiting.header),
                    message: (),
                };
                let checks = self.checks;
                let from = waiting.from;
                let action =
                    std::panic::catch_unwind(|| hop_checked(topology, at, packet, from, checks));
                match action {
                    Err(_) => next.broken = Some(Broken::Panicked { at: node }),
                    Ok(Action::Deliver(packet)) => {
                        if Ends::delivered(topology, at, &packet)
                            != (Ends::Delivered { copy: true })
                        {
                            next.broken = Some(Broken::NotACopy { at: node });
                        }
                        match waiting.set {
                            Some(set) => next.delivered[set as usize] += 1,
                            None => self.ended(waiting.hops),
                        }
                    }
                    Ok(Action::Drop { reason, .. }) => match waiting.set {
                        Some(_) => {
                            next.broken = Some(Broken::GenuineDropped {
                                at: node,
                                reason: reason.as_str().to_string(),
                            })
                        }
                        None => self.ended(waiting.hops),
                    },
                    Ok(Action::Forward { to, packet }) => {
                        let hops = waiting.hops + 1;
                        if hops > self.bound {
                            next.broken = Some(Broken::PastBound { hops });
                            return Some(next);
                        }
                        let Route::Guarded(header) = packet.route else {
                            return None;
                        };
                        let waiting = Waiting {
                            header,
                            from: at,
                            hops,
                            set: waiting.set,
                        };
                        self.forward(&mut next, to, waiting);
                    }
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("within B", |_, net: &Net| {
                !matches!(net.broken, Some(Broken::PastBound { .. }))
            }),
            Property::always("copies only", |_, net: &Net| {
                !matches!(net.broken, Some(Broken::NotACopy { .. }))
            }),
            Property::always("genuine kept", |_, net: &Net| {
                !matches!(net.broken, Some(Broken::GenuineDropped { .. }))
            }),
            Property::always("no panic", |_, net: &Net| {
                !matches!(net.broken, Some(Broken::Panicked { .. }))
            }),
            Property::always("all accounted for", |model: &Routing, net: &Net| {
                !model.is_done(net)
                    || model
                        .sets
                        .iter()
                        .enumerate()
                        .all(|(i, &(_, _, k))| u32::from(net.delivered[i] + net.full[i]) == k)
            }),
            Property::sometimes(
                "a genuine set delivered whole",
                |model: &Routing, net: &Net| {
                    model
                        .sets
                        .iter()
                        .enumerate()
                        .any(|(i, &(_, _, k))| u32::from(net.delivered[i]) == k)
                },
            ),
        ]
    }
}

/// What a trace of this model replays from: its parameters, the initial state and the steps.
pub type RoutingTrace = Trace<Params, Vec<Vec<Waiting>>, Step>;

/// Replay `trace`: the properties broken on the way, by name, with the state they broke in.
pub fn replay(trace: &RoutingTrace) -> Result<Vec<(String, Net)>, String> {
    trace.params.check()?;
    let model = Routing::new(trace.params.clone());
    let sets = model.sets.len();
    let net = Net {
        buffers: trace.initial.clone(),
        input: 0,
        delivered: vec![0; sets],
        full: vec![0; sets],
        broken: None,
    };
    if net.buffers.len() != trace.params.topology.node_count() as usize {
        return Err("the trace's buffers are not one a node".into());
    }
    crate::run::replay_steps(&model, net, &trace.steps)
}

impl crate::run::Checked for Routing {
    type Params = Params;
    type Initial = Vec<Vec<Waiting>>;

    fn name(&self) -> &'static str {
        "routing"
    }

    fn params(&self) -> &Params {
        &self.params
    }

    fn initial(&self, net: &Net) -> Vec<Vec<Waiting>> {
        net.buffers.clone()
    }

    fn figures(&self) -> serde_json::Value {
        serde_json::json!({
            "flush_bound": self.bound,
            "longest_life": self.longest_life(),
            "classes": self.classes.len(),
            "longest_class_life": self.classes.iter().map(|c| c.life).max().unwrap_or(0),
        })
    }
}
