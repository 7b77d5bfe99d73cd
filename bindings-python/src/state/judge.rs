//! A failed attempt judged: an exception raised or a value rejected, classified, recorded
//! with the engine (or proposed, then the hooks asked), and turned into the wait before
//! the next attempt or the exception that ends the call.

use std::time::Duration;

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use retryrs::{Decision, Plan, Proposal, RetryCause, Stop, Verdict};

use super::{now, state_error, CallState, Failed, Hooked};
use crate::host_policy::{Classified, HostPolicy};

impl CallState {
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
