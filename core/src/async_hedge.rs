//! The async executor's hedged calls: what [`Retrier::execute_async`](crate::Retrier::execute_async)
//! does when the policy hedges ([`Policy::hedging`]).
//!
//! The attempts run side by side **without spawning**: each one's future lives in a slot
//! of the call's own future, and one `poll` of the call polls every attempt in flight,
//! each attempt's bound, the cancel token and the engine's next wake-up (a hand-written
//! `FuturesUnordered` of at most five futures: no dependency, and nothing needs `Send` or
//! `'static` beyond what the call itself needs). The engine ([`HedgeCall`]) says when to
//! launch, whom to cancel and when to stop; this loop only carries out its answers:
//! - a loser is cancelled by **dropping** its future (and its bound's timer) the moment
//!   the winner's value arrives, or when the call stops;
//! - dropping the call's future drops every attempt in flight;
//! - the [`CancelToken`] ends the call at once, dropping them too;
//! - each attempt gets its own bound ([`Attempt::remaining`]), and one still running when
//!   it ends is dropped and fails as a [`TimedOut`] (or the error `timed_out_as` makes).

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use crate::async_executor::TimedOut;
use crate::attempt::Attempt;
use crate::budget::RetryCause;
use crate::cancel::CancelToken;
use crate::clock::Clock;
use crate::engine::{Stop, Verdict};
use crate::event::Event;
use crate::executor::{Failed, History, RetryError, ValueVerdict};
use crate::hedge::{AttemptSet, HedgeCall, Step, MAX_HEDGE_ATTEMPTS};
use crate::policy::Policy;
use crate::sleep::Sleep;

/// One attempt in flight: its future, and the timer of its bound (none when unbounded or
/// on a virtual clock).
struct Flight<Fut, M> {
    number: u32,
    bound: Option<Duration>,
    work: Pin<Box<Fut>>,
    timer: Option<Pin<Box<M>>>,
}

/// The engine's next wake-up, as the call waits for it.
enum Wake<M> {
    /// Only an outcome (or a cancel) wakes the call.
    Never,
    /// The runtime's timer.
    Timer(Pin<Box<M>>),
    /// A virtual clock, advanced by `left` once the attempts are all pending.
    Virtual { left: Duration, slept: bool },
}

/// What woke the call.
enum Woke<T, E> {
    /// Attempt `k` ended (dropped at its bound: the error of `timed_out_as`).
    Ended {
        k: u32,
        outcome: Result<T, E>,
        /// Dropped at its bound: a quota prices the launch it asks for as a timeout's.
        timed_out: bool,
    },
    /// Attempt `k` was dropped at its bound, with no `timed_out_as` to make an error.
    Cut {
        k: u32,
        cut: TimedOut,
    },
    /// The engine's wake-up time came.
    Wake,
    Cancelled,
}

/// A hedged call in progress whose future may be dropped: a probe of the circuit breaker
/// it holds goes back then, as in the one-at-a-time executor.
struct Unreported<'a>(HedgeCall<&'a Policy>);

impl Drop for Unreported<'_> {
    fn drop(&mut self) {
        if let (None, Some(admission), Some(breaker)) =
            (self.0.outcome(), self.0.admission(), self.0.policy().breaker())
        {
            breaker.release(admission);
        }
    }
}

/// What a hedged call needs from [`Retrier::execute_async`](crate::Retrier::execute_async).
pub(crate) struct Hedged<'r, S, C, N, R, M> {
    pub(crate) policy: &'r Policy,
    pub(crate) sleep: &'r S,
    pub(crate) cancel: Option<&'r CancelToken>,
    pub(crate) clock: &'r dyn Clock,
    pub(crate) is_virtual: bool,
    pub(crate) classify: C,
    pub(crate) notify: N,
    pub(crate) predicate: Option<R>,
    /// [`AsyncRun::timed_out_as`](crate::AsyncRun::timed_out_as), if given.
    pub(crate) timed_out_as: Option<M>,
}

impl<S, C, N, R, M> Hedged<'_, S, C, N, R, M> {
    /// Runs the hedged call to its end: the winner's value, or the error of how it ended.
    pub(crate) async fn run<T, E, F, Fut>(self, mut op: F) -> Result<T, RetryError<E, T>>
    where
        S: Sleep,
        C: FnMut(&E) -> Verdict,
        N: FnMut(&Event<'_>, Option<Failed<'_, E, T>>),
        R: FnMut(&T) -> ValueVerdict,
        M: FnMut(TimedOut) -> E,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let Hedged {
            policy,
            sleep,
            cancel,
            clock,
            is_virtual,
            mut classify,
            mut notify,
            mut predicate,
            mut timed_out_as,
        } = self;
        let mut guard = Unreported(HedgeCall::start_with(policy, clock.now(), &mut |e| notify(e, None)));
        let call = &mut guard.0;
        if let Some(refusal) = call.refusal() {
            let _ = call.poll(clock.now(), &mut |e| notify(e, None));
            return Err(RetryError::circuit_open(refusal));
        }
        let mut flights: [Option<Flight<Fut, S::Timer>>; MAX_HEDGE_ATTEMPTS as usize] = Default::default();
        let mut cancelled = pin!(cancel.map(CancelToken::cancelled));
        let mut history = History::new();
        let mut now = clock.now();
        let mut step = call.poll(now, &mut |e| notify(e, history.last())).expect("a hedged call polls until it ends");
        loop {
            let wake_at = match step {
                Step::Launch(k) => {
                    let attempt =
                        Attempt::new(k, now, call.attempt_deadline(k).expect("the engine just launched this attempt"));
                    let timer = match attempt.remaining {
                        Some(left) if !is_virtual => Some(Box::pin(sleep.sleep(left))),
                        _ => None,
                    };
                    flights[k as usize - 1] =
                        Some(Flight { number: k, bound: attempt.remaining, work: Box::pin(op(attempt)), timer });
                    step =
                        call.poll(now, &mut |e| notify(e, history.last())).expect("a hedged call polls until it ends");
                    continue;
                }
                Step::Wait(at) => at,
                Step::Won { .. } => unreachable!("a win returns below, with its value"),
                Step::Stop { stop, cancel } => {
                    drop_flights(&mut flights, cancel);
                    return Err(history.stopped(stop, call.launched(), policy));
                }
                Step::Dropped => unreachable!("only attempts in flight are recorded"),
            };
            // The engine's next wake-up: a launch, or the deadline.
            let mut wake = match wake_at {
                None => Wake::Never,
                Some(at) if is_virtual => Wake::Virtual { left: at.saturating_sub(now), slept: false },
                Some(at) => Wake::Timer(Box::pin(sleep.sleep(at.saturating_sub(now)))),
            };
            let woke = poll_fn(|cx| {
                // An outcome already there wins over a cancel, a cancel over the wake-up.
                for slot in flights.iter_mut() {
                    let Some(flight) = slot else { continue };
                    if let Poll::Ready(outcome) = flight.work.as_mut().poll(cx) {
                        let k = flight.number;
                        *slot = None;
                        return Poll::Ready(Woke::Ended { k, outcome, timed_out: false });
                    }
                    if flight.timer.as_mut().is_some_and(|t| t.as_mut().poll(cx).is_ready()) {
                        let (k, bound) = (flight.number, flight.bound.unwrap_or_default());
                        // Dropped at its bound.
                        *slot = None;
                        let cut = TimedOut { attempt: k, bound };
                        return Poll::Ready(match timed_out_as.as_mut() {
                            Some(make) => Woke::Ended { k, outcome: Err(make(cut)), timed_out: true },
                            None => Woke::Cut { k, cut },
                        });
                    }
                }
                if let Some(c) = cancelled.as_mut().as_pin_mut() {
                    if c.poll(cx).is_ready() {
                        return Poll::Ready(Woke::Cancelled);
                    }
                }
                match &mut wake {
                    Wake::Never => {}
                    Wake::Timer(t) => {
                        if t.as_mut().poll(cx).is_ready() {
                            return Poll::Ready(Woke::Wake);
                        }
                    }
                    // Virtual time passes only while every attempt in flight is pending:
                    // the clock jumps to the wake-up, and the runtime gets a turn first.
                    Wake::Virtual { slept: true, .. } => return Poll::Ready(Woke::Wake),
                    Wake::Virtual { left, slept } => {
                        let _ = clock.sleep(*left, None);
                        *slept = true;
                        cx.waker().wake_by_ref();
                    }
                }
                Poll::Pending
            })
            .await;
            drop(wake);
            now = clock.now();
            step = match woke {
                Woke::Wake => call.poll(now, &mut |e| notify(e, history.last())),
                Woke::Cancelled => {
                    let in_flight = call.cancel(now, &mut |e| notify(e, history.last())).unwrap_or_default();
                    drop_flights(&mut flights, in_flight);
                    return Err(history.stopped(Stop::Cancelled, call.launched(), policy));
                }
                Woke::Ended { k, outcome: Ok(value), .. } => {
                    let verdict = match predicate.as_mut() {
                        None => ValueVerdict::Accept,
                        Some(accept) => accept(&value),
                    };
                    match verdict {
                        ValueVerdict::Accept => {
                            let won = call.record(k, Verdict::Success, now, &mut |e| notify(e, None));
                            if let Ok(Step::Won { cancel, .. }) = won {
                                // The losers are cancelled: their futures dropped now.
                                drop_flights(&mut flights, cancel);
                                return Ok(value);
                            }
                            won
                        }
                        ValueVerdict::Retry { .. } | ValueVerdict::DontRetry => {
                            let verdict = verdict.failure().unwrap_or(Verdict::TRANSIENT);
                            let step = call.record(k, verdict, now, &mut |e| notify(e, Some(Failed::Value(&value))));
                            history.set_value(value);
                            step
                        }
                    }
                }
                Woke::Ended { k, outcome: Err(error), timed_out } => {
                    let verdict = classify(&error);
                    let cause = RetryCause::from_timed_out(timed_out);
                    let step = call.record_as(k, verdict, cause, now, &mut |e| notify(e, Some(Failed::Error(&error))));
                    history.push_error(error);
                    history.not_cut();
                    step
                }
                Woke::Cut { k, cut } => {
                    let (verdict, cause) = (Verdict::TRANSIENT, RetryCause::Timeout);
                    let step = call.record_as(k, verdict, cause, now, &mut |e| notify(e, Some(Failed::TimedOut(cut))));
                    history.push_timed_out(cut);
                    step
                }
            }
            .expect("the executor records only attempts in flight, and polls until the call ends");
        }
    }
}

/// Drops the futures (and bound timers) of the attempts in `set`: how a loser is cancelled.
fn drop_flights<Fut, M>(flights: &mut [Option<Flight<Fut, M>>], set: AttemptSet) {
    for k in set.iter() {
        flights[k as usize - 1] = None;
    }
}
