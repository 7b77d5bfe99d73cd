//! Hedged calls on the async executor (issue 26): attempts run side by side in the call's
//! own future (nothing spawned), the first success wins and the losers' futures are
//! dropped, dropping the call or firing its cancel token drops every attempt in flight,
//! each attempt keeps its bound, and hedges draw from the retry budget.
//!
//! Real time on tokio's current-thread runtime: the stalled attempts hang (for an hour, or
//! until the client goes away), so no assertion depends on a tight sleep; the time bounds
//! are generous upper bounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use retryrs::{
    AsyncRun, Attempt, CancelToken, EventKind, ExhaustReason, Hedging, Policy, Retrier, RetryBudget, RetryError,
    Verdict,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[path = "support/stall.rs"]
mod stall;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const HANG: Duration = Duration::from_secs(3600);

fn tokio_sleep(d: Duration) -> tokio::time::Sleep {
    tokio::time::sleep(d)
}

fn hedged(max_attempts: u64, delay_ms: f64) -> retryrs::PolicyBuilder {
    Policy::builder().name("reads").hedge(Some(Hedging::fixed_ms(max_attempts, delay_ms).unwrap())).deadline(None)
}

/// Counts the attempts launched, and those whose future was dropped before it finished.
#[derive(Default, Clone)]
struct Tally {
    launched: Arc<AtomicUsize>,
    dropped_unfinished: Arc<AtomicUsize>,
}

struct DropGuard {
    tally: Tally,
    finished: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.tally.dropped_unfinished.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Tally {
    fn launched(&self) -> usize {
        self.launched.load(Ordering::SeqCst)
    }
    fn dropped(&self) -> usize {
        self.dropped_unfinished.load(Ordering::SeqCst)
    }
    /// An attempt that answers `outcome` after `after`, counting its launch and its drop.
    fn attempt<T>(
        &self,
        after: Duration,
        outcome: Result<T, std::io::Error>,
    ) -> impl std::future::Future<Output = Result<T, std::io::Error>> {
        self.launched.fetch_add(1, Ordering::SeqCst);
        let guard = DropGuard { tally: self.clone(), finished: false };
        async move {
            // The whole guard moves in (not only the field it sets).
            let mut guard = guard;
            tokio::time::sleep(after).await;
            guard.finished = true;
            outcome
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_stalled_first_attempt_is_overtaken_by_the_hedge_and_dropped() {
    let retrier = Retrier::new(hedged(3, 50.0).build().unwrap());
    let tally = Tally::default();
    let events = Mutex::new(vec![]);
    let started = Instant::now();
    let got = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).observer(|e, _| events.lock().unwrap().push((e.kind, e.attempt, e.delay))),
            |a: Attempt| {
                let after = if a.number == 1 { Duration::from_secs(2) } else { ms(10) };
                tally.attempt(after, Ok(a.number))
            },
            |_| Verdict::TRANSIENT,
        )
        .await;
    let took = started.elapsed();
    assert_eq!(got.unwrap(), 2, "the hedge won");
    assert!(took < Duration::from_secs(1), "returned well before the stalled attempt's 2 s: {took:?}");
    assert_eq!(tally.launched(), 2, "exactly two attempts launched");
    assert_eq!(tally.dropped(), 1, "the stalled loser's future was dropped when the hedge won");
    let events = events.into_inner().unwrap();
    let hedge: Vec<_> = events.iter().filter(|(k, ..)| *k == EventKind::Hedge).collect();
    assert_eq!(hedge.len(), 1, "{events:?}");
    assert_eq!(hedge[0].1, 2, "the hedge event is about attempt 2");
    assert!(hedge[0].2.is_some_and(|d| d >= ms(50)), "launched after the hedging delay: {hedge:?}");
    assert_eq!(events.last().map(|e| (e.0, e.1)), Some((EventKind::Success, 2)), "{events:?}");
}

/// The done-when of issue 26 against a loopback server: the first connection hangs until
/// the client goes away, the second answers after 10 ms.
#[tokio::test(flavor = "current_thread")]
async fn against_a_server_the_loser_s_connection_is_closed_and_two_requests_are_sent() {
    let server = stall::stall_first(|mut conn: tokio::net::TcpStream| async move {
        let mut line = String::new();
        let mut reader = BufReader::new(&mut conn);
        reader.read_line(&mut line).await.unwrap();
        tokio::time::sleep(ms(10)).await;
        conn.write_all(b"200 OK\n").await.unwrap();
    })
    .await;
    let addr = server.addr;
    let retrier = Retrier::new(hedged(3, 50.0).build().unwrap());
    let started = Instant::now();
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |_: Attempt| async move {
                let mut conn = tokio::net::TcpStream::connect(addr).await?;
                conn.write_all(b"GET /rates\n").await?;
                let mut line = String::new();
                BufReader::new(conn).read_line(&mut line).await?;
                Ok::<_, std::io::Error>(line)
            },
            |_| Verdict::TRANSIENT,
        )
        .await;
    let took = started.elapsed();
    assert_eq!(got.unwrap(), "200 OK\n");
    assert!(took < Duration::from_secs(1), "{took:?}");
    server.assert_loser_closed_and_two_sent().await;
}

#[tokio::test(flavor = "current_thread")]
async fn with_the_budget_exhausted_only_one_attempt_is_sent_and_the_call_waits_for_it() {
    let budget = Arc::new(RetryBudget::new(2.0, 0.1).unwrap());
    budget.record_failure();
    budget.record_failure();
    assert!(!budget.allows_retry());
    let retrier = Retrier::new(hedged(3, 20.0).budget(Some(budget)).build().unwrap());
    let tally = Tally::default();
    let started = Instant::now();
    let got = retrier
        .run_async_with(tokio_sleep, |a: Attempt| tally.attempt(ms(200), Ok(a.number)), |_| Verdict::TRANSIENT)
        .await;
    assert_eq!(got.unwrap(), 1);
    assert_eq!(tally.launched(), 1, "no hedge while the budget refuses retries");
    assert!(started.elapsed() >= ms(200), "the call waited for its one attempt");
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_call_drops_every_attempt_in_flight() {
    let retrier = Retrier::new(hedged(3, 10.0).build().unwrap());
    let tally = Tally::default();
    let call =
        retrier.run_async_with(tokio_sleep, |a: Attempt| tally.attempt(HANG, Ok(a.number)), |_| Verdict::TRANSIENT);
    let timed_out = tokio::time::timeout(ms(150), call).await;
    assert!(timed_out.is_err(), "every attempt hangs");
    assert_eq!(tally.launched(), 3, "all three were launched within 150 ms");
    assert_eq!(tally.dropped(), 3, "and all three were dropped with the call");
}

#[tokio::test(flavor = "current_thread")]
async fn the_cancel_token_ends_the_call_and_drops_its_attempts() {
    let retrier = Retrier::new(hedged(2, 20.0).build().unwrap());
    let tally = Tally::default();
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ms(80)).await;
            token.cancel();
        })
    };
    let call = retrier.execute_async(
        AsyncRun::new(tokio_sleep).cancel(&token),
        |a: Attempt| tally.attempt(HANG, Ok(a.number)),
        |_| Verdict::TRANSIENT,
    );
    let got = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the cancel ended the call");
    assert!(matches!(got, Err(RetryError::Cancelled { attempts: 2, .. })), "{got:?}");
    assert_eq!((tally.launched(), tally.dropped()), (2, 2));
    canceller.await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn each_attempt_is_cut_at_its_own_bound() {
    let policy = hedged(2, 30.0).attempt_timeout(Some(ms(100))).build().unwrap();
    let retrier = Retrier::new(policy);
    let tally = Tally::default();
    let bounds = Mutex::new(vec![]);
    let call = retrier.run_async_with(
        tokio_sleep,
        |a: Attempt| {
            bounds.lock().unwrap().push(a.remaining);
            tally.attempt(HANG, Ok(a.number))
        },
        |_| Verdict::TRANSIENT,
    );
    let got = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the bounds ended the call");
    let Err(RetryError::Exhausted { attempts: 2, reason: ExhaustReason::Attempts, errors, timed_out, .. }) = got else {
        panic!("{got:?}")
    };
    // A cut attempt has no error of the caller's type: the last one is kept as the cut.
    assert!(errors.is_empty(), "{errors:?}");
    assert!(timed_out.is_some_and(|t| t.bound == ms(100)), "{timed_out:?}");
    assert_eq!(*bounds.lock().unwrap(), [Some(ms(100)), Some(ms(100))], "each attempt got the attempt timeout");
    assert_eq!(tally.dropped(), 2, "each hung attempt was dropped at its bound");
}

/// An attempt dropped at its bound timed out: the hedge its failure launches is priced by
/// a quota as a retry after a timeout (10 of 15), not as an ordinary retry (5).
#[tokio::test(flavor = "current_thread")]
async fn a_hedge_launched_by_an_attempt_cut_at_its_bound_costs_a_timeouts_price() {
    let quota = Arc::new(RetryBudget::from(retryrs::QuotaBudget::new(15, 5, 10, 1).unwrap()));
    // The hedging delay never comes: only attempt 1's failure launches attempt 2.
    let policy = hedged(2, 60_000.0).attempt_timeout(Some(ms(50))).budget(Some(Arc::clone(&quota))).build().unwrap();
    let retrier = Retrier::new(policy);
    let tally = Tally::default();
    let call =
        retrier.run_async_with(tokio_sleep, |a: Attempt| tally.attempt(HANG, Ok(a.number)), |_| Verdict::TRANSIENT);
    let got = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the bounds ended the call");
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 2, .. })), "{got:?}");
    assert_eq!(tally.launched(), 2);
    // 15 - 10 for the hedge launched by attempt 1's timeout (an ordinary failure's: 10 left).
    assert_eq!(quota.as_quota().unwrap().available(), 5);
}

#[tokio::test(flavor = "current_thread")]
async fn a_fatal_failure_ends_the_call_and_drops_the_others() {
    let retrier = Retrier::new(hedged(3, 5.0).build().unwrap());
    let tally = Tally::default();
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| match a.number {
                1 => tally.attempt(ms(50), Err(std::io::Error::other("400 bad request"))),
                _ => tally.attempt(HANG, Ok(a.number)),
            },
            |e: &std::io::Error| if e.to_string().starts_with("400") { Verdict::Permanent } else { Verdict::TRANSIENT },
        )
        .await;
    let Err(RetryError::Rejected(e)) = got else { panic!("{got:?}") };
    assert_eq!(e.to_string(), "400 bad request", "the original error");
    assert_eq!(tally.launched(), 3);
    assert_eq!(tally.dropped(), 2, "the two hedges in flight were dropped");
}

#[tokio::test(flavor = "current_thread")]
async fn a_non_fatal_failure_launches_the_next_hedge_at_once() {
    // A 10 s hedging delay: only attempt 1's failure can launch attempt 2 in time.
    let retrier = Retrier::new(hedged(2, 10_000.0).build().unwrap());
    let tally = Tally::default();
    let started = Instant::now();
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| match a.number {
                1 => tally.attempt(ms(20), Err(std::io::Error::other("503"))),
                _ => tally.attempt(ms(10), Ok(a.number)),
            },
            |_| Verdict::TRANSIENT,
        )
        .await;
    assert_eq!(got.unwrap(), 2);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!((tally.launched(), tally.dropped()), (2, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn a_value_the_predicate_rejects_is_a_non_fatal_failure_kept_for_the_error() {
    let retrier = Retrier::new(hedged(2, 10.0).build().unwrap());
    let got = retrier
        .execute_async(
            AsyncRun::new(tokio_sleep).result_predicate(|v: &u32| {
                if *v >= 500 {
                    retryrs::ValueVerdict::Retry { hint: None }
                } else {
                    retryrs::ValueVerdict::Accept
                }
            }),
            |a: Attempt| async move { Ok::<u32, std::io::Error>(if a.number == 1 { 503 } else { 502 }) },
            |_| Verdict::TRANSIENT,
        )
        .await;
    let Err(RetryError::Exhausted { attempts: 2, reason: ExhaustReason::Attempts, value, .. }) = got else {
        panic!("{got:?}")
    };
    assert_eq!(value, Some(502), "the last rejected value");
}

/// `run_async` (feature `tokio`) hedges on tokio's timer.
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread")]
async fn run_async_hedges_on_tokio_s_timer() {
    let retrier = Retrier::new(hedged(2, 20.0).build().unwrap());
    let tally = Tally::default();
    let got = retrier
        .run_async(
            |a: Attempt| tally.attempt(if a.number == 1 { HANG } else { ms(5) }, Ok(a.number)),
            |_| Verdict::TRANSIENT,
        )
        .await;
    assert_eq!(got.unwrap(), 2);
    assert_eq!((tally.launched(), tally.dropped()), (2, 1));
}

/// The hedged call's future is `Send` when its parts are: it can be spawned on a
/// multi-threaded runtime.
#[test]
fn a_hedged_call_s_future_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let retrier = Retrier::new(hedged(2, 20.0).build().unwrap());
    let call = retrier.execute_async(
        AsyncRun::new(tokio_sleep).observer(|_, _| {}),
        |a: Attempt| async move { Ok::<_, std::io::Error>(a.number) },
        |_| Verdict::TRANSIENT,
    );
    is_send(&call);
}

/// On a virtual clock the hedging delay is waited out by advancing the clock (only while
/// every attempt in flight is pending): no timer, no real time.
#[test]
fn on_a_virtual_clock_the_hedge_goes_out_after_the_delay_in_virtual_time() {
    use retryrs::Clock;
    use std::future::Future;
    let clock = retryrs::VirtualClock::new();
    let retrier = Retrier::new(hedged(3, 50.0).build().unwrap());
    let launched_at = Mutex::new(vec![]);
    let call = retrier.execute_async(
        AsyncRun::new(|_: Duration| -> std::future::Ready<()> { panic!("no timer on a virtual clock") }).clock(&clock),
        |a: Attempt| {
            launched_at.lock().unwrap().push(clock.now());
            let number = a.number;
            async move {
                if number == 1 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, std::io::Error>(number)
            }
        },
        |_| Verdict::TRANSIENT,
    );
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let got = loop {
        if let std::task::Poll::Ready(v) = call.as_mut().poll(&mut cx) {
            break v;
        }
    };
    assert_eq!(got.unwrap(), 2);
    assert_eq!(*launched_at.lock().unwrap(), [ms(0), ms(50)], "attempt 2 went out 50 ms later, in virtual time");
}

/// An attempt dropped at its attempt timeout is a timeout to a quota budget: the hedge it
/// launches costs 10 (the AWS SDKs' price of a retry after a timeout), not 5; the success
/// gives the 10 back.
#[tokio::test(flavor = "current_thread")]
async fn a_hedge_after_an_attempt_dropped_at_its_bound_is_priced_as_a_timeout() {
    let quota = Arc::new(RetryBudget::from(retryrs::QuotaBudget::new(500, 5, 10, 1).unwrap()));
    let policy = hedged(2, 3_600_000.0).attempt_timeout(Some(ms(50))).budget(Some(Arc::clone(&quota))).build().unwrap();
    let retrier = Retrier::new(policy);
    let tally = Tally::default();
    let seen = Mutex::new(vec![]);
    let got = retrier
        .run_async_with(
            tokio_sleep,
            |a: Attempt| {
                seen.lock().unwrap().push(quota.as_quota().unwrap().available());
                tally.attempt(if a.number == 1 { HANG } else { ms(0) }, Ok(a.number))
            },
            |_| Verdict::TRANSIENT,
        )
        .await;
    assert_eq!(got.unwrap(), 2);
    assert_eq!(*seen.lock().unwrap(), vec![500, 490], "the hedge after the timeout cost 10");
    assert_eq!(quota.as_quota().unwrap().available(), 500, "the success gave the 10 back");
    assert_eq!(tally.dropped(), 1, "attempt 1 was dropped at its bound");
}
