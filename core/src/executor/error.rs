//! How a retried call failed ([`RetryError`]) and the error it shows as its source
//! ([`Cause`]): one job, the error a caller gets back, with everything it lost kept.

use std::fmt;
use std::time::Duration;

use crate::async_executor::TimedOut;
use crate::breaker::BreakerState;
use crate::event::ExhaustReason;
use crate::policy::DeadlineHint;

/// How many failures a [`RetryError`] keeps: the last 64 (the contract's history cap), so
/// a call with a huge `max_attempts` cannot hold every error it ever saw. `attempts`
/// still counts them all.
pub const HISTORY: usize = 64;

/// How a retried call failed. Nothing is lost: the original error, the last failures in
/// order, and the rejected value where the last failure was one.
///
/// `T` is the type of the values a [result predicate](super::Run::result_predicate) can
/// reject; [`Retrier::run`](super::Retrier::run) has none and uses the default `()`.
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
    /// attempt at a time and so cannot abandon one (the blocking
    /// [`Retrier::run`](super::Retrier::run) and [`Retrier::execute`](super::Retrier::execute)).
    /// Run such a policy with the async executor
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
