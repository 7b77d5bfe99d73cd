//! The options of one async call ([`AsyncRun`]: the timer, a cancel token, a listener, a
//! result predicate, a clock, the hooks) and their types, and how its listener is told of
//! each event.

use std::time::Duration;

use crate::cancel::CancelToken;
use crate::clock::Clock;
use crate::event::Event;
use crate::executor::{Failed, RetryContext, Tell, ValueVerdict};
use crate::sleep::Sleep;

use super::TimedOut;

/// A listener of an async call: every event, with the failure it is about. `Send`, so
/// the call's future can move between threads.
pub type AsyncListener<'a, E, T = ()> = Box<dyn FnMut(&Event<'_>, Option<Failed<'_, E, T>>) + Send + 'a>;

/// A result predicate of an async call.
pub type AsyncResultPredicate<'a, T> = Box<dyn FnMut(&T) -> ValueVerdict + Send + 'a>;

/// A wait hook of an async call ([`AsyncRun::wait_with`]).
pub type AsyncWaitHook<'a, E, T> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + Send + 'a>;

/// A before-retry hook of an async call ([`AsyncRun::before_retry`]).
pub type AsyncBeforeRetry<'a, E, T> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> std::ops::ControlFlow<()> + Send + 'a>;

/// Options of one [`Retrier::execute_async`](crate::Retrier::execute_async) call: the timer,
/// and as for the blocking [`Run`](crate::Run), a cancel token, a listener, a result
/// predicate, a clock and the hooks.
#[must_use = "options do nothing until passed to Retrier::execute_async"]
pub struct AsyncRun<'a, S, E, T = ()> {
    pub(super) sleep: S,
    pub(super) cancel: Option<&'a CancelToken>,
    pub(super) clock: Option<&'a dyn Clock>,
    pub(super) listener: Option<AsyncListener<'a, E, T>>,
    pub(super) result_predicate: Option<AsyncResultPredicate<'a, T>>,
    pub(super) wait: Option<AsyncWaitHook<'a, E, T>>,
    pub(super) before_retry: Option<AsyncBeforeRetry<'a, E, T>>,
    pub(super) timed_out_as: Option<AsyncTimedOutAs<'a, E>>,
}

/// What makes an error of the caller's type for an attempt cut at its bound
/// ([`AsyncRun::timed_out_as`]).
pub type AsyncTimedOutAs<'a, E> = Box<dyn FnMut(TimedOut) -> E + Send + 'a>;

#[cfg(feature = "tokio")]
impl<'a, E, T> AsyncRun<'a, crate::sleep::TokioSleep, E, T> {
    /// Options that wait on tokio's timer (feature `tokio`).
    pub fn tokio() -> Self {
        AsyncRun::new(crate::sleep::TokioSleep)
    }
}

impl<'a, S: Sleep, E, T> AsyncRun<'a, S, E, T> {
    /// Options that wait on `sleep`: a runtime's timer, e.g. `|d| async_std::task::sleep(d)`.
    pub fn new(sleep: S) -> Self {
        AsyncRun {
            sleep,
            cancel: None,
            clock: None,
            listener: None,
            result_predicate: None,
            wait: None,
            before_retry: None,
            timed_out_as: None,
        }
    }
    /// Adds a cancel token: when it fires, the wait or the attempt in flight is dropped
    /// and the call ends as [`RetryError::Cancelled`](crate::executor::RetryError::Cancelled).
    pub fn cancel(mut self, token: &'a CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// Adds a listener that sees every event and the failure it is about.
    pub fn observer(mut self, f: impl FnMut(&Event<'_>, Option<Failed<'_, E, T>>) + Send + 'a) -> Self {
        self.listener = Some(Box::new(f));
        self
    }
    /// Adds a result predicate (see [`Run::result_predicate`](crate::Run::result_predicate)).
    pub fn result_predicate(mut self, f: impl FnMut(&T) -> ValueVerdict + Send + 'a) -> Self {
        self.result_predicate = Some(Box::new(f));
        self
    }
    /// Runs on this virtual clock: waits advance it (and yield) instead of sleeping. Its
    /// `sleep` must not block; meant for [`VirtualClock`](crate::VirtualClock).
    pub fn clock(mut self, clock: &'a dyn Clock) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Adds a wait hook (see [`Run::wait_with`](crate::Run::wait_with)).
    pub fn wait_with(mut self, f: impl FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + Send + 'a) -> Self {
        self.wait = Some(Box::new(f));
        self
    }
    /// Adds a before-retry hook (see [`Run::before_retry`](crate::Run::before_retry)).
    pub fn before_retry(
        mut self,
        f: impl FnMut(&RetryContext<'_, E, T>) -> std::ops::ControlFlow<()> + Send + 'a,
    ) -> Self {
        self.before_retry = Some(Box::new(f));
        self
    }
    /// Turns an attempt cut at its bound into an error of the caller's type (e.g.
    /// `std::io::Error::from`, or a variant of the caller's enum), which `classify`
    /// then judges and the history keeps like any other: for a caller whose
    /// classification of a timeout matters (a request that may have been sent is not
    /// retried). Without it a cut attempt is a transient failure with no hint, kept as
    /// [`Failed::TimedOut`] and [`RetryError`](crate::executor::RetryError)'s `timed_out`.
    pub fn timed_out_as(mut self, f: impl FnMut(TimedOut) -> E + Send + 'a) -> Self {
        self.timed_out_as = Some(Box::new(f));
        self
    }
}

impl<E, T> Tell<E, T> for Option<AsyncListener<'_, E, T>> {
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

/// Tells `listen` of `event`. Out of line, as the blocking executor's: the event sink
/// stays small enough to be inlined into the engine's steps.
#[inline(never)]
fn tell<E, T>(listen: &mut AsyncListener<'_, E, T>, event: &Event<'_>, failed: Option<Failed<'_, E, T>>) {
    // Only the kinds that carry a failure get it (not the breaker's events).
    listen(event, failed.filter(|_| event.kind.carries_error()));
}
