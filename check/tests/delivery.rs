//! The delivery model: the production outbox, inbox and replay windows keep every property in
//! every interleaving of small configurations (losses, replays, duplicates, delays, crashes),
//! sealed and clear, copies and coded; every mutant is caught; without stores the model finds
//! what docs/delivery.md says a restart then forgets; a violation's trace replays it.

use cuberoute_check::delivery::mutant::Mutant;
use cuberoute_check::delivery::{self, Delivery, DeliveryTrace, Faults, Params};
use cuberoute_check::run::{Budget, Report, Stopped, check};

fn params(sets: usize, faults: Faults) -> Params {
    Params {
        nodes: 2,
        sets,
        paths: 2,
        mode: "reliable".parse().unwrap(),
        attempts: 2,
        faults,
        sealed: true,
        store: true,
        mutant: None,
    }
}

/// One loss, one replay and one crash: the command's default faults.
const DEFAULT: Faults = Faults {
    losses: 1,
    duplicates: 0,
    replays: 1,
    delays: 0,
    crashes: 1,
};

fn explore(p: Params) -> Report<Params, (), delivery::Step> {
    check(
        Delivery::new(p),
        Budget {
            max_states: 20_000_000,
            stop_at_violation: false,
        },
    )
}

fn assert_holds(what: &str, report: &Report<Params, (), delivery::Step>) {
    assert_eq!(report.stopped, Stopped::Exhausted, "{what}");
    assert!(!report.violated(), "{what}: {:?}", report.violations);
    assert!(
        report.properties.iter().all(|p| p.holds),
        "{what}: {:?}",
        report.properties
    );
}

/// A set, sealed then clear, and a coded set over three paths, with a loss, a replay and a
/// crash anywhere; two sets from two sources with a loss, a duplicate and a crash; a set whose
/// timer may fire while its messages are on their way. Every property holds in every state,
/// and every set is seen acknowledged.
#[test]
fn production_delivery_keeps_every_property_in_every_interleaving() {
    let sealed = explore(params(1, DEFAULT));
    assert_holds("sealed", &sealed);
    assert!(sealed.unique_states > 5_000, "{}", sealed.unique_states);

    let mut clear = params(1, DEFAULT);
    clear.sealed = false;
    assert_holds("clear", &explore(clear));

    let mut coded = params(1, DEFAULT);
    coded.paths = 3;
    coded.mode = "reliable+code:1".parse().unwrap();
    assert_holds("coded", &explore(coded));

    let mut two = params(
        2,
        Faults {
            duplicates: 1,
            replays: 0,
            ..DEFAULT
        },
    );
    two.nodes = 3;
    assert_holds("two sources", &explore(two));

    let delayed = params(
        1,
        Faults {
            losses: 1,
            delays: 1,
            ..Faults::default()
        },
    );
    assert_holds("delayed", &explore(delayed));
}

/// Each mutant, on the parameters where it shows, breaks the property that guards its rule.
#[test]
fn every_mutant_is_caught() {
    for (mutant, paths, property) in [
        (Mutant::AckBeforeWrite, 2, "acknowledged is kept"),
        (Mutant::AcceptBeforeWrite, 2, "settled at the end"),
        (Mutant::WindowForgottenAtRestart, 2, "not from a replay"),
        (Mutant::NoReplayWindow, 2, "not from a replay"),
        (Mutant::NoResend, 2, "delivered while faults allow"),
        // With one path back, one loss takes the acknowledgement: the resend comes.
        (Mutant::StoreNotConsulted, 1, "handed once"),
        (Mutant::NotResumed, 2, "settled at the end"),
    ] {
        let mut p = params(1, DEFAULT);
        p.paths = paths;
        p.mutant = Some(mutant);
        let report = check(
            Delivery::new(p),
            Budget {
                max_states: 20_000_000,
                stop_at_violation: true,
            },
        );
        let broken: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
        assert!(broken.contains(&property), "{mutant}: {broken:?}");
        for v in &report.violations {
            let replayed = delivery::replay(&v.trace).unwrap();
            assert!(
                replayed.iter().any(|(name, _)| name == v.property),
                "{mutant}: the trace of {:?} replays {replayed:?}",
                v.property
            );
        }
    }
}

/// Without stores a restart forgets: a restarted destination hands a resend over again, and a
/// restarted source never settles what it had not (docs/delivery.md, "What a restart keeps").
/// The model finds both; the checker can fail.
#[test]
fn without_stores_a_restart_loses_or_duplicates() {
    let mut p = params(1, DEFAULT);
    p.paths = 1;
    p.store = false;
    let report = explore(p);
    let broken: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
    assert!(broken.contains(&"handed once"), "{broken:?}");
    assert!(broken.contains(&"settled at the end"), "{broken:?}");
}

/// A violation found is kept as a trace: a destination that hands a written set over without
/// asking its store hands the resend after its restart over twice. The production rule, on
/// the same steps, does not.
#[test]
fn a_kept_trace_replays_and_production_passes_it() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/traces/store-not-consulted-delivery.json"
    ))
    .unwrap();
    let trace: DeliveryTrace = serde_json::from_str(&text).unwrap();
    assert_eq!(trace.params.mutant, Some(Mutant::StoreNotConsulted));
    let broken = delivery::replay(&trace).unwrap();
    assert_eq!(
        broken.first().map(|(name, _)| name.as_str()),
        Some("handed once")
    );

    let mut production = trace.clone();
    production.params.mutant = None;
    let broken = delivery::replay(&production).unwrap();
    assert!(broken.is_empty(), "{broken:?}");
}

/// Bad parameters are refused with what is allowed.
#[test]
fn bad_parameters_are_refused() {
    let mut p = params(1, DEFAULT);
    p.nodes = 5;
    assert!(p.check().unwrap_err().contains("2 to 4"));
    let mut p = params(1, DEFAULT);
    p.mode = "code:1".parse().unwrap();
    assert!(p.check().unwrap_err().contains("reliable"));
    let mut p = params(1, DEFAULT);
    p.faults.losses = 4;
    assert!(p.check().unwrap_err().contains("at most 3"));
    let mut p = params(1, DEFAULT);
    p.paths = 1;
    p.mode = "reliable+code:1".parse().unwrap();
    assert!(p.check().is_err());
}
