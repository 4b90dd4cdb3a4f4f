//! The delivery mode of a message set: how its payload is spread over the k disjoint paths
//! (the [`Scheme`]) and whether the source keeps it until the destination acknowledges it
//! (`reliable`). The thresholds and what each mode guarantees are in docs/delivery.md.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How the payload is spread over the k paths.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default, Serialize, Deserialize,
)]
pub enum Scheme {
    /// k full copies, one per path; the client gets each copy (today's sends).
    #[default]
    Copies,
    /// Reed-Solomon: k - `parity` data shards and `parity` parity shards, one per path; any
    /// k - `parity` of them rebuild the payload.
    Code { parity: u8 },
    /// Shamir: k shares with threshold `threshold` + 1, one per path; `threshold` shares tell
    /// nothing of the payload, any `threshold` + 1 rebuild it.
    Secret { threshold: u8 },
    /// At most `forgers` of the k paths forge. Without `parity`: k full copies, and a payload
    /// is accepted when `forgers` + 1 copies agree. With `parity` C: Reed-Solomon with k - C
    /// data shards, each piece carrying the fingerprints of all k shards; valid for
    /// `forgers` <= C <= k - `forgers` - 1, and C - `forgers` paths may also be lost.
    Byzantine { forgers: u8, parity: Option<u8> },
}

/// The delivery mode of one message set.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default, Serialize, Deserialize,
)]
pub struct Mode {
    pub scheme: Scheme,
    /// The source sends the set again until the destination acknowledges it; the client at
    /// the destination gets it exactly once.
    pub reliable: bool,
}

/// A mode that cannot be used for a set, and why.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ModeError {
    #[error("{what} {t} is out of range: with k = {k} disjoint paths it must be 1 to {max}")]
    OutOfRange {
        what: &'static str,
        t: u8,
        k: usize,
        max: usize,
    },
    #[error(
        "--byzantine {t} needs k >= 2T+1 = {need} disjoint paths to outvote {t} forging paths; this set has k = {k}"
    )]
    TooFewPaths { t: u8, k: usize, need: usize },
    #[error(
        "--byzantine {t} --code {parity} needs {t} <= parity <= k - {t} - 1 = {max} (k = {k}): the fingerprints must be outvoted and the forged shards are erasures"
    )]
    CodedByzantine {
        t: u8,
        parity: u8,
        k: usize,
        max: usize,
    },
    #[error("{0}")]
    Refused(&'static str),
}

impl Mode {
    /// Plain copies, not reliable: what a send without delivery options does.
    pub const PLAIN: Mode = Mode {
        scheme: Scheme::Copies,
        reliable: false,
    };

    /// True for the plain mode, whose copies travel and reach the client as they always have.
    pub fn is_plain(&self) -> bool {
        *self == Mode::PLAIN
    }

    /// Check the mode against a set of `k` paths to one destination.
    pub fn check(&self, k: usize) -> Result<(), ModeError> {
        let in_range = |what, t: u8| {
            let max = k.saturating_sub(1);
            if t == 0 || usize::from(t) > max {
                Err(ModeError::OutOfRange { what, t, k, max })
            } else {
                Ok(())
            }
        };
        match self.scheme {
            Scheme::Copies => Ok(()),
            Scheme::Code { parity } => in_range("--code", parity),
            Scheme::Secret { threshold } => in_range("--secret", threshold),
            Scheme::Byzantine { forgers, parity } => {
                in_range("--byzantine", forgers)?;
                let need = 2 * usize::from(forgers) + 1;
                if k < need {
                    return Err(ModeError::TooFewPaths {
                        t: forgers,
                        k,
                        need,
                    });
                }
                if let Some(parity) = parity {
                    let max = k - usize::from(forgers) - 1;
                    if parity < forgers || usize::from(parity) > max {
                        return Err(ModeError::CodedByzantine {
                            t: forgers,
                            parity,
                            k,
                            max,
                        });
                    }
                }
                Ok(())
            }
        }
    }

    /// How many of the k pieces the destination needs at least to rebuild the payload when
    /// none is forged.
    pub fn pieces_needed(&self, k: usize) -> usize {
        match self.scheme {
            Scheme::Copies => 1,
            Scheme::Code { parity } => k - usize::from(parity),
            Scheme::Secret { threshold } => usize::from(threshold) + 1,
            Scheme::Byzantine { forgers, parity } => match parity {
                None => usize::from(forgers) + 1,
                Some(parity) => k - usize::from(parity),
            },
        }
    }
}

/// As in reports and `--json`: `plain`, `reliable`, `code:2`, `reliable+secret:1`,
/// `byzantine:1+code:2`.
impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Copies => None,
            Scheme::Code { parity } => Some(format!("code:{parity}")),
            Scheme::Secret { threshold } => Some(format!("secret:{threshold}")),
            Scheme::Byzantine {
                forgers,
                parity: None,
            } => Some(format!("byzantine:{forgers}")),
            Scheme::Byzantine {
                forgers,
                parity: Some(parity),
            } => Some(format!("byzantine:{forgers}+code:{parity}")),
        };
        match (self.reliable, scheme) {
            (false, None) => f.write_str("plain"),
            (true, None) => f.write_str("reliable"),
            (false, Some(s)) => f.write_str(&s),
            (true, Some(s)) => write!(f, "reliable+{s}"),
        }
    }
}

/// Parse the form [`Mode`]'s `Display` writes (`chaos run --delivery` takes it).
impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        let bad = || {
            format!(
                "bad delivery mode {s:?}: expected plain, reliable, code:T, secret:T, byzantine:T or byzantine:T+code:C, optionally after reliable+"
            )
        };
        let mut mode = Mode::PLAIN;
        let mut code = None;
        let mut secret = None;
        let mut byzantine = None;
        for part in s.split('+') {
            let (name, t) = match part.split_once(':') {
                Some((name, t)) => (name, Some(t.parse::<u8>().map_err(|_| bad())?)),
                None => (part, None),
            };
            let slot = match (name, t) {
                ("plain", None) if s == "plain" => continue,
                ("reliable", None) if !mode.reliable => {
                    mode.reliable = true;
                    continue;
                }
                ("code", Some(_)) => &mut code,
                ("secret", Some(_)) => &mut secret,
                ("byzantine", Some(_)) => &mut byzantine,
                _ => return Err(bad()),
            };
            if slot.replace(t.expect("matched Some")).is_some() {
                return Err(bad());
            }
        }
        mode.scheme = Scheme::from_options(code, secret, byzantine).map_err(|e| e.to_string())?;
        Ok(mode)
    }
}

impl Scheme {
    /// The scheme the options `--code`, `--secret` and `--byzantine` ask for, or why they do
    /// not combine.
    pub fn from_options(
        code: Option<u8>,
        secret: Option<u8>,
        byzantine: Option<u8>,
    ) -> Result<Scheme, ModeError> {
        match (code, secret, byzantine) {
            (None, None, None) => Ok(Scheme::Copies),
            (Some(parity), None, None) => Ok(Scheme::Code { parity }),
            (None, Some(threshold), None) => Ok(Scheme::Secret { threshold }),
            (parity, None, Some(forgers)) => Ok(Scheme::Byzantine { forgers, parity }),
            (_, Some(_), Some(_)) => Err(ModeError::Refused(
                "--secret does not combine with --byzantine: outvoting forged shares means comparing them, which Shamir sharing alone does not allow",
            )),
            (Some(_), Some(_), None) => Err(ModeError::Refused(
                "--secret does not combine with --code: Shamir shares are already spread over the k paths, each as long as the payload",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_back_as_written() {
        for s in [
            "plain",
            "reliable",
            "code:2",
            "secret:1",
            "byzantine:1",
            "byzantine:1+code:2",
            "reliable+code:3",
            "reliable+byzantine:2+code:2",
        ] {
            let mode: Mode = s.parse().unwrap();
            assert_eq!(mode.to_string(), s);
        }
        for bad in [
            "",
            "plain+reliable",
            "code",
            "code:x",
            "code:1+code:2",
            "secret:1+code:1",
            "secret:1+byzantine:1",
            "reliable+reliable",
            "copies",
        ] {
            assert!(bad.parse::<Mode>().is_err(), "{bad}");
        }
    }

    #[test]
    fn thresholds_are_checked_against_k() {
        let mode = |s: &str| s.parse::<Mode>().unwrap();
        assert!(mode("code:3").check(4).is_ok());
        assert!(mode("code:4").check(4).is_err());
        assert!(mode("code:0").check(4).is_err());
        assert!(mode("secret:3").check(4).is_ok());
        assert_eq!(
            mode("byzantine:2").check(4),
            Err(ModeError::TooFewPaths {
                t: 2,
                k: 4,
                need: 5
            })
        );
        assert!(mode("byzantine:2").check(5).is_ok());
        assert!(mode("byzantine:1+code:1").check(4).is_ok());
        assert!(mode("byzantine:1+code:2").check(4).is_ok());
        assert!(mode("byzantine:1+code:3").check(4).is_err());
        assert!(mode("byzantine:2+code:1").check(6).is_err());
        assert!(Mode::PLAIN.check(1).is_ok());
    }

    #[test]
    fn pieces_needed_follow_the_scheme() {
        let mode = |s: &str| s.parse::<Mode>().unwrap();
        assert_eq!(mode("code:1").pieces_needed(4), 3);
        assert_eq!(mode("secret:2").pieces_needed(4), 3);
        assert_eq!(mode("byzantine:1").pieces_needed(4), 2);
        assert_eq!(mode("byzantine:1+code:2").pieces_needed(5), 3);
        assert_eq!(Mode::PLAIN.pieces_needed(4), 1);
    }
}
