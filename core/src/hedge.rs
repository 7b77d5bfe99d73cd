//! Hedging: the sans-IO engine of a hedged call (gRPC A6's `hedgingPolicy`, The Tail at
//! Scale's "hedged requests").
//!
//! Retries fix failures; hedging fixes slowness. A hedged call launches attempt 1, and if
//! it has not answered after the hedging delay, launches attempt 2 beside it, and so on up
//! to `max_attempts` (at most 5, as A6 caps it). The first success wins: its value is the
//! call's, every other attempt in flight is cancelled and its late result dropped (never
//! returned, never counted as a failure). A non-fatal failure (a [`Verdict::Transient`])
//! lets the remaining attempts go on and launches the next one at once (or after the
//! server's hint); a fatal one ([`Verdict::Permanent`]) ends the call.
//!
//! [`HedgeCall`] answers, at each moment, "launch attempt k now" ([`Step::Launch`]), "wait
//! until T or an outcome" ([`Step::Wait`]), "attempt j won: cancel the others"
//! ([`Step::Won`]) or "stop" ([`Step::Stop`]). A host runs the attempts concurrently and
//! reports each outcome with the time ([`HedgeCall::record`]); like [`crate::Call`] it
//! never sleeps, never reads a clock and never calls user code.
//!
//! The extra load is capped. With a retry budget, each hedge (attempt 2 and later) is
//! not launched while the budget refuses retries; a native policy's hedge is paid for as a
//! retry (a token bucket's hedge spends a token), while a policy from a gRPC service
//! config follows A6 exactly: a hedge is only *gated* on tokens > max/2, and only failures
//! spend ([`Hedging::with_a6_throttling`]). Without a budget, a default guard
//! ([`Hedging::guard`]: 10% of the calls of the last 10 s, plus one hedge a second) keeps
//! an overloaded server, where every attempt is slow, from seeing twice its load; it can
//! be turned off ([`Hedging::without_guard`]). The delay is fixed
//! ([`HedgeDelay::Fixed`]) or adaptive ([`HedgeDelay::Adaptive`]): a live quantile of
//! recent attempt latencies, kept in a bounded [`LatencySketch`] shared by every call of
//! the policy, clamped to a floor and a ceiling.
//!
//! A policy's circuit breaker is asked once per hedged call, before attempt 1, as for any
//! call ([`HedgeCall::start_with`]): the breaker counts calls, and a hedged call is one
//! call however many attempts it launches (per-attempt counting counts each outcome
//! recorded; a cancelled loser is not one).

use std::ops::Deref;
use std::time::Duration;

use crate::breaker::Admission;
use crate::budget::{RetryBudget, RetryCause};
use crate::engine::{StateError, Stop, Verdict};
use crate::event::{Event, EventKind, ExhaustReason};
use crate::policy::Policy;
use crate::spelling::Spelling;

mod hedging;
mod sketch;

pub use hedging::{one_at_a_time_refusal, HedgeDelay, Hedging};
pub use sketch::LatencySketch;

/// The most attempts a hedged call makes (gRPC A6 caps `maxAttempts` at 5).
pub const MAX_HEDGE_ATTEMPTS: u32 = 5;

/// Samples an adaptive delay needs before it follows the quantile; until then the delay
/// is the ceiling (few hedges while nothing is known).
pub const MIN_SAMPLES: usize = 20;

/// The latencies an adaptive sketch keeps by default (the most recent ones).
pub const DEFAULT_WINDOW: usize = 1000;

/// The default guard's window: hedges are counted over the last 10 s (Finagle's ttl).
pub const GUARD_WINDOW: Duration = Duration::from_secs(10);

/// The default guard's share: hedges may add 10% to the calls of the window.
pub const GUARD_PERCENT: f64 = 0.1;

/// The default guard's reserve: one hedge a second is always allowed (a client that sends
/// little may still hedge).
pub const GUARD_MIN_PER_SEC: u32 = 1;

/// A hedging knob out of range: which field (`max_attempts`, `delay`, `quantile`,
/// `floor`, `ceiling`, `window`) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgeError {
    /// The field of the hedging policy.
    pub field: &'static str,
    /// What was wrong with it, with the value given.
    pub message: String,
}

impl HedgeError {
    /// The error with the field, and any other field its message names, in `spelling`'s
    /// words (Node: `ceilingMs must be >= floorMs, got 5 ms (floorMs is 10 ms)`).
    pub fn render(&self, spelling: Spelling) -> String {
        format!("{} {}", spelling.name(self.field), spelling.respell(&self.message, &["floor"]))
    }
}

impl std::fmt::Display for HedgeError {
    /// The error in Rust's words (the contract's names).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

impl std::error::Error for HedgeError {}

fn bad(field: &'static str, message: String) -> HedgeError {
    HedgeError { field, message }
}

/// A set of attempt numbers (1 to 5): the attempts a host must cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttemptSet(u8);

impl AttemptSet {
    /// No attempt.
    pub const EMPTY: AttemptSet = AttemptSet(0);

    fn bit(attempt: u32) -> u8 {
        1 << (attempt - 1)
    }

    /// Whether attempt `n` is in the set.
    pub fn contains(&self, n: u32) -> bool {
        (1..=MAX_HEDGE_ATTEMPTS).contains(&n) && self.0 & Self::bit(n) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// How many attempts it holds.
    pub fn len(&self) -> u32 {
        self.0.count_ones()
    }

    /// The attempts, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=MAX_HEDGE_ATTEMPTS).filter(|n| self.contains(*n))
    }

    /// The set as a bit mask: bit `n - 1` is attempt `n` (what the C API hands over).
    pub fn bits(&self) -> u8 {
        self.0
    }
}

/// What a host does next with a hedged call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Launch attempt k (1-based) now, beside those in flight; then ask
    /// [`HedgeCall::poll`] again.
    Launch(u32),
    /// Wait until this time (the host's time base) or until an attempt in flight ends,
    /// whichever comes first, then [`HedgeCall::poll`] (or [`HedgeCall::record`]). `None`:
    /// wait for an outcome only.
    Wait(Option<Duration>),
    /// Attempt `attempt` won: return its value and cancel the attempts in `cancel`.
    Won {
        /// The winner.
        attempt: u32,
        /// The losers still in flight.
        cancel: AttemptSet,
    },
    /// The call is over without a winner: cancel the attempts in `cancel`, then surface
    /// the outcome as for [`crate::Call`] (the failure of the attempt the last event is
    /// about, or the host's exhaustion or cancellation error).
    Stop {
        /// How the call ended.
        stop: Stop,
        /// The attempts still in flight.
        cancel: AttemptSet,
    },
    /// A result that came after the call ended or after its attempt was cancelled: drop
    /// it (never returned, never counted as a failure).
    Dropped,
}

/// The state of one hedged call. `P` is any handle on a [`Policy`], as for
/// [`crate::Call`]. A policy without hedging runs as one attempt and no hedge.
#[derive(Debug, Clone)]
pub struct HedgeCall<P: Deref<Target = Policy>> {
    policy: P,
    start: Duration,
    max_attempts: u32,
    delay: Duration,
    launched: u32,
    launch_at: [Duration; MAX_HEDGE_ATTEMPTS as usize],
    running: AttemptSet,
    /// When the next attempt may launch; `None`: none will unless a failure asks.
    next_at: Option<Duration>,
    /// Why no further attempt may launch now (budget, retry_after), if something refused.
    refused: Option<ExhaustReason>,
    /// The attempt the last event was about.
    last: u32,
    done: Option<Stop>,
    /// What the policy's circuit breaker said at the start (`None`: no breaker).
    admission: Option<Admission>,
    /// What the last hedge took from a quota budget (`None`: no hedge yet).
    retry_cost: Option<u64>,
    /// What the next launch follows, for a quota's price: a timeout when the failure that
    /// asked for it ran out of its bound ([`HedgeCall::record_timeout`]).
    next_cause: RetryCause,
}

impl<P: Deref<Target = Policy>> HedgeCall<P> {
    /// Begins a hedged call at `now`; the first [`HedgeCall::poll`] launches attempt 1.
    /// An adaptive delay is read from the sketch once, here. With a circuit breaker in the
    /// policy, use [`HedgeCall::start_with`] (this one drops the breaker's events).
    pub fn start(policy: P, now: Duration) -> Self {
        Self::start_with(policy, now, &mut |_: &Event<'_>| {})
    }

    /// [`HedgeCall::start`], asking the policy's circuit breaker first (if it has one),
    /// once for the whole call. A refused call launches nothing: its first
    /// [`HedgeCall::poll`] is `Stop(Exhausted(CircuitOpen))` (the Exhausted event, attempt
    /// 0, was emitted here). A probe emits BreakerHalfOpen first.
    pub fn start_with(policy: P, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Self {
        let admission = match &policy.breaker {
            Some(_) => crate::breaker::admit(&policy, now, sink),
            None => None,
        };
        if !matches!(admission, Some(Admission::Refused { .. })) {
            if let Some(budget) = Self::hedge_budget(&policy) {
                budget.call_started(now);
            }
        }
        let (max_attempts, delay) = match policy.hedging() {
            Some(h) => (h.max_attempts, h.current_delay()),
            None => (1, Duration::ZERO),
        };
        HedgeCall {
            policy,
            start: now,
            max_attempts,
            delay,
            launched: 0,
            launch_at: [now; MAX_HEDGE_ATTEMPTS as usize],
            running: AttemptSet::EMPTY,
            next_at: Some(now),
            refused: None,
            last: 0,
            done: None,
            admission,
            retry_cost: None,
            next_cause: RetryCause::Failure,
        }
    }

    /// For a call the circuit breaker refused: the state that refused it and the time
    /// left before a probe may go.
    pub fn refusal(&self) -> Option<(crate::breaker::BreakerState, Duration)> {
        match self.admission {
            Some(Admission::Refused { state, retry_in }) => Some((state, retry_in)),
            _ => None,
        }
    }

    /// The policy this call runs.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What the circuit breaker said at the start (`None`: no breaker): an executor whose
    /// call may be dropped unfinished hands a probe back with it.
    pub(crate) fn admission(&self) -> Option<Admission> {
        self.admission
    }

    /// The delay between launches this call uses.
    pub fn hedging_delay(&self) -> Duration {
        self.delay
    }

    /// Attempts launched so far.
    pub fn launched(&self) -> u32 {
        self.launched
    }

    /// The attempts in flight.
    pub fn running(&self) -> AttemptSet {
        self.running
    }

    /// How the call ended, once it has.
    pub fn outcome(&self) -> Option<Stop> {
        self.done
    }

    /// When attempt `k` (launched, in flight) runs out of time: the call's deadline, or
    /// its own attempt timeout if that ends sooner; `Ok(None)` when unbounded.
    pub fn attempt_deadline(&self, k: u32) -> Result<Option<Duration>, StateError> {
        if !self.running.contains(k) {
            return Err(StateError::NoAttempt(if self.done.is_some() { "ended" } else { "not running" }));
        }
        Ok(self.policy.attempt_deadline(self.start, self.launch_at[k as usize - 1]))
    }

    /// Attempt `k`'s time left at `now` (zero once past), or `Ok(None)` when unbounded:
    /// what a host hands to the attempt (contract, "The attempt's bound"). A `now` before
    /// the attempt's launch counts as its launch: never more than the bound itself.
    pub fn remaining(&self, k: u32, now: Duration) -> Result<Option<Duration>, StateError> {
        let bound = self.attempt_deadline(k)?; // checks k first: launch_at is indexed by it
        let launched = self.launch_at[k as usize - 1];
        Ok(bound.map(|end| end.saturating_sub(now.max(launched))))
    }

    /// What to do at `now`: launch the next attempt, wait, or stop (the deadline passed,
    /// or nothing is in flight and nothing more may launch).
    pub fn poll(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<Step, StateError> {
        if self.done.is_some() {
            return Err(StateError::Ended);
        }
        if self.refusal().is_some() {
            // The refusal's one event was emitted at the start.
            let stop = Stop::Exhausted(ExhaustReason::CircuitOpen);
            self.done = Some(stop);
            return Ok(Step::Stop { stop, cancel: AttemptSet::EMPTY });
        }
        let elapsed = now.saturating_sub(self.start);
        if self.policy.deadline.is_some_and(|d| elapsed > d) {
            return Ok(self.stop(Stop::Exhausted(ExhaustReason::Deadline), now, sink));
        }
        if self.next_at.is_some_and(|at| at <= now) && self.launched < self.max_attempts {
            if self.launched == 0 || self.draw_token(now) {
                let k = self.launched + 1;
                self.launched = k;
                self.launch_at[k as usize - 1] = now;
                self.running.0 |= AttemptSet::bit(k);
                self.last = k;
                self.next_at = (k < self.max_attempts).then(|| now.saturating_add(self.delay));
                if k > 1 {
                    let waited = now.saturating_sub(self.launch_at[k as usize - 2]);
                    self.emit(EventKind::Hedge, k, elapsed, Some(waited), None, sink);
                }
                return Ok(Step::Launch(k));
            }
            self.refused = Some(ExhaustReason::Budget);
            self.next_at = None;
        }
        let pending = self.next_at.filter(|_| self.launched < self.max_attempts);
        if self.running.is_empty() && pending.is_none() {
            let reason = if self.launched >= self.max_attempts {
                ExhaustReason::Attempts
            } else {
                self.refused.unwrap_or(ExhaustReason::Attempts)
            };
            return Ok(self.stop(Stop::Exhausted(reason), now, sink));
        }
        let deadline =
            self.policy.deadline.map(|d| self.start.saturating_add(d).saturating_add(Duration::from_millis(1)));
        let wake = match (pending, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(Step::Wait(wake))
    }

    /// Attempt `k` ended at `now` with `verdict`. A success wins; a fatal failure
    /// ([`Verdict::Permanent`]) ends the call; a non-fatal one launches the next attempt
    /// at once (after the hint, if it carries one) and lets the others go on. A result
    /// for an attempt no longer in flight is [`Step::Dropped`].
    pub fn record(
        &mut self,
        k: u32,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        self.record_as(k, verdict, RetryCause::Failure, now, sink)
    }

    /// [`HedgeCall::record`] for an attempt that ran out of its bound (the host cut it at
    /// its attempt timeout, or its I/O timed out): the same step, but the attempt a
    /// non-fatal failure launches is priced as a retry after a timeout by a quota budget
    /// (the AWS SDKs charge 10, not 5), as [`crate::Call::record_timeout`] prices a retry.
    pub fn record_timeout(
        &mut self,
        k: u32,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        self.record_as(k, verdict, RetryCause::Timeout, now, sink)
    }

    /// [`HedgeCall::record`] with what a launch it asks for follows: after an attempt that
    /// timed out ([`RetryCause::Timeout`]), a quota budget prices that next attempt as a
    /// retry after a timeout (as [`crate::Call::record_as`] does for a retry).
    pub fn record_as(
        &mut self,
        k: u32,
        verdict: Verdict,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        if k == 0 || k > self.launched {
            return Err(StateError::NotAttempting(if self.done.is_some() { "ended" } else { "not launched" }));
        }
        if self.done.is_some() || !self.running.contains(k) {
            return Ok(Step::Dropped);
        }
        self.running.0 &= !AttemptSet::bit(k);
        self.last = k;
        self.sample(k, now);
        let elapsed = now.saturating_sub(self.start);
        let mut admission = self.admission;
        let launched = self.launch_at[k as usize - 1];
        crate::breaker::count_attempt(&self.policy, &mut admission, verdict, launched, now, &mut |t| {
            self.transition(t, k, elapsed, sink)
        });
        self.admission = admission;
        let hint = match verdict {
            Verdict::Success => {
                if let Some(b) = &self.policy.budget {
                    b.call_succeeded(self.retry_cost);
                }
                let cancel = self.cancel_running(now);
                self.done = Some(Stop::Success);
                let abandoned = cancel.len();
                self.emit(EventKind::Success, k, elapsed, None, None, &mut |e| {
                    sink(&Event { attempts_abandoned: abandoned, ..*e })
                });
                self.count_call(Stop::Success, now, sink);
                return Ok(Step::Won { attempt: k, cancel });
            }
            Verdict::Permanent => {
                self.emit(EventKind::AttemptFailed, k, elapsed, None, None, sink);
                return Ok(self.stop(Stop::Rejected, now, sink));
            }
            Verdict::Transient { hint } => Some(hint),
            // A6 pushback "don't retry": a failure, and no further hedge; those in flight go on.
            Verdict::DontRetry => None,
        };
        self.emit(EventKind::AttemptFailed, k, elapsed, None, None, sink);
        if let Some(b) = &self.policy.budget {
            b.attempt_failed();
        }
        if self.policy.deadline.is_some_and(|d| elapsed > d) {
            return Ok(self.stop(Stop::Exhausted(ExhaustReason::Deadline), now, sink));
        }
        let Some(hint) = hint else {
            self.refused = Some(ExhaustReason::RetryAfter);
            self.next_at = None;
            return self.poll(now, sink);
        };
        if self.launched < self.max_attempts {
            match (hint, self.policy.max_retry_after) {
                (Some(h), Some(limit)) if h > limit => {
                    self.refused = Some(ExhaustReason::RetryAfter);
                    self.next_at = None;
                }
                // A6: a non-fatal failure sends the next hedge at once (or after the
                // server's pushback).
                (Some(h), _) => {
                    self.next_at = Some(now.saturating_add(h));
                    self.next_cause = cause;
                }
                (None, _) => {
                    self.next_at = Some(now);
                    self.next_cause = cause;
                }
            }
        }
        self.poll(now, sink)
    }

    /// The call was cancelled at `now`: emits Cancelled; the host cancels the attempts
    /// in the returned set.
    pub fn cancel(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<AttemptSet, StateError> {
        if self.done.is_some() {
            return Err(StateError::Ended);
        }
        match self.stop(Stop::Cancelled, now, sink) {
            Step::Stop { cancel, .. } => Ok(cancel),
            _ => unreachable!("stop returns Step::Stop"),
        }
    }

    /// What limits the hedges of `policy`'s calls: its budget, else its hedging's default
    /// guard (unless turned off).
    fn hedge_budget(policy: &Policy) -> Option<&RetryBudget> {
        policy.budget.as_deref().or_else(|| policy.hedging().and_then(|h| h.guard.as_deref()))
    }

    /// A native hedge is paid for as a retry (a token bucket's hedge also spends one
    /// token); under A6's throttling it is only gated (tokens > max/2) and spends nothing.
    /// Either way it is refused while the budget (or the default guard) refuses retries.
    fn draw_token(&mut self, now: Duration) -> bool {
        // A launch a failure asked for is priced by what that failure was; a hedge sent on
        // its timer as a plain retry.
        let cause = std::mem::replace(&mut self.next_cause, RetryCause::Failure);
        let a6 = self.policy.hedging().is_some_and(Hedging::a6_throttling);
        match (&self.policy.budget, Self::hedge_budget(&self.policy)) {
            (Some(b), _) if a6 => b.allows_retry(),
            (Some(b), _) => match b.try_retry_after(cause, now) {
                Some(cost) => {
                    b.record_failure();
                    self.retry_cost = Some(cost);
                    true
                }
                None => false,
            },
            (None, Some(guard)) => guard.try_retry(now).is_some(),
            (None, None) => true,
        }
    }

    /// Emits a breaker transition's event, about attempt `k`, at `elapsed`.
    fn transition(&self, t: crate::breaker::Transition, k: u32, elapsed: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (kind, delay) = crate::breaker::transition_event(t);
        self.emit(kind, k, elapsed, delay, None, sink);
    }

    /// The call ended with `stop` at `now`: the breaker counts it.
    fn count_call(&self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (k, elapsed) = (self.last, now.saturating_sub(self.start));
        crate::breaker::count_call(&self.policy, self.admission, stop, self.start, now, &mut |t| {
            self.transition(t, k, elapsed, sink)
        });
    }

    fn sample(&self, k: u32, now: Duration) {
        if let Some(sketch) = self.policy.hedging().and_then(Hedging::sketch) {
            sketch.record(now.saturating_sub(self.launch_at[k as usize - 1]));
        }
    }

    /// Cancels every attempt in flight; each one's latency so far joins the sketch (a
    /// lower bound: without it a sketch would see only the fast attempts that win).
    fn cancel_running(&mut self, now: Duration) -> AttemptSet {
        let cancel = self.running;
        for k in cancel.iter() {
            self.sample(k, now);
        }
        self.running = AttemptSet::EMPTY;
        cancel
    }

    fn stop(&mut self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Step {
        let cancel = self.cancel_running(now);
        self.done = Some(stop);
        let elapsed = now.saturating_sub(self.start);
        let (kind, reason) = match stop {
            Stop::Success => (EventKind::Success, None),
            Stop::Rejected => (EventKind::Rejected, None),
            Stop::Exhausted(r) => (EventKind::Exhausted, Some(r)),
            Stop::Cancelled => (EventKind::Cancelled, None),
        };
        // Attempts in flight at the end were made, though they never settle: Stats
        // counts them (each one: a hedged call may have several in flight).
        let abandoned = cancel.len();
        let mut tell = |e: &Event<'_>| sink(&Event { attempts_abandoned: abandoned, ..*e });
        self.emit(kind, self.last, elapsed, None, reason, &mut tell);
        self.count_call(stop, now, sink);
        Step::Stop { stop, cancel }
    }

    fn emit(
        &self,
        kind: EventKind,
        attempt: u32,
        elapsed: Duration,
        delay: Option<Duration>,
        reason: Option<ExhaustReason>,
        sink: &mut impl FnMut(&Event<'_>),
    ) {
        sink(&Event::of(&self.policy, kind, attempt, elapsed, delay, reason));
    }
}

#[cfg(test)]
mod tests;
