//! An attempt cut at its bound ([`TimedOut`]): the error the async executor keeps for it,
//! unless the caller makes one of its own type
//! ([`AsyncRun::timed_out_as`](super::AsyncRun::timed_out_as)).

use std::fmt;
use std::time::Duration;

/// An attempt ran out of its bound and was dropped by the async executor: the last
/// failure of a [`RetryError`](crate::executor::RetryError) (`timed_out`), or, through
/// [`AsyncRun::timed_out_as`](super::AsyncRun::timed_out_as), an error of the caller's
/// type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimedOut {
    /// The attempt's number, 1-based.
    pub attempt: u32,
    /// The bound it had when it started (the attempt timeout, or the time left before the
    /// deadline if smaller).
    pub bound: Duration,
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attempt {} timed out after {} ms", self.attempt, self.bound.as_millis())
    }
}

impl std::error::Error for TimedOut {}

impl From<TimedOut> for std::io::Error {
    /// An I/O error of kind [`TimedOut`](std::io::ErrorKind::TimedOut), so an async
    /// operation returning `io::Result` needs no error type of its own.
    fn from(t: TimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, t)
    }
}

impl crate::retry_after::RetryAfter for TimedOut {
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}
