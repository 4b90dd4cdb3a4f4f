//! Transient faults a daemon injects into itself when the chaos tooling asks (through the
//! authenticated control API).
//!
//! * [`corrupt_state`] overwrites every mutable protocol variable with random values: the
//!   paper's process variables (k, curPhase, posToFlip, the map, the last header) and the
//!   input buffer's next sequence id. docs/protocol.md lists them. Routing never reads them, so
//!   nothing changes: inherent stabilization.
//! * buffer corruption flips bits in queued packets ([`crate::link::Link::corrupt_queued`]) and,
//!   for a while, in packets entering a link buffer ([`crate::chaos::Chaos`]);
//! * cut and heal are [`crate::link::Link::cut`] and [`crate::link::Link::heal`];
//! * shape and unshape set the rules of the link socket's shaper ([`crate::shaper`]): delay,
//!   jitter, reordering and duplication of datagrams, in user space, on a real socket only;
//! * in a node host, crashing another node of the process and starting it again
//!   ([`in_host`]) is the host's ([`crate::host`]).

use crate::env::{self, now_us};
use crate::host::Host;
use crate::node::Node;
use crate::stats::Event;
use cuberoute_protocol::wire::control::{ControlError, ControlErrorKind, Fault, Happening};
use cuberoute_protocol::{Anchors, Header, NodeId, Plan, ProcessVars};
use rand::{Rng, RngCore};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use tracing::warn;

/// The names of the variables [`corrupt_state`] overwrites, for reports and docs.
pub const CORRUPTED_VARIABLES: &[&str] = &[
    "k",
    "curPhase",
    "posToFlip",
    "map",
    "last header",
    "next sequence id",
];

/// Overwrite every mutable protocol variable of `node` with random values.
pub fn corrupt_state(node: &Node, rng: &mut impl RngCore) {
    let random_node = |rng: &mut dyn RngCore| NodeId(rng.next_u64());
    let plans = (0..rng.random_range(0..8))
        .map(|_| Plan {
            first: random_node(rng),
            pd: random_node(rng),
            via: rng.random_bool(0.5).then(|| random_node(rng)),
            anchors: Anchors {
                fa: rng.random(),
                fb: rng.random(),
            },
        })
        .collect();
    let vars = ProcessVars {
        k: rng.random(),
        cur_phase: rng.random(),
        pos_to_flip: rng.random_bool(0.5).then(|| rng.random()),
        map: plans,
        last_header: rng.random_bool(0.9).then(|| Header {
            src: random_node(rng),
            dst: random_node(rng),
            pd: random_node(rng),
            via: rng.random_bool(0.5).then(|| random_node(rng)),
            anchors: Anchors {
                fa: rng.random(),
                fb: rng.random(),
            },
            index: rng.random(),
        }),
    };
    node.overwrite_state(vars, rng.random());
    node.chaos().state_corruptions.fetch_add(1, Relaxed);
    node.stats().fault(
        Event::ChaosCorruptState,
        "protocol variables overwritten with random values",
    );
}

/// Carry out a fault the control API received, and note it in the journal. Returns what was
/// done.
pub fn inject(node: &Arc<Node>, fault: Fault) -> Result<String, ControlError> {
    allowed(node, &fault)?;
    let noted_by_itself = matches!(fault, Fault::CorruptState { .. });
    let done = apply(node, fault)?;
    if !noted_by_itself {
        node.stats().journal.note(Happening::Fault {
            fault: done.clone(),
        });
    }
    Ok(done)
}

/// A fault on another node of this node host (`Fault::CrashHosted`, `Fault::RestartHosted`),
/// which the host carries out ([`crate::host::Host::crash`], [`crate::host::Host::restart`]);
/// noted in this node's journal. Refused by a node alone in its process.
pub async fn in_host(
    node: &Arc<Node>,
    host: Option<&Host>,
    fault: Fault,
) -> Result<String, ControlError> {
    allowed(node, &fault)?;
    let refused = |m: String| ControlError::new(ControlErrorKind::BadRequest, m);
    let Some(host) = host else {
        return Err(refused(format!(
            "node {} runs alone in its process: it is crashed and started with its process",
            node.id()
        )));
    };
    let done = match fault {
        Fault::CrashHosted { node: id } => host.crash(id).await,
        Fault::RestartHosted { node: id } => host.restart(id).await,
        other => return Err(refused(format!("{other:?} is not a node host's fault"))),
    }
    .map_err(refused)?;
    node.stats().journal.note(Happening::Fault {
        fault: done.clone(),
    });
    Ok(done)
}

/// With `chaos.allow = false` no new fault is taken; ending one (a heal, capture or forge off,
/// a node started again) always is, so that a node is never stuck with a fault it can no
/// longer be rid of.
fn allowed(node: &Node, fault: &Fault) -> Result<(), ControlError> {
    let ends_a_fault = matches!(
        fault,
        Fault::Heal { .. }
            | Fault::Capture { on: false }
            | Fault::Forge { on: false, .. }
            | Fault::Unshape
            | Fault::RestartHosted { .. }
    );
    if !ends_a_fault && !node.settings().chaos_allowed() {
        return Err(ControlError::new(
            ControlErrorKind::Forbidden,
            format!(
                "node {} does not allow fault injection (chaos.allow = false)",
                node.id()
            ),
        ));
    }
    Ok(())
}

fn apply(node: &Arc<Node>, fault: Fault) -> Result<String, ControlError> {
    let bad = |m: String| ControlError::new(ControlErrorKind::BadRequest, m);
    match fault {
        Fault::CorruptState {
            seed,
            every_ms,
            for_ms,
        } => {
            // The schedule is the caller's (reproducible by its seed); the garbage is fresh each
            // time, as a real fault's would be: a sequence id overwritten with the same values
            // in two runs would name two sets alike.
            let mut rng = env::rng(seed ^ node.incarnation() ^ now_us());
            corrupt_state(node, &mut rng);
            warn!(
                every_ms,
                for_ms, "chaos: protocol variables overwritten with random values"
            );
            if every_ms > 0 && for_ms > 0 {
                let node = node.clone();
                tokio::spawn(async move {
                    let until = env::Instant::now() + Duration::from_millis(for_ms.into());
                    let mut tick = tokio::time::interval(Duration::from_millis(every_ms.into()));
                    tick.tick().await;
                    while env::Instant::now() < until {
                        tick.tick().await;
                        corrupt_state(&node, &mut rng);
                    }
                });
            }
            Ok(format!(
                "overwrote {} with random values{}",
                CORRUPTED_VARIABLES.join(", "),
                if every_ms > 0 && for_ms > 0 {
                    format!(", and will every {every_ms} ms for {for_ms} ms")
                } else {
                    String::new()
                }
            ))
        }
        Fault::CorruptBuffers {
            seed,
            fraction_ppm,
            for_ms,
        } => {
            if fraction_ppm > 1_000_000 {
                return Err(bad(format!(
                    "fraction {fraction_ppm} ppm exceeds 1,000,000"
                )));
            }
            let mut rng = env::rng(seed);
            let corrupted: usize = node
                .links()
                .map(|link| link.corrupt_queued(node.chaos(), fraction_ppm, &mut rng))
                .sum();
            if for_ms > 0 {
                node.chaos().open_window(fraction_ppm, for_ms, rng.random());
            }
            node.stats().count_event(Event::ChaosCorruptBuffers);
            warn!(
                corrupted,
                fraction_ppm, for_ms, "chaos: bits flipped in queued packets"
            );
            Ok(format!(
                "flipped bits in {corrupted} queued packets{}",
                if for_ms > 0 {
                    format!(", and will in {fraction_ppm} ppm of those queued for {for_ms} ms")
                } else {
                    String::new()
                }
            ))
        }
        Fault::Capture { on } => {
            node.chaos().relay.set_capture(on);
            node.stats().count_event(Event::ChaosCapture);
            warn!(on, "chaos: capturing forwarded payloads");
            Ok(format!(
                "capture {}: {}",
                if on { "on" } else { "off" },
                if on {
                    "every payload this node forwards is kept (read with `chaos captured`)"
                } else {
                    "what was captured stays readable"
                }
            ))
        }
        Fault::Forge { on, what } => {
            node.chaos().relay.set_forge(on, what);
            node.stats().count_event(Event::ChaosForge);
            warn!(on, %what, "chaos: forging forwarded packets");
            Ok(if !on {
                "forge off".to_string()
            } else if what.is_empty() {
                "forge on: nothing to forge (no payload, header, source, replay or attempt)"
                    .to_string()
            } else {
                format!(
                    "forge on ({what}): every packet this node forwards is forged one of these ways in turn, its checksum recomputed"
                )
            })
        }
        Fault::Shape(rule) => {
            rule.check().map_err(bad)?;
            if crate::net::simulated() {
                return Err(bad(
                    "shaping is done in a real UDP socket; a simulation shapes nothing (its network has its own faults: loss, partitions)"
                        .to_string(),
                ));
            }
            let rules = node.chaos().shaper.shape(&rule);
            node.stats().count_event(Event::ChaosShape);
            let to = if rule.to.is_empty() {
                "every destination".to_string()
            } else {
                rule.to
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            warn!(%to, %rule, "chaos: shaping the datagrams the link socket sends");
            Ok(format!(
                "shaping datagrams to {to}: {rule}, in the daemon socket (user space); {rules} rule(s) in force"
            ))
        }
        Fault::Unshape => {
            let removed = node.chaos().shaper.unshape();
            node.stats().count_event(Event::ChaosUnshape);
            let queued = node.chaos().shaper.counters().queued;
            warn!(removed, queued, "chaos: shaping removed");
            Ok(format!(
                "removed {removed} shaping rule(s) of the daemon socket (user space); {queued} datagram(s) held back go out when due"
            ))
        }
        Fault::CrashHosted { .. } | Fault::RestartHosted { .. } => Err(bad(
            "crashing or starting another node of the process is its host's (`in_host`)".into(),
        )),
        Fault::Cut { neighbour } | Fault::Heal { neighbour } => {
            let cut = matches!(fault, Fault::Cut { .. });
            let named = node.topology().format_node(neighbour);
            let link = node.link(neighbour).ok_or_else(|| {
                bad(format!(
                    "node {named} is not a neighbour of node {}",
                    node.topology().format_node(node.id())
                ))
            })?;
            if cut {
                link.cut();
                node.stats().count_event(Event::ChaosCut);
                warn!(neighbour = %named, "chaos: link cut");
                Ok(format!("link to {named} cut"))
            } else {
                link.heal();
                node.stats().count_event(Event::ChaosHeal);
                if link.is_revoked() {
                    warn!(neighbour = %named, "chaos: heal of a revoked link: it stays refused");
                    return Ok(format!(
                        "link to {named} healed of its cut, still refused: revoked"
                    ));
                }
                warn!(neighbour = %named, "chaos: link healed");
                Ok(format!("link to {named} healed"))
            }
        }
    }
}
