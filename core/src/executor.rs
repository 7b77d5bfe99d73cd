//! The blocking executor: runs a closure until the engine says stop, sleeping between
//! attempts on a [`Clock`], waking at once on a [`CancelToken`].

// Without the `blocking` feature only the error types are left here.
#![cfg_attr(not(feature = "blocking"), allow(unused_imports))]

use std::cell::Cell;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use crate::async_executor::TimedOut;
use crate::attempt::Attempt;
use crate::breaker::BreakerState;
use crate::breaker::CircuitBreaker;
use crate::cancel::CancelToken;
use crate::clock::{testing, Clock, SystemClock};
use crate::engine::{Call, Decision, Plan, Resume, Stop, Verdict};
use crate::event::{Event, ExhaustReason};
use crate::judge::Judged;
use crate::policy::{DeadlineHint, Policy};
use crate::stats::{CallTally, Stats, StatsSnapshot};

/// How many failures a [`RetryError`] keeps: the last 64 (the contract's history cap), so
/// a call with a huge `max_attempts` cannot hold every error it ever saw. `attempts`
/// still counts them all.
pub const HISTORY: usize = 64;

/// How a retried call failed. Nothing is lost: the original error, the last failures in
/// order, and the rejected value where the last failure was one.
///
/// `T` is the type of the values a [result predicate](Run::result_predicate) can reject;
/// [`Retrier::run`] has none and uses the default `()`.
#[derive(Debug)]
#[non_exhaustive]
pub enum RetryError<E, T = ()> {
    /// A permanent failure: the original error, unchanged.
    Rejected(E),
    /// Transient failures ran out of room.
    #[non_exhaustive]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// Which limit ended the call.
        reason: ExhaustReason,
        /// The errors, in order (the last [`HISTORY`] at most); the last one is the cause
        /// unless `value` holds the last failure.
        errors: Vec<E>,
        /// The last rejected value, when the last failure was a value the result predicate
        /// rejected (it is then the cause).
        value: Option<T>,
        /// For reason `circuit_open` (no attempt made): the breaker's state and the time
        /// left before it lets a probe through.
        refusal: Option<(BreakerState, Duration)>,
        /// For reason `deadline`: the policy's [`DeadlineHint`], when `max_attempts`
        /// cannot fit the deadline at the nominal backoff (Display appends it).
        deadline_hint: Option<DeadlineHint>,
        /// The last failure, when it was an attempt the async executor cut at its bound
        /// (it is then the cause, and [`source`](std::error::Error::source)): a cut
        /// attempt has no error of the caller's type, unless
        /// [`AsyncRun::timed_out_as`](crate::AsyncRun::timed_out_as) made one.
        timed_out: Option<TimedOut>,
    },
    /// The cancel token fired.
    #[non_exhaustive]
    Cancelled {
        /// Attempts made.
        attempts: u32,
        /// The errors before the cancel, in order (the last [`HISTORY`] at most).
        errors: Vec<E>,
        /// The last rejected value, when the last failure was a value.
        value: Option<T>,
        /// The last failure, when it was an attempt cut at its bound.
        timed_out: Option<TimedOut>,
    },
    /// The call was refused before any attempt ran, and says why: a policy that hedges
    /// ([`Policy::hedging`](crate::Policy::hedging)) run by an executor that runs one
    /// attempt at a time and so cannot abandon one (the blocking [`Retrier::run`] and
    /// [`Retrier::execute`]). Run such a policy with the async executor
    /// ([`Retrier::run_async`](crate::Retrier::run_async)), or drive it with
    /// [`HedgeCall`](crate::hedge::HedgeCall).
    Refused(String),
}

impl<E, T> RetryError<E, T> {
    /// The last failure when it was an error (the cause of Exhausted and Cancelled);
    /// `None` when there was none or the last failure was a rejected value.
    pub fn last_error(&self) -> Option<&E> {
        match self {
            RetryError::Rejected(e) => Some(e),
            RetryError::Exhausted { errors, value: None, timed_out: None, .. }
            | RetryError::Cancelled { errors, value: None, timed_out: None, .. } => errors.last(),
            RetryError::Exhausted { .. } | RetryError::Cancelled { .. } | RetryError::Refused(_) => None,
        }
    }

    /// The last failure's error, by value, when it was an error (as
    /// [`last_error`](RetryError::last_error)): the caller's own error, to return as it
    /// is. Otherwise (no attempt ran, the last attempt was cut at its bound, or the last
    /// failure was a rejected value) the whole `RetryError` comes back unchanged, so
    /// nothing is lost.
    ///
    /// ```
    /// # #[cfg(feature = "blocking")] {
    /// use retryrs::{Policy, Retrier, Verdict};
    /// let retrier = Retrier::new(Policy::builder().max_attempts(1).build().unwrap());
    /// let got = retrier.run(|_| Err::<(), _>(String::from("503")), |_| Verdict::TRANSIENT);
    /// assert_eq!(got.unwrap_err().into_last_error().ok(), Some(String::from("503")));
    /// # }
    /// ```
    pub fn into_last_error(self) -> Result<E, Self> {
        if self.last_error().is_none() {
            return Err(self);
        }
        match self {
            RetryError::Rejected(e) => Ok(e),
            RetryError::Exhausted { mut errors, .. } | RetryError::Cancelled { mut errors, .. } => {
                Ok(errors.pop().expect("last_error found the last of the errors"))
            }
            other => Err(other),
        }
    }

    /// A call the circuit breaker refused before any attempt: exhausted, reason
    /// `circuit_open`, with the breaker's state and the time left before a probe.
    pub(crate) fn circuit_open(refusal: (BreakerState, Duration)) -> Self {
        RetryError::Exhausted {
            attempts: 0,
            reason: ExhaustReason::CircuitOpen,
            errors: Vec::new(),
            value: None,
            refusal: Some(refusal),
            deadline_hint: None,
            timed_out: None,
        }
    }

    /// The caller's own error: the last failure's error when there is one
    /// ([`into_last_error`](RetryError::into_last_error)), else `or(self)`, e.g.
    /// `anyhow::Error::from` or `|e| e.to_string()`. What the extension trait's
    /// [`own_error`](crate::retry::Retry::own_error) returns.
    pub fn into_own_error(self, or: impl FnOnce(Self) -> E) -> E {
        self.into_last_error().unwrap_or_else(or)
    }

    /// The last rejected value, when the last failure was one.
    pub fn last_value(&self) -> Option<&T> {
        match self {
            RetryError::Rejected(_) | RetryError::Refused(_) => None,
            RetryError::Exhausted { value, .. } | RetryError::Cancelled { value, .. } => value.as_ref(),
        }
    }

    /// Attempts made (1 for a rejection, 0 for a refusal).
    pub fn attempts(&self) -> u32 {
        match self {
            RetryError::Rejected(_) => 1,
            RetryError::Refused(_) => 0,
            RetryError::Exhausted { attempts, .. } | RetryError::Cancelled { attempts, .. } => *attempts,
        }
    }

    pub(crate) fn without_value(self) -> RetryError<E> {
        match self {
            RetryError::Rejected(e) => RetryError::Rejected(e),
            RetryError::Exhausted { attempts, reason, errors, refusal, deadline_hint, timed_out, .. } => {
                RetryError::Exhausted { attempts, reason, errors, value: None, refusal, deadline_hint, timed_out }
            }
            RetryError::Cancelled { attempts, errors, timed_out, .. } => {
                RetryError::Cancelled { attempts, errors, value: None, timed_out }
            }
            RetryError::Refused(why) => RetryError::Refused(why),
        }
    }
}

/// Says what happened, never the cause: the last error is [`source`](std::error::Error::source)
/// (a chain printer shows it next), so no chain prints it twice. A rejection is
/// transparent: it prints as the original error, and its source is that error's source.
/// A rejected value, which is no error, is printed here.
impl<E: fmt::Display, T: fmt::Debug> fmt::Display for RetryError<E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryError::Rejected(e) => write!(f, "{e}"),
            RetryError::Exhausted { attempts, reason, value, deadline_hint, .. } => {
                write!(f, "{}", crate::event::GaveUp { name: None, attempts: *attempts, reason: *reason })?;
                if let Some(hint) = deadline_hint {
                    write!(f, "; {hint}")?;
                }
                match value {
                    Some(v) => write!(f, ": rejected value {v:?}"),
                    None => Ok(()),
                }
            }
            RetryError::Cancelled { attempts, .. } => {
                write!(f, "{}", crate::event::CancelledAfter { name: None, attempts: *attempts })
            }
            RetryError::Refused(why) => write!(f, "{why}"),
        }
    }
}

/// An error for any attempt error that can be shown (`Debug + Display`): `String`,
/// `&'static str`, `anyhow::Error` and `Box<dyn Error + Send + Sync>` (none of which is a
/// `std::error::Error`) as well as every `std::error::Error`. So `?` moves a
/// `RetryError<E>` into `anyhow::Result` or `Result<_, Box<dyn Error + Send + Sync>>`
/// (when `E` and `T` are `Send + Sync`).
///
/// The price of that breadth (Rust has no specialization to ask "is `E` an error?"): the
/// cause is the last error seen through [`Cause`], which shows it as it is (Display and
/// Debug) and reaches the error's own `source` only for the error types it knows
/// (`Box<dyn Error + Send + Sync>`, `Box<dyn Error + Send>`, `Box<dyn Error>` and
/// `std::io::Error`). A rejection prints as the original error, so its source is that
/// error's source, where known. For any other typed error and its whole chain, take it
/// back: [`RetryError::last_error`], [`RetryError::into_last_error`], or downcast the
/// source to [`Cause<E>`](Cause). An attempt cut at its bound has [`TimedOut`] as its
/// source.
impl<E: fmt::Debug + fmt::Display + 'static, T: fmt::Debug + 'static> std::error::Error for RetryError<E, T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RetryError::Rejected(e) => known_source(e),
            RetryError::Exhausted { timed_out: Some(cut), .. } | RetryError::Cancelled { timed_out: Some(cut), .. } => {
                Some(cut)
            }
            _ => self.last_error().map(|e| Cause::of(e) as &(dyn std::error::Error + 'static)),
        }
    }
}

/// The last error of a [`RetryError`], as its [`source`](std::error::Error::source): an
/// error that displays and debugs as the attempt's error `E` itself, whatever `E` is.
/// Downcast a source to `Cause<E>` and [`get`](Cause::get) it to reach the typed error.
#[repr(transparent)]
pub struct Cause<E>(E);

impl<E> Cause<E> {
    /// A view of `error` as a `Cause`, without moving it.
    fn of(error: &E) -> &Cause<E> {
        // SAFETY: Cause is repr(transparent) over E: the same layout and alignment, so a
        // reference to an E is a valid reference to a Cause<E> for the same lifetime.
        unsafe { &*(error as *const E as *const Cause<E>) }
    }

    /// The attempt's error.
    pub fn get(&self) -> &E {
        &self.0
    }
}

impl<E: fmt::Debug> fmt::Debug for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Display> fmt::Display for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Debug + fmt::Display + 'static> std::error::Error for Cause<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        known_source(&self.0)
    }
}

/// The source of `error` when its type is one of the errors without a bound that says so
/// (a boxed error) or a common std one: found at run time, as no trait bound can ask.
fn known_source<E: 'static>(error: &E) -> Option<&(dyn std::error::Error + 'static)> {
    use std::any::Any;
    use std::error::Error;
    let any = error as &dyn Any;
    if let Some(e) = any.downcast_ref::<Box<dyn Error + Send + Sync>>() {
        return e.source();
    }
    if let Some(e) = any.downcast_ref::<Box<dyn Error + Send>>() {
        return e.source();
    }
    if let Some(e) = any.downcast_ref::<Box<dyn Error>>() {
        return e.source();
    }
    any.downcast_ref::<std::io::Error>().and_then(Error::source)
}

/// What a [result predicate](Run::result_predicate) says of a returned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueVerdict {
    /// The value is the call's result.
    Accept,
    /// The value is a failure, handled exactly like a transient error; `hint` is the
    /// minimum wait it asks for (a Retry-After read from a response), if any.
    Retry {
        /// A Retry-After style minimum wait.
        hint: Option<std::time::Duration>,
    },
    /// The value is a failure whose server said "don't retry" ([`Verdict::DontRetry`]):
    /// counted as a failure, not retried (a response with `Retryrs-Pushback: -1`).
    DontRetry,
}

impl ValueVerdict {
    /// Retry, without a hint.
    pub const RETRY: ValueVerdict = ValueVerdict::Retry { hint: None };

    /// The engine's verdict on a value judged a failure (`None`: accepted).
    pub fn failure(self) -> Option<Verdict> {
        match self {
            ValueVerdict::Accept => None,
            ValueVerdict::Retry { hint } => Some(Verdict::Transient { hint }),
            ValueVerdict::DontRetry => Some(Verdict::DontRetry),
        }
    }
}

impl From<bool> for ValueVerdict {
    /// `true`: retry (no hint); `false`: accept. So `|r| (r.status == 503).into()` reads
    /// as "retry when".
    fn from(retry: bool) -> Self {
        if retry {
            ValueVerdict::RETRY
        } else {
            ValueVerdict::Accept
        }
    }
}

/// The failure an event is about: an error, a value the result predicate rejected, or an
/// attempt the async executor cut at its bound.
#[derive(Debug)]
#[non_exhaustive]
pub enum Failed<'a, E, T> {
    /// The operation returned this error.
    Error(&'a E),
    /// The operation returned this value and the result predicate rejected it.
    Value(&'a T),
    /// The attempt ran out of its bound and was dropped (async executor): no error of
    /// the caller's type exists, unless [`AsyncRun::timed_out_as`](crate::AsyncRun::timed_out_as)
    /// makes one (then the failure is that [`Failed::Error`]).
    TimedOut(TimedOut),
}

impl<E, T> Clone for Failed<'_, E, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, T> Copy for Failed<'_, E, T> {}

impl<'a, E, T> Failed<'a, E, T> {
    /// The error, if the failure was one.
    pub fn error(self) -> Option<&'a E> {
        match self {
            Failed::Error(e) => Some(e),
            Failed::Value(_) | Failed::TimedOut(_) => None,
        }
    }
    /// The rejected value, if the failure was one.
    pub fn value(self) -> Option<&'a T> {
        match self {
            Failed::Value(v) => Some(v),
            Failed::Error(_) | Failed::TimedOut(_) => None,
        }
    }
}

/// A policy ready to run closures. Immutable: share it freely between threads (it is an
/// `Arc` inside); each call keeps its own state.
/// A clone is the same retrier: it shares the policy and the [statistics](Retrier::stats).
/// Its Debug shows the policy, the statistics and, when `max_attempts` cannot fit the
/// deadline, the [`DeadlineHint`].
#[derive(Clone)]
pub struct Retrier {
    policy: Arc<Policy>,
    stats: Arc<Stats>,
    /// [`Policy::starts_lazily`], read once here: the policy behind the `Arc` cannot
    /// change, and the happy path then tests one flag of the retrier instead of six
    /// fields of the policy behind a pointer. Both executors, blocking and async, read it.
    lazy: bool,
    /// [`Retrier::starts_on_coarse_clock`], read once here for the same reason.
    coarse: bool,
    /// Attempt 1's bound ([`Attempt::first`]), computed once here for the same reason.
    first_bound: Option<Duration>,
}

impl fmt::Debug for Retrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Retrier");
        d.field("policy", &self.policy).field("stats", &self.stats.snapshot());
        if let Some(hint) = self.policy.deadline_hint() {
            d.field("deadline_hint", &format_args!("{hint}"));
        }
        d.finish()
    }
}

impl From<Policy> for Retrier {
    fn from(policy: Policy) -> Self {
        Retrier::from_arc(Arc::new(policy))
    }
}

/// What the hooks of [`Run::wait_with`] and [`Run::before_retry`] see: a failed attempt
/// the engine would retry, and the wait it computed.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryContext<'a, E, T = ()> {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// The wait the engine computed (the backoff, raised to the hint).
    pub delay: Duration,
    /// The retries the attempt limit still allows ([`Event::retries_left`]).
    pub retries_left: u32,
    /// The failure's Retry-After hint, if it had one.
    pub hint: Option<Duration>,
    /// Time since the call began.
    pub elapsed: Duration,
    /// The failure: the error, or the value the result predicate rejected.
    pub failure: Failed<'a, E, T>,
}

/// A wait hook: `Some(d)` waits exactly `d` (not raised to the hint; the deadline and
/// `max_retry_after` still apply), `None` waits what the engine computed.
pub type WaitHook<'a, E, T = ()> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + 'a>;

/// A before-retry hook: [`ControlFlow::Break`] stops the call (exhausted, reason `stopped`,
/// the history kept), [`ControlFlow::Continue`] lets it wait.
pub type BeforeRetry<'a, E, T = ()> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> ControlFlow<()> + 'a>;

/// A before-retry hook, borrowed for one call to [`plan`].
pub(crate) type BeforeRetryFn<'h, E, T> = dyn FnMut(&RetryContext<'_, E, T>) -> ControlFlow<()> + 'h;
/// A wait hook, borrowed for one call to [`plan`].
pub(crate) type WaitFn<'h, E, T> = dyn FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + 'h;

/// The plan of a call's hooks for one proposed wait: the before-retry hook first (a stop
/// skips the wait hook), then the wait hook.
pub(crate) fn plan<E, T>(
    ctx: &RetryContext<'_, E, T>,
    before: Option<&mut BeforeRetryFn<'_, E, T>>,
    wait: Option<&mut WaitFn<'_, E, T>>,
) -> Plan {
    if let Some(before) = before {
        if before(ctx).is_break() {
            return Plan::Stop;
        }
    }
    match wait.and_then(|wait| wait(ctx)) {
        Some(exact) => Plan::Exact(exact),
        None => Plan::Engine,
    }
}

/// How many errors a call keeps in place before it moves them to a `Vec`: a call that
/// fails that often and then succeeds allocates nothing (malloc and free were a third of
/// the instructions of a call with two zero-delay failures).
const INLINE: usize = 2;

/// The last [`HISTORY`] errors of a call, in order: the first [`INLINE`] in place, then in
/// a `Vec` (made when the call fails once more, or when it ends in an error).
pub(crate) struct Errors<E> {
    /// The errors so far, in the first `len` slots, until they spill.
    slots: [Option<E>; INLINE],
    /// The errors in `slots`; [`SPILLED`] once they moved to `spilled`, so that a push
    /// tests one number (an enum of the two forms was tested for its form, then its length,
    /// on every failure).
    len: usize,
    /// More than [`INLINE`] errors.
    spilled: Option<Vec<E>>,
}

/// [`Errors::len`] once the errors are in a `Vec`: no slot is free.
const SPILLED: usize = usize::MAX;

impl<E> Errors<E> {
    /// No error yet.
    #[inline(always)]
    fn new() -> Self {
        Errors { slots: std::array::from_fn(|_| None), len: 0, spilled: None }
    }

    #[inline(always)]
    fn push(&mut self, error: E) {
        if self.len < INLINE {
            self.slots[self.len] = Some(error);
            self.len += 1;
        } else {
            self.push_spilled(error);
        }
    }

    /// [`Errors::push`] past the slots.
    #[cold]
    #[inline(never)]
    fn push_spilled(&mut self, error: E) {
        match &mut self.spilled {
            None => {
                let mut errors = Vec::with_capacity(2 * INLINE);
                errors.extend(self.slots.iter_mut().filter_map(Option::take));
                errors.push(error);
                self.spilled = Some(errors);
                self.len = SPILLED;
            }
            Some(errors) => {
                if errors.len() == HISTORY {
                    errors.remove(0);
                }
                errors.push(error);
            }
        }
    }

    fn last(&self) -> Option<&E> {
        match &self.spilled {
            None => self.len.checked_sub(1).and_then(|i| self.slots[i].as_ref()),
            Some(errors) => errors.last(),
        }
    }

    fn pop(&mut self) -> Option<E> {
        match &mut self.spilled {
            None => {
                self.len = self.len.checked_sub(1)?;
                self.slots[self.len].take()
            }
            Some(errors) => errors.pop(),
        }
    }

    /// The errors, in order, as [`RetryError`] carries them.
    fn into_vec(self) -> Vec<E> {
        match self.spilled {
            None => self.slots.into_iter().take(self.len).flatten().collect(),
            Some(errors) => errors,
        }
    }
}

/// The failures a call keeps: the last [`HISTORY`] errors, and the last value if the last
/// failure was a rejected value, or the last cut if it was an attempt cut at its bound.
pub(crate) struct History<E, T> {
    errors: Errors<E>,
    value: Option<T>,
    timed_out: Option<TimedOut>,
}

impl<E, T> History<E, T> {
    /// No failure yet.
    pub(crate) fn new() -> Self {
        History { errors: Errors::new(), value: None, timed_out: None }
    }

    /// An error is the last failure. It leaves `timed_out` as it is: only the async
    /// executor cuts attempts, and it clears a cut after each outcome
    /// ([`History::not_cut`]), so the blocking executor's failures store nothing more.
    #[inline]
    pub(crate) fn push_error(&mut self, error: E) {
        self.errors.push(error);
        self.value = None;
    }

    /// The last failure was not a cut (the async executors, after an attempt's outcome).
    #[inline]
    pub(crate) fn not_cut(&mut self) {
        self.timed_out = None;
    }

    /// The last failure was this rejected value.
    pub(crate) fn set_value(&mut self, value: T) {
        self.value = Some(value);
        self.timed_out = None;
    }

    /// The last failure was an attempt cut at its bound.
    pub(crate) fn push_timed_out(&mut self, cut: TimedOut) {
        self.value = None;
        self.timed_out = Some(cut);
    }

    pub(crate) fn last(&self) -> Option<Failed<'_, E, T>> {
        match (&self.value, self.timed_out) {
            (Some(v), _) => Some(Failed::Value(v)),
            (None, Some(cut)) => Some(Failed::TimedOut(cut)),
            (None, None) => self.errors.last().map(Failed::Error),
        }
    }

    pub(crate) fn stopped(mut self, stop: Stop, attempts: u32, policy: &Policy) -> RetryError<E, T> {
        let History { errors, value, timed_out } = match stop {
            Stop::Rejected => return RetryError::Rejected(self.errors.pop().expect("a rejection follows a failure")),
            _ => self,
        };
        let errors = errors.into_vec();
        match stop {
            Stop::Exhausted(reason) => {
                let deadline_hint = if reason == ExhaustReason::Deadline { policy.deadline_hint() } else { None };
                RetryError::Exhausted { attempts, reason, errors, value, refusal: None, deadline_hint, timed_out }
            }
            Stop::Cancelled => RetryError::Cancelled { attempts, errors, value, timed_out },
            Stop::Success | Stop::Rejected => unreachable!("success returns the value; rejection is above"),
        }
    }
}

impl Retrier {
    /// A retrier over `policy`.
    pub fn new(policy: Policy) -> Self {
        policy.into()
    }

    /// A retrier over a shared policy.
    pub fn from_arc(policy: Arc<Policy>) -> Self {
        let coarse = !policy.starts_lazily()
            && policy.tolerates_coarse_start()
            && policy.budget.is_none()
            && policy.hedge.is_none();
        let first_bound = policy.attempt_deadline(Duration::ZERO, Duration::ZERO);
        Retrier { lazy: policy.starts_lazily(), coarse, first_bound, policy, stats: Arc::default() }
    }

    /// What this retrier's calls (and its clones') did so far: calls, attempts, retries,
    /// outcomes, exhaustions by reason. A blocking call without a listener or a hook
    /// ([`Retrier::run`]) is counted whole when it ends (also when it unwinds): read from
    /// another thread meanwhile, its attempts so far do not show yet.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// The counters [`Retrier::stats`] reads (for a host that drives calls itself).
    pub fn stats_counters(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The same retrier (its statistics shared) whose policy obeys `ambient`, the context
    /// of the request being handled ([`crate::propagation::constrain`]: the deadline
    /// shortened to the ambient one minus the margin, and under an inbound retry one
    /// attempt and no hedges); `None` when the policy already obeys it. The executors
    /// ask this of this thread's context themselves; a host that keeps its context
    /// elsewhere (a contextvar, AsyncLocalStorage) asks it with its own.
    pub fn under(&self, ambient: &crate::propagation::Ambient) -> Option<Retrier> {
        let policy = ambient.constrain_at(&self.policy, crate::propagation::now())?;
        // The same stats: calls under a request's context count with the retrier's own.
        Some(Retrier { stats: self.stats.clone(), ..Retrier::from_arc(Arc::new(policy)) })
    }

    /// [`Retrier::under`] this thread's ambient context ([`crate::propagation::current`]),
    /// if there is one: one flag test in a process that never propagates. What every
    /// executor (and a binding's own call loop) asks at a call's start.
    #[inline(always)]
    pub fn under_current(&self) -> Option<Retrier> {
        if !crate::propagation::in_use() {
            return None;
        }
        self.under_current_context()
    }

    #[cold]
    #[inline(never)]
    fn under_current_context(&self) -> Option<Retrier> {
        self.under(&crate::propagation::current()?)
    }

    /// The policy a call starting now runs under, when this thread's ambient context
    /// constrains it (`None`: the retrier's own). What the executors ask at a call's
    /// start once [`crate::propagation::in_use`]; out of line, and shared (an `Arc`), so
    /// an async call's future grows by a pointer only.
    #[cold]
    #[inline(never)]
    pub(crate) fn policy_in_context(&self) -> Option<Arc<Policy>> {
        let ambient = crate::propagation::current()?;
        ambient.constrain_at(&self.policy, crate::propagation::now()).map(Arc::new)
    }

    /// [`Policy::starts_lazily`] of this retrier's policy: whether an executor without
    /// listener, hooks, cancel token or result predicate may run attempt 1 before it
    /// starts the engine.
    #[inline]
    pub(crate) fn starts_lazily(&self) -> bool {
        self.lazy
    }

    /// Whether [`Retrier::run`] may run attempt 1 before it starts the engine although
    /// the policy bounds its attempts, reading only the call's start, from the coarse
    /// clock: the bounds are whole seconds or more ([`Policy::tolerates_coarse_start`]:
    /// they end the coarse clock's lag early, never late), there is no breaker to ask nor budget
    /// to tell, and it does not hedge. Attempt 1's bound is the policy's formula at that
    /// start; a failure starts the engine at the same start and is judged as attempt 1
    /// (as the C host does).
    #[inline]
    pub(crate) fn starts_on_coarse_clock(&self) -> bool {
        self.coarse
    }

    /// Attempt 1's bound, the same whenever a call starts ([`Attempt::first`]).
    #[inline]
    pub(crate) fn first_bound(&self) -> Option<Duration> {
        self.first_bound
    }

    /// Runs `op` until it succeeds or the engine stops it; `classify` turns each error
    /// into a verdict. Uses the real clock, or the virtual one while the testing switch is
    /// on.
    ///
    /// `op` gets the [`Attempt`]: its number and its bound (the time left before the
    /// deadline, or the smaller attempt timeout). A blocking attempt cannot be
    /// interrupted: pass `remaining` to its I/O so that it ends in time.
    ///
    /// **It blocks the thread**, during the attempts and the waits between them
    /// (`std::thread::sleep`). Never call it on an async runtime's thread: a
    /// current-thread runtime stops running every other task until the call ends. In
    /// async code use [`Retrier::run_async`](crate::async_executor) (feature `tokio`) or
    /// [`Retrier::run_async_with`] on any runtime's timer.
    ///
    /// ```
    /// use retryrs::{Attempt, Policy, Retrier, Verdict};
    /// use std::time::Duration;
    /// # let _virtual_time = retryrs::testing::scoped();
    /// let retrier = Retrier::new(
    ///     Policy::builder().deadline(Some(Duration::from_secs(2))).attempt_timeout(Some(Duration::from_millis(500))).build().unwrap(),
    /// );
    /// let got = retrier.run(
    ///     |attempt: &Attempt| {
    ///         // e.g. stream.set_read_timeout(attempt.remaining)
    ///         assert_eq!(attempt.remaining, Some(Duration::from_millis(500)));
    ///         if attempt.number < 2 { Err("503") } else { Ok(attempt.number) }
    ///     },
    ///     |_err| Verdict::TRANSIENT,
    /// );
    /// assert_eq!(got.unwrap(), 2);
    /// ```
    #[cfg(feature = "blocking")]
    #[inline]
    pub fn run<T, E>(
        &self,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        // Once propagation is in use, an ambient context may bound the call: the engine
        // then starts first and constrains its policy (execute_from), out of line.
        if crate::propagation::in_use() {
            return self.run_in_context(op, classify);
        }
        let mut op = op;
        // Inlined into the caller: with a policy that has nothing to tell or bound, the
        // happy path is the attempt itself (the engine starts at the first failure).
        let first = match self.lazy {
            true => match op(&Attempt::new(1, Duration::ZERO, None)) {
                Ok(value) => {
                    // No Call, so no Success event to count: the stats are told here.
                    self.stats.count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => Some(First { error, started: None }),
            },
            // Bounds of whole seconds (the default policy): the happy path is one coarse
            // clock read and the attempt (the engine starts at the first failure, at
            // this start). Under virtual time the executor starts as usual.
            false if self.coarse && !testing::any_on() => {
                let started = SystemClock.now_coarse();
                match op(&Attempt::first(started, self.first_bound())) {
                    Ok(value) => {
                        self.stats.count_first_attempt_success_here();
                        return Ok(value);
                    }
                    Err(error) => Some(First { error, started: Some(started) }),
                }
            }
            false => None,
        };
        self.run_from(first, op, classify)
    }

    /// The rest of [`Retrier::run`] once attempt 1 failed, or when it did not start
    /// lazily: out of line, so that the caller's inlined happy path stays small.
    #[cfg(feature = "blocking")]
    #[inline(never)]
    fn run_from<T, E>(
        &self,
        first: Option<First<E>>,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        // No listener, statically: the engine's events reach only the stats, which read
        // their kind, so none is built (a call with two zero-delay failures builds five).
        let options = Options { cancel: None, clock: None, result_predicate: None, wait: None, before_retry: None };
        let got = match self.lazy {
            // A lazy policy reads no time: the engine is fed a constant, folded away (and
            // its call has no start to pass on, which the compiler then knows too).
            true => {
                let first = first.map(|f| First { error: f.error, started: None });
                self.execute_from::<_, _, _, false>(options, Quiet, first, op, classify)
            }
            false => self.execute_from::<_, _, _, true>(options, Quiet, first, op, classify),
        };
        got.map_err(RetryError::without_value)
    }

    /// [`Retrier::run`] once propagation is in use: through [`Retrier::execute`], whose
    /// engine starts before attempt 1 and constrains the policy by this thread's ambient
    /// context, if any (another instance of the executor than `run`'s, so `run`'s own
    /// stays inlined where it was).
    #[cfg(feature = "blocking")]
    #[cold]
    #[inline(never)]
    fn run_in_context<T, E>(
        &self,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        self.execute(Run::default(), op, classify).map_err(RetryError::without_value)
    }

    /// [`Retrier::run`] with the options of [`Run`]: a listener, a cancel token, a clock,
    /// and a result predicate that can turn a returned value into a failure.
    ///
    /// ```
    /// use retryrs::{Policy, Retrier, Run, ValueVerdict, Verdict, RetryError};
    /// # let _virtual_time = retryrs::testing::scoped();
    /// let retrier = Retrier::new(Policy::builder().max_attempts(3).build().unwrap());
    /// let got = retrier.execute(
    ///     Run::default().result_predicate(|status: &u16| (*status == 503).into()),
    ///     |_attempt: &retryrs::Attempt| Ok::<u16, std::io::Error>(503),
    ///     |_err| Verdict::TRANSIENT,
    /// );
    /// assert!(matches!(got, Err(RetryError::Exhausted { attempts: 3, value: Some(503), .. })));
    /// ```
    #[cfg(feature = "blocking")]
    pub fn execute<T, E>(
        &self,
        run: Run<'_, E, T>,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>> {
        let Run { listener, cancel, clock, result_predicate, wait, before_retry } = run;
        let options = Options { cancel, clock, result_predicate, wait, before_retry };
        self.execute_from::<_, _, _, true>(options, listener, None, op, classify)
    }

    /// [`Retrier::execute`], where `first` is attempt 1's error if the caller already ran
    /// it (a lazy start: the policy has nothing to tell or bound).
    ///
    /// `MAY_READ_TIME` false is for a call whose time matters to nothing (a policy that
    /// reads no time, no listener, no hooks): every time given to the engine is then the
    /// constant zero, and the compiler folds the engine's time arithmetic away.
    #[cfg(feature = "blocking")]
    // Always inlined into its one caller per instance: in `run_from` the options are
    // constants (no hook, no predicate), and what they switch off folds away.
    #[inline(always)]
    fn execute_from<T, E, L: Tell<E, T>, const MAY_READ_TIME: bool>(
        &self,
        options: Options<'_, E, T>,
        mut listener: L,
        mut first: Option<First<E>>,
        mut op: impl FnMut(&Attempt) -> Result<T, E>,
        mut classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>> {
        // Taken apart at once: each option is then dropped where it ends, in line (the
        // whole `Run`, dropped at each return, was a call).
        let Options { cancel, clock, mut result_predicate, wait, before_retry } = options;
        // Inside a request's ambient context (propagation), its constraint applies (a call
        // that reads no time is not started here once propagation is in use: see run).
        let constrained = match MAY_READ_TIME && crate::propagation::in_use() {
            true => self.policy_in_context(),
            false => None,
        };
        let policy: &Policy = constrained.as_deref().unwrap_or(&self.policy);
        let virtual_clock;
        // The real clock's zero wait without a cancel token is no wait at all: skipped
        // below without a call (any other clock is told of every wait).
        let mut real_clock = false;
        // A call started on the real clock (attempt 1 already ran) stays on it.
        let started_early = first.as_ref().and_then(|f| f.started);
        let clock: &dyn Clock = match clock {
            Some(clock) => clock,
            None if started_early.is_some() => {
                real_clock = true;
                &SystemClock
            }
            None => match testing::clock() {
                Some(v) => {
                    virtual_clock = v;
                    &virtual_clock
                }
                None => {
                    real_clock = true;
                    &SystemClock
                }
            },
        };
        if let Some(why) = crate::hedge::one_at_a_time_refusal(policy) {
            return Err(RetryError::Refused(format!(
                "{why}; a blocking Retrier::run/execute cannot abandon an attempt: hedge from async code with Retrier::run_async (or retryrs::hedge::HedgeCall)"
            )));
        }
        let has_listener = listener.present();
        let listener = &mut listener;
        // Hooks see the time since the call began, too.
        let hooked = wait.is_some() || before_retry.is_some();
        // The whole call runs on this thread: its stats cells are found once. Unless a
        // listener or a hook may run during the call (statically: `L::OBSERVED`), nothing
        // can read them before it ends (as in the C host): its events are tallied in place
        // and added once at its end, also on an unwind (Counted's drop). The events are
        // then never built: the tally reads only their kind and reason, constants at each
        // step.
        debug_assert!(L::OBSERVED || !hooked, "a call without listener has no hooks (run_from)");
        let local = if L::OBSERVED { Some(self.stats.local()) } else { None };
        let mut counted = Counted { stats: &self.stats, tally: CallTally::default(), batched: !L::OBSERVED };
        let tally = &mut counted.tally;
        let mut notify = |event: &Event<'_>, failed: Option<Failed<'_, E, T>>| {
            if L::OBSERVED {
                if let Some(stats) = &local {
                    stats.observe(event);
                }
                listener.tell(event, failed);
            } else {
                debug_assert!(event.attempts_abandoned == 0, "a blocking call never hedges");
                tally.observe(event);
            }
        };
        if cancel.is_some_and(CancelToken::is_cancelled) {
            crate::engine::cancelled_before_start(policy, &mut |e| notify(e, None));
            return Err(RetryError::Cancelled { attempts: 0, errors: Vec::new(), value: None, timed_out: None });
        }
        // Time matters only to the attempts' bounds (a deadline or an attempt timeout), to
        // a breaker or ratio budget, to events and to hooks: with none, the engine is fed
        // a constant and the clock is never read.
        debug_assert!(MAY_READ_TIME || !(policy.reads_time() || has_listener || hooked));
        let timed = MAY_READ_TIME && (policy.reads_time() || has_listener || hooked);
        let read_time = || if timed { clock.now() } else { Duration::ZERO };
        // The happy path of a policy with nothing to tell or bound (no clock needed, no
        // budget or breaker to inform, no listener, no result predicate): attempt 1 runs
        // before the engine starts (a lazy start, as the other hosts do), and a value
        // returns at once. A failure starts the engine and is judged as attempt 1.
        if first.is_none() && !timed && policy.budget.is_none() && result_predicate.is_none() {
            match op(&Attempt::new(1, Duration::ZERO, None)) {
                Ok(value) => {
                    self.stats.count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => first = Some(First { error, started: None }),
            }
        }
        // Bounds of whole seconds and no one to show the elapsed time: the coarse clock
        // may start the call (its bounds then end the coarse clock's lag early, never late).
        let start = match started_early {
            Some(started) => started,
            None if timed && !has_listener && !hooked && policy.tolerates_coarse_start() => clock.now_coarse(),
            None => read_time(),
        };
        // A panic (the attempt, classify, a listener) unwinds through the guard, which
        // gives a breaker's probe back.
        let mut guard = crate::async_executor::Unreported(Call::start_with(policy, start, &mut |e| notify(e, None)));
        let call = &mut guard.0;
        if let Some(refusal) = call.refusal() {
            return Err(RetryError::circuit_open(refusal));
        }
        // One clock read per attempt: a failure's time is read only when a decision needs
        // it (failure_timed), and it is also the next attempt's start after a zero delay;
        // after a real wait the clock is read again (the deadline is checked after it).
        let failure_timed = MAY_READ_TIME && (has_listener || hooked || policy.failure_reads_time());
        let attempt_start = Cell::new(call.started_at());
        let failed_at = Cell::new(None);
        let failure_now = || {
            let now = if failure_timed { clock.now() } else { attempt_start.get() };
            failed_at.set(Some(now).filter(|_| failure_timed));
            now
        };
        let success_timed =
            MAY_READ_TIME && (has_listener || policy.breaker().is_some_and(CircuitBreaker::times_successes));
        // The happy path allocates nothing, nor a call that fails up to INLINE times.
        let mut history = History::new();
        let (mut wait, mut before) = (wait, before_retry);
        let mut hooks = |ctx: &RetryContext<'_, E, T>| plan(ctx, before.as_deref_mut(), wait.as_deref_mut());
        // The real clock's zero wait without a cancel token is skipped (see `real_clock`).
        let zero_is_no_wait = real_clock && cancel.is_none();
        // Attempt 1's outcome (a lazy start's failure, or run now), then each next attempt's
        // at the loop's end: the loop does not ask again whether a lazy start's failure is
        // pending.
        let mut outcome = match first.take() {
            Some(first) => Err(first.error),
            None => op(&Attempt::new(call.attempt(), attempt_start.get(), call.attempt_bound())),
        };
        loop {
            let started = call.started_at();
            // Only the Success event (and a breaker) needs its time: else skip the read.
            let success_now = || if success_timed { clock.now() } else { started };
            let predicate = result_predicate.as_deref_mut();
            let hooks: Option<&mut crate::judge::PlanHook<'_, E, T>> = if hooked { Some(&mut hooks) } else { None };
            let decision = match history.judge(
                call,
                outcome,
                false,
                predicate,
                &mut classify,
                &mut notify,
                failure_now,
                success_now,
                hooks,
            ) {
                Judged::Accepted(value) => return Ok(value),
                Judged::Decided(decision) => decision,
            };
            let delay = match decision {
                Decision::Retry(delay) => delay,
                Decision::Stop(stop) => return Err(history.stopped(stop, call.attempt(), policy)),
            };
            let no_wait = delay.is_zero() && zero_is_no_wait;
            if !no_wait && clock.sleep(delay, cancel).is_err() {
                let _ = call.cancel(read_time(), &mut |e| notify(e, history.last()));
                return Err(history.stopped(Stop::Cancelled, call.attempt(), policy));
            }
            attempt_start.set(match failed_at.get() {
                Some(at) if delay.is_zero() => at,
                _ => read_time(),
            });
            let resume = call.resume(attempt_start.get(), &mut |e| notify(e, history.last()));
            if let Resume::Stop(stop) = resume {
                return Err(history.stopped(stop, call.attempt(), policy));
            }
            outcome = op(&Attempt::new(call.attempt(), attempt_start.get(), call.attempt_bound()));
        }
    }
}

/// Attempt 1's failure when it ran before the engine started (a lazy start), and the
/// call's start it ran at when the policy bounds it (`None`: the call reads no time).
#[cfg(feature = "blocking")]
struct First<E> {
    error: E,
    started: Option<Duration>,
}

/// Where a blocking call counts its events when nothing reads them mid-call (`batched`):
/// a tally added to its thread's stats cells when the call ends, however it ends.
#[cfg(feature = "blocking")]
struct Counted<'a> {
    stats: &'a Stats,
    tally: CallTally,
    batched: bool,
}

#[cfg(feature = "blocking")]
impl Drop for Counted<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.batched {
            self.stats.add_tally_here(&self.tally);
        }
    }
}

/// The options of a [`Run`] but its listener, which the executor takes as a [`Tell`]
/// (statically absent for [`Retrier::run`]).
#[cfg(feature = "blocking")]
struct Options<'a, E, T> {
    cancel: Option<&'a CancelToken>,
    clock: Option<&'a dyn Clock>,
    result_predicate: Option<ResultPredicate<'a, T>>,
    wait: Option<WaitHook<'a, E, T>>,
    before_retry: Option<BeforeRetry<'a, E, T>>,
}

/// Where an executor's events go besides the stats: a [`Run`]'s (or an
/// [`AsyncRun`](crate::AsyncRun)'s) listener, if any, or [`Quiet`], none at all, known at
/// compile time, so that the event sink (inlined into the engine's steps) reads only an
/// event's kind and the events are never built.
pub(crate) trait Tell<E, T> {
    /// Whether anything may run during a call that can read the stats (a listener or a
    /// hook), known at compile time: if not, a call may count its events in a tally
    /// (the blocking executor's; the async one counts each event).
    #[cfg_attr(not(feature = "blocking"), allow(dead_code))]
    const OBSERVED: bool;
    /// Whether anything listens (events then need their times).
    fn present(&self) -> bool;
    /// Tells the listener of `event`, if there is one.
    fn tell(&mut self, event: &Event<'_>, failed: Option<Failed<'_, E, T>>);
}

/// No listener, statically.
pub(crate) struct Quiet;

impl<E, T> Tell<E, T> for Quiet {
    const OBSERVED: bool = false;
    #[inline(always)]
    fn present(&self) -> bool {
        false
    }
    #[inline(always)]
    fn tell(&mut self, _: &Event<'_>, _: Option<Failed<'_, E, T>>) {}
}

#[cfg(feature = "blocking")]
impl<E, T> Tell<E, T> for Option<Listener<'_, E, T>> {
    const OBSERVED: bool = true;
    #[inline(always)]
    fn present(&self) -> bool {
        self.is_some()
    }
    #[inline(always)]
    fn tell(&mut self, event: &Event<'_>, failed: Option<Failed<'_, E, T>>) {
        if let Some(listen) = self {
            tell(listen, event, failed);
        }
    }
}

/// Tells `listen` of `event`. Out of line: the event sink that calls it stays small enough
/// to be inlined into the engine's steps, which then build no event for a call without a
/// listener (7 ns of a call with two zero-delay retries).
#[cfg(feature = "blocking")]
#[inline(never)]
fn tell<E, T>(listen: &mut Listener<'_, E, T>, event: &Event<'_>, failed: Option<Failed<'_, E, T>>) {
    // Only the kinds that carry a failure get it (not the breaker's events).
    listen(event, failed.filter(|_| event.kind.carries_error()));
}

/// A listener: every event, with the failure it is about (an error or a rejected value)
/// where there is one.
pub type Listener<'a, E, T = ()> = Box<dyn FnMut(&Event<'_>, Option<Failed<'_, E, T>>) + 'a>;

/// A result predicate: says of each returned value whether it is the result.
pub type ResultPredicate<'a, T> = Box<dyn FnMut(&T) -> ValueVerdict + 'a>;

/// Options of one [`Retrier::execute`] call.
#[non_exhaustive]
pub struct Run<'a, E, T = ()> {
    /// Receives every event.
    pub listener: Option<Listener<'a, E, T>>,
    /// Fires to end a wait at once.
    pub cancel: Option<&'a CancelToken>,
    /// The clock; `None` means the real one, or the virtual one under the testing switch.
    pub clock: Option<&'a dyn Clock>,
    /// The result predicate; `None`: every returned value is a success.
    pub result_predicate: Option<ResultPredicate<'a, T>>,
    /// The wait hook ([`Run::wait_with`]).
    pub wait: Option<WaitHook<'a, E, T>>,
    /// The before-retry hook ([`Run::before_retry`]).
    pub before_retry: Option<BeforeRetry<'a, E, T>>,
}

impl<E, T> Default for Run<'_, E, T> {
    fn default() -> Self {
        Run { listener: None, cancel: None, clock: None, result_predicate: None, wait: None, before_retry: None }
    }
}

impl<'a, E, T> Run<'a, E, T> {
    /// Adds a listener that sees every event and the error it is about (none for an event
    /// about a rejected value: use [`Run::observer`] to see those).
    pub fn listener(self, mut f: impl FnMut(&Event<'_>, Option<&E>) + 'a) -> Self {
        self.observer(move |e, failed| f(e, failed.and_then(Failed::error)))
    }
    /// Adds a listener that sees every event and the failure it is about, error or
    /// rejected value.
    pub fn observer(mut self, f: impl FnMut(&Event<'_>, Option<Failed<'_, E, T>>) + 'a) -> Self {
        self.listener = Some(Box::new(f));
        self
    }
    /// Adds a result predicate: a returned value it answers [`ValueVerdict::Retry`] for is a
    /// failure, handled exactly like a transient error (its hint included); the events
    /// about it carry the value, and an exhausted call carries the last one.
    pub fn result_predicate(mut self, f: impl FnMut(&T) -> ValueVerdict + 'a) -> Self {
        self.result_predicate = Some(Box::new(f));
        self
    }
    /// Adds a cancel token.
    pub fn cancel(mut self, token: &'a CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// Uses this clock.
    pub fn clock(mut self, clock: &'a dyn Clock) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Adds a wait hook, called when the engine would retry (after the before-retry hook):
    /// `Some(d)` waits exactly `d` instead of the computed wait (tenacity's custom `wait=`,
    /// stamina's backoff hook): not raised to a Retry-After hint, rounded up to whole
    /// milliseconds, still refused past the deadline (reason `deadline`) and, longer than
    /// `max_retry_after` when that is set, ending the call (reason `retry_after`) as a hint
    /// would. `None`: the computed wait. The jitter stream is the same either way.
    ///
    /// ```
    /// # #[cfg(feature = "blocking")] {
    /// use retryrs::{Policy, Retrier, Run, Verdict};
    /// use std::time::Duration;
    /// # let _virtual_time = retryrs::testing::scoped();
    /// let retrier = Retrier::new(Policy::builder().max_attempts(4).build().unwrap());
    /// let mut waits = vec![];
    /// let got = retrier.execute(
    ///     Run::default()
    ///         .wait_with(|ctx| Some(Duration::from_millis(10 * u64::from(ctx.attempt)))) // 10, 20, 30 ms
    ///         .listener(|e, _| waits.extend(e.delay)),
    ///     |a: &retryrs::Attempt| if a.number < 4 { Err("busy") } else { Ok(a.number) },
    ///     |_| Verdict::TRANSIENT,
    /// );
    /// assert_eq!(got.unwrap(), 4);
    /// assert_eq!(waits, [10, 20, 30].map(Duration::from_millis));
    /// # }
    /// ```
    pub fn wait_with(mut self, f: impl FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + 'a) -> Self {
        self.wait = Some(Box::new(f));
        self
    }
    /// Adds a before-retry hook, called when the engine would retry, before the wait hook:
    /// [`ControlFlow::Break`] stops the call, which ends as [`RetryError::Exhausted`] with
    /// reason `stopped`, the errors kept (p-retry's throwing `onFailedAttempt`).
    pub fn before_retry(mut self, f: impl FnMut(&RetryContext<'_, E, T>) -> ControlFlow<()> + 'a) -> Self {
        self.before_retry = Some(Box::new(f));
        self
    }
}

#[cfg(all(test, feature = "blocking"))]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;
    use crate::event::EventKind;
    use crate::policy::Jitter;
    use std::time::{Duration, Instant};

    #[derive(Debug, PartialEq)]
    struct Failure(&'static str, u32);

    fn policy(attempts: u64) -> Policy {
        Policy::builder()
            .max_attempts(attempts)
            .initial_delay_ms(100.0)
            .max_delay_ms(1000.0)
            .jitter(Jitter::None)
            .deadline(None)
            .build()
            .unwrap()
    }

    #[test]
    fn exhaustion_keeps_every_failure_in_order() {
        let clock = VirtualClock::new();
        let r = Retrier::new(policy(4));
        let mut sleeps = vec![];
        let res: Result<(), _> = r.execute(
            Run::default().clock(&clock).listener(|e, _| {
                if let Some(d) = e.delay {
                    sleeps.push(d.as_millis());
                }
            }),
            |a| Err(Failure("503", a.number)),
            |_| Verdict::TRANSIENT,
        );
        match res {
            Err(RetryError::Exhausted { attempts, reason, errors, .. }) => {
                assert_eq!(attempts, 4);
                assert_eq!(reason, ExhaustReason::Attempts);
                assert_eq!(errors, [Failure("503", 1), Failure("503", 2), Failure("503", 3), Failure("503", 4)]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sleeps, [100, 200, 400]);
        assert_eq!(clock.now(), Duration::from_millis(700));
    }

    #[test]
    fn rejection_returns_the_original_error() {
        let r = Retrier::new(policy(5));
        let mut calls = 0;
        let res: Result<(), _> = r.run(
            |a| {
                calls += 1;
                Err(Failure("404", a.number))
            },
            |_| Verdict::Permanent,
        );
        assert!(matches!(res, Err(RetryError::Rejected(Failure("404", 1)))));
        assert_eq!(calls, 1);
    }

    #[test]
    fn success_returns_the_value_and_listener_sees_errors() {
        let clock = VirtualClock::new();
        let r = Retrier::new(policy(5));
        let mut seen = vec![];
        let v = r.execute(
            Run::default().clock(&clock).listener(|e, err: Option<&Failure>| seen.push((e.kind, err.map(|f| f.1)))),
            |a| if a.number < 3 { Err(Failure("503", a.number)) } else { Ok("done") },
            |_| Verdict::TRANSIENT,
        );
        assert_eq!(v.unwrap(), "done");
        assert_eq!(
            seen,
            [
                (EventKind::AttemptFailed, Some(1)),
                (EventKind::Retrying, Some(1)),
                (EventKind::AttemptFailed, Some(2)),
                (EventKind::Retrying, Some(2)),
                (EventKind::Success, None)
            ]
        );
    }

    #[test]
    fn a_cancel_from_another_thread_ends_a_long_wait_at_once() {
        let p = Policy::builder()
            .initial_delay_ms(30_000.0)
            .max_delay_ms(30_000.0)
            .jitter(Jitter::None)
            .deadline(None)
            .build()
            .unwrap();
        let r = Retrier::new(p);
        let token = CancelToken::new();
        let other = token.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.cancel();
        });
        let started = Instant::now();
        let res: Result<(), _> = r.execute(
            Run::default().cancel(&token).clock(&crate::clock::SystemClock),
            |a| Err(Failure("503", a.number)),
            |_| Verdict::TRANSIENT,
        );
        let took = started.elapsed();
        canceller.join().unwrap();
        match res {
            Err(RetryError::Cancelled { attempts, errors, .. }) => {
                assert_eq!(attempts, 1);
                assert_eq!(errors, [Failure("503", 1)]);
            }
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(5), "took {took:?} for a 30 s wait cancelled after 50 ms");
    }

    #[test]
    fn an_already_cancelled_token_runs_nothing() {
        let token = CancelToken::new();
        token.cancel();
        let mut calls = 0;
        let res: Result<(), RetryError<Failure>> = Retrier::new(policy(3)).execute(
            Run::default().cancel(&token),
            |a| {
                calls += 1;
                Err(Failure("x", a.number))
            },
            |_| Verdict::TRANSIENT,
        );
        assert!(matches!(res, Err(RetryError::Cancelled { attempts: 0, .. })));
        assert_eq!(calls, 0);
    }

    #[test]
    fn a_rejected_value_is_retried_like_a_transient_error_and_carried() {
        let clock = VirtualClock::new();
        let r = Retrier::new(policy(3));
        let mut seen = vec![];
        let res = r.execute(
            Run::default()
                .clock(&clock)
                .result_predicate(|v: &u32| {
                    if *v < 3 {
                        ValueVerdict::Retry { hint: Some(Duration::from_millis(250)) }
                    } else {
                        ValueVerdict::Accept
                    }
                })
                .observer(|e, f: Option<Failed<'_, Failure, u32>>| {
                    seen.push((e.kind, f.and_then(Failed::value).copied(), e.delay))
                }),
            |a| Ok::<u32, Failure>(a.number),
            |_| Verdict::TRANSIENT,
        );
        assert_eq!(res.unwrap(), 3);
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(
            seen,
            [
                (EventKind::AttemptFailed, Some(1), None),
                (EventKind::Retrying, Some(1), ms(250)),
                (EventKind::AttemptFailed, Some(2), None),
                (EventKind::Retrying, Some(2), ms(250)),
                (EventKind::Success, None, None)
            ]
        );
        // Exhausted on a value: the value is the cause, the earlier error is kept.
        let res = Retrier::new(policy(2)).execute(
            Run::default().clock(&clock).result_predicate(|_: &&str| true.into()),
            |a| if a.number == 1 { Err(Failure("503", 1)) } else { Ok("busy") },
            |_| Verdict::TRANSIENT,
        );
        match res {
            Err(e @ RetryError::Exhausted { .. }) => {
                assert_eq!(e.last_value(), Some(&"busy"));
                assert_eq!(e.last_error(), None);
                assert!(matches!(e, RetryError::Exhausted { ref errors, .. } if errors == &[Failure("503", 1)]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_history_keeps_the_last_64_failures_and_counts_them_all() {
        let p = Policy::builder().max_attempts(100).initial_delay_ms(0.0).max_delay_ms(0.0).build().unwrap();
        let res: Result<(), _> = Retrier::new(p).execute(
            Run::default().clock(&VirtualClock::new()),
            |a| Err(Failure("503", a.number)),
            |_| Verdict::TRANSIENT,
        );
        match res {
            Err(RetryError::Exhausted { attempts: 100, errors, .. }) => {
                assert_eq!(errors.len(), HISTORY);
                assert_eq!(errors.first(), Some(&Failure("503", 37)));
                assert_eq!(errors.last(), Some(&Failure("503", 100)));
            }
            other => panic!("{other:?}"),
        }
    }

    /// Up to [`INLINE`] errors stay in place, then move to a `Vec`: whichever way they are
    /// kept, a call ending after n failures carries the same errors in the same order.
    #[test]
    fn the_history_is_the_same_in_place_and_spilled() {
        for n in 1..=(INLINE as u32 + 3) {
            for permanent_last in [false, true] {
                let res: Result<(), _> = Retrier::new(policy(n.into())).execute(
                    Run::default().clock(&VirtualClock::new()).listener(|e, err| {
                        // The failure an event is about is the latest one, wherever it is kept.
                        if e.kind == EventKind::Retrying {
                            assert_eq!(err, Some(&Failure("503", e.attempt)));
                        }
                    }),
                    |a| Err(Failure("503", a.number)),
                    |e| if permanent_last && e.1 == n { Verdict::Permanent } else { Verdict::TRANSIENT },
                );
                match res {
                    Err(RetryError::Rejected(e)) if permanent_last => assert_eq!(e, Failure("503", n)),
                    Err(RetryError::Exhausted { attempts, errors, .. }) if !permanent_last => {
                        assert_eq!(attempts, n);
                        assert_eq!(errors, (1..=n).map(|i| Failure("503", i)).collect::<Vec<_>>());
                    }
                    other => panic!("{n} {permanent_last}: {other:?}"),
                }
            }
        }
        let mut errors = Errors::new();
        assert_eq!(errors.pop(), None::<u32>);
        for i in 0..(HISTORY as u32 + 5) {
            errors.push(i);
            assert_eq!(errors.last(), Some(&i));
        }
        assert_eq!(errors.into_vec(), (5..HISTORY as u32 + 5).collect::<Vec<_>>());
    }

    /// A virtual clock that counts its reads.
    #[derive(Default)]
    struct Counting {
        clock: VirtualClock,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl Clock for Counting {
        fn now(&self) -> Duration {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.clock.now()
        }
        fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), crate::clock::Cancelled> {
            self.clock.sleep(delay, cancel)
        }
    }

    #[test]
    fn each_attempt_gets_its_bound_and_an_unbounded_call_reads_no_clock() {
        let clock = Counting::default();
        let p = Policy::builder()
            .initial_delay_ms(100.0)
            .jitter(Jitter::None)
            .deadline_ms(Some(1000.0))
            .attempt_timeout_ms(Some(400.0))
            .build()
            .unwrap();
        let mut seen = vec![];
        let res = Retrier::new(p).execute(
            Run::default().clock(&clock),
            |a: &Attempt| {
                seen.push((a.number, a.remaining.map(|d| d.as_millis()), a.deadline.map(|d| d.as_millis())));
                clock.clock.advance(Duration::from_millis(300));
                if a.number < 3 {
                    Err(Failure("503", a.number))
                } else {
                    Ok(a.number)
                }
            },
            |_| Verdict::TRANSIENT,
        );
        assert_eq!(res.unwrap(), 3);
        // Attempts start at 0, 400 and 900 (300 ms each, waits of 100 and 200): the
        // attempt timeout, then the timeout again, then the 100 ms left before the deadline.
        assert_eq!(seen, [(1, Some(400), Some(400)), (2, Some(400), Some(800)), (3, Some(100), Some(1000))]);

        // Neither a deadline nor an attempt timeout nor a listener: no clock read at all,
        // failures and waits included.
        let quiet = Counting::default();
        let p = Policy::builder().initial_delay_ms(100.0).deadline(None).build().unwrap();
        let res = Retrier::new(p).execute(
            Run::default().clock(&quiet),
            |a: &Attempt| {
                assert_eq!((a.remaining, a.deadline), (None, None));
                if a.number < 3 {
                    Err(Failure("503", a.number))
                } else {
                    Ok(())
                }
            },
            |_| Verdict::TRANSIENT,
        );
        assert!(res.is_ok());
        assert_eq!(quiet.reads.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn an_attempt_past_the_deadline_ends_the_call_but_a_late_success_is_kept() {
        let clock = VirtualClock::new();
        let p = Policy::builder().deadline_ms(Some(500.0)).build().unwrap();
        let r = Retrier::new(p);
        let res: Result<(), _> = r.execute(
            Run::default().clock(&clock),
            |a| {
                clock.advance(Duration::from_millis(600));
                Err(Failure("slow", a.number))
            },
            |_| Verdict::TRANSIENT,
        );
        match res {
            Err(RetryError::Exhausted { attempts: 1, reason: ExhaustReason::Deadline, errors, .. }) => {
                assert_eq!(errors, [Failure("slow", 1)]);
            }
            other => panic!("{other:?}"),
        }
        let res = r.execute(
            Run::default().clock(&clock),
            |_| -> Result<&str, Failure> {
                clock.advance(Duration::from_millis(600));
                Ok("late")
            },
            |_| Verdict::TRANSIENT,
        );
        assert_eq!(res.unwrap(), "late");
    }

    #[test]
    fn the_testing_switch_makes_waits_virtual() {
        let scope = testing::scoped();
        let started = Instant::now();
        let r = Retrier::new(
            Policy::builder()
                .initial_delay_ms(10_000.0)
                .max_delay_ms(10_000.0)
                .jitter(Jitter::None)
                .deadline(None)
                .build()
                .unwrap(),
        );
        let res: Result<(), _> = r.run(|a| Err(Failure("503", a.number)), |_| Verdict::TRANSIENT);
        assert!(matches!(res, Err(RetryError::Exhausted { attempts: 5, .. })));
        assert_eq!(scope.clock().now(), Duration::from_secs(40));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(scope);
        assert!(!testing::is_on());
    }

    #[test]
    fn a_ratio_budget_s_window_moves_without_a_deadline_or_a_listener() {
        use crate::budget::{RatioBudget, RetryBudget};
        let scope = testing::scoped();
        // One retry per second of reserve, no deposits: a retry spends it until it expires.
        let ratio = RatioBudget::new(Duration::from_secs(1), 1, 0.0, Duration::ZERO).unwrap();
        let budget = Some(Arc::new(RetryBudget::from(ratio)));
        let p = Policy::builder().max_attempts(2).jitter(Jitter::None).deadline_ms(None).budget(budget);
        let p = p.build().unwrap();
        assert!(!p.bounds_attempts() && p.reads_time());
        let retrier = Retrier::new(p);
        let down = |attempt: &Attempt| Err::<(), _>(Failure("503", attempt.number));
        let reason = |r: Result<(), RetryError<Failure>>| match r {
            Err(RetryError::Exhausted { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Attempts);
        assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Budget);
        // Past the ttl the withdrawal has expired: the executor read the (virtual) clock.
        scope.clock().advance(Duration::from_secs(2));
        assert_eq!(reason(retrier.run(down, |_| Verdict::TRANSIENT)), ExhaustReason::Attempts);
    }

    #[test]
    fn a_shared_breaker_refuses_without_calling_then_probes_after_the_break() {
        use crate::breaker::{BreakerConfig, CircuitBreaker};
        let scope = testing::scoped();
        let mut cfg = BreakerConfig::consecutive(2);
        cfg.break_duration = Duration::from_secs(30);
        let breaker = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let retrier = |name: &str| {
            let p = Policy::builder().name(name).max_attempts(2).jitter(Jitter::None).breaker(Some(breaker.clone()));
            Retrier::new(p.build().unwrap())
        };
        let (a, b) = (retrier("a"), retrier("b"));
        let calls = std::cell::Cell::new(0);
        let down = |attempt: &Attempt| {
            calls.set(calls.get() + 1);
            Err::<(), _>(Failure("503", attempt.number))
        };
        assert!(matches!(a.run(down, |_| Verdict::TRANSIENT), Err(RetryError::Exhausted { attempts: 2, .. })));
        assert!(matches!(b.run(down, |_| Verdict::TRANSIENT), Err(RetryError::Exhausted { attempts: 2, .. })));
        assert_eq!(calls.get(), 4);
        let refused = a.run(down, |_| Verdict::TRANSIENT);
        match &refused {
            Err(e @ RetryError::Exhausted { attempts: 0, reason: ExhaustReason::CircuitOpen, refusal, .. }) => {
                let (state, left) = refusal.unwrap();
                assert_eq!(state, BreakerState::Open);
                assert!(left > Duration::from_secs(29) && left <= Duration::from_secs(30), "{left:?}");
                assert_eq!(e.attempts(), 0);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(calls.get(), 4, "a refused call does not call the function");
        scope.clock().advance(Duration::from_secs(30));
        let mut seen = vec![];
        let run = Run::default().listener(|e: &Event<'_>, _| seen.push(e.kind.as_str()));
        assert_eq!(b.execute(run, |_| Ok::<_, Failure>(7), |_| Verdict::TRANSIENT).unwrap(), 7);
        assert_eq!(seen, ["breaker_half_open", "success", "breaker_closed"]);
        assert_eq!(breaker.state(scope.clock().now()), BreakerState::Closed);
    }
}

#[cfg(all(test, feature = "blocking"))]
mod lazy_tests {
    use super::*;
    use crate::breaker::BreakerConfig;
    use crate::policy::Jitter;

    fn open_breaker() -> Arc<CircuitBreaker> {
        let breaker = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(1)).unwrap());
        let admission = breaker.admit(SystemClock.now(), &mut |_| {});
        breaker.record(admission, true, SystemClock.now(), &mut |_| {});
        assert_eq!(breaker.state(SystemClock.now()), BreakerState::Open);
        breaker
    }

    #[test]
    fn a_policy_given_a_breaker_after_it_was_built_does_not_start_lazily() {
        let lazy = Policy::builder().deadline(None).build().unwrap();
        assert!(Retrier::new(lazy.clone()).lazy, "nothing to tell or bound: a lazy start");
        // The retrier reads the flag from the policy it is given: the one with the breaker
        // asks it first, so the open breaker refuses the call before any attempt.
        let guarded = Retrier::new(lazy.with_breaker(Some(open_breaker())));
        let calls = Cell::new(0);
        let got = guarded.run(
            |_: &Attempt| {
                calls.set(calls.get() + 1);
                Ok::<_, ()>(1)
            },
            |_| Verdict::TRANSIENT,
        );
        assert!(matches!(got, Err(RetryError::Exhausted { attempts: 0, reason: ExhaustReason::CircuitOpen, .. })));
        assert_eq!(calls.get(), 0);
        // And the breaker taken away again starts lazily.
        assert!(Retrier::new(guarded.policy().with_breaker(None)).lazy);
    }

    #[test]
    fn only_a_policy_bounded_in_whole_seconds_with_nothing_to_ask_starts_on_the_coarse_clock() {
        let default = Policy::builder().build().unwrap();
        assert!(Retrier::new(default.clone()).coarse, "the default policy: 15 s deadline");
        assert!(!Retrier::new(Policy::builder().deadline(None).build().unwrap()).coarse, "untimed: lazy instead");
        let short = Policy::builder().attempt_timeout(Some(Duration::from_millis(999))).build().unwrap();
        assert!(!Retrier::new(short).coarse, "a bound under a second needs the fine clock");
        assert!(!Retrier::new(default.with_breaker(Some(open_breaker()))).coarse, "a breaker is asked first");
        let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
        assert!(!Retrier::new(Policy::builder().budget(Some(budget)).build().unwrap()).coarse, "a budget is told");
    }

    #[test]
    fn a_coarse_start_measures_the_deadline_from_the_calls_start() {
        // Attempt 1 runs before the engine starts, and takes 300 ms to fail: attempt 2's
        // bound is what is left of the 2 s deadline since the call began (the coarse
        // clock's lag less), not 2 s from the failure.
        let retrier = Retrier::new(
            Policy::builder()
                .deadline(Some(Duration::from_secs(2)))
                .initial_delay(Duration::ZERO)
                .jitter(Jitter::None)
                .build()
                .unwrap(),
        );
        assert!(retrier.coarse);
        let mut seen = vec![];
        let before = SystemClock.now();
        let got = retrier.run(
            |a: &Attempt| {
                seen.push(*a);
                if a.number == 1 {
                    std::thread::sleep(Duration::from_millis(300));
                    Err("503")
                } else {
                    Ok(a.number)
                }
            },
            |_| Verdict::TRANSIENT,
        );
        let after = SystemClock.now();
        assert_eq!(got.unwrap(), 2);
        let (first, second) = (seen[0], seen[1]);
        assert_eq!(first.remaining, Some(Duration::from_secs(2)));
        // Attempt 1's deadline on the real clock's time base, from a start read during the
        // call, the coarse clock's lag behind: usually under a tick (10 ms at most), a few
        // ticks on a loaded machine (11 ms measured), far less than attempt 1's 300 ms.
        let end = first.deadline.unwrap();
        assert!(end <= after + Duration::from_secs(2), "{end:?} vs {after:?}");
        assert!(end + Duration::from_millis(50) >= before + Duration::from_secs(2), "{end:?} vs {before:?}");
        assert_eq!(second.deadline, first.deadline, "one deadline for the whole call");
        let left = second.remaining.unwrap();
        assert!(left <= Duration::from_millis(1700), "{left:?}");
        assert!(left + (after - before) >= Duration::from_secs(2) - Duration::from_millis(10), "{left:?}");
        let stats = retrier.stats();
        assert_eq!((stats.calls, stats.attempts, stats.retries, stats.successes), (1, 2, 1, 1));
        // The happy path is counted too.
        let got = retrier.run(|a: &Attempt| Ok::<_, ()>(a.number), |_| Verdict::TRANSIENT);
        assert_eq!(got.unwrap(), 1);
        let stats = retrier.stats();
        assert_eq!((stats.calls, stats.attempts, stats.successes), (2, 3, 2));
    }

    #[test]
    fn under_virtual_time_a_bounded_call_starts_on_the_virtual_clock() {
        // The coarse start reads the real clock: under the testing switch the call starts
        // as usual, on the virtual clock, so its deadline is virtual time too.
        let scope = crate::clock::testing::scoped();
        scope.clock().advance(Duration::from_secs(5));
        let retrier = Retrier::new(Policy::builder().build().unwrap());
        let got = retrier.run(|a: &Attempt| Ok::<_, ()>(*a), |_| Verdict::TRANSIENT);
        let first = got.unwrap();
        assert_eq!(first.deadline, Some(Duration::from_secs(20)), "5 s of virtual time plus the 15 s deadline");
        assert_eq!(first.remaining, Some(Duration::from_secs(15)));
    }

    #[test]
    fn lazy_successes_on_many_threads_are_all_counted() {
        // More threads than stats slots (those with a slot count in its cells, the rest in
        // the shared ones), some alive at once and some after others have exited, each
        // counting lazy successes and failures.
        let retrier = Retrier::new(
            Policy::builder().deadline(None).initial_delay(Duration::ZERO).jitter(Jitter::None).build().unwrap(),
        );
        let (threads, calls) = (48u64, 500u64);
        for wave in 0..3 {
            std::thread::scope(|s| {
                for _ in 0..threads / 3 {
                    s.spawn(|| {
                        for i in 0..calls {
                            let fails = u32::from(i % 10 == 0);
                            let got = retrier.run(
                                |a: &Attempt| if a.number <= fails { Err(()) } else { Ok(a.number) },
                                |_| Verdict::TRANSIENT,
                            );
                            assert_eq!(got.ok(), Some(fails + 1));
                        }
                    });
                }
            });
            let done = (wave + 1) * threads / 3 * calls;
            let s = retrier.stats();
            assert_eq!((s.calls, s.successes), (done, done), "after wave {wave}");
            assert_eq!((s.attempts, s.retries), (done + done / 10, done / 10), "after wave {wave}");
        }
    }
}
