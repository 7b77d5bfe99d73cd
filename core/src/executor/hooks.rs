//! What a call's own code answers and is shown between attempts: the verdict on a
//! returned value ([`ValueVerdict`]), the failure an event is about ([`Failed`]), and the
//! hooks that may stop a retry or set its wait ([`RetryContext`], [`plan`]).

use std::ops::ControlFlow;
use std::time::Duration;

use crate::async_executor::TimedOut;
use crate::engine::{Plan, Verdict};

/// What a [result predicate](super::Run::result_predicate) says of a returned value.
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

/// What the hooks of [`Run::wait_with`](super::Run::wait_with) and
/// [`Run::before_retry`](super::Run::before_retry) see: a failed attempt the engine would
/// retry, and the wait it computed.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryContext<'a, E, T = ()> {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// The wait the engine computed (the backoff, raised to the hint).
    pub delay: Duration,
    /// The retries the attempt limit still allows
    /// ([`Event::retries_left`](crate::event::Event::retries_left)).
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
