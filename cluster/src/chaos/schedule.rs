//! The fault schedule of a chaos run, as a pure function of its inputs: which nodes crash and
//! which links are cut, for a seed, a topology, the chosen fault kinds and how many of each.
//!
//! The promise the schedule keeps: crashed nodes and cut links together number at most k-1,
//! k being the topology's connectivity. A crashed node lies on at most one of a pair's
//! internally node-disjoint paths (the paths share only their ends, and traffic runs between
//! live nodes only), and so does a cut link (two paths sharing a link would share an inner
//! node, or both be the direct link). So at most k-1 <= k(u,v)-1 of the k(u,v) paths of any
//! pair of live nodes are hit, and every set between live nodes keeps a path.

use cuberoute_protocol::{NodeId, Topology};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use serde::Serialize;
use std::collections::BTreeSet;

/// The faults a chaos run can inject.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Every node overwrites its protocol variables, repeatedly.
    State,
    /// Every node flips bits in queued and entering packets.
    Buffers,
    /// Nodes are killed.
    Crash,
    /// Links are severed on both sides.
    Cut,
    /// Relays keep a copy of every payload they forward (curious relays).
    Capture,
    /// Relays rewrite every payload they forward, checksums included (Byzantine relays).
    Forge,
    /// The network drops a share of the datagrams on every link (a simulated network, or a
    /// cluster with a network of its own: `--netns` or compose).
    Loss,
    /// Every datagram on every link is held back a while, with jitter (same networks).
    Delay,
    /// The network splits in two: every link between the halves drops everything (same
    /// networks).
    Partition,
    /// The sources and destinations of sets are killed and restarted at random moments, and
    /// a checker says whether every accepted set reached a client once (`crate::chaos::ends`).
    CrashEnds,
    /// One whole host of a cluster spread over several (`cluster swarm` on a testbed) is cut
    /// off the network: every node on it at once.
    Host,
}

impl FaultKind {
    pub const ALL: [FaultKind; 11] = [
        FaultKind::State,
        FaultKind::Buffers,
        FaultKind::Crash,
        FaultKind::Cut,
        FaultKind::Capture,
        FaultKind::Forge,
        FaultKind::Loss,
        FaultKind::Delay,
        FaultKind::Partition,
        FaultKind::CrashEnds,
        FaultKind::Host,
    ];

    /// The name `--faults` takes and the report prints.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::State => "state",
            FaultKind::Buffers => "buffers",
            FaultKind::Crash => "crash",
            FaultKind::Cut => "cut",
            FaultKind::Capture => "capture",
            FaultKind::Forge => "forge",
            FaultKind::Loss => "loss",
            FaultKind::Delay => "delay",
            FaultKind::Partition => "partition",
            FaultKind::CrashEnds => "crash-ends",
            FaultKind::Host => "host",
        }
    }

    /// Faults of the network itself: a simulated network injects them, and so does a cluster
    /// whose nodes have a network of their own (`crate::chaos::netfault`); loopback processes
    /// cannot.
    pub fn is_of_the_network(self) -> bool {
        matches!(
            self,
            FaultKind::Loss | FaultKind::Delay | FaultKind::Partition
        )
    }
}

impl std::str::FromStr for FaultKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown fault {s:?}: expected one of {}", names.join(", "))
            })
    }
}

/// How many nodes crash and how many links are cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub crashes: usize,
    pub cuts: usize,
}

impl FaultCounts {
    /// The most faults a run on `topology` may inject: k-1.
    pub fn budget(topology: Topology) -> usize {
        topology.connectivity().saturating_sub(1) as usize
    }

    /// The whole budget, for the kinds chosen: all to crashes or all to cuts, or, with both,
    /// half each (the odd one a crash).
    pub fn whole_budget(topology: Topology, faults: &BTreeSet<FaultKind>) -> FaultCounts {
        let budget = FaultCounts::budget(topology);
        match (
            faults.contains(&FaultKind::Crash),
            faults.contains(&FaultKind::Cut),
        ) {
            (true, true) => FaultCounts {
                crashes: budget.div_ceil(2),
                cuts: budget / 2,
            },
            (true, false) => FaultCounts {
                crashes: budget,
                cuts: 0,
            },
            (false, true) => FaultCounts {
                crashes: 0,
                cuts: budget,
            },
            (false, false) => FaultCounts::default(),
        }
    }
}

/// Counts a schedule cannot keep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "{crashes} crashes and {cuts} cuts exceed k-1 = {budget} on {topology}: some set would lose every path"
    )]
    OverBudget {
        topology: Topology,
        crashes: usize,
        cuts: usize,
        budget: usize,
    },
    #[error("{count} {what} asked for, but the faults chosen do not include `{kind}`")]
    NotChosen {
        count: usize,
        what: &'static str,
        kind: &'static str,
    },
}

/// Which nodes crash and which links are cut.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    pub crashed: Vec<NodeId>,
    /// Each link once, as (a, b).
    pub cut: Vec<(NodeId, NodeId)>,
}

impl Schedule {
    /// The nodes of `topology` that do not crash, in id order.
    pub fn alive(&self, topology: Topology) -> Vec<NodeId> {
        topology
            .nodes()
            .filter(|n| !self.crashed.contains(n))
            .collect()
    }

    /// How many of `paths` (between two live nodes) a crash or a cut of this schedule hits.
    pub fn paths_hit(&self, paths: &[Vec<NodeId>]) -> usize {
        paths
            .iter()
            .filter(|path| {
                let inner = &path[1..path.len().saturating_sub(1).max(1)];
                inner.iter().any(|n| self.crashed.contains(n))
                    || path.windows(2).any(|hop| {
                        self.cut
                            .iter()
                            .any(|&(a, b)| (hop[0], hop[1]) == (a, b) || (hop[0], hop[1]) == (b, a))
                    })
            })
            .count()
    }
}

/// A stream of the seed's own, so that the schedule does not follow the traffic's draws.
const SCHEDULE_STREAM: u64 = 0x5ced_0000_0000_0001;

/// The relays' stream: choosing relays does not change which nodes crash.
const RELAY_STREAM: u64 = 0x5ced_0000_0000_0002;

const PARTITION_STREAM: u64 = 0x5ced_0000_0000_0003;

/// A split of the network in two halves: the nodes whose id has bit `bit` clear, and those
/// whose id has it set; `links` are the links between them, each once, lower id first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub bit: u32,
    pub links: Vec<(NodeId, NodeId)>,
}

impl Partition {
    /// Whether `a` and `b` lie on the same side.
    pub fn same_side(&self, a: NodeId, b: NodeId) -> bool {
        (a.0 ^ b.0) >> self.bit & 1 == 0
    }
}

/// The partition of a run: one id bit, drawn from the seed among those that split the nodes
/// into two non-empty halves joined by at least one link. Cutting every link of `links`
/// leaves no path between the halves (any path from one to the other crosses one of them).
pub fn partition(seed: u64, topology: Topology) -> Partition {
    let nodes: Vec<NodeId> = topology.nodes().collect();
    let highest = nodes.iter().map(|n| n.0).max().unwrap_or(0);
    let candidates: Vec<Partition> = (0..u64::BITS - highest.leading_zeros())
        .map(|bit| Partition {
            bit,
            links: nodes
                .iter()
                .flat_map(|&a| topology.neighbours(a).map(move |b| (a, b)))
                .filter(|&(a, b)| a < b && (a.0 ^ b.0) >> bit & 1 == 1)
                .collect(),
        })
        .filter(|p| !p.links.is_empty())
        .collect();
    let mut rng = StdRng::seed_from_u64(seed ^ PARTITION_STREAM);
    candidates.choose(&mut rng).cloned().unwrap_or(Partition {
        bit: 0,
        links: Vec::new(),
    })
}

/// `count` distinct relays for `seed` (to capture or forge), none of them crashed or at the end
/// of a cut link. Traffic then runs between the other live nodes only, so each relay is an
/// inner node of at most one of a set's disjoint paths: at most `count` paths of any set are
/// hit, which is what a mode with threshold T = `count` must survive.
pub fn relays(seed: u64, topology: Topology, schedule: &Schedule, count: usize) -> Vec<NodeId> {
    let mut rng = StdRng::seed_from_u64(seed ^ RELAY_STREAM);
    let mut shuffled: Vec<NodeId> = topology.nodes().collect();
    shuffled.shuffle(&mut rng);
    shuffled
        .into_iter()
        .filter(|n| {
            !schedule.crashed.contains(n) && !schedule.cut.iter().any(|&(a, b)| a == *n || b == *n)
        })
        .take(count)
        .collect()
}

/// The schedule of `seed` on `topology`: `counts.crashes` distinct nodes crash; then each cut
/// takes the next node of the same shuffle that does not crash, and its first neighbour that
/// neither crashes nor ends a link cut already. Fewer cuts than asked are made only when no
/// such link is left. The same inputs always give the same schedule.
pub fn schedule(
    seed: u64,
    topology: Topology,
    faults: &BTreeSet<FaultKind>,
    counts: FaultCounts,
) -> Result<Schedule, ScheduleError> {
    let budget = FaultCounts::budget(topology);
    if counts.crashes + counts.cuts > budget {
        return Err(ScheduleError::OverBudget {
            topology,
            crashes: counts.crashes,
            cuts: counts.cuts,
            budget,
        });
    }
    if counts.crashes > 0 && !faults.contains(&FaultKind::Crash) {
        return Err(ScheduleError::NotChosen {
            count: counts.crashes,
            what: "crashes",
            kind: "crash",
        });
    }
    if counts.cuts > 0 && !faults.contains(&FaultKind::Cut) {
        return Err(ScheduleError::NotChosen {
            count: counts.cuts,
            what: "cuts",
            kind: "cut",
        });
    }
    if counts.crashes + counts.cuts == 0 {
        return Ok(Schedule::default());
    }
    let mut rng = StdRng::seed_from_u64(seed ^ SCHEDULE_STREAM);
    let mut shuffled: Vec<NodeId> = topology.nodes().collect();
    shuffled.shuffle(&mut rng);
    let crashed: Vec<NodeId> = shuffled[..counts.crashes].to_vec();
    let mut cut: Vec<(NodeId, NodeId)> = Vec::new();
    for &a in &shuffled[counts.crashes..] {
        if cut.len() >= counts.cuts {
            break;
        }
        let b = topology
            .neighbours(a)
            .find(|b| !crashed.contains(b) && !cut.iter().any(|&(x, y)| x == *b || y == *b));
        if let Some(b) = b {
            cut.push((a, b));
        }
    }
    Ok(Schedule { crashed, cut })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::SendRequest;

    fn node_to_node_paths(topology: Topology, u: NodeId, v: NodeId) -> Vec<Vec<NodeId>> {
        SendRequest::to(v).route_system(topology, u).unwrap().paths
    }
    use proptest::prelude::*;

    fn kinds(list: &[FaultKind]) -> BTreeSet<FaultKind> {
        list.iter().copied().collect()
    }

    fn topology(name: &str) -> Topology {
        name.parse().unwrap()
    }

    /// The promise, for every pair of live nodes of `topology`, or `sample` pairs of them.
    fn every_live_pair_keeps_a_path(topology: Topology, s: &Schedule, sample: Option<u64>) {
        let alive = s.alive(topology);
        let pairs: Vec<(NodeId, NodeId)> = match sample {
            None => alive
                .iter()
                .flat_map(|&u| alive.iter().map(move |&v| (u, v)))
                .filter(|(u, v)| u != v)
                .collect(),
            Some(n) => (0..n)
                .map(|i| {
                    let u = alive[(i * 7919 % alive.len() as u64) as usize];
                    let v = alive[((i * 104_729 + 1) % alive.len() as u64) as usize];
                    (u, v)
                })
                .filter(|(u, v)| u != v)
                .collect(),
        };
        for (u, v) in pairs {
            let paths = node_to_node_paths(topology, u, v);
            let hit = s.paths_hit(&paths);
            assert!(
                hit < paths.len() && hit < topology.local_connectivity(u, v) as usize,
                "{topology} {u}->{v}: {hit} of {} paths hit by {s:?}",
                paths.len()
            );
        }
    }

    fn well_formed(topology: Topology, s: &Schedule, counts: FaultCounts) {
        assert_eq!(s.crashed.len(), counts.crashes);
        assert!(s.cut.len() <= counts.cuts);
        assert!(s.crashed.len() + s.cut.len() <= FaultCounts::budget(topology));
        let distinct: BTreeSet<_> = s.crashed.iter().collect();
        assert_eq!(distinct.len(), s.crashed.len(), "{s:?}");
        for &(a, b) in &s.cut {
            assert!(topology.is_adjacent(a, b), "{a}-{b} is no link");
            assert!(!s.crashed.contains(&a) && !s.crashed.contains(&b), "{s:?}");
        }
        let links: BTreeSet<_> = s.cut.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        assert_eq!(links.len(), s.cut.len(), "a link cut twice: {s:?}");
    }

    #[test]
    fn relays_hit_at_most_their_number_of_paths_of_any_set_between_other_nodes() {
        for name in ["q:4", "eh:2,2", "hhc:2"] {
            let t = topology(name);
            let s = schedule(
                3,
                t,
                &kinds(&[FaultKind::Crash]),
                FaultCounts {
                    crashes: 1,
                    cuts: 0,
                },
            )
            .unwrap();
            for count in [1, 2] {
                let relays = relays(9, t, &s, count);
                assert_eq!(relays.len(), count);
                assert!(relays.iter().all(|r| !s.crashed.contains(r)));
                let ends: Vec<NodeId> = s
                    .alive(t)
                    .into_iter()
                    .filter(|n| !relays.contains(n))
                    .collect();
                for (i, &u) in ends.iter().enumerate().step_by(3) {
                    for &v in ends.iter().skip(i + 1).step_by(5) {
                        let paths = node_to_node_paths(t, u, v);
                        let hit = paths
                            .iter()
                            .filter(|p| p[1..p.len() - 1].iter().any(|n| relays.contains(n)))
                            .count();
                        assert!(hit <= count, "{name} {u}->{v}: {hit} paths hit");
                    }
                }
            }
            assert_eq!(relays(9, t, &s, 2), relays(9, t, &s, 2), "the seed decides");
        }
    }

    #[test]
    fn the_budget_is_k_minus_1_split_between_crashes_and_cuts() {
        let eh = topology("eh:3,4"); // k = 4
        let both = kinds(&[FaultKind::Crash, FaultKind::Cut, FaultKind::State]);
        assert_eq!(
            FaultCounts::whole_budget(eh, &both),
            FaultCounts {
                crashes: 2,
                cuts: 1
            }
        );
        assert_eq!(
            FaultCounts::whole_budget(eh, &kinds(&[FaultKind::Cut])),
            FaultCounts {
                crashes: 0,
                cuts: 3
            }
        );
        assert_eq!(
            FaultCounts::whole_budget(eh, &kinds(&[FaultKind::State, FaultKind::Buffers])),
            FaultCounts::default()
        );
        assert_eq!(FaultCounts::budget(topology("q:1")), 0);
    }

    #[test]
    fn counts_beyond_the_budget_or_the_kinds_are_refused() {
        let q4 = topology("q:4");
        let crash = kinds(&[FaultKind::Crash]);
        assert!(matches!(
            schedule(
                1,
                q4,
                &crash,
                FaultCounts {
                    crashes: 4,
                    cuts: 0
                }
            ),
            Err(ScheduleError::OverBudget { budget: 3, .. })
        ));
        assert!(matches!(
            schedule(
                1,
                q4,
                &crash,
                FaultCounts {
                    crashes: 1,
                    cuts: 1
                }
            ),
            Err(ScheduleError::NotChosen { kind: "cut", .. })
        ));
        assert_eq!(
            schedule(1, q4, &kinds(&[FaultKind::State]), FaultCounts::default()),
            Ok(Schedule::default())
        );
    }

    #[test]
    fn a_cut_link_and_a_crashed_node_each_hit_one_path() {
        let q3 = topology("q:3");
        let paths = node_to_node_paths(q3, NodeId(0), NodeId(7));
        let one = Schedule {
            crashed: vec![paths[0][1]],
            cut: vec![(paths[1][2], paths[1][1])],
        };
        assert_eq!(one.paths_hit(&paths), 2);
        // The direct link of an adjacent pair is a path of its own.
        let adjacent = node_to_node_paths(q3, NodeId(0), NodeId(1));
        let direct = Schedule {
            crashed: Vec::new(),
            cut: vec![(NodeId(1), NodeId(0))],
        };
        assert_eq!(direct.paths_hit(&adjacent), 1);
    }

    #[test]
    fn every_seed_keeps_every_pair_of_small_networks_connected() {
        let all = kinds(&[FaultKind::Crash, FaultKind::Cut]);
        for name in [
            "q:3",
            "q:4",
            "eh:1,2",
            "eh:2,2",
            "hhc:1",
            "mc:1,2",
            "rdn:ring3,1",
        ] {
            let t = topology(name);
            for which in [
                kinds(&[FaultKind::Crash]),
                kinds(&[FaultKind::Cut]),
                all.clone(),
            ] {
                let counts = FaultCounts::whole_budget(t, &which);
                for seed in 0..20 {
                    let s = schedule(seed, t, &which, counts).unwrap();
                    well_formed(t, &s, counts);
                    every_live_pair_keeps_a_path(t, &s, None);
                }
            }
        }
    }

    /// Every partition splits the nodes in two non-empty halves that no path joins once its
    /// links are cut, and its links are every link between the halves.
    #[test]
    fn a_partition_leaves_no_path_between_its_halves() {
        for name in ["q:4", "eh:2,2", "hhc:2", "mc:1,2", "rdn:ring3,1"] {
            let t = topology(name);
            for seed in 0..12 {
                let p = partition(seed, t);
                let nodes: Vec<NodeId> = t.nodes().collect();
                let start = nodes[0];
                assert!(nodes.iter().any(|&n| !p.same_side(start, n)), "{name}");
                let crossing = nodes
                    .iter()
                    .flat_map(|&a| t.neighbours(a).map(move |b| (a, b)))
                    .filter(|&(a, b)| a < b && !p.same_side(a, b))
                    .collect::<Vec<_>>();
                assert_eq!(crossing, p.links, "{name}");
                // Search from one node over the links that remain: one half only.
                let mut seen = BTreeSet::from([start]);
                let mut frontier = vec![start];
                while let Some(a) = frontier.pop() {
                    for b in t.neighbours(a) {
                        let cut = p.links.contains(&(a.min(b), a.max(b)));
                        if !cut && seen.insert(b) {
                            frontier.push(b);
                        }
                    }
                }
                assert!(seen.iter().all(|&n| p.same_side(start, n)), "{name}");
            }
            let bits: BTreeSet<u32> = (0..32).map(|seed| partition(seed, t).bit).collect();
            assert!(bits.len() > 1, "{name}: the seed picks the split");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn no_seed_hits_more_than_k_minus_1_paths_of_a_pair(
            seed in any::<u64>(),
            name in prop::sample::select(vec!["q:6", "eh:3,3", "eh:2,4", "hhc:2", "mc:2,2", "rdn:q2,2"]),
            crash in any::<bool>(),
            cut in any::<bool>(),
        ) {
            let t = topology(name);
            let mut which = kinds(&[FaultKind::State]);
            if crash { which.insert(FaultKind::Crash); }
            if cut { which.insert(FaultKind::Cut); }
            let counts = FaultCounts::whole_budget(t, &which);
            let s = schedule(seed, t, &which, counts).unwrap();
            well_formed(t, &s, counts);
            if cut {
                // Large networks always have room for every cut.
                prop_assert_eq!(s.cut.len(), counts.cuts);
            }
            every_live_pair_keeps_a_path(t, &s, Some(200));
        }

        #[test]
        fn the_same_seed_gives_the_same_schedule(seed in any::<u64>()) {
            let t = topology("eh:3,3");
            let which = kinds(&[FaultKind::Crash, FaultKind::Cut]);
            let counts = FaultCounts::whole_budget(t, &which);
            let first = schedule(seed, t, &which, counts).unwrap();
            prop_assert_eq!(&first, &schedule(seed, t, &which, counts).unwrap());
            // ...and the seed matters.
            let others: BTreeSet<Vec<NodeId>> = (1..=8)
                .map(|d| schedule(seed.wrapping_add(d), t, &which, counts).unwrap().crashed)
                .collect();
            prop_assert!(others.len() > 1);
        }
    }
}
