//! The extension trait: `op.retry(&retrier)`, awaited or called, with the retrier's
//! policy, the caller's predicate, hooks and cancel token, and the caller's own error.
#![cfg(all(feature = "tokio", feature = "blocking"))]

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retryrs::{Attempt, CancelToken, ExhaustReason, Jitter, Policy, Retrier, RetryError, Retryable, Verdict};

fn retrier(attempts: u64, delay_ms: u64) -> Retrier {
    Retrier::new(
        Policy::builder()
            .max_attempts(attempts)
            .jitter(Jitter::None)
            .initial_delay(Duration::from_millis(delay_ms))
            .build()
            .unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn an_async_operation_is_retried_with_the_policys_waits_and_notified() {
    let calls = AtomicU32::new(0);
    let fetch = || {
        let n = calls.fetch_add(1, Ordering::Relaxed) + 1;
        async move {
            if n < 3 {
                Err(format!("503 #{n}"))
            } else {
                Ok(n)
            }
        }
    };
    let mut notified = vec![];
    let started = tokio::time::Instant::now();
    let got = fetch.retry(&retrier(5, 100)).notify(|e, wait| notified.push((e.clone(), wait))).await;
    assert_eq!(got.unwrap(), 3);
    let ms = Duration::from_millis;
    assert_eq!(notified, [("503 #1".to_string(), ms(100)), ("503 #2".to_string(), ms(200))]);
    assert_eq!(started.elapsed(), ms(300));
}

#[tokio::test(start_paused = true)]
async fn when_false_ends_the_call_with_the_callers_own_error() {
    let calls = AtomicU32::new(0);
    let fetch = || {
        calls.fetch_add(1, Ordering::Relaxed);
        async { Err::<(), _>(String::from("404")) }
    };
    let got = fetch.retry(&retrier(5, 100)).when(|e| e.starts_with('5')).own_error(|e| e.to_string()).await;
    assert_eq!(got.unwrap_err(), "404");
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // Exhausted: the last attempt's error, by value.
    let got = (|| async { Err::<(), _>(String::from("503")) }).retry(&retrier(2, 0)).own_error(|e| e.to_string()).await;
    assert_eq!(got.unwrap_err(), "503");
}

#[tokio::test(start_paused = true)]
async fn own_error_makes_one_when_no_attempt_error_exists() {
    // The attempt hangs and is cut at its bound: there is no String to return, so `or`
    // makes it from the RetryError.
    let retrier =
        Retrier::new(Policy::builder().max_attempts(1).attempt_timeout(Some(Duration::from_secs(1))).build().unwrap());
    let got =
        (|| std::future::pending::<Result<(), String>>()).retry(&retrier).own_error(|e| format!("gave up: {e}")).await;
    assert_eq!(got.unwrap_err(), "gave up: gave up after 1 attempt (max_attempts reached)");
}

#[tokio::test(start_paused = true)]
async fn an_operation_that_takes_its_attempt_sees_its_bound() {
    let retrier = Retrier::new(
        Policy::builder()
            .deadline(Some(Duration::from_secs(10)))
            .initial_delay(Duration::from_secs(1))
            .jitter(Jitter::None)
            .build()
            .unwrap(),
    );
    let mut seen = vec![];
    let got = (|a: Attempt| {
        seen.push((a.number, a.remaining));
        async move {
            if a.number < 2 {
                Err("503")
            } else {
                Ok(())
            }
        }
    })
    .retry(&retrier)
    .await;
    assert!(got.is_ok());
    // Exactly: the bound follows tokio's clock (on std's it would read ~10 s again: paused
    // time jumps the 1 s wait in no real time). The 9.000047 s once seen here was the
    // clock's origin taken after the paused runtime started (tests/tokio_paused_origin.rs).
    assert_eq!(seen, [(1, Some(Duration::from_secs(10))), (2, Some(Duration::from_secs(9)))]);
}

#[tokio::test(start_paused = true)]
async fn the_cancel_token_and_the_hooks_apply() {
    let token = CancelToken::new();
    let got = (|| {
        token.cancel();
        async { Err::<(), _>("503") }
    })
    .retry(&retrier(5, 3_000))
    .cancel(&token)
    .await;
    assert!(matches!(got, Err(RetryError::Cancelled { attempts: 1, .. })), "{got:?}");
    let got = (|| async { Err::<(), _>("503") })
        .retry(&retrier(5, 100))
        .before_retry(|ctx| if ctx.attempt == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        .await;
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 2, reason: ExhaustReason::Stopped, .. })), "{got:?}");
}

#[test]
fn a_blocking_operation_is_called() {
    let _virtual_time = retryrs::testing::scoped();
    let mut calls = 0;
    let got = (|| {
        calls += 1;
        if calls < 3 {
            Err(std::io::Error::other("reset"))
        } else {
            Ok(calls)
        }
    })
    .retry(&retrier(5, 100))
    .call();
    assert_eq!(got.unwrap(), 3);
    // classify: the full verdict; own_error: the error itself.
    let got = (|a: Attempt| Err::<(), _>(format!("503 #{}", a.number)))
        .retry(&retrier(3, 0))
        .classify(|_| Verdict::TRANSIENT)
        .own_error(|e| e.to_string())
        .call();
    assert_eq!(got.unwrap_err(), "503 #3");
    let mut waits = vec![];
    let got = (|| Err::<(), _>("503")).retry(&retrier(3, 100)).notify(|_, d| waits.push(d)).call();
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 3, .. })));
    assert_eq!(waits, [Duration::from_millis(100), Duration::from_millis(200)]);
}
