//! Hooks that act on a call (issue 24): a wait callback that sets an exact wait and a
//! before-retry callback that may stop the call, for the blocking call
//! (retryrs_retrier_call_hooked) and, through retryrs_call_propose / retryrs_call_settle,
//! for a program driving the engine by hand. And the retrier's statistics.

use std::ffi::{c_char, c_void};

use retryrs::{Plan, StatsSnapshot};

use crate::ffi::{arg, arg_mut, guard_status, Failure};
use crate::retrier::retryrs_retrier;
use crate::types::*;

/// What a program answers to a proposed wait (retryrs_call_settle()), and what a
/// before-retry callback returns.
pub type retryrs_plan = i32;
/// Wait what the engine computed (a before-retry callback: let the call wait).
pub const RETRYRS_PLAN_ENGINE: retryrs_plan = 0;
/// Wait exactly `wait_ms` (retryrs_call_settle() only).
pub const RETRYRS_PLAN_EXACT: retryrs_plan = 1;
/// Stop the call: RETRYRS_EXHAUSTED with reason RETRYRS_REASON_STOPPED.
pub const RETRYRS_PLAN_STOP: retryrs_plan = 2;

/// A failed attempt the engine would retry, as the hooks see it. Valid only during the
/// callback. The library fills it (later versions may append fields).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_retry_info {
    /// The retrier's name (NUL-terminated, owned by the retrier).
    pub name: *const c_char,
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// The retries the attempt limit still allows: max_attempts - attempt.
    pub retries_left: u32,
    /// The wait the engine computed, in ms (the backoff, raised to the hint).
    pub delay_ms: u64,
    /// The failure's Retry-After hint in ms; negative when it had none.
    pub hint_ms: f64,
    /// Time since the call began, in ms.
    pub elapsed_ms: u64,
}

/// A wait callback: returns the exact wait in ms to use instead of info->delay_ms (not
/// raised to the hint; rounded up to whole ms; refused past the deadline, reason
/// RETRYRS_REASON_DEADLINE; over max_retry_after_ms when that is set, reason
/// RETRYRS_REASON_RETRY_AFTER), or a negative number for the engine's wait. NaN, infinity
/// or a wait past RETRYRS_MAX_DELAY_MS ends the call with RETRYRS_INVALID_ARGUMENT. Must
/// not unwind.
pub type retryrs_wait_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, info: *const retryrs_retry_info) -> f64>;

/// A before-retry callback, called before the wait callback: returns RETRYRS_PLAN_ENGINE
/// to let the call wait, RETRYRS_PLAN_STOP to stop it (RETRYRS_EXHAUSTED, reason
/// RETRYRS_REASON_STOPPED; the wait callback is not called). Any other value ends the
/// call with RETRYRS_INVALID_ARGUMENT. Must not unwind.
pub type retryrs_before_retry_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, info: *const retryrs_retry_info) -> retryrs_plan>;

/// The hooks of a blocking call (retryrs_retrier_call_hooked()). Set struct_size to
/// sizeof(retryrs_hooks) (see "ABI growth"); either callback may be NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_hooks {
    /// sizeof(retryrs_hooks) as the program was compiled.
    pub struct_size: usize,
    /// Sets exact waits; NULL: the engine's waits.
    pub wait: retryrs_wait_fn,
    /// May stop the call before a wait; NULL: never stops.
    pub before_retry: retryrs_before_retry_fn,
    /// Passed back as both callbacks' first argument.
    pub user_data: *mut c_void,
}

impl retryrs_hooks {
    /// Runs the hooks for `info`: the plan, or the error naming a bad answer (the call
    /// then stops, and the caller reports the error).
    pub(crate) fn plan(&self, info: &retryrs_retry_info) -> (Plan, Option<String>) {
        if let Some(before) = self.before_retry {
            // SAFETY: the caller promised a callable function and its user_data.
            match unsafe { before(self.user_data, info) } {
                RETRYRS_PLAN_ENGINE => {}
                RETRYRS_PLAN_STOP => return (Plan::Stop, None),
                other => {
                    let why = format!(
                        "the before_retry callback returned {other}, not RETRYRS_PLAN_ENGINE or RETRYRS_PLAN_STOP"
                    );
                    return (Plan::Stop, Some(why));
                }
            }
        }
        let Some(wait) = self.wait else { return (Plan::Engine, None) };
        // SAFETY: as above.
        let ms = unsafe { wait(self.user_data, info) };
        if ms < 0.0 {
            return (Plan::Engine, None); // negative: the engine's wait
        }
        match Plan::exact_ms(ms) {
            Ok(plan) => (plan, None),
            // NaN, or past the longest wait (infinity included): a bug to report.
            Err(e) => (
                Plan::Stop,
                Some(format!(
                    "the wait callback returned {}: {e} (negative: the engine's)",
                    retryrs::units::compact(ms)
                )),
            ),
        }
    }

    /// The hooks a caller passed, checked: NULL is none; a struct_size this library does
    /// not know is refused.
    pub(crate) unsafe fn checked<'a>(hooks: *const retryrs_hooks) -> Result<Option<&'a retryrs_hooks>, Failure> {
        let Some(h) = hooks.as_ref() else { return Ok(None) };
        if h.struct_size != std::mem::size_of::<retryrs_hooks>() {
            return Err(Failure::invalid(format!(
                "hooks->struct_size must be sizeof(retryrs_hooks) = {}, got {}",
                std::mem::size_of::<retryrs_hooks>(),
                h.struct_size
            )));
        }
        Ok(Some(h))
    }
}

/// A retrier's statistics: what its calls (blocking, and engine calls started from it)
/// did so far. Counters only grow; each is read on its own.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_stats {
    /// sizeof(retryrs_stats) as the program was compiled: set by retryrs_retrier_stats().
    pub struct_size: usize,
    /// Calls that ended (success, rejected, exhausted or cancelled).
    pub calls: u64,
    /// Attempts that ended (failed or succeeded).
    pub attempts: u64,
    /// Waits started (Retrying events).
    pub retries: u64,
    /// Calls that succeeded.
    pub successes: u64,
    /// Calls that ended on a permanent failure.
    pub rejections: u64,
    /// Calls cancelled.
    pub cancellations: u64,
    /// Calls exhausted, indexed by RETRYRS_REASON_* (index RETRYRS_REASON_NONE is 0).
    pub exhausted: [u64; 7],
}

/// Fills `*out` with the retrier's statistics and sets out->struct_size. Call it as
/// retryrs_retrier_stats_get(retrier, &stats), the macro that passes sizeof(stats). A
/// struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing written.
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_stats(
    retrier: *const retryrs_retrier,
    out: *mut retryrs_stats,
    struct_size: usize,
) -> retryrs_status {
    guard_status("retryrs_retrier_stats", || {
        let r = arg(retrier, "retrier")?;
        let out = arg_mut(out, "out")?;
        if struct_size != std::mem::size_of::<retryrs_stats>() {
            return Err(Failure::invalid(format!(
                "retryrs_retrier_stats: struct_size must be sizeof(retryrs_stats) = {}, got {struct_size}",
                std::mem::size_of::<retryrs_stats>()
            )));
        }
        *out = stats(&r.inner.retrier.stats(), struct_size);
        Ok(())
    })
}

fn stats(s: &StatsSnapshot, struct_size: usize) -> retryrs_stats {
    let mut exhausted = [0; 7];
    for r in retryrs::ExhaustReason::ALL {
        exhausted[reason(Some(r)) as usize] = s.exhausted(r);
    }
    retryrs_stats {
        struct_size,
        calls: s.calls,
        attempts: s.attempts,
        retries: s.retries,
        successes: s.successes,
        rejections: s.rejections,
        cancellations: s.cancellations,
        exhausted,
    }
}
