//! Property tests of the delivery layer's destination: for every mode, any loss, reordering,
//! duplication and (for the forgery-tolerant modes) forgery pattern within the mode's threshold
//! ends in exactly one delivery of the right payload; beyond the loss threshold, in no delivery
//! at all, never a wrong payload.

use cuberoute_protocol::NodeId;
use cuberoute_protocol::delivery::{
    Inbox, InboxLimits, Mode, Piece, Received, Scheme, SetKey, pieces,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

const KEY: SetKey = SetKey {
    src: NodeId(1),
    seq: 7,
    sent_at_us: 99,
};

/// A mode valid for k, with its threshold T (the paths it may lose or that may forge).
fn mode_for(k: usize) -> impl Strategy<Value = (Mode, usize)> {
    let t_max = (k - 1) as u8;
    let byz_max = ((k - 1) / 2) as u8;
    let mut options: Vec<BoxedStrategy<Scheme>> = vec![
        Just(Scheme::Copies).boxed(),
        (1..=t_max)
            .prop_map(|parity| Scheme::Code { parity })
            .boxed(),
        (1..=t_max)
            .prop_map(|threshold| Scheme::Secret { threshold })
            .boxed(),
    ];
    if byz_max >= 1 {
        options.push(
            (1..=byz_max)
                .prop_map(|forgers| Scheme::Byzantine {
                    forgers,
                    parity: None,
                })
                .boxed(),
        );
        options.push(
            (1..=byz_max)
                .prop_flat_map(move |forgers| {
                    (forgers..=(k as u8 - forgers - 1)).prop_map(move |parity| Scheme::Byzantine {
                        forgers,
                        parity: Some(parity),
                    })
                })
                .boxed(),
        );
    }
    (proptest::strategy::Union::new(options), any::<bool>()).prop_map(move |(scheme, reliable)| {
        let mode = Mode { scheme, reliable };
        (mode, k - mode.pieces_needed(k))
    })
}

/// How many paths may be lost (of k) so that the mode still rebuilds when `forged` paths forge.
fn loss_budget(mode: Mode, k: usize, forged: usize) -> usize {
    match mode.scheme {
        Scheme::Byzantine {
            forgers,
            parity: None,
        } => k - usize::from(forgers) - 1 - forged.min(usize::from(forgers)),
        Scheme::Byzantine {
            parity: Some(parity),
            ..
        } => usize::from(parity) - forged,
        _ => k - mode.pieces_needed(k),
    }
}

/// A forger's piece for path `index`: random bytes of the right shape, or the piece of a
/// consistent alternative payload (its fingerprints forged too).
fn forge(original: &Piece, alternative: &[Piece], random: &[u8], consistent: bool) -> Piece {
    let mut piece = original.clone();
    if consistent {
        piece = alternative[usize::from(original.index)].clone();
    } else {
        for (i, b) in piece.data.iter_mut().enumerate() {
            *b ^= random[i % random.len()] | 1;
        }
    }
    piece
}

/// Feed `arrivals` (path, piece) to a fresh inbox; return every `Complete` payload and whether
/// a failure was reported.
fn run(arrivals: &[(u8, Piece)]) -> (Vec<Vec<u8>>, usize) {
    let mut inbox = Inbox::new(InboxLimits::default());
    let mut delivered = Vec::new();
    let mut failures = 0;
    for (t, (path, piece)) in arrivals.iter().enumerate() {
        match inbox.receive(t as u64, KEY, *path, piece.clone()) {
            Received::Complete { payload, .. } => delivered.push(payload),
            Received::Failed(_) => failures += 1,
            Received::Pending | Received::AlreadyDelivered { .. } => {}
        }
    }
    (delivered, failures)
}

fn case() -> impl Strategy<Value = (usize, (Mode, usize))> {
    (3usize..=12).prop_flat_map(|k| (Just(k), mode_for(k)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn within_the_threshold_exactly_one_correct_delivery(
        (k, (mode, _)) in case(),
        payload in proptest::collection::vec(any::<u8>(), 0..4096),
        alternative in proptest::collection::vec(any::<u8>(), 1..64),
        seed in any::<[u8; 32]>(),
        order in any::<prop::sample::Index>(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        dups in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        consistent in any::<bool>(),
    ) {
        let all = pieces(mode, k, &payload, seed).unwrap();
        let forgers = match mode.scheme {
            Scheme::Byzantine { forgers, .. } => usize::from(forgers),
            _ => 0,
        };
        // Which paths forge: up to the threshold, chosen at random.
        let forged: BTreeSet<usize> = picks.iter().take(forgers).map(|i| i.index(k)).collect();
        let mut alt_payload = alternative.clone();
        alt_payload.resize(payload.len(), 0x42);
        if alt_payload == payload && !payload.is_empty() {
            alt_payload[0] ^= 1;
        }
        let alt = pieces(mode, k, &alt_payload, seed).unwrap();
        // Which paths are lost: up to what the mode affords with those forgers.
        let budget = loss_budget(mode, k, forged.len());
        let lost: BTreeSet<usize> = picks
            .iter()
            .rev()
            .map(|i| i.index(k))
            .filter(|i| !forged.contains(i))
            .take(budget)
            .collect();
        let mut arrivals: Vec<(u8, Piece)> = (0..k)
            .filter(|i| !lost.contains(i))
            .map(|i| {
                let piece = if forged.contains(&i) {
                    forge(&all[i], &alt, &alternative, consistent)
                } else {
                    all[i].clone()
                };
                (i as u8, piece)
            })
            .collect();
        for d in &dups {
            let again = arrivals[d.index(arrivals.len())].clone();
            arrivals.push(again);
        }
        // A random rotation and reversal: any order of arrival.
        let n = arrivals.len();
        arrivals.rotate_left(order.index(n));
        if order.index(2) == 1 {
            arrivals.reverse();
        }
        let (delivered, _) = run(&arrivals);
        prop_assert_eq!(delivered, vec![payload]);
    }

    #[test]
    fn beyond_the_loss_threshold_nothing_is_delivered(
        (k, (mode, _)) in case(),
        payload in proptest::collection::vec(any::<u8>(), 1..2048),
        seed in any::<[u8; 32]>(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 12),
    ) {
        let all = pieces(mode, k, &payload, seed).unwrap();
        let needed = mode.pieces_needed(k);
        // Fewer than needed arrive.
        let kept: BTreeSet<usize> = picks.iter().map(|i| i.index(k)).take(needed - 1).collect();
        let arrivals: Vec<(u8, Piece)> = kept.iter().map(|&i| (i as u8, all[i].clone())).collect();
        let (delivered, _) = run(&arrivals);
        prop_assert!(delivered.is_empty() || (needed == 1), "{:?}", delivered);
    }

    #[test]
    fn secret_shares_hold_no_run_of_the_payload(
        k in 3usize..=8,
        payload in proptest::collection::vec(any::<u8>(), 64..1024),
        seed in any::<[u8; 32]>(),
    ) {
        let mode = Mode { scheme: Scheme::Secret { threshold: 1 }, reliable: false };
        let runs: BTreeSet<&[u8]> = payload.windows(8).collect();
        for piece in pieces(mode, k, &payload, seed).unwrap() {
            prop_assert!(piece.data.windows(8).all(|w| !runs.contains(w)));
        }
    }
}

/// One share alone is uniform: over many seeds, every byte value shows up at a fixed position,
/// whatever the payload.
#[test]
fn a_single_share_byte_takes_every_value() {
    let mode = Mode {
        scheme: Scheme::Secret { threshold: 1 },
        reliable: false,
    };
    let mut seen = [false; 256];
    for s in 0..4096u32 {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&s.to_le_bytes());
        let share = &pieces(mode, 3, b"a constant secret", seed).unwrap()[0];
        seen[usize::from(share.data[1])] = true;
    }
    assert!(seen.iter().all(|&s| s));
}

/// One step of a source's life, for the outbox property test.
#[derive(Clone, Debug)]
enum Step {
    Send(u8),
    Ack(u8),
    Wait(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..12).prop_map(Step::Send),
        (0u8..12).prop_map(Step::Ack),
        (0u32..2_000_000).prop_map(Step::Wait),
    ]
}

proptest! {
    /// Whatever the order of sends, acknowledgements (duplicated, late, for unknown sets) and
    /// time, every set the outbox took is settled exactly once, acknowledged or expired, never
    /// sent after its deadline, and the outbox never holds more than its limits.
    #[test]
    fn every_kept_set_is_settled_exactly_once(steps in proptest::collection::vec(step(), 1..200)) {
        use cuberoute_protocol::delivery::{Outbox, OutboxLimits, Settlement};
        use std::collections::BTreeMap;
        let limits = OutboxLimits {
            max_sets: 5,
            max_bytes: 1000,
            first_resend_us: 1000,
            min_resend_us: 100,
            max_resend_us: 8000,
        };
        let mut outbox = Outbox::new(limits);
        let key = |n: u8| SetKey { src: NodeId(0), seq: u64::from(n), sent_at_us: 0 };
        let mut now = 0u64;
        let mut kept: BTreeMap<u8, u64> = BTreeMap::new(); // set -> deadline
        let mut sends: BTreeMap<u8, u32> = BTreeMap::new(); // set -> sends so far
        let mut settled: BTreeMap<u8, Settlement> = BTreeMap::new();
        for s in steps {
            match s {
                Step::Send(n) if !kept.contains_key(&n) && !settled.contains_key(&n) => {
                    let deadline = now + 5_000 + u64::from(n) * 1000;
                    if outbox.insert(now, key(n), n, 100, deadline).is_ok() {
                        kept.insert(n, deadline);
                        sends.insert(n, 1);
                    } else {
                        prop_assert!(outbox.len() == 5 || outbox.bytes() + 100 > 1000);
                    }
                }
                Step::Send(_) => {}
                Step::Ack(n) => {
                    let acked = outbox.ack(now, &key(n));
                    prop_assert_eq!(acked.is_some(), kept.remove(&n).is_some());
                    if let Some(a) = acked {
                        prop_assert_eq!(a.attempts(), sends[&n]);
                        prop_assert!(settled.insert(n, a).is_none());
                    }
                }
                Step::Wait(us) => {
                    now += u64::from(us);
                    for (k, attempt, item) in outbox.poll(now) {
                        let n = k.seq as u8;
                        prop_assert!(now < kept[&n]);
                        prop_assert_eq!(u64::from(*item), k.seq);
                        let sent = sends.get_mut(&n).unwrap();
                        *sent += 1;
                        prop_assert_eq!(attempt, *sent, "attempts are numbered in order");
                    }
                    for (k, s) in outbox.settlement(now) {
                        let n = k.seq as u8;
                        prop_assert!(kept.remove(&n).unwrap() <= now);
                        let expired = matches!(s, Settlement::Expired { attempts } if attempts == sends[&n]);
                        prop_assert!(expired, "{:?}", s);
                        prop_assert!(settled.insert(n, s).is_none());
                    }
                }
            }
            prop_assert!(outbox.len() <= 5 && outbox.bytes() <= 1000);
            prop_assert_eq!(outbox.len(), kept.len());
        }
    }
}
