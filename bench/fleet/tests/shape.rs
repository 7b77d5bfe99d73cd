//! The simulator at a tenth of the scale: the shapes `make sim` publishes hold,
//! and a seed fixes the tables byte for byte.

use retryrs_fleet::contention::{run_mean, Strategy};
use retryrs_fleet::outage::{self, World};
use retryrs_fleet::peers::Peer;
use retryrs_fleet::report::fleet_md;
use retryrs_fleet::sim::{simulate, Config};

#[test]
fn jitter_beats_no_jitter_on_calls_and_time() {
    let mean = |s| run_mean(50, s, 11, 10);
    let none = mean(Strategy::NoJitter);
    for s in [Strategy::Full, Strategy::Equal, Strategy::Decorrelated] {
        let o = mean(s);
        assert!(o.calls < 0.75 * none.calls, "{}: {} calls against {} without jitter", s.label(), o.calls, none.calls);
        assert!(o.completion_ms < none.completion_ms / 2.0, "{}: {o:?} against {none:?}", s.label());
    }
    // The article's ordering: full jitter does the least work and finishes first among the
    // plain backoffs (none, full, equal).
    let (full, equal) = (mean(Strategy::Full), mean(Strategy::Equal));
    assert!(full.calls < equal.calls * 1.05, "full jitter should do the least work: {full:?} {equal:?}");
    assert!(full.completion_ms < equal.completion_ms, "full jitter should finish before equal: {full:?} {equal:?}");
}

#[test]
fn the_budget_bounds_the_outage_and_recovers_at_once() {
    let world = Config::small(5).outage;
    let budget = outage::run(&world, Peer::RetryrsBudget, 5).summary(&world);
    assert!(budget.amplification() <= 1.1, "sent {}x offered during the outage", budget.amplification());
    assert!(budget.peak_multiple(&world) <= 1.5, "busiest second {}x steady", budget.peak_multiple(&world));
    let recovery = budget.recovery_s.expect("the budgeted fleet recovers");
    assert!(recovery <= 2.0, "steady rate served {recovery} s after the recovery");
    // Without the budget the same policy multiplies the load: what the budget is for.
    let plain = outage::run(&world, Peer::Retryrs, 5).summary(&world);
    assert!(plain.amplification() > 3.0, "retryrs defaults sent {}x", plain.amplification());
    assert!(plain.peak_multiple(&world) > 3.0);
}

#[test]
fn the_unbounded_peers_never_recover_from_an_overloaded_restart() {
    let world = World { capacity_after: 600, ..Config::small(5).outage };
    for peer in [Peer::Tenacity, Peer::Cockatiel] {
        let s = outage::run(&world, peer, 5).summary(&world);
        assert_eq!(s.recovery_s, None, "{}", peer.label());
    }
    let budget = outage::run(&world, Peer::RetryrsBudget, 5).summary(&world);
    assert!(budget.recovery_s.is_some_and(|t| t <= 2.0), "{budget:?}");
}

#[test]
fn a_seed_fixes_the_tables_byte_for_byte() {
    let first = fleet_md(&simulate(&Config::small(7)));
    let again = fleet_md(&simulate(&Config::small(7)));
    assert_eq!(first, again);
    let other = fleet_md(&simulate(&Config::small(8)));
    assert_ne!(first, other, "the seed should matter");
}

#[test]
fn the_published_call_counts_at_n_100_within_ten_percent() {
    // Another seed than the published table's, and fewer runs: the shape is the model's,
    // not one lucky seed's.
    for (strategy, published) in [(Strategy::NoJitter, 1_850.0), (Strategy::Full, 800.0)] {
        let calls = run_mean(100, strategy, 99, 30).calls;
        assert!((calls / published - 1.0).abs() <= 0.10, "{}: {calls} calls, published ~{published}", strategy.label());
    }
}

#[test]
fn the_herd_comes_back_together_without_jitter_and_spread_with_it() {
    use retryrs::Jitter;
    use retryrs_fleet::herd::windows;
    let busiest = |j| windows(200, j).into_iter().max().unwrap_or(0);
    assert_eq!(busiest(Jitter::None), 200, "without jitter every client retries in the same window");
    for j in [Jitter::Full, Jitter::Equal, Jitter::Decorrelated] {
        assert!(busiest(j) < 100, "{j}: {} in one window", busiest(j));
    }
}

#[test]
fn the_breaker_cuts_the_outage_load_and_recovers_within_a_break_and_a_probe() {
    let world = Config::small(5).outage;
    let breaker = outage::run(&world, Peer::RetryrsBreaker, 5);
    let settled = breaker.settled_amplification(&world, 2_000);
    assert!(settled <= 0.2, "sent {settled}x offered once the breakers opened");
    assert!(breaker.refused > 0);
    let budget = outage::run(&world, Peer::RetryrsBudget, 5);
    assert!(budget.settled_amplification(&world, 2_000) > 0.9, "the budget alone still sends every first attempt");
    let recovery = breaker.summary(&world).recovery_s.expect("the fleet with breakers recovers");
    let bound = retryrs_fleet::peers::BREAKER_BREAK.as_secs_f64() + f64::from(world.rtt_ms) / 1000.0;
    assert!(recovery <= bound + 0.1, "steady rate served {recovery} s after the recovery (bound {bound} s)");
}

#[test]
fn the_budget_kinds_bound_the_outage_by_their_own_rules() {
    let world = Config::small(5).outage;
    // The AWS quota: 500 / 5 = 100 retries per client, then none: never more than the
    // same policy without it.
    let quota = outage::run(&world, Peer::RetryrsQuota, 5).summary(&world);
    let plain = outage::run(&world, Peer::Retryrs, 5).summary(&world);
    assert!(quota.amplification() <= plain.amplification() + 1e-9, "{quota:?} {plain:?}");
    // Finagle's default: a reserve of 10 retries/s per client plus 20% of the calls.
    let ratio = outage::run(&world, Peer::RetryrsRatio, 5).summary(&world);
    assert!(ratio.amplification() > 1.0 && ratio.amplification() < plain.amplification(), "{ratio:?}");
}

#[test]
fn a_flapping_dependency_shows_in_both_phases() {
    let world = Config::small(5).flapping;
    let breaker = outage::run(&world, Peer::RetryrsBreaker, 5);
    let budget = outage::run(&world, Peer::RetryrsBudget, 5);
    let ((b_down, _), (plain_down, _)) = (breaker.flap_load(&world), budget.flap_load(&world));
    assert!(b_down < plain_down, "the breaker sends less into the down phases: {b_down} vs {plain_down}");
    assert!(breaker.up_calls > 0 && breaker.up_success_share() < budget.up_success_share(), "it pays in the up phases");
}

/// The breaker options FLEET.md's paragraph compares (issue 35 item 4) do what it says:
/// counting attempts opens sooner, a count window stays closed through short down phases,
/// and probes judged together keep it open longer than one probe.
#[test]
fn the_breaker_options_change_the_outage_and_the_flapping_as_described() {
    let outage_world = Config::small(5).outage;
    let peak = |p: Peer| outage::run(&outage_world, p, 5).summary(&outage_world).peak_multiple(&outage_world);
    let (per_attempt, per_call) = (peak(Peer::RetryrsBreakerPerAttempt), peak(Peer::RetryrsBreaker));
    assert!(per_attempt < per_call, "per attempt opens sooner: busiest second {per_attempt}x against {per_call}x");
    // The published phases (5 s up, 5 s down): the small run's 2 s phases are as long as
    // the break, which is a different world for a breaker.
    let world = World::flapping();
    let run = |p: Peer| outage::run(&world, p, 5);
    let (consecutive, count, probes) =
        (run(Peer::RetryrsBreaker), run(Peer::RetryrsBreakerCount), run(Peer::RetryrsBreakerProbes));
    assert!(
        count.up_success_share() > consecutive.up_success_share(),
        "a count window serves more of the up phases: {} against {}",
        count.up_success_share(),
        consecutive.up_success_share()
    );
    assert!(count.flap_load(&world).0 > consecutive.flap_load(&world).0, "and sends more while down");
    assert!(
        probes.up_success_share() < consecutive.up_success_share(),
        "three probes judged together close later: {} against {}",
        probes.up_success_share(),
        consecutive.up_success_share()
    );
}

#[test]
fn hedging_cuts_the_tail_and_the_budget_caps_a_slow_outage() {
    use retryrs_fleet::sim::tail_scenarios;
    use retryrs_fleet::tail::Peer;
    // 2,000 user requests: enough for a p99.9 (the second slowest), where the byte-for-byte
    // test's small configuration keeps only 300.
    let config = Config { tail: retryrs_fleet::tail::TailWorld { users: 2_000, gap_us: 10_000 }, ..Config::small(3) };
    let (p95, tail, overload) = tail_scenarios(&config);
    let find = |p: Peer| tail.iter().find(|r| r.peer == p).unwrap().clone();
    let (none, fixed, adaptive) = (find(Peer::NoHedging), find(Peer::Fixed(p95)), find(Peer::Adaptive));
    assert!(none.p999 / fixed.p999 >= 10.0, "p99.9 {} -> {} ms", none.p999, fixed.p999);
    assert!(fixed.extra <= 0.05, "{} extra", fixed.extra);
    assert!(adaptive.p999 <= fixed.p999 * 1.1 && adaptive.extra <= 0.055, "{adaptive:?} against {fixed:?}");
    // Without a budget a slow outage triples the load (every call sends every hedge);
    // with one sized for 5% it stays within 1.1x.
    for run in &overload {
        match (&run.peer, run.budget) {
            (Peer::Fixed(_), None) => assert!(run.slow_load > 2.5, "{run:?}"),
            (_, Some((_, ratio))) if ratio <= 0.05 => assert!(run.slow_load <= 1.1, "{run:?}"),
            _ => {}
        }
    }
}
