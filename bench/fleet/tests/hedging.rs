//! Issue 35's done-when for the simulator, at a scale a debug build runs in seconds: the
//! default hedging policy (the engine's own guard, loaded from a policy document) is never
//! more than 10% worse than no hedging on p99.9 up to 95% utilisation, and still cuts the
//! p99.9 at least 5x at 50% with independent slowness; and the conditions FLEET.md says
//! make hedging hurt do make it hurt.

use retryrs_fleet::capacity::{run, Fleet, Hedger, Slowness, UTILISATIONS};
use retryrs_fleet::hedging_report::{DEFAULT_MAX_WORSE, DEFAULT_MIN_CUT};

const SEED: u64 = 35;

/// `make sim`'s fleet with fewer calls (p99.9 is then the 15th slowest call).
fn fleet() -> Fleet {
    Fleet::issue(15_000)
}

#[test]
fn the_default_policy_is_never_worse_than_no_hedging_and_cuts_the_tail_when_there_is_room() {
    let fleet = fleet();
    for slowness in Slowness::ALL {
        for u in UTILISATIONS {
            let none = run(&fleet, slowness, u, Hedger::NoHedging, SEED);
            let default = run(&fleet, slowness, u, Hedger::Default, SEED);
            assert!(
                default.p999 <= none.p999 * DEFAULT_MAX_WORSE,
                "{} slowness at {u}: default p99.9 {} ms against {} ms without hedging",
                slowness.label(),
                default.p999,
                none.p999
            );
            // The guard's bound: about 10% of the calls (plus a reserve of a hedge a second).
            assert!(default.extra_attempts <= 0.12, "{} at {u}: {} extra", slowness.label(), default.extra_attempts);
            if u == 0.5 && slowness == Slowness::Independent {
                let cut = none.p999 / default.p999;
                assert!(cut >= DEFAULT_MIN_CUT, "cut {cut}x ({} → {} ms)", none.p999, default.p999);
            }
        }
    }
}

#[test]
fn an_unguarded_fixed_delay_collapses_a_busy_fleet_whose_slowness_is_correlated() {
    let fleet = fleet();
    let none = run(&fleet, Slowness::Correlated, 0.95, Hedger::NoHedging, SEED);
    let fixed = run(&fleet, Slowness::Correlated, 0.95, Hedger::Fixed(11), SEED);
    // A runaway: every call hedges, the hedges queue behind the pauses' backlog, and the
    // median call waits behind them (the full run's p99.9 fails outright).
    assert!(fixed.p50 > 10.0 * none.p50, "fixed p50 {} ms against none {} ms", fixed.p50, none.p50);
    assert!(fixed.extra_attempts > 0.5, "{} extra attempts", fixed.extra_attempts);
    // The same delay with room to spare helps.
    let calm = run(&fleet, Slowness::Correlated, 0.5, Hedger::Fixed(11), SEED);
    let calm_none = run(&fleet, Slowness::Correlated, 0.5, Hedger::NoHedging, SEED);
    assert!(calm.p999 * 5.0 < calm_none.p999, "{} against {}", calm.p999, calm_none.p999);
}

#[test]
fn without_cancellation_the_guard_still_bounds_the_extra_attempts() {
    let never = Fleet { cancel_lag_us: u64::MAX / 4, ..fleet() };
    let open = run(&never, Slowness::Independent, 0.8, Hedger::Adaptive, SEED);
    let guarded = run(&never, Slowness::Independent, 0.8, Hedger::Default, SEED);
    assert!(open.extra_attempts > 0.5, "unguarded: {} extra", open.extra_attempts);
    assert!(guarded.extra_attempts <= 0.12, "guarded: {} extra", guarded.extra_attempts);
    // Losers that run to the end are work: more than the same policy leaves when the
    // server sees the cancel.
    let prompt = run(&fleet(), Slowness::Independent, 0.8, Hedger::Default, SEED);
    assert!(guarded.extra_work > prompt.extra_work, "{} against {}", guarded.extra_work, prompt.extra_work);
}
