//! The blocking executor: runs a closure until the engine says stop, sleeping between
//! attempts on a [`Clock`], waking at once on a [`CancelToken`].

use std::fmt;
use std::sync::Arc;

use crate::cancel::CancelToken;
use crate::clock::{testing, Clock, SystemClock};
use crate::engine::{Call, Decision, Resume, Stop, Verdict};
use crate::event::{Event, ExhaustReason};
use crate::policy::Policy;

/// How a retried call failed. Nothing is lost: the original error, or every failure in
/// order.
#[derive(Debug)]
pub enum RetryError<E> {
    /// A permanent failure: the original error, unchanged.
    Rejected(E),
    /// Transient failures ran out of room.
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// Which limit ended the call.
        reason: ExhaustReason,
        /// Every failure, in order; the last one is the cause.
        errors: Vec<E>,
    },
    /// The cancel token fired.
    Cancelled {
        /// Attempts made.
        attempts: u32,
        /// Every failure before the cancel, in order.
        errors: Vec<E>,
    },
}

impl<E> RetryError<E> {
    /// The last failure, if there was one (the cause of Exhausted and Cancelled).
    pub fn last_error(&self) -> Option<&E> {
        match self {
            RetryError::Rejected(e) => Some(e),
            RetryError::Exhausted { errors, .. } | RetryError::Cancelled { errors, .. } => errors.last(),
        }
    }
}

impl<E: fmt::Display> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryError::Rejected(e) => write!(f, "{e}"),
            RetryError::Exhausted { attempts, reason, errors } => {
                write!(f, "{}", crate::event::GaveUp { name: None, attempts: *attempts, reason: *reason })?;
                match errors.last() {
                    Some(e) => write!(f, ": {e}"),
                    None => Ok(()),
                }
            }
            RetryError::Cancelled { attempts, .. } => {
                write!(f, "{}", crate::event::CancelledAfter { name: None, attempts: *attempts })
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RetryError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RetryError::Rejected(e) => e.source(),
            _ => self.last_error().map(|e| e as &(dyn std::error::Error + 'static)),
        }
    }
}

/// A policy ready to run closures. Immutable: share it freely between threads (it is an
/// `Arc` inside); each call keeps its own state.
#[derive(Debug, Clone)]
pub struct Retrier {
    policy: Arc<Policy>,
}

impl From<Policy> for Retrier {
    fn from(policy: Policy) -> Self {
        Retrier { policy: Arc::new(policy) }
    }
}

impl Retrier {
    /// A retrier over `policy`.
    pub fn new(policy: Policy) -> Self {
        policy.into()
    }

    /// A retrier over a shared policy.
    pub fn from_arc(policy: Arc<Policy>) -> Self {
        Retrier { policy }
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// Runs `op` (given the attempt number) until it succeeds or the engine stops it;
    /// `classify` turns each error into a verdict. Uses the real clock, or the virtual one
    /// while the testing switch is on.
    pub fn run<T, E>(
        &self,
        op: impl FnMut(u32) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        self.execute(Run::default(), op, classify)
    }

    /// [`Retrier::run`] with a listener, a cancel token and a clock of your choosing.
    pub fn execute<T, E>(
        &self,
        mut run: Run<'_, E>,
        mut op: impl FnMut(u32) -> Result<T, E>,
        mut classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        let virtual_clock;
        let clock: &dyn Clock = match run.clock {
            Some(clock) => clock,
            None => match testing::clock() {
                Some(v) => {
                    virtual_clock = v;
                    &virtual_clock
                }
                None => &SystemClock,
            },
        };
        let cancel = run.cancel;
        let has_listener = run.listener.is_some();
        let listener = &mut run.listener;
        let mut notify = |event: &Event<'_>, error: Option<&E>| {
            if let Some(listen) = listener.as_mut() {
                listen(event, error);
            }
        };
        if cancel.is_some_and(CancelToken::is_cancelled) {
            crate::engine::cancelled_before_start(&self.policy, &mut |e| notify(e, None));
            return Err(RetryError::Cancelled { attempts: 0, errors: Vec::new() });
        }
        let mut call = Call::start(&*self.policy, clock.now());
        // Allocated at the first failure: the happy path allocates nothing.
        let mut errors: Vec<E> = Vec::new();
        loop {
            let error = match op(call.attempt()) {
                Ok(value) => {
                    // Only the Success event shows this time: without a listener, skip the read.
                    let now = if has_listener { clock.now() } else { call.started_at() };
                    let _ = call.record(Verdict::Success, now, &mut |e| notify(e, None));
                    return Ok(value);
                }
                Err(error) => error,
            };
            let verdict = classify(&error);
            let decision = call
                .record(verdict, clock.now(), &mut |e| notify(e, Some(&error)))
                .expect("the executor only records while an attempt is in progress");
            errors.push(error);
            let delay = match decision {
                Decision::Retry(delay) => delay,
                Decision::Stop(stop) => return Err(stopped(stop, call.attempt(), errors)),
            };
            if clock.sleep(delay, cancel).is_err() {
                let last = errors.last();
                let _ = call.cancel(clock.now(), &mut |e| notify(e, last));
                return Err(RetryError::Cancelled { attempts: call.attempt(), errors });
            }
            let last = errors.last();
            let resume = call
                .after_wait(clock.now(), &mut |e| notify(e, last))
                .expect("the executor only resumes after a retry decision");
            if let Resume::Stop(stop) = resume {
                return Err(stopped(stop, call.attempt(), errors));
            }
        }
    }
}

fn stopped<E>(stop: Stop, attempts: u32, mut errors: Vec<E>) -> RetryError<E> {
    match stop {
        Stop::Rejected => RetryError::Rejected(errors.pop().expect("a rejection follows a failure")),
        Stop::Exhausted(reason) => RetryError::Exhausted { attempts, reason, errors },
        Stop::Cancelled => RetryError::Cancelled { attempts, errors },
        Stop::Success => unreachable!("success returns the value, not an error"),
    }
}

/// A listener: every event, with the failure it is about where there is one.
pub type Listener<'a, E> = Box<dyn FnMut(&Event<'_>, Option<&E>) + 'a>;

/// Options of one [`Retrier::execute`] call.
pub struct Run<'a, E> {
    /// Receives every event.
    pub listener: Option<Listener<'a, E>>,
    /// Fires to end a wait at once.
    pub cancel: Option<&'a CancelToken>,
    /// The clock; `None` means the real one, or the virtual one under the testing switch.
    pub clock: Option<&'a dyn Clock>,
}

impl<E> Default for Run<'_, E> {
    fn default() -> Self {
        Run { listener: None, cancel: None, clock: None }
    }
}

impl<'a, E> Run<'a, E> {
    /// Adds a listener.
    pub fn listener(mut self, f: impl FnMut(&Event<'_>, Option<&E>) + 'a) -> Self {
        self.listener = Some(Box::new(f));
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
}

#[cfg(test)]
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
            |n| Err(Failure("503", n)),
            |_| Verdict::TRANSIENT,
        );
        match res {
            Err(RetryError::Exhausted { attempts, reason, errors }) => {
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
            |n| {
                calls += 1;
                Err(Failure("404", n))
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
            |n| if n < 3 { Err(Failure("503", n)) } else { Ok("done") },
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
            |n| Err(Failure("503", n)),
            |_| Verdict::TRANSIENT,
        );
        let took = started.elapsed();
        canceller.join().unwrap();
        match res {
            Err(RetryError::Cancelled { attempts, errors }) => {
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
            |n| {
                calls += 1;
                Err(Failure("x", n))
            },
            |_| Verdict::TRANSIENT,
        );
        assert!(matches!(res, Err(RetryError::Cancelled { attempts: 0, .. })));
        assert_eq!(calls, 0);
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
        let res: Result<(), _> = r.run(|n| Err(Failure("503", n)), |_| Verdict::TRANSIENT);
        assert!(matches!(res, Err(RetryError::Exhausted { attempts: 5, .. })));
        assert_eq!(scope.clock().now(), Duration::from_secs(40));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(scope);
        assert!(!testing::is_on());
    }
}
