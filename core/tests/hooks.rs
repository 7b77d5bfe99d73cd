//! The Rust host's escape hatches (issue 24): an exact wait and a stop from a hook, in
//! the blocking and the async executor; the retrier's statistics; the deadline hint in an
//! exhaustion's message.

use std::ops::ControlFlow;
use std::time::Duration;

use retryrs::{
    AsyncRun, Attempt, Clock, ExhaustReason, Jitter, Policy, Retrier, RetryError, Run, Verdict, VirtualClock,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn policy(attempts: u64) -> retryrs::PolicyBuilder {
    Policy::builder().max_attempts(attempts).jitter(Jitter::None).initial_delay(ms(100)).deadline(None)
}

#[test]
fn a_wait_hook_sets_exact_waits_and_sees_the_engines() {
    let clock = VirtualClock::new();
    let r = Retrier::new(policy(4).build().unwrap());
    let (mut waits, mut seen) = (vec![], vec![]);
    let got = r.execute(
        Run::default()
            .clock(&clock)
            .wait_with(|ctx| {
                seen.push((ctx.attempt, ctx.delay, ctx.retries_left, *ctx.failure.error().unwrap(), ctx.elapsed));
                // The second wait is the engine's.
                (ctx.attempt != 2).then(|| ms(7 * u64::from(ctx.attempt)))
            })
            .listener(|e, _| waits.extend(e.delay)),
        |a: &Attempt| if a.number < 4 { Err(a.number) } else { Ok("ok") },
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(got.unwrap(), "ok");
    assert_eq!(waits, [ms(7), ms(200), ms(21)]);
    assert_eq!(seen, [(1, ms(100), 3, 1, ms(0)), (2, ms(200), 2, 2, ms(7)), (3, ms(400), 1, 3, ms(207))]);
    assert_eq!(clock.now(), ms(228), "the exact waits were slept");
}

#[test]
fn an_exact_wait_past_the_deadline_or_over_max_retry_after_ends_the_call() {
    let p = policy(5).deadline(Some(ms(1000))).max_retry_after(Some(ms(500))).build().unwrap();
    let r = Retrier::new(p);
    let clock = VirtualClock::new();
    let res: Result<(), _> = r.execute(
        Run::default().clock(&clock).wait_with(|_| Some(ms(501))),
        |a: &Attempt| Err(a.number),
        |_| Verdict::TRANSIENT,
    );
    assert!(
        matches!(res, Err(RetryError::Exhausted { attempts: 1, reason: ExhaustReason::RetryAfter, .. })),
        "{res:?}"
    );
    let res: Result<(), _> = r.execute(
        Run::default().clock(&clock).wait_with(|_| Some(ms(500))),
        |a: &Attempt| Err(a.number),
        |_| Verdict::TRANSIENT,
    );
    // 500 ms, then 500 more would end at 1000 (in time), then a third cannot fit.
    match res {
        Err(RetryError::Exhausted { attempts: 3, reason: ExhaustReason::Deadline, errors, .. }) => {
            assert_eq!(errors, [1, 2, 3])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_before_retry_hook_stops_the_call_with_its_history() {
    let r = Retrier::new(policy(10).build().unwrap());
    let clock = VirtualClock::new();
    let mut waited_hook = 0;
    let res: Result<(), _> = r.execute(
        Run::default()
            .clock(&clock)
            .before_retry(|ctx| if ctx.attempt == 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
            .wait_with(|_| {
                waited_hook += 1;
                None
            }),
        |a: &Attempt| Err(format!("boom {}", a.number)),
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(waited_hook, 2, "a stopped call does not ask the wait hook");
    let err = res.unwrap_err();
    assert_eq!(err.to_string(), "gave up after 3 attempts (stopped by a hook)");
    match err {
        RetryError::Exhausted { attempts: 3, reason: ExhaustReason::Stopped, errors, .. } => {
            assert_eq!(errors, ["boom 1", "boom 2", "boom 3"])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn stats_count_every_call_of_the_retrier_and_its_clones() {
    let _virtual = retryrs::testing::scoped();
    let r = Retrier::new(policy(3).build().unwrap());
    let clone = r.clone();
    assert_eq!(r.run(|_: &Attempt| Ok::<_, ()>(1), |_| Verdict::TRANSIENT).unwrap(), 1);
    let _ = clone.run(|a: &Attempt| if a.number < 2 { Err(()) } else { Ok(2) }, |_| Verdict::TRANSIENT);
    let _ = r.run(|_: &Attempt| Err::<(), _>(()), |_| Verdict::TRANSIENT);
    let _ = r.run(|_: &Attempt| Err::<(), _>(()), |_| Verdict::Permanent);
    let s = r.stats();
    assert_eq!((s.calls, s.attempts, s.retries), (4, 1 + 2 + 3 + 1, 1 + 2));
    assert_eq!((s.successes, s.rejections, s.cancellations), (2, 1, 0));
    assert_eq!(s.exhausted(ExhaustReason::Attempts), 1);
    assert_eq!(Retrier::new(Policy::default()).stats().calls, 0, "a new retrier starts at zero");
}

#[test]
fn stats_count_a_first_attempt_success_that_never_started_the_engine() {
    // No deadline, budget, breaker, listener or predicate: the executors' lazy happy path
    // runs attempt 1 before any Call exists; the call still counts.
    let r = Retrier::new(Policy::builder().deadline(None).build().unwrap());
    for _ in 0..3 {
        assert_eq!(r.run(|_: &Attempt| Ok::<_, ()>(1), |_| Verdict::TRANSIENT).unwrap(), 1);
    }
    let s = r.stats();
    assert_eq!((s.calls, s.attempts, s.successes, s.retries), (3, 3, 3, 0));
}

#[test]
fn an_exhaustion_by_deadline_says_when_max_attempts_cannot_fit() {
    let _virtual = retryrs::testing::scoped();
    // The default 15 s deadline and backoff (200 ms doubling to 5 s), max_attempts 10.
    let r = Retrier::new(Policy::builder().max_attempts(10).jitter(Jitter::None).build().unwrap());
    let err = r.run(|a: &Attempt| Err::<(), _>(a.number), |_| Verdict::TRANSIENT).unwrap_err();
    assert!(matches!(err, RetryError::Exhausted { reason: ExhaustReason::Deadline, deadline_hint: Some(_), .. }));
    assert_eq!(
        err.to_string(),
        "gave up after 7 attempts (deadline reached); max_attempts=10 needs up to 26.2 s of backoff waits (before \
         jitter), deadline is 15 s: raise deadline or lower max_attempts"
    );
    assert!(format!("{r:?}").contains("deadline_hint: max_attempts=10 needs up to 26.2 s"), "{r:?}");
    // A policy whose waits fit says nothing more, even when slow attempts ran it out.
    let r = Retrier::new(policy(3).deadline(Some(ms(1000))).build().unwrap());
    let clock = VirtualClock::new();
    let err = r
        .execute(
            Run::default().clock(&clock),
            |a: &Attempt| {
                clock.advance(ms(600));
                Err::<(), _>(a.number)
            },
            |_| Verdict::TRANSIENT,
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "gave up after 2 attempts (deadline reached)");
    assert!(!format!("{r:?}").contains("deadline_hint"));
}

#[test]
fn the_async_executor_takes_the_same_hooks() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async {
        let r = Retrier::new(policy(5).build().unwrap());
        let clock = VirtualClock::new();
        let res: Result<(), RetryError<Failure>> = r
            .execute_async(
                AsyncRun::new(tokio::time::sleep)
                    .clock(&clock)
                    .wait_with(|ctx| Some(ms(u64::from(ctx.attempt))))
                    .before_retry(|ctx| {
                        if ctx.retries_left == 2 {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    }),
                |a: Attempt| async move { Err(Failure(a.number)) },
                |_| Verdict::TRANSIENT,
            )
            .await;
        match res {
            Err(RetryError::Exhausted { attempts: 3, reason: ExhaustReason::Stopped, errors, .. }) => {
                assert_eq!(errors.len(), 3)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(clock.now(), ms(1 + 2), "the exact waits were waited");
        assert_eq!(r.stats().exhausted(ExhaustReason::Stopped), 1);
    });
}

#[derive(Debug)]
struct Failure(#[allow(dead_code)] u32);

impl From<retryrs::TimedOut> for Failure {
    fn from(_: retryrs::TimedOut) -> Self {
        Failure(0)
    }
}

#[test]
fn hooks_see_the_elapsed_time_without_a_listener_or_deadline() {
    // No deadline, no listener: the executor would not read the clock for itself.
    let r = Retrier::new(policy(3).build().unwrap());
    let clock = VirtualClock::new();
    let mut elapsed = vec![];
    let _ = r.execute(
        Run::default().clock(&clock).before_retry(|ctx| {
            elapsed.push(ctx.elapsed);
            ControlFlow::Continue(())
        }),
        |a: &Attempt| Err::<(), _>(a.number),
        |_| Verdict::TRANSIENT,
    );
    assert_eq!(elapsed, [ms(0), ms(100)]);
}
