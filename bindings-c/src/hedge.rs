//! Hedged calls for event-loop programs (docs/contract.md, section 11): the program runs
//! attempts concurrently and its timers, and the core's `HedgeCall` tells it, at each
//! step, which attempt to launch, until when to wait, which attempt won and which to
//! cancel. Nothing here decides anything.

use std::cell::{Cell, UnsafeCell};
use std::sync::Arc;
use std::time::Duration;

use retryrs::{Event, HedgeCall, Policy, StateError, Step};

use crate::engine::{drive, free_reentrant, reported, Reentrant};
use crate::event::retryrs_listener;
use crate::ffi::{arg, arg_mut, guard_status, guard_value, hand_out, Failure};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// One hedged call driven by hand (opaque). Not thread-safe: drive it from one thread at a
/// time. Not re-entrant: a function driving it, called from its own listener, is refused
/// (RETRYRS_INVALID_ARGUMENT); retryrs_hedge_free() from its listener is deferred until
/// the function that ran the listener returns.
pub struct retryrs_hedge {
    busy: Cell<bool>,
    free_pending: Cell<bool>,
    state: UnsafeCell<HedgeState>,
}

pub(crate) struct HedgeState {
    shared: Arc<Shared>,
    call: HedgeCall<Arc<Policy>>,
    listener: Option<retryrs_listener>,
}

impl Reentrant for retryrs_hedge {
    type State = HedgeState;
    fn busy(&self) -> &Cell<bool> {
        &self.busy
    }
    fn free_pending(&self) -> &Cell<bool> {
        &self.free_pending
    }
    fn state(&self) -> *mut HedgeState {
        self.state.get()
    }
}

/// What the program does next with a hedged call.
pub type retryrs_hedge_action = i32;
/// Launch attempt `step.attempt` now, beside those in flight; then retryrs_hedge_poll().
pub const RETRYRS_HEDGE_LAUNCH: retryrs_hedge_action = 0;
/// Wait until `step.wake_ms` (RETRYRS_UNBOUNDED: no timer) or until an attempt in flight
/// ends, whichever is first; then retryrs_hedge_poll() or retryrs_hedge_report().
pub const RETRYRS_HEDGE_WAIT: retryrs_hedge_action = 1;
/// Attempt `step.attempt` won: use its result, cancel the attempts in `step.cancel`.
pub const RETRYRS_HEDGE_WON: retryrs_hedge_action = 2;
/// The call is over without a winner: cancel the attempts in `step.cancel`;
/// `step.outcome` and `step.reason` say how it ended.
pub const RETRYRS_HEDGE_STOP: retryrs_hedge_action = 3;
/// The result reported came after its attempt was cancelled or the call ended: drop it.
pub const RETRYRS_HEDGE_DROPPED: retryrs_hedge_action = 4;

/// The engine's answer for a hedged call.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_hedge_step {
    /// One of RETRYRS_HEDGE_*.
    pub action: retryrs_hedge_action,
    /// LAUNCH: the attempt to launch (1-based); WON: the winner; STOP: attempts launched.
    pub attempt: u32,
    /// WAIT: when to poll again, on the caller's time base; RETRYRS_UNBOUNDED when only
    /// an attempt's end can move the call on.
    pub wake_ms: u64,
    /// WON and STOP: the attempts to cancel, bit k-1 for attempt k (at most 5 attempts).
    pub cancel: u32,
    /// WON: RETRYRS_OK; STOP: RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
    pub outcome: retryrs_status,
    /// STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

impl HedgeState {
    fn step(
        &mut self,
        f: impl FnOnce(&mut HedgeCall<Arc<Policy>>, &mut dyn FnMut(&retryrs::Event<'_>)) -> Result<Step, StateError>,
    ) -> Result<retryrs_hedge_step, Failure> {
        let (listener, shared) = (self.listener, &self.shared);
        let mut sink = |e: &retryrs::Event<'_>| shared.report(listener.as_ref(), e);
        let step = f(&mut self.call, &mut sink).map_err(|e| Failure::invalid(e.to_string()))?;
        Ok(c_step(step, self.call.launched()))
    }
}

fn c_step(step: Step, launched: u32) -> retryrs_hedge_step {
    let blank = retryrs_hedge_step { wake_ms: RETRYRS_UNBOUNDED, ..Default::default() };
    match step {
        Step::Launch(k) => retryrs_hedge_step { action: RETRYRS_HEDGE_LAUNCH, attempt: k, ..blank },
        Step::Wait(at) => {
            retryrs_hedge_step { action: RETRYRS_HEDGE_WAIT, wake_ms: at.map_or(RETRYRS_UNBOUNDED, millis), ..blank }
        }
        Step::Won { attempt, cancel } => retryrs_hedge_step {
            action: RETRYRS_HEDGE_WON,
            attempt,
            cancel: u32::from(cancel.bits()),
            outcome: RETRYRS_OK,
            ..blank
        },
        Step::Stop { stop: s, cancel } => {
            let (outcome, reason) = stop(s);
            retryrs_hedge_step {
                action: RETRYRS_HEDGE_STOP,
                attempt: launched,
                cancel: u32::from(cancel.bits()),
                outcome,
                reason,
                ..blank
            }
        }
        Step::Dropped => retryrs_hedge_step { action: RETRYRS_HEDGE_DROPPED, ..blank },
    }
}

fn now(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Starts a hedged call at `now_ms` (any monotonic millisecond time base, e.g.
/// retryrs_now_ms()) under the retrier's policy, which should hedge (a policy document's
/// `hedge` or a service config's `hedgingPolicy`, through retryrs_policies_retrier());
/// one without hedging runs as one attempt. `listener` may be NULL; it is copied. Then
/// call retryrs_hedge_poll(), which launches attempt 1 (or, when the policy's circuit
/// breaker refuses the call, STOP with reason circuit_open and nothing launched). Free
/// with retryrs_hedge_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_start(
    retrier: *const retryrs_retrier,
    now_ms: u64,
    listener: *const retryrs_listener,
    out: *mut *mut retryrs_hedge,
) -> retryrs_status {
    guard_status("retryrs_hedge_start", || {
        let shared = Arc::clone(&arg(retrier, "retrier")?.inner);
        arg_mut(out, "out")?;
        let listener = listener.as_ref().copied();
        // A policy with a breaker asks it here, once for the whole call: a refused call's
        // first retryrs_hedge_poll() is STOP, reason circuit_open, with nothing launched.
        // Inside a request's context (retryrs_context_enter), its constraint applies.
        let under = if retryrs::propagation::in_use() { shared.under_current() } else { None };
        let shared = under.unwrap_or(shared);
        let policy = shared.retrier.policy();
        let call = HedgeCall::start_with(Arc::clone(policy), now(now_ms), &mut |e: &Event<'_>| {
            shared.report(listener.as_ref(), e)
        });
        let state = HedgeState { shared, call, listener };
        hand_out(
            out,
            retryrs_hedge { busy: Cell::new(false), free_pending: Cell::new(false), state: UnsafeCell::new(state) },
        );
        Ok(())
    })
}

/// What to do at `now_ms`: `*step` gets LAUNCH, WAIT or STOP (the deadline passed, or
/// nothing is in flight and nothing more may launch). RETRYRS_INVALID_ARGUMENT once the
/// call has ended.
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_poll(
    hedge: *mut retryrs_hedge,
    now_ms: u64,
    step: *mut retryrs_hedge_step,
) -> retryrs_status {
    guard_status("retryrs_hedge_poll", || {
        let out = arg_mut(step, "step")?;
        *out = drive(hedge, "retryrs_hedge_poll", |h| h.step(|c, sink| c.poll(now(now_ms), &mut &mut *sink)))?;
        Ok(())
    })
}

/// Attempt `attempt` ended at `now_ms` with `verdict`: RETRYRS_SUCCESS (it wins),
/// RETRYRS_TRANSIENT (a non-fatal failure; `hint_ms` a server's pushback, negative or
/// NaN for none), RETRYRS_PERMANENT (fatal: the call ends) or RETRYRS_DONT_RETRY (a
/// failure after which no further hedge is sent; those in flight go on); RETRYRS_TIMED_OUT is
/// RETRYRS_TRANSIENT without a hint, and a quota prices the attempt it launches as a
/// retry after a timeout (a hedge launched on its timer is a plain retry). `*step`
/// gets what to do next, or DROPPED for an attempt already cancelled.
/// RETRYRS_INVALID_ARGUMENT for an attempt never launched or an unknown verdict.
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_report(
    hedge: *mut retryrs_hedge,
    attempt: u32,
    verdict: retryrs_verdict_value,
    hint_ms: f64,
    now_ms: u64,
    step: *mut retryrs_hedge_step,
) -> retryrs_status {
    guard_status("retryrs_hedge_report", || {
        let out = arg_mut(step, "step")?;
        let (verdict, cause) = reported(verdict, hint_ms)?;
        *out = drive(hedge, "retryrs_hedge_report", |h| {
            h.step(|c, sink| c.record_as(attempt, verdict, cause, now(now_ms), &mut &mut *sink))
        })?;
        Ok(())
    })
}

/// Cancels the hedged call at `now_ms`: emits Cancelled; `*step` gets STOP with
/// RETRYRS_CANCELLED and the attempts to cancel. RETRYRS_INVALID_ARGUMENT once ended.
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_cancel(
    hedge: *mut retryrs_hedge,
    now_ms: u64,
    step: *mut retryrs_hedge_step,
) -> retryrs_status {
    guard_status("retryrs_hedge_cancel", || {
        let out = arg_mut(step, "step")?;
        *out = drive(hedge, "retryrs_hedge_cancel", |h| {
            h.step(|c, sink| {
                c.cancel(now(now_ms), &mut &mut *sink)
                    .map(|cancel| Step::Stop { stop: retryrs::Stop::Cancelled, cancel })
            })
        })?;
        Ok(())
    })
}

/// Attempt `attempt`'s time left at `now_ms` (its bound: the deadline, or its own attempt
/// timeout if sooner), in whole ms rounded down; RETRYRS_UNBOUNDED when the policy has
/// neither. RETRYRS_INVALID_ARGUMENT unless that attempt is in flight; `*out` is written
/// only on RETRYRS_OK.
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_remaining_ms(
    hedge: *mut retryrs_hedge,
    attempt: u32,
    now_ms: u64,
    out: *mut u64,
) -> retryrs_status {
    guard_status("retryrs_hedge_remaining_ms", || {
        let out = arg_mut(out, "out")?;
        *out = drive(hedge, "retryrs_hedge_remaining_ms", |h| {
            h.call
                .remaining(attempt, now(now_ms))
                .map(remaining_ms)
                .map_err(|e| Failure::invalid(format!("retryrs_hedge_remaining_ms: attempt {attempt}: {e}")))
        })?;
        Ok(())
    })
}

/// Releases the hedged call (ended or not). NULL is a no-op; not twice. From inside its
/// own listener the free is deferred until the function that ran the listener returns.
#[no_mangle]
pub unsafe extern "C" fn retryrs_hedge_free(hedge: *mut retryrs_hedge) {
    guard_value("retryrs_hedge_free", (), || free_reentrant(hedge))
}
