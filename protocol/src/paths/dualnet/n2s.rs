//! RDN_N2S_disjoint_paths (Li, Peng and Chu, *Node-to-Set Disjoint Paths in Recursive
//! Dual-Net*, seed 003, Algorithm 4 with Algorithms 1 to 3, Theorem 1): d_0+k disjoint paths from
//! a node s to d_0+k nodes T of RDN^k(B), each of length at most 3 D_{k-1} + 6.
//!
//! Clusters are the 2 n_{k-1} copies of RDN^{k-1}(B); C_s is s's; U holds the nodes paths from s
//! have reached (first its neighbours), V the targets still to reach (the targets, or the nodes
//! they were pushed to), W the clusters no path may borrow. Stages:
//! 1. targets inside C_s: recursion in C_s (a base-network N2S at k = 1: direct edges in the
//!    ring of 3, Cube-N2S in Q_d); every neighbour of s in C_s no returned path uses moves out
//!    through its cross edge (Lemma 3). With all d_0+k targets inside, one of them is left to a
//!    path through s's cross neighbour;
//! 2. clusters of the other type: a node of U meets the targets of its own cluster (RDN_routing
//!    to a single one, Algorithm 2's one_path to several: join the nearest, push the others out
//!    by paths of at most two edges, Lemma 3); a cluster with several targets and no node of U
//!    pushes them all out;
//! 3. clusters of s's type holding targets: a node of U enters through the cross edge that
//!    leads there, then as in Stage 2;
//! 4. each remaining node of U is paired with a remaining target: inside one cluster by
//!    RDN_routing, else by RDN_modified_routing (Algorithm 3) through a fresh cluster of s's type.
//!
//! Resolutions (pitfalls 003-n of docs/family-algorithms.md):
//! - Stage 1 with no target in C_s moves every in-cluster neighbour of s out (pitfall 003-1:
//!   the pseudo-code forgets the r = 0 case, the example does it);
//! - the typos of pitfall 003-2 read as their prose (truncate at v_0; C ∩ W = ∅ in Stage 4; ...);
//! - a recursive path through two neighbours of s is cut to start at the last one, so each path
//!   holds exactly one neighbour of s (pitfall 003-3);
//! - pushes and fresh clusters are searched, and every in-cluster route is RDN_routing unless it
//!   would meet a node already taken, then a BFS inside the cluster that avoids them (pitfall
//!   003-4: the paper's existence arguments are hand-waved and its collisions unanalysed). Every
//!   path system passes [`crate::paths::verify`] and the tests check the bound 3 D_{k-1} + 6;
//! - one_path joins the nearest target by a BFS route inside the cluster that crosses no other
//!   target, which settles Algorithm 2's collision fix; if the other targets then cannot all be
//!   pushed out, it joins the next nearest instead;
//! - with fewer than d_0+k targets the reached nodes left over at Stage 4 are given back.
//!
//! Choices: U is met in the order of s's neighbours; "join the nearest" takes the lowest target
//! index among the nearest (the paper picks "at random"); Stage 3 serves the clusters of pushed
//! targets first, then by target index, each by the first reached node that can enter. With
//! these, Example 1 comes out as printed.
//!
//! Small networks run out of free clusters: a push may then go, as a last resort, to a cluster of
//! s's type whose targets still wait for Stage 3. Where even that fails (RDN^1(Q_2), 32 nodes,
//! when three targets share a 4-node cluster of the other type: about 0.3% of random instances),
//! the exact search of [`crate::paths::fallback`] answers, and the tests count it.

use crate::NodeId;
use crate::Topology;
use crate::paths::check::check_node_to_set;
use crate::paths::cube::n2s::cube_n2s;
use crate::paths::error::PathError;
use crate::paths::system::{Construction, PathSystem};
use crate::paths::verify::{Shape, check};
use crate::topology::dualnet::{Base, DualNet};
use crate::topology::hypercube::Hypercube;
use std::collections::HashSet;

/// RDN_N2S_disjoint_paths(RDN^k(B), s, T): `paths[i]` runs from `s` to `targets[i]`.
pub fn rdn_n2s(rdn: DualNet, s: NodeId, targets: &[NodeId]) -> Result<PathSystem, PathError> {
    let topology = Topology::DualNet(rdn);
    check_node_to_set(topology, s, targets)?;
    let raw: Vec<u64> = targets.iter().map(|t| t.0).collect();
    let system = match n2s_at(rdn, rdn.k, s.0, &raw) {
        Ok(paths) => PathSystem::paper(
            paths
                .into_iter()
                .map(|p| p.into_iter().map(NodeId).collect())
                .collect(),
        ),
        Err(why) if rdn.node_count() <= crate::paths::fallback::MAX_NODES => {
            crate::paths::fallback::node_to_set(topology, s, targets)
                .map(|paths| PathSystem {
                    paths,
                    construction: Construction::ExactSearch(why),
                })
                .ok_or_else(|| PathError::internal(format!("RDN N2S: {why}")))?
        }
        Err(why) => return Err(PathError::internal(format!("RDN N2S: {why}"))),
    };
    check(
        topology,
        Shape::NodeToSet { s, dests: targets },
        &system.paths,
    )
    .map_err(|e| PathError::internal(format!("RDN N2S built a wrong path system: {e}")))?;
    Ok(system)
}

/// 3 D_{k-1} + 6, Theorem 1.
pub fn bound(rdn: DualNet) -> usize {
    3 * rdn.diameter_at(rdn.k - 1) as usize + 6
}

type Stuck = &'static str;

/// The paths of N2S inside the level-`level` network containing `s` (RDN^level(B)), as raw ids.
fn n2s_at(rdn: DualNet, level: u32, s: u64, targets: &[u64]) -> Result<Vec<Vec<u64>>, Stuck> {
    if level == 0 {
        return base_n2s(rdn.base, s, targets);
    }
    Stages::new(rdn, level, s, targets).run()
}

/// Node-to-set in the base network: direct edges in the ring of 3 (every other node is a
/// neighbour), Cube-N2S in Q_d.
fn base_n2s(base: Base, s: u64, targets: &[u64]) -> Result<Vec<Vec<u64>>, Stuck> {
    let n0 = base.nodes();
    let offset = s - s % n0;
    match base {
        Base::Ring3 => Ok(targets.iter().map(|&t| vec![s, t]).collect()),
        _ => {
            let local: Vec<NodeId> = targets.iter().map(|&t| NodeId(t - offset)).collect();
            let paths = cube_n2s(
                Hypercube { n: base.degree() },
                NodeId(s - offset),
                &local,
                &[],
            )
            .map_err(|_| "Cube-N2S refused a base instance")?
            .paths;
            Ok(paths
                .into_iter()
                .map(|p| p.into_iter().map(|v| v.0 + offset).collect())
                .collect())
        }
    }
}

/// A target still to reach: its index, where it is now, and the path from there back to the
/// original target (`[v]` unless it was pushed).
#[derive(Clone, Debug)]
struct Pending {
    index: usize,
    back: Vec<u64>,
}

impl Pending {
    fn at(&self) -> u64 {
        self.back[0]
    }
}

/// The state of Algorithm 4 at one level.
#[derive(Clone)]
struct Stages<'a> {
    rdn: DualNet,
    level: u32,
    s: u64,
    targets: &'a [u64],
    /// Nodes of paths built or reserved.
    used: HashSet<u64>,
    /// U: each reached node with its path from s.
    reached: Vec<Vec<u64>>,
    /// V.
    pending: Vec<Pending>,
    /// Clusters no path may borrow: those of targets and pushed targets (W), and those some
    /// path already routes through.
    closed: HashSet<u64>,
    /// The clusters some finished path routes through.
    routed: HashSet<u64>,
    out: Vec<Option<Vec<u64>>>,
}

impl<'a> Stages<'a> {
    fn new(rdn: DualNet, level: u32, s: u64, targets: &'a [u64]) -> Stages<'a> {
        let mut stages = Stages {
            rdn,
            level,
            s,
            targets,
            used: HashSet::from([s]),
            reached: Vec::new(),
            pending: targets
                .iter()
                .enumerate()
                .map(|(index, &t)| Pending {
                    index,
                    back: vec![t],
                })
                .collect(),
            closed: HashSet::new(),
            routed: HashSet::new(),
            out: vec![None; targets.len()],
        };
        for &t in targets {
            let c = stages.cluster(t);
            stages.closed.insert(c);
        }
        stages
    }

    /// d_0 + level: the degree at this level.
    fn degree(&self) -> u32 {
        self.rdn.base.degree() + self.level
    }

    /// The key of v's cluster (a copy of RDN^{level-1}).
    fn cluster(&self, v: u64) -> u64 {
        v / self.rdn.nodes_at(self.level - 1)
    }

    fn kind(&self, v: u64) -> u64 {
        self.rdn.triple(NodeId(v), self.level).kind
    }

    /// The level's cross edge.
    fn cross(&self, v: u64) -> u64 {
        self.rdn.cross(NodeId(v), self.level).0
    }

    /// Neighbour u^(i), 1 <= i <= degree, at this level (u^(degree) is the cross edge).
    fn neighbour(&self, v: u64, i: u32) -> u64 {
        if i == self.degree() {
            self.cross(v)
        } else {
            self.rdn.neighbour(NodeId(v), i).0
        }
    }

    /// The neighbours of v inside its cluster.
    fn inside(&self, v: u64) -> impl Iterator<Item = u64> + '_ {
        (1..self.degree()).map(move |i| self.neighbour(v, i))
    }

    fn is_target(&self, v: u64) -> bool {
        self.targets.contains(&v)
    }

    /// A route from `from` to `to` inside their cluster: RDN_routing if it meets no taken
    /// node, else a BFS inside the cluster around them. `None` if they are cut off.
    fn route(&self, from: u64, to: u64, avoid: &HashSet<u64>) -> Option<Vec<u64>> {
        let mut path = vec![NodeId(from)];
        super::routing::route_at(
            self.rdn,
            NodeId(from),
            NodeId(to),
            self.level - 1,
            &mut path,
        );
        let path: Vec<u64> = path.into_iter().map(|v| v.0).collect();
        if path[1..].iter().all(|v| !avoid.contains(v) || *v == to) {
            return Some(path);
        }
        self.bfs(from, avoid, |v| v == to)
    }

    /// BFS inside `from`'s cluster, around `avoid`, to the first node `goal` accepts.
    fn bfs(&self, from: u64, avoid: &HashSet<u64>, goal: impl Fn(u64) -> bool) -> Option<Vec<u64>> {
        crate::topology::bfs::shortest_path(
            from,
            |u| u != from && goal(u),
            |w| !avoid.contains(&w),
            |u| self.inside(u),
        )
    }

    /// Finish the path of pending target `p` with `route` (from a reached node's path end to
    /// p's current node).
    fn finish(&mut self, prefix: &[u64], route: &[u64], p: &Pending) {
        let mut path = prefix.to_vec();
        path.extend_from_slice(&route[1..]);
        path.extend_from_slice(&p.back[1..]);
        self.used.extend(path.iter().copied());
        for &v in &path {
            let c = self.cluster(v);
            self.closed.insert(c);
            self.routed.insert(c);
        }
        self.out[p.index] = Some(path);
    }

    fn run(mut self) -> Result<Vec<Vec<u64>>, Stuck> {
        self.stage_1()?;
        self.settle_reached_targets();
        self.stage_2()?;
        self.stage_3()?;
        self.stage_4()?;
        self.out
            .into_iter()
            .map(|p| p.ok_or("a target got no path"))
            .collect()
    }

    /// Stage 1: targets inside C_s.
    fn stage_1(&mut self) -> Result<(), Stuck> {
        let s = self.s;
        let d = self.degree();
        let cs = self.cluster(s);
        let inside: Vec<usize> = (0..self.targets.len())
            .filter(|&i| self.cluster(self.targets[i]) == cs)
            .collect();
        let mut via: Vec<u64> = Vec::new();
        if inside.len() == d as usize {
            // All targets inside: route to all but the last inside C_s; the one left goes out
            // through its cross edge and meets s^(d) in Stage 4.
            let (&last, rest) = inside.split_last().expect("d >= 1");
            let goals: Vec<u64> = rest.iter().map(|&i| self.targets[i]).collect();
            let paths = n2s_at(self.rdn, self.level - 1, s, &goals)?;
            let mut left = last;
            for (&i, mut p) in rest.iter().zip(paths) {
                if let Some(cut) = p.iter().position(|&v| v == self.targets[last]) {
                    p.truncate(cut + 1);
                    self.record(last, p);
                    left = i;
                } else {
                    self.record(i, p);
                }
            }
            let t = self.targets[left];
            let pushed = self.cross(t);
            self.pending.retain(|p| p.index == left);
            self.pending[0].back = vec![pushed, t];
            self.used.insert(pushed);
            let c = self.cluster(pushed);
            self.closed.insert(c);
            self.reached = vec![vec![s, self.cross(s)]];
            self.used.insert(self.cross(s));
            return Ok(());
        }
        if !inside.is_empty() {
            let goals: Vec<u64> = inside.iter().map(|&i| self.targets[i]).collect();
            let paths = n2s_at(self.rdn, self.level - 1, s, &goals)?;
            let neighbours: Vec<u64> = (1..=d).map(|i| self.neighbour(s, i)).collect();
            for (&i, p) in inside.iter().zip(paths) {
                // Pitfall 003-3: start at the last neighbour of s on the path.
                let from = p.iter().rposition(|v| neighbours.contains(v)).unwrap_or(0);
                let mut path = vec![s];
                path.extend_from_slice(&p[from..]);
                via.push(path[1]);
                self.record(i, path);
            }
            self.pending.retain(|p| !inside.contains(&p.index));
        }
        // Every in-cluster neighbour no path uses moves out through its cross edge (also when
        // no target is inside: pitfall 003-1), and s^(d) joins U.
        for i in 1..d {
            let n = self.neighbour(s, i);
            if via.contains(&n) {
                continue;
            }
            let out = self.cross(n);
            self.reached.push(vec![s, n, out]);
            self.used.extend([n, out]);
        }
        self.reached.push(vec![s, self.cross(s)]);
        self.used.insert(self.cross(s));
        Ok(())
    }

    /// Record the path of target i (inside C_s).
    fn record(&mut self, i: usize, path: Vec<u64>) {
        self.used.extend(path.iter().copied());
        self.out[i] = Some(path);
    }

    /// A reached node that is itself a pending target ends its path there.
    fn settle_reached_targets(&mut self) {
        let mut k = 0;
        while k < self.reached.len() {
            let end = *self.reached[k].last().expect("non-empty");
            if let Some(at) = self.pending.iter().position(|p| p.at() == end) {
                let p = self.pending.remove(at);
                let prefix = self.reached.remove(k);
                self.finish(&prefix, &[end], &p);
            } else {
                k += 1;
            }
        }
    }

    /// One reached node meets the pending targets of the cluster it stands in (entering at
    /// `entry`, the last node of `prefix`): join the nearest, push the others out.
    fn meet(&mut self, prefix: Vec<u64>) -> Result<(), Stuck> {
        let entry = *prefix.last().expect("non-empty");
        let c = self.cluster(entry);
        let here: Vec<u64> = self
            .pending
            .iter()
            .map(|p| p.at())
            .filter(|&v| self.cluster(v) == c)
            .collect();
        let mut avoid = self.used.clone();
        avoid.extend(self.targets.iter().copied());
        avoid.extend(self.pending.iter().map(|p| p.at()));
        // The nearest target first (the paper takes any); if the others cannot all be pushed
        // out after it, the next one.
        let mut routes: Vec<Vec<u64>> = if here.contains(&entry) {
            vec![vec![entry]]
        } else {
            here.iter()
                .filter_map(|&g| self.bfs(entry, &avoid, |v| v == g))
                .collect()
        };
        let index = |st: &Stages, v: u64| {
            st.pending
                .iter()
                .find(|p| p.at() == v)
                .map_or(usize::MAX, |p| p.index)
        };
        routes.sort_by_key(|r| (r.len(), index(self, *r.last().expect("non-empty"))));
        let mut last_error = "a reached node is cut off from the targets of its cluster";
        for route in routes {
            let mut trial = self.clone();
            let joined = *route.last().expect("non-empty");
            let at = trial
                .pending
                .iter()
                .position(|p| p.at() == joined)
                .expect("pending");
            let p = trial.pending.remove(at);
            trial.finish(&prefix, &route, &p);
            let others: Vec<u64> = here.iter().copied().filter(|&v| v != joined).collect();
            match trial.push_out(&others) {
                Ok(()) => {
                    *self = trial;
                    return Ok(());
                }
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// Every reached node that shares its cluster with pending targets meets them.
    fn meet_local(&mut self) -> Result<(), Stuck> {
        let mut k = 0;
        while k < self.reached.len() {
            let end = *self.reached[k].last().expect("non-empty");
            let c = self.cluster(end);
            if self.pending.iter().any(|p| self.cluster(p.at()) == c) {
                let prefix = self.reached.remove(k);
                self.meet(prefix)?;
                k = 0;
            } else {
                k += 1;
            }
        }
        Ok(())
    }

    /// Push every pending target of `nodes` out of its cluster by a path of at most two edges
    /// (Lemma 3) into a distinct cluster that holds no target, nothing taken and is not C_s.
    fn push_out(&mut self, nodes: &[u64]) -> Result<(), Stuck> {
        let d = self.degree();
        for &v in nodes {
            let mut candidates: Vec<Vec<u64>> = vec![vec![v, self.cross(v)]];
            for i in 1..d {
                let n = self.neighbour(v, i);
                candidates.push(vec![v, n, self.cross(n)]);
            }
            let cs = self.cluster(self.s);
            // A cluster with a reached node still waiting is welcome (Stage 3's remark: "we
            // simply connect v'_j with u in C_u"), once.
            let pending_clusters: Vec<u64> =
                self.pending.iter().map(|q| self.cluster(q.at())).collect();
            // Clusters where a reached node waits first: the push then meets it there.
            let waiting: Vec<u64> = self
                .reached
                .iter()
                .map(|p| self.cluster(*p.last().expect("non-empty")))
                .collect();
            candidates.sort_by_key(|p| !waiting.contains(&self.cluster(p[p.len() - 1])));
            let free_path = |p: &Vec<u64>| {
                p[1..]
                    .iter()
                    .all(|w| !self.used.contains(w) && !self.is_target(*w))
                    && !self.pending.iter().any(|q| p[1..].contains(&q.at()))
            };
            let pick = candidates
                .iter()
                .find(|p| {
                    let end = self.cluster(p[p.len() - 1]);
                    free_path(p)
                        && end != cs
                        && !self.closed.contains(&end)
                        && !pending_clusters.contains(&end)
                })
                .or_else(|| {
                    // Last resort, where the networks are small: a cluster of s's type whose
                    // targets wait for Stage 3 (which joins one and pushes the others); only
                    // for a target not pushed before, into a cluster no path has used.
                    let kind = self.kind(self.s);
                    let fresh = self
                        .pending
                        .iter()
                        .any(|q| q.at() == v && q.back.len() == 1);
                    candidates.iter().find(|p| {
                        let end_node = p[p.len() - 1];
                        let end = self.cluster(end_node);
                        fresh
                            && free_path(p)
                            && end != cs
                            && self.kind(end_node) == kind
                            && !self.routed.contains(&end)
                            && self
                                .pending
                                .iter()
                                .filter(|q| self.cluster(q.at()) == end)
                                .all(|q| q.back.len() == 1)
                    })
                })
                .cloned();
            let path = pick.ok_or("no free cluster to push a target into (Lemma 3)")?;
            let at = self
                .pending
                .iter()
                .position(|q| q.at() == v)
                .expect("pending");
            let mut back: Vec<u64> = path.iter().rev().copied().collect();
            back.extend_from_slice(&self.pending[at].back[1..]);
            self.pending[at].back = back;
            self.used.extend(path[1..].iter().copied());
            let end = self.cluster(path[path.len() - 1]);
            self.closed.insert(end);
        }
        Ok(())
    }

    /// Stage 2: clusters of the other type.
    fn stage_2(&mut self) -> Result<(), Stuck> {
        self.meet_local()?;
        // Clusters of the other type with several pending targets and no reached node.
        let other = 1 - self.kind(self.s);
        loop {
            let crowded = self.pending.iter().map(|p| p.at()).find(|&v| {
                self.kind(v) == other
                    && self
                        .pending
                        .iter()
                        .filter(|q| self.cluster(q.at()) == self.cluster(v))
                        .count()
                        > 1
            });
            let Some(v) = crowded else { break };
            let c = self.cluster(v);
            let all: Vec<u64> = self
                .pending
                .iter()
                .map(|p| p.at())
                .filter(|&w| self.cluster(w) == c)
                .collect();
            self.push_out(&all)?;
            self.meet_local()?;
        }
        Ok(())
    }

    /// Stage 3: clusters of s's type holding pending targets; a reached node enters through the
    /// cross edge that leads there.
    fn stage_3(&mut self) -> Result<(), Stuck> {
        let kind = self.kind(self.s);
        // Clusters in the order Algorithm 4 rebuilds V: pushed targets first, then by index.
        while let Some(v) = self
            .pending
            .iter()
            .filter(|p| self.kind(p.at()) == kind)
            .min_by_key(|p| (p.back.len() == 1, p.index))
            .map(|p| p.at())
        {
            let target = self.rdn.triple(NodeId(v), self.level).cluster;
            let mut done = false;
            for k in 0..self.reached.len() {
                let u = *self.reached[k].last().expect("non-empty");
                let cu = self.cluster(u);
                if self.pending.iter().any(|p| self.cluster(p.at()) == cu) {
                    continue;
                }
                let tu = self.rdn.triple(NodeId(u), self.level);
                // w in C_u whose cross edge enters the target cluster.
                let w = self.rdn.with_triple(
                    NodeId(u),
                    self.level,
                    crate::topology::dualnet::Triple { node: target, ..tu },
                );
                let entry = self.cross(w.0);
                if self.used.contains(&entry) || self.targets.contains(&w.0) {
                    continue;
                }
                let mut avoid = self.used.clone();
                avoid.extend(self.targets.iter().copied());
                let Some(route) = self.route(u, w.0, &avoid) else {
                    continue;
                };
                let mut prefix = self.reached.remove(k);
                prefix.extend_from_slice(&route[1..]);
                prefix.push(entry);
                self.used.extend(prefix.iter().copied());
                let c = self.cluster(u);
                self.closed.insert(c);
                if let Some(at) = self.pending.iter().position(|p| p.at() == entry) {
                    let p = self.pending.remove(at);
                    self.finish(&prefix, &[entry], &p);
                    let c = self.cluster(entry);
                    let others: Vec<u64> = self
                        .pending
                        .iter()
                        .map(|p| p.at())
                        .filter(|&x| self.cluster(x) == c)
                        .collect();
                    self.push_out(&others)?;
                } else {
                    self.meet(prefix)?;
                }
                self.meet_local()?;
                done = true;
                break;
            }
            if !done {
                return Err("no reached node can enter a cluster of s's type (Stage 3)");
            }
        }
        Ok(())
    }

    /// Stage 4: pair the remaining reached nodes with the remaining targets.
    fn stage_4(&mut self) -> Result<(), Stuck> {
        // First the pairs that share a cluster.
        self.meet_local()?;
        // With fewer than d_0+k targets, the reached nodes left over are given back.
        while self.reached.len() > self.pending.len() {
            let spare = self.reached.pop().expect("more reached than pending");
            for v in &spare[1..] {
                self.used.remove(v);
            }
        }
        if self.reached.len() != self.pending.len() {
            return Err("reached nodes and targets do not pair up");
        }
        let n = self.rdn.nodes_at(self.level - 1);
        let kind = self.kind(self.s);
        let cs = self.cluster(self.s);
        while let Some(prefix) = self.reached.pop() {
            let p = self.pending.pop().expect("as many");
            let (u, v) = (*prefix.last().expect("non-empty"), p.at());
            let (tu, tv) = (
                self.rdn.triple(NodeId(u), self.level),
                self.rdn.triple(NodeId(v), self.level),
            );
            // RDN_modified_routing(u, v, C) through a fresh cluster C = (kind, c).
            let mut found = None;
            for c in 0..n {
                let via = self.rdn.with_triple(
                    NodeId(self.s),
                    self.level,
                    crate::topology::dualnet::Triple {
                        kind,
                        cluster: c,
                        node: 0,
                    },
                );
                let key = self.cluster(via.0);
                if key == cs || self.closed.contains(&key) {
                    continue;
                }
                let exit_u = self
                    .rdn
                    .with_triple(
                        NodeId(u),
                        self.level,
                        crate::topology::dualnet::Triple { node: c, ..tu },
                    )
                    .0;
                let exit_v = self
                    .rdn
                    .with_triple(
                        NodeId(v),
                        self.level,
                        crate::topology::dualnet::Triple { node: c, ..tv },
                    )
                    .0;
                let (in_u, in_v) = (self.cross(exit_u), self.cross(exit_v));
                let mut avoid = self.used.clone();
                avoid.extend(self.targets.iter().copied());
                avoid.extend(self.pending.iter().map(|q| q.at()));
                avoid.remove(&u);
                avoid.remove(&v);
                if [exit_u, exit_v, in_u, in_v]
                    .iter()
                    .any(|x| avoid.contains(x))
                {
                    continue;
                }
                let Some(first) = self.route(u, exit_u, &avoid) else {
                    continue;
                };
                let mut avoid2 = avoid.clone();
                avoid2.extend(first.iter().copied());
                let Some(middle) = self.route(in_u, in_v, &avoid2) else {
                    continue;
                };
                avoid2.extend(middle.iter().copied());
                avoid2.remove(&v);
                let Some(last) = self.route(exit_v, v, &avoid2) else {
                    continue;
                };
                let mut route = first;
                route.extend(middle);
                route.extend(last);
                found = Some(route);
                break;
            }
            let route = found.ok_or("no fresh cluster for RDN_modified_routing (Stage 4)")?;
            self.finish(&prefix, &route, &p);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 003, Example 1: RDN^2 of the 3-ring, s = (0,(0,0,0),(0,0,0)). The paper lists
    /// Paths #1 to #4 by their waypoints (the "=>" segments are routes inside a cluster); ours
    /// pass the same waypoints in the same order, and with shortest in-cluster routes the lengths
    /// are 7, 11, 9, 11 for t_1..t_4 (Paths #3, #4, #1, #2 of the paper, so 9, 11, 7, 11 in the
    /// paper's order). Bound 3 D_1 + 6 = 18.
    #[test]
    fn example_1() {
        let rdn = DualNet {
            base: Base::Ring3,
            k: 2,
        };
        let node = |text: &str| rdn.parse_triple(text).unwrap();
        let s = node("(0,(0,0,0),(0,0,0))");
        let targets = [
            node("(0,(1,0,0),(1,1,0))"),
            node("(0,(1,0,0),(0,1,1))"),
            node("(1,(1,1,1),(1,0,0))"),
            node("(1,(1,1,1),(0,2,2))"),
        ];
        let system = rdn_n2s(rdn, s, &targets).unwrap();
        assert_eq!(system.construction, Construction::Paper);
        let lengths: Vec<usize> = system.paths.iter().map(|p| p.len() - 1).collect();
        assert_eq!(lengths, [7, 11, 9, 11]);
        assert_eq!(bound(rdn), 18);
        // Waypoints of Paths #3, #4, #1, #2 (Stages 3 and 4), then the pushes of t_2, t_3, t_4.
        let waypoints: [&[&str]; 4] = [
            &[
                "(1,(1,0,0),(0,0,0))",
                "(1,(1,0,0),(1,0,0))",
                "(0,(1,0,0),(1,0,0))",
                "(0,(1,0,0),(1,1,0))",
            ],
            &[
                "(1,(0,0,0),(0,0,0))",
                "(1,(0,0,0),(0,0,1))",
                "(0,(0,0,1),(0,0,0))",
                "(0,(0,0,1),(0,1,1))",
                "(1,(0,1,1),(0,0,1))",
                "(1,(0,1,1),(1,0,0))",
                "(0,(1,0,0),(0,1,1))",
            ],
            &[
                "(1,(0,0,1),(0,0,0))",
                "(1,(0,0,1),(1,0,1))",
                "(0,(1,0,1),(0,0,1))",
                "(0,(1,0,1),(1,1,1))",
                "(1,(1,1,1),(1,0,1))",
                "(1,(1,1,1),(1,0,0))",
            ],
            &[
                "(1,(0,0,2),(0,0,0))",
                "(1,(0,0,2),(0,2,2))",
                "(0,(0,2,2),(0,0,2))",
                "(0,(0,2,2),(1,1,1))",
                "(1,(1,1,1),(0,2,2))",
            ],
        ];
        for (path, marks) in system.paths.iter().zip(waypoints) {
            let mut at = 0;
            for mark in marks {
                let v = node(mark);
                at += path[at..].iter().position(|&x| x == v).expect(mark);
            }
        }
    }
}
