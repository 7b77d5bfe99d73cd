//! One call's engine state (`engine::Call`), driven by the JS layer after a first failure.
//!
//! The JS layer passes the time in (float milliseconds, from `performance.now()` or the
//! virtual clock) and gets back compact numeric decisions, so the hot retry path costs one
//! native crossing per step. A call is an integer handle into a slab (see [`Slab`]). Events are buffered here only when the retrier has a
//! listener, and handed over in one batch per step.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use retryrs::{
    cancelled_before_start, Call, Decision, Event, Plan, Policy, Proposal, Resume, RetryCause, Stats, Stop, Verdict,
};

use crate::guard::guarded;
use crate::policy::{policy_by_id, NativePolicy};

/// Decision codes shared with `lib/codes.js`: a value >= 0 is a wait in milliseconds
/// (record) or the next attempt's number (afterWait).
const SUCCESS: f64 = -1.0;
const REJECTED: f64 = -2.0;
const EXHAUSTED: f64 = -3.0;
const CANCELLED: f64 = -4.0;

/// Verdict codes, in the order of `lib/codes.js`.
const V_SUCCESS: u32 = 0;
const V_TRANSIENT: u32 = 1;
/// A transient failure: the attempt the JS layer cut at its bound (priced as a timeout).
const V_TIMED_OUT: u32 = 3;
const V_DONT_RETRY: u32 = 4;

/// One event as the JS listener receives it (the JS layer adds the name and the error).
#[napi(object)]
pub struct EventRecord {
    pub kind: String,
    pub attempt: u32,
    pub elapsed_ms: f64,
    pub delay_ms: Option<f64>,
    pub reason: Option<String>,
    /// The retries the attempt limit still allows (a bound, not a promise).
    pub retries_left: u32,
}

impl From<&Event<'_>> for EventRecord {
    fn from(e: &Event<'_>) -> Self {
        EventRecord {
            kind: e.kind.as_str().to_string(),
            attempt: e.attempt,
            elapsed_ms: e.elapsed.as_millis() as f64,
            delay_ms: e.delay.map(ms),
            reason: e.reason.map(|r| r.as_str().to_string()),
            retries_left: e.retries_left,
        }
    }
}

/// One call in progress: the engine's state and, when someone listens, its events.
struct Slot {
    call: Call<Arc<Policy>>,
    events: Option<Vec<EventRecord>>,
    /// The retrier's statistics: every event of the call is counted.
    stats: Arc<Stats>,
    /// The retries left of the last proposal (callPropose), for the hooks.
    retries_left: u32,
    generation: u32,
}

/// The calls in progress on this JS thread, addressed by integer handles that the JS
/// layer frees explicitly when the call settles (in a `finally`). A slab instead of one
/// wrapped object per call: no GC finalizer per call (Node defers those to a later
/// macrotask, so a tight loop of zero-delay retries piled them up), no allocation once
/// warm, and a stale handle is detected by its generation instead of touching another
/// call. Thread-local because each worker thread is its own JS thread.
#[derive(Default)]
struct Slab {
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    generations: Vec<u32>,
}

thread_local! {
    static CALLS: RefCell<Slab> = RefCell::new(Slab::default());
}

/// A handle: the generation in the high 21 bits, the slot index in the low 32 (so it
/// stays an exact JS number below 2^53).
fn handle(index: u32, generation: u32) -> f64 {
    ((u64::from(generation & 0x1F_FFFF) << 32) | u64::from(index)) as f64
}

fn with_slot<T>(id: f64, f: impl FnOnce(&mut Slot) -> napi::Result<T>) -> napi::Result<T> {
    guarded(|| {
        CALLS.with(|calls| {
            let mut calls = calls.borrow_mut();
            let raw = id as u64;
            let (index, generation) = ((raw & 0xFFFF_FFFF) as usize, (raw >> 32) as u32);
            match calls.slots.get_mut(index) {
                Some(Some(slot)) if slot.generation & 0x1F_FFFF == generation && id >= 0.0 => f(slot),
                _ => Err(napi::Error::from_reason(format!("retryrs: no call in progress with handle {id} (a bug)"))),
            }
        })
    })
}

/// Starts a call under the policy `policy_id` (`NativePolicy.id`) whose first attempt
/// began at `start_ms`, and returns its handle.
/// `want_events` buffers events for `callTakeEvents` (only worth it when someone listens).
#[napi]
pub fn call_start(policy_id: u32, start_ms: f64, want_events: bool) -> napi::Result<f64> {
    guarded(|| {
        let (policy, stats) = policy_by_id(policy_id)?;
        CALLS.with(|calls| {
            let mut calls = calls.borrow_mut();
            let mut events = want_events.then(Vec::new);
            // A policy with a breaker asks it here: a refused call has ended already
            // (callReason says `circuit_open`, callRefusal how long it stays open).
            let call = Call::start_with(policy, duration(start_ms), &mut |e: &Event<'_>| push(&mut events, &stats, e));
            let index = match calls.free.pop() {
                Some(i) => i,
                None => {
                    let i = u32::try_from(calls.slots.len())
                        .map_err(|_| napi::Error::from_reason("retryrs: too many calls in progress"))?;
                    calls.slots.push(None);
                    calls.generations.push(0);
                    i
                }
            };
            let i = index as usize;
            let generation = calls.generations[i].wrapping_add(1);
            calls.generations[i] = generation;
            calls.slots[i] = Some(Slot { call, events, stats, retries_left: 0, generation });
            Ok(handle(index, generation))
        })
    })
}

/// Frees a call's state (the JS layer does so when the call settles, whatever the
/// outcome). Returns false for a handle that is not in progress.
#[napi]
pub fn call_free(id: f64) -> napi::Result<bool> {
    guarded(|| {
        CALLS.with(|calls| {
            let mut calls = calls.borrow_mut();
            let raw = id as u64;
            let (index, generation) = ((raw & 0xFFFF_FFFF) as usize, (raw >> 32) as u32);
            let live = matches!(calls.slots.get(index), Some(Some(s)) if s.generation & 0x1F_FFFF == generation);
            if live && id >= 0.0 {
                calls.slots[index] = None;
                calls.free.push(index as u32);
            }
            Ok(live)
        })
    })
}

/// How many calls are in progress on this thread (for leak tests).
#[napi]
pub fn calls_in_progress() -> napi::Result<u32> {
    guarded(|| {
        CALLS.with(|calls| {
            let calls = calls.borrow();
            Ok((calls.slots.len() - calls.free.len()) as u32)
        })
    })
}

/// The verdict on the current attempt (0 success, 1 transient, 2 permanent) with an
/// optional hint in milliseconds, at `now_ms`. Returns the wait (>= 0) or a stop code.
#[napi]
pub fn call_record(id: f64, verdict: u32, hint_ms: Option<f64>, now_ms: f64) -> napi::Result<f64> {
    with_slot(id, |slot| {
        let (verdict, cause) = verdict_of(verdict, hint_ms);
        let (events, stats) = (&mut slot.events, &slot.stats);
        let sink = &mut |e: &Event<'_>| push(events, stats, e);
        let decision = slot
            .call
            .record_as(verdict, cause, duration(now_ms), sink)
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(decision_code(decision))
    })
}

/// The first phase of `callRecord`, for a call with hooks that may change the wait or
/// stop the call: the verdict on the current attempt at `now_ms`. Returns the wait the
/// engine proposes (>= 0; the hooks then answer and `callSettle` decides) or a stop code
/// (the call ended as `callRecord` would have ended it).
#[napi]
pub fn call_propose(id: f64, verdict: u32, hint_ms: Option<f64>, now_ms: f64) -> napi::Result<f64> {
    with_slot(id, |slot| {
        let (verdict, cause) = verdict_of(verdict, hint_ms);
        let (events, stats) = (&mut slot.events, &slot.stats);
        let sink = &mut |e: &Event<'_>| push(events, stats, e);
        let proposal = slot
            .call
            .propose_as(verdict, cause, duration(now_ms), sink)
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(match proposal {
            Proposal::Wait { delay, retries_left, .. } => {
                slot.retries_left = retries_left;
                ms(delay)
            }
            Proposal::Stop(stop) => stop_code(stop),
        })
    })
}

/// The retries the attempt limit still allows after the proposed wait's attempt.
#[napi]
pub fn call_retries_left(id: f64) -> napi::Result<u32> {
    with_slot(id, |slot| Ok(slot.retries_left))
}

/// Plans for `callSettle`, in the order of `lib/codes.js`.
const PLAN_ENGINE: u32 = 0;
const PLAN_EXACT: u32 = 1;

/// A `retryAfterMs` hook's answer by the engine's rule for a hook's hint: the same number
/// back, or an error naming it (NaN, negative).
#[napi]
pub fn hint_from_hook_ms(ms: f64) -> napi::Result<f64> {
    guarded(|| retryrs::engine::hint_from_hook_ms(ms).map(|_| ms).map_err(napi::Error::from_reason))
}

/// The second phase: what the hooks answered (0 the engine's wait, 1 exactly `exact_ms`,
/// 2 stop) at `now_ms`. Returns the wait (>= 0) or a stop code, as `callRecord` does. An
/// exact wait that is not a wait (NaN, negative) throws, naming the value.
#[napi]
pub fn call_settle(id: f64, plan: u32, exact_ms: Option<f64>, now_ms: f64) -> napi::Result<f64> {
    with_slot(id, |slot| {
        let plan = match plan {
            PLAN_ENGINE => Plan::Engine,
            PLAN_EXACT => Plan::exact_ms(exact_ms.unwrap_or(f64::NAN)).map_err(napi::Error::from_reason)?,
            _ => Plan::Stop,
        };
        let (events, stats) = (&mut slot.events, &slot.stats);
        let decision = slot
            .call
            .settle(plan, duration(now_ms), &mut |e: &Event<'_>| push(events, stats, e))
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(decision_code(decision))
    })
}

/// The wait ended at `now_ms`: the next attempt's number, or a stop code (the deadline
/// passed during the wait).
#[napi]
pub fn call_after_wait(id: f64, now_ms: f64) -> napi::Result<f64> {
    with_slot(id, |slot| {
        let (events, stats) = (&mut slot.events, &slot.stats);
        let resume = slot
            .call
            .after_wait(duration(now_ms), &mut |e: &Event<'_>| push(events, stats, e))
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(match resume {
            Resume::Attempt(n) => f64::from(n),
            Resume::Stop(stop) => stop_code(stop),
        })
    })
}

/// `callAfterWait` and then `callRemainingMs` at the same `now_ms`, in one crossing: the
/// bound of the attempt that starts (ms, NaN when unbounded), or a stop code (< 0) when
/// the call ended instead. The attempt is the one after the last (`Call::after_wait`
/// counts them one by one). The call loop's retries of a bounded call: each crossing
/// costs about as much as the engine's work in it.
#[napi]
pub fn call_after_wait_bound(id: f64, now_ms: f64) -> napi::Result<f64> {
    with_slot(id, |slot| {
        let (events, stats) = (&mut slot.events, &slot.stats);
        let now = duration(now_ms);
        let resume = slot
            .call
            .after_wait(now, &mut |e: &Event<'_>| push(events, stats, e))
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(match resume {
            Resume::Attempt(_) => {
                let left = slot.call.remaining(now).map_err(|e| napi::Error::from_reason(e.to_string()))?;
                left.map_or(f64::NAN, retryrs::units::ms_from_duration)
            }
            Resume::Stop(stop) => stop_code(stop),
        })
    })
}

/// The call was aborted at `now_ms`. Returns false if it had already ended.
#[napi]
pub fn call_cancel(id: f64, now_ms: f64) -> napi::Result<bool> {
    with_slot(id, |slot| {
        let (events, stats) = (&mut slot.events, &slot.stats);
        Ok(slot.call.cancel(duration(now_ms), &mut |e: &Event<'_>| push(events, stats, e)).is_ok())
    })
}

/// Why the call was exhausted (`attempts`, `deadline`, `budget`), once it was.
#[napi]
pub fn call_reason(id: f64) -> napi::Result<Option<String>> {
    with_slot(id, |slot| {
        Ok(match slot.call.outcome() {
            Some(Stop::Exhausted(r)) => Some(r.as_str().to_string()),
            _ => None,
        })
    })
}

/// For a call the breaker refused: `[state, ms left before a probe may go]`.
#[napi]
pub fn call_refusal(id: f64) -> napi::Result<Option<(String, f64)>> {
    with_slot(id, |slot| {
        Ok(slot.call.refusal().map(|(state, left)| (state.as_str().to_string(), left.as_secs_f64() * 1000.0)))
    })
}

/// The bound of the attempt in progress at `now_ms`: the time it has left before the
/// deadline or its attempt timeout, whichever is sooner (0 once past it), in ms; null when
/// it is unbounded. The engine's answer (`Call::remaining`): the JS layer arms its timer
/// and `ctx.remainingMs` from it and never computes a bound itself.
#[napi]
pub fn call_remaining_ms(id: f64, now_ms: f64) -> napi::Result<Option<f64>> {
    with_slot(id, |slot| {
        let left = slot.call.remaining(duration(now_ms)).map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(left.map(retryrs::units::ms_from_duration))
    })
}

/// The current attempt; once ended, the number of attempts made.
#[napi]
pub fn call_attempt(id: f64) -> napi::Result<u32> {
    with_slot(id, |slot| Ok(slot.call.attempt()))
}

/// The events buffered since the last take, oldest first.
#[napi]
pub fn call_take_events(id: f64) -> napi::Result<Vec<EventRecord>> {
    with_slot(id, |slot| Ok(slot.events.as_mut().map(std::mem::take).unwrap_or_default()))
}

/// The events of a call aborted before its first attempt (one Cancelled, attempt 0).
#[napi]
pub fn cancelled_before_start_events(policy: &NativePolicy) -> napi::Result<Vec<EventRecord>> {
    guarded(|| {
        let mut events = Some(Vec::new());
        cancelled_before_start(&policy.inner, &mut |e: &Event<'_>| push(&mut events, &policy.stats, e));
        Ok(events.unwrap_or_default())
    })
}

fn push(events: &mut Option<Vec<EventRecord>>, stats: &Stats, e: &Event<'_>) {
    stats.observe(e);
    if let Some(list) = events {
        list.push(EventRecord::from(e));
    }
}

/// A verdict code (`lib/codes.js`) with its hint in ms.
pub(crate) fn verdict_of(code: u32, hint_ms: Option<f64>) -> (Verdict, RetryCause) {
    match code {
        V_SUCCESS => (Verdict::Success, RetryCause::Failure),
        V_TRANSIENT => (Verdict::transient_ms(hint_ms), RetryCause::Failure),
        V_TIMED_OUT => (Verdict::TRANSIENT, RetryCause::Timeout),
        V_DONT_RETRY => (Verdict::DontRetry, RetryCause::Failure),
        _ => (Verdict::Permanent, RetryCause::Failure),
    }
}

/// A decision as the JS layer reads it: the wait in ms, or a stop code.
fn decision_code(decision: Decision) -> f64 {
    match decision {
        Decision::Retry(d) => ms(d),
        Decision::Stop(stop) => stop_code(stop),
    }
}

fn stop_code(stop: Stop) -> f64 {
    match stop {
        Stop::Success => SUCCESS,
        Stop::Rejected => REJECTED,
        Stop::Exhausted(_) => EXHAUSTED,
        Stop::Cancelled => CANCELLED,
    }
}

/// Float milliseconds (JS time) to a Duration: the core's conversion, zero for NaN or
/// negative values.
pub(crate) fn duration(ms: f64) -> Duration {
    retryrs::units::duration_from_ms_or_zero(ms)
}

/// A Duration as float milliseconds (whole, since the engine decides in milliseconds;
/// saturated hints come out as huge finite numbers).
fn ms(d: Duration) -> f64 {
    d.as_millis() as f64
}
