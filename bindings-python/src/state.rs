//! The state of one call past its first failure, shared by the sync executor and the
//! asyncio driver: the engine's [`Call`], every failure so far, the clock and the token.
//! Every decision is the engine's; this only turns Python outcomes into verdicts and the
//! engine's stops into Python exceptions.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use retryrs::{
    Call, CancelToken, Clock, Decision, Plan, Policy, Proposal, Resume, RetryCause, Stop, SystemClock, Verdict,
    VirtualClock,
};

use crate::errors;
use crate::host_policy::{Classified, HostPolicy};
use crate::token::PyCancelToken;
use crate::wait::{self, WaitEnd};

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

static STOP_RETRYING: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();
static RAISED: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

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

    /// An attempt raised `err`. Returns the wait before the next attempt, or the exception
    /// that ends the call: the original (rejected, or a control-flow signal), a
    /// `RetryExhausted`, or an error raised by the predicate / hint hook (original
    /// attached as its cause).
    /// `host` is the call's own (`self.host`), lent by the caller that holds it, so that
    /// judging a failure takes no reference count (two locked adds).
    /// `raised` is the exception, its traceback attached (`crate::retrier::blocking::attempt`).
    pub fn failed(&mut self, py: Python<'_>, host: &HostPolicy, raised: Bound<'_, PyAny>) -> Result<Duration, PyErr> {
        debug_assert!(std::ptr::eq(host, &*self.host));
        // A blocking call cannot cut an attempt: the only timeouts it prices as such are
        // the HTTP helpers' (a RequestFailed for its client's own timeout).
        let timed_out = helper_timed_out(&raised);
        match self.failed_as(py, host, raised, None, None, timed_out)? {
            Failed::Wait(delay) => Ok(delay),
            Failed::Await(_) => Err(PyRuntimeError::new_err("retryrs: a sync call was asked to await a hook")),
        }
    }

    /// [`failed`](Self::failed) for an async driver, which can await a hook's answer:
    /// `answers` are the hooks' awaited answers so far (see `HostPolicy::classify`).
    /// `timed_out`: the driver cut the attempt at its bound (`err` is its AttemptTimeout):
    /// recorded as a timeout, which a quota budget prices at `timeout_retry_cost`.
    pub fn failed_async(
        &mut self,
        py: Python<'_>,
        err: PyErr,
        answers: Option<&Bound<'_, PyTuple>>,
        timed_out: bool,
    ) -> Result<Failed, PyErr> {
        let host = self.host.clone();
        let value = err.value(py).clone().into_any();
        self.failed_as(py, &host, value, Some(err), answers, timed_out)
    }

    /// The failure `value`, raised as `err` when the caller has it as a PyErr (else it is
    /// raised again from the value, which carries its traceback).
    fn failed_as(
        &mut self,
        py: Python<'_>,
        host: &HostPolicy,
        value: Bound<'_, PyAny>,
        err: Option<PyErr>,
        answers: Option<&Bound<'_, PyTuple>>,
        timed_out: bool,
    ) -> Result<Failed, PyErr> {
        let original = |err: Option<PyErr>, value: &Bound<'_, PyAny>| match err {
            Some(err) => err,
            None => PyErr::from_value(value.clone()),
        };
        let mut signal = None;
        let subject = Some((&value, false));
        // KeyboardInterrupt, SystemExit, GeneratorExit, CancelledError: never offered to
        // the predicate, never retried. The call is cancelled; the signal goes on as is.
        if !value.is_instance_of::<PyException>() {
            let at = now(&self.clock);
            let _ = self.call.cancel(at, &mut |e| host.emit_counted(py, e, subject, &mut signal, &mut self.tally));
            self.errors.clear();
            return Err(original(err, &value));
        }
        let mut predicate = self.predicate.take();
        let classify = || host.classify(&value, answers, &mut predicate);
        let decided = self.decide(py, host, &value, false, classify, timed_out, answers, &mut signal);
        self.predicate = predicate;
        let decision = match decided? {
            Ok(Hooked::Decided(d)) => d,
            Ok(Hooked::Await(pending)) => return Ok(Failed::Await(pending)),
            Err(hook_error) => return Err(self.hook_failed(py, hook_error, Some(original(err, &value)), signal)),
        };
        if let Some(signal) = signal {
            // A Ctrl-C (or SystemExit) raised by a listener ends the call as it would
            // anywhere else; the failure it interrupted is its context.
            signal.value(py).setattr("__context__", &value)?;
            self.errors.clear();
            return Err(signal);
        }
        if host.reraise && matches!(decision, Decision::Retry(_) | Decision::Stop(Stop::Exhausted(_))) {
            // The error may be raised again as it is: its traceback goes with it (before
            // 3.12 a caught error's traceback is the PyErr's, not yet the object's).
            // Set as the interpreter sets it, past any `__setattr__` of the error's class
            // (one that refuses attributes must not replace the error it was raising).
            if let Some(tb) = err.as_ref().and_then(|err| err.traceback(py)) {
                // SAFETY: both are live objects held with the GIL; the call takes its own
                // reference to the traceback.
                unsafe { pyo3::ffi::PyException_SetTraceback(value.as_ptr(), tb.as_ptr()) };
            }
        }
        match decision {
            Decision::Retry(delay) => {
                self.keep(value.unbind(), false);
                Ok(Failed::Wait(delay))
            }
            Decision::Stop(Stop::Exhausted(reason)) => {
                self.keep(value.unbind(), false);
                Err(self.exhausted(py, reason))
            }
            // Rejected: the original error, unchanged (same object, same traceback).
            Decision::Stop(_) => {
                self.errors.clear();
                Err(original(err, &value))
            }
        }
    }

    /// An attempt returned `value` and the result predicate rejected it: a failure
    /// handled exactly like a transient error (contract step 2), its hint read from the
    /// value. Returns as [`failed_async`](Self::failed_async) does.
    pub fn rejected_value(
        &mut self,
        py: Python<'_>,
        value: Bound<'_, PyAny>,
        answers: Option<&Bound<'_, PyTuple>>,
    ) -> Result<Failed, PyErr> {
        let host = self.host.clone();
        let mut signal = None;
        let classify = || host.hint_verdict(&value, answers);
        let decision = match self.decide(py, &host, &value, true, classify, false, answers, &mut signal)? {
            Ok(Hooked::Decided(d)) => d,
            Ok(Hooked::Await(pending)) => return Ok(Failed::Await(pending)),
            // No cause: the rejected value is not an exception.
            Err(hook_error) => return Err(self.hook_failed(py, hook_error, None, signal)),
        };
        if let Some(signal) = signal {
            self.errors.clear();
            return Err(signal);
        }
        self.keep(value.clone().unbind(), true);
        match decision {
            Decision::Retry(delay) => Ok(Failed::Wait(delay)),
            Decision::Stop(Stop::Exhausted(reason)) => Err(self.exhausted(py, reason)),
            Decision::Stop(_) => Err(PyRuntimeError::new_err("retryrs: a rejected value was not transient")),
        }
    }

    /// What a failure (`subject`, a value when `is_value`) comes to, for
    /// [`failed_async`](Self::failed_async) and [`rejected_value`](Self::rejected_value)
    /// alike: with the hooks' awaited answers when the engine already proposed a wait,
    /// else `classify`'s verdict recorded (or proposed, then the hooks asked). `Err` is
    /// a hook's own error, the call closed: the caller ends it with
    /// [`hook_failed`](Self::hook_failed).
    #[allow(clippy::too_many_arguments)]
    fn decide<'py>(
        &mut self,
        py: Python<'py>,
        host: &HostPolicy,
        subject: &Bound<'py, PyAny>,
        is_value: bool,
        classify: impl FnOnce() -> PyResult<Classified<'py>>,
        timed_out: bool,
        answers: Option<&Bound<'py, PyTuple>>,
        signal: &mut Option<PyErr>,
    ) -> PyResult<Result<Hooked, PyErr>> {
        if let Some(pending) = self.pending.take() {
            // The hooks' awaited answers: classification is done and the engine proposed.
            return Ok(self.hooked(py, host, pending, subject, is_value, answers, signal));
        }
        let verdict = match classify() {
            Ok(Classified::Await(pending)) => return Ok(Ok(Hooked::Await(pending.unbind()))),
            Ok(Classified::Verdict(v)) => Ok(v),
            Err(e) => Err(e),
        };
        let at = self.decision_time();
        self.failed_at = Some(at);
        let sink =
            &mut |e: &retryrs::Event<'_>| host.emit_counted(py, e, Some((subject, is_value)), signal, &mut self.tally);
        let verdict = match verdict {
            Ok(v) => v,
            Err(hook_error) => {
                // The hook's own failure ends the call; the events still close it (as a
                // rejection: no retry happened), and nothing is lost.
                let _ = self.call.record(Verdict::Permanent, at, sink);
                return Ok(Err(hook_error));
            }
        };
        let exact = if is_value { None } else { host.exact_wait(subject, &verdict) };
        if host.hooks_waits() {
            let asked = answers.map_or(0, |a| a.len());
            self.proposed(py, host, verdict, exact, timed_out, at, subject, is_value, answers, asked, signal)
        } else if let Some(exact) = exact {
            // A server's exact wait: the engine proposes (its deadline, attempts and budget
            // may still end the call), then waits exactly that long.
            let cause = RetryCause::from_timed_out(timed_out);
            let decision = match self.call.propose_as(verdict, cause, at, sink).map_err(state_error)? {
                Proposal::Stop(stop) => Decision::Stop(stop),
                Proposal::Wait { .. } => self.call.settle(Plan::Exact(exact), at, sink).map_err(state_error)?,
            };
            Ok(Ok(Hooked::Decided(decision)))
        } else {
            let cause = RetryCause::from_timed_out(timed_out);
            Ok(Ok(Hooked::Decided(self.call.record_as(verdict, cause, at, sink).map_err(state_error)?)))
        }
    }

    /// The engine's proposal for a transient failure (`subject`, a value when `is_value`),
    /// then the hooks' answers: `Err` is a hook's own error (the call is closed).
    #[allow(clippy::too_many_arguments)]
    fn proposed(
        &mut self,
        py: Python<'_>,
        host: &HostPolicy,
        verdict: Verdict,
        exact: Option<Duration>,
        timed_out: bool,
        at: Duration,
        subject: &Bound<'_, PyAny>,
        is_value: bool,
        answers: Option<&Bound<'_, PyTuple>>,
        asked: usize,
        signal: &mut Option<PyErr>,
    ) -> PyResult<Result<Hooked, PyErr>> {
        let sink =
            &mut |e: &retryrs::Event<'_>| host.emit_counted(py, e, Some((subject, is_value)), signal, &mut self.tally);
        let proposal =
            self.call.propose_as(verdict, RetryCause::from_timed_out(timed_out), at, sink).map_err(state_error)?;
        match proposal {
            Proposal::Stop(stop) => Ok(Ok(Hooked::Decided(Decision::Stop(stop)))),
            Proposal::Wait { delay, attempt, .. } => {
                if signal.is_some() {
                    // A listener's Ctrl-C: the hooks are not asked; the call is cancelled.
                    let _ = self.call.cancel(at, &mut |_| {});
                    return Ok(Ok(Hooked::Decided(Decision::Stop(Stop::Cancelled))));
                }
                let subject_obj = subject.clone().unbind();
                let pending = Pending { delay, attempt, asked, hook: 0, subject: subject_obj, is_value, exact };
                Ok(self.hooked(py, host, pending, subject, is_value, answers, signal))
            }
        }
    }

    /// Asks the hooks about the proposed wait (before_sleep, then wait), each answer taken
    /// from the driver's awaited `answers` when it has it, and settles the call with the
    /// plan they make. An awaitable answer (async calls) comes back to be awaited, the
    /// proposal kept; a hook's own error (or an answer it may not give) is `Err`, the
    /// call then settled as stopped.
    #[allow(clippy::too_many_arguments)]
    fn hooked(
        &mut self,
        py: Python<'_>,
        host: &HostPolicy,
        pending: Pending,
        subject: &Bound<'_, PyAny>,
        is_value: bool,
        answers: Option<&Bound<'_, PyTuple>>,
        signal: &mut Option<PyErr>,
    ) -> Result<Hooked, PyErr> {
        let can_await = answers.is_some();
        let mut asked = pending.asked;
        // A server's exact wait is the plan unless a hook makes another.
        let mut plan = pending.exact.map_or(Plan::Engine, Plan::Exact);
        let mut failure: Option<PyErr> = None;
        let hooks = [("before_sleep", &host.before_sleep), ("wait", &host.wait)];
        for (i, (name, hook)) in hooks.into_iter().enumerate().skip(pending.hook) {
            let Some(hook) = hook else { continue };
            let answer = match crate::host_policy::answered(answers, asked) {
                Ok(Some(a)) => {
                    asked += 1;
                    Ok(a)
                }
                Ok(None) => {
                    let delay = pending.delay.as_secs_f64();
                    match hook.bind(py).call1((pending.attempt, subject, delay)) {
                        Ok(a) => match crate::host_policy::awaitable(&a, name, can_await) {
                            Ok(Some(Classified::Await(p))) => {
                                // Its answer comes back at index `asked`; the hooks before
                                // it (answered in place, or it would not be reached) are done.
                                self.pending = Some(Pending { asked, hook: i, ..pending });
                                return Ok(Hooked::Await(p.unbind()));
                            }
                            Ok(_) => Ok(a),
                            Err(e) => Err(e),
                        },
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            // An awaited hook that raised comes back from the driver wrapped.
            let answer = match answer {
                Ok(a) if raised_type(py).is_ok_and(|t| a.is_instance(t).unwrap_or(false)) => {
                    Err(PyErr::from_value(a.getattr("error")?))
                }
                other => other,
            };
            match (name, answer) {
                ("before_sleep", Ok(a)) => {
                    if a.is_instance_of::<pyo3::types::PyBool>() && !a.is_truthy()? {
                        plan = Plan::Stop;
                    }
                }
                // StopRetrying from either hook stops the call (reason stopped), as
                // tenacity users raising it from a wait callable expect.
                (_, Err(e)) if is_stop(py, &e) => plan = Plan::Stop,
                (_, Err(e)) => {
                    failure = Some(e);
                    plan = Plan::Stop;
                }
                (_, Ok(a)) => {
                    if !a.is_none() {
                        let exact = crate::convert::seconds(&a, "wait")
                            .map_err(|e| {
                                pyo3::exceptions::PyTypeError::new_err(format!(
                                    "wait must return seconds (float, int, timedelta) or None, got {}: {e}",
                                    crate::convert::repr(&a)
                                ))
                            })
                            .and_then(|s| {
                                // The engine's rule (NaN, negative, infinite or past
                                // its longest wait: refused), in seconds.
                                Plan::exact_ms(crate::convert::ms(s)).map_err(|_| {
                                    pyo3::exceptions::PyValueError::new_err(format!(
                                        "wait returned {}: a wait must be seconds from 0 to 9e12 (about 285,000 \
                                         years), or None: the engine's",
                                        crate::convert::repr(&a)
                                    ))
                                })
                            });
                        match exact {
                            Ok(exact) => plan = exact,
                            Err(e) => {
                                failure = Some(e);
                                plan = Plan::Stop;
                            }
                        }
                    }
                }
            }
            if plan == Plan::Stop {
                break;
            }
        }
        let at = now(&self.clock);
        let decision = self
            .call
            .settle(plan, at, &mut |e| host.emit_counted(py, e, Some((subject, is_value)), signal, &mut self.tally))
            .map_err(state_error)?;
        match failure {
            Some(e) => Err(e),
            None => Ok(Hooked::Decided(decision)),
        }
    }

    /// A hook's own error ends the call (the events closed it as stopped): raised with the
    /// original error as its cause; a listener's signal goes first.
    fn hook_failed(&mut self, py: Python<'_>, hook_error: PyErr, err: Option<PyErr>, signal: Option<PyErr>) -> PyErr {
        self.errors.clear();
        if let Some(signal) = signal {
            return signal;
        }
        if let Some(err) = err {
            hook_error.set_cause(py, Some(err));
        }
        hook_error
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

    /// The wait is over: the next attempt may run, or the deadline passed during it.
    pub fn resume(&mut self, py: Python<'_>) -> PyResult<()> {
        let at = self.decision_time();
        self.resume_at(py, at)
    }

    /// [`resume`](Self::resume) after a blocking call's wait of `delay`: a zero wait is no
    /// wait at all (`wait::blocking`), so when nothing that could take time ran since the
    /// failure was timed (no listener, no wait hook: `HostPolicy::observed`), that time
    /// is the next attempt's start, as in the core's executors. An async driver's zero
    /// wait yields to the event loop: it resumes with [`resume`](Self::resume).
    pub fn resume_blocking(&mut self, py: Python<'_>, delay: Duration) -> PyResult<()> {
        let at = match self.failed_at {
            Some(at) if delay.is_zero() && !self.host.observed => at,
            _ => self.decision_time(),
        };
        self.resume_at(py, at)
    }

    fn resume_at(&mut self, py: Python<'_>, at: Duration) -> PyResult<()> {
        self.attempt_at = at;
        self.failed_at = None;
        let host = &*self.host;
        let last = self.last(py);
        let subject = last.as_ref().map(|(o, v)| (o, *v));
        let mut signal = None;
        let resumed = self
            .call
            .after_wait(at, &mut |e| host.emit_counted(py, e, subject, &mut signal, &mut self.tally))
            .map_err(state_error)?;
        if let Some(signal) = signal {
            self.errors.clear();
            return Err(signal);
        }
        match resumed {
            Resume::Attempt(_) => Ok(()),
            Resume::Stop(Stop::Exhausted(reason)) => Err(self.exhausted(py, reason)),
            Resume::Stop(_) => Err(PyRuntimeError::new_err("retryrs: unexpected stop after a wait")),
        }
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

    /// The call's cancel token fired during the wait: `RetryCancelled`.
    pub fn cancelled(&mut self, py: Python<'_>) -> PyErr {
        // Cancelled while the hooks were asked: the failure they were asked about is the
        // last one.
        if let Some(pending) = self.pending.take() {
            self.keep(pending.subject, pending.is_value);
        }
        if let Some(signal) = self.emit_cancel(py) {
            self.errors.clear();
            return signal;
        }
        let cancelled = errors::cancelled(py, self.host.policy.name(), self.call.attempt(), &self.errors);
        self.errors.clear();
        cancelled
    }

    /// Something else ended the wait (KeyboardInterrupt, task cancellation): the engine
    /// records the cancel, and the host's own signal goes on.
    /// (A listener's own signal is dropped: the host's is already on its way.)
    pub fn interrupted(&mut self, py: Python<'_>) {
        self.pending = None;
        let _ = self.emit_cancel(py);
        self.errors.clear();
    }

    /// A listener's KeyboardInterrupt / SystemExit, if one was raised, for the caller.
    fn emit_cancel(&mut self, py: Python<'_>) -> Option<PyErr> {
        let at = now(&self.clock);
        let host = &*self.host;
        let last = self.last(py);
        let subject = last.as_ref().map(|(o, v)| (o, *v));
        let mut signal = None;
        let _ = self.call.cancel(at, &mut |e| host.emit_counted(py, e, subject, &mut signal, &mut self.tally));
        signal
    }

    /// Waits `delay` in a blocking call: virtual time advances at once; real time passes
    /// with the GIL released, waking at once on the token and promptly on Ctrl-C.
    /// `cancel` is the Python token whose engine token the call has (for a green wait).
    pub fn wait_blocking(
        &mut self,
        py: Python<'_>,
        delay: Duration,
        cancel: Option<&Py<PyCancelToken>>,
    ) -> PyResult<()> {
        let end = match &self.clock {
            Some(v) => v.sleep(delay, self.token.as_ref()).map_err(|_| WaitEnd::Cancelled),
            None => wait::blocking(py, delay, self.token.as_ref(), cancel),
        };
        match end {
            Ok(()) => Ok(()),
            Err(WaitEnd::Cancelled) => Err(self.cancelled(py)),
            Err(WaitEnd::Signal(e)) => {
                self.interrupted(py);
                Err(e)
            }
        }
    }
}

/// `retryrs.StopRetrying` raised by `wait` or `before_sleep`: the call stops (reason `stopped`).
fn is_stop(py: Python<'_>, e: &PyErr) -> bool {
    STOP_RETRYING.import(py, "retryrs._errors", "StopRetrying").is_ok_and(|t| e.is_instance(py, t))
}

/// Looks up StopRetrying and the async driver's wrapper now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    STOP_RETRYING.import(py, "retryrs._errors", "StopRetrying")?;
    raised_type(py).map(drop)
}

/// The wrapper the async driver puts around an awaited hook's exception.
fn raised_type(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    RAISED.import(py, "retryrs._errors", "_Raised")
}

impl CallState {
    /// Whether the hooks (not the classification) are being asked: an awaited answer that
    /// raises is then handed back wrapped, rather than raised.
    pub fn hooking(&self) -> bool {
        self.pending.is_some()
    }
}

/// Whether `err` is an HTTP helper's `RequestFailed` for its client's own timeout
/// (`retryrs._http_common`): the marker it sets in `__init__`, an instance attribute, read
/// only on a failure from the instance dict (`own_attr`: nothing built for the many
/// exceptions that have none).
fn helper_timed_out(raised: &Bound<'_, PyAny>) -> bool {
    match crate::own_attr::own_attr(raised, pyo3::intern!(raised.py(), "_retryrs_timed_out")) {
        Ok(Some(marker)) => marker.is_truthy().unwrap_or(false),
        _ => false,
    }
}
