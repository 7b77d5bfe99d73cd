//! Issue 39's chain (user → A → B → C) at a small scale: with C always failing the rules
//! give n^d, n + (d-1)(n-1) and n attempts at C, counted by the simulation; with C
//! overloaded, propagating the deadline stops the work nobody waits for.

use retryrs_fleet::chain::{expected_when_failing, run, ChainWorld, Rules, ATTEMPTS};
use retryrs_fleet::sim::Config;

const SEED: u64 = 39;

#[test]
fn with_c_always_failing_each_rule_gives_its_count_for_every_user_request() {
    let world = Config::small(SEED).chain_failing;
    for rules in Rules::ALL {
        let r = run(&world, rules, SEED);
        match expected_when_failing(rules) {
            Some(n) => {
                // Every user request, not only on average.
                assert_eq!(r.c_attempts_max, n, "{}: the most for one request", rules.label());
                assert_eq!(r.c_attempts, n as f64, "{}: per request", rules.label());
            }
            // The sidecar retries each of the last layer's attempts once: twice n.
            None => assert_eq!(r.c_attempts_max, 2 * ATTEMPTS, "{}", rules.label()),
        }
        assert_eq!(r.success, 0.0, "{}: C never succeeds", rules.label());
    }
}

#[test]
fn with_c_overloaded_the_deadline_stops_work_nobody_waits_for() {
    let world = Config::small(SEED).chain_overload;
    let runs: Vec<_> = Rules::ALL.iter().map(|&rules| run(&world, rules, SEED)).collect();
    let (none, deadline) = (&runs[0], &runs[1]);
    assert!(none.wasted > 0.2, "without propagation C works for users who left: {}", none.wasted);
    assert!(deadline.wasted < none.wasted / 2.0, "{} against {}", deadline.wasted, none.wasted);
    assert!(deadline.success > none.success, "{} against {}", deadline.success, none.success);
    // Each rule sends no more to C than the rows before it (the sidecar adds its retries).
    for pair in runs[..4].windows(2) {
        assert!(pair[1].c_attempts <= pair[0].c_attempts, "{} > {}", pair[1].rules.label(), pair[0].rules.label());
    }
    // The upward rule's cap keeps C running expired requests; without it, next to none.
    let uncapped = run(&ChainWorld { uncapped: true, ..world }, Rules::Pushback, SEED);
    assert!(uncapped.wasted < runs[3].wasted / 2.0, "{} against {}", uncapped.wasted, runs[3].wasted);
}
