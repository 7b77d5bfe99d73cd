//! The ratio budget's tests: Finagle's arithmetic, expiry after the ttl, the window's
//! slices, bad knobs.

use super::*;

const T0: Duration = Duration::from_secs(1_000);

fn at(ms: u64) -> Duration {
    T0 + Duration::from_millis(ms)
}

/// Finagle's `RetryBudgetTest.testBudget` with time frozen: 10,000 calls, each one
/// deposit and one try; returns the retries made. Where a try fails the balance is 0.
fn frozen(ttl_s: u64, min: u32, percent: f64) -> i64 {
    let b = RatioBudget::new(Duration::from_secs(ttl_s), min, percent, T0).unwrap();
    let min_retries = ttl_s as i64 * i64::from(min);
    assert_eq!(b.balance(T0), min_retries);
    if min_retries == 0 {
        assert!(!b.try_withdraw(T0));
    }
    let mut retried = 0;
    for _ in 0..10_000 {
        b.deposit(T0);
        if b.try_withdraw(T0) {
            retried += 1;
        } else {
            assert_eq!(b.balance(T0), 0);
        }
    }
    retried
}

#[test]
fn finagles_arithmetic_with_time_frozen() {
    // Finagle's own expectations ((10000 * percent).toInt + minRetries, +-1), made exact
    // by its integer arithmetic: retries = (10000 * 1000 + reserve) / withdrawal.
    let cases: [(u64, u32, f64, i64); 14] = [
        (60, 0, 0.1, 1000),     // withdrawal 10000
        (60, 0, 0.5, 5000),     // 2000
        (60, 0, 0.25, 2500),    // 4000
        (60, 0, 0.75, 7501),    // 1333 (1333.33 truncated): 10^7 / 1333
        (60, 0, 0.99, 9900),    // 1010 (1010.1 truncated)
        (60, 0, 0.999, 9990),   // 1001
        (60, 0, 0.9999, 10000), // 1000 (1000.1 truncated)
        (60, 0, 0.01, 100),     // 100000
        (60, 0, 0.001, 10),     // 1000000
        (60, 0, 0.0001, 1),     // 10000000
        (1, 10, 0.0, 10),       // deposit 0, withdrawal 1, reserve 10
        (2, 5, 0.0, 10),        // reserve 10
        (1, 10, 0.1, 1010),     // reserve 10 * 1 * 10000
        (2, 5, 0.5, 5010),      // reserve 5 * 2 * 2000
    ];
    for (ttl, min, percent, want) in cases {
        let got = frozen(ttl, min, percent);
        assert_eq!(got, want, "ttl {ttl} s, min {min}/s, percent {percent}");
        let finagle = (10_000.0 * percent) as i64 + ttl as i64 * i64::from(min);
        assert!((got - finagle).abs() <= 1, "Finagle's own bound: {finagle} +-1");
    }
}

#[test]
fn a_percentage_over_one_banks_more_than_a_retry_per_call() {
    // Finagle's "maxPercentOver greater than 1.0": 10,000 deposits at 2.0 -> 20,000.
    let b = RatioBudget::new(Duration::from_secs(60), 0, 2.0, T0).unwrap();
    assert_eq!(b.balance(T0), 0);
    assert!(!b.try_withdraw(T0));
    (0..10_000).for_each(|_| b.deposit(T0));
    assert_eq!(b.balance(T0), 20_000);
}

#[test]
fn zero_and_zero_is_empty() {
    let b = RatioBudget::new(Duration::from_secs(10), 0, 0.0, T0).unwrap();
    b.deposit(T0);
    assert!(!b.try_withdraw(T0));
    assert_eq!(b.balance(T0), 0);
}

#[test]
fn withdrawals_from_the_reserve_expire_after_the_ttl() {
    // ttl 1 s in 10 slices of 100 ms; a reserve of 10.
    let b = RatioBudget::new(Duration::from_secs(1), 10, 0.0, T0).unwrap();
    assert_eq!((0..20).filter(|_| b.try_withdraw(at(0))).count(), 10);
    // Noticed every slice: the 10 withdrawals sit in the oldest slice until 1 s.
    for t in (100..1000).step_by(100) {
        assert_eq!(b.balance(at(t)), 0, "at {t} ms");
    }
    assert!(!b.try_withdraw(at(999)));
    assert_eq!(b.balance(at(1000)), 10, "the reserve is back after the ttl");

    // Noticed only at 999 ms: that notice starts a new slice there (WindowedAdder counts
    // a slice from when the last one was noticed), so they go at 1099 ms.
    let b = RatioBudget::new(Duration::from_secs(1), 10, 0.0, T0).unwrap();
    assert_eq!((0..20).filter(|_| b.try_withdraw(at(0))).count(), 10);
    assert!(!b.try_withdraw(at(999)));
    assert_eq!(b.balance(at(1098)), 0);
    assert_eq!(b.balance(at(1099)), 10);
}

#[test]
fn deposits_expire_after_the_ttl() {
    // percent 0.5: a withdrawal costs 2000, a deposit gives 1000.
    let b = RatioBudget::new(Duration::from_secs(1), 0, 0.5, T0).unwrap();
    b.deposit(at(0));
    b.deposit(at(999));
    assert!(b.try_withdraw(at(999)), "two deposits within the ttl pay for one retry");
    let b = RatioBudget::new(Duration::from_secs(1), 0, 0.5, T0).unwrap();
    b.deposit(at(0));
    b.deposit(at(1000));
    assert!(!b.try_withdraw(at(1000)), "the first deposit expired");
    assert_eq!(b.balance(at(1000)), 0);
}

#[test]
fn slices_are_counted_from_when_one_was_noticed() {
    // percent 1.0: a deposit pays for one retry. Deposits at 0 and 150 ms: the notice at
    // 150 closes the first slice and starts the next there.
    let b = RatioBudget::new(Duration::from_secs(1), 0, 1.0, T0).unwrap();
    b.deposit(at(0));
    b.deposit(at(150));
    assert_eq!(b.balance(at(150)), 2);
    // The next notice, at 1049 ms, keeps both (7 empty slices skipped) and starts a slice
    // there; each later slice of 100 ms drops one of them.
    assert_eq!(b.balance(at(1049)), 2);
    assert_eq!(b.balance(at(1148)), 2);
    assert_eq!(b.balance(at(1149)), 1, "the deposit at 0 is gone");
    assert_eq!(b.balance(at(1248)), 1);
    assert_eq!(b.balance(at(1249)), 0, "the deposit at 150 is gone");
}

#[test]
fn finagles_defaults_and_bad_knobs() {
    let b = RatioBudget::finagle_default(T0);
    // reserve 10/s * 10 s, withdrawal 1000 / 0.2 = 5000.
    assert_eq!(b.balance(T0), 100);
    assert_eq!((b.ttl(), b.min_retries_per_sec(), b.percent_can_retry()), (Duration::from_secs(10), 10, 0.2));
    let bad = |ttl: f64, min: u32, percent: f64| {
        RatioBudget::new(Duration::from_secs_f64(ttl), min, percent, T0).unwrap_err().knob
    };
    assert_eq!(bad(0.0, 5, 0.1), "ttl");
    assert_eq!(bad(0.999, 5, 0.1), "ttl");
    assert_eq!(bad(61.0, 5, 0.1), "ttl");
    assert_eq!(bad(10.0, u32::MAX, 0.1), "min_retries_per_sec");
    assert_eq!(bad(10.0, 0, -1.0), "percent_can_retry");
    assert_eq!(bad(10.0, 0, 1000.5), "percent_can_retry");
    assert_eq!(bad(10.0, 0, f64::NAN), "percent_can_retry");
    // A fraction of a second is dropped from the reserve (inSeconds), kept in the window.
    let b = RatioBudget::new(Duration::from_millis(1500), 2, 0.0, T0).unwrap();
    assert_eq!(b.balance(T0), 2);
}
