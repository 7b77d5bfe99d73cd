//! The sans-IO decision engine: the whole contract of one call, as a small state object.
//!
//! A host drives it: it runs an attempt, classifies the outcome into a [`Verdict`], and
//! asks [`Call::record`] what to do. The answer is "retry after D" or "stop". After
//! waiting, the host calls [`Call::after_wait`]. The engine never sleeps, never reads a
//! clock (every method takes `now`), never calls user code, and never allocates.

use std::ops::Deref;
use std::time::Duration;

use crate::backoff::Backoff;
use crate::breaker::{Admission, BreakerState};
use crate::budget::RetryCause;
use crate::event::{Event, EventKind, ExhaustReason};
use crate::knob::MAX_WAIT_MS;
use crate::policy::Policy;

mod protocol;

pub use protocol::{hint_from_hook_ms, Decision, Plan, Proposal, Resume, StateError, Stop, Verdict};

pub use crate::units::duration_from_ms;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Attempting,
    /// [`Call::propose`] computed this wait; [`Call::settle`] comes next.
    /// The computed wait, and what the retry after it follows (its price in a quota).
    Proposed(Duration, RetryCause),
    Waiting,
    Done(Stop),
}

impl State {
    fn describe(&self) -> &'static str {
        match self {
            State::Attempting => "attempting",
            State::Proposed(..) => "proposed",
            State::Waiting => "waiting",
            State::Done(_) => "ended",
        }
    }
}

/// The state of one call: the attempt number, when it began, its jitter stream. `P` is any
/// handle on a [`Policy`] (`&Policy` in Rust code, `Arc<Policy>` in a binding that keeps
/// the call in a host object).
#[derive(Debug, Clone)]
pub struct Call<P: Deref<Target = Policy>> {
    pub(crate) policy: P,
    start: Duration,
    attempt_start: Duration,
    attempt: u32,
    state: State,
    backoff: Backoff,
    /// What the policy's circuit breaker said at the start (`None`: no breaker).
    pub(crate) admission: Option<Admission>,
    /// What the last retry took from a quota budget (`None`: no retry yet).
    retry_cost: Option<u64>,
}

impl<P: Deref<Target = Policy>> Call<P> {
    /// Begins a call whose first attempt starts at `now` (any monotonic time base; the
    /// engine only subtracts). Emits nothing: attempt 1 runs next.
    /// With a circuit breaker in the policy, use [`Call::start_with`] (this one drops the
    /// breaker's events and the refusal's Exhausted event).
    pub fn start(policy: P, now: Duration) -> Self {
        Self::start_with(policy, now, &mut |_: &Event<'_>| {})
    }

    /// [`Call::start`], asking the policy's circuit breaker first (if it has one). A
    /// refused call has ended before it began: [`Call::outcome`] is
    /// `Exhausted(CircuitOpen)`, attempt 0, one Exhausted event emitted, and the host
    /// makes no attempt ([`Call::refusal`] says why). A probe emits BreakerHalfOpen first.
    #[inline]
    pub fn start_with(policy: P, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Self {
        // Each arm starts the call on its own: without a breaker the admission is a
        // constant `None`, so the refusal checks after it fold away (a call started after
        // a join of the two arms wrote the whole admission and asked again whether it was
        // refused).
        match &policy.breaker {
            Some(_) => {
                let admission = crate::breaker::admit(&policy, now, sink);
                Self::start_admitted(policy, now, admission)
            }
            None => Self::start_admitted(policy, now, None),
        }
    }

    /// [`Call::start`] for a call the host already put to the breaker with
    /// [`crate::breaker::admit`] (a host that starts a `Call` only at the first failure).
    #[inline]
    pub fn start_admitted(policy: P, now: Duration, admission: Option<Admission>) -> Self {
        let mut call = Call {
            policy,
            start: now,
            attempt_start: now,
            attempt: 1,
            state: State::Attempting,
            backoff: Backoff::new(),
            admission,
            retry_cost: None,
        };
        if let Some(Admission::Refused { .. }) = admission {
            call.attempt = 0;
            call.state = State::Done(Stop::Exhausted(ExhaustReason::CircuitOpen));
            return call;
        }
        if let Some(budget) = &call.policy.budget {
            budget.call_started(now);
        }
        call
    }

    /// For a call the circuit breaker refused: the state that refused it and the time
    /// left before a probe may go.
    pub fn refusal(&self) -> Option<(BreakerState, Duration)> {
        match self.admission {
            Some(Admission::Refused { state, retry_in }) => Some((state, retry_in)),
            _ => None,
        }
    }

    /// When the attempt in progress runs out of time, on the host's time base: the
    /// call's deadline, or its attempt timeout if that ends sooner; `Ok(None)` when the
    /// attempt is unbounded. An error unless an attempt is in progress. Needs no clock.
    pub fn attempt_deadline(&self) -> Result<Option<Duration>, StateError> {
        if self.state != State::Attempting {
            return Err(StateError::NoAttempt(self.state.describe()));
        }
        Ok(self.policy.attempt_deadline(self.start, self.attempt_start))
    }

    /// [`Call::attempt_deadline`] for an executor that asks only while an attempt is in
    /// progress (its loop runs an attempt right after the call starts or resumes): the
    /// bound itself, without the state check and its `Result`.
    #[inline(always)]
    pub(crate) fn attempt_bound(&self) -> Option<Duration> {
        debug_assert!(self.state == State::Attempting, "the executor runs op only while an attempt is in progress");
        self.policy.attempt_deadline(self.start, self.attempt_start)
    }

    /// The attempt in progress's bound at `now`: the time it has left (zero once it has
    /// run past it), or `Ok(None)` when it is unbounded. What a host hands to the attempt
    /// (contract, "The attempt's bound"). A `now` before the attempt started counts as its
    /// start (a host's clocks can disagree): the answer never exceeds the bound itself.
    /// An error unless an attempt is in progress.
    pub fn remaining(&self, now: Duration) -> Result<Option<Duration>, StateError> {
        Ok(self.attempt_deadline()?.map(|end| end.saturating_sub(now.max(self.attempt_start))))
    }

    /// The policy this call runs under.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The current attempt (1-based): the one running, or the one whose failure is being
    /// waited out. When the call has ended, the number of attempts made.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// When the call began, on the time base the host passes in.
    pub fn started_at(&self) -> Duration {
        self.start
    }

    /// How the call ended, once it has.
    pub fn outcome(&self) -> Option<Stop> {
        match self.state {
            State::Done(stop) => Some(stop),
            _ => None,
        }
    }

    /// Steps 1 to 8 of the contract (step 5 refuses a hint over `max_retry_after`): the verdict on the current attempt, at time `now`.
    /// Emits AttemptFailed and then one of Retrying, Rejected, Exhausted; or Success.
    /// The same as [`Call::propose`] followed by [`Call::settle`] with [`Plan::Engine`]
    /// (for a host without hooks that act on the wait).
    // Inline hints: the hosts' call loops are hot, and whether the engine's two steps got
    // inlined into them used to depend on how codegen units happened to be split.
    #[inline]
    pub fn record(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Decision, StateError> {
        self.record_as(verdict, RetryCause::Failure, now, sink)
    }

    /// [`Call::record`] for an attempt that ran out of its bound (the host cut it short,
    /// or its I/O timed out): the same verdict and decision, but a retry after it is
    /// priced as a timeout's by a quota budget (the AWS SDKs charge 10, not 5, and a
    /// success after it gives the 10 back).
    #[inline]
    pub fn record_timeout(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Decision, StateError> {
        self.record_as(verdict, RetryCause::Timeout, now, sink)
    }

    /// [`Call::record`] with what the retry after this attempt follows, for a host that
    /// knows it per attempt (a verdict code that says "timed out"): [`RetryCause::Failure`]
    /// is [`Call::record`], [`RetryCause::Timeout`] is [`Call::record_timeout`].
    ///
    /// ```
    /// use retryrs::{Call, Decision, Policy, QuotaBudget, RetryBudget, RetryCause, Verdict};
    /// use std::{sync::Arc, time::Duration};
    /// // A quota of 15: an ordinary retry costs 5, a timeout's 10.
    /// let quota = RetryBudget::from(QuotaBudget::new(15, 5, 10, 1).unwrap());
    /// let policy = Policy::builder().initial_delay(Duration::ZERO).budget(Some(Arc::new(quota))).build().unwrap();
    /// let mut call = Call::start(&policy, Duration::ZERO);
    /// let first = call.record_as(Verdict::TRANSIENT, RetryCause::Timeout, Duration::ZERO, &mut |_| {});
    /// assert!(matches!(first, Ok(Decision::Retry(_))));
    /// call.after_wait(Duration::ZERO, &mut |_| {}).unwrap();
    /// // 5 left: not enough for a second timeout's retry (an ordinary one would fit).
    /// let second = call.record_as(Verdict::TRANSIENT, RetryCause::Timeout, Duration::ZERO, &mut |_| {});
    /// assert!(matches!(second, Ok(Decision::Stop(_))));
    /// ```
    #[inline(always)]
    pub fn record_as(
        &mut self,
        verdict: Verdict,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Decision, StateError> {
        if self.state != State::Attempting {
            return Err(StateError::NotAttempting(self.state.describe()));
        }
        Ok(self.record_attempt(verdict, cause, now, sink))
    }

    /// [`Call::record`] (`cause`: [`Call::record_timeout`]'s price) for an executor whose
    /// loop records only while an attempt is in progress: the decision itself. (Unwrapped
    /// from a `Result` in the caller, the decision went through memory in pieces and was
    /// read back whole: a store-forwarding stall on every failure.)
    ///
    /// # Panics
    /// When no attempt is in progress (an executor bug).
    #[inline(always)]
    pub(crate) fn record_attempt(
        &mut self,
        verdict: Verdict,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Decision {
        debug_assert!(self.state == State::Attempting, "the executor only records while an attempt is in progress");
        match self.propose_attempt(verdict, now, sink) {
            Ok((delay, _)) => self.settle_step(Plan::Engine, delay, cause, now, sink),
            Err(stop) => Decision::Stop(stop),
        }
    }

    /// The first half of [`Call::record`], for a host whose hooks may change the wait or
    /// stop the call (contract step 5a): classifies the verdict at `now`, emits
    /// AttemptFailed, and either ends the call exactly as `record` would (success,
    /// rejected, exhausted by attempts, by the deadline the attempt overran, or by a hint
    /// over `max_retry_after`: [`Proposal::Stop`]), or computes the wait and returns
    /// [`Proposal::Wait`]. The call is then "proposed": the host runs its hooks (they may
    /// take any time, awaited or not) and answers with [`Call::settle`]. The jitter is
    /// drawn here, whatever the hooks answer, so the stream of later waits is the same.
    /// (A quota budget prices the retry as an ordinary failure's; a timeout's through
    /// [`Call::propose_timeout`].)
    #[inline]
    pub fn propose(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Proposal, StateError> {
        self.propose_as(verdict, RetryCause::Failure, now, sink)
    }

    /// [`Call::propose`] for an attempt that ran out of its bound (see
    /// [`Call::record_timeout`]): [`Call::settle`] then prices the retry as a timeout's.
    #[inline]
    pub fn propose_timeout(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Proposal, StateError> {
        self.propose_as(verdict, RetryCause::Timeout, now, sink)
    }

    /// [`Call::propose`] with what the retry would follow (see [`Call::record_as`]):
    /// [`Call::settle`] prices it by `cause`.
    #[inline(always)]
    pub fn propose_as(
        &mut self,
        verdict: Verdict,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Proposal, StateError> {
        match self.propose_step(verdict, now, sink)? {
            Ok((delay, hint)) => {
                self.state = State::Proposed(delay, cause);
                let retries_left = crate::event::retries_left(self.policy.max_attempts, self.attempt);
                Ok(Proposal::Wait { delay, attempt: self.attempt, retries_left, hint })
            }
            Err(stop) => Ok(Proposal::Stop(stop)),
        }
    }

    /// The second half: the host's [`Plan`] for the wait [`Call::propose`] computed, at
    /// `now` (the hooks may have taken time). An exact wait over `max_retry_after` (when
    /// set) ends the call with reason `retry_after`; a wait that cannot finish before the
    /// deadline (or a deadline that passed during the hooks) ends it with reason
    /// `deadline`; [`Plan::Stop`] ends it with reason `stopped`. Then the budget is asked
    /// (not for a stopped call). Emits Retrying with the final wait, or Exhausted.
    #[inline]
    pub fn settle(
        &mut self,
        plan: Plan,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Decision, StateError> {
        let State::Proposed(computed, cause) = self.state else {
            return Err(StateError::NotProposed(self.state.describe()));
        };
        Ok(self.settle_step(plan, computed, cause, now, sink))
    }

    /// Steps 1 to 5: `Ok((wait, hint))` when the call may wait, `Err(stop)` when it ended.
    #[inline(always)]
    fn propose_step(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Result<(Duration, Option<Duration>), Stop>, StateError> {
        if self.state != State::Attempting {
            return Err(StateError::NotAttempting(self.state.describe()));
        }
        Ok(self.propose_attempt(verdict, now, sink))
    }

    /// [`Call::propose_step`] with an attempt in progress.
    #[inline(always)]
    fn propose_attempt(
        &mut self,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<(Duration, Option<Duration>), Stop> {
        let elapsed = now.saturating_sub(self.start);
        if self.admission.is_some() {
            self.count_attempt(verdict, self.attempt_start, now, sink);
        }
        let hint = match verdict {
            Verdict::Success => {
                if let Some(budget) = &self.policy.budget {
                    budget.call_succeeded(self.retry_cost);
                }
                return Err(self.finish(Stop::Success, EventKind::Success, elapsed, None, sink));
            }
            Verdict::Permanent => {
                self.emit(EventKind::AttemptFailed, elapsed, None, None, sink);
                return Err(self.finish(Stop::Rejected, EventKind::Rejected, elapsed, None, sink));
            }
            Verdict::Transient { hint } => hint,
            Verdict::DontRetry => None,
        };
        self.emit(EventKind::AttemptFailed, elapsed, None, None, sink);
        if let Some(budget) = &self.policy.budget {
            budget.attempt_failed();
        }
        // An attempt that overran the deadline ends the call with reason deadline, checked
        // before the attempt count and the hint: the deadline is what cut the call short,
        // on the last attempt too. (A success past the deadline is still a success, above.)
        if self.past_deadline(elapsed) {
            return Err(self.exhaust(ExhaustReason::Deadline, elapsed, sink));
        }
        if self.attempt >= self.policy.max_attempts {
            return Err(self.exhaust(ExhaustReason::Attempts, elapsed, sink));
        }
        // Step 5: a server that asks for longer than the policy accepts gets a fast failure,
        // not a pinned caller; one that says "don't retry" gets none at all. Checked before
        // the backoff draws, so the jitter stream is the same whether or not the hint was
        // refused.
        if verdict == Verdict::DontRetry {
            return Err(self.exhaust(ExhaustReason::RetryAfter, elapsed, sink));
        }
        if let (Some(hint), Some(limit)) = (hint, self.policy.max_retry_after) {
            if hint > limit {
                return Err(self.exhaust(ExhaustReason::RetryAfter, elapsed, sink));
            }
        }
        // Clamped to the longest wait validation implies (only a hint with both limits
        // off can be longer), so no host's `now + delay` wraps.
        let delay = self.backoff.wait(&self.policy, self.attempt, hint, MAX_WAIT_MS);
        Ok((delay, hint))
    }

    /// Steps 5a to 8 for the wait `computed` and the host's plan, at `now`.
    #[inline(always)]
    fn settle_step(
        &mut self,
        plan: Plan,
        computed: Duration,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Decision {
        let elapsed = now.saturating_sub(self.start);
        let delay = match plan {
            Plan::Engine => computed,
            Plan::Exact(exact) => {
                // The same rule as a server's hint: longer than the policy accepts is a
                // fast failure, not a pinned caller.
                if let Some(limit) = self.policy.max_retry_after {
                    if exact > limit {
                        return Decision::Stop(self.exhaust(ExhaustReason::RetryAfter, elapsed, sink));
                    }
                }
                Duration::from_millis(crate::backoff::ceil_ms(exact).min(MAX_WAIT_MS))
            }
            Plan::Stop => return Decision::Stop(self.exhaust(ExhaustReason::Stopped, elapsed, sink)),
        };
        if let Some(deadline) = self.policy.deadline {
            if elapsed.saturating_add(delay) > deadline {
                return Decision::Stop(self.exhaust(ExhaustReason::Deadline, elapsed, sink));
            }
        }
        if let Some(budget) = &self.policy.budget {
            match budget.try_retry_after(cause, now) {
                Some(cost) => self.retry_cost = Some(cost),
                None => return Decision::Stop(self.exhaust(ExhaustReason::Budget, elapsed, sink)),
            }
        }
        self.state = State::Waiting;
        self.emit(EventKind::Retrying, elapsed, Some(delay), None, sink);
        Decision::Retry(delay)
    }

    /// Step 9: the wait is over at `now`. Past the deadline the call ends as Exhausted
    /// (reason deadline) without another attempt; otherwise the next attempt runs.
    #[inline]
    pub fn after_wait(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<Resume, StateError> {
        if self.state != State::Waiting {
            return Err(StateError::NotWaiting(self.state.describe()));
        }
        Ok(self.resume(now, sink))
    }

    /// [`Call::after_wait`] for an executor that resumes only after a Retry decision
    /// (its loop waits only then): the answer itself, without the state check and its
    /// `Result`.
    #[inline(always)]
    pub(crate) fn resume(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Resume {
        debug_assert!(self.state == State::Waiting, "the executor only resumes after a retry decision");
        let elapsed = now.saturating_sub(self.start);
        if self.past_deadline(elapsed) {
            return Resume::Stop(self.exhaust(ExhaustReason::Deadline, elapsed, sink));
        }
        self.attempt += 1;
        self.attempt_start = now;
        self.state = State::Attempting;
        Resume::Attempt(self.attempt)
    }

    /// The call was cancelled at `now`, during a wait or an attempt. Emits Cancelled.
    pub fn cancel(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<Stop, StateError> {
        if let State::Done(_) = self.state {
            return Err(StateError::Ended);
        }
        let elapsed = now.saturating_sub(self.start);
        // During an attempt, the Cancelled event says so: the attempt was made (Stats).
        if self.state != State::Attempting {
            return Ok(self.finish(Stop::Cancelled, EventKind::Cancelled, elapsed, None, sink));
        }
        let mut tell = |e: &Event<'_>| match e.kind {
            EventKind::Cancelled => sink(&Event { attempt_interrupted: true, ..*e }),
            _ => sink(e),
        };
        Ok(self.finish(Stop::Cancelled, EventKind::Cancelled, elapsed, None, &mut tell))
    }

    /// The deadline has passed: `elapsed > deadline` (exactly at it is still in time).
    fn past_deadline(&self, elapsed: Duration) -> bool {
        self.policy.deadline.is_some_and(|deadline| elapsed > deadline)
    }

    fn exhaust(&mut self, reason: ExhaustReason, elapsed: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Stop {
        self.finish(Stop::Exhausted(reason), EventKind::Exhausted, elapsed, Some(reason), sink)
    }

    #[inline]
    fn finish(
        &mut self,
        stop: Stop,
        kind: EventKind,
        elapsed: Duration,
        reason: Option<ExhaustReason>,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Stop {
        self.state = State::Done(stop);
        self.emit(kind, elapsed, None, reason, sink);
        if self.admission.is_some() {
            self.count_call(stop, self.start.saturating_add(elapsed), sink);
        }
        stop
    }

    pub(crate) fn emit(
        &self,
        kind: EventKind,
        elapsed: Duration,
        delay: Option<Duration>,
        reason: Option<ExhaustReason>,
        sink: &mut impl FnMut(&Event<'_>),
    ) {
        sink(&Event::of(&self.policy, kind, self.attempt, elapsed, delay, reason));
    }
}

/// A call cancelled before its first attempt (an already-aborted signal): emits the one
/// Cancelled event, attempt 0, and returns [`Stop::Cancelled`].
pub fn cancelled_before_start(policy: &Policy, sink: &mut impl FnMut(&Event<'_>)) -> Stop {
    sink(&Event::of(policy, EventKind::Cancelled, 0, Duration::ZERO, None, None));
    Stop::Cancelled
}

#[cfg(test)]
mod tests;
