//! The sans-IO engine for event-loop programs: the program runs attempts and timers
//! itself and asks the engine, at each step, what to do next.

use std::cell::{Cell, UnsafeCell};
use std::sync::Arc;
use std::time::Duration;

use retryrs::{
    testing, Call, Clock, Decision, Event, Policy, Proposal, Resume, RetryCause, StateError, SystemClock, Verdict,
};

use crate::event::retryrs_listener;
use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::hooks::{retryrs_plan, RETRYRS_PLAN_ENGINE, RETRYRS_PLAN_EXACT, RETRYRS_PLAN_STOP};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// One call driven by hand (opaque). Not thread-safe: drive it from one thread at a time.
/// Not re-entrant: a function driving it, called from one of its own callbacks, is
/// refused (RETRYRS_INVALID_ARGUMENT); retryrs_call_free() from one of its own callbacks
/// is deferred until the function that ran the callback returns.
pub struct retryrs_call {
    /// Set while report / after_wait / cancel runs, so while the listener runs: a
    /// re-entrant call is refused instead of mutating state that is mid-update.
    busy: Cell<bool>,
    /// retryrs_call_free() came from inside a callback: free when the outer call returns.
    free_pending: Cell<bool>,
    /// Only touched through [`drive`], which hands out one `&mut` at a time.
    state: UnsafeCell<CallState>,
}

pub(crate) struct CallState {
    shared: Arc<Shared>,
    call: Call<Arc<Policy>>,
    listener: Option<retryrs_listener>,
}

/// Clears `busy` when the step ends, by return or by panic.
struct Busy<'a>(&'a Cell<bool>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// A handle driven by hand from C whose steps run callbacks (a call, a hedged call): it
/// refuses a re-entrant step and defers a free asked from inside a callback.
pub(crate) trait Reentrant {
    /// What a step mutates.
    type State;
    /// Set while a step runs.
    fn busy(&self) -> &Cell<bool>;
    /// A free was asked from inside a callback.
    fn free_pending(&self) -> &Cell<bool>;
    /// The state, touched only through [`drive`].
    fn state(&self) -> *mut Self::State;
}

impl Reentrant for retryrs_call {
    type State = CallState;
    fn busy(&self) -> &Cell<bool> {
        &self.busy
    }
    fn free_pending(&self) -> &Cell<bool> {
        &self.free_pending
    }
    fn state(&self) -> *mut CallState {
        self.state.get()
    }
}

/// Frees a [`Reentrant`] handle, or, from inside one of its callbacks, marks it to be
/// freed when the step that ran the callback returns. NULL is a no-op.
///
/// # Safety
/// `h` is NULL or a live handle that was handed out and not freed yet.
pub(crate) unsafe fn free_reentrant<H: Reentrant>(h: *mut H) {
    match h.as_ref() {
        Some(c) if c.busy().get() => c.free_pending().set(true),
        _ => free_handle(h),
    }
}

/// Runs one step of `call` (the export named `function`): refuses a re-entrant step, and
/// performs a free that a callback asked for once the step is over. `call` must not be
/// used by the caller after a step whose callback freed it.
///
/// # Safety
/// `call` is NULL or a live handle from retryrs_call_start() (or retryrs_hedge_start()).
pub(crate) unsafe fn drive<H: Reentrant, R>(
    call: *mut H,
    function: &str,
    f: impl FnOnce(&mut H::State) -> Result<R, Failure>,
) -> Result<R, Failure> {
    let c: &H = arg(call, "call")?;
    if c.busy().get() {
        return Err(Failure::invalid(format!(
            "{function}: called from inside one of this call's own callbacks; a call may not be \
             re-entered: drive it after the callback returns"
        )));
    }
    let result = {
        c.busy().set(true);
        let _busy = Busy(c.busy());
        // SAFETY: `busy` guarantees no other `&mut` to the state is live.
        f(&mut *c.state())
    };
    if c.free_pending().get() {
        drop(Box::from_raw(call));
    }
    result
}

/// The longest wait the engine ever asks for, in ms (9e15, about 285,000 years): the
/// largest delay and deadline a config may hold. A server's hint asking for longer (only
/// possible with both the deadline and max_retry_after off) is clamped to it, in every
/// host alike, so `now + delay_ms` never wraps for any time base below 1.8e19 - 9e15.
pub const RETRYRS_MAX_DELAY_MS: u64 = 9_000_000_000_000_000;

/// What the program does next.
pub type retryrs_action = i32;
/// Run attempt `step.attempt` now, then report it with retryrs_call_report().
pub const RETRYRS_ACTION_ATTEMPT: retryrs_action = 0;
/// Wait `step.delay_ms` (0: do not wait at all; never more than RETRYRS_MAX_DELAY_MS),
/// then call retryrs_call_after_wait().
pub const RETRYRS_ACTION_RETRY: retryrs_action = 1;
/// The call is over: `step.outcome` and `step.reason` say how.
pub const RETRYRS_ACTION_STOP: retryrs_action = 2;
/// retryrs_call_propose(): the engine would wait `proposal.delay_ms`; run the hooks,
/// then answer with retryrs_call_settle().
pub const RETRYRS_ACTION_PROPOSED: retryrs_action = 3;

/// The engine's answer to retryrs_call_propose().
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_proposal {
    /// RETRYRS_ACTION_PROPOSED or RETRYRS_ACTION_STOP.
    pub action: retryrs_action,
    /// PROPOSED: the wait the engine computed, in ms (the backoff, raised to the hint).
    pub delay_ms: u64,
    /// PROPOSED: the attempt that failed; STOP: the attempts made.
    pub attempt: u32,
    /// PROPOSED: the retries the attempt limit still allows (max_attempts - attempt).
    pub retries_left: u32,
    /// PROPOSED: the failure's hint in ms, negative when it had none.
    pub hint_ms: f64,
    /// STOP: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
    pub outcome: retryrs_status,
    /// STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

/// The engine's answer.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_step {
    /// One of RETRYRS_ACTION_*.
    pub action: retryrs_action,
    /// RETRY: the wait in ms, at most RETRYRS_MAX_DELAY_MS.
    pub delay_ms: u64,
    /// ATTEMPT: the attempt to run (1-based); RETRY: the attempt that failed; STOP: the
    /// attempts made.
    pub attempt: u32,
    /// STOP: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
    pub outcome: retryrs_status,
    /// STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

impl CallState {
    /// Runs one engine step with the call's sink (stats, listener): the engine's answer.
    fn step_raw(
        &mut self,
        f: impl FnOnce(&mut Call<Arc<Policy>>, &mut dyn FnMut(&retryrs::Event<'_>)) -> Result<Answer, StateError>,
    ) -> Result<Answer, Failure> {
        let (listener, shared) = (self.listener, &self.shared);
        let mut sink = |e: &retryrs::Event<'_>| shared.report(listener.as_ref(), e);
        f(&mut self.call, &mut sink).map_err(|e| Failure::invalid(e.to_string()))
    }

    fn step(
        &mut self,
        f: impl FnOnce(&mut Call<Arc<Policy>>, &mut dyn FnMut(&retryrs::Event<'_>)) -> Result<Answer, StateError>,
    ) -> Result<retryrs_step, Failure> {
        let answer = self.step_raw(f)?;
        let attempt = self.call.attempt();
        Ok(match answer {
            Answer::Proposed(..) => unreachable!("a proposal is answered by retryrs_call_propose"),
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
    Proposed(Duration, u32, u32, Option<Duration>),
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
/// Free with retryrs_call_free(). RETRYRS_INVALID_ARGUMENT for a retrier whose policy
/// hedges (retryrs_hedge_start() runs those).
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_start(
    retrier: *const retryrs_retrier,
    now_ms: u64,
    listener: *const retryrs_listener,
    out: *mut *mut retryrs_call,
) -> retryrs_status {
    guard_status("retryrs_call_start", || {
        let shared = Arc::clone(&arg(retrier, "retrier")?.inner);
        arg_mut(out, "out")?;
        // Inside a request's context (retryrs_context_enter), its constraint applies.
        let under = if retryrs::propagation::in_use() { shared.under_current() } else { None };
        let shared = under.unwrap_or(shared);
        if let Some(why) = retryrs::hedge::one_at_a_time_refusal(shared.retrier.policy()) {
            return Err(Failure::invalid(format!("retryrs_call_start: {why}; use retryrs_hedge_start()")));
        }
        let listener = listener.as_ref().copied();
        // A policy with a breaker asks it here, on `now_ms`'s time base (use one base for
        // every call that shares the breaker); a refused call has ended already: see
        // retryrs_call_refusal().
        let policy = shared.retrier.policy();
        let call =
            Call::start_with(Arc::clone(policy), now(now_ms), &mut |e: &Event<'_>| shared.report(listener.as_ref(), e));
        let state = CallState { shared, call, listener };
        hand_out(
            out,
            retryrs_call { busy: Cell::new(false), free_pending: Cell::new(false), state: UnsafeCell::new(state) },
        );
        Ok(())
    })
}

/// Whether the policy's circuit breaker refused the call at its start: RETRYRS_EXHAUSTED
/// (make no attempt; free the call) with `*retry_in_ms` the milliseconds before a probe
/// may go, or RETRYRS_OK (run attempt 1). `retry_in_ms` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_refusal(call: *const retryrs_call, retry_in_ms: *mut f64) -> retryrs_status {
    guard_status("retryrs_call_refusal", || {
        let c = arg(call, "call")?;
        // SAFETY: only reads the call's state; a call is driven by one thread at a time.
        let state = &*c.state.get();
        match state.call.refusal() {
            Some((_, left)) => {
                if let Some(r) = retry_in_ms.as_mut() {
                    *r = left.as_secs_f64() * 1000.0;
                }
                let name = state.shared.retrier.policy().name();
                Err(Failure {
                    status: RETRYRS_EXHAUSTED,
                    message: retryrs::GaveUp {
                        name: Some(name),
                        attempts: 0,
                        reason: retryrs::ExhaustReason::CircuitOpen,
                    }
                    .render(retryrs::Spelling::C),
                })
            }
            None => Ok(()),
        }
    })
}

/// Reports how the current attempt ended at `now_ms`: `verdict` is RETRYRS_SUCCESS,
/// RETRYRS_TRANSIENT (with `hint_ms`, a minimum wait; negative or NaN: no hint),
/// RETRYRS_PERMANENT, RETRYRS_TIMED_OUT (the program cut the attempt at its bound, as
/// retryrs_call_record_timeout() reports it; `hint_ms` is ignored) or RETRYRS_DONT_RETRY
/// (the server said not to retry: the call ends exhausted, reason retry_after). `*step` gets RETRY
/// (wait, then retryrs_call_after_wait()) or STOP. RETRYRS_INVALID_ARGUMENT when no
/// attempt is in progress or the verdict is unknown.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_report(
    call: *mut retryrs_call,
    verdict: retryrs_verdict_value,
    hint_ms: f64,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status("retryrs_call_report", || {
        let out = arg_mut(step, "step")?;
        *out = report(call, "retryrs_call_report", reported(verdict, hint_ms)?, now_ms)?;
        Ok(())
    })
}

/// retryrs_call_report() and retryrs_call_record_timeout(): one step of the engine.
unsafe fn report(
    call: *mut retryrs_call,
    function: &str,
    (verdict, cause): (Verdict, RetryCause),
    now_ms: u64,
) -> Result<retryrs_step, Failure> {
    drive(call, function, |c| {
        c.step(|call, sink| {
            let at = now(now_ms);
            call.record_as(verdict, cause, at, &mut &mut *sink).map(|d| match d {
                Decision::Retry(d) => Answer::Retry(d),
                Decision::Stop(s) => Answer::Stop(s),
            })
        })
    })
}

/// The first half of retryrs_call_report(), for a program whose hooks may change the wait
/// or stop the call (contract step 5a): reports the attempt's verdict at `now_ms` as
/// retryrs_call_report() does. `*proposal` gets STOP (the call ended exactly as
/// retryrs_call_report() would have ended it) or PROPOSED: the engine would wait
/// `delay_ms`; run the hooks (they may take time), then call retryrs_call_settle(). Until
/// then the call accepts only retryrs_call_settle() and retryrs_call_cancel().
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_propose(
    call: *mut retryrs_call,
    verdict: retryrs_verdict_value,
    hint_ms: f64,
    now_ms: u64,
    proposal: *mut retryrs_proposal,
) -> retryrs_status {
    guard_status("retryrs_call_propose", || {
        let out = arg_mut(proposal, "proposal")?;
        let (verdict, cause) = reported(verdict, hint_ms)?;
        *out = drive(call, "retryrs_call_propose", |c| {
            let step = c.step_raw(|call, sink| {
                let at = now(now_ms);
                call.propose_as(verdict, cause, at, &mut &mut *sink).map(|p| match p {
                    Proposal::Wait { delay, attempt, retries_left, hint } => {
                        Answer::Proposed(delay, attempt, retries_left, hint)
                    }
                    Proposal::Stop(s) => Answer::Stop(s),
                })
            })?;
            let attempt = c.call.attempt();
            Ok(match step {
                Answer::Proposed(delay, attempt, retries_left, hint) => retryrs_proposal {
                    action: RETRYRS_ACTION_PROPOSED,
                    delay_ms: millis(delay),
                    attempt,
                    retries_left,
                    hint_ms: hint.map_or(-1.0, |h| h.as_secs_f64() * 1000.0),
                    ..Default::default()
                },
                Answer::Stop(s) => {
                    let (outcome, reason) = stop(s);
                    retryrs_proposal { action: RETRYRS_ACTION_STOP, attempt, outcome, reason, ..Default::default() }
                }
                Answer::Attempt(_) | Answer::Retry(_) => unreachable!("propose answers Proposed or Stop"),
            })
        })?;
        Ok(())
    })
}

/// The second half: the program's `plan` for the wait retryrs_call_propose() proposed, at
/// `now_ms`: RETRYRS_PLAN_ENGINE (the computed wait), RETRYRS_PLAN_EXACT (exactly
/// `wait_ms`: not raised to the hint, rounded up to whole ms; over max_retry_after_ms when
/// set -> STOP, reason RETRYRS_REASON_RETRY_AFTER) or RETRYRS_PLAN_STOP (STOP, reason
/// RETRYRS_REASON_STOPPED, no budget token drawn). A wait that cannot end before the
/// deadline (or a deadline that passed while the hooks ran) -> STOP, reason
/// RETRYRS_REASON_DEADLINE. `*step` gets RETRY (wait `delay_ms`, then
/// retryrs_call_after_wait()) or STOP. RETRYRS_INVALID_ARGUMENT when nothing was
/// proposed, for an unknown plan, or a negative, NaN or infinite `wait_ms` (or one past
/// RETRYRS_MAX_DELAY_MS) with RETRYRS_PLAN_EXACT.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_settle(
    call: *mut retryrs_call,
    plan: retryrs_plan,
    wait_ms: f64,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status("retryrs_call_settle", || {
        let out = arg_mut(step, "step")?;
        let plan = match plan {
            RETRYRS_PLAN_ENGINE => retryrs::Plan::Engine,
            RETRYRS_PLAN_EXACT => {
                retryrs::Plan::exact_ms(wait_ms).map_err(|e| Failure::invalid(format!("wait_ms: {e}")))?
            }
            RETRYRS_PLAN_STOP => retryrs::Plan::Stop,
            other => {
                return Err(Failure::invalid(format!(
                    "plan must be RETRYRS_PLAN_ENGINE, RETRYRS_PLAN_EXACT or RETRYRS_PLAN_STOP, got {other}"
                )))
            }
        };
        *out = drive(call, "retryrs_call_settle", |c| {
            c.step(|call, sink| {
                call.settle(plan, now(now_ms), &mut &mut *sink).map(|d| match d {
                    Decision::Retry(d) => Answer::Retry(d),
                    Decision::Stop(s) => Answer::Stop(s),
                })
            })
        })?;
        Ok(())
    })
}

/// A verdict a C program reported (with its hint, negative or NaN for none), or the error
/// naming what it must be.
/// RETRYRS_TIMED_OUT is a transient failure without a hint (the caller prices it).
pub(crate) fn reported(verdict: retryrs_verdict_value, hint_ms: f64) -> Result<(Verdict, RetryCause), Failure> {
    verdict_of(verdict, hint_ms).ok_or_else(|| Failure::invalid(format!("verdict must be {VERDICTS}, got {verdict}")))
}

/// [`reported`] for a hot loop that handles a bad verdict itself: `None` for it, and
/// no `Failure` built (its message, returned through memory, cost a blocking call's
/// attempt a dozen instructions).
#[inline]
pub(crate) fn verdict_of(verdict: retryrs_verdict_value, hint_ms: f64) -> Option<(Verdict, RetryCause)> {
    match verdict {
        RETRYRS_SUCCESS => Some((Verdict::Success, RetryCause::Failure)),
        RETRYRS_TRANSIENT => Some((Verdict::transient_ms(Some(hint_ms)), RetryCause::Failure)),
        RETRYRS_PERMANENT => Some((Verdict::Permanent, RetryCause::Failure)),
        // Transient without a hint, and a quota prices what follows it as a timeout's.
        RETRYRS_TIMED_OUT => Some((Verdict::TRANSIENT, RetryCause::Timeout)),
        RETRYRS_DONT_RETRY => Some((Verdict::DontRetry, RetryCause::Failure)),
        _ => None,
    }
}

/// The verdicts a program may report, for error messages.
pub(crate) const VERDICTS: &str =
    "RETRYRS_SUCCESS, RETRYRS_TRANSIENT, RETRYRS_PERMANENT, RETRYRS_TIMED_OUT or RETRYRS_DONT_RETRY";

/// The wait ended at `now_ms`. `*step` gets ATTEMPT (run it now) or STOP (the deadline
/// passed during the wait). RETRYRS_INVALID_ARGUMENT when the call was not waiting.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_after_wait(
    call: *mut retryrs_call,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status("retryrs_call_after_wait", || {
        let out = arg_mut(step, "step")?;
        *out = drive(call, "retryrs_call_after_wait", |c| {
            c.step(|call, sink| {
                call.after_wait(now(now_ms), &mut &mut *sink).map(|r| match r {
                    Resume::Attempt(n) => Answer::Attempt(n),
                    Resume::Stop(s) => Answer::Stop(s),
                })
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
    guard_status("retryrs_call_cancel", || {
        let out = arg_mut(step, "step")?;
        *out = drive(call, "retryrs_call_cancel", |c| {
            c.step(|call, sink| call.cancel(now(now_ms), &mut &mut *sink).map(Answer::Stop))
        })?;
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
    guard_status("retryrs_call_cancelled_before_start", || {
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

/// The time left at `now_ms` to the attempt in progress (its bound, contract section 3a:
/// the time left before the deadline, or the smaller attempt timeout), in whole ms
/// rounded down: 0 once it has passed, RETRYRS_UNBOUNDED (UINT64_MAX) when the policy has
/// neither a deadline nor an attempt timeout. Ask it when an attempt starts (step.action
/// RETRYRS_ACTION_ATTEMPT) and bound the attempt's I/O with it. RETRYRS_INVALID_ARGUMENT
/// when `call` or `out` is NULL, when no attempt is in progress (waiting, or ended), or
/// from inside one of the call's own callbacks; `*out` is written only on RETRYRS_OK.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_remaining_ms(
    call: *mut retryrs_call,
    now_ms: u64,
    out: *mut u64,
) -> retryrs_status {
    guard_status("retryrs_call_remaining_ms", || {
        let out = arg_mut(out, "out")?;
        *out = drive(call, "retryrs_call_remaining_ms", |c| {
            c.call
                .remaining(now(now_ms))
                .map(remaining_ms)
                .map_err(|e| Failure::invalid(format!("retryrs_call_remaining_ms: {e}")))
        })?;
        Ok(())
    })
}

/// Reports that the current attempt ran out of its bound at `now_ms`: the program cut it
/// there (its own timeout at the time retryrs_call_remaining_ms() gave it). The same as
/// retryrs_call_report() with RETRYRS_TIMED_OUT: a transient failure without a hint, and
/// a quota budget prices the retry after it as a timeout's (`timeout_retry_cost`).
/// `*step` gets RETRY or STOP. RETRYRS_INVALID_ARGUMENT when no attempt is in progress.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_record_timeout(
    call: *mut retryrs_call,
    now_ms: u64,
    step: *mut retryrs_step,
) -> retryrs_status {
    guard_status("retryrs_call_record_timeout", || {
        let out = arg_mut(step, "step")?;
        *out = report(call, "retryrs_call_record_timeout", (Verdict::TRANSIENT, RetryCause::Timeout), now_ms)?;
        Ok(())
    })
}

/// The library's clock: the virtual one while the testing switch is on, else the real
/// monotonic one. What blocking calls run on.
pub(crate) fn library_now() -> Duration {
    testing::clock().map_or_else(|| SystemClock.now(), |v| v.now())
}

/// The library's monotonic clock in ms (the virtual one while the testing switch is on):
/// a time base for retryrs_call_start() and friends.
#[no_mangle]
pub extern "C" fn retryrs_now_ms() -> u64 {
    guard_value("retryrs_now_ms", 0, || millis(library_now()))
}

/// Releases the call (ended or not). NULL is a no-op. Must not be called twice for the
/// same call. Called from inside one of the call's own callbacks (its listener, e.g. on
/// the SUCCESS event), the free is deferred until the retryrs_call_report(),
/// retryrs_call_after_wait() or retryrs_call_cancel() that ran the callback returns; do
/// not use the call after that.
#[no_mangle]
pub unsafe extern "C" fn retryrs_call_free(call: *mut retryrs_call) {
    guard_value("retryrs_call_free", (), || free_reentrant(call))
}
