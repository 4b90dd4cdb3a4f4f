//! The routing model: the production `hop` keeps every property in every interleaving of small
//! configurations; each mutant (one check left out) is caught where its check matters, and
//! survives where the check is redundant; a violation's trace replays it.

use cuberoute_check::routing::mutant::{Mutant, Mutants};
use cuberoute_check::routing::{self, Params, Routing, RoutingTrace};
use cuberoute_check::run::{Budget, Stopped, check};

fn params(topology: &str, corrupted: usize, sets: usize, mutant: Option<Mutant>) -> Params {
    Params {
        topology: topology.parse().unwrap(),
        corrupted,
        capacity: 2,
        sets,
        mutant,
    }
}

fn budget(mutant: bool) -> Budget {
    Budget {
        max_states: 20_000_000,
        stop_at_violation: mutant,
    }
}

/// Q_3 and EH(1,1): one corrupted packet anywhere and a genuine set input at any moment, every
/// interleaving. Every property holds, a genuine set is seen delivered whole, and the longest
/// life is B on Q_3 and B - 1 on EH(1,1) (as protocol/tests/flush_bound.rs finds alone).
#[test]
fn production_hop_keeps_every_property_in_every_interleaving() {
    for (topology, longest) in [("q:3", 5), ("eh:1,1", 9)] {
        let report = check(Routing::new(params(topology, 1, 1, None)), budget(false));
        assert_eq!(report.stopped, Stopped::Exhausted, "{topology}");
        assert!(!report.violated(), "{topology}: {:?}", report.violations);
        assert!(
            report.properties.iter().all(|p| p.holds),
            "{topology}: {:?}",
            report.properties
        );
        assert!(
            report.unique_states > 10_000,
            "{topology}: {}",
            report.unique_states
        );
        assert_eq!(report.figures["longest_life"], longest, "{topology}");
        assert_eq!(report.figures["longest_class_life"], longest, "{topology}");
    }
}

/// Two genuine sets, both ways, beside a corrupted packet, in buffers of one: copies dropped
/// for full buffers are accounted for, none by a check.
#[test]
fn genuine_sets_are_delivered_or_dropped_only_for_a_full_buffer() {
    let mut p = params("q:3", 1, 2, None);
    p.capacity = 1;
    let report = check(Routing::new(p), budget(false));
    assert_eq!(report.stopped, Stopped::Exhausted);
    assert!(!report.violated(), "{:?}", report.violations);
}

/// Each check, left out, breaks a property somewhere: the one it guards.
#[test]
fn every_mutant_is_caught_where_its_check_matters() {
    for &mutant in Mutant::ALL {
        let (topology, property) = match mutant {
            // Q_n's routes are short enough without the budget: from EH(1,2) on, a turning
            // point leads a header past B.
            Mutant::NoBudget => ("eh:1,2", "within B"),
            Mutant::NoTurningPointCheck => ("q:3", "within B"),
            _ => ("q:3", "copies only"),
        };
        let report = check(
            Routing::new(params(topology, 1, 0, Some(mutant))),
            budget(true),
        );
        assert_eq!(report.stopped, Stopped::Violation, "{mutant} on {topology}");
        let broken: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
        assert!(
            broken.contains(&property),
            "{mutant} on {topology}: {broken:?}"
        );
    }
}

/// Where a check is redundant, its mutant survives: the budget on Q_3, Q_4 and EH(1,1)
/// (docs/verification.md says why), the turning-point check on EH, where turning points are
/// the map's own.
#[test]
fn a_mutant_survives_where_its_check_is_redundant() {
    for (topology, mutant) in [
        ("q:3", Mutant::NoBudget),
        ("eh:1,1", Mutant::NoBudget),
        ("eh:1,1", Mutant::NoTurningPointCheck),
    ] {
        let report = check(
            Routing::new(params(topology, 1, 1, Some(mutant))),
            budget(true),
        );
        assert_eq!(report.stopped, Stopped::Exhausted, "{mutant} on {topology}");
        assert!(!report.violated(), "{mutant} on {topology}");
    }
}

/// A violation found once is kept as a trace and replayed: Q_3 without the turning-point check
/// lets a corrupted header live past B (tests/traces/no-turning-point-check-q3.json, as
/// `cuberoute check routing --mutant no-turning-point-check --json` wrote it).
#[test]
fn a_kept_trace_replays_its_violation() {
    let text = include_str!("traces/no-turning-point-check-q3.json");
    let trace: RoutingTrace = serde_json::from_str(text).unwrap();
    assert_eq!(trace.params.mutant, Some(Mutant::NoTurningPointCheck));
    let broken = routing::replay(&trace).unwrap();
    assert_eq!(broken.first().map(|b| b.0.as_str()), Some("within B"));
    // The production `hop` drops that header where it first arrives: the trace's second step
    // is not there to take.
    let production = RoutingTrace {
        params: Params {
            mutant: None,
            ..trace.params.clone()
        },
        ..trace
    };
    let replayed = routing::replay(&production);
    assert!(
        replayed.as_ref().is_err_and(|e| e.contains("not enabled")),
        "{replayed:?}"
    );
}
