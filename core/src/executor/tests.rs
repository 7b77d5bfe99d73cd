//! The blocking executor's tests: the error's history of failures, the original error and
//! value kept, cancellation from another thread, each attempt's bound, virtual waits, a
//! ratio budget's window, a shared breaker.

use super::history::{Errors, INLINE};
use super::*;
use crate::breaker::BreakerState;
use crate::clock::VirtualClock;
use crate::event::{EventKind, ExhaustReason};
use crate::policy::Jitter;
use std::time::{Duration, Instant};

#[derive(Debug, PartialEq)]
struct Failure(&'static str, u32);

fn policy(attempts: u64) -> Policy {
    Policy::builder()
        .max_attempts(attempts)
        .initial_delay_ms(100.0)
        .max_delay_ms(1000.0)
        .jitter(Jitter::None)
        .deadline(None)
        .build()
        .unwrap()
}

#[test]
fn exhaustion_keeps_every_failure_in_order() {
    let clock = VirtualClock::new();
    let r = Retrier::new(policy(4));
    let mut sleeps = vec![];
    let res: Result<(), _> = r.execute(
        Run::default().clock(&clock).listener(|e, _| {
            if let Some(d) = e.delay {
                sleeps.push(d.as_millis());
            }
        }),
        |a| Err(Failure("503", a.number)),
        |_| Verdict::TRANSIENT,
    );
    match res {
        Err(RetryError::Exhausted { attempts, reason, errors, .. }) => {
            assert_eq!(attempts, 4);
            assert_eq!(reason, ExhaustReason::Attempts);
            assert_eq!(errors, [Failure("503", 1), Failure("503", 2), Failure("503", 3), Failure("503", 4)]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sleeps, [100, 200, 400]);
    assert_eq!(clock.now(), Duration::from_millis(700));
}

#[test]
fn rejection_returns_the_original_error() {
    let r = Retrier::new(policy(5));
    let mut calls = 0;
    let res: Result<(), _> = r.run(
        |a| {
            calls += 1;
            Err(Failure("404", a.number))
        },
        |_| Verdict::Permanent,
    );
    assert!(matches!(res, Err(RetryError::Rejected(Failure("404", 1)))));
    assert_eq!(calls, 1);
}

#[test]
fn success_returns_the_value_and_listener_sees_errors() {
    let clock = VirtualClock::new();
    let r = Retrier::new(policy(5));
    let mut seen = vec![];
    let v = r.execute(
        Run::default().clock(&clock).listener(|e, err: Option<&Failure>| seen.push((e.kind, err.map(|f| f.1)))),
        |a| if a.number < 3 { Err(Failure("503", a.number)) } else { Ok("done") },
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(v.unwrap(), "done");
    assert_eq!(
        seen,
        [
            (EventKind::AttemptFailed, Some(1)),
            (EventKind::Retrying, Some(1)),
            (EventKind::AttemptFailed, Some(2)),
            (EventKind::Retrying, Some(2)),
            (EventKind::Success, None)
        ]
    );
}

#[test]
fn a_cancel_from_another_thread_ends_a_long_wait_at_once() {
    let p = Policy::builder()
        .initial_delay_ms(30_000.0)
        .max_delay_ms(30_000.0)
        .jitter(Jitter::None)
        .deadline(None)
        .build()
        .unwrap();
    let r = Retrier::new(p);
    let token = CancelToken::new();
    let other = token.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        other.cancel();
    });
    let started = Instant::now();
    let res: Result<(), _> = r.execute(
        Run::default().cancel(&token).clock(&crate::clock::SystemClock),
        |a| Err(Failure("503", a.number)),
        |_| Verdict::TRANSIENT,
    );
    let took = started.elapsed();
    canceller.join().unwrap();
    match res {
        Err(RetryError::Cancelled { attempts, errors, .. }) => {
            assert_eq!(attempts, 1);
            assert_eq!(errors, [Failure("503", 1)]);
        }
        other => panic!("{other:?}"),
    }
    assert!(took < Duration::from_secs(5), "took {took:?} for a 30 s wait cancelled after 50 ms");
}

#[test]
fn an_already_cancelled_token_runs_nothing() {
    let token = CancelToken::new();
    token.cancel();
    let mut calls = 0;
    let res: Result<(), RetryError<Failure>> = Retrier::new(policy(3)).execute(
        Run::default().cancel(&token),
        |a| {
            calls += 1;
            Err(Failure("x", a.number))
        },
        |_| Verdict::TRANSIENT,
    );
    assert!(matches!(res, Err(RetryError::Cancelled { attempts: 0, .. })));
    assert_eq!(calls, 0);
}

#[test]
fn a_rejected_value_is_retried_like_a_transient_error_and_carried() {
    let clock = VirtualClock::new();
    let r = Retrier::new(policy(3));
    let mut seen = vec![];
    let res = r.execute(
        Run::default()
            .clock(&clock)
            .result_predicate(|v: &u32| {
                if *v < 3 {
                    ValueVerdict::Retry { hint: Some(Duration::from_millis(250)) }
                } else {
                    ValueVerdict::Accept
                }
            })
            .observer(|e, f: Option<Failed<'_, Failure, u32>>| {
                seen.push((e.kind, f.and_then(Failed::value).copied(), e.delay))
            }),
        |a| Ok::<u32, Failure>(a.number),
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(res.unwrap(), 3);
    let ms = |n| Some(Duration::from_millis(n));
    assert_eq!(
        seen,
        [
            (EventKind::AttemptFailed, Some(1), None),
            (EventKind::Retrying, Some(1), ms(250)),
            (EventKind::AttemptFailed, Some(2), None),
            (EventKind::Retrying, Some(2), ms(250)),
            (EventKind::Success, None, None)
        ]
    );
    // Exhausted on a value: the value is the cause, the earlier error is kept.
    let res = Retrier::new(policy(2)).execute(
        Run::default().clock(&clock).result_predicate(|_: &&str| true.into()),
        |a| if a.number == 1 { Err(Failure("503", 1)) } else { Ok("busy") },
        |_| Verdict::TRANSIENT,
    );
    match res {
        Err(e @ RetryError::Exhausted { .. }) => {
            assert_eq!(e.last_value(), Some(&"busy"));
            assert_eq!(e.last_error(), None);
            assert!(matches!(e, RetryError::Exhausted { ref errors, .. } if errors == &[Failure("503", 1)]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_history_keeps_the_last_64_failures_and_counts_them_all() {
    let p = Policy::builder().max_attempts(100).initial_delay_ms(0.0).max_delay_ms(0.0).build().unwrap();
    let res: Result<(), _> = Retrier::new(p).execute(
        Run::default().clock(&VirtualClock::new()),
        |a| Err(Failure("503", a.number)),
        |_| Verdict::TRANSIENT,
    );
    match res {
        Err(RetryError::Exhausted { attempts: 100, errors, .. }) => {
            assert_eq!(errors.len(), HISTORY);
            assert_eq!(errors.first(), Some(&Failure("503", 37)));
            assert_eq!(errors.last(), Some(&Failure("503", 100)));
        }
        other => panic!("{other:?}"),
    }
}

/// Up to [`INLINE`] errors stay in place, then move to a `Vec`: whichever way they are
/// kept, a call ending after n failures carries the same errors in the same order.
#[test]
fn the_history_is_the_same_in_place_and_spilled() {
    for n in 1..=(INLINE as u32 + 3) {
        for permanent_last in [false, true] {
            let res: Result<(), _> = Retrier::new(policy(n.into())).execute(
                Run::default().clock(&VirtualClock::new()).listener(|e, err| {
                    // The failure an event is about is the latest one, wherever it is kept.
                    if e.kind == EventKind::Retrying {
                        assert_eq!(err, Some(&Failure("503", e.attempt)));
                    }
                }),
                |a| Err(Failure("503", a.number)),
                |e| if permanent_last && e.1 == n { Verdict::Permanent } else { Verdict::TRANSIENT },
            );
            match res {
                Err(RetryError::Rejected(e)) if permanent_last => assert_eq!(e, Failure("503", n)),
                Err(RetryError::Exhausted { attempts, errors, .. }) if !permanent_last => {
                    assert_eq!(attempts, n);
                    assert_eq!(errors, (1..=n).map(|i| Failure("503", i)).collect::<Vec<_>>());
                }
                other => panic!("{n} {permanent_last}: {other:?}"),
            }
        }
    }
    let mut errors = Errors::new();
    assert_eq!(errors.pop(), None::<u32>);
    for i in 0..(HISTORY as u32 + 5) {
        errors.push(i);
        assert_eq!(errors.last(), Some(&i));
    }
    assert_eq!(errors.into_vec(), (5..HISTORY as u32 + 5).collect::<Vec<_>>());
}

/// A virtual clock that counts its reads.
#[derive(Default)]
struct Counting {
    clock: VirtualClock,
    reads: std::sync::atomic::AtomicUsize,
}

impl Clock for Counting {
    fn now(&self) -> Duration {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.clock.now()
    }
    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), crate::clock::Cancelled> {
        self.clock.sleep(delay, cancel)
    }
}

#[test]
fn each_attempt_gets_its_bound_and_an_unbounded_call_reads_no_clock() {
    let clock = Counting::default();
    let p = Policy::builder()
        .initial_delay_ms(100.0)
        .jitter(Jitter::None)
        .deadline_ms(Some(1000.0))
        .attempt_timeout_ms(Some(400.0))
        .build()
        .unwrap();
    let mut seen = vec![];
    let res = Retrier::new(p).execute(
        Run::default().clock(&clock),
        |a: &Attempt| {
            seen.push((a.number, a.remaining.map(|d| d.as_millis()), a.deadline.map(|d| d.as_millis())));
            clock.clock.advance(Duration::from_millis(300));
            if a.number < 3 {
                Err(Failure("503", a.number))
            } else {
                Ok(a.number)
            }
        },
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(res.unwrap(), 3);
    // Attempts start at 0, 400 and 900 (300 ms each, waits of 100 and 200): the
    // attempt timeout, then the timeout again, then the 100 ms left before the deadline.
    assert_eq!(seen, [(1, Some(400), Some(400)), (2, Some(400), Some(800)), (3, Some(100), Some(1000))]);

    // Neither a deadline nor an attempt timeout nor a listener: no clock read at all,
    // failures and waits included.
    let quiet = Counting::default();
    let p = Policy::builder().initial_delay_ms(100.0).deadline(None).build().unwrap();
    let res = Retrier::new(p).execute(
        Run::default().clock(&quiet),
        |a: &Attempt| {
            assert_eq!((a.remaining, a.deadline), (None, None));
            if a.number < 3 {
                Err(Failure("503", a.number))
            } else {
                Ok(())
            }
        },
        |_| Verdict::TRANSIENT,
    );
    assert!(res.is_ok());
    assert_eq!(quiet.reads.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn an_attempt_past_the_deadline_ends_the_call_but_a_late_success_is_kept() {
    let clock = VirtualClock::new();
    let p = Policy::builder().deadline_ms(Some(500.0)).build().unwrap();
    let r = Retrier::new(p);
    let res: Result<(), _> = r.execute(
        Run::default().clock(&clock),
        |a| {
            clock.advance(Duration::from_millis(600));
            Err(Failure("slow", a.number))
        },
        |_| Verdict::TRANSIENT,
    );
    match res {
        Err(RetryError::Exhausted { attempts: 1, reason: ExhaustReason::Deadline, errors, .. }) => {
            assert_eq!(errors, [Failure("slow", 1)]);
        }
        other => panic!("{other:?}"),
    }
    let res = r.execute(
        Run::default().clock(&clock),
        |_| -> Result<&str, Failure> {
            clock.advance(Duration::from_millis(600));
            Ok("late")
        },
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(res.unwrap(), "late");
}

#[test]
fn the_testing_switch_makes_waits_virtual() {
    let scope = testing::scoped();
    let started = Instant::now();
    let r = Retrier::new(
        Policy::builder()
            .initial_delay_ms(10_000.0)
            .max_delay_ms(10_000.0)
            .jitter(Jitter::None)
            .deadline(None)
            .build()
            .unwrap(),
    );
    let res: Result<(), _> = r.run(|a| Err(Failure("503", a.number)), |_| Verdict::TRANSIENT);
    assert!(matches!(res, Err(RetryError::Exhausted { attempts: 5, .. })));
    assert_eq!(scope.clock().now(), Duration::from_secs(40));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(scope);
    assert!(!testing::is_on());
}

#[test]
fn a_ratio_budget_s_window_moves_without_a_deadline_or_a_listener() {
    use crate::budget::{RatioBudget, RetryBudget};
    let scope = testing::scoped();
    // One retry per second of reserve, no deposits: a retry spends it until it expires.
    let ratio = RatioBudget::new(Duration::from_secs(1), 1, 0.0, Duration::ZERO).unwrap();
    let budget = Some(Arc::new(RetryBudget::from(ratio)));
    let p = Policy::builder().max_attempts(2).jitter(Jitter::None).deadline_ms(None).budget(budget);
    let p = p.build().unwrap();
    assert!(!p.bounds_attempts() && p.reads_time());
    let retrier = Retrier::new(p);
    let down = |attempt: &Attempt| Err::<(), _>(Failure("503", attempt.number));
    let reason = |r: Result<(), RetryError<Failure>>| match r {
        Err(RetryError::Exhausted { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Attempts);
    assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Budget);
    // Past the ttl the withdrawal has expired: the executor read the (virtual) clock.
    scope.clock().advance(Duration::from_secs(2));
    assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Attempts);
}

#[test]
fn a_shared_breaker_refuses_without_calling_then_probes_after_the_break() {
    use crate::breaker::{BreakerConfig, CircuitBreaker};
    let scope = testing::scoped();
    let mut cfg = BreakerConfig::consecutive(2);
    cfg.break_duration = Duration::from_secs(30);
    let breaker = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let retrier = |name: &str| {
        let p = Policy::builder().name(name).max_attempts(2).jitter(Jitter::None).breaker(Some(breaker.clone()));
        Retrier::new(p.build().unwrap())
    };
    let (a, b) = (retrier("a"), retrier("b"));
    let calls = std::cell::Cell::new(0);
    let down = |attempt: &Attempt| {
        calls.set(calls.get() + 1);
        Err::<(), _>(Failure("503", attempt.number))
    };
    assert!(matches!(a.run(down, |_| Verdict::TRANSIENT), Err(RetryError::Exhausted { attempts: 2, .. })));
    assert!(matches!(b.run(down, |_| Verdict::TRANSIENT), Err(RetryError::Exhausted { attempts: 2, .. })));
    assert_eq!(calls.get(), 4);
    let refused = a.run(down, |_| Verdict::TRANSIENT);
    match &refused {
        Err(e @ RetryError::Exhausted { attempts: 0, reason: ExhaustReason::CircuitOpen, refusal, .. }) => {
            let (state, left) = refusal.unwrap();
            assert_eq!(state, BreakerState::Open);
            assert!(left > Duration::from_secs(29) && left <= Duration::from_secs(30), "{left:?}");
            assert_eq!(e.attempts(), 0);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls.get(), 4, "a refused call does not call the function");
    scope.clock().advance(Duration::from_secs(30));
    let mut seen = vec![];
    let run = Run::default().listener(|e: &Event<'_>, _| seen.push(e.kind.as_str()));
    assert_eq!(b.execute(run, |_| Ok::<_, Failure>(7), |_| Verdict::TRANSIENT).unwrap(), 7);
    assert_eq!(seen, ["breaker_half_open", "success", "breaker_closed"]);
    assert_eq!(breaker.state(scope.clock().now()), BreakerState::Closed);
}
