//! The async executor: [`Retrier::run_async`] and [`Retrier::execute_async`], on any
//! runtime.
//!
//! ```
//! # #[cfg(feature = "tokio")] {
//! use retryrs::{transient, Attempt, Policy, Retrier, RetryAfter};
//! use std::time::Duration;
//!
//! #[derive(Debug)]
//! enum ApiError { Busy { retry_after: Option<Duration> } }
//! impl RetryAfter for ApiError {
//!     fn retry_after(&self) -> Option<Duration> {
//!         match self { ApiError::Busy { retry_after } => *retry_after }
//!     }
//! }
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! # rt.block_on(async {
//! let retrier = Retrier::new(Policy::builder().attempt_timeout(Some(Duration::from_secs(2))).build().unwrap());
//! let rate = retrier
//!     .run_async(
//!         |attempt: Attempt| async move {
//!             // attempt.remaining: the time this attempt has; overrunning it drops this future.
//!             if attempt.number < 3 { Err(ApiError::Busy { retry_after: Some(Duration::from_millis(50)) }) } else { Ok(1.0842) }
//!         },
//!         transient, // every error transient, with the wait it asks for
//!     )
//!     .await
//!     .unwrap();
//! assert_eq!(rate, 1.0842);
//! # });
//! # }
//! ```
//!
//! **A method on the retrier, and an extension trait**: the retrier is the thing a
//! service shares and configures once (a policy, maybe from a document, with a budget),
//! and `retrier.run_async(op, classify)` reads the same as the blocking [`Retrier::run`];
//! the closure gets each [`Attempt`] (its number and bound), which backon's `FnMut() ->
//! Fut` has no place for, and the error comes back as a [`RetryError`] with the history.
//! For backon's shape, `fetch.retry(&retrier).await`, see [`crate::retry`]: the same
//! executor behind it.
//!
//! What it does, beyond the blocking executor:
//! - **Runtime-agnostic**: every wait is a [`Sleep`]. [`Retrier::run_async`] uses tokio's
//!   (feature `tokio`); [`Retrier::run_async_with`] and [`AsyncRun::new`] take any other.
//! - **The attempt's bound is kept**: an attempt still running when its bound (the time
//!   left before the deadline, or the attempt timeout if smaller) ends is dropped, and
//!   fails: a transient failure with no hint, kept as [`TimedOut`] (the error's
//!   `timed_out`), or, with [`AsyncRun::timed_out_as`], an error of the caller's type
//!   judged by `classify` like any other; past the deadline it ends the call as
//!   exhausted, reason `deadline`. No bound on `E` asks for a conversion.
//! - **Cancellation**: drop the future (the wait or attempt in flight is dropped with
//!   it), or fire the [`CancelToken`] of [`AsyncRun::cancel`]: the wait or the attempt in
//!   flight ends at once, and the call ends as [`RetryError::Cancelled`].
//! - **Zero-delay retries yield** to the runtime once, so one task's retries never
//!   starve the others on its thread.
//! - **No clock read** the policy does not need: with neither a deadline nor an attempt
//!   timeout (and no listener) the clock is never read; with an attempt timeout alone,
//!   once per attempt (its start); with a deadline, also when an attempt fails.
//! - **One clock**: on tokio's timer ([`Retrier::run_async`], [`TokioSleep`](crate::TokioSleep))
//!   the deadline and the attempts' bounds are read from tokio's clock
//!   ([`TokioClock`](crate::TokioClock)), the one its waits run on; any other
//!   [`Sleep`] names its clock with [`Sleep::clock`] (the real one by default).
//! - **Which fake time for tests**: in a `#[tokio::test(start_paused = true)]` (or after
//!   `tokio::time::pause()`), tokio's paused clock is the one to use: retryrs's waits and
//!   deadline move with it, and so do the test's own timers, timeouts and the attempts'
//!   futures (a hung attempt is cut at its bound when tokio's time gets there).
//!   [`testing::scoped()`](crate::testing::scoped) is for code without tokio's clock: the
//!   blocking executor, another runtime, or the async executor on a plain [`Sleep`]
//!   closure; its virtual clock moves only through retryrs's own waits (an attempt is then
//!   never cut by a timer). Don't combine them: under the testing switch the virtual clock
//!   wins.
//! - Under the testing switch ([`crate::testing`]) or with [`AsyncRun::clock`], waits
//!   advance that virtual clock and yield instead of sleeping; attempts are then not cut
//!   short by a timer (virtual time does not pass while an attempt runs), but the
//!   deadline rule still judges them when they end.
//!
//! - **Hedging**: a policy with a hedging section ([`Policy::hedging`]) runs its attempts
//!   side by side in the call's own future, nothing spawned: the first success wins, the
//!   losers' futures are dropped, and dropping the call or firing the cancel token drops
//!   every attempt in flight (see [`crate::hedge`] for the engine's rules).
//!
//! The future is `Send` when the closures, their futures, the errors and the timer are,
//! so it can be spawned on a multi-threaded runtime.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use crate::async_hedge::Hedged;
use crate::attempt::Attempt;
use crate::breaker::CircuitBreaker;
use crate::cancel::CancelToken;
use crate::clock::{testing, Clock, SystemClock};
use crate::engine::{Call, Decision, Resume, Stop, Verdict};
use crate::event::Event;
use crate::executor::{Failed, History, Quiet, Retrier, RetryContext, RetryError, Tell};
use crate::judge::Judged;
use crate::policy::Policy;
use crate::sleep::{yield_now, Sleep};
mod run;
mod timed_out;

pub use run::{AsyncBeforeRetry, AsyncListener, AsyncResultPredicate, AsyncRun, AsyncTimedOutAs, AsyncWaitHook};
pub use timed_out::TimedOut;

/// Attempt 1's end when it ran before the engine started (a lazy start): its outcome, or
/// its cut at its bound; and the call's start it ran at when the policy bounds it (`None`:
/// the call reads no time).
struct First<T, E> {
    outcome: Raced<Result<T, E>>,
    started: Option<Duration>,
}

/// How a raced future ended.
enum Raced<O> {
    Done(O),
    Cancelled,
    TimedOut,
}

/// Polls `work` until it completes, `cancel` fires or `timer` ends, in that order of
/// precedence (a result already there wins over a cancel, a cancel over a timeout).
async fn race<O, W, M>(work: W, timer: Option<M>, cancel: Option<&CancelToken>) -> Raced<O>
where
    W: Future<Output = O>,
    M: Future<Output = ()>,
{
    let mut work = pin!(work);
    let mut timer = pin!(timer);
    let mut cancelled = pin!(cancel.map(CancelToken::cancelled));
    poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Raced::Done(out));
        }
        if let Some(c) = cancelled.as_mut().as_pin_mut() {
            if c.poll(cx).is_ready() {
                return Poll::Ready(Raced::Cancelled);
            }
        }
        if let Some(t) = timer.as_mut().as_pin_mut() {
            if t.poll(cx).is_ready() {
                return Poll::Ready(Raced::TimedOut);
            }
        }
        Poll::Pending
    })
    .await
}

impl Retrier {
    /// Runs the async `op` until it succeeds or the engine stops it, waiting on tokio's
    /// timer (feature `tokio`); `classify` turns each error into a verdict
    /// ([`transient`](crate::transient) takes every error as transient with its
    /// [`RetryAfter`](crate::RetryAfter) hint). See [the module](crate::async_executor)
    /// for what it keeps: the attempt's bound, cancellation, yields.
    ///
    /// `op` gets each [`Attempt`] by value (its future may outlive the call to `op`).
    /// Any error type will do (`String`, `anyhow::Error`, the caller's enum): an attempt
    /// dropped at its bound is told apart by [`RetryError`]'s `timed_out`.
    #[cfg(feature = "tokio")]
    pub async fn run_async<T, E, F, Fut>(&self, op: F, classify: impl FnMut(&E) -> Verdict) -> Result<T, RetryError<E>>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async_lazily(crate::sleep::TokioSleep, op, classify).await
    }

    /// [`Retrier::run_async`] on any runtime's timer: `sleep` is a [`Sleep`], e.g. the
    /// closure `|d| async_std::task::sleep(d)`.
    pub async fn run_async_with<T, E, F, Fut>(
        &self,
        sleep: impl Sleep,
        op: F,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async_lazily(sleep, op, classify).await
    }

    /// [`Retrier::run_async`] and [`Retrier::run_async_with`]: nothing listens, hooks,
    /// cancels or judges values, so with a policy that has nothing to tell or bound
    /// ([`Retrier::starts_lazily`]) attempt 1 runs before anything else, as in the
    /// blocking [`Retrier::run`]: its value returns at once, and the engine, the clock
    /// and the timer are set up only at its failure (then judged as attempt 1).
    #[inline]
    async fn run_async_lazily<S, T, E, F, Fut>(
        &self,
        sleep: S,
        mut op: F,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>>
    where
        S: Sleep,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // Not lazily once propagation is in use: an ambient context may bound the call
        // (execute_async_from constrains its policy).
        let in_context = crate::propagation::in_use();
        let first = match self.starts_lazily() && !in_context {
            true => match op(Attempt::new(1, Duration::ZERO, None)).await {
                Ok(value) => {
                    // No Call, so no Success event to count: the stats are told here.
                    self.stats_counters().count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => Some(First { outcome: Raced::Done(Err(error)), started: None }),
            },
            // Bounds of whole seconds, nothing else to ask or tell (the default policy):
            // the happy path is one clock read and attempt 1 raced against its bound, as
            // `tokio::time::timeout` would (the engine starts at its failure or its cut,
            // at this start). Under virtual time the executor starts as usual.
            false if self.starts_on_coarse_clock() && !in_context && !testing::any_on() => {
                let bound = self.first_bound();
                let (started, outcome) = match bound {
                    Some(bound) => {
                        let (started, timer) = sleep.now_and_sleep(bound);
                        (started, race(op(Attempt::first(started, Some(bound))), Some(timer), None).await)
                    }
                    None => {
                        let started = sleep.clock().unwrap_or(&SystemClock).now_coarse();
                        (started, Raced::Done(op(Attempt::first(started, None)).await))
                    }
                };
                match outcome {
                    Raced::Done(Ok(value)) => {
                        self.stats_counters().count_first_attempt_success_here();
                        return Ok(value);
                    }
                    Raced::Done(Err(error)) => Some(First { outcome: Raced::Done(Err(error)), started: Some(started) }),
                    cut => Some(First { outcome: cut, started: Some(started) }),
                }
            }
            false => None,
        };
        // No listener, statically: the engine's events reach only the stats, which read
        // their kind, so none is built (as in the blocking run).
        let got = self.execute_async_from(AsyncRun::new(sleep), Quiet, first, op, classify).await;
        got.map_err(RetryError::without_value)
    }

    /// [`Retrier::run_async`] with the options of [`AsyncRun`]: the timer, a cancel
    /// token, a listener, a result predicate, a clock.
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use retryrs::{AsyncRun, CancelToken, Policy, Retrier, RetryError, Verdict};
    /// use std::time::Duration;
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    /// # rt.block_on(async {
    /// let retrier = Retrier::new(
    ///     Policy::builder().initial_delay(Duration::from_secs(30)).max_delay(Duration::from_secs(30)).deadline(None).build().unwrap(),
    /// );
    /// let token = CancelToken::new();
    /// let got: Result<(), _> = retrier
    ///     .execute_async(
    ///         AsyncRun::tokio().cancel(&token),
    ///         |_| async { token.cancel(); Err(std::io::Error::other("503")) },
    ///         |_| Verdict::TRANSIENT,
    ///     )
    ///     .await;
    /// // The 30 s wait ended at once.
    /// assert!(matches!(got, Err(RetryError::Cancelled { attempts: 1, .. })));
    /// # });
    /// # }
    /// ```
    pub async fn execute_async<S, T, E, F, Fut>(
        &self,
        mut run: AsyncRun<'_, S, E, T>,
        op: F,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>>
    where
        S: Sleep,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let listener = run.listener.take();
        self.execute_async_from(run, listener, None, op, classify).await
    }

    /// [`Retrier::execute_async`], where `first` is attempt 1's error if the caller
    /// already ran it (a lazy start, [`Retrier::run_async_lazily`]). The listener is
    /// `listener`, not `run`'s (taken from it, or statically absent: [`Quiet`]).
    async fn execute_async_from<S, T, E, F, Fut>(
        &self,
        run: AsyncRun<'_, S, E, T>,
        mut listener: impl Tell<E, T>,
        mut first: Option<First<T, E>>,
        mut op: F,
        mut classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>>
    where
        S: Sleep,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let AsyncRun {
            sleep,
            cancel,
            clock,
            listener: _,
            mut result_predicate,
            mut wait,
            mut before_retry,
            mut timed_out_as,
        } = run;
        // A call whose attempt 1 already ran on the timer's clock stays on it.
        let started_early = first.as_ref().and_then(|f| f.started);
        let virtual_clock = match (clock, started_early) {
            (None, None) => testing::clock(),
            _ => None,
        };
        // A virtual clock (given, or the testing switch's) is advanced by waits; the real
        // one is only read, and waits go to the runtime's timer.
        let (clock, is_virtual): (&dyn Clock, bool) = match (clock, &virtual_clock) {
            (Some(c), _) => (c, true),
            (None, Some(v)) => (v, true),
            // The timer's own clock, when it has one (tokio's, which pauses): the deadline
            // and the waits on one clock.
            (None, None) => (sleep.clock().unwrap_or(&SystemClock), false),
        };
        let has_listener = listener.present();
        // Found at each event: the task may move between threads between polls.
        let stats = &**self.stats_counters();
        let mut notify = |event: &Event<'_>, failed: Option<Failed<'_, E, T>>| {
            stats.local().observe(event);
            listener.tell(event, failed);
        };
        // Inside a request's ambient context (propagation), its constraint applies.
        let constrained = match crate::propagation::in_use() {
            true => self.policy_in_context(),
            false => None,
        };
        let policy: &Policy = constrained.as_deref().unwrap_or(self.policy());
        if cancel.is_some_and(CancelToken::is_cancelled) {
            crate::engine::cancelled_before_start(policy, &mut |e| notify(e, None));
            return Err(RetryError::Cancelled { attempts: 0, errors: Vec::new(), value: None, timed_out: None });
        }
        if policy.hedging().is_some() {
            // Attempts side by side, in this future (crate::async_hedge).
            let predicate = result_predicate.as_deref_mut();
            let timed_out_as = timed_out_as.as_deref_mut();
            let hedged =
                Hedged { policy, sleep: &sleep, cancel, clock, is_virtual, classify, notify, predicate, timed_out_as };
            return hedged.run(op).await;
        }
        // As in the blocking executor: time matters only to the attempts' bounds, to a
        // breaker or a ratio budget, and to events; with none, the clock is never read.
        // Hooks see the time since the call began, too.
        let hooked = wait.is_some() || before_retry.is_some();
        let timed = policy.reads_time() || has_listener || hooked;
        let read_time = || if timed { clock.now() } else { Duration::ZERO };
        // The happy path of a policy with nothing to tell or bound (as in the blocking
        // executor): attempt 1 runs before the engine starts, and a value returns at once.
        if first.is_none() && !timed && cancel.is_none() && policy.budget.is_none() && result_predicate.is_none() {
            match op(Attempt::new(1, Duration::ZERO, None)).await {
                Ok(value) => {
                    self.stats_counters().count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => first = Some(First { outcome: Raced::Done(Err(error)), started: None }),
            }
        }
        let start = match started_early {
            Some(started) => started,
            None => read_time(),
        };
        let mut guard = Unreported(Call::start_with(policy, start, &mut |e| notify(e, None)));
        let call = &mut guard.0;
        if let Some(refusal) = call.refusal() {
            return Err(RetryError::circuit_open(refusal));
        }
        // A failure's time is read only when a decision needs it (as in the blocking
        // executor); see below for the next attempt's start.
        let failure_timed = has_listener || hooked || policy.failure_reads_time();
        let attempt_start = Cell::new(call.started_at());
        let failed_at = Cell::new(None);
        let success_timed = has_listener || policy.breaker().is_some_and(CircuitBreaker::times_successes);
        let mut history = History::new();
        let mut hooks = |ctx: &RetryContext<'_, E, T>| {
            crate::executor::plan(
                ctx,
                before_retry.as_deref_mut().map(|f| f as &mut _),
                wait.as_deref_mut().map(|f| f as &mut _),
            )
        };
        loop {
            let bound = call.attempt_bound();
            let attempt = Attempt::new(call.attempt(), attempt_start.get(), bound);
            let raced = match first.take() {
                // Attempt 1 already ran, before the engine started.
                Some(first) => first.outcome,
                None => {
                    let timer = match attempt.remaining {
                        Some(left) if !is_virtual => Some(sleep.sleep(left)),
                        _ => None,
                    };
                    match (&timer, cancel) {
                        // Nothing to race against: the attempt alone (the common, unbounded case).
                        (None, None) => Raced::Done(op(attempt).await),
                        _ => race(op(attempt), timer, cancel).await,
                    }
                }
            };
            // Err: an attempt cut at its bound, with no error of the caller's type.
            let (outcome, timed_out) = match raced {
                Raced::Done(outcome) => (Ok(outcome), false),
                Raced::TimedOut => {
                    let bound = attempt.remaining.unwrap_or_default();
                    let cut = TimedOut { attempt: attempt.number, bound };
                    match timed_out_as.as_deref_mut() {
                        Some(make) => (Ok(Err(make(cut))), true),
                        None => (Err(cut), true),
                    }
                }
                Raced::Cancelled => {
                    let _ = call.cancel(read_time(), &mut |e| notify(e, history.last()));
                    return Err(history.stopped(Stop::Cancelled, call.attempt(), policy));
                }
            };
            let started = call.started_at();
            let success_now = || if success_timed { clock.now() } else { started };
            // Made here, not before the loop: a borrow of the Cells held across an await
            // would make the future !Send.
            let failure_now = || {
                let now = if failure_timed { clock.now() } else { attempt_start.get() };
                failed_at.set(Some(now).filter(|_| failure_timed));
                now
            };
            let predicate = result_predicate.as_deref_mut();
            let hooks: Option<&mut crate::judge::PlanHook<'_, E, T>> = if hooked { Some(&mut hooks) } else { None };
            let judged = match outcome {
                Ok(outcome) => {
                    history.not_cut();
                    history.judge(
                        call,
                        outcome,
                        timed_out,
                        predicate,
                        &mut classify,
                        &mut notify,
                        failure_now,
                        success_now,
                        hooks,
                    )
                }
                Err(cut) => Judged::Decided(history.judge_timed_out(call, cut, &mut notify, failure_now, hooks)),
            };
            let decision = match judged {
                Judged::Accepted(value) => return Ok(value),
                Judged::Decided(decision) => decision,
            };
            let delay = match decision {
                Decision::Retry(delay) => delay,
                Decision::Stop(stop) => return Err(history.stopped(stop, call.attempt(), policy)),
            };
            let waited = if is_virtual {
                let ok = clock.sleep(delay, cancel).is_ok();
                yield_now().await;
                ok
            } else if delay.is_zero() {
                // Nothing to wait for, but the runtime gets its turn.
                yield_now().await;
                true
            } else {
                !matches!(race(sleep.sleep(delay), None::<std::future::Ready<()>>, cancel).await, Raced::Cancelled)
            };
            if !waited || cancel.is_some_and(CancelToken::is_cancelled) {
                let _ = call.cancel(read_time(), &mut |e| notify(e, history.last()));
                return Err(history.stopped(Stop::Cancelled, call.attempt(), policy));
            }
            // After a zero delay the failure's time is the next start, on a virtual clock
            // (a yield does not move it). On the real one the yield handed the thread to
            // other tasks for as long as they took, so the clock is read again: the
            // attempt's bound must start when the attempt does.
            attempt_start.set(match failed_at.get() {
                Some(at) if delay.is_zero() && is_virtual => at,
                _ => read_time(),
            });
            let resume = call.resume(attempt_start.get(), &mut |e| notify(e, history.last()));
            if let Resume::Stop(stop) = resume {
                return Err(history.stopped(stop, call.attempt(), policy));
            }
        }
    }
}

/// A call in progress that may end without an outcome: an async call whose future is
/// dropped (a Rust future's cancellation: a `select!`, a timeout around the whole call),
/// or a call of either executor unwound by a panic (in the attempt, `classify`, a
/// listener or a hook). A circuit breaker's probe it holds goes back then, as a cancelled
/// call's does, or the shared breaker would stay half-open and refuse every call after.
pub(crate) struct Unreported<'a>(pub(crate) Call<&'a Policy>);

impl Drop for Unreported<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // The admission alone on the way out of every call (a tuple of the three would
        // compute them all): without a breaker it is None, and nothing else is read.
        if self.0.admission.is_some() {
            self.release();
        }
    }
}

impl Unreported<'_> {
    /// Gives the probe back if the call holds one and has no outcome.
    #[cold]
    #[inline(never)]
    fn release(&mut self) {
        if let (Some(admission), None, Some(breaker)) = (self.0.admission, self.0.outcome(), self.0.policy().breaker())
        {
            breaker.release(admission);
        }
    }
}
