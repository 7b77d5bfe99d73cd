//! The sans-IO engine for event-loop programs: the program runs attempts and timers
//! itself and asks the engine, at each step, what to do next.

use std::sync::Arc;
use std::time::Duration;

use retryrs::{Call, Decision, Policy, Resume, StateError, Verdict};

use crate::event::retryrs_listener;
use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// One call driven by hand (opaque). Not thread-safe: drive it from one thread at a time.
pub struct retryrs_call {
    shared: Arc<Shared>,
    call: Call<Arc<Policy>>,
    listener: Option<retryrs_listener>,
}

/// What the program does next.
pub type retryrs_action = i32;
/// Run attempt `step.attempt` now, then report it with retryrs_call_report().
pub const RETRYRS_ACTION_ATTEMPT: retryrs_action = 0;
/// Wait `step.delay_ms` (0: do not wait at all), then call retryrs_call_after_wait().
pub const RETRYRS_ACTION_RETRY: retryrs_action = 1;
/// The call is over: `step.outcome` and `step.reason` say how.
pub const RETRYRS_ACTION_STOP: retryrs_action = 2;

/// The engine's answer.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_step {
    /// One of RETRYRS_ACTION_*.
    pub action: retryrs_action,
    /// RETRY: the wait in ms.
    pub delay_ms: u64,
    /// ATTEMPT: the attempt to run (1-based); RETRY: the attempt that failed; STOP: the
    /// attempts made.
    pub attempt: u32,
    /// STOP: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
    pub outcome: retryrs_status,
    /// STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

impl retryrs_call {
    fn step(
        &mut self,
        f: impl FnOnce(&mut Call<Arc<Policy>>, &mut dyn FnMut(&retryrs::Event<'_>)) -> Result<Answer, StateError>,
    ) -> Result<retryrs_step, Failure> {
        let (listener, name) = (self.listener, &self.shared.name);
        let mut sink = |e: &retryrs::Event<'_>| {
            if let Some(l) = &listener {
                l.deliver(e, name);
            }
        };
        let answer = f(&mut self.call, &mut sink).map_err(|e| Failure::invalid(e.to_string()))?;
        let attempt = self.call.attempt();
        Ok(match answer {
            Answer::Attempt(n) => retryrs_step { action: RETRYRS_ACTION_ATTEMPT, attempt: n, ..Default::default() },
            Answer::Retry(d) => {
                retryrs_step { action: RETRYRS_ACTION_RETRY, delay_ms: millis(d), attempt, ..Default::default() }
            }
            Answer::Stop(s) => {
                let (outcome, reason) = stop(s);
                retryrs_step { action: RETRYRS_ACTION_STOP, attempt, outcome, reason, ..Default::default() }
            }
        })
    }
}

enum Answer {
    Attempt(u32),
    Retry(Duration),
    Stop(retryrs::Stop),
}

fn now(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Starts a call whose first attempt begins at `now_ms` (any monotonic millisecond time
/// base, e.g. retryrs_now_ms(); the engine only subtracts). Run attempt 1 next.
/// `listener` may be NULL; it is copied, and its callback gets every event of the call.
/// Free with retryrs_call_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_start(
    retrier: *const retryrs_retrier,
    now_ms: u64,
    listener: *const retryrs_listener,
    out: *mut *mut retryrs_call,
) -> retryrs_status {
    guard_status(|| {
        let shared = Arc::clone(&arg(retrier, "retrier")?.inner);
        arg_mut(out, "out")?;
        let call = Call::start(Arc::clone(shared.retrier.policy()), now(now_ms));
        hand_out(out, retryrs_call { shared, call, listener: listener.as_ref().copied() });
        Ok(())
    })
}

/// Reports how the current attempt ended at `now_ms`: `verdict` is RETRYRS_SUCCESS,
/// RETRYRS_TRANSIENT (with `hint_ms`, a minimum wait; negative or NaN: no hint) or
/// RETRYRS_PERMANENT. `*step` gets RETRY (wait, then retryrs_call_after_wait()) or STOP.
/// RETRYRS_INVALID_ARGUMENT when no attempt is in progress or the verdict is unknown.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_report(
    call: *mut retryrs_call,
    verdict: retryrs_verdict,
    hint_ms: f64,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status(|| {
        let c = arg_mut(call, "call")?;
        let out = arg_mut(step, "step")?;
        let verdict = match verdict {
            RETRYRS_SUCCESS => Verdict::Success,
            RETRYRS_TRANSIENT => Verdict::transient_ms(Some(hint_ms)),
            RETRYRS_PERMANENT => Verdict::Permanent,
            other => {
                return Err(Failure::invalid(format!(
                    "verdict must be RETRYRS_SUCCESS, RETRYRS_TRANSIENT or RETRYRS_PERMANENT, got {other}"
                )))
            }
        };
        *out = c.step(|call, sink| {
            call.record(verdict, now(now_ms), &mut &mut *sink).map(|d| match d {
                Decision::Retry(d) => Answer::Retry(d),
                Decision::Stop(s) => Answer::Stop(s),
            })
        })?;
        Ok(())
    })
}

/// The wait ended at `now_ms`. `*step` gets ATTEMPT (run it now) or STOP (the deadline
/// passed during the wait). RETRYRS_INVALID_ARGUMENT when the call was not waiting.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_after_wait(
    call: *mut retryrs_call,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status(|| {
        let c = arg_mut(call, "call")?;
        let out = arg_mut(step, "step")?;
        *out = c.step(|call, sink| {
            call.after_wait(now(now_ms), &mut &mut *sink).map(|r| match r {
                Resume::Attempt(n) => Answer::Attempt(n),
                Resume::Stop(s) => Answer::Stop(s),
            })
        })?;
        Ok(())
    })
}

/// Cancels the call at `now_ms` (during a wait or an attempt): emits the Cancelled
/// event and sets `*step` to STOP with RETRYRS_CANCELLED. RETRYRS_INVALID_ARGUMENT when
/// the call has already ended.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_cancel(
    call: *mut retryrs_call,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status(|| {
        let c = arg_mut(call, "call")?;
        let out = arg_mut(step, "step")?;
        *out = c.step(|call, sink| call.cancel(now(now_ms), &mut &mut *sink).map(Answer::Stop))?;
        Ok(())
    })
}

/// For a call cancelled before its first attempt (its cancel fired before it could
/// start): emits the one Cancelled event, attempt 0, through `listener` (may be NULL)
/// and returns RETRYRS_CANCELLED, as the blocking call does for an already-fired token.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_cancelled_before_start(
    retrier: *const retryrs_retrier,
    listener: *const retryrs_listener,
) -> retryrs_status {
    guard_status(|| {
        let shared = &arg(retrier, "retrier")?.inner;
        let policy = shared.retrier.policy();
        retryrs::cancelled_before_start(policy, &mut |e| {
            if let Some(l) = listener.as_ref() {
                l.deliver(e, &shared.name);
            }
        });
        Err(Failure {
            status: RETRYRS_CANCELLED,
            message: format!("{}: cancelled before the first attempt", policy.name()),
        })
    })
}

/// Releases the call (ended or not). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_free(call: *mut retryrs_call) {
    guard_value((), || free_handle(call))
}
