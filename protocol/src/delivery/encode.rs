//! Cutting a payload into the k pieces of its mode, one per path, and putting it back together
//! from the pieces that arrived. docs/delivery.md gives each mode's guarantee and cost.
//!
//! - copies: every piece is the whole payload;
//! - `code:T`: Reed-Solomon (reed-solomon-simd), k-T data shards and T parity shards; any k-T
//!   shards rebuild the payload;
//! - `secret:T`: Shamir sharing (blahaj) with threshold T+1: T shares tell nothing, any T+1
//!   rebuild the payload;
//! - `byzantine:T`: k copies; a payload is taken only when T+1 of them agree byte for byte;
//! - `byzantine:T+code:C`: Reed-Solomon with k-C data shards, every piece carrying the SHA-256
//!   of all k shards; the list T+1 pieces agree on tells the forged shards, the others rebuild.
//!
//! [`rebuild`] never returns a payload its mode does not vouch for: when the pieces so far do
//! not decide, it says whether more pieces could ([`RebuildError::NotYet`]) or not
//! ([`RebuildError::Impossible`]).

use super::envelope::{Envelope, Piece};
use super::mode::{Mode, ModeError, Scheme};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use std::borrow::Borrow;
use std::collections::BTreeMap;

/// The most bytes of payload one piece carries (as one plain copy may).
pub const MAX_PIECE_LEN: usize = 64 * 1024;

/// The largest payload any mode takes: an erasure-coded set cut into enough shards may carry
/// more than one piece, up to this.
pub const MAX_CODED_PAYLOAD: usize = 512 * 1024;

/// Why a payload cannot be sent in a mode.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EncodeError {
    #[error(transparent)]
    Mode(#[from] ModeError),
    #[error("a payload of {len} bytes is too large for {mode} over {k} paths: at most {max} bytes")]
    TooLarge {
        len: usize,
        mode: Mode,
        k: usize,
        max: usize,
    },
    #[error("{0} paths: a delivery mode needs 1 to 255")]
    PathCount(usize),
}

/// Why the pieces so far give no payload.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("{have} of the {need} pieces needed so far")]
    NotYet { have: usize, need: usize },
    #[error("the payload cannot be rebuilt: {0}")]
    Impossible(&'static str),
}

/// A payload put back together, and the paths whose pieces were rejected on the way.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Rebuilt {
    pub payload: Vec<u8>,
    pub rejected: Vec<u8>,
}

/// The largest payload `mode` takes over `k` paths.
pub fn max_payload(mode: Mode, k: usize) -> usize {
    match mode.scheme {
        Scheme::Code { parity }
        | Scheme::Byzantine {
            parity: Some(parity),
            ..
        } => (k.saturating_sub(usize::from(parity)) * MAX_PIECE_LEN).min(MAX_CODED_PAYLOAD),
        Scheme::Copies | Scheme::Secret { .. } | Scheme::Byzantine { parity: None, .. } => {
            MAX_PIECE_LEN
        }
    }
}

/// The k pieces of `payload` in `mode`, piece i for path i. `seed` is the randomness of a
/// Shamir sharing (fresh random bytes from the caller for every set); other modes ignore it.
pub fn pieces(
    mode: Mode,
    k: usize,
    payload: &[u8],
    seed: [u8; 32],
) -> Result<Vec<Piece>, EncodeError> {
    if !(1..=255).contains(&k) {
        return Err(EncodeError::PathCount(k));
    }
    mode.check(k)?;
    let max = max_payload(mode, k);
    if payload.len() > max {
        return Err(EncodeError::TooLarge {
            len: payload.len(),
            mode,
            k,
            max,
        });
    }
    let datas: Vec<Vec<u8>> = match mode.scheme {
        Scheme::Copies | Scheme::Byzantine { parity: None, .. } => vec![payload.to_vec(); k],
        Scheme::Code { parity }
        | Scheme::Byzantine {
            parity: Some(parity),
            ..
        } => shards(payload, k - usize::from(parity), usize::from(parity)),
        Scheme::Secret { threshold } => shares(payload, k, threshold + 1, seed),
    };
    let fingerprints = match mode.scheme {
        Scheme::Byzantine {
            parity: Some(_), ..
        } => datas.iter().map(|d| sha256(d)).collect(),
        _ => Vec::new(),
    };
    Ok(datas
        .into_iter()
        .enumerate()
        .map(|(index, data)| Piece {
            mode,
            k: k as u8,
            index: index as u8,
            len: payload.len() as u32,
            data,
            fingerprints: fingerprints.clone(),
        })
        .collect())
}

/// Whether `piece` is shaped as its own mode makes the pieces of a set: a valid mode for its
/// k, an index below k, data of the length the mode gives a piece of `len` bytes, and
/// fingerprints only where the mode has them. The destination takes no other piece.
pub fn is_well_formed(piece: &Piece) -> bool {
    let k = usize::from(piece.k);
    let len = piece.len as usize;
    if k == 0 || usize::from(piece.index) >= k || piece.mode.check(k).is_err() {
        return false;
    }
    if len > max_payload(piece.mode, k) {
        return false;
    }
    let (data_len, fingerprints) = match piece.mode.scheme {
        Scheme::Copies | Scheme::Byzantine { parity: None, .. } => (len, 0),
        Scheme::Code { parity } => (shard_len(len, k - usize::from(parity)), 0),
        Scheme::Byzantine {
            parity: Some(parity),
            ..
        } => (shard_len(len, k - usize::from(parity)), k),
        Scheme::Secret { .. } => (len + 1, 0),
    };
    piece.data.len() == data_len && piece.fingerprints.len() == fingerprints
}

/// The bytes the pieces take on the wire as message payloads (their envelopes).
pub fn wire_bytes(pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .map(|p| Envelope::Piece(p.clone()).encoded_len())
        .sum()
}

/// Put the payload of a set in `mode` over `k` paths back together from `pieces`: at most one
/// per index, each already checked to belong to the set (its mode, k and length are the set's,
/// its index is the path it came on).
pub fn rebuild<P: Borrow<Piece>>(
    mode: Mode,
    k: usize,
    pieces: &[P],
) -> Result<Rebuilt, RebuildError> {
    let pieces: Vec<&Piece> = pieces.iter().map(Borrow::borrow).collect();
    let pieces = pieces.as_slice();
    if mode.check(k).is_err() || !(1..=255).contains(&k) {
        return Err(RebuildError::Impossible(
            "the mode does not fit the set's paths",
        ));
    }
    let Some(first) = pieces.first() else {
        return Err(RebuildError::NotYet {
            have: 0,
            need: mode.pieces_needed(k),
        });
    };
    let len = first.len as usize;
    match mode.scheme {
        Scheme::Copies => Ok(Rebuilt {
            payload: first.data.clone(),
            rejected: Vec::new(),
        }),
        Scheme::Byzantine {
            forgers,
            parity: None,
        } => vote_copies(k, usize::from(forgers), pieces),
        Scheme::Code { parity } => {
            let data = k - usize::from(parity);
            if pieces.len() < data {
                return Err(RebuildError::NotYet {
                    have: pieces.len(),
                    need: data,
                });
            }
            let payload = unshard(pieces, data, usize::from(parity), len)?;
            Ok(Rebuilt {
                payload,
                rejected: Vec::new(),
            })
        }
        Scheme::Byzantine {
            forgers,
            parity: Some(parity),
        } => vote_shards(k, usize::from(forgers), usize::from(parity), len, pieces),
        Scheme::Secret { threshold } => {
            let need = usize::from(threshold) + 1;
            if pieces.len() < need {
                return Err(RebuildError::NotYet {
                    have: pieces.len(),
                    need,
                });
            }
            let payload = unshare(&pieces[..need], threshold + 1, len)?;
            Ok(Rebuilt {
                payload,
                rejected: Vec::new(),
            })
        }
    }
}

/// k copies of which at most `forgers` are forged: the payload T+1 of them agree on.
fn vote_copies(k: usize, forgers: usize, pieces: &[&Piece]) -> Result<Rebuilt, RebuildError> {
    let mut votes: BTreeMap<&[u8], Vec<u8>> = BTreeMap::new();
    for piece in pieces {
        votes.entry(&piece.data).or_default().push(piece.index);
    }
    if let Some((payload, _)) = votes.iter().find(|(_, v)| v.len() > forgers) {
        let rejected = pieces
            .iter()
            .filter(|p| p.data != *payload)
            .map(|p| p.index)
            .collect();
        return Ok(Rebuilt {
            payload: payload.to_vec(),
            rejected,
        });
    }
    let best = votes.values().map(Vec::len).max().unwrap_or(0);
    if best + (k - pieces.len()) > forgers {
        Err(RebuildError::NotYet {
            have: best,
            need: forgers + 1,
        })
    } else {
        Err(RebuildError::Impossible(
            "no forgers + 1 copies can agree any more: more paths forged than the threshold",
        ))
    }
}

/// Shards of which at most `forgers` are forged, each piece carrying the fingerprints of all
/// k: the list T+1 pieces agree on tells the true shards.
fn vote_shards(
    k: usize,
    forgers: usize,
    parity: usize,
    len: usize,
    pieces: &[&Piece],
) -> Result<Rebuilt, RebuildError> {
    let data = k - parity;
    let mut votes: BTreeMap<&[[u8; 32]], usize> = BTreeMap::new();
    for piece in pieces {
        *votes.entry(&piece.fingerprints).or_default() += 1;
    }
    let agreed = votes
        .iter()
        .find(|&(list, &n)| n > forgers && list.len() == k)
        .map(|(list, _)| *list);
    let Some(list) = agreed else {
        let best = votes.values().copied().max().unwrap_or(0);
        return if best + (k - pieces.len()) > forgers {
            Err(RebuildError::NotYet {
                have: best,
                need: forgers + 1,
            })
        } else {
            Err(RebuildError::Impossible(
                "no forgers + 1 pieces can agree on the shards' fingerprints any more",
            ))
        };
    };
    let (good, bad): (Vec<&Piece>, Vec<&Piece>) = pieces
        .iter()
        .copied()
        .partition(|p| sha256(&p.data) == list[usize::from(p.index)]);
    if good.len() < data {
        // Every piece still to come may be true.
        return if good.len() + (k - pieces.len()) >= data {
            Err(RebuildError::NotYet {
                have: good.len(),
                need: data,
            })
        } else {
            Err(RebuildError::Impossible(
                "too few shards match the agreed fingerprints",
            ))
        };
    }
    let payload = unshard(&good, data, parity, len)?;
    Ok(Rebuilt {
        payload,
        rejected: bad.iter().map(|p| p.index).collect(),
    })
}

/// The payload cut into `data` shards (zero-padded to an even length, as reed-solomon-simd
/// wants) and `parity` recovery shards.
fn shards(payload: &[u8], data: usize, parity: usize) -> Vec<Vec<u8>> {
    let shard_len = shard_len(payload.len(), data);
    let mut originals: Vec<Vec<u8>> = payload
        .chunks(shard_len)
        .map(|c| {
            let mut shard = c.to_vec();
            shard.resize(shard_len, 0);
            shard
        })
        .collect();
    originals.resize(data, vec![0; shard_len]);
    let recovery = reed_solomon_simd::encode(data, parity, &originals)
        .expect("k <= 255 shards of an even, non-zero length are supported");
    originals.extend(recovery);
    originals
}

fn shard_len(len: usize, data: usize) -> usize {
    let per = len.div_ceil(data).max(2);
    per + per % 2
}

/// The payload of length `len` from at least `data` distinct shards.
fn unshard(
    pieces: &[&Piece],
    data: usize,
    parity: usize,
    len: usize,
) -> Result<Vec<u8>, RebuildError> {
    let shard_len = shard_len(len, data);
    if pieces.iter().any(|p| p.data.len() != shard_len) {
        return Err(RebuildError::Impossible("a shard has the wrong length"));
    }
    let mut originals: BTreeMap<usize, Vec<u8>> = pieces
        .iter()
        .filter(|p| usize::from(p.index) < data)
        .map(|p| (usize::from(p.index), p.data.clone()))
        .collect();
    if originals.len() < data {
        let recovery = pieces
            .iter()
            .filter(|p| usize::from(p.index) >= data)
            .map(|p| (usize::from(p.index) - data, &p.data));
        let known = originals.iter().map(|(&i, shard)| (i, shard));
        let restored = reed_solomon_simd::decode(data, parity, known, recovery)
            .map_err(|_| RebuildError::Impossible("the shards do not decode"))?;
        originals.extend(restored);
    }
    let mut payload: Vec<u8> = originals.into_values().take(data).flatten().collect();
    if payload.len() < len {
        return Err(RebuildError::Impossible("the shards are too short"));
    }
    payload.truncate(len);
    Ok(payload)
}

/// `k` Shamir shares of `payload` with threshold `need`, each as bytes: x, then y.
fn shares(payload: &[u8], k: usize, need: u8, seed: [u8; 32]) -> Vec<Vec<u8>> {
    let mut rng = ChaCha20Rng::from_seed(seed);
    if payload.is_empty() {
        // blahaj deals no share of nothing; the x coordinates alone stand for the empty secret.
        return (1..=k as u8).map(|x| vec![x]).collect();
    }
    blahaj::Sharks(need)
        .dealer_rng(payload, &mut rng)
        .take(k)
        .map(|share| Vec::from(&share))
        .collect()
}

/// The payload from `need` shares with distinct x coordinates.
fn unshare(pieces: &[&Piece], need: u8, len: usize) -> Result<Vec<u8>, RebuildError> {
    if pieces.iter().any(|p| p.data.len() != len + 1) {
        return Err(RebuildError::Impossible("a share has the wrong length"));
    }
    if len == 0 {
        return Ok(Vec::new());
    }
    let shares = pieces
        .iter()
        .map(|p| blahaj::Share::try_from(p.data.as_slice()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| RebuildError::Impossible("a share does not decode"))?;
    let mut xs: Vec<u8> = pieces.iter().map(|p| p.data[0]).collect();
    xs.sort_unstable();
    xs.dedup();
    if xs.len() < pieces.len() || xs.contains(&0) {
        return Err(RebuildError::Impossible("two shares have one x coordinate"));
    }
    blahaj::Sharks(need)
        .recover(&shares)
        .map_err(|_| RebuildError::Impossible("the shares do not recover"))
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest
        .as_ref()
        .try_into()
        .expect("SHA-256 is 32 bytes long")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(s: &str) -> Mode {
        s.parse().unwrap()
    }

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + 7) as u8).collect()
    }

    #[test]
    fn every_mode_rebuilds_from_its_minimum() {
        for (m, k) in [
            ("plain", 4),
            ("code:1", 4),
            ("code:3", 4),
            ("secret:1", 4),
            ("secret:3", 4),
            ("byzantine:1", 3),
            ("byzantine:2+code:2", 6),
        ] {
            for len in [0, 1, 2, 3, 100, 1023, 4096] {
                let p = payload(len);
                let all = pieces(mode(m), k, &p, [9; 32]).unwrap();
                assert_eq!(all.len(), k);
                let need = mode(m).pieces_needed(k);
                // The last `need` pieces, so that the code has to use its parity.
                let rebuilt = rebuild(mode(m), k, &all[k - need..]).unwrap();
                assert_eq!(rebuilt.payload, p, "{m} {len}");
                assert!(rebuilt.rejected.is_empty());
                if need > 1 {
                    assert!(matches!(
                        rebuild(mode(m), k, &all[k - need + 1..]),
                        Err(RebuildError::NotYet { .. })
                    ));
                }
            }
        }
    }

    #[test]
    fn forged_copies_are_outvoted_and_named() {
        let p = payload(50);
        let mut all = pieces(mode("byzantine:1"), 3, &p, [0; 32]).unwrap();
        all[0].data[3] ^= 1;
        let first_two = rebuild(mode("byzantine:1"), 3, &all[..2]);
        assert!(matches!(first_two, Err(RebuildError::NotYet { .. })));
        let rebuilt = rebuild(mode("byzantine:1"), 3, &all).unwrap();
        assert_eq!((rebuilt.payload, rebuilt.rejected), (p, vec![0]));
        // Beyond the threshold, forgers who agree are the majority: the limit of the theorem,
        // stated in docs/delivery.md.
        all[1].data = all[0].data.clone();
        let outvoted = rebuild(mode("byzantine:1"), 3, &all).unwrap();
        assert_eq!(
            (outvoted.payload, outvoted.rejected),
            (all[0].data.clone(), vec![2])
        );
    }

    #[test]
    fn forged_shards_are_told_by_their_fingerprints() {
        let m = mode("byzantine:1+code:2");
        let p = payload(3000);
        let mut all = pieces(m, 5, &p, [0; 32]).unwrap();
        // A forger rewrites its shard and its own fingerprint in the list it carries.
        all[1].data[0] ^= 0xff;
        all[1].fingerprints[1] = sha256(&all[1].data);
        let rebuilt = rebuild(m, 5, &all).unwrap();
        assert_eq!((rebuilt.payload, rebuilt.rejected), (p.clone(), vec![1]));
        // With the forged piece and only two true ones, the list is agreed but two true
        // shards are too few for k - C = 3: wait for more.
        assert!(matches!(
            rebuild(m, 5, &all[..3]),
            Err(RebuildError::NotYet { .. })
        ));
    }

    #[test]
    fn pieces_are_well_formed_and_misshapen_ones_are_told() {
        for m in [
            "plain",
            "code:2",
            "secret:2",
            "byzantine:1",
            "byzantine:1+code:1",
        ] {
            for len in [0, 5, 1000] {
                for piece in pieces(mode(m), 4, &payload(len), [1; 32]).unwrap() {
                    assert!(is_well_formed(&piece), "{m} {len}");
                    let mut longer = piece.clone();
                    longer.data.push(0);
                    assert!(!is_well_formed(&longer), "{m} {len}");
                    let mut beyond = piece.clone();
                    beyond.index = 4;
                    assert!(!is_well_formed(&beyond));
                    let mut no_k = piece.clone();
                    no_k.k = 0;
                    assert!(!is_well_formed(&no_k));
                }
            }
        }
    }

    #[test]
    fn too_large_payloads_and_bad_modes_are_refused() {
        assert!(matches!(
            pieces(mode("secret:1"), 4, &payload(MAX_PIECE_LEN + 1), [0; 32]),
            Err(EncodeError::TooLarge { .. })
        ));
        assert!(pieces(mode("code:1"), 4, &payload(MAX_PIECE_LEN + 1), [0; 32]).is_ok());
        assert!(matches!(
            pieces(mode("code:4"), 4, b"x", [0; 32]),
            Err(EncodeError::Mode(_))
        ));
        assert_eq!(max_payload(mode("code:1"), 64), MAX_CODED_PAYLOAD);
    }

    #[test]
    fn coded_wire_bytes_stay_within_ten_percent_of_k_over_k_minus_t() {
        for (k, t) in [(3, 1), (4, 1), (4, 2), (6, 2), (8, 3), (8, 7)] {
            for len in [1024, 4096, 65536] {
                let m = Mode {
                    scheme: Scheme::Code { parity: t },
                    reliable: false,
                };
                let bytes = wire_bytes(&pieces(m, k, &payload(len), [0; 32]).unwrap());
                let ideal = len as f64 * k as f64 / (k - usize::from(t)) as f64;
                assert!(
                    (bytes as f64) <= ideal * 1.1,
                    "k {k} T {t} len {len}: {bytes} against {ideal}"
                );
            }
        }
    }
}
