//! Hedged calls (docs/contract.md, hedging; issue 26): the core's sans-IO `HedgeCall`
//! behind a small JS object the driver in `lib/hedge.js` asks "what now". JS runs the
//! attempts, their signals and the timers; every decision (when to launch, until when to
//! wait, who won, whom to cancel, the delay, the budget, the breaker) is the engine's.

use std::sync::Arc;

use napi_derive::napi;
use retryrs::{Event, HedgeCall, Policy, StateError, Stats, Step, Stop, Verdict};

use crate::call::{duration, EventRecord};
use crate::guard::guarded;
use crate::policy::policy_by_id;

/// lib/codes.js's V_TIMED_OUT: a non-fatal failure of an attempt that ran out of its bound.
const V_TIMED_OUT: u32 = 3;

/// What the driver does next (`action`): the codes of `lib/hedge.js`.
const LAUNCH: u32 = 0;
const WAIT: u32 = 1;
const WON: u32 = 2;
const STOP: u32 = 3;
const DROPPED: u32 = 4;

/// The engine's answer. `attempt`: LAUNCH the attempt to launch, WON the winner;
/// `wake_ms`: WAIT until when (null: until an attempt ends); `cancel`: WON and STOP, the
/// attempts to cancel (bit k-1 for attempt k); `outcome`: STOP `rejected`, `exhausted` or
/// `cancelled`; `reason`: an exhausted call's reason.
#[napi(object)]
pub struct HedgeStep {
    pub action: u32,
    pub attempt: u32,
    pub wake_ms: Option<f64>,
    pub cancel: u32,
    pub outcome: Option<String>,
    pub reason: Option<String>,
}

fn js_step(step: Step) -> HedgeStep {
    let blank = HedgeStep { action: DROPPED, attempt: 0, wake_ms: None, cancel: 0, outcome: None, reason: None };
    match step {
        Step::Launch(k) => HedgeStep { action: LAUNCH, attempt: k, ..blank },
        Step::Wait(at) => HedgeStep { action: WAIT, wake_ms: at.map(retryrs::units::ms_from_duration), ..blank },
        Step::Won { attempt, cancel } => HedgeStep { action: WON, attempt, cancel: u32::from(cancel.bits()), ..blank },
        Step::Stop { stop, cancel } => {
            let (outcome, reason) = match stop {
                Stop::Success => ("success", None),
                Stop::Rejected => ("rejected", None),
                Stop::Exhausted(r) => ("exhausted", Some(r.as_str().to_string())),
                Stop::Cancelled => ("cancelled", None),
            };
            HedgeStep { action: STOP, cancel: u32::from(cancel.bits()), outcome: Some(outcome.into()), reason, ..blank }
        }
        Step::Dropped => blank,
    }
}

fn state_error(e: StateError) -> napi::Error {
    napi::Error::from_reason(format!("retryrs: hedged call: {e} (a bug)"))
}

/// One hedged call in progress (made by `NativeHedge.start`; one per `r.call` of a
/// hedging retrier). Times are float milliseconds on the driver's clock.
#[napi]
pub struct NativeHedge {
    call: HedgeCall<Arc<Policy>>,
    events: Option<Vec<EventRecord>>,
    // The retrier's counters (r.stats()): a hedged call counts there as any call does.
    stats: Arc<Stats>,
}

#[napi]
impl NativeHedge {
    /// Starts a hedged call under the policy `policy_id` at `start_ms`, asking its circuit
    /// breaker (once for the call). `want_events` buffers events for `takeEvents`.
    #[napi(factory)]
    pub fn start(policy_id: u32, start_ms: f64, want_events: bool) -> napi::Result<Self> {
        guarded(|| {
            let (policy, stats) = policy_by_id(policy_id)?;
            let mut events = want_events.then(Vec::new);
            let call =
                HedgeCall::start_with(policy, duration(start_ms), &mut |e: &Event<'_>| push(&mut events, &stats, e));
            Ok(NativeHedge { call, events, stats })
        })
    }

    /// What to do at `now_ms`: LAUNCH, WAIT or STOP.
    #[napi]
    pub fn poll(&mut self, now_ms: f64) -> napi::Result<HedgeStep> {
        guarded(|| {
            let (events, stats) = (&mut self.events, &self.stats);
            let step =
                self.call.poll(duration(now_ms), &mut |e: &Event<'_>| push(events, stats, e)).map_err(state_error)?;
            Ok(js_step(step))
        })
    }

    /// Attempt `attempt` ended at `now_ms`: `verdict` 0 success, 1 non-fatal (with an
    /// optional hint in ms), 3 non-fatal after a timeout (the attempt ran out of its
    /// bound: a quota prices the launch it asks for as a timeout's), 2 fatal. Returns what
    /// to do next (DROPPED for an attempt already cancelled or a call already over).
    #[napi]
    pub fn record(&mut self, attempt: u32, verdict: u32, hint_ms: Option<f64>, now_ms: f64) -> napi::Result<HedgeStep> {
        guarded(|| {
            let timed_out = verdict == V_TIMED_OUT;
            let verdict = match verdict {
                0 => Verdict::Success,
                1 | V_TIMED_OUT => Verdict::transient_ms(hint_ms),
                _ => Verdict::Permanent,
            };
            let (events, stats) = (&mut self.events, &self.stats);
            let sink = &mut |e: &Event<'_>| push(events, stats, e);
            let step = match timed_out {
                true => self.call.record_timeout(attempt, verdict, duration(now_ms), sink),
                false => self.call.record(attempt, verdict, duration(now_ms), sink),
            }
            .map_err(state_error)?;
            Ok(js_step(step))
        })
    }

    /// The call was aborted at `now_ms`: emits Cancelled; returns the attempts to cancel
    /// (bits), or null when it had already ended.
    #[napi]
    pub fn cancel(&mut self, now_ms: f64) -> napi::Result<Option<u32>> {
        guarded(|| {
            let (events, stats) = (&mut self.events, &self.stats);
            Ok(self
                .call
                .cancel(duration(now_ms), &mut |e: &Event<'_>| push(events, stats, e))
                .ok()
                .map(|s| u32::from(s.bits())))
        })
    }

    /// Attempt `attempt`'s bound at `now_ms` (ms left before the deadline or its attempt
    /// timeout, whichever is sooner; 0 once past), or null when unbounded.
    #[napi]
    pub fn remaining_ms(&self, attempt: u32, now_ms: f64) -> napi::Result<Option<f64>> {
        guarded(|| {
            let left = self.call.remaining(attempt, duration(now_ms)).map_err(state_error)?;
            Ok(left.map(retryrs::units::ms_from_duration))
        })
    }

    /// Attempts launched so far.
    #[napi(getter)]
    pub fn launched(&self) -> napi::Result<u32> {
        guarded(|| Ok(self.call.launched()))
    }

    /// For a call the circuit breaker refused: `[state, ms left before a probe may go]`.
    #[napi]
    pub fn refusal(&self) -> napi::Result<Option<(String, f64)>> {
        guarded(|| {
            Ok(self.call.refusal().map(|(state, left)| (state.as_str().to_string(), left.as_secs_f64() * 1000.0)))
        })
    }

    /// The events buffered since the last take, oldest first.
    #[napi]
    pub fn take_events(&mut self) -> napi::Result<Vec<EventRecord>> {
        guarded(|| Ok(self.events.as_mut().map(std::mem::take).unwrap_or_default()))
    }
}

fn push(events: &mut Option<Vec<EventRecord>>, stats: &Stats, e: &Event<'_>) {
    stats.observe(e);
    if let Some(list) = events {
        list.push(EventRecord::from(e));
    }
}
