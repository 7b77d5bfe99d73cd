//! What a host and the engine say to each other: the host's [`Verdict`] on an attempt and
//! its [`Plan`] for a proposed wait, the engine's answers ([`Decision`], [`Proposal`],
//! [`Resume`]) and how a call ended ([`Stop`]), and the [`StateError`] for a step out of
//! order.

use std::time::Duration;

use crate::event::ExhaustReason;
use crate::units::duration_from_ms;

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
    /// Wait this long (zero: do not sleep at all), then call
    /// [`Call::after_wait`](super::Call::after_wait).
    Retry(Duration),
    /// The call is over.
    Stop(Stop),
}

/// What [`Call::propose`](super::Call::propose) says: the call ended already, or it may
/// wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposal {
    /// The call is over, exactly as [`Call::record`](super::Call::record) would have ended
    /// it.
    Stop(Stop),
    /// The engine would wait `delay`; the host's hooks decide, then
    /// [`Call::settle`](super::Call::settle).
    Wait {
        /// The wait the engine computed (backoff, raised to the hint).
        delay: Duration,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The retries the attempt limit still allows
        /// ([`Event::retries_left`](crate::event::Event::retries_left)).
        retries_left: u32,
        /// The verdict's hint (a server's minimum wait), if it had one.
        hint: Option<Duration>,
    },
}

/// The host's answer to a [`Proposal::Wait`]: what [`Call::settle`](super::Call::settle)
/// does with the wait.
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
