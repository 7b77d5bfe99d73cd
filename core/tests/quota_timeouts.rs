//! The AWS SDKs' standard retry quota with timeouts (issue 27): a retry after a timeout
//! costs `timeout_retry_cost` (10), after any other retryable failure `retry_cost` (5); a
//! success gives back the cost of the retry that led to it, or `no_retry_increment` (1)
//! without one, never above the capacity; a call that fails for good gives nothing back.
//!
//! The reference below restates botocore's `retries/standard.py` `RetryQuotaChecker`
//! (`_RETRY_COST = 5`, `_TIMEOUT_RETRY_REQUEST = 10`, `_NO_RETRY_INCREMENT = 1`; the
//! capacity acquired is kept in the request context, the last acquisition wins, and
//! `release_retry_quota` gives it back on a 2xx) and `retries/quota.py` `RetryQuota`
//! (`acquire` refuses an amount above the capacity left and takes nothing; `release` is
//! capped at the maximum). The engine, fed [`Call::record`] and [`Call::record_timeout`],
//! must leave the same capacity after every call.

use std::sync::Arc;
use std::time::Duration;

use retryrs::{Call, Decision, Event, Jitter, Plan, Policy, Proposal, QuotaBudget, RetryBudget, Verdict};

#[derive(Clone, Copy, Debug)]
enum Outcome {
    Ok,
    Failure,
    Timeout,
}
use Outcome::{Failure, Ok as Success, Timeout};

/// botocore's quota and checker, for one sequence of calls of at most `max_attempts`.
struct Botocore {
    max: u64,
    available: u64,
}

impl Botocore {
    fn acquire(&mut self, amount: u64) -> bool {
        if amount > self.available {
            return false;
        }
        self.available -= amount;
        true
    }
    fn release(&mut self, amount: u64) {
        self.available += amount.min(self.max - self.available);
    }
    fn call(&mut self, attempts: &[Outcome], max_attempts: usize) {
        let mut acquired = None;
        for (i, outcome) in attempts.iter().enumerate() {
            let cost = match outcome {
                Success => return self.release(acquired.unwrap_or(1)),
                Failure => 5,
                Timeout => 10,
            };
            // MaxAttemptsChecker first, then the quota.
            if i + 1 >= max_attempts || !self.acquire(cost) {
                return;
            }
            acquired = Some(cost);
        }
    }
}

/// Runs one call through the engine: the attempts it made.
fn engine_call(policy: &Policy, attempts: &[Outcome]) -> usize {
    let mut sink = |_: &Event<'_>| {};
    let mut call = Call::start(policy, Duration::ZERO);
    for (i, outcome) in attempts.iter().enumerate() {
        let decision = match outcome {
            Success => call.record(Verdict::Success, Duration::ZERO, &mut sink),
            Failure => call.record(Verdict::TRANSIENT, Duration::ZERO, &mut sink),
            Timeout => call.record_timeout(Verdict::TRANSIENT, Duration::ZERO, &mut sink),
        };
        match decision.unwrap() {
            Decision::Retry(_) => {
                call.after_wait(Duration::ZERO, &mut sink).unwrap();
            }
            Decision::Stop(_) => return i + 1,
        }
    }
    panic!("the script ran out before the call ended")
}

/// [`engine_call`] for a host with hooks: propose (a timeout through
/// [`Call::propose_timeout`]), then settle with the engine's wait.
fn hooked_engine_call(policy: &Policy, attempts: &[Outcome]) -> usize {
    let mut sink = |_: &Event<'_>| {};
    let mut call = Call::start(policy, Duration::ZERO);
    for (i, outcome) in attempts.iter().enumerate() {
        let proposal = match outcome {
            Success => call.propose(Verdict::Success, Duration::ZERO, &mut sink),
            Failure => call.propose(Verdict::TRANSIENT, Duration::ZERO, &mut sink),
            Timeout => call.propose_timeout(Verdict::TRANSIENT, Duration::ZERO, &mut sink),
        };
        let decision = match proposal.unwrap() {
            Proposal::Stop(stop) => Decision::Stop(stop),
            Proposal::Wait { .. } => call.settle(Plan::Engine, Duration::ZERO, &mut sink).unwrap(),
        };
        match decision {
            Decision::Retry(_) => {
                call.after_wait(Duration::ZERO, &mut sink).unwrap();
            }
            Decision::Stop(_) => return i + 1,
        }
    }
    panic!("the script ran out before the call ended")
}

fn quota_policy(capacity: u64, max_attempts: u64) -> (Policy, Arc<RetryBudget>) {
    let quota = Arc::new(RetryBudget::from(QuotaBudget::new(capacity, 5, 10, 1).unwrap()));
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .initial_delay(Duration::ZERO)
        .deadline(None)
        .max_attempts(max_attempts)
        .budget(Some(Arc::clone(&quota)))
        .build()
        .unwrap();
    (policy, quota)
}

fn available(budget: &RetryBudget) -> u64 {
    budget.as_quota().unwrap().available()
}

/// Hand-worked calls against a full quota of 500 (the SDK's default), then a drained one.
#[test]
fn timeouts_cost_ten_and_are_given_back_on_success() {
    let (policy, quota) = quota_policy(500, 3);
    let script: &[(&[Outcome], u64)] = &[
        (&[Timeout, Success], 500),          // -10, then the 10 back
        (&[Timeout, Timeout, Timeout], 480), // -10 -10, the third is the last attempt
        (&[Failure, Success], 480),          // -5, then the 5 back
        (&[Success], 481),                   // +1
        (&[Failure, Timeout, Success], 476), // -5 -10, then the last retry's 10 back (481 - 15 + 10)
        (&[Timeout, Failure, Failure], 461), // -10 -5
        (&[Failure, Timeout, Failure], 446), // -5 -10
    ];
    for (attempts, want) in script {
        engine_call(&policy, attempts);
        assert_eq!(available(&quota), *want, "after {attempts:?}");
    }
    // A quota of 12: a timeout's retry (10) fits once, then only a plain one (5) would.
    let (policy, quota) = quota_policy(12, 3);
    assert_eq!(engine_call(&policy, &[Timeout, Timeout, Success]), 2, "the second timeout's retry is refused");
    assert_eq!(available(&quota), 2);
    assert_eq!(engine_call(&policy, &[Failure, Success]), 1, "5 does not fit in 2 either");
    assert_eq!(available(&quota), 2, "a refused retry takes nothing");
    assert_eq!(engine_call(&policy, &[Success]), 1);
    assert_eq!(available(&quota), 3);
}

/// 400 pseudo-random calls (a fixed LCG) on a small quota, so it drains and refills many
/// times: the engine leaves the reference's capacity after every one.
#[test]
fn the_engine_matches_botocore_call_by_call() {
    for (capacity, max_attempts) in [(50, 3), (37, 4), (500, 5), (12, 2)] {
        let (policy, quota) = quota_policy(capacity, max_attempts);
        let (hooked, hooked_quota) = quota_policy(capacity, max_attempts);
        let mut reference = Botocore { max: capacity, available: capacity };
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d ^ capacity;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % 10
        };
        for n in 0..400 {
            // Mostly failures (6 in 10), some timeouts (2), some successes (2): it drains.
            let attempts: Vec<Outcome> = (0..max_attempts)
                .map(|_| match next() {
                    0..=5 => Failure,
                    6 | 7 => Timeout,
                    _ => Success,
                })
                .chain([Success])
                .collect();
            reference.call(&attempts, max_attempts as usize);
            engine_call(&policy, &attempts);
            assert_eq!(available(&quota), reference.available, "capacity {capacity}, call {n}: {attempts:?}");
            // The same call again through propose and settle (a host with hooks).
            hooked_engine_call(&hooked, &attempts);
            assert_eq!(available(&hooked_quota), reference.available, "hooked, capacity {capacity}, call {n}");
        }
    }
}

/// The async executor reports an attempt it cut at its bound as a timeout.
#[tokio::test(flavor = "current_thread")]
async fn the_async_executor_prices_an_attempt_cut_at_its_bound_as_a_timeout() {
    let quota = Arc::new(RetryBudget::from(QuotaBudget::aws_standard()));
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .initial_delay(Duration::ZERO)
        .attempt_timeout(Some(Duration::from_millis(50)))
        .budget(Some(Arc::clone(&quota)))
        .build()
        .unwrap();
    let retrier = retryrs::Retrier::new(policy);
    let seen = std::sync::Mutex::new(vec![]);
    let got = retrier
        .run_async_with(
            |d| tokio::time::sleep(d),
            |a: retryrs::Attempt| {
                seen.lock().unwrap().push(available(&quota));
                async move {
                    match a.number {
                        1 => tokio::time::sleep(Duration::from_secs(3600)).await,
                        2 => return Err(std::io::Error::other("503")),
                        _ => {}
                    }
                    Ok(a.number)
                }
            },
            |_| Verdict::TRANSIENT,
        )
        .await;
    assert_eq!(got.unwrap(), 3);
    assert_eq!(*seen.lock().unwrap(), [500, 490, 485], "the timeout's retry cost 10, the 503's 5");
    assert_eq!(available(&quota), 490, "the success gave back the last retry's 5");
}
