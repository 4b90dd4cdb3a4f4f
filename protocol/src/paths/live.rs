//! Node-to-node paths around faults: as many internally node-disjoint paths from `s` to `d` as
//! the graph without its faulty nodes and links allows (the local connectivity of what is left,
//! its max flow), the paths a source that knows of dead neighbours and cut links sends on.
//!
//! The search is Edmonds and Karp's on the node-split graph, walked implicitly through
//! [`Topology::neighbours`] (nothing is materialised, so it serves every size): every interior
//! node has capacity one, every live link one each way, and each augmenting path is a shortest
//! one in the residual graph. It starts from the paths the caller already has and that the faults
//! leave whole (the guarded-action protocol's, or the table's), and searches around them, so an
//! unaffected copy keeps its path; only when the caller allows ([`Kept::MayMove`]: what it knows
//! of the faults has settled) may the search move them, when the maximum needs it. A source that
//! has heard of some faults may not know of others yet (a host lost takes a dozen nodes, whose
//! links are reported one by one): a whole path moved onto nodes it knows nothing of would risk a
//! copy the faults left alone. It stops at the bound the endpoints' live
//! degrees set, or when no augmenting path is left (then the flow is maximum: Ford and
//! Fulkerson), or when a search has visited `budget` nodes (then fewer than the maximum may be
//! returned, never a wrong path). On Q_n, if the budget left it with no path, Cube-FTN2N (thesis,
//! appendix A, Lemma 2.3: one fault-free path when at most n-1 nodes are faulty) gives one.
//! Every answer is passed through [`check`](Faults::check).

use super::cube::ftn2n::cube_ftn2n;
use super::system::Path;
use crate::topology::hypercube::Hypercube;
use crate::{NodeId, Topology};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

/// What is known dead: nodes, and links (each stored once, lower id first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    nodes: BTreeSet<NodeId>,
    links: BTreeSet<(NodeId, NodeId)>,
}

impl Faults {
    pub fn new() -> Faults {
        Faults::default()
    }

    pub fn node(&mut self, v: NodeId) {
        self.nodes.insert(v);
    }

    pub fn link(&mut self, a: NodeId, b: NodeId) {
        self.links.insert((a.min(b), a.max(b)));
    }

    /// The link between `a` and `b` is no longer dead.
    pub fn unlink(&mut self, a: NodeId, b: NodeId) {
        self.links.remove(&(a.min(b), a.max(b)));
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.links.is_empty()
    }

    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.iter().copied()
    }

    pub fn links(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        self.links.iter().copied()
    }

    pub fn is_dead(&self, v: NodeId) -> bool {
        self.nodes.contains(&v)
    }

    /// Whether the link a-b is dead, or one of its ends.
    pub fn blocks(&self, a: NodeId, b: NodeId) -> bool {
        self.links.contains(&(a.min(b), a.max(b))) || self.is_dead(a) || self.is_dead(b)
    }

    /// Whether `path` crosses a dead link or a dead node (its ends included).
    pub fn breaks(&self, path: &[NodeId]) -> bool {
        path.iter().any(|&v| self.is_dead(v)) || path.windows(2).any(|w| self.blocks(w[0], w[1]))
    }

    /// Check that `paths` run from `s` to `d` over real, live links, each a simple path, and
    /// share no node but `s` and `d`.
    pub fn check(&self, topology: Topology, s: NodeId, d: NodeId, paths: &[Path]) -> bool {
        let mut seen = HashSet::new();
        paths.iter().all(|p| {
            p.len() >= 2
                && p[0] == s
                && p[p.len() - 1] == d
                && !self.breaks(p)
                && p.windows(2).all(|w| topology.is_adjacent(w[0], w[1]))
                && p[1..p.len() - 1]
                    .iter()
                    .all(|&v| v != s && v != d && seen.insert(v))
        })
    }
}

/// How many nodes one augmenting search may visit, by default: the whole of Q_16 (2^16 nodes
/// times the two sides of a split node).
pub const BUDGET: usize = 1 << 17;

/// Whether [`around`] may move a path of its start that the faults leave whole.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Kept {
    /// The whole paths stay as they are; the search adds what it can around them (the max
    /// flow when no start path is whole, perhaps less otherwise).
    #[default]
    Stay,
    /// The search may move them when the max flow needs it.
    MayMove,
}

/// The most internally disjoint paths from `s` to `d` that avoid `faults`, shortest first,
/// starting from those of `start` that the faults leave whole (and are disjoint), which stay
/// (`Kept::Stay`), or stay unless the maximum needs them moved (`Kept::MayMove`). Empty
/// when `s` or `d` is dead, or nothing connects them. See the module.
pub fn around(
    topology: Topology,
    s: NodeId,
    d: NodeId,
    faults: &Faults,
    (start, kept): (&[Path], Kept),
    budget: usize,
) -> Vec<Path> {
    if s == d || faults.is_dead(s) || faults.is_dead(d) {
        return Vec::new();
    }
    let mut flow = Flow::new(s, d);
    for p in start {
        if faults.check(topology, s, d, std::slice::from_ref(p)) && flow.is_free(p) {
            flow.add(p);
        }
    }
    let live_degree = |v: NodeId| {
        topology
            .neighbours(v)
            .filter(|&w| !faults.blocks(v, w))
            .count()
    };
    let bound = live_degree(s).min(live_degree(d));
    // First around the kept paths as they are, then (if that falls short, and they may move)
    // letting the search move them: the max flow may need an unbroken path rerouted.
    for frozen in [true, false] {
        if !frozen && kept == Kept::Stay {
            break;
        }
        while flow.count() < bound && flow.augment(topology, faults, budget, frozen) {}
    }
    let mut paths = flow.paths();
    if paths.is_empty()
        && let Topology::Hypercube(q) = topology
    {
        paths = ftn2n_around(q, s, d, faults);
    }
    paths.sort_by_key(Vec::len);
    debug_assert!(faults.check(topology, s, d, &paths));
    paths
}

/// Cube-FTN2N's one path, with each dead link's lower end taken as the faulty node (an end
/// other than `s` and `d`), when that leaves at most n-1 faulty nodes.
fn ftn2n_around(q: Hypercube, s: NodeId, d: NodeId, faults: &Faults) -> Vec<Path> {
    let mut nodes: BTreeSet<NodeId> = faults.nodes().collect();
    for (a, b) in faults.links() {
        match [a, b].into_iter().find(|&v| v != s && v != d) {
            Some(v) => nodes.insert(v),
            // The link s-d itself: any other path avoids it.
            None => continue,
        };
    }
    let nodes: Vec<NodeId> = nodes.into_iter().collect();
    match cube_ftn2n(q, s, d, &nodes) {
        Ok(system) => system
            .paths
            .into_iter()
            .filter(|p| !faults.breaks(p))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A flow of unit paths from `s` to `d` on the node-split graph: the links it uses, each way,
/// and each interior node's one link in and one link out.
struct Flow {
    s: NodeId,
    d: NodeId,
    links: HashSet<(NodeId, NodeId)>,
    into: HashMap<NodeId, NodeId>,
    out_of: HashMap<NodeId, NodeId>,
}

/// A node of the split graph: the node's entry (`false`) or exit (`true`) side.
type Side = (NodeId, bool);

impl Flow {
    fn new(s: NodeId, d: NodeId) -> Flow {
        Flow {
            s,
            d,
            links: HashSet::new(),
            into: HashMap::new(),
            out_of: HashMap::new(),
        }
    }

    fn count(&self) -> usize {
        self.links.iter().filter(|(a, _)| *a == self.s).count()
    }

    fn is_free(&self, path: &[NodeId]) -> bool {
        path[1..path.len() - 1]
            .iter()
            .all(|v| !self.into.contains_key(v))
            && !(path.len() == 2 && self.links.contains(&(self.s, self.d)))
    }

    fn add(&mut self, path: &[NodeId]) {
        for w in path.windows(2) {
            self.push(w[0], w[1]);
        }
    }

    fn push(&mut self, a: NodeId, b: NodeId) {
        self.links.insert((a, b));
        if b != self.d {
            self.into.insert(b, a);
        }
        if a != self.s {
            self.out_of.insert(a, b);
        }
    }

    /// Take back one unit from the link a-b.
    fn cancel(&mut self, a: NodeId, b: NodeId) {
        self.links.remove(&(a, b));
        if self.into.get(&b) == Some(&a) {
            self.into.remove(&b);
        }
        if self.out_of.get(&a) == Some(&b) {
            self.out_of.remove(&a);
        }
    }

    /// One shortest augmenting path, applied; false when there is none (or the search ran out
    /// of budget). `frozen`: the paths already found stay as they are (the search only goes
    /// around them). On Q_n and EH, whose distance is in closed form, the search first looks
    /// only at paths at most 2, then 6, hops longer than the distance from s to d (a node whose
    /// depth plus its distance to d passes that is not entered): on Q_16 a whole breadth-first
    /// search visits most of the cube, a bounded one a sliver. Then unbounded.
    fn augment(
        &mut self,
        topology: Topology,
        faults: &Faults,
        budget: usize,
        frozen: bool,
    ) -> bool {
        let bounded = matches!(topology, Topology::Hypercube(_) | Topology::Exchanged(_));
        let h = if bounded {
            topology.distance(self.s, self.d)
        } else {
            0
        };
        let limits = if bounded {
            vec![Some(h + 2), Some(h + 6), None]
        } else {
            vec![None]
        };
        limits
            .into_iter()
            .any(|limit| self.search(topology, faults, budget, frozen, limit))
    }

    /// [`Flow::augment`] within `limit` links (depth plus distance to d), applied if found.
    fn search(
        &mut self,
        topology: Topology,
        faults: &Faults,
        budget: usize,
        frozen: bool,
        limit: Option<u32>,
    ) -> bool {
        let start: Side = (self.s, true);
        let d = self.d;
        let within =
            |depth: u32, w: NodeId| limit.is_none_or(|l| depth + topology.distance(w, d) <= l);
        // Each side reached: the side it was reached from, and how many links it is from s.
        let mut parent: HashMap<Side, (Side, u32)> = HashMap::from([(start, (start, 0))]);
        let mut queue = VecDeque::from([start]);
        let mut found = false;
        while let Some((v, exit)) = queue.pop_front() {
            if parent.len() > budget {
                return false;
            }
            let depth = parent[&(v, exit)].1;
            let mut next: Vec<(Side, u32)> = Vec::new();
            if exit {
                // Over a live link to a neighbour's entry, unless the link carries flow already.
                for w in topology.neighbours(v) {
                    if w != self.s
                        && !faults.blocks(v, w)
                        && !self.links.contains(&(v, w))
                        && within(depth + 1, w)
                    {
                        next.push(((w, false), depth + 1));
                    }
                }
                // Back through the node, undoing its unit.
                if !frozen && v != self.s && self.into.contains_key(&v) {
                    next.push(((v, false), depth));
                }
            } else if let Some(&from) = self.into.get(&v) {
                // The node is taken: only back along the link its unit came in by.
                if !frozen && within(depth + 1, from) {
                    next.push(((from, true), depth + 1));
                }
            } else {
                next.push(((v, true), depth));
            }
            for (side, depth) in next {
                if parent.contains_key(&side) {
                    continue;
                }
                parent.insert(side, ((v, exit), depth));
                if side == (self.d, false) {
                    found = true;
                    break;
                }
                queue.push_back(side);
            }
            if found {
                break;
            }
        }
        if !found {
            return false;
        }
        // Walk back from d, applying each arc.
        let mut at: Side = (self.d, false);
        let mut arcs = Vec::new();
        while at != start {
            let before = parent[&at].0;
            arcs.push((before, at));
            at = before;
        }
        for ((a, a_exit), (b, b_exit)) in arcs.into_iter().rev() {
            match (a_exit, b_exit) {
                // exit(a) -> entry(b): a link forward.
                (true, false) if a != b => self.push(a, b),
                // entry(a) -> exit(b): a link taken back.
                (false, true) if a != b => self.cancel(b, a),
                // Through a node, or back through it: the links around it say which.
                _ => {}
            }
        }
        true
    }

    /// The paths the flow makes, read from `s` along each unit.
    fn paths(&self) -> Vec<Path> {
        let mut paths = Vec::new();
        for &(a, b) in &self.links {
            if a != self.s {
                continue;
            }
            let mut path = vec![a, b];
            let mut at = b;
            while at != self.d {
                match self.out_of.get(&at) {
                    Some(&next) => {
                        path.push(next);
                        at = next;
                    }
                    None => break,
                }
            }
            if at == self.d {
                paths.push(path);
            }
        }
        paths.sort();
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::fallback;
    use proptest::prelude::*;

    /// Whether `paths` is a maximum: as many as the endpoints' live degrees allow, or as many
    /// as some cut of live nodes (Menger) separating s from d.
    fn is_maximum(t: Topology, s: NodeId, d: NodeId, faults: &Faults, paths: &[Path]) -> bool {
        let live = |v: NodeId| t.neighbours(v).filter(|&w| !faults.blocks(v, w)).count();
        paths.len() == live(s).min(live(d)) || small_cut_exists(t, s, d, faults, paths.len())
    }

    /// Whether some k interior live nodes separate s from d (with the direct link, if live,
    /// counted as one of the k).
    fn small_cut_exists(
        topology: Topology,
        s: NodeId,
        d: NodeId,
        faults: &Faults,
        k: usize,
    ) -> bool {
        let others: Vec<NodeId> = topology
            .nodes()
            .filter(|&v| v != s && v != d && !faults.is_dead(v))
            .collect();
        let direct = topology.is_adjacent(s, d) && !faults.blocks(s, d);
        let needed = k - usize::from(direct);
        let mut chosen = Vec::new();
        fn separates(
            topology: Topology,
            s: NodeId,
            d: NodeId,
            faults: &Faults,
            cut: &[NodeId],
        ) -> bool {
            let mut seen = HashSet::from([s]);
            let mut queue = VecDeque::from([s]);
            while let Some(v) = queue.pop_front() {
                for w in topology.neighbours(v) {
                    if (v == s && w == d) || faults.blocks(v, w) || cut.contains(&w) {
                        continue;
                    }
                    if w == d {
                        return false;
                    }
                    if seen.insert(w) {
                        queue.push_back(w);
                    }
                }
            }
            true
        }
        fn go(
            i: usize,
            needed: usize,
            others: &[NodeId],
            chosen: &mut Vec<NodeId>,
            test: &dyn Fn(&[NodeId]) -> bool,
        ) -> bool {
            if chosen.len() == needed {
                return test(chosen);
            }
            if i == others.len() {
                return false;
            }
            chosen.push(others[i]);
            if go(i + 1, needed, others, chosen, test) {
                return true;
            }
            chosen.pop();
            go(i + 1, needed, others, chosen, test)
        }
        go(0, needed, &others, &mut chosen, &|cut| {
            separates(topology, s, d, faults, cut)
        })
    }

    fn faults_of(dead: &[u64], cut: &[(u64, u64)]) -> Faults {
        let mut f = Faults::new();
        for &v in dead {
            f.node(NodeId(v));
        }
        for &(a, b) in cut {
            f.link(NodeId(a), NodeId(b));
        }
        f
    }

    #[test]
    fn with_no_fault_every_pair_of_small_networks_gets_its_connectivity() {
        for t in ["q:3", "q:4", "eh:1,2", "eh:2,2", "hhc:2", "mc:1,2"] {
            let t: Topology = t.parse().unwrap();
            for s in t.nodes() {
                for d in t.nodes().filter(|&d| d != s) {
                    let paths = around(t, s, d, &Faults::new(), (&[], Kept::MayMove), BUDGET);
                    assert_eq!(
                        paths.len(),
                        t.local_connectivity(s, d) as usize,
                        "{t} {s}->{d}"
                    );
                    assert!(Faults::new().check(t, s, d, &paths));
                }
            }
        }
    }

    #[test]
    fn every_pair_and_every_two_faults_of_q3_and_eh12_gets_the_max_flow() {
        // Exhaustive: every (s, d) and every choice of two dead nodes, or a dead node and a
        // cut link; the answer is checked against Menger's cut (no set of |answer| nodes may
        // fail to separate, and some set of |answer| does when fewer than the degree bound).
        for t in ["q:3", "eh:1,2"] {
            let t: Topology = t.parse().unwrap();
            let nodes: Vec<NodeId> = t.nodes().collect();
            let links: Vec<(NodeId, NodeId)> = nodes
                .iter()
                .flat_map(|&a| t.neighbours(a).filter(move |&b| a < b).map(move |b| (a, b)))
                .collect();
            let mut cases = Vec::new();
            for (i, &a) in nodes.iter().enumerate() {
                for &b in &nodes[i + 1..] {
                    cases.push(faults_of(&[a.0, b.0], &[]));
                }
                for &(x, y) in &links {
                    cases.push(faults_of(&[a.0], &[(x.0, y.0)]));
                }
            }
            for faults in &cases {
                for &s in &nodes {
                    for &d in &nodes {
                        if s == d || faults.is_dead(s) || faults.is_dead(d) {
                            continue;
                        }
                        let paths = around(t, s, d, faults, (&[], Kept::MayMove), BUDGET);
                        assert!(faults.check(t, s, d, &paths), "{t} {s}->{d} {faults:?}");
                        assert!(
                            is_maximum(t, s, d, faults, &paths),
                            "{t} {s}->{d} {faults:?}: {} paths, fewer than the max flow",
                            paths.len()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn kept_paths_stay_and_the_exact_flow_agrees_on_eh22() {
        let t: Topology = "eh:2,2".parse().unwrap();
        let (s, d) = (NodeId(0), NodeId(t.node_count() - 1));
        let start = fallback::node_to_node(t, s, d, t.local_connectivity(s, d) as usize).unwrap();
        // Kill an inner node of the first path: the others are kept as they were.
        let dead = start[0][1];
        let faults = faults_of(&[dead.0], &[]);
        let paths = around(t, s, d, &faults, (&start, Kept::MayMove), BUDGET);
        for p in &start[1..] {
            assert!(paths.contains(p), "{p:?} kept");
        }
        assert!(is_maximum(t, s, d, &faults, &paths));
        assert!(faults.check(t, s, d, &paths));
    }

    #[test]
    fn paths_whole_stay_while_news_of_a_lost_host_comes_in() {
        // EH(2,2) with a host of eleven nodes lost (the swarm test's placement), of which the
        // source 18 has heard only that the link 19-23 is dead: two of the three constructed
        // paths to 21 avoid the host. Moving them for a third path (the max flow of what it
        // knows) takes both through nodes of the host it has not heard of.
        let t: Topology = "eh:2,2".parse().unwrap();
        let lost = [6, 8, 9, 11, 13, 14, 15, 22, 23, 24, 30].map(NodeId);
        let (s, d) = (NodeId(18), NodeId(21));
        let start = crate::paths::guarded::disjoint_paths(t, s, d)
            .unwrap()
            .paths;
        let avoids = |p: &Path| p[1..p.len() - 1].iter().all(|v| !lost.contains(v));
        let promised: Vec<&Path> = start.iter().filter(|p| avoids(p)).collect();
        assert_eq!(promised.len(), 2, "{start:?}");
        let faults = faults_of(&[], &[(19, 23)]);
        let stay = around(t, s, d, &faults, (&start, Kept::Stay), BUDGET);
        assert!(faults.check(t, s, d, &stay));
        for p in &promised {
            assert!(stay.contains(p), "{p:?} stays: {stay:?}");
        }
        let moved = around(t, s, d, &faults, (&start, Kept::MayMove), BUDGET);
        assert!(faults.check(t, s, d, &moved));
        assert!(is_maximum(t, s, d, &faults, &moved));
        assert!(moved.len() > stay.len(), "{moved:?}");
        assert!(
            moved.iter().filter(|p| avoids(p)).count() < promised.len(),
            "the max flow of what the source knows runs through the host: {moved:?}"
        );
    }

    #[test]
    fn dead_ends_and_a_cut_off_destination_give_nothing() {
        let t: Topology = "q:3".parse().unwrap();
        let (s, d) = (NodeId(0), NodeId(7));
        assert!(around(t, s, d, &faults_of(&[0], &[]), (&[], Kept::MayMove), BUDGET).is_empty());
        assert!(around(t, s, d, &faults_of(&[7], &[]), (&[], Kept::MayMove), BUDGET).is_empty());
        assert!(
            around(
                t,
                s,
                d,
                &faults_of(&[3, 5, 6], &[]),
                (&[], Kept::MayMove),
                BUDGET
            )
            .is_empty()
        );
        let one = around(
            t,
            s,
            d,
            &faults_of(&[3, 5], &[]),
            (&[], Kept::MayMove),
            BUDGET,
        );
        assert_eq!(one.len(), 1);
        assert!(one[0].contains(&NodeId(6)));
    }

    #[test]
    fn a_spent_budget_on_q_n_still_gets_cube_ftn2n_path() {
        let t: Topology = "q:10".parse().unwrap();
        let (s, d) = (NodeId(0), NodeId(0b11_1111_1111));
        let faults = faults_of(&[1, 2, 4], &[(8, 0)]);
        let paths = around(t, s, d, &faults, (&[], Kept::MayMove), 1);
        assert_eq!(paths.len(), 1);
        assert!(faults.check(t, s, d, &paths));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// On Q_12 and EH(5,6), with up to 12 random dead nodes and cut links, the answer is
        /// disjoint and live, and reaches the degree bound unless a cut of its size exists
        /// among the endpoints' live neighbours (the only small cuts random faults make).
        #[test]
        fn large_networks_get_checked_paths_up_to_the_bound(
            eh in any::<bool>(),
            s in any::<u64>(),
            d in any::<u64>(),
            dead in proptest::collection::vec(any::<u64>(), 0..12),
            cut in proptest::collection::vec((any::<u64>(), 0u32..12), 0..12),
        ) {
            let t: Topology = if eh { "eh:5,6" } else { "q:12" }.parse().unwrap();
            let count = t.node_count();
            let (s, d) = (NodeId(s % count), NodeId(d % count));
            prop_assume!(s != d);
            let mut faults = Faults::new();
            for v in dead {
                let v = NodeId(v % count);
                if v != s && v != d {
                    faults.node(v);
                }
            }
            for (v, i) in cut {
                let v = NodeId(v % count);
                if let Some(w) = t.neighbours(v).nth(i as usize % t.degree(v) as usize) {
                    faults.link(v, w);
                }
            }
            let start = crate::paths::guarded::disjoint_paths(t, s, d).unwrap().paths;
            let paths = around(t, s, d, &faults, (&start, Kept::MayMove), BUDGET);
            prop_assert!(faults.check(t, s, d, &paths));
            let live = |v: NodeId| t.neighbours(v).filter(|&w| !faults.blocks(v, w)).count();
            prop_assert!(paths.len() <= live(s).min(live(d)));
            // Each dead node or link takes at most one path away.
            let faults_count = faults.nodes().count() + faults.links().count();
            prop_assert!(paths.len() + faults_count >= t.local_connectivity(s, d) as usize);
        }
    }
}
