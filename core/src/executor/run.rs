//! The options of one blocking call ([`Run`]: listener, cancel token, clock, result
//! predicate, hooks) and where an executor's events go besides the stats ([`Tell`]).

use std::ops::ControlFlow;
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::clock::Clock;
use crate::event::Event;

use super::{BeforeRetry, Failed, RetryContext, ValueVerdict, WaitHook};

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

/// Options of one [`Retrier::execute`](super::Retrier::execute) call.
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
    /// [`ControlFlow::Break`] stops the call, which ends as
    /// [`RetryError::Exhausted`](super::RetryError::Exhausted) with reason `stopped`, the
    /// errors kept (p-retry's throwing `onFailedAttempt`).
    pub fn before_retry(mut self, f: impl FnMut(&RetryContext<'_, E, T>) -> ControlFlow<()> + 'a) -> Self {
        self.before_retry = Some(Box::new(f));
        self
    }
}
