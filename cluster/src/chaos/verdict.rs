//! A chaos run's verdict, as a checker gives it before any chart: valid or not, the checks
//! that decide it for the run's faults and delivery mode, each with its count, and what the
//! mode allowed to be lost. Every promise of RELIABILITY.md a run can break is one check here;
//! the text output, the JSON (`verdict`) and the report page all open with this. What it
//! gives, [`Verdict`], is the report's (`crate::chaos::report`).

use crate::chaos::report::{Check, Report, Verdict};
use crate::chaos::scenario::RunConfig;
use crate::chaos::schedule::FaultKind;
use cuberoute_protocol::delivery::Scheme;

/// Judge `report`, the run of `config`.
pub fn judge(report: &Report, config: &RunConfig) -> Verdict {
    let mut v = Checker::default();
    let has = |kind| config.faults.contains(&kind);
    let mode = config.mode;
    if let Some(ends) = &report.ends {
        v.check(
            "accepted and lost",
            ends.accepted_lost,
            "accepted sets no consuming client took",
        );
        v.check(
            "acknowledged and lost",
            ends.acked_lost,
            "acknowledged sets no consuming client took",
        );
        v.check(
            "duplicated",
            ends.duplicates_to_client,
            "entries a consuming client took twice",
        );
        v.check(
            "wrong payloads",
            ends.wrong_to_client,
            "entries whose payload or source is not what was sent",
        );
        return v.done();
    }
    // Corrupted and forged payloads, and duplicates, reach no client in any mode; forged ones
    // may where the sets are clear and the mode does not outvote forgers.
    v.check(
        "corrupted",
        report.corrupted_delivered_to_client,
        "corrupted payloads handed to a client",
    );
    let outvoted = matches!(mode.scheme, Scheme::Byzantine { .. });
    if config.clear && !outvoted && has(FaultKind::Forge) {
        v.allow(
            report.forged_delivered_to_client,
            "forged payloads handed to a client: the sets were clear and the mode does not outvote forgers",
        );
    } else {
        v.check(
            "forged",
            report.forged_delivered_to_client,
            "forged payloads handed to a client",
        );
    }
    if !mode.reliable && has(FaultKind::Crash) {
        v.allow(
            report.duplicates_to_client,
            "copies handed to a client twice: a restarted node forgets the plain copies it took",
        );
    } else {
        v.check(
            "duplicated",
            report.duplicates_to_client,
            "entries handed to a client twice",
        );
    }
    // Losses.
    if mode.reliable {
        v.check(
            "acknowledged and lost",
            report.acked_lost.unwrap_or(0),
            "sets acknowledged to their source that no client got",
        );
        let unsettled = report.reliable.unsettled;
        if has(FaultKind::Host) {
            v.allow(
                unsettled,
                "sets their source could not say the end of: sources on the lost host were replaced",
            );
        } else {
            v.check(
                "unsettled",
                unsettled,
                "sets whose source never said how they ended",
            );
        }
        let expired_lost = report
            .reliable
            .expired
            .saturating_sub(report.reliable.expired_but_delivered);
        v.allow(
            expired_lost,
            &format!(
                "sets given up unacknowledged at their source when their life ({} s) ran out, and no client got",
                config.life.as_secs_f64()
            ),
        );
        v.allow(
            report.reliable.refused,
            "sets their source refused at once (outbox or memory full, shutting down)",
        );
    } else {
        let may_lose = [
            FaultKind::Loss,
            FaultKind::Partition,
            FaultKind::Buffers,
            FaultKind::Host,
            FaultKind::Forge,
        ];
        if may_lose.iter().any(|&kind| has(kind)) {
            v.allow(
                report.sets_lost,
                "sets no client got a copy of: the faults may take every path of a plain set",
            );
        } else {
            v.check(
                "lost",
                report.sets_lost,
                "sets no client got a copy of, though at most k-1 paths were faulty",
            );
        }
    }
    let after = &report.phases.after_faults;
    v.check(
        "lost after the repair",
        after.copies_expected.saturating_sub(after.copies_delivered),
        "copies lost after the faults were repaired",
    );
    let mismatches = report.phases.fault_free.path_mismatches + after.path_mismatches;
    v.check(
        "off their path",
        mismatches,
        "copies that came off their constructed path outside the faults",
    );
    let phases = &report.phases;
    v.check(
        "not sent",
        phases.fault_free.sets_failed_to_send
            + phases.with_faults.sets_failed_to_send
            + after.sets_failed_to_send,
        "sets their source could not be asked to send",
    );
    if has(FaultKind::Buffers) {
        let beyond = u64::from(report.recovery.max_hops > report.recovery.bound_hops);
        v.check(
            "beyond the hop bound",
            beyond,
            &format!(
                "corrupted packets that lived {} hops, beyond the bound of {}",
                report.recovery.max_hops, report.recovery.bound_hops
            ),
        );
    }
    let rejoins = [
        FaultKind::Crash,
        FaultKind::Cut,
        FaultKind::Loss,
        FaultKind::Partition,
    ];
    if rejoins.iter().any(|&kind| has(kind)) {
        v.check(
            "not rejoined",
            u64::from(report.rejoin_ms.is_none()),
            "the cluster was not ready again (every node answering, every link up) after the repair",
        );
    }
    if has(FaultKind::Capture) {
        let sealed = !config.clear;
        let hides = sealed || matches!(mode.scheme, Scheme::Secret { .. });
        if hides {
            v.check(
                "read by a relay",
                report.leaked,
                "payloads a capturing relay could read",
            );
        } else {
            v.allow(
                report.leaked,
                "payloads capturing relays read: the sets were clear",
            );
        }
    }
    if let Some(host) = &report.host_loss {
        // Copies dropped anywhere (corrupted buffers, a lossy or split network, a forging
        // relay's outvoted copies) cannot be told from the host's: the promise is not checked
        // beside them, only said.
        let anywhere = [
            FaultKind::Buffers,
            FaultKind::Loss,
            FaultKind::Partition,
            FaultKind::Forge,
        ];
        if anywhere.iter().any(|&kind| has(kind)) {
            v.allow(
                host.below_promise,
                "sets that missed a copy on a path avoiding the lost host, while other faults \
                 dropped copies anywhere",
            );
        } else {
            v.check(
                "below the placement's promise",
                host.below_promise,
                "sets that missed a copy on a path avoiding the lost host",
            );
        }
    }
    v.done()
}

#[derive(Default)]
struct Checker {
    verdict: Verdict,
}

impl Checker {
    /// A promise: `count` anomalies against it, each one `what`.
    fn check(&mut self, check: &'static str, count: u64, what: &str) {
        self.verdict.checks.push(Check { check, count });
        if count > 0 {
            self.verdict.reasons.push(format!("{what}: {count}"));
        }
    }

    /// A loss the faults and mode allow: said if any.
    fn allow(&mut self, count: u64, what: &str) {
        if count > 0 {
            self.verdict.allowed.push(format!("{what}: {count}"));
        }
    }

    fn done(mut self) -> Verdict {
        self.verdict.valid = self.verdict.reasons.is_empty();
        self.verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::ends::EndsReport;
    use crate::chaos::report::ReliableOutcomes;
    use cuberoute_protocol::delivery::Mode;
    use cuberoute_protocol::wire::control::ForgeWhat;
    use std::time::Duration;

    fn config(faults: &[FaultKind], mode: Mode, clear: bool) -> RunConfig {
        RunConfig {
            fault_free: Duration::from_secs(2),
            with_faults: Duration::from_secs(2),
            after_faults: Duration::from_secs(2),
            rate: 20.0,
            faults: faults.iter().copied().collect(),
            seed: 1,
            state_every: Duration::from_millis(10),
            buffer_fraction_ppm: 50_000,
            wait: Duration::from_secs(5),
            life: Duration::from_secs(120),
            mode,
            relays: 1,
            payload_bytes: 0,
            loss_rate: 0.02,
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(5),
            forge: ForgeWhat::default(),
            clear,
        }
    }

    fn reliable() -> Mode {
        Mode {
            reliable: true,
            ..Mode::default()
        }
    }

    /// A run that kept everything: 100 sets sent and every copy delivered after the repair.
    fn kept() -> Report {
        let mut r = Report {
            sets_sent: 100,
            rejoin_ms: Some(80.0),
            ..Report::default()
        };
        r.phases.after_faults.copies_expected = 90;
        r.phases.after_faults.copies_delivered = 90;
        r
    }

    #[test]
    fn a_run_that_kept_its_promises_is_valid_and_counts_every_check() {
        let v = judge(&kept(), &config(&[FaultKind::Cut], Mode::default(), false));
        assert!(v.valid, "{v:?}");
        assert!(v.reasons.is_empty());
        assert!(v.checks.iter().all(|c| c.count == 0));
        let names: Vec<&str> = v.checks.iter().map(|c| c.check).collect();
        for name in ["corrupted", "forged", "duplicated", "lost", "not rejoined"] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
        assert!(
            v.line().starts_with("verdict: valid (0 corrupted"),
            "{}",
            v.line()
        );
    }

    #[test]
    fn each_broken_promise_makes_the_run_invalid_with_its_count() {
        let crash = config(&[FaultKind::Crash], Mode::default(), false);
        type Break = fn(&mut Report);
        let broken: [(&str, Break); 6] = [
            ("corrupted payloads handed to a client: 2", |r| {
                r.corrupted_delivered_to_client = 2
            }),
            ("forged payloads handed to a client: 3", |r| {
                r.forged_delivered_to_client = 3
            }),
            ("sets no client got a copy of, though", |r| r.sets_lost = 4),
            ("copies lost after the faults were repaired: 5", |r| {
                r.phases.after_faults.copies_delivered = 85
            }),
            ("copies that came off their constructed path", |r| {
                r.phases.fault_free.path_mismatches = 1
            }),
            ("the cluster was not ready again", |r| r.rejoin_ms = None),
        ];
        for (reason, break_it) in broken {
            let mut r = kept();
            break_it(&mut r);
            let v = judge(&r, &crash);
            assert!(!v.valid, "{reason}: {v:?}");
            assert_eq!(v.reasons.len(), 1, "{v:?}");
            assert!(v.reasons[0].starts_with(reason), "{reason}: {v:?}");
            assert!(v.line().starts_with("verdict: INVALID: "), "{}", v.line());
        }
    }

    /// A lost host's promise is checked beside crashes and cuts (its judge spares their
    /// paths), said beside faults that drop copies anywhere.
    #[test]
    fn a_host_loss_promise_is_checked_unless_copies_drop_anywhere() {
        let mut r = kept();
        r.host_loss = Some(crate::chaos::judge::HostLossOutcome {
            below_promise: 3,
            ..Default::default()
        });
        let v = judge(
            &r,
            &config(&[FaultKind::Host, FaultKind::Crash], Mode::default(), false),
        );
        assert!(!v.valid, "{v:?}");
        assert!(v.reasons[0].starts_with("sets that missed a copy"), "{v:?}");
        let v = judge(
            &r,
            &config(
                &[FaultKind::Host, FaultKind::Buffers],
                Mode::default(),
                false,
            ),
        );
        assert!(v.valid, "{v:?}");
        assert!(
            v.allowed[0].contains("while other faults dropped copies anywhere: 3"),
            "{v:?}"
        );
    }

    #[test]
    fn what_the_faults_and_mode_allow_is_said_but_keeps_the_run_valid() {
        // Plain sets lost to a lossy network, duplicates after a restart of plain sets.
        let mut r = kept();
        r.sets_lost = 7;
        r.duplicates_to_client = 2;
        let v = judge(
            &r,
            &config(&[FaultKind::Loss, FaultKind::Crash], Mode::default(), false),
        );
        assert!(v.valid, "{v:?}");
        assert_eq!(v.allowed.len(), 2, "{v:?}");
        // A reliable set whose life ran out is allowed; one acknowledged and lost is not.
        let mut r = kept();
        r.reliable = ReliableOutcomes {
            acked: 90,
            expired: 10,
            expired_but_delivered: 4,
            ..ReliableOutcomes::default()
        };
        r.acked_lost = Some(0);
        let partition = config(&[FaultKind::Partition], reliable(), false);
        let v = judge(&r, &partition);
        assert!(v.valid, "{v:?}");
        assert!(v.allowed[0].starts_with("sets given up"), "{v:?}");
        assert!(
            v.allowed[0].ends_with("(120 s) ran out, and no client got: 6"),
            "{v:?}"
        );
        r.acked_lost = Some(1);
        let v = judge(&r, &partition);
        assert!(!v.valid);
        assert!(v.reasons[0].contains("acknowledged"), "{v:?}");
        // Forged payloads of clear sets reach a client unless the mode outvotes them.
        let mut r = kept();
        r.forged_delivered_to_client = 3;
        assert!(judge(&r, &config(&[FaultKind::Forge], Mode::default(), true)).valid);
        assert!(!judge(&r, &config(&[FaultKind::Forge], Mode::default(), false)).valid);
        // A capturing relay reads clear payloads, never sealed ones.
        let mut r = kept();
        r.leaked = 5;
        assert!(judge(&r, &config(&[FaultKind::Capture], Mode::default(), true)).valid);
        assert!(!judge(&r, &config(&[FaultKind::Capture], Mode::default(), false)).valid);
    }

    #[test]
    fn the_report_opens_with_its_verdict() {
        let json = serde_json::to_string(&Report::default()).unwrap();
        assert!(json.starts_with("{\"verdict\":{\"valid\":"), "{json}");
    }

    #[test]
    fn crash_ends_is_judged_on_its_history() {
        let config = config(&[FaultKind::CrashEnds], reliable(), false);
        let mut r = Report {
            ends: Some(EndsReport::default()),
            ..Report::default()
        };
        assert!(judge(&r, &config).valid);
        r.ends.as_mut().unwrap().accepted_lost = 3;
        r.ends.as_mut().unwrap().duplicates_to_client = 1;
        let v = judge(&r, &config);
        assert!(!v.valid);
        assert_eq!(
            v.reasons,
            vec![
                "accepted sets no consuming client took: 3".to_string(),
                "entries a consuming client took twice: 1".to_string()
            ]
        );
    }
}
