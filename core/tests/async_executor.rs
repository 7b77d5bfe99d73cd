//! The async executor on tokio's current-thread runtime: the runtime keeps running during
//! retries, dropping the future or firing the cancel token ends a wait at once, the
//! deadline and the attempt timeout cut a hung attempt short, and the server's hint
//! carried by the error is waited out.
//!
//! The timer is tokio's, passed as a closure (`|d| tokio::time::sleep(d)`): the way any
//! runtime plugs in, and it needs no crate feature. `run_async` itself (feature `tokio`)
//! has its own test at the end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retryrs::{
    transient, AsyncRun, Attempt, CancelToken, Clock, ExhaustReason, Jitter, Policy, Retrier, RetryAfter, RetryError,
    TimedOut, Verdict, VirtualClock,
};

/// An error of the kind a client returns: a status and the Retry-After it carried. It
/// has no variant for the executor's timeout: none is needed.
#[derive(Debug, PartialEq)]
enum ApiError {
    Status(u16, Option<Duration>),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Status(status, _) => write!(f, "HTTP {status}"),
        }
    }
}

impl RetryAfter for ApiError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status(_, hint) => *hint,
        }
    }
}

fn tokio_sleep(d: Duration) -> tokio::time::Sleep {
    tokio::time::sleep(d)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn policy() -> retryrs::PolicyBuilder {
    Policy::builder().jitter(Jitter::None).deadline(None).max_delay(Duration::from_secs(60))
}

#[tokio::test(flavor = "current_thread")]
async fn a_ticker_on_the_same_thread_keeps_ticking_through_the_retries() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            let mut every = tokio::time::interval(ms(10));
            loop {
                every.tick().await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let retrier = Retrier::new(policy().initial_delay(ms(150)).max_attempts(3).build().unwrap());
    let before = ticks.load(Ordering::Relaxed);
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| async move {
                if a.number < 3 {
                    Err(ApiError::Status(503, None))
                } else {
                    Ok(a.number)
                }
            },
            transient,
        )
        .await;
    let during = ticks.load(Ordering::Relaxed) - before;
    ticker.abort();
    assert_eq!(got.unwrap(), 3);
    // 450 ms of waits (150 + 300) on a 10 ms ticker: a blocking wait would leave it at 0.
    assert!(during >= 5, "the ticker ticked {during} times during 450 ms of retry waits");
}

#[tokio::test(flavor = "current_thread")]
async fn zero_delay_retries_yield_to_the_other_tasks() {
    let turns = Arc::new(AtomicUsize::new(0));
    let other = tokio::spawn({
        let turns = turns.clone();
        async move {
            loop {
                turns.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        }
    });
    let retrier = Retrier::new(policy().initial_delay(Duration::ZERO).max_attempts(50).build().unwrap());
    let seen = turns.clone();
    let got: Result<(), _> = retrier
        .run_async_with(
            tokio_sleep,
            // Never pending itself: without a yield between attempts, the other task
            // would not run until the call ends.
            move |a: Attempt| {
                let turns = seen.load(Ordering::Relaxed);
                async move { Err(ApiError::Status(503, Some(Duration::ZERO)).tap(a.number, turns)) }
            },
            transient,
        )
        .await;
    other.abort();
    match got {
        Err(RetryError::Exhausted { attempts: 50, errors, .. }) => assert_eq!(errors.len(), 50),
        other => panic!("{other:?}"),
    }
    // The other task ran between the attempts (at least once per retry).
    assert!(turns.load(Ordering::Relaxed) >= 49, "the other task ran {} times", turns.load(Ordering::Relaxed));
}

trait Tap {
    fn tap(self, attempt: u32, turns: usize) -> Self;
}
impl Tap for ApiError {
    /// Checks, at each attempt after the first, that the other task has had a turn.
    fn tap(self, attempt: u32, turns: usize) -> Self {
        assert!(turns + 1 >= attempt as usize, "attempt {attempt} started after only {turns} turns of the other task");
        self
    }
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_future_ends_the_wait_at_once() {
    let retrier = Retrier::new(policy().initial_delay(Duration::from_secs(30)).build().unwrap());
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let started = tokio::time::Instant::now();
    let call = retrier.run_async_with(
        tokio_sleep,
        move |_: Attempt| {
            counted.fetch_add(1, Ordering::Relaxed);
            async { Err::<(), _>(ApiError::Status(503, None)) }
        },
        transient,
    );
    // The call fails once, then waits 30 s; the timeout drops it after 100 ms.
    let got = tokio::time::timeout(ms(100), call).await;
    assert!(got.is_err(), "the call cannot have ended by itself");
    assert_eq!(attempts.load(Ordering::Relaxed), 1);
    assert!(started.elapsed() < Duration::from_secs(10), "dropped after {:?}", started.elapsed());
    // Nothing runs after the drop: no second attempt.
    tokio::time::sleep(ms(50)).await;
    assert_eq!(attempts.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_cancel_token_ends_a_wait_and_an_attempt_at_once() {
    let retrier = Retrier::new(policy().initial_delay(Duration::from_secs(30)).build().unwrap());
    let token = CancelToken::new();
    let canceller = tokio::spawn({
        let token = token.clone();
        async move {
            tokio::time::sleep(ms(50)).await;
            token.cancel();
        }
    });
    let started = tokio::time::Instant::now();
    let mut events = vec![];
    let got: Result<(), _> = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).cancel(&token).observer(|e, _| events.push(e.kind.to_string())),
            |_| async { Err(ApiError::Status(503, None)) },
            transient,
        )
        .await;
    canceller.await.unwrap();
    match got {
        Err(RetryError::Cancelled { attempts: 1, errors, .. }) => assert_eq!(errors, [ApiError::Status(503, None)]),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(10), "cancelled after {:?}", started.elapsed());
    assert_eq!(events, ["attempt_failed", "retrying", "cancelled"]);

    // During an attempt: the hung attempt is dropped, nothing is retried.
    let token = CancelToken::new();
    let fire = token.clone();
    let runs = AtomicUsize::new(0);
    let got: Result<(), _> = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).cancel(&token),
            |_| {
                runs.fetch_add(1, Ordering::Relaxed);
                let fire = fire.clone();
                async move {
                    tokio::spawn(async move {
                        tokio::time::sleep(ms(20)).await;
                        fire.cancel();
                    });
                    std::future::pending::<Result<(), ApiError>>().await
                }
            },
            transient,
        )
        .await;
    assert!(matches!(got, Err(RetryError::Cancelled { attempts: 1, .. })), "{got:?}");
    assert_eq!(runs.load(Ordering::Relaxed), 1);

    // Already cancelled: no attempt at all.
    let got: Result<(), _> = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).cancel(&token),
            |_| {
                runs.fetch_add(1, Ordering::Relaxed);
                async { Err(ApiError::Status(503, None)) }
            },
            transient,
        )
        .await;
    assert!(matches!(got, Err(RetryError::Cancelled { attempts: 0, .. })), "{got:?}");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_deadline_interrupts_a_hung_attempt() {
    let deadline = ms(300);
    let retrier = Retrier::new(policy().deadline(Some(deadline)).build().unwrap());
    let started = std::time::Instant::now();
    let got: Result<(), _> = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| async move {
                assert_eq!(a.remaining, Some(ms(300)));
                // A server that never answers.
                std::future::pending::<Result<(), ApiError>>().await
            },
            transient,
        )
        .await;
    let took = started.elapsed();
    match got {
        Err(
            ref e @ RetryError::Exhausted { attempts: 1, reason: ExhaustReason::Deadline, ref errors, timed_out, .. },
        ) => {
            // The cut is the last failure, and the cause: no error of the caller's type.
            assert!(errors.is_empty(), "{errors:?}");
            assert!(
                matches!(timed_out, Some(TimedOut { attempt: 1, bound, .. }) if bound == deadline),
                "{timed_out:?}"
            );
            let source = std::error::Error::source(e).expect("the cut is the source");
            assert_eq!(source.to_string(), "attempt 1 timed out after 300 ms");
        }
        other => panic!("{other:?}"),
    }
    // The contract's bound: the caller has its answer within the deadline + 250 ms.
    assert!(took < deadline + ms(250), "took {took:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_attempt_timeout_drops_an_attempt_and_the_next_one_runs() {
    let retrier = Retrier::new(
        policy()
            .initial_delay(ms(10))
            .attempt_timeout(Some(ms(200)))
            .deadline(Some(Duration::from_secs(5)))
            .build()
            .unwrap(),
    );
    let started = tokio::time::Instant::now();
    let got = retrier
        .execute_async(
            // The cut attempt becomes the caller's own error, which classify then judges.
            AsyncRun::new(tokio_sleep).timed_out_as(std::io::Error::from),
            |a: Attempt| async move {
                if a.number == 1 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, std::io::Error>(a.number)
            },
            |e: &std::io::Error| {
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
                assert_eq!(e.to_string(), "attempt 1 timed out after 200 ms");
                Verdict::TRANSIENT
            },
        )
        .await;
    assert_eq!(got.unwrap(), 2);
    // Paused time: exactly the timeout, then the 10 ms wait.
    assert_eq!(started.elapsed(), ms(210));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_retry_after_carried_by_the_error_is_honoured() {
    let retrier = Retrier::new(policy().initial_delay(Duration::ZERO).build().unwrap());
    let started = tokio::time::Instant::now();
    let mut starts = vec![];
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| {
                starts.push(started.elapsed());
                async move {
                    if a.number == 1 {
                        Err(ApiError::Status(429, Some(Duration::from_secs(1))))
                    } else {
                        Ok("ok")
                    }
                }
            },
            transient,
        )
        .await;
    assert_eq!(got.unwrap(), "ok");
    assert_eq!(starts, [Duration::ZERO, Duration::from_secs(1)]);

    // Longer than max_retry_after (60 s by default): the 429 comes back at once.
    let got: Result<(), _> = retrier
        .run_async_with(
            tokio_sleep,
            |_| async { Err(ApiError::Status(429, Some(Duration::from_secs(3600)))) },
            transient,
        )
        .await;
    match got {
        Err(RetryError::Exhausted { attempts: 1, reason: ExhaustReason::RetryAfter, errors, .. }) => {
            assert_eq!(errors, [ApiError::Status(429, Some(Duration::from_secs(3600)))])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

/// A virtual clock that counts its reads.
#[derive(Default)]
struct Counting {
    clock: VirtualClock,
    reads: AtomicUsize,
}

impl Clock for Counting {
    fn now(&self) -> Duration {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.clock.now()
    }
    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), retryrs::clock::Cancelled> {
        self.clock.sleep(delay, cancel)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn virtual_time_and_no_clock_read_without_a_bound() {
    let clock = Counting::default();
    let retrier = Retrier::new(policy().initial_delay(Duration::from_secs(10)).build().unwrap());
    let got = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).clock(&clock),
            |a: Attempt| async move {
                assert_eq!(a.remaining, None);
                if a.number < 3 {
                    Err(ApiError::Status(503, None))
                } else {
                    Ok(a.number)
                }
            },
            transient,
        )
        .await;
    assert_eq!(got.unwrap(), 3);
    // The 30 s of waits advanced the virtual clock; nobody read it.
    assert_eq!(clock.clock.now(), Duration::from_secs(30));
    assert_eq!(clock.reads.load(Ordering::Relaxed), 0);

    // With a deadline the clock is read, and the bound is virtual time's.
    let bounded = Retrier::new(
        policy().initial_delay(Duration::from_secs(10)).deadline(Some(Duration::from_secs(15))).build().unwrap(),
    );
    let got: Result<(), _> = bounded
        .execute_async(
            AsyncRun::new(tokio_sleep).clock(&clock),
            |_| async { Err(ApiError::Status(503, None)) },
            transient,
        )
        .await;
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 2, reason: ExhaustReason::Deadline, .. })), "{got:?}");
    assert!(clock.reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn the_future_is_send_so_it_can_be_spawned() {
    fn spawnable<F: std::future::Future + Send>(_: &F) {}
    let retrier = Retrier::new(Policy::default());
    let token = CancelToken::new();
    let call = retrier.execute_async(
        AsyncRun::new(tokio_sleep).cancel(&token).observer(|_, _| {}),
        |_| async { Ok::<_, std::io::Error>(1) },
        |_| Verdict::TRANSIENT,
    );
    spawnable(&call);
    // run_async_with, whose attempt 1 may run before the engine starts (a lazy start).
    let lazy = Retrier::new(policy().build().unwrap());
    let call = lazy.run_async_with(tokio_sleep, |_| async { Ok::<_, std::io::Error>(1) }, |_| Verdict::TRANSIENT);
    spawnable(&call);
}

#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn run_async_waits_on_tokio_with_the_tokio_feature() {
    let retrier = Retrier::new(policy().initial_delay(ms(250)).build().unwrap());
    let started = tokio::time::Instant::now();
    let got = retrier
        .run_async(
            |a: Attempt| async move {
                if a.number < 3 {
                    Err(ApiError::Status(503, None))
                } else {
                    Ok(a.number)
                }
            },
            transient,
        )
        .await;
    assert_eq!(got.unwrap(), 3);
    assert_eq!(started.elapsed(), ms(750));
    // TokioSleep is a Sleep like any closure.
    let got: Result<u32, _> = retrier
        .execute_async(
            AsyncRun::new(retryrs::TokioSleep),
            |_| async { Err(ApiError::Status(400, None)) },
            |_| Verdict::Permanent,
        )
        .await;
    assert!(matches!(got, Err(RetryError::Rejected(ApiError::Status(400, None)))));
}

/// One clock under tokio: the deadline is read from tokio's clock, as the waits and the
/// attempt's bound are, so under paused time a hung attempt with a 30 s deadline ends the
/// call at 30 s of tokio time after one attempt (on std's clock, which paused time does
/// not move, the deadline never came: 5 attempts and 152 s).
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn under_paused_time_the_deadline_is_on_tokios_clock() {
    let retrier = Retrier::new(policy().deadline(Some(Duration::from_secs(30))).build().unwrap());
    let started = tokio::time::Instant::now();
    let got = retrier.run_async(|_: Attempt| std::future::pending::<Result<(), ApiError>>(), transient).await;
    match got {
        Err(RetryError::Exhausted { attempts: 1, reason: ExhaustReason::Deadline, timed_out: Some(cut), .. }) => {
            assert_eq!(cut.bound, Duration::from_secs(30));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    // Each attempt's bound is the time left on the same clock.
    let seen = std::sync::Mutex::new(vec![]);
    let got = retrier
        .run_async(
            |a: Attempt| {
                seen.lock().unwrap().push(a.remaining);
                async { Err::<(), _>(ApiError::Status(503, Some(Duration::from_secs(10)))) }
            },
            transient,
        )
        .await;
    assert!(matches!(got, Err(RetryError::Exhausted { reason: ExhaustReason::Deadline, .. })), "{got:?}");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen[..2], [Some(Duration::from_secs(30)), Some(Duration::from_secs(20))], "{seen:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_probe_whose_future_is_dropped_goes_back_to_the_breaker() {
    use retryrs::{BreakerConfig, BreakerState, CircuitBreaker};
    let scope = retryrs::testing::scoped();
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = Duration::from_secs(30);
    let breaker = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let retrier = Retrier::new(policy().max_attempts(1).breaker(Some(breaker.clone())).build().unwrap());
    let down = retrier.run_async_with(
        tokio_sleep,
        |_: Attempt| async { Err::<(), _>(ApiError::Status(503, None)) },
        transient,
    );
    assert!(matches!(down.await, Err(RetryError::Exhausted { reason: ExhaustReason::Attempts, .. })));
    scope.clock().advance(Duration::from_secs(30));
    assert_eq!(breaker.state(scope.clock().now()), BreakerState::HalfOpen);
    // The probe's attempt hangs; a timeout around the whole call drops its future.
    let hung =
        retrier.run_async_with(tokio_sleep, |_: Attempt| std::future::pending::<Result<(), ApiError>>(), transient);
    assert!(tokio::time::timeout(ms(20), hung).await.is_err());
    // The probe went back: the next call is the probe, and its success closes the breaker.
    let up = retrier.run_async_with(tokio_sleep, |_: Attempt| async { Ok::<_, ApiError>(7) }, transient);
    assert_eq!(up.await.unwrap(), 7);
    assert_eq!(breaker.state(scope.clock().now()), BreakerState::Closed);
}

/// Calls on many threads (more than the stats' per-thread cells) all count, each event on
/// the thread that polled the call when it happened.
#[test]
fn calls_on_many_threads_are_all_counted() {
    let retrier = Retrier::new(policy().initial_delay(Duration::ZERO).jitter(Jitter::None).build().unwrap());
    let (threads, calls) = (40u64, 200u64);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
                rt.block_on(async {
                    for i in 0..calls {
                        let fails = u32::from(i % 4 == 0);
                        let got = retrier
                            .run_async_with(
                                tokio_sleep,
                                |a: Attempt| async move {
                                    if a.number <= fails {
                                        Err(ApiError::Status(503, None))
                                    } else {
                                        Ok(a.number)
                                    }
                                },
                                transient,
                            )
                            .await;
                        assert_eq!(got.unwrap(), fails + 1);
                    }
                });
            });
        }
    });
    let (done, failed) = (threads * calls, threads * calls / 4);
    let s = retrier.stats();
    assert_eq!((s.calls, s.successes, s.attempts, s.retries), (done, done, done + failed, failed));
}

/// A policy bounded in whole seconds with nothing to ask or tell (the default) runs
/// attempt 1 before the engine starts, raced against its bound: the deadline is still
/// measured from the call's start (attempt 1's 2 s count against it), one deadline for
/// the call, and the stats see every attempt.
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lazily_started_bounded_call_measures_its_deadline_from_its_start() {
    let retrier = Retrier::new(Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).build().unwrap());
    let seen = std::sync::Mutex::new(vec![]);
    let got = retrier
        .run_async(
            |a: Attempt| {
                seen.lock().unwrap().push(a);
                async move {
                    if a.number == 1 {
                        tokio::time::sleep(Duration::from_secs(2)).await;
                        Err(ApiError::Status(503, None))
                    } else {
                        Ok(a.number)
                    }
                }
            },
            transient,
        )
        .await;
    assert_eq!(got.unwrap(), 2);
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen[0].remaining, Some(Duration::from_secs(15)));
    assert_eq!(seen[1].remaining, Some(Duration::from_secs(13)), "{seen:?}");
    assert_eq!(seen[1].deadline, seen[0].deadline);
    let s = retrier.stats();
    assert_eq!((s.calls, s.attempts, s.retries, s.successes), (1, 2, 1, 1));
    // A value at once is counted as well.
    assert_eq!(retrier.run_async(|a: Attempt| async move { Ok::<_, ApiError>(a.number) }, transient).await.unwrap(), 1);
    let s = retrier.stats();
    assert_eq!((s.calls, s.attempts, s.successes), (2, 3, 2));
}

/// Under the testing switch the same call starts as usual, on the virtual clock.
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread")]
async fn under_the_testing_switch_a_bounded_call_starts_on_the_virtual_clock() {
    let scope = retryrs::testing::scoped();
    scope.clock().advance(Duration::from_secs(5));
    let retrier = Retrier::new(Policy::builder().build().unwrap());
    let got = retrier.run_async(|a: Attempt| async move { Ok::<_, ApiError>(a) }, transient).await.unwrap();
    assert_eq!(got.deadline, Some(Duration::from_secs(20)), "5 s of virtual time plus the 15 s deadline");
}
