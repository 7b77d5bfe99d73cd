//! One hedged call, stepped from Python (`retryrs/_hedge.py`, the asyncio driver, and the
//! conformance runner): the core's [`HedgeCall`] answers, at each step, which attempt to
//! launch, how long to wait, which attempt won and which to cancel. This type only turns
//! Python outcomes into verdicts (the Retrier's `retry_on`, hint and result hooks, as for
//! retries) and the engine's stops into the exceptions a call raises. No delay, quantile
//! or budget arithmetic here: the core does all of it.
//!
//! Every step comes back as one tuple `(action, attempt, wait, cancel, error)`:
//! - `LAUNCH`, `attempt`: launch it now (its `retryrs.current_attempt()` is
//!   `attempt_info(attempt)`), then `poll()`;
//! - `WAIT`, `wait`: seconds to wait for an outcome at most (None: no timer), then
//!   `poll()` (or report the outcome that came);
//! - `WON`, `attempt`: its value is the call's; cancel the attempts in `cancel`;
//! - `STOP`: cancel the attempts in `cancel`, then raise `error` (the fatal attempt's
//!   own exception, `RetryExhausted`, `RetryCancelled`, or a listener's Ctrl-C), or
//!   re-raise the host's own cancellation when `error` is None;
//! - `DROPPED`: the outcome reported came too late (its attempt was cancelled, or the
//!   call is over): it is neither returned nor counted;
//! - `AWAIT`, `error` an awaitable: a hook answered with it; await it and report the same
//!   outcome again with the answers so far.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use retryrs::{AttemptSet, Event, HedgeCall, Policy, RetryCause, Step, Stop, Verdict, VirtualClock};

use crate::attempt::{AttemptInfo, Frame};
use crate::errors;
use crate::host_policy::{Classified, HostPolicy};
use crate::state::{now, Kept};
use crate::token::PyCancelToken;

pub const LAUNCH: u8 = 0;
pub const WAIT: u8 = 1;
pub const WON: u8 = 2;
pub const STOP: u8 = 3;
pub const DROPPED: u8 = 4;
pub const AWAIT: u8 = 5;

#[pyclass(module = "retryrs._native", name = "_HedgedCall")]
pub struct HedgedCall {
    host: Arc<HostPolicy>,
    call: HedgeCall<Arc<Policy>>,
    /// The failures so far, in the order they were reported (the last `retryrs::HISTORY`).
    errors: Vec<Kept>,
    clock: Option<VirtualClock>,
    token: Option<Py<PyCancelToken>>,
    /// Whether the driver interrupts each attempt at its bound.
    interrupts: bool,
    /// A listener's Ctrl-C raised while the call started, for the first step.
    signal: Option<PyErr>,
    /// The `retry_on` predicate's in-place verdict while a hint hook is awaited
    /// (`HostPolicy::classify`).
    predicate: Option<bool>,
    /// When the call started, on its clock (the deadline counts from it).
    started: Duration,
}

/// A step as the tuple the driver reads.
type Out = (u8, u32, Option<f64>, Vec<u32>, Option<Py<PyAny>>);

fn set(cancel: AttemptSet) -> Vec<u32> {
    cancel.iter().collect()
}

impl HedgedCall {
    pub fn start(py: Python<'_>, host: Arc<HostPolicy>, token: Option<Py<PyCancelToken>>, interrupts: bool) -> Self {
        let clock = crate::testing::clock(py);
        let start = now(&clock);
        let mut signal = None;
        let call = {
            let h = &*host;
            HedgeCall::start_with(h.policy.clone(), start, &mut |e: &Event<'_>| h.emit(py, e, None, &mut signal))
        };
        HedgedCall { host, call, errors: Vec::new(), clock, token, interrupts, signal, predicate: None, started: start }
    }

    fn keep(&mut self, obj: Py<PyAny>, is_value: bool) {
        if self.errors.len() == retryrs::HISTORY {
            self.errors.remove(0);
        }
        self.errors.push(Kept { obj, is_value });
    }

    /// The engine's answer, with the events it emits about `subject` (the outcome just
    /// reported; else the last failure).
    fn drive(
        &mut self,
        py: Python<'_>,
        subject: Option<(&Bound<'_, PyAny>, bool)>,
        f: impl FnOnce(
            &mut HedgeCall<Arc<Policy>>,
            Duration,
            &mut dyn FnMut(&Event<'_>),
        ) -> Result<Step, retryrs::StateError>,
    ) -> PyResult<(Step, Option<PyErr>)> {
        let at = now(&self.clock);
        let last = self.errors.last().map(|k| (k.obj.bind(py).clone(), k.is_value));
        let subject = subject.or_else(|| last.as_ref().map(|(o, v)| (o, *v)));
        let host = &*self.host;
        let mut signal = self.signal.take();
        let step = f(&mut self.call, at, &mut |e| host.emit(py, e, subject, &mut signal))
            .map_err(|e| PyRuntimeError::new_err(format!("retryrs: {e}")))?;
        Ok((step, signal))
    }

    /// The tuple for `step`; `fatal` is the exception of a fatal failure (a Rejected stop).
    fn out(&mut self, py: Python<'_>, step: Step, signal: Option<PyErr>, fatal: Option<PyErr>) -> PyResult<Out> {
        if let Some(signal) = signal {
            // A listener's Ctrl-C (or SystemExit) ends the call as it would anywhere else.
            let mut cancel = match step {
                Step::Won { cancel, .. } | Step::Stop { cancel, .. } => set(cancel),
                _ => vec![],
            };
            if self.call.outcome().is_none() {
                let at = now(&self.clock);
                if let Ok(more) = self.call.cancel(at, &mut |_: &Event<'_>| {}) {
                    cancel.extend(more.iter());
                }
            }
            self.errors.clear();
            return Ok((STOP, 0, None, cancel, Some(signal.into_value(py).into_any())));
        }
        Ok(match step {
            Step::Launch(k) => (LAUNCH, k, None, vec![], None),
            Step::Wait(at) => {
                let left = at.map(|at| at.saturating_sub(now(&self.clock)).as_secs_f64());
                (WAIT, 0, left, vec![], None)
            }
            Step::Won { attempt, cancel } => {
                self.errors.clear();
                (WON, attempt, None, set(cancel), None)
            }
            Step::Dropped => (DROPPED, 0, None, vec![], None),
            Step::Stop { stop, cancel } => {
                let error = match stop {
                    Stop::Exhausted(reason) => {
                        let name = self.host.policy.name();
                        let err = match self.call.refusal() {
                            Some((state, retry_in)) => errors::circuit_open(py, name, state.as_str(), retry_in),
                            None => errors::exhausted(py, name, self.call.launched(), reason, &self.errors, None),
                        };
                        Some(err)
                    }
                    Stop::Rejected => fatal,
                    Stop::Cancelled => None,
                    Stop::Success => None,
                };
                self.errors.clear();
                (STOP, self.call.launched(), None, set(cancel), error.map(|e| e.into_value(py).into_any()))
            }
        })
    }

    /// Cancels the call (its Cancelled event about `subject`, else the last failure):
    /// STOP with the attempts to cancel (and a listener's Ctrl-C, if one was raised).
    fn cancelled(&mut self, py: Python<'_>, subject: Option<(&Bound<'_, PyAny>, bool)>) -> PyResult<Out> {
        let (step, signal) = self.drive(py, subject, |c, at, sink| {
            c.cancel(at, &mut &mut *sink).map(|cancel| Step::Stop { stop: Stop::Cancelled, cancel })
        })?;
        self.out(py, step, signal, None)
    }

    /// Attempt `k`'s failure (an exception, or a value the result predicate rejected:
    /// `is_value`) as the hooks judged it: a hook's awaitable to await first (AWAIT); else
    /// the engine's step. A fatal exception ends the call as itself; a hook's own error
    /// ends it as that error (the original its cause).
    fn judged<'py>(
        &mut self,
        py: Python<'py>,
        k: u32,
        subject: &Bound<'py, PyAny>,
        is_value: bool,
        judged: PyResult<Classified<'py>>,
        timed_out: bool,
    ) -> PyResult<Out> {
        let (verdict, fatal) = match judged {
            Ok(Classified::Await(pending)) => return Ok(Self::awaiting(pending)),
            Ok(Classified::Verdict(v)) => (v, (!is_value).then(|| PyErr::from_value(subject.clone()))),
            Err(hook_error) => {
                if !is_value {
                    hook_error.set_cause(py, Some(PyErr::from_value(subject.clone())));
                }
                (Verdict::Permanent, Some(hook_error))
            }
        };
        let cause = RetryCause::from_timed_out(timed_out);
        let (step, signal) = self
            .drive(py, Some((subject, is_value)), |c, at, sink| c.record_as(k, verdict, cause, at, &mut &mut *sink))?;
        if verdict.is_counted_failure() && step != Step::Dropped {
            self.keep(subject.clone().unbind(), is_value);
        }
        self.out(py, step, signal, fatal)
    }

    fn awaiting(pending: Bound<'_, PyAny>) -> Out {
        (AWAIT, 0, None, vec![], Some(pending.unbind()))
    }
}

#[pymethods]
impl HedgedCall {
    /// What to do now (see the module's doc).
    fn poll(&mut self, py: Python<'_>) -> PyResult<Out> {
        if self.call.outcome().is_some() {
            return Err(PyRuntimeError::new_err("retryrs: the hedged call is over"));
        }
        let (step, signal) = self.drive(py, None, |c, at, sink| c.poll(at, &mut &mut *sink))?;
        self.out(py, step, signal, None)
    }

    /// Attempt `k` raised `exc`: a failure the Retrier's `retry_on` judges (transient:
    /// non-fatal, the other attempts go on; else fatal: the call ends with `exc` itself).
    /// A control-flow signal (KeyboardInterrupt, CancelledError...) cancels the call; it
    /// comes back as the STOP's error. `timed_out`: the driver cut the attempt at its
    /// bound (`exc` is, or was caused by, its AttemptTimeout): a quota prices the hedge
    /// this failure launches as a retry after a timeout.
    #[pyo3(signature = (k, exc, answers=None, timed_out=false))]
    fn failed(
        &mut self,
        py: Python<'_>,
        k: u32,
        exc: Bound<'_, PyAny>,
        answers: Option<Bound<'_, PyTuple>>,
        timed_out: bool,
    ) -> PyResult<Out> {
        if !exc.is_instance_of::<PyException>() {
            if self.call.outcome().is_some() || !self.call.running().contains(k) {
                return Ok((DROPPED, 0, None, vec![], None));
            }
            let (_, _, _, cancel, _) = self.cancelled(py, Some((&exc, false)))?;
            return Ok((STOP, self.call.launched(), None, cancel, Some(exc.unbind())));
        }
        let verdict = self.host.classify(&exc, answers.as_ref(), &mut self.predicate);
        self.judged(py, k, &exc, false, verdict, timed_out)
    }

    /// Attempt `k` returned a value the Retrier accepts: it wins (WON), unless the call
    /// is already over (DROPPED).
    fn succeeded(&mut self, py: Python<'_>, k: u32) -> PyResult<Out> {
        let (step, signal) = self.drive(py, None, |c, at, sink| c.record(k, Verdict::Success, at, &mut &mut *sink))?;
        self.out(py, step, signal, None)
    }

    /// Attempt `k` returned `value` and `retry_on_result` rejected it: a non-fatal
    /// failure (its hint read as for a retry).
    #[pyo3(signature = (k, value, answers=None))]
    fn rejected(
        &mut self,
        py: Python<'_>,
        k: u32,
        value: Bound<'_, PyAny>,
        answers: Option<Bound<'_, PyTuple>>,
    ) -> PyResult<Out> {
        let verdict = self.host.hint_verdict(&value, answers.as_ref());
        self.judged(py, k, &value, true, verdict, false)
    }

    /// Ends the call: `token` True when its CancelToken fired (the STOP's error is
    /// `RetryCancelled`), False when the host cancelled it (the task was cancelled: no
    /// error, the host's cancellation goes on). STOP lists the attempts to cancel.
    fn cancel(&mut self, py: Python<'_>, token: bool) -> PyResult<Out> {
        if self.call.outcome().is_some() {
            return Ok((STOP, self.call.launched(), None, vec![], None));
        }
        let (action, attempt, wait, cancel, error) = self.cancelled(py, None)?;
        let error = match error {
            Some(signal) => Some(signal),
            None if token => {
                let e = errors::cancelled(py, self.host.policy.name(), self.call.launched(), &self.errors);
                Some(e.into_value(py).into_any())
            }
            None => None,
        };
        self.errors.clear();
        Ok((action, attempt, wait, cancel, error))
    }

    /// Attempt `k`, just launched, as `retryrs.current_attempt()` shows it (its number and
    /// its bound: the deadline's time left, or its own attempt timeout if sooner).
    fn attempt_info(&self, k: u32) -> PyResult<AttemptInfo> {
        let end =
            self.call.attempt_deadline(k).map_err(|e| PyRuntimeError::new_err(format!("retryrs: attempt {k}: {e}")))?;
        let at = now(&self.clock);
        let frame = Frame::new(k, end, at, self.clock.clone());
        Ok(AttemptInfo::with_arm(frame, at, self.interrupts))
    }

    /// Attempts launched so far.
    #[getter]
    fn launched(&self) -> u32 {
        self.call.launched()
    }

    /// The attempts in flight, in order.
    #[getter]
    fn running(&self) -> Vec<u32> {
        set(self.call.running())
    }

    /// The delay between launches this call uses (seconds).
    #[getter]
    fn hedging_delay(&self) -> f64 {
        self.call.hedging_delay().as_secs_f64()
    }

    /// Whether the call runs on `retryrs.testing` virtual time.
    #[getter]
    fn virtual_time(&self) -> bool {
        self.clock.is_some()
    }

    #[getter]
    fn token(&self, py: Python<'_>) -> Option<Py<PyCancelToken>> {
        self.token.as_ref().map(|t| t.clone_ref(py))
    }

    /// Seconds left before the call's deadline, for the driver to bound an awaited hook
    /// with (as `_SteppedCall._deadline_left`); None with no deadline, and under virtual
    /// time (where a hook's real time is not the call's).
    #[getter]
    fn _deadline_left(&self) -> Option<f64> {
        if self.clock.is_some() {
            return None;
        }
        let end = self.started + self.host.policy.deadline()?;
        Some(end.saturating_sub(now(&None)).as_secs_f64())
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        for e in &self.errors {
            visit.call(&e.obj)?;
        }
        if let Some(t) = &self.token {
            visit.call(t)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.errors.clear();
        self.token = None;
    }
}

/// The exception a call that runs one attempt at a time raises for a hedging policy:
/// the core's wording, and what to use instead.
pub fn refusal(policy: &Policy, what: &str) -> Option<PyErr> {
    retryrs::hedge::one_at_a_time_refusal(policy).map(|why| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "{what}: {why} (an attempt cannot be abandoned in a blocking call or a loop-form attempt); \
             use `await retrier.call_async(fn)` or decorate an `async def`"
        ))
    })
}

/// The constants, for the driver.
pub fn add_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, v) in [
        ("_HEDGE_LAUNCH", LAUNCH),
        ("_HEDGE_WAIT", WAIT),
        ("_HEDGE_WON", WON),
        ("_HEDGE_STOP", STOP),
        ("_HEDGE_DROPPED", DROPPED),
        ("_HEDGE_AWAIT", AWAIT),
    ] {
        m.add(name, v)?;
    }
    Ok(())
}
