//! The timer seam of the async executor: a [`Sleep`] is anything that turns a
//! [`Duration`] into a future that completes after it. The crate depends on no runtime;
//! the `tokio` feature provides [`TokioSleep`], and any other runtime's timer plugs in as
//! a closure:
//!
//! ```
//! use retryrs::Sleep;
//! use std::time::Duration;
//!
//! // async-std: `|d| async_std::task::sleep(d)`; smol: `|d| async { smol::Timer::after(d).await; }`.
//! // Any `Fn(Duration) -> impl Future<Output = ()>` is a Sleep:
//! fn takes_a_sleep(_sleep: impl Sleep) {}
//! takes_a_sleep(|delay: Duration| async move { let _ = delay; /* the runtime's timer */ });
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A runtime's timer: [`Sleep::sleep`] returns a future that completes after `delay`.
///
/// The executor drops the future to stop waiting (on a cancel, or when the attempt it
/// bounds ends first), so the timer must be cancellable by drop, as every runtime's is.
/// Implemented for every `Fn(Duration) -> Fut` with `Fut: Future<Output = ()>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a timer retryrs can sleep on",
    note = "enable retryrs' `tokio` feature and use `TokioSleep`, or pass your runtime's timer as a closure: `|d| async_std::task::sleep(d)`"
)]
pub trait Sleep {
    /// The future of one wait.
    type Timer: Future<Output = ()>;
    /// A future that completes after `delay`. A huge delay may be capped by the runtime
    /// (tokio: about 2 years); the executor never asks for more than the policy allows.
    fn sleep(&self, delay: Duration) -> Self::Timer;

    /// The clock this timer runs on, when it is not the real monotonic one: the async
    /// executor then reads its deadline and attempt bounds from it too, so both move
    /// together (tokio's paused clock: [`TokioSleep`] gives `TokioClock`). `None`, the
    /// default: the real clock.
    fn clock(&self) -> Option<&'static dyn crate::Clock> {
        None
    }

    /// The time now on this timer's clock ([`Sleep::clock`], else the real one), and a
    /// wait of `delay` from then: what the async executor asks when a call starts with
    /// its first attempt bounded. The default reads the clock and calls [`Sleep::sleep`];
    /// `TokioSleep` reads tokio's clock once for both.
    #[doc(hidden)]
    fn now_and_sleep(&self, delay: Duration) -> (Duration, Self::Timer) {
        let now = self.clock().unwrap_or(&crate::SystemClock).now();
        (now, self.sleep(delay))
    }
}

impl<F, Fut> Sleep for F
where
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    type Timer = Fut;
    fn sleep(&self, delay: Duration) -> Fut {
        self(delay)
    }
}

/// tokio's timer (feature `tokio`): `tokio::time::sleep`. Needs a tokio runtime with the
/// time driver enabled (`enable_time()` or `enable_all()`, as `#[tokio::main]` does).
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleep;

#[cfg(feature = "tokio")]
impl Sleep for TokioSleep {
    type Timer = tokio::time::Sleep;
    fn sleep(&self, delay: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(delay)
    }
    fn clock(&self) -> Option<&'static dyn crate::Clock> {
        Some(&TokioClock)
    }
    /// One read of tokio's clock for both (`tokio::time::sleep` reads it again).
    #[inline]
    fn now_and_sleep(&self, delay: Duration) -> (Duration, tokio::time::Sleep) {
        let now = tokio::time::Instant::now();
        (TokioClock::since_origin(now), tokio::time::sleep_until(now + delay))
    }
}

/// tokio's clock (feature `tokio`): `tokio::time::Instant::now()`, which stands still
/// under paused time (`#[tokio::test(start_paused = true)]`, `tokio::time::pause`) and
/// moves with `tokio::time::advance` and the auto-advance of an idle runtime. The async
/// executor on [`TokioSleep`] reads its deadline from it, so the deadline and the waits
/// are on one clock. Outside a runtime it is the real clock. Its blocking `sleep` is the
/// thread's ([`SystemClock`](crate::SystemClock)'s): the async executor never calls it.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

#[cfg(feature = "tokio")]
impl TokioClock {
    /// A reading of tokio's clock on the real clock's time base, whose origin is the
    /// monotonic clock's zero: a paused clock stands at a real time after it (its
    /// runtime's start, maybe before the process's first reading) and only moves forward,
    /// so nothing saturates.
    #[inline]
    fn since_origin(now: tokio::time::Instant) -> Duration {
        now.into_std().saturating_duration_since(crate::clock::origin_instant())
    }
}

#[cfg(feature = "tokio")]
impl crate::Clock for TokioClock {
    fn now(&self) -> Duration {
        TokioClock::since_origin(tokio::time::Instant::now())
    }
    fn sleep(&self, delay: Duration, cancel: Option<&crate::CancelToken>) -> Result<(), crate::clock::Cancelled> {
        crate::SystemClock.sleep(delay, cancel)
    }
}

/// Gives the runtime one turn: pending once (after asking to be polled again), then
/// ready. What a zero-delay retry does instead of looping straight into the next attempt,
/// so the other tasks on the same thread run in between. Any runtime.
pub(crate) fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

pub(crate) struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
