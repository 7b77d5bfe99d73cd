//! The quota budget's tests: the AWS SDKs' numbers and sequences, refusals, bad knobs,
//! threads.

use super::*;
use std::sync::Arc;

use RetryCause::{Failure, Timeout};

/// aws-sdk-js-v3's `getDrainedRetryQuota`: retrieves while the tracked capacity covers
/// `cost`.
fn drained(q: &QuotaBudget, cause: RetryCause) {
    let cost = q.cost(cause);
    let mut tracked = q.capacity();
    while tracked >= cost {
        assert_eq!(q.try_acquire(cause), Some(cost));
        tracked -= cost;
    }
}

#[test]
fn the_sdk_numbers() {
    let q = QuotaBudget::aws_standard();
    assert_eq!((q.capacity(), q.available(), q.cost(Failure), q.cost(Timeout)), (500, 500, 5, 10));
    assert!(q.has_retry_tokens(Failure) && q.has_retry_tokens(Timeout));
    assert_eq!(q.try_acquire(Timeout), Some(10));
    assert_eq!(q.try_acquire(Failure), Some(5));
    assert_eq!(q.available(), 485);
}

#[test]
fn drained_it_refuses_and_takes_nothing() {
    for cause in [Failure, Timeout] {
        let q = QuotaBudget::aws_standard();
        drained(&q, cause);
        assert!(!q.has_retry_tokens(cause));
        assert_eq!(q.try_acquire(cause), None);
        assert_eq!(q.available(), 0);
    }
    // A custom capacity of 100: 20 retries.
    let q = QuotaBudget::new(100, 5, 10, 1).unwrap();
    assert_eq!(std::iter::from_fn(|| q.try_acquire(Failure)).count(), 20);
    // A timeout may be refused where a plain retry is not.
    let q = QuotaBudget::aws_standard();
    for _ in 0..99 {
        q.try_acquire(Failure).unwrap();
    }
    assert_eq!(q.available(), 5);
    assert_eq!(q.try_acquire(Timeout), None);
    assert_eq!(q.try_acquire(Failure), Some(5));
}

#[test]
fn a_success_gives_back_the_last_retrys_cost_or_one() {
    let q = QuotaBudget::aws_standard();
    drained(&q, Failure);
    q.record_success(Some(5));
    assert!(q.has_retry_tokens(Failure));
    assert_eq!(q.try_acquire(Failure), Some(5));
    assert!(!q.has_retry_tokens(Failure));
    // Without a retry: 1 each; 500 % 5 == 0, so 5 successes before the next retry.
    let q = QuotaBudget::aws_standard();
    drained(&q, Failure);
    for _ in 0..5 {
        assert!(!q.has_retry_tokens(Failure));
        q.record_success(None);
    }
    assert!(q.has_retry_tokens(Failure));
    // Never past the capacity: 100 successes on a full quota leave 500, 100 retries.
    let q = QuotaBudget::aws_standard();
    (0..100).for_each(|_| q.record_success(None));
    assert_eq!(q.available(), 500);
    assert_eq!(std::iter::from_fn(|| q.try_acquire(Failure)).count(), 100);
}

/// The SDK's call loop (`StandardRetryStrategy.retry`, 3 attempts by default): a retry
/// while attempts < max and the quota allows; a success releases the last retry's cost.
fn call(q: &QuotaBudget, outcomes: &[Result<(), RetryCause>]) -> (usize, bool) {
    let mut last = None;
    for (n, outcome) in outcomes.iter().enumerate() {
        let attempts = n + 1;
        match outcome {
            Ok(()) => {
                q.record_success(last);
                return (attempts, true);
            }
            Err(cause) => {
                if attempts >= 3 {
                    return (attempts, false);
                }
                match q.try_acquire(*cause) {
                    Some(cost) => last = Some(cost),
                    None => return (attempts, false),
                }
            }
        }
    }
    (outcomes.len(), false)
}

#[test]
fn a_total_outage_allows_100_retries_then_none() {
    let q = QuotaBudget::aws_standard();
    let down = [Err(Failure); 3];
    let mut retries = 0;
    for _ in 0..200 {
        retries += call(&q, &down).0 - 1;
    }
    assert_eq!(retries, 100, "50 calls retried twice, 150 not at all");
    assert_eq!(q.available(), 0);
    // Timeouts cost 10: 50 retries.
    let q = QuotaBudget::aws_standard();
    let retries: usize = (0..200).map(|_| call(&q, &[Err(Timeout); 3]).0 - 1).sum();
    assert_eq!(retries, 50);
}

#[test]
fn a_scripted_sequence_gives_the_sdks_capacities() {
    let q = QuotaBudget::aws_standard();
    let mut after = Vec::new();
    // Fail, retry after a timeout, succeed: takes 5 then 10, gives back 10 (the last).
    call(&q, &[Err(Failure), Err(Timeout), Ok(())]);
    after.push(q.available());
    // Success at once: +1.
    call(&q, &[Ok(())]);
    after.push(q.available());
    // Two failures then the third attempt fails: 2 retries taken, nothing back.
    call(&q, &[Err(Failure), Err(Failure), Err(Failure)]);
    after.push(q.available());
    // Fail then succeed: 5 taken, 5 back.
    call(&q, &[Err(Failure), Ok(())]);
    after.push(q.available());
    // Six successes at once: +1 each, capped at 500 on the last.
    for _ in 0..6 {
        call(&q, &[Ok(())]);
        after.push(q.available());
    }
    assert_eq!(after, [495, 496, 486, 486, 487, 488, 489, 490, 491, 492]);
    (0..10).for_each(|_| q.record_success(None));
    assert_eq!(q.available(), 500);
}

#[test]
fn bad_knobs_are_named() {
    assert_eq!(QuotaBudget::new(0, 5, 10, 1).unwrap_err().knob, "capacity");
    assert_eq!(QuotaBudget::new(500, 0, 10, 1).unwrap_err().knob, "retry_cost");
    assert_eq!(QuotaBudget::new(500, 5, 0, 1).unwrap_err().knob, "timeout_retry_cost");
    let e = QuotaBudget::new(500, 5, 10, 2_000_000_000_000).unwrap_err();
    assert_eq!(e.to_string(), "no_retry_increment must be a whole number in [0, 1e12], got 2000000000000");
    assert!(QuotaBudget::new(500, 5, 10, 0).is_ok());
}

#[test]
fn concurrent_retries_take_exactly_the_capacity() {
    let q = Arc::new(QuotaBudget::aws_standard());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || std::iter::from_fn(|| q.try_acquire(Failure)).count())
        })
        .collect();
    let taken: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(taken, 100);
    assert_eq!(q.available(), 0);
}
