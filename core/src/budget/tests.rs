//! The token bucket's tests: gRPC's throttling at half, three decimals truncated, bounds,
//! threads.

use super::*;
use std::sync::Arc;

#[test]
fn starts_full_and_throttles_at_half() {
    let b = RetryBudget::new(10.0, 0.1).unwrap();
    assert_eq!(b.tokens(), 10.0);
    for _ in 0..4 {
        b.record_failure();
    }
    assert_eq!(b.tokens(), 6.0);
    assert!(b.allows_retry());
    b.record_failure();
    assert_eq!(b.tokens(), 5.0);
    assert!(!b.allows_retry(), "5 is not > 10/2");
    b.record_success();
    assert!((b.tokens() - 5.1).abs() < 1e-9);
    assert!(b.allows_retry());
}

#[test]
fn never_below_zero_nor_above_max() {
    let b = RetryBudget::new(2.0, 1.5).unwrap();
    for _ in 0..10 {
        b.record_failure();
    }
    assert_eq!(b.tokens(), 0.0);
    for _ in 0..10 {
        b.record_success();
    }
    assert_eq!(b.tokens(), 2.0);
}

#[test]
fn bad_numbers_are_named() {
    assert_eq!(RetryBudget::new(0.0, 0.1).unwrap_err().knob, "max_tokens");
    assert_eq!(RetryBudget::new(f64::NAN, 0.1).unwrap_err().knob, "max_tokens");
    assert_eq!(RetryBudget::new(10.0, -1.0).unwrap_err().knob, "token_ratio");
    assert_eq!(RetryBudget::new(10.0, 11.0).unwrap_err().knob, "token_ratio");
    assert!(RetryBudget::new(10.0, 0.0).unwrap_err().to_string().contains("token_ratio must be > 0"));
}

#[test]
fn ratio_keeps_three_decimals_truncated() {
    assert_eq!(RetryBudget::new(10.0, 0.1239).unwrap().token_ratio(), 0.123);
    assert_eq!(RetryBudget::new(10.0, 1.005).unwrap().token_ratio(), 1.005);
    assert_eq!(RetryBudget::new(10.0, 0.0019).unwrap().token_ratio(), 0.001);
    assert_eq!(RetryBudget::new(10.5559, 1.0).unwrap().max_tokens(), 10.555);
    assert_eq!(thousandths(1e-9), 0);
    assert_eq!(thousandths(1e12), 1_000_000_000_000_000);
    let b = RetryBudget::new(10.0, 0.1239).unwrap();
    b.record_failure();
    b.record_success();
    assert_eq!(b.tokens(), 9.123);
}

#[test]
fn values_that_truncate_to_nothing_are_errors() {
    let e = RetryBudget::new(1e-9, 1e-9).unwrap_err();
    assert_eq!(e.knob, "max_tokens");
    assert!(e.to_string().contains("max_tokens must be >= 0.001"), "{e}");
    let e = RetryBudget::new(10.0, 0.0009).unwrap_err();
    assert_eq!(e.knob, "token_ratio");
    assert!(e.to_string().contains("token_ratio must be >= 0.001"), "{e}");
}

#[test]
fn concurrent_use_stays_in_bounds_and_adds_up() {
    let b = Arc::new(RetryBudget::new(1000.0, 1.0).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    b.record_failure();
                    let t = b.tokens();
                    assert!((0.0..=1000.0).contains(&t));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(b.tokens(), 0.0);
    // 500 successes from 4 threads: exactly 500 tokens back, none lost to races.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || (0..125).for_each(|_| b.record_success()))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(b.tokens(), 500.0);
}
