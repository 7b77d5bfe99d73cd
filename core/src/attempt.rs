//! What an attempt knows about itself: its number and its bound (contract, "The
//! attempt's bound"), as [`Retrier::run`](crate::Retrier::run) hands it to the closure.

use std::ops::Deref;
use std::time::Duration;

use crate::engine::{Call, StateError};
use crate::policy::Policy;

/// One attempt: its number and the time it has, computed by the engine when it starts.
///
/// Pass `remaining` to the attempt's I/O (a socket or client timeout): a blocking attempt
/// cannot be interrupted, so the bound is kept only if the I/O is given it. An attempt
/// that runs past the deadline ends the call with reason `deadline` when it fails; a late
/// success is still returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// The attempt's number, 1-based.
    pub number: u32,
    /// The time this attempt had when it started: the time left before the deadline, or
    /// the attempt timeout if smaller; `None` when neither is set (unbounded).
    pub remaining: Option<Duration>,
    /// When the bound ends, on the time base of the clock the call runs on
    /// ([`Clock::now`](crate::Clock::now): the real monotonic clock, or the virtual one
    /// under the testing switch); `None` when unbounded.
    pub deadline: Option<Duration>,
}

impl Attempt {
    /// Attempt `number` started at `now`, its bound ending at `deadline` (`None`:
    /// unbounded). For hosts and executors that start their [`Call`] lazily; with a
    /// `Call` at hand, use [`Attempt::of`].
    #[inline]
    pub fn new(number: u32, now: Duration, deadline: Option<Duration>) -> Self {
        Attempt { number, remaining: deadline.map(|d| d.saturating_sub(now)), deadline }
    }

    /// Attempt 1 of a call that started at `started`, whose attempts have `bound`
    /// ([`Policy::attempt_deadline`] of a call and attempt both started at zero: for
    /// attempt 1 the bound is the same whenever the call starts). What [`Attempt::new`]
    /// gives with the policy's deadline at `started`, without its subtraction (an
    /// executor's happy path asks it on every call).
    #[inline(always)]
    pub(crate) fn first(started: Duration, bound: Option<Duration>) -> Self {
        Attempt { number: 1, remaining: bound, deadline: bound.map(|b| started.saturating_add(b)) }
    }

    /// The attempt `call` has in progress, starting at `now`.
    pub fn of<P: Deref<Target = Policy>>(call: &Call<P>, now: Duration) -> Result<Self, StateError> {
        Ok(Attempt::new(call.attempt(), now, call.attempt_deadline()?))
    }

    /// The time left at `now` (a later reading of the same clock): zero once the bound
    /// has passed, `None` when unbounded.
    pub fn remaining_at(&self, now: Duration) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_sub(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Decision, Resume, Verdict};
    use crate::event::Event;
    use crate::policy::Jitter;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn each_attempt_gets_the_smaller_of_the_time_left_and_the_attempt_timeout() {
        let p = Policy::builder()
            .jitter(Jitter::None)
            .initial_delay(ms(100))
            .deadline(Some(ms(1000)))
            .attempt_timeout(Some(ms(400)))
            .build()
            .unwrap();
        let none = &mut |_: &Event<'_>| {};
        let mut call = Call::start(&p, ms(50));
        let first = Attempt::of(&call, ms(50)).unwrap();
        assert_eq!(first, Attempt { number: 1, remaining: Some(ms(400)), deadline: Some(ms(450)) });
        assert_eq!(call.record(Verdict::TRANSIENT, ms(450), none), Ok(Decision::Retry(ms(100))));
        assert!(Attempt::of(&call, ms(450)).is_err(), "no attempt while waiting");
        assert_eq!(call.after_wait(ms(550), none), Ok(Resume::Attempt(2)));
        // 500 ms of the deadline left, the timeout's 400 is smaller.
        assert_eq!(Attempt::of(&call, ms(550)).unwrap().remaining, Some(ms(400)));
        call.record(Verdict::TRANSIENT, ms(850), none).unwrap();
        call.after_wait(ms(950), none).unwrap();
        // 100 ms left before the deadline: smaller than the timeout.
        let third = Attempt::of(&call, ms(950)).unwrap();
        assert_eq!((third.number, third.remaining, third.deadline), (3, Some(ms(100)), Some(ms(1050))));
        assert_eq!(third.remaining_at(ms(1000)), Some(ms(50)));
        assert_eq!(third.remaining_at(ms(2000)), Some(Duration::ZERO));
    }

    #[test]
    fn unbounded_without_deadline_or_attempt_timeout() {
        let p = Policy::builder().deadline(None).build().unwrap();
        let call = Call::start(&p, ms(0));
        assert_eq!(Attempt::of(&call, ms(0)).unwrap(), Attempt::new(1, ms(0), None));
        assert_eq!(call.remaining(ms(5)), Ok(None));
        assert_eq!(Attempt::new(1, ms(0), None).remaining_at(ms(9)), None);
    }
}
