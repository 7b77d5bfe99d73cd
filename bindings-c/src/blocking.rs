//! The blocking call: runs the user's attempt callback under the core's executor until
//! the engine stops, sleeping between attempts (waking at once on a cancel).

use std::ffi::c_void;

use retryrs::{RetryError, Run, Verdict};

use crate::cancel::retryrs_cancel;
use crate::event::retryrs_listener;
use crate::ffi::{arg, guard_status, write_opt, Failure};
use crate::retrier::retryrs_retrier;
use crate::types::*;

/// One attempt. Returns RETRYRS_SUCCESS, RETRYRS_TRANSIENT or RETRYRS_PERMANENT. For a
/// transient failure it may store a minimum wait in ms in *hint_ms (e.g. from
/// retryrs_parse_retry_after()); *hint_ms starts negative, meaning no hint, and a
/// negative or NaN value stays "no hint". Any other return value ends the call with
/// RETRYRS_INVALID_ARGUMENT. Must not unwind (no C++ exceptions, no longjmp).
pub type retryrs_attempt_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, attempt: u32, hint_ms: *mut f64) -> retryrs_verdict>;

/// How a call ended, beyond its status.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_outcome {
    /// How many times the attempt callback ran.
    pub attempts: u32,
    /// Why, when the status is RETRYRS_EXHAUSTED; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

/// A failed attempt as the executor holds it.
enum Failed {
    Transient(f64),
    Permanent,
    BadVerdict(retryrs_verdict),
}

/// Runs `attempt(user_data, n, &hint)` until it succeeds or the engine stops it.
///
/// Returns RETRYRS_OK (an attempt succeeded), RETRYRS_REJECTED (a permanent failure),
/// RETRYRS_EXHAUSTED (outcome->reason says which limit), RETRYRS_CANCELLED (`cancel`
/// fired, before or during a wait), or RETRYRS_INVALID_ARGUMENT (NULL retrier or
/// attempt, or a verdict outside RETRYRS_SUCCESS/TRANSIENT/PERMANENT, which counts as
/// a permanent failure). `listener`, `cancel` and `outcome` may be NULL. Under the
/// testing switch the waits are virtual.
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_call(
    retrier: *const retryrs_retrier,
    attempt: retryrs_attempt_fn,
    user_data: *mut c_void,
    listener: *const retryrs_listener,
    cancel: *const retryrs_cancel,
    outcome: *mut retryrs_outcome,
) -> retryrs_status {
    guard_status(|| {
        write_opt(outcome, retryrs_outcome::default());
        let shared = &arg(retrier, "retrier")?.inner;
        let attempt = attempt.ok_or_else(|| Failure::invalid("attempt must not be NULL"))?;
        let mut run = Run::default();
        if let Some(l) = listener.as_ref().filter(|l| l.on_event.is_some()) {
            run = run.listener(move |e, _| l.deliver(e, &shared.name));
        }
        if let Some(c) = cancel.as_ref() {
            run = run.cancel(&c.token);
        }
        let mut made = 0;
        let op = |n: u32| {
            made = n;
            let mut hint = -1.0;
            match attempt(user_data, n, &mut hint) {
                RETRYRS_SUCCESS => Ok(()),
                RETRYRS_TRANSIENT => Err(Failed::Transient(hint)),
                RETRYRS_PERMANENT => Err(Failed::Permanent),
                other => Err(Failed::BadVerdict(other)),
            }
        };
        let classify = |f: &Failed| match f {
            Failed::Transient(hint) => Verdict::transient_ms(Some(*hint)),
            Failed::Permanent | Failed::BadVerdict(_) => Verdict::Permanent,
        };
        let result = shared.retrier.execute(run, op, classify);
        let name = shared.retrier.policy().name();
        let (status, why, message) = match result {
            Ok(()) => {
                write_opt(outcome, retryrs_outcome { attempts: made, reason: RETRYRS_REASON_NONE });
                return Ok(());
            }
            Err(RetryError::Rejected(Failed::BadVerdict(v))) => (
                RETRYRS_INVALID_ARGUMENT,
                RETRYRS_REASON_NONE,
                format!("{name}: the attempt callback returned {v}, not RETRYRS_SUCCESS, RETRYRS_TRANSIENT or RETRYRS_PERMANENT"),
            ),
            Err(RetryError::Rejected(_)) => {
                (RETRYRS_REJECTED, RETRYRS_REASON_NONE, format!("{name}: attempt {made} failed permanently"))
            }
            Err(RetryError::Exhausted { attempts, reason: r, .. }) => {
                (RETRYRS_EXHAUSTED, reason(Some(r)), format!("{name}: gave up after {attempts} attempts ({r})"))
            }
            Err(RetryError::Cancelled { attempts, .. }) => {
                (RETRYRS_CANCELLED, RETRYRS_REASON_NONE, format!("{name}: cancelled after {attempts} attempts"))
            }
        };
        write_opt(outcome, retryrs_outcome { attempts: made, reason: why });
        Err(Failure { status, message })
    })
}
