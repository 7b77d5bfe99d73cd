//! One call's engine state (`engine::Call`), driven by the JS layer after a first failure.
//!
//! The JS layer passes the time in (float milliseconds, from `performance.now()` or the
//! virtual clock) and gets back compact numeric decisions, so the hot retry path costs one
//! native crossing per step. Events are buffered here only when the retrier has a
//! listener, and handed over in one batch per step.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use retryrs::{cancelled_before_start, Call, Decision, Event, Policy, Resume, Stop, Verdict};

use crate::guard::guarded;
use crate::policy::NativePolicy;

/// Decision codes shared with `lib/codes.js`: a value >= 0 is a wait in milliseconds
/// (record) or the next attempt's number (afterWait).
const SUCCESS: f64 = -1.0;
const REJECTED: f64 = -2.0;
const EXHAUSTED: f64 = -3.0;
const CANCELLED: f64 = -4.0;

/// Verdict codes, in the order of `lib/codes.js`.
const V_SUCCESS: u32 = 0;
const V_TRANSIENT: u32 = 1;

/// One event as the JS listener receives it (the JS layer adds the name and the error).
#[napi(object)]
pub struct EventRecord {
    pub kind: String,
    pub attempt: u32,
    pub elapsed_ms: f64,
    pub delay_ms: Option<f64>,
    pub reason: Option<String>,
}

impl From<&Event<'_>> for EventRecord {
    fn from(e: &Event<'_>) -> Self {
        EventRecord {
            kind: e.kind.as_str().to_string(),
            attempt: e.attempt,
            elapsed_ms: e.elapsed.as_millis() as f64,
            delay_ms: e.delay.map(ms),
            reason: e.reason.map(|r| r.as_str().to_string()),
        }
    }
}

#[napi]
pub struct NativeCall {
    call: Call<Arc<Policy>>,
    events: Option<Vec<EventRecord>>,
}

#[napi]
impl NativeCall {
    /// A call whose first attempt began at `start_ms`. `want_events` buffers the events
    /// for `takeEvents` (only worth it when someone listens).
    #[napi(constructor)]
    pub fn new(policy: &NativePolicy, start_ms: f64, want_events: bool) -> napi::Result<Self> {
        guarded(|| {
            Ok(NativeCall {
                call: Call::start(policy.inner.clone(), duration(start_ms)),
                events: want_events.then(Vec::new),
            })
        })
    }

    /// The verdict on the current attempt (0 success, 1 transient, 2 permanent) with an
    /// optional hint in milliseconds, at `now_ms`. Returns the wait (>= 0) or a stop code.
    #[napi]
    pub fn record(&mut self, verdict: u32, hint_ms: Option<f64>, now_ms: f64) -> napi::Result<f64> {
        guarded(|| {
            let verdict = match verdict {
                V_SUCCESS => Verdict::Success,
                V_TRANSIENT => Verdict::transient_ms(hint_ms),
                _ => Verdict::Permanent,
            };
            let events = &mut self.events;
            let decision = self
                .call
                .record(verdict, duration(now_ms), &mut |e: &Event<'_>| push(events, e))
                .map_err(|e| napi::Error::from_reason(e.to_string()))?;
            Ok(match decision {
                Decision::Retry(d) => ms(d),
                Decision::Stop(stop) => stop_code(stop),
            })
        })
    }

    /// The wait ended at `now_ms`: the next attempt's number, or a stop code (the
    /// deadline passed during the wait).
    #[napi]
    pub fn after_wait(&mut self, now_ms: f64) -> napi::Result<f64> {
        guarded(|| {
            let events = &mut self.events;
            let resume = self
                .call
                .after_wait(duration(now_ms), &mut |e: &Event<'_>| push(events, e))
                .map_err(|e| napi::Error::from_reason(e.to_string()))?;
            Ok(match resume {
                Resume::Attempt(n) => f64::from(n),
                Resume::Stop(stop) => stop_code(stop),
            })
        })
    }

    /// The call was aborted at `now_ms`. Returns false if it had already ended.
    #[napi]
    pub fn cancel(&mut self, now_ms: f64) -> napi::Result<bool> {
        guarded(|| {
            let events = &mut self.events;
            Ok(self.call.cancel(duration(now_ms), &mut |e: &Event<'_>| push(events, e)).is_ok())
        })
    }

    /// Why the call was exhausted (`attempts`, `deadline`, `budget`), once it was.
    #[napi(getter)]
    pub fn reason(&self) -> Option<String> {
        match self.call.outcome() {
            Some(Stop::Exhausted(r)) => Some(r.as_str().to_string()),
            _ => None,
        }
    }

    /// The current attempt; once ended, the number of attempts made.
    #[napi(getter)]
    pub fn attempt(&self) -> u32 {
        self.call.attempt()
    }

    /// The events buffered since the last take, oldest first.
    #[napi]
    pub fn take_events(&mut self) -> Vec<EventRecord> {
        self.events.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// The events of a call aborted before its first attempt (one Cancelled, attempt 0).
#[napi]
pub fn cancelled_before_start_events(policy: &NativePolicy) -> napi::Result<Vec<EventRecord>> {
    guarded(|| {
        let mut events = Some(Vec::new());
        cancelled_before_start(&policy.inner, &mut |e: &Event<'_>| push(&mut events, e));
        Ok(events.unwrap_or_default())
    })
}

fn push(events: &mut Option<Vec<EventRecord>>, e: &Event<'_>) {
    if let Some(list) = events {
        list.push(EventRecord::from(e));
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

/// Float milliseconds (JS time) to a Duration, exact for whole milliseconds: going
/// through nanoseconds avoids `from_secs_f64` turning 105 ms into 104.999999 ms.
fn duration(ms: f64) -> Duration {
    if ms.is_nan() || ms <= 0.0 {
        return Duration::ZERO;
    }
    let nanos = (ms * 1e6).round();
    if nanos >= u64::MAX as f64 {
        Duration::from_nanos(u64::MAX)
    } else {
        Duration::from_nanos(nanos as u64)
    }
}

/// A Duration as float milliseconds (whole, since the engine decides in milliseconds;
/// saturated hints come out as huge finite numbers).
fn ms(d: Duration) -> f64 {
    d.as_millis() as f64
}
