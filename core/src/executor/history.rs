//! The failures a call keeps ([`History`]): the last [`HISTORY`] errors, in place while
//! they are few ([`Errors`]), and the last rejected value or cut attempt; one job, what
//! the [`RetryError`] a call ends with carries.

use crate::async_executor::TimedOut;
use crate::engine::Stop;
use crate::event::ExhaustReason;
use crate::policy::Policy;

use super::{Failed, RetryError, HISTORY};

/// How many errors a call keeps in place before it moves them to a `Vec`: a call that
/// fails that often and then succeeds allocates nothing (malloc and free were a third of
/// the instructions of a call with two zero-delay failures).
pub(super) const INLINE: usize = 2;

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
    pub(super) fn new() -> Self {
        Errors { slots: std::array::from_fn(|_| None), len: 0, spilled: None }
    }

    #[inline(always)]
    pub(super) fn push(&mut self, error: E) {
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

    pub(super) fn last(&self) -> Option<&E> {
        match &self.spilled {
            None => self.len.checked_sub(1).and_then(|i| self.slots[i].as_ref()),
            Some(errors) => errors.last(),
        }
    }

    pub(super) fn pop(&mut self) -> Option<E> {
        match &mut self.spilled {
            None => {
                self.len = self.len.checked_sub(1)?;
                self.slots[self.len].take()
            }
            Some(errors) => errors.pop(),
        }
    }

    /// The errors, in order, as [`RetryError`] carries them.
    pub(super) fn into_vec(self) -> Vec<E> {
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
