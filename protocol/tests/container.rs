//! HC-CONTAINER (seed 001) against the independent checker: every constrained pair of Q_1..Q_8
//! for every i, the k claim against max flow in the constrained subgraph, the paper's Table 1,
//! one test per error of the paper (docs/cube-algorithms.md, "HC-CONTAINER"), and random pairs up
//! to Q_32.

mod common;

use common::{check_family, induced_max_flow};
use cuberoute_protocol::NodeId;
use cuberoute_protocol::paths::PathError;
use cuberoute_protocol::paths::cube::container::{
    Case, Detour, Reduction, Special, container_width, hc_container, hc_container_traced, hc_spr,
};
use cuberoute_protocol::topology::hypercube::Hypercube;
use proptest::prelude::*;

fn q(n: u32) -> Hypercube {
    Hypercube { n }
}

fn raw(paths: &[Vec<NodeId>]) -> Vec<Vec<u64>> {
    paths
        .iter()
        .map(|p| p.iter().map(|v| v.0).collect())
        .collect()
}

fn constrained(n: u32, i: u32) -> Vec<u64> {
    (0..1u64 << n)
        .filter(|v| v.count_ones() == i || v.count_ones() == i + 1)
        .collect()
}

/// Everything Theorem 4 promises, plus normalisation (one neighbour of each end per path).
fn check(n: u32, i: u32, s: u64, d: u64) -> Result<(usize, Vec<Reduction>), String> {
    let (paths, trace) =
        hc_container_traced(q(n), i, NodeId(s), NodeId(d)).map_err(|e| format!("refused: {e}"))?;
    let paths = raw(&paths);
    let k = container_width(n, i);
    let ctx = || {
        format!(
            "Q_{n} gamma_{i} {s:0w$b} -> {d:0w$b}: {paths:?}",
            w = n as usize
        )
    };
    if paths.len() != k {
        return Err(format!("{} paths, expected {k}, {}", paths.len(), ctx()));
    }
    for p in &paths {
        if p[0] != s || *p.last().unwrap() != d {
            return Err(format!("wrong ends, {}", ctx()));
        }
        if p.iter()
            .any(|v| v.count_ones() != i && v.count_ones() != i + 1)
        {
            return Err(format!("violates gamma_{i}, {}", ctx()));
        }
        let inner = &p[1..p.len() - 1];
        let near_s = inner.iter().filter(|v| (*v ^ s).count_ones() == 1).count();
        let near_d = inner.iter().filter(|v| (*v ^ d).count_ones() == 1).count();
        if p.len() > 2 && (near_s != 1 || near_d != 1 || (p[1] ^ s).count_ones() != 1) {
            return Err(format!("not normalised, {}", ctx()));
        }
    }
    let longest = check_family(n, &paths, &[s, d]).map_err(|e| format!("{e}, {}", ctx()))?;
    if longest > n as usize + 3 * k {
        return Err(format!("longer than n+3k, {}", ctx()));
    }
    // The trace: s' = s ^ 2^z ^ 2^δ, z and δ free (never an earlier δ), stubs <= n-i-1.
    let mut fixed: Vec<u32> = Vec::new();
    for r in &trace {
        if r.s_prime.0 != r.s.0 ^ (1 << r.z) ^ (1 << r.delta)
            || fixed.contains(&r.z)
            || fixed.contains(&r.delta)
        {
            return Err(format!("bad reduction {r:?}, {}", ctx()));
        }
        if r.inspected > 2 * n as usize + 5 * k {
            return Err(format!("level inspects {} nodes, {}", r.inspected, ctx()));
        }
        fixed.push(r.delta);
    }
    Ok((longest, trace))
}

fn bin(s: &str) -> u64 {
    u64::from_str_radix(s, 2).unwrap()
}

#[test]
fn every_pair_of_q1_to_q8_for_every_constraint() {
    let mut specials = [0usize; 3];
    let mut detours = [0usize; 2];
    let mut more_stubs_than_k_minus_1 = 0;
    let mut naive_collisions = 0;
    let mut pairs = 0;
    for n in 1..=8u32 {
        for i in 0..n {
            let nodes = constrained(n, i);
            let k = container_width(n, i);
            let mut worst = 0;
            for &s in &nodes {
                for &d in nodes.iter().filter(|&&d| d != s) {
                    let (longest, trace) = check(n, i, s, d).unwrap();
                    worst = worst.max(longest);
                    pairs += 1;
                    for r in &trace {
                        match r.special {
                            Some(Special::SPrimeIsD) => specials[0] += 1,
                            Some(Special::DIsSSecond) => specials[1] += 1,
                            Some(Special::WIsSSecond) => specials[2] += 1,
                            None => {}
                        }
                        match r.detour {
                            Some(Detour::ViaSSecond) => detours[0] += 1,
                            Some(Detour::ViaStub(_)) => detours[1] += 1,
                            None => {}
                        }
                        more_stubs_than_k_minus_1 += (r.stubs_used.len() > r.k - 1) as usize;
                        naive_collisions += r.naive_lift_would_collide as usize;
                    }
                }
            }
            if n == 8 {
                println!(
                    "Q_8 gamma_{i}: k {k}, longest {worst}, bound n+3k = {}",
                    n as usize + 3 * k
                );
            }
        }
    }
    println!(
        "{pairs} pairs; specials s'=d, d=s'', w=s'': {specials:?}; detours via s'', via stub: {detours:?}"
    );
    assert!(
        specials.iter().all(|&c| c > 0),
        "each omitted case occurs: {specials:?}"
    );
    assert!(
        detours.iter().all(|&c| c > 0),
        "both detours occur: {detours:?}"
    );
    assert!(more_stubs_than_k_minus_1 > 0);
    assert!(naive_collisions > 0);
}

/// The k claim: k = min(n-i, i+1) is the connectivity of the gamma_i subgraph (the minimum of
/// the max flow over the pairs); for a given pair the max flow can be larger, and HC-CONTAINER
/// still returns k paths (not a maximum set for that pair).
#[test]
fn k_is_the_max_flow_of_the_constrained_subgraph() {
    for n in 2..=8u32 {
        for i in 0..n {
            let nodes = constrained(n, i);
            let k = container_width(n, i) as u32;
            let keep = |v: u64| v.count_ones() == i || v.count_ones() == i + 1;
            let mut min = u32::MAX;
            let mut above = 0;
            for (a, &s) in nodes.iter().enumerate() {
                for &d in &nodes[a + 1..] {
                    let flow = induced_max_flow(n, keep, s, d);
                    assert!(flow >= k, "Q_{n} gamma_{i} {s} {d}: flow {flow} < k {k}");
                    min = min.min(flow);
                    above += (flow > k) as usize;
                }
            }
            assert_eq!(min, k, "Q_{n} gamma_{i}");
            if n == 8 {
                println!(
                    "Q_8 gamma_{i}: connectivity {min} = k; {above} of {} pairs have more",
                    nodes.len() * (nodes.len() - 1) / 2
                );
            }
        }
    }
}

/// Seed 001, §3.3 and Table 1: Q_5, gamma_2, s = 11010, d = 10101.
#[test]
fn table_1_is_reproduced() {
    let (paths, trace) =
        hc_container_traced(q(5), 2, NodeId(bin("11010")), NodeId(bin("10101"))).unwrap();
    let expected: Vec<Vec<u64>> = [
        "11010 10010 10011 10001 10101",
        "11010 01010 01110 00110 00111 00101 10101",
        "11010 11000 11100 10100 10101",
    ]
    .iter()
    .map(|p| p.split(' ').map(bin).collect())
    .collect();
    assert_eq!(raw(&paths), expected);
    // Columns n, 2^δ, s, d, s', d' of Table 1 (its last two rows complete the first two).
    let rows: Vec<(u32, u64, u64, u64, u64, Option<u64>)> = trace
        .iter()
        .map(|r| {
            (
                r.dimension,
                1 << r.delta,
                r.s.0,
                r.d.0,
                r.s_prime.0,
                r.d_prime.map(|v| v.0),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                5,
                8,
                bin("11010"),
                bin("10101"),
                bin("10110"),
                Some(bin("11100"))
            ),
            (
                4,
                2,
                bin("10110"),
                bin("10101"),
                bin("10101"),
                Some(bin("00111"))
            ),
        ]
    );
    assert_eq!(trace[0].case, Case::Case2);
    assert_eq!((trace[0].z, trace[1].z), (2, 0));
    assert_eq!(trace[1].special, Some(Special::SPrimeIsD));
}

/// Error 1: z must be a free dimension, and ¬s must be masked. At level 4 of Table 1 the literal
/// ⌊log ¬s⌋ names dimension 3, fixed by level 5's δ; unmasked it names bit 63.
#[test]
fn error_1_z_is_chosen_among_free_dimensions() {
    let (_, trace) =
        hc_container_traced(q(5), 2, NodeId(bin("11010")), NodeId(bin("10101"))).unwrap();
    let s = trace[1].s.0;
    let literal_masked = 63 - (!s & 0b11111).leading_zeros();
    let literal_unmasked = 63 - (!s).leading_zeros();
    assert_eq!(
        literal_masked, trace[0].delta,
        "the literal z is the dimension fixed above"
    );
    assert_eq!(literal_unmasked, 63);
    assert_eq!(trace[1].z, 0);
    // With the literal z, s' would leave the subcube the recursion works in (bit 3 flips back).
    let literal_s_prime = s ^ (1 << literal_masked) ^ (1 << trace[1].delta);
    assert_ne!(literal_s_prime >> 3 & 1, s >> 3 & 1);
}

/// Error 2: `s ⊕ z ⊕ 2^δ` means ⊕ 2^z (read literally it leaves the constraint), and the stubs
/// are all n-i-1 neighbours: more than k-1 are used at some levels (checked exhaustively in
/// `every_pair_...`); the detour stub can lie beyond the blocked one in stub order.
#[test]
fn error_2_stub_typos() {
    let (s, z, delta) = (bin("11010"), 2u32, 3u32);
    let literal = s ^ z as u64 ^ (1 << delta);
    assert_eq!(
        literal.count_ones(),
        1,
        "s ⊕ z ⊕ 2^δ read literally has weight 1, outside gamma_2"
    );
    assert_eq!(s ^ (1 << z) ^ (1 << delta), bin("10110"));
    // An instance whose detour takes a stub above the blocked one: {u'_1..u'_j} would miss it.
    let mut found = false;
    'search: for n in 4..=8u32 {
        for i in 1..n - 1 {
            let nodes = constrained(n, i);
            for &s in &nodes {
                for &d in nodes.iter().filter(|&&d| d != s) {
                    let (_, trace) = check(n, i, s, d).unwrap();
                    if trace.iter().any(|r| matches!((r.detour, r.stub_x), (Some(Detour::ViaStub(w)), Some(x)) if w > x)) {
                        found = true;
                        break 'search;
                    }
                }
            }
        }
    }
    assert!(found, "some detour uses a stub beyond the blocked one");
}

/// Error 3: CASE1 1.B must end p* with w -> d: d' is two edges from d.
#[test]
fn error_3_case_1b_ends_with_w_then_d() {
    // Q_4, gamma_1: s = 0001, d = 0010 (both weight i = 1): Case 1.B at the top.
    let (paths, trace) = hc_container_traced(q(4), 1, NodeId(1), NodeId(2)).unwrap();
    assert_eq!(trace[0].case, Case::Case1B);
    let (d_prime, w) = (trace[0].d_prime.unwrap().0, trace[0].w.unwrap().0);
    assert_eq!(
        (d_prime ^ 2).count_ones(),
        2,
        "p* -> d would not be an edge"
    );
    let pstar = raw(&paths).pop().unwrap();
    assert_eq!(&pstar[pstar.len() - 2..], &[w, 2]);
}

/// Error 4: in CASE2 (w(s) = w(d) = i+1), N(d) ∩ Q^1 holds no gamma-neighbour of d; w is in
/// d's own subcube.
#[test]
fn error_4_case_2_takes_w_in_ds_subcube() {
    let (_, trace) =
        hc_container_traced(q(5), 2, NodeId(bin("11010")), NodeId(bin("10101"))).unwrap();
    let r = &trace[0];
    assert_eq!(r.case, Case::Case2);
    let d = r.d.0;
    let bit = 1u64 << r.delta;
    assert_eq!(d & bit, 0, "d is in Q^0");
    let in_q1: Vec<u64> = (0..5)
        .map(|j| d ^ (1 << j))
        .filter(|v| v & bit != 0)
        .collect();
    assert!(
        in_q1.iter().all(|v| v.count_ones() > 3),
        "no gamma_2 neighbour of d in Q^1: {in_q1:?}"
    );
    assert_eq!(r.w.unwrap().0 & bit, 0, "w is in d's subcube");
}

/// Error 5: p* starts at s (the paper labels it s' -> u'_x ~> d'), and takes a stub x; the
/// recursive path through u'_x cannot then be lifted through x (it would share v_x with p*). Here
/// an instance where that happens: the naive lift collides, ours is valid.
#[test]
fn error_5_pstar_starts_at_s_and_blocks_its_stub() {
    let mut found = None;
    'search: for n in 4..=7u32 {
        for i in 1..n - 1 {
            let nodes = constrained(n, i);
            for &s in &nodes {
                for &d in nodes.iter().filter(|&&d| d != s) {
                    let (_, trace) = check(n, i, s, d).unwrap();
                    if trace[0].naive_lift_would_collide && trace[0].case != Case::Case2 {
                        found = Some((n, i, s, d, trace[0].clone()));
                        break 'search;
                    }
                }
            }
        }
    }
    let (n, i, s, d, r) = found.expect("an instance where p* blocks a stub");
    let paths = raw(&hc_container(q(n), i, NodeId(s), NodeId(d)).unwrap().paths);
    let pstar = paths.last().unwrap();
    let x = r.stub_x.unwrap();
    assert_eq!(
        (pstar[0], pstar[1]),
        (s, s ^ (1 << x)),
        "p* starts s -> v_x"
    );
    assert!(r.detour.is_some(), "the path through u'_x was detoured");
    check_family(n, &paths, &[s, d]).unwrap();
}

/// Error 6: the paper's shortcut s' ~> u'_1 ~> u'_2 -> d => s' ~> u'_1 -> d is not a path
/// (u'_1 and d are not adjacent); the right one is s' -> u'_2 ~> d. Every output is normalised
/// (checked in `check` for every pair of Q_1..Q_8).
#[test]
fn error_6_shortcut_keeps_the_later_neighbour() {
    // s' = 0011 in Q_4 (gamma_1 after one reduction would be gamma_0; use plain neighbours):
    let s1 = 0b0011u64;
    let (u1, u2) = (s1 ^ 0b0100, s1 ^ 0b1000);
    let d = u2 ^ 0b0001;
    assert!((u1 ^ d).count_ones() != 1, "u'_1 -> d is not an edge");
    assert_eq!((u2 ^ d).count_ones(), 1);
    assert_eq!((s1 ^ u2).count_ones(), 1, "s' -> u'_2 is");
}

/// Error 7: the omitted simple cases. s' = d is Table 1's level 4; d = s'' and w = s'' below.
#[test]
fn error_7_omitted_cases_are_handled() {
    // d = s'': Q_4, gamma_1, s = 0001, d = s ^ 2^δ with δ the highest bit where s = 0, d = 1.
    let (paths, trace) = hc_container_traced(q(4), 1, NodeId(0b0001), NodeId(0b1001)).unwrap();
    assert_eq!(trace[0].special, Some(Special::DIsSSecond));
    let paths = raw(&paths);
    assert!(
        paths.contains(&vec![0b0001, 0b1001]),
        "the direct edge is a path"
    );
    check_family(4, &paths, &[1, 9]).unwrap();
    let mut w_is_s2 = None;
    'search: for n in 4..=7u32 {
        for i in 1..n - 1 {
            for &s in &constrained(n, i) {
                for &d in constrained(n, i).iter().filter(|&&d| d != s) {
                    let (_, trace) = check(n, i, s, d).unwrap();
                    if trace[0].special == Some(Special::WIsSSecond)
                        && !trace[0].swapped
                        && trace[0].case != Case::Case2
                    {
                        w_is_s2 = Some((n, i, s, d, trace[0].s_second.0));
                        break 'search;
                    }
                }
            }
        }
    }
    let (n, i, s, d, s2) = w_is_s2.expect("an instance with w = s''");
    let paths = raw(&hc_container(q(n), i, NodeId(s), NodeId(d)).unwrap().paths);
    assert_eq!(paths.last().unwrap(), &vec![s, s2, d], "p* = s -> s'' -> d");
}

/// Error 8: two gamma_i nodes can be at distance 2i+2 > i+(i+1) (§4's claim).
#[test]
fn error_8_distance_can_exceed_2i_plus_1() {
    let (s, d) = (bin("111000"), bin("000111"));
    assert_eq!((s ^ d).count_ones(), 6);
    let paths = raw(&hc_container(q(6), 2, NodeId(s), NodeId(d)).unwrap().paths);
    assert_eq!(paths.len(), 3);
    assert!(
        paths.iter().all(|p| p.len() > 6),
        "every path has at least H = 6 edges"
    );
    check(6, 2, s, d).unwrap();
}

/// Error 9: time. Each level looks at O(n + k) path nodes (first and last hops, the splice scan,
/// one detour), checked for every pair of Q_1..Q_8 in `check` (<= 2n + 5k per level), so O(kn)
/// in all; a naive membership scan of the k-1 recursive paths would look at O(kn) per level.
#[test]
fn error_9_each_level_inspects_o_n_plus_k_nodes() {
    let (s, d) = ((1u64 << 16) - 1, ((1u64 << 16) - 1) << 16);
    let (_, trace) = hc_container_traced(q(32), 15, NodeId(s), NodeId(d)).unwrap();
    let k = container_width(32, 15);
    let total: usize = trace.iter().map(|r| r.inspected).sum();
    assert_eq!(trace.len(), k - 1);
    assert!(total <= k * (2 * 32 + 5 * k), "{total}");
}

/// Error 10: gamma_i and gamma_{i+1} share the weight level i+1, so containers of two pairs
/// under adjacent constraints can meet; under gamma_i and gamma_{i+2} they never do.
#[test]
fn error_10_adjacent_constraints_overlap() {
    let n = 5;
    let a = raw(&hc_container(q(n), 1, NodeId(0b00001), NodeId(0b00110))
        .unwrap()
        .paths);
    let b = raw(&hc_container(q(n), 2, NodeId(0b00011), NodeId(0b10100))
        .unwrap()
        .paths);
    let nodes_a: Vec<u64> = a.concat();
    assert!(
        b.concat().iter().any(|v| nodes_a.contains(v)),
        "gamma_1 and gamma_2 containers meet"
    );
    let c = raw(&hc_container(q(n), 3, NodeId(0b01111), NodeId(0b11011))
        .unwrap()
        .paths);
    assert!(
        c.concat().iter().all(|v| !nodes_a.contains(v)),
        "gamma_1 and gamma_3 cannot meet"
    );
}

#[test]
fn refuses_bad_input() {
    let e = |n, i, s, d| hc_container(q(n), i, NodeId(s), NodeId(d)).unwrap_err();
    assert_eq!(e(4, 4, 15, 15), PathError::ConstraintRange { i: 4, n: 4 });
    assert!(matches!(
        e(4, 1, 0b0111, 1),
        PathError::ViolatesConstraint {
            node: 7,
            weight: 3,
            i: 1
        }
    ));
    assert_eq!(e(4, 1, 3, 3), PathError::SameNode(3));
    assert!(matches!(e(4, 1, 16, 1), PathError::NotANode { .. }));
    assert_eq!(
        hc_spr(q(4), 1, NodeId(1), NodeId(6)).unwrap().paths[0].len(),
        4
    );
}

/// A random constrained pair up to Q_32: i, then s and d of weight i or i+1.
fn pair() -> impl Strategy<Value = (u32, u32, u64, u64)> {
    (2u32..=32)
        .prop_flat_map(|n| (Just(n), 0..n))
        .prop_flat_map(|(n, i)| {
            let node = move || {
                (
                    proptest::sample::subsequence((0..n).collect::<Vec<_>>(), i as usize),
                    any::<bool>(),
                    0..n,
                )
                    .prop_map(move |(ones, up, extra)| {
                        let mut v: u64 = ones.iter().map(|&b| 1u64 << b).sum();
                        if up && v >> extra & 1 == 0 {
                            v |= 1 << extra;
                        }
                        v
                    })
            };
            (Just(n), Just(i), node(), node())
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn random_pairs_up_to_q32((n, i, s, d) in pair()) {
        prop_assume!(s != d);
        check(n, i, s, d).map_err(TestCaseError::fail)?;
    }
}
