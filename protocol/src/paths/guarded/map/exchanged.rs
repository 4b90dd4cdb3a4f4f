//! The map for EH(s,t): k disjoint routes whose longest is the exact optimum L*.
//!
//! Everything is built in a *canonical frame*: the source is node 0 and s-type. A t-type source is
//! handled through the mirror EH(t,s) (`(a,b,c) -> (b,a,1-c)`), and translating every id by XOR
//! with the source is an automorphism; the per-hop rule of [`super::super::route`] commutes with
//! both, so plans built in the frame are mapped back id by id.
//!
//! In the frame, `alpha` and `beta` are D's `a` and `b` fields: the positions where S and D
//! differ. docs/protocol.md gives the constructions below with their disjointness arguments and
//! the optimality argument; the exhaustive tests compare every pair with a brute-force L*.

use super::{Plan, cyclic_prev};
use crate::NodeId;
use crate::paths::guarded::route::Anchors;
use crate::topology::bits::BitIter;
use crate::topology::exchanged::Exchanged;

pub(super) fn map(eh: Exchanged, src: NodeId, dst: NodeId) -> Vec<Plan> {
    let frame = Frame::new(eh, src);
    let d = frame.to_canonical(dst);
    let mut plans = if d.0 & 1 == 0 {
        same_type(frame.canonical, d)
    } else {
        mixed_type(frame.canonical, d)
    };
    // In the frame the source is 0 and s-type: its ports are the dummy edge (bit 0) and the `a`
    // bits. Mirrored or not, the real ports keep that order (dummy first, then by position).
    for plan in &mut plans {
        *plan = frame.to_real(*plan);
    }
    plans
}

/// The canonical frame of one source.
struct Frame {
    real: Exchanged,
    canonical: Exchanged,
    mirrored: bool,
    /// The source's id in the (possibly mirrored) topology; XOR with it moves the source to 0.
    offset: u64,
}

impl Frame {
    fn new(real: Exchanged, src: NodeId) -> Frame {
        let mirrored = src.0 & 1 == 1;
        let (canonical, offset) = if mirrored {
            (real.mirrored(), real.mirror(src).0)
        } else {
            (real, src.0)
        };
        Frame {
            real,
            canonical,
            mirrored,
            offset,
        }
    }

    fn to_canonical(&self, v: NodeId) -> NodeId {
        let v = if self.mirrored {
            self.real.mirror(v)
        } else {
            v
        };
        NodeId(v.0 ^ self.offset)
    }

    fn node_to_real(&self, w: NodeId) -> NodeId {
        let w = NodeId(w.0 ^ self.offset);
        if self.mirrored {
            self.canonical.mirror(w)
        } else {
            w
        }
    }

    fn to_real(&self, plan: Plan) -> Plan {
        let anchors = if self.mirrored {
            Anchors {
                fa: plan.anchors.fb,
                fb: plan.anchors.fa,
            }
        } else {
            plan.anchors
        };
        Plan {
            first: self.node_to_real(plan.first),
            pd: self.node_to_real(plan.pd),
            via: plan.via.map(|w| self.node_to_real(w)),
            anchors,
        }
    }
}

fn anchors(fa: u32, fb: u32) -> Anchors {
    Anchors {
        fa: fa as u8,
        fb: fb as u8,
    }
}

/// Both ends s-type: k = s+1, every neighbour of S and of D carries a message.
///
/// Let `P_m` be the Saad-Schultz paths of the s-subcube from `a = 0` to `a = alpha` (see
/// [`super::hypercube`]), `A` the positions of `alpha`, `p0` its lowest.
/// * `beta = 0` (same s-subcube): the `s` paths `P_m` inside it, and the *subcube switch*: the
///   dummy neighbour of S crosses to `b = e_g` (`g` = nextPosDummy), routes `alpha` there, and
///   comes back to D's dummy neighbour. Longest `h + 6`, which is L*.
/// * `alpha = 0`: S's dummy neighbour runs straight through its t-subcube to D's dummy
///   neighbour; the message on `a_i` crosses into t-subcube `a = e_i`. Longest `d + 2` = L*.
/// * otherwise every message follows `P_m` in S's subcube up to its last inner node, crosses,
///   routes `beta`, and crosses into D's subcube next to D. `P_{p0}` is split in two: its
///   message goes all the way to `alpha` and enters D through D's dummy neighbour, and S's dummy
///   neighbour routes `beta` first and then follows `P_{p0}` in D's subcube. Longest `d` when
///   `|A| = s`, else `d + 2`: L*.
fn same_type(eh: Exchanged, d: NodeId) -> Vec<Plan> {
    let (alpha, beta) = (eh.a_of(d), eh.b_of(d));
    let s_star = eh.node(0, 0, 1);
    let a_neighbour = |i: u32| eh.node(1 << i, 0, 0);
    let enter_by_a = |i: u32| d.flip(eh.a_bit(i));
    let mut plans = Vec::with_capacity(eh.s as usize + 1);

    // S*'s message first: the plans are ordered by the bit their first hop flips.
    let (dummy_via, dummy_pd, dummy_fa) = if beta == 0 {
        (
            Some(eh.node(0, 1 << next_pos_dummy(eh, beta), 0)),
            eh.node(alpha, 0, 1),
            0,
        )
    } else if alpha == 0 {
        (None, eh.node(0, beta, 1), 0)
    } else {
        let p_last = 63 - alpha.leading_zeros();
        (None, enter_by_a(p_last), alpha.trailing_zeros())
    };
    plans.push(Plan {
        first: s_star,
        via: dummy_via,
        pd: dummy_pd,
        anchors: anchors(dummy_fa, 0),
    });
    for i in 0..eh.s {
        let first = a_neighbour(i);
        let pd = if first == d {
            NodeId(0)
        } else if beta != 0 && alpha != 0 && i == alpha.trailing_zeros() {
            // P_{p0}'s message runs all of alpha and enters D through D's dummy neighbour.
            eh.node(alpha, beta, 1)
        } else if alpha >> i & 1 == 1 {
            enter_by_a(cyclic_prev(alpha, i))
        } else {
            enter_by_a(i)
        };
        plans.push(Plan {
            first,
            pd,
            via: None,
            anchors: anchors(i, 0),
        });
    }
    plans
}

/// The paper's nextPosDummy: the bit the subcube switch flips, a `b` position where S and D
/// agree (the lowest). The paper's `0 < j` excludes position 0 and its fallback "2" is a bit the
/// dummy neighbour often cannot flip; in the one case that needs a switch (`beta = 0`) every
/// `b` position agrees, so position 0 always exists.
fn next_pos_dummy(eh: Exchanged, beta: u64) -> u32 {
    (!beta & ((1u64 << eh.t) - 1)).trailing_zeros()
}

/// S s-type, D t-type: k = min(s,t)+1.
///
/// A route with one dummy crossing must cross at `(alpha, b = 0)`: at most one route, the
/// *direct* one, has that shape. Every other route crosses three times: S's s-subcube up to
/// `x`, t-subcube `a = x` up to `y`, s-subcube `b = y` up to `alpha`, D's t-subcube to D. Its
/// turning point is `W = (x, y, 0)`. Choosing `x = e_i` for a first hop on `a_i` (or `x = 0` from
/// S's dummy neighbour) and `y = beta ^ e_j` for a last hop on `b_j` (or `y = beta` into D's dummy
/// neighbour) makes the four pieces of different routes lie in different subcubes, so any
/// pairing of first hops with last hops is disjoint. The length of such a route is
/// `d + 2 + 2 * (bad ends)`, an end being bad when its hop flips a bit that must be flipped back.
///
/// [`Side`] lists, for each end, its ports and their costs under each choice for the direct
/// route; the cheapest combination is chosen and bad ends are paired with good ones.
fn mixed_type(eh: Exchanged, d: NodeId) -> Vec<Plan> {
    let (alpha, beta) = (eh.a_of(d), eh.b_of(d));
    let source = Side {
        n: eh.s,
        diff: alpha,
    };
    let target = Side {
        n: eh.t,
        diff: beta,
    };
    let k = eh.connectivity();

    let mut best: Option<((u32, u32), Choice, Choice)> = None;
    for s_choice in source.choices().into_iter().flatten() {
        for d_choice in target.choices().into_iter().flatten() {
            if (s_choice.direct == Direct::Absent) != (d_choice.direct == Direct::Absent) {
                continue;
            }
            if let Some(key) = cost(k, s_choice, d_choice) {
                if best.as_ref().is_none_or(|(b, ..)| key < *b) {
                    best = Some((key, s_choice, d_choice));
                }
            }
        }
    }
    let (_, s_choice, d_choice) = best.expect("the all-good choice is always feasible");

    let first = |port: Port| match port {
        Port::Flip(i) | Port::FlipVia(i, _) => eh.node(1 << i, 0, 0),
        Port::Dummy => eh.node(0, 0, 1),
    };
    let x = |port: Port| match port {
        Port::Flip(i) => 1 << i,
        Port::FlipVia(i, q) => 1 << i | 1 << q,
        Port::Dummy => 0,
    };
    let pd = |port: Port| match port {
        Port::Flip(j) | Port::FlipVia(j, _) => eh.node(alpha, beta ^ 1 << j, 1),
        Port::Dummy => eh.node(alpha, beta, 0),
    };
    let y = |port: Port| match port {
        Port::Flip(j) => beta ^ 1 << j,
        Port::FlipVia(j, g) => beta ^ 1 << j ^ 1 << g,
        Port::Dummy => beta,
    };

    let mut plans = Vec::with_capacity(k as usize);
    let mut three_crossings = k;
    if let (Some(sp), Some(dp)) = (
        source.direct_port(s_choice.direct),
        target.direct_port(d_choice.direct),
    ) {
        // A bad end's extra bit must stay set across the other bits: the source side flips it
        // back last (anchor just above it), the destination side flips it first.
        let fa = match (s_choice.direct, sp) {
            (Direct::Bad, Port::Flip(q)) => (q + 1) % eh.s,
            _ => 0,
        };
        let fb = match (d_choice.direct, dp) {
            (Direct::Bad, Port::Flip(g)) => g,
            _ => 0,
        };
        plans.push(Plan {
            first: first(sp),
            pd: pd(dp),
            via: None,
            anchors: anchors(fa, fb),
        });
        three_crossings -= 1;
    }
    // Cheapest source ports with the dearest destination ports: the source side fills the
    // turning point's `x` in order, the destination side its `y` in reverse.
    let first_routed = plans.len();
    for sp in source.ports(s_choice.direct).take(three_crossings as usize) {
        plans.push(Plan {
            first: first(sp),
            via: Some(eh.node(x(sp), 0, 0)),
            pd: NodeId(0),
            anchors: anchors(0, 0),
        });
    }
    let routed = plans[first_routed..].iter_mut().rev();
    for (plan, dp) in routed.zip(target.ports(d_choice.direct)) {
        plan.pd = pd(dp);
        plan.via = plan.via.map(|w| NodeId(w.0 | eh.node(0, y(dp), 0).0));
    }
    plans.sort_unstable_by_key(|plan| plan.first.0.trailing_zeros());
    plans
}

/// (longest extra in units of 2 hops, total extra): the lexicographic cost of a choice, or
/// `None` when a side has too few ports.
fn cost(k: u32, s: Choice, d: Choice) -> Option<(u32, u32)> {
    let direct = s.direct != Direct::Absent;
    let routes = k - direct as u32;
    if s.zeros + s.ones < routes || d.zeros + d.ones < routes {
        return None;
    }
    let bad_s = routes - s.zeros.min(routes);
    let bad_d = routes - d.zeros.min(routes);
    let both_bad = (bad_s + bad_d).saturating_sub(routes);
    let worst_three = 1 + if both_bad > 0 {
        2
    } else {
        (bad_s + bad_d > 0) as u32
    };
    let direct_cost = if direct {
        s.direct.cost() + d.direct.cost()
    } else {
        0
    };
    Some((
        worst_three.max(direct_cost),
        direct_cost + routes + bad_s + bad_d,
    ))
}

/// How one end of a mixed-type pair is left: the source's s-subcube (`n = s`, `diff = alpha`)
/// or, mirrored, the destination's t-subcube (`n = t`, `diff = beta`).
#[derive(Clone, Copy)]
struct Side {
    n: u32,
    diff: u64,
}

/// A port of a side: the hop between the end node and the rest of a route.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Port {
    /// The edge flipping position `i` of the side's own subsequence.
    Flip(u32),
    /// The dummy edge.
    Dummy,
    /// The edge flipping `i`, with the turning point pushed one flip `q` further. Used only when
    /// `i` is the one differing position and there is no direct route: the turning point `e_i`
    /// would otherwise be the direct route's crossing.
    FlipVia(u32, u32),
}

/// What the direct (one-crossing) route does at this side.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direct {
    /// Leaves by a hop that is progress (cost 0).
    Good,
    /// Leaves by a hop flipping an agreeing position, flipped back later (cost 1).
    Bad,
    /// There is no direct route.
    Absent,
}

impl Direct {
    fn cost(self) -> u32 {
        (self == Direct::Bad) as u32
    }
}

/// One way to use a side's ports: the direct route's port, and how many ports remain for the
/// three-crossing routes at cost 0 and at cost 1.
#[derive(Clone, Copy, Debug)]
struct Choice {
    direct: Direct,
    zeros: u32,
    ones: u32,
}

impl Side {
    fn h(self) -> u32 {
        self.diff.count_ones()
    }

    fn lowest_differing(self) -> u32 {
        self.diff.trailing_zeros()
    }

    fn lowest_agreeing(self) -> Option<u32> {
        let agreeing = !self.diff & ((1u64 << self.n) - 1);
        (agreeing != 0).then(|| agreeing.trailing_zeros())
    }

    fn choices(self) -> [Option<Choice>; 3] {
        let (n, h) = (self.n, self.h());
        let choice = |direct, zeros, ones| {
            Some(Choice {
                direct,
                zeros,
                ones,
            })
        };
        match h {
            // The end nodes are joined by the dummy edge of this side: the direct route leaves
            // by it, and every other port flips a bit that must come back.
            0 => [choice(Direct::Good, 0, n), None, None],
            // The one differing position `p`: a three-crossing route leaving by `p` would turn
            // at `e_p`, the direct route's crossing, so it turns one flip further (FlipVia).
            1 => [
                choice(Direct::Good, 1, n - 1),
                (n >= 2).then(|| Choice {
                    direct: Direct::Bad,
                    zeros: 1,
                    ones: n - 2,
                }),
                choice(Direct::Absent, 1, n - 1 + (n >= 2) as u32),
            ],
            _ => [
                choice(Direct::Good, h, n - h),
                (n > h).then(|| Choice {
                    direct: Direct::Bad,
                    zeros: h + 1,
                    ones: n - h - 1,
                }),
                choice(Direct::Absent, h + 1, n - h),
            ],
        }
    }

    /// The direct route's port.
    fn direct_port(self, direct: Direct) -> Option<Port> {
        match direct {
            Direct::Good if self.h() == 0 => Some(Port::Dummy),
            Direct::Good => Some(Port::Flip(self.lowest_differing())),
            Direct::Bad => self.lowest_agreeing().map(Port::Flip),
            Direct::Absent => None,
        }
    }

    /// The ports left for three-crossing routes, cheapest first.
    fn ports(self, direct: Direct) -> impl Iterator<Item = Port> {
        let h = self.h();
        let all = (1u64 << self.n) - 1;
        let lowest_agreeing = self.lowest_agreeing();
        // Cost-0 flips, whether the dummy edge is a cost-0 port, cost-1 flips, and FlipVia.
        let (zero_flips, dummy, one_flips, flip_via) = match (h, direct) {
            (0, _) => (0, false, all, None),
            (1, Direct::Good) => (0, true, all & !self.diff, None),
            (1, Direct::Bad) => (0, true, all & !self.diff & !bit(lowest_agreeing), None),
            (1, _) => (
                0,
                true,
                all & !self.diff,
                lowest_agreeing.map(|q| Port::FlipVia(self.lowest_differing(), q)),
            ),
            (_, Direct::Good) => (self.diff & (self.diff - 1), true, all & !self.diff, None),
            (_, Direct::Bad) => (
                self.diff,
                true,
                all & !self.diff & !bit(lowest_agreeing),
                None,
            ),
            (_, Direct::Absent) => (self.diff, true, all & !self.diff, None),
        };
        BitIter(zero_flips)
            .map(Port::Flip)
            .chain(dummy.then_some(Port::Dummy))
            .chain(BitIter(one_flips).map(Port::Flip))
            .chain(flip_via)
    }
}

/// The mask of an optional position.
fn bit(position: Option<u32>) -> u64 {
    position.map_or(0, |p| 1 << p)
}
