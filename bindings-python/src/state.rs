//! The state of one call past its first failure, shared by the sync executor and the
//! asyncio driver: the engine's [`Call`], every failure so far, the clock and the token.
//! Every decision is the engine's; this only turns Python outcomes into verdicts and the
//! engine's stops into Python exceptions.
//!
//! This file holds the state and what every part reads (the clock, the failures kept,
//! the attempt's place, the exhaustion they come to) and the call's success; its parts
//! live in `state/`: a failure judged (`judge.rs`), the hooks asked about a proposed wait
//! (`hooks.rs`), and the wait itself and what ends it (`waiting.rs`).

mod hooks;
mod judge;
mod waiting;

pub use hooks::preload;

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use retryrs::{Call, CancelToken, Clock, Decision, Policy, SystemClock, Verdict, VirtualClock};

use crate::errors;
use crate::host_policy::HostPolicy;

/// Now, on the virtual clock under `retryrs.testing`, else on the monotonic one.
pub fn now(clock: &Option<VirtualClock>) -> Duration {
    match clock {
        Some(v) => v.now(),
        None => SystemClock.now(),
    }
}

/// What a failure leads to: a wait, or (async calls only) a hook's awaitable to await
/// before the failure can be classified.
pub enum Failed {
    Wait(Duration),
    Await(Py<PyAny>),
}

/// One failure kept for the error that may end the call: an exception an attempt raised,
/// or a value the result predicate rejected.
pub struct Kept {
    pub obj: Py<PyAny>,
    pub is_value: bool,
}

/// The failures of a call: the first few inline, so a call that retries a few times and
/// succeeds allocates nothing for them.
pub type Failures = smallvec::SmallVec<[Kept; 4]>;

/// Once the call has ended its failures are dropped: they live on in the exception that
/// carries them, and a finished call must not keep tracebacks (hence frames, hence often
/// itself) alive.
pub struct CallState {
    pub host: Arc<HostPolicy>,
    call: Call<Arc<Policy>>,
    /// The failures so far, in order, the last `retryrs::HISTORY` at most (the cause of
    /// Exhausted and Cancelled is the last error; a last rejected value is their `result`).
    pub errors: Failures,
    pub clock: Option<VirtualClock>,
    pub token: Option<CancelToken>,
    /// The engine proposed a wait and the hooks (wait=, before_sleep=) are being asked:
    /// an async driver comes back with their awaited answers.
    pending: Option<Pending>,
    /// The `retry_on` predicate's verdict on the failure being judged, when it answered in
    /// place and a hint hook is being awaited (`HostPolicy::classify`).
    predicate: Option<bool>,
    /// Whether a decision reads the time: the policy bounds attempts or keeps time with
    /// other calls (`Policy::reads_time`), or something observes the call (events, the
    /// wait hooks). When not, the engine is fed the call's start and no clock is read.
    timed: bool,
    /// When the current attempt started, and when its failure was timed (if it was since):
    /// after a zero wait in a blocking call, with nothing run in between, that time is the
    /// next attempt's start (one clock read per attempt, as the core's executors do).
    attempt_at: Duration,
    failed_at: Option<Duration>,
    /// The call's counts, kept here and added to the retrier's stats when the call's state
    /// is dropped (one atomic add for a call that succeeded after retrying each failure,
    /// where counting each event takes seven for two failures then a success), for a
    /// blocking call that nothing observes (no listener, no wait hook): it ends before
    /// its caller sees its outcome. `None`: each event is counted as it happens.
    tally: Option<retryrs::CallTally>,
}

impl Drop for CallState {
    fn drop(&mut self) {
        if let Some(tally) = &self.tally {
            self.host.stats.add_tally(tally);
        }
    }
}

/// A wait the engine proposed, waiting on the hooks' answers.
struct Pending {
    delay: Duration,
    attempt: u32,
    /// How many of the driver's answers were used (classification's, then the awaited
    /// hooks'): the next awaited answer is at this index.
    asked: usize,
    /// The first hook still to ask (0: before_sleep, 1: wait): a sync hook asked before an
    /// awaited one answered already, and its answer is not among the driver's.
    hook: usize,
    /// The failure the hooks are asked about (a value when `is_value`), not yet kept: a
    /// cancel while they answer keeps it (the RetryCancelled's cause).
    subject: Py<PyAny>,
    is_value: bool,
    /// The server's exact wait (a pushback), the plan unless a hook makes another.
    exact: Option<Duration>,
}

/// What the hooks came to: the engine's decision, or an awaitable to await first.
enum Hooked {
    Decided(Decision),
    Await(Py<PyAny>),
}

fn state_error(e: retryrs::StateError) -> PyErr {
    PyRuntimeError::new_err(format!("retryrs: {e}"))
}

impl CallState {
    /// Created at the first failure only: the happy path never gets here.
    pub fn begin(
        host: Arc<HostPolicy>,
        start: Duration,
        clock: Option<VirtualClock>,
        token: Option<CancelToken>,
        admission: Option<retryrs::Admission>,
        batched: bool,
    ) -> Self {
        let call = Call::start_admitted(host.policy.clone(), start, admission);
        let timed = host.observed || host.policy.reads_time();
        let tally = (batched && !host.observed).then(retryrs::CallTally::default);
        CallState {
            host,
            call,
            errors: Failures::new(),
            clock,
            token,
            pending: None,
            predicate: None,
            timed,
            attempt_at: start,
            failed_at: None,
            tally,
        }
    }

    /// Keeps a failure: the last `retryrs::HISTORY` only, so a call with a huge
    /// max_attempts cannot hold every traceback it ever saw.
    fn keep(&mut self, obj: Py<PyAny>, is_value: bool) {
        if self.errors.len() == retryrs::HISTORY {
            self.errors.remove(0);
        }
        self.errors.push(Kept { obj, is_value });
    }

    /// The last failure, for the events that follow it.
    fn last<'py>(&self, py: Python<'py>) -> Option<(Bound<'py, PyAny>, bool)> {
        self.errors.last().map(|k| (k.obj.bind(py).clone(), k.is_value))
    }

    pub fn attempt(&self) -> u32 {
        self.call.attempt()
    }

    /// The attempt starting now (after `resume`), with the engine's bound on it.
    pub fn frame(&self) -> crate::attempt::Frame {
        crate::attempt::Frame::of(&self.call, self.attempt_at, self.clock.clone())
    }

    /// Puts the attempt starting now (after `resume`) in a blocking call's place.
    pub fn set_frame(&self, py: Python<'_>, frame: &crate::attempt::SyncFrame<'_>) -> PyResult<()> {
        frame.set(py, &self.call, self.attempt_at, &self.clock)
    }

    /// The time for a decision: the clock when one reads it, else the call's start.
    fn decision_time(&self) -> Duration {
        if self.timed {
            now(&self.clock)
        } else {
            self.call.started_at()
        }
    }

    /// When the call began.
    pub fn started_at(&self) -> Duration {
        self.call.started_at()
    }

    /// `RetryExhausted` from the failures kept (with `reraise=True`, the last error itself,
    /// the history attached); the call's history is then dropped.
    fn exhausted(&mut self, py: Python<'_>, reason: retryrs::ExhaustReason) -> PyErr {
        let build = if self.host.reraise { errors::reraised } else { errors::exhausted };
        let hint = self.host.policy.deadline_hint();
        let exhausted = build(py, self.host.policy.name(), self.call.attempt(), reason, &self.errors, hint);
        self.errors.clear();
        exhausted
    }

    /// The next attempt succeeded: the engine reports it and refills the budget.
    /// A listener's KeyboardInterrupt / SystemExit is returned: the caller raises it
    /// instead of returning the value.
    pub fn succeeded(&mut self, py: Python<'_>) -> PyResult<()> {
        // Only the Success event and a breaker's count need the time of a success.
        let at = match self.host.on_event.is_some() || self.host.policy.breaker().is_some() {
            true => now(&self.clock),
            false => self.attempt_at,
        };
        let host = &*self.host;
        let mut signal = None;
        let _ = self
            .call
            .record(Verdict::Success, at, &mut |e| host.emit_counted(py, e, None, &mut signal, &mut self.tally));
        self.errors.clear();
        signal.map_or(Ok(()), Err)
    }
}
