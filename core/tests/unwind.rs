//! A panic in a blocking call (the attempt, classify, a listener) unwinds through the
//! executor: a half-open breaker's probe goes back, so the shared breaker stays usable
//! after `catch_unwind` (it had stayed half-open and refused every call).
#![cfg(feature = "blocking")]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use retryrs::{
    BreakerConfig, BreakerState, CircuitBreaker, Clock, EventKind, ExhaustReason, Policy, Retrier, RetryError, Run,
    Verdict,
};

/// A retrier whose breaker is half-open: it opened on one failure and its break passed.
fn half_open() -> (Retrier, Arc<CircuitBreaker>, retryrs::testing::Scope) {
    let scope = retryrs::testing::scoped();
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = Duration::from_secs(30);
    let breaker = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let retrier = Retrier::new(Policy::builder().max_attempts(1).breaker(Some(breaker.clone())).build().unwrap());
    assert!(retrier.run(|_| Err::<(), _>("503"), |_| Verdict::TRANSIENT).is_err());
    scope.clock().advance(Duration::from_secs(30));
    assert_eq!(breaker.state(scope.clock().now()), BreakerState::HalfOpen);
    (retrier, breaker, scope)
}

/// After the panic, the next call is let through as the probe, and its success closes the
/// breaker.
fn still_usable(retrier: &Retrier, breaker: &CircuitBreaker, scope: &retryrs::testing::Scope) {
    let got = retrier.run(|_| Ok::<_, &str>(7), |_| Verdict::TRANSIENT);
    assert_eq!(got.unwrap(), 7, "the probe went back: the next call is let through");
    assert_eq!(breaker.state(scope.clock().now()), BreakerState::Closed);
}

#[test]
fn a_panicking_attempt_gives_the_probe_back() {
    let (retrier, breaker, scope) = half_open();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        retrier.run(|_| -> Result<(), &str> { panic!("attempt") }, |_| Verdict::TRANSIENT)
    }));
    assert!(panicked.is_err());
    // While the probe is out, another call is refused: the guard is what gave it back.
    still_usable(&retrier, &breaker, &scope);
}

#[test]
fn a_panicking_classify_gives_the_probe_back() {
    let (retrier, breaker, scope) = half_open();
    let panicked = catch_unwind(AssertUnwindSafe(|| retrier.run(|_| Err::<(), _>("503"), |_| panic!("classify"))));
    assert!(panicked.is_err());
    still_usable(&retrier, &breaker, &scope);
}

#[test]
fn a_panicking_listener_gives_the_probe_back() {
    let (retrier, breaker, scope) = half_open();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        retrier.execute(
            Run::default().listener(|e, _| assert_ne!(e.kind, EventKind::AttemptFailed, "listener")),
            |_| Err::<(), _>("503"),
            |_| Verdict::TRANSIENT,
        )
    }));
    assert!(panicked.is_err());
    still_usable(&retrier, &breaker, &scope);
}

/// A listener that panics at the call's first event, whatever it is (the breaker's
/// admission of the probe comes first).
#[test]
fn a_listener_panicking_at_the_first_event_gives_the_probe_back() {
    let (retrier, breaker, scope) = half_open();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        retrier.execute(
            Run::default().listener(|e, _| panic!("listener at {:?}", e.kind)),
            |_| Ok::<_, &str>(()),
            |_| Verdict::TRANSIENT,
        )
    }));
    assert!(panicked.is_err());
    still_usable(&retrier, &breaker, &scope);
    // The statistics count the calls that ended: the one that opened the breaker and
    // the probe that closed it; the unwound call has no outcome to count.
    assert_eq!(retrier.stats().calls, 2);
}

/// Without the guard the probe stays out: a second call while it is out is refused, so
/// the test above can tell a released probe from a lost one.
#[test]
fn a_probe_in_flight_refuses_other_calls() {
    let (retrier, _breaker, _scope) = half_open();
    let inner = retrier.clone();
    let got = retrier.run(
        |_| {
            let other = inner.run(|_| Ok::<_, &str>(1), |_| Verdict::TRANSIENT);
            assert!(
                matches!(other, Err(RetryError::Exhausted { reason: ExhaustReason::CircuitOpen, .. })),
                "{other:?}"
            );
            Ok::<_, &str>(2)
        },
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(got.unwrap(), 2);
}

/// A call without listener counts its events in a tally added at its end (nothing can
/// read the statistics mid-call): an unwound call still counts what it did, as a call
/// whose listener sees each event does. Attempt 1 fails, attempt 2 panics: one failed
/// attempt and one retry, no call ended (the panicking attempt has no outcome).
#[test]
fn an_unwound_call_counts_its_failed_attempts_with_or_without_a_listener() {
    let policy = || Policy::builder().deadline(None).initial_delay(Duration::ZERO).build().unwrap();
    let op = |a: &retryrs::Attempt| -> Result<(), &str> {
        if a.number < 2 {
            Err("503")
        } else {
            panic!("attempt 2")
        }
    };
    let (quiet, told) = (Retrier::new(policy()), Retrier::new(policy()));
    assert!(catch_unwind(AssertUnwindSafe(|| quiet.run(op, |_| Verdict::TRANSIENT))).is_err());
    let panicked =
        catch_unwind(AssertUnwindSafe(|| told.execute(Run::default().listener(|_, _| {}), op, |_| Verdict::TRANSIENT)));
    assert!(panicked.is_err());
    let (q, t) = (quiet.stats(), told.stats());
    assert_eq!((q.calls, q.attempts, q.retries), (0, 1, 1), "{q:?}");
    assert_eq!(q, t);
}
