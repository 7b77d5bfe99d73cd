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

/// How an attempt ended, as the host's predicate classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The attempt returned a value.
    Success,
    /// A failure worth another try; `hint` is the minimum wait the server asked for.
    Transient {
        /// A Retry-After style minimum wait, if the failure carried one.
        hint: Option<Duration>,
    },
    /// A failure that will not go away: the call ends, the original error surfaces.
    Permanent,
    /// A failure whose server said "don't retry" (gRPC A6 pushback: a negative or
    /// unparseable `grpc-retry-pushback-ms`). It counts as a failure (a budget token, a
    /// breaker's failure) but nothing more is sent: a retrying call ends exhausted
    /// (reason `retry_after`, the server's hint forbade the retry); a hedged call launches
    /// no further hedge and lets the attempts in flight finish.
    DontRetry,
}

impl Verdict {
    /// A transient failure without a hint.
    pub const TRANSIENT: Verdict = Verdict::Transient { hint: None };

    /// A transient failure with a hint given in (possibly fractional) milliseconds, as hosts
    /// hold it. NaN and negative hints mean no hint; infinite or huge ones saturate.
    #[inline]
    pub fn transient_ms(hint_ms: Option<f64>) -> Verdict {
        Verdict::Transient { hint: hint_ms.and_then(duration_from_ms) }
    }

    /// Whether it is a failure that counts against a budget and a breaker (transient, or a
    /// server's "don't retry"); a permanent failure is the caller's, not the server's load.
    #[inline]
    pub fn is_counted_failure(&self) -> bool {
        matches!(self, Verdict::Transient { .. } | Verdict::DontRetry)
    }
}

pub use crate::units::duration_from_ms;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// An attempt succeeded: the host returns its value.
    Success,
    /// A permanent failure: the host surfaces the original error, unchanged.
    Rejected,
    /// Transient failures ran out of room: the host raises its RetryExhausted error.
    Exhausted(ExhaustReason),
    /// The call was cancelled: the host uses its cancellation idiom.
    Cancelled,
}

/// The engine's answer to an attempt's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long (zero: do not sleep at all), then call [`Call::after_wait`].
    Retry(Duration),
    /// The call is over.
    Stop(Stop),
}

/// What [`Call::propose`] says: the call ended already, or it may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposal {
    /// The call is over, exactly as [`Call::record`] would have ended it.
    Stop(Stop),
    /// The engine would wait `delay`; the host's hooks decide, then [`Call::settle`].
    Wait {
        /// The wait the engine computed (backoff, raised to the hint).
        delay: Duration,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The retries the attempt limit still allows ([`Event::retries_left`]).
        retries_left: u32,
        /// The verdict's hint (a server's minimum wait), if it had one.
        hint: Option<Duration>,
    },
}

/// The host's answer to a [`Proposal::Wait`]: what [`Call::settle`] does with the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Wait what the engine computed.
    Engine,
    /// Wait exactly this long (a user's wait hook), instead of the computed wait and not
    /// raised to the hint: rounded up to whole milliseconds, refused past the deadline,
    /// over `max_retry_after` (when set) it ends the call with reason `retry_after`.
    Exact(Duration),
    /// A hook stopped the call: it ends with reason `stopped`, no budget token taken.
    Stop,
}

impl Plan {
    /// [`Plan::Exact`] from (possibly fractional) milliseconds, as hosts hold a wait. An
    /// error naming the value for NaN, a negative wait, or one past the largest duration
    /// validation accepts ([`crate::knob::MAX_MS`]; infinity included): a hook's wait is a
    /// wait the host will sleep, and `inf` (or 1e300) is a bug to report, not 285,000
    /// years to sleep.
    pub fn exact_ms(ms: f64) -> Result<Plan, String> {
        match duration_from_ms(ms) {
            Some(d) if ms <= crate::knob::MAX_MS => Ok(Plan::Exact(d)),
            _ => Err(format!(
                "a wait must be a number of milliseconds from 0 to 9e15 (about 285,000 years), got {}",
                crate::units::compact(ms)
            )),
        }
    }
}

/// A server's minimum wait (a Retry-After hint) from a host's hook answer in (possibly
/// fractional) milliseconds: NaN or negative is an error naming the value (a hook that
/// answers so has a bug; no hint is the host's "none"), a huge one saturates as a huge
/// Retry-After does (`max_retry_after` or the deadline then ends the call).
pub fn hint_from_hook_ms(ms: f64) -> Result<Duration, String> {
    duration_from_ms(ms).ok_or_else(|| {
        format!("a Retry-After hint must be a number of milliseconds >= 0, got {}", crate::units::compact(ms))
    })
}

/// The engine's answer after a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Run this attempt (1-based) now.
    Attempt(u32),
    /// The deadline passed during the wait: the call is over.
    Stop(Stop),
}

/// A method was called in a state where it means nothing (a host bug, reported instead of
/// guessed at, so a C program driving the engine by hand learns of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// `record` while waiting, or after the call ended.
    NotAttempting(&'static str),
    /// `after_wait` without a Retry decision before it.
    NotWaiting(&'static str),
    /// `cancel` after the call ended.
    Ended,
    /// An attempt's bound asked for while no attempt is in progress.
    NoAttempt(&'static str),
    /// `settle` without a [`Proposal::Wait`] before it.
    NotProposed(&'static str),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // In every host's words: no Rust method name (a C or Python caller never
            // called record()); each host prefixes the name of its own function.
            StateError::NotAttempting(state) => {
                write!(f, "no attempt is in progress to report on; the call is {state}")
            }
            StateError::NotWaiting(state) => write!(f, "no retry wait is in progress; the call is {state}"),
            StateError::Ended => f.write_str("the call has ended"),
            StateError::NoAttempt(state) => write!(f, "no attempt is in progress; the call is {state}"),
            StateError::NotProposed(state) => {
                write!(f, "no proposed wait to settle (the proposal was not a wait); the call is {state}")
            }
        }
    }
}

impl std::error::Error for StateError {}

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
mod tests {
    use super::*;
    use crate::budget::RetryBudget;
    use crate::policy::Jitter;
    use std::sync::Arc;

    fn no_jitter(attempts: u64) -> Policy {
        Policy::builder()
            .max_attempts(attempts)
            .initial_delay_ms(100.0)
            .max_delay_ms(1000.0)
            .jitter(Jitter::None)
            .deadline_ms(Some(60_000.0))
            .build()
            .unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn kinds(events: &[(EventKind, u32)]) -> Vec<String> {
        events.iter().map(|(k, n)| format!("{k}:{n}")).collect()
    }

    #[test]
    fn two_failures_then_success_wait_100_then_200() {
        let p = no_jitter(6);
        let mut log = vec![];
        let mut sink = |e: &Event<'_>| log.push((e.kind, e.attempt));
        let mut call = Call::start(&p, ms(0));
        assert_eq!(call.record(Verdict::TRANSIENT, ms(0), &mut sink), Ok(Decision::Retry(ms(100))));
        assert_eq!(call.after_wait(ms(100), &mut sink), Ok(Resume::Attempt(2)));
        assert_eq!(call.record(Verdict::TRANSIENT, ms(100), &mut sink), Ok(Decision::Retry(ms(200))));
        assert_eq!(call.after_wait(ms(300), &mut sink), Ok(Resume::Attempt(3)));
        assert_eq!(call.record(Verdict::Success, ms(300), &mut sink), Ok(Decision::Stop(Stop::Success)));
        assert_eq!(call.outcome(), Some(Stop::Success));
        assert_eq!(kinds(&log), ["attempt_failed:1", "retrying:1", "attempt_failed:2", "retrying:2", "success:3"]);
    }

    #[test]
    fn permanent_is_rejected_even_on_the_last_attempt() {
        let p = no_jitter(1);
        let mut log = vec![];
        let mut call = Call::start(&p, ms(0));
        let d = call.record(Verdict::Permanent, ms(5), &mut |e: &Event<'_>| log.push((e.kind, e.attempt)));
        assert_eq!(d, Ok(Decision::Stop(Stop::Rejected)));
        assert_eq!(kinds(&log), ["attempt_failed:1", "rejected:1"]);
    }

    #[test]
    fn hint_wins_when_longer_and_is_rounded_up() {
        let p = no_jitter(5);
        let mut call = Call::start(&p, ms(0));
        let hint = Some(Duration::from_micros(5_000_001));
        assert_eq!(
            call.record(Verdict::Transient { hint }, ms(0), &mut |_: &Event<'_>| {}),
            Ok(Decision::Retry(ms(5001)))
        );
        let mut call = Call::start(&p, ms(0));
        let short = Some(ms(10));
        assert_eq!(
            call.record(Verdict::Transient { hint: short }, ms(0), &mut |_: &Event<'_>| {}),
            Ok(Decision::Retry(ms(100)))
        );
    }

    #[test]
    fn deadline_refuses_a_wait_that_cannot_finish_and_rechecks_after() {
        let p = Policy::builder()
            .max_attempts(10)
            .initial_delay_ms(1000.0)
            .max_delay_ms(8000.0)
            .jitter(Jitter::None)
            .deadline_ms(Some(5000.0))
            .build()
            .unwrap();
        let mut reasons = vec![];
        let mut sink = |e: &Event<'_>| reasons.push(e.reason);
        let mut call = Call::start(&p, ms(0));
        assert_eq!(call.record(Verdict::TRANSIENT, ms(0), &mut sink), Ok(Decision::Retry(ms(1000))));
        call.after_wait(ms(1000), &mut sink).unwrap();
        assert_eq!(call.record(Verdict::TRANSIENT, ms(1000), &mut sink), Ok(Decision::Retry(ms(2000))));
        call.after_wait(ms(3000), &mut sink).unwrap();
        let d = call.record(Verdict::TRANSIENT, ms(3000), &mut sink);
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        assert_eq!(call.attempt(), 3);
        assert_eq!(reasons.last(), Some(&Some(ExhaustReason::Deadline)));

        // A wait that overran the deadline ends the call without another attempt.
        let mut call = Call::start(&p, ms(0));
        call.record(Verdict::TRANSIENT, ms(3000), &mut |_: &Event<'_>| {}).unwrap();
        let r = call.after_wait(ms(5001), &mut |_: &Event<'_>| {});
        assert_eq!(r, Ok(Resume::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    }

    #[test]
    fn budget_stops_retries_once_half_spent() {
        let budget = Arc::new(RetryBudget::new(4.0, 1.0).unwrap());
        let p = Policy::builder().jitter(Jitter::None).budget(Some(budget.clone())).build().unwrap();
        let mut call = Call::start(&p, ms(0));
        let none = &mut |_: &Event<'_>| {};
        assert!(matches!(call.record(Verdict::TRANSIENT, ms(0), none), Ok(Decision::Retry(_))));
        call.after_wait(ms(200), none).unwrap();
        let d = call.record(Verdict::TRANSIENT, ms(200), none);
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Budget))));
        assert_eq!(budget.tokens(), 2.0);
    }

    #[test]
    fn a_hint_over_max_retry_after_ends_the_call_without_a_wait() {
        let p = Policy::builder().jitter(Jitter::None).max_retry_after_ms(Some(1000.0)).build().unwrap();
        let mut reasons = vec![];
        let mut call = Call::start(&p, ms(0));
        let over = Verdict::Transient { hint: Some(ms(1001)) };
        let d = call.record(over, ms(7), &mut |e: &Event<'_>| reasons.push((e.kind, e.reason)));
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter))));
        assert_eq!(
            reasons,
            [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]
        );
        // Exactly the limit is accepted; on the last attempt the reason stays attempts.
        let mut call = Call::start(&p, ms(0));
        let at = Verdict::Transient { hint: Some(ms(1000)) };
        assert_eq!(call.record(at, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(ms(1000))));
        let last = Policy::builder().max_attempts(1).max_retry_after_ms(Some(1000.0)).build().unwrap();
        let mut call = Call::start(&last, ms(0));
        let d = call.record(over, ms(0), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Attempts))));
        // Off: any hint is waited out (the deadline, off here too, would bound it).
        let off = Policy::builder().jitter(Jitter::None).deadline(None).max_retry_after(None).build().unwrap();
        let mut call = Call::start(&off, ms(0));
        let day = Verdict::Transient { hint: Some(Duration::from_secs(86_400)) };
        assert_eq!(call.record(day, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(Duration::from_secs(86_400))));
    }

    #[test]
    fn an_attempt_that_overruns_the_deadline_ends_the_call_with_reason_deadline() {
        let p = Policy::builder()
            .max_attempts(3)
            .jitter(Jitter::None)
            .initial_delay_ms(0.0)
            .deadline_ms(Some(1000.0))
            .max_retry_after_ms(Some(10.0))
            .build()
            .unwrap();
        let mut log = vec![];
        let mut call = Call::start(&p, ms(100));
        assert_eq!(call.remaining(ms(100)), Ok(Some(ms(1000))));
        // A time before the call's start: the bound itself, not more.
        assert_eq!(call.remaining(ms(0)), Ok(Some(ms(1000))));
        assert_eq!(call.remaining(ms(700)), Ok(Some(ms(400))));
        assert_eq!(call.remaining(ms(5000)), Ok(Some(Duration::ZERO)));
        // Failed 1 ms past the deadline, with a zero delay and attempts left: deadline,
        // recorded like any failure (AttemptFailed first).
        let d = call.record(Verdict::TRANSIENT, ms(1101), &mut |e: &Event<'_>| log.push((e.kind, e.reason)));
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::Deadline))]);
        assert!(call.remaining(ms(1101)).is_err(), "no attempt in progress");
        // Exactly at the deadline is still in time: a zero wait is allowed.
        let mut call = Call::start(&p, ms(100));
        assert_eq!(call.record(Verdict::TRANSIENT, ms(1100), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(ms(0))));
        assert_eq!(call.after_wait(ms(1100), &mut |_: &Event<'_>| {}), Ok(Resume::Attempt(2)));
        assert_eq!(call.remaining(ms(1100)), Ok(Some(Duration::ZERO)));
        // On the last attempt, and with a hint over max_retry_after, the reason is still
        // deadline: the deadline is what cut the call short.
        let last = Policy::builder().max_attempts(1).deadline_ms(Some(1000.0)).build().unwrap();
        let mut call = Call::start(&last, ms(0));
        let d = call.record(Verdict::TRANSIENT, ms(1001), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        let mut call = Call::start(&p, ms(0));
        let d = call.record(Verdict::Transient { hint: Some(ms(60_000)) }, ms(1001), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        // A late success is a success; a late permanent failure is rejected.
        let mut call = Call::start(&last, ms(0));
        assert_eq!(call.record(Verdict::Success, ms(9000), &mut |_: &Event<'_>| {}), Ok(Decision::Stop(Stop::Success)));
        let mut call = Call::start(&p, ms(0));
        assert_eq!(
            call.record(Verdict::Permanent, ms(9000), &mut |_: &Event<'_>| {}),
            Ok(Decision::Stop(Stop::Rejected))
        );
    }

    #[test]
    fn the_attempt_timeout_restarts_with_each_attempt_and_the_deadline_caps_it() {
        let p = Policy::builder()
            .jitter(Jitter::None)
            .initial_delay_ms(100.0)
            .deadline_ms(Some(1000.0))
            .attempt_timeout_ms(Some(300.0))
            .build()
            .unwrap();
        let none = &mut |_: &Event<'_>| {};
        let mut call = Call::start(&p, ms(0));
        assert_eq!(call.attempt_deadline(), Ok(Some(ms(300))));
        assert_eq!(call.remaining(ms(250)), Ok(Some(ms(50))));
        // The attempt timed out at its bound: a transient failure like any other.
        assert_eq!(call.record(Verdict::TRANSIENT, ms(300), none), Ok(Decision::Retry(ms(100))));
        assert_eq!(call.attempt_deadline(), Err(StateError::NoAttempt("waiting")));
        call.after_wait(ms(400), none).unwrap();
        assert_eq!(call.remaining(ms(400)), Ok(Some(ms(300))));
        call.record(Verdict::TRANSIENT, ms(700), none).unwrap();
        call.after_wait(ms(900), none).unwrap();
        // 100 ms to the deadline, smaller than the timeout.
        assert_eq!(call.remaining(ms(900)), Ok(Some(ms(100))));
        // Attempt timeout alone.
        let alone = Policy::builder().deadline(None).attempt_timeout_ms(Some(50.0)).build().unwrap();
        let call = Call::start(&alone, ms(10));
        assert_eq!(call.remaining(ms(10)), Ok(Some(ms(50))));
        let off = Policy::builder().deadline(None).build().unwrap();
        assert_eq!(Call::start(&off, ms(10)).remaining(ms(10)), Ok(None));
    }

    #[test]
    fn the_default_max_retry_after_is_60_s() {
        assert_eq!(Policy::default().max_retry_after(), Some(Duration::from_secs(60)));
    }

    #[test]
    fn misuse_is_reported_not_guessed() {
        let p = no_jitter(3);
        let none = &mut |_: &Event<'_>| {};
        let mut call = Call::start(&p, ms(0));
        assert!(call.after_wait(ms(0), none).is_err());
        call.record(Verdict::TRANSIENT, ms(0), none).unwrap();
        assert!(matches!(call.record(Verdict::Success, ms(0), none), Err(StateError::NotAttempting("waiting"))));
        assert_eq!(call.cancel(ms(1), none), Ok(Stop::Cancelled));
        assert_eq!(call.cancel(ms(1), none), Err(StateError::Ended));
        assert!(call.after_wait(ms(0), none).is_err());
    }

    /// "Don't retry" pushback ends a retrying call at once, exhausted (retry_after), and
    /// counts as a failure: the budget loses a token.
    #[test]
    fn dont_retry_ends_the_call_and_spends_a_token() {
        let budget = std::sync::Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
        let p = Policy::builder().budget(Some(std::sync::Arc::clone(&budget))).build().unwrap();
        let mut log = vec![];
        let mut call = Call::start(&p, ms(0));
        let d = call.record(Verdict::DontRetry, ms(5), &mut |e: &Event<'_>| log.push((e.kind, e.reason)));
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter))));
        assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]);
        assert_eq!(budget.tokens(), 9.0);
        assert!(Verdict::DontRetry.is_counted_failure() && !Verdict::Permanent.is_counted_failure());
    }

    #[test]
    fn host_hints_in_ms() {
        assert_eq!(Verdict::transient_ms(None), Verdict::TRANSIENT);
        assert_eq!(Verdict::transient_ms(Some(f64::NAN)), Verdict::TRANSIENT);
        assert_eq!(Verdict::transient_ms(Some(-1.0)), Verdict::TRANSIENT);
        assert_eq!(Verdict::transient_ms(Some(1234.0)), Verdict::Transient { hint: Some(ms(1234)) });
        assert_eq!(Verdict::transient_ms(Some(f64::INFINITY)), Verdict::Transient { hint: Some(Duration::MAX) });
        // A saturated hint is a wait no deadline allows, and no overflow either.
        let p = Policy::builder().max_attempts(3).max_retry_after(None).deadline_ms(Some(60_000.0)).build().unwrap();
        let mut call = Call::start(&p, ms(0));
        let d = call.record(Verdict::transient_ms(Some(1e300)), ms(0), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    }

    #[test]
    fn a_huge_hint_without_limits_waits_the_longest_wait_and_no_longer() {
        // No deadline, no max_retry_after: nothing refuses the hint, and the wait is the
        // documented maximum, not u64::MAX ms (a caller's `now + delay` would wrap).
        let p = Policy::builder().jitter(Jitter::None).max_retry_after(None).deadline(None).build().unwrap();
        for hint in [f64::INFINITY, 1e300, u64::MAX as f64, 9.0e15 + 1.0, 1e16] {
            let mut call = Call::start(&p, ms(0));
            let mut seen = None;
            let d = call.record(Verdict::transient_ms(Some(hint)), ms(0), &mut |e: &Event<'_>| {
                if e.kind == EventKind::Retrying {
                    seen = e.delay;
                }
            });
            assert_eq!(d, Ok(Decision::Retry(ms(MAX_WAIT_MS))), "hint {hint}");
            assert_eq!(seen, Some(ms(MAX_WAIT_MS)), "the event reports the clamped wait");
        }
        let mut call = Call::start(&p, ms(0));
        let d = call.record(Verdict::transient_ms(Some(9.0e15 - 1.0)), ms(0), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Retry(ms(MAX_WAIT_MS - 1))), "a hint below the maximum is kept");
        assert_eq!(MAX_WAIT_MS, crate::knob::MAX_MS as u64);
    }

    fn wait(call: &mut Call<&Policy>, now: u64, log: &mut Vec<(EventKind, Option<ExhaustReason>)>) -> Duration {
        match call.propose(Verdict::TRANSIENT, ms(now), &mut |e: &Event<'_>| log.push((e.kind, e.reason))) {
            Ok(Proposal::Wait { delay, .. }) => delay,
            other => panic!("expected a proposed wait, got {other:?}"),
        }
    }

    #[test]
    fn an_exact_wait_replaces_the_computed_one_and_the_limits_still_apply() {
        let p = Policy::builder()
            .max_attempts(4)
            .initial_delay_ms(100.0)
            .jitter(Jitter::None)
            .deadline_ms(Some(1000.0))
            .max_retry_after_ms(Some(500.0))
            .build()
            .unwrap();
        let mut log = vec![];
        let mut call = Call::start(&p, ms(0));
        assert_eq!(
            call.propose(Verdict::Transient { hint: Some(ms(150)) }, ms(0), &mut |_: &Event<'_>| {}),
            Ok(Proposal::Wait { delay: ms(150), attempt: 1, retries_left: 3, hint: Some(ms(150)) })
        );
        // Exact: not raised to the hint, rounded up to whole milliseconds.
        let d = call.settle(Plan::Exact(Duration::from_micros(7_001)), ms(0), &mut |e: &Event<'_>| {
            log.push((e.kind, e.reason));
            assert_eq!(e.delay, Some(ms(8)), "Retrying reports the final wait");
        });
        assert_eq!(d, Ok(Decision::Retry(ms(8))));
        assert_eq!(log, [(EventKind::Retrying, None)]);
        call.after_wait(ms(8), &mut |_: &Event<'_>| {}).unwrap();
        // Over max_retry_after: retry_after, as a hint would.
        log.clear();
        wait(&mut call, 8, &mut log);
        assert_eq!(
            call.settle(Plan::Exact(ms(501)), ms(8), &mut |e: &Event<'_>| log.push((e.kind, e.reason))),
            Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter)))
        );
        assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]);
        // Past the deadline: deadline, even when the computed wait would have fit.
        let mut call = Call::start(&p, ms(0));
        assert_eq!(wait(&mut call, 200, &mut log), ms(100));
        let d = call.settle(Plan::Exact(ms(450)), ms(600), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        // A deadline that passed while the hook ran: deadline, whatever the plan.
        let mut call = Call::start(&p, ms(0));
        wait(&mut call, 0, &mut log);
        let d = call.settle(Plan::Engine, ms(1001), &mut |_: &Event<'_>| {});
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
        // Off: a huge exact wait is clamped to the longest wait.
        let off = Policy::builder().max_retry_after(None).deadline(None).build().unwrap();
        let mut call = Call::start(&off, ms(0));
        call.propose(Verdict::TRANSIENT, ms(0), &mut |_: &Event<'_>| {}).unwrap();
        assert_eq!(
            call.settle(Plan::Exact(Duration::MAX), ms(0), &mut |_: &Event<'_>| {}),
            Ok(Decision::Retry(ms(MAX_WAIT_MS)))
        );
    }

    #[test]
    fn a_stopped_call_keeps_its_attempts_and_takes_no_token() {
        let budget = Arc::new(RetryBudget::new(10.0, 1.0).unwrap());
        let p = Policy::builder().max_attempts(5).budget(Some(budget.clone())).build().unwrap();
        let mut log = vec![];
        let mut call = Call::start(&p, ms(0));
        let d = wait(&mut call, 0, &mut log);
        assert_eq!(call.settle(Plan::Engine, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(d)));
        call.after_wait(d, &mut |_: &Event<'_>| {}).unwrap();
        log.clear();
        wait(&mut call, 1000, &mut log);
        let tokens = budget.tokens(); // the failure's cost is taken in propose
        let mut retries = vec![];
        let d = call.settle(Plan::Stop, ms(1000), &mut |e: &Event<'_>| {
            log.push((e.kind, e.reason));
            retries.push((e.attempt, e.retries_left));
        });
        assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Stopped))));
        assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::Stopped))]);
        assert_eq!(retries, [(2, 3)]);
        assert_eq!(call.attempt(), 2);
        assert_eq!(budget.tokens(), tokens, "no token drawn for a stopped call");
    }

    #[test]
    fn propose_stops_exactly_as_record_would_and_settle_is_refused_out_of_turn() {
        let p = no_jitter(2);
        let none = &mut |_: &Event<'_>| {};
        let mut call = Call::start(&p, ms(0));
        assert!(matches!(call.settle(Plan::Engine, ms(0), none), Err(StateError::NotProposed("attempting"))));
        assert_eq!(call.propose(Verdict::Success, ms(0), none), Ok(Proposal::Stop(Stop::Success)));
        let mut call = Call::start(&p, ms(0));
        assert_eq!(call.propose(Verdict::Permanent, ms(0), none), Ok(Proposal::Stop(Stop::Rejected)));
        let mut call = Call::start(&p, ms(0));
        call.record(Verdict::TRANSIENT, ms(0), none).unwrap();
        call.after_wait(ms(100), none).unwrap();
        assert_eq!(
            call.propose(Verdict::TRANSIENT, ms(100), none),
            Ok(Proposal::Stop(Stop::Exhausted(ExhaustReason::Attempts)))
        );
        // Proposed: record, after_wait and propose are refused; cancel is not.
        let mut call = Call::start(&p, ms(0));
        call.propose(Verdict::TRANSIENT, ms(0), none).unwrap();
        assert_eq!(call.record(Verdict::TRANSIENT, ms(0), none), Err(StateError::NotAttempting("proposed")));
        assert_eq!(call.after_wait(ms(0), none), Err(StateError::NotWaiting("proposed")));
        assert_eq!(call.cancel(ms(5), none), Ok(Stop::Cancelled));
        assert_eq!(call.settle(Plan::Engine, ms(5), none), Err(StateError::NotProposed("ended")));
    }

    #[test]
    fn the_jitter_stream_is_the_same_whatever_the_hook_answers() {
        let p = Policy::builder().max_attempts(6).seed(Some(7)).deadline(None).build().unwrap();
        let computed = |exact: bool| {
            let mut call = Call::start(&p, ms(0));
            let mut seen = vec![];
            for n in 0..5u64 {
                let Ok(Proposal::Wait { delay, .. }) = call.propose(Verdict::TRANSIENT, ms(n), &mut |_: &Event<'_>| {})
                else {
                    panic!()
                };
                seen.push(delay);
                let plan = if exact { Plan::Exact(ms(1)) } else { Plan::Engine };
                call.settle(plan, ms(n), &mut |_: &Event<'_>| {}).unwrap();
                call.after_wait(ms(n), &mut |_: &Event<'_>| {}).unwrap();
            }
            seen
        };
        assert_eq!(computed(true), computed(false));
        // And record is propose + settle(Engine).
        let mut call = Call::start(&p, ms(0));
        let recorded: Vec<_> = (0..5u64)
            .map(|n| {
                let Ok(Decision::Retry(d)) = call.record(Verdict::TRANSIENT, ms(n), &mut |_: &Event<'_>| {}) else {
                    panic!()
                };
                call.after_wait(ms(n), &mut |_: &Event<'_>| {}).unwrap();
                d
            })
            .collect();
        assert_eq!(recorded, computed(false));
    }

    #[test]
    fn every_event_carries_the_retries_left() {
        let p = no_jitter(3);
        let mut seen = vec![];
        let mut sink = |e: &Event<'_>| seen.push((e.kind, e.attempt, e.retries_left));
        let mut call = Call::start(&p, ms(0));
        call.record(Verdict::TRANSIENT, ms(0), &mut sink).unwrap();
        call.after_wait(ms(100), &mut sink).unwrap();
        call.record(Verdict::TRANSIENT, ms(100), &mut sink).unwrap();
        call.after_wait(ms(300), &mut sink).unwrap();
        call.record(Verdict::TRANSIENT, ms(300), &mut sink).unwrap();
        cancelled_before_start(&p, &mut sink);
        use EventKind::*;
        assert_eq!(
            seen,
            [
                (AttemptFailed, 1, 2),
                (Retrying, 1, 2),
                (AttemptFailed, 2, 1),
                (Retrying, 2, 1),
                (AttemptFailed, 3, 0),
                (Exhausted, 3, 0),
                (Cancelled, 0, 2)
            ]
        );
    }

    #[test]
    fn exact_waits_from_host_milliseconds() {
        assert_eq!(Plan::exact_ms(12.5), Ok(Plan::Exact(Duration::from_micros(12_500))));
        assert_eq!(Plan::exact_ms(9e15), Ok(Plan::Exact(Duration::from_millis(9_000_000_000_000_000))));
        assert!(Plan::exact_ms(-1.0).unwrap_err().ends_with("got -1"));
        assert!(Plan::exact_ms(f64::NAN).unwrap_err().ends_with("got NaN"));
        // Refused like -1 and NaN, not 285,000 years of sleep.
        assert!(Plan::exact_ms(f64::INFINITY).unwrap_err().ends_with("got inf"), "{:?}", Plan::exact_ms(f64::INFINITY));
        assert!(Plan::exact_ms(9e15 + 2.0).is_err());
    }

    #[test]
    fn hints_from_host_hooks() {
        assert_eq!(hint_from_hook_ms(1500.0), Ok(Duration::from_millis(1500)));
        assert_eq!(hint_from_hook_ms(f64::INFINITY), Ok(Duration::MAX));
        assert_eq!(
            hint_from_hook_ms(-5.0).unwrap_err(),
            "a Retry-After hint must be a number of milliseconds >= 0, got -5"
        );
        assert!(hint_from_hook_ms(f64::NAN).unwrap_err().ends_with("got NaN"));
    }

    #[test]
    fn zero_delay_decision_is_zero() {
        let p = Policy::builder().initial_delay_ms(0.0).max_delay_ms(0.0).build().unwrap();
        let mut call = Call::start(&p, ms(0));
        assert_eq!(
            call.record(Verdict::TRANSIENT, ms(0), &mut |_: &Event<'_>| {}),
            Ok(Decision::Retry(Duration::ZERO))
        );
    }
}
