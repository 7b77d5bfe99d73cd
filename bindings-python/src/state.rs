//! The state of one call past its first failure, shared by the sync executor and the
//! asyncio driver: the engine's [`Call`], every failure so far, the clock and the token.
//! Every decision is the engine's; this only turns Python outcomes into verdicts and the
//! engine's stops into Python exceptions.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use retryrs::{Call, CancelToken, Clock, Decision, Policy, Resume, Stop, SystemClock, Verdict, VirtualClock};

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

/// Once the call has ended its failures are dropped: they live on in the exception that
/// carries them, and a finished call must not keep tracebacks (hence frames, hence often
/// itself) alive.
pub struct CallState {
    pub host: Arc<HostPolicy>,
    call: Call<Arc<Policy>>,
    /// The failures so far, in order, the last `retryrs::HISTORY` at most (the cause of
    /// Exhausted and Cancelled is the last error; a last rejected value is their `result`).
    pub errors: Vec<Kept>,
    pub clock: Option<VirtualClock>,
    pub token: Option<CancelToken>,
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
    ) -> Self {
        let call = Call::start_admitted(host.policy.clone(), start, admission);
        CallState { host, call, errors: Vec::new(), clock, token }
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
        crate::attempt::Frame::of(&self.call, now(&self.clock), self.clock.clone())
    }

    /// When the call began.
    pub fn started_at(&self) -> Duration {
        self.call.started_at()
    }

    /// An attempt raised `err`. Returns the wait before the next attempt, or the exception
    /// that ends the call: the original (rejected, or a control-flow signal), a
    /// `RetryExhausted`, or an error raised by the predicate / hint hook (original
    /// attached as its cause).
    pub fn failed(&mut self, py: Python<'_>, err: PyErr) -> Result<Duration, PyErr> {
        match self.failed_async(py, err, None)? {
            Failed::Wait(delay) => Ok(delay),
            Failed::Await(_) => Err(PyRuntimeError::new_err("retryrs: a sync call was asked to await a hook")),
        }
    }

    /// [`failed`](Self::failed) for an async driver, which can await a hook's answer:
    /// `answers` are the hooks' awaited answers so far (see `HostPolicy::classify`).
    pub fn failed_async(
        &mut self,
        py: Python<'_>,
        err: PyErr,
        answers: Option<&Bound<'_, PyTuple>>,
    ) -> Result<Failed, PyErr> {
        let value = err.value(py).clone().into_any();
        let host = &*self.host;
        let mut signal = None;
        let subject = Some((&value, false));
        // KeyboardInterrupt, SystemExit, GeneratorExit, CancelledError: never offered to
        // the predicate, never retried. The call is cancelled; the signal goes on as is.
        if !value.is_instance_of::<PyException>() {
            let at = now(&self.clock);
            let _ = self.call.cancel(at, &mut |e| host.emit(py, e, subject, &mut signal));
            self.errors.clear();
            return Err(err);
        }
        let verdict = match host.classify(&value, answers) {
            Ok(Classified::Await(pending)) => return Ok(Failed::Await(pending.unbind())),
            Ok(Classified::Verdict(v)) => Ok(v),
            Err(e) => Err(e),
        };
        let at = now(&self.clock);
        let verdict = match verdict {
            Ok(v) => v,
            Err(hook_error) => {
                // The hook's own failure ends the call; the events still close it (as a
                // rejection: no retry happened), and nothing is lost.
                let _ = self.call.record(Verdict::Permanent, at, &mut |e| host.emit(py, e, subject, &mut signal));
                self.errors.clear();
                if let Some(signal) = signal {
                    return Err(signal);
                }
                hook_error.set_cause(py, Some(err));
                return Err(hook_error);
            }
        };
        let decision =
            self.call.record(verdict, at, &mut |e| host.emit(py, e, subject, &mut signal)).map_err(state_error)?;
        if let Some(signal) = signal {
            // A Ctrl-C (or SystemExit) raised by a listener ends the call as it would
            // anywhere else; the failure it interrupted is its context.
            signal.value(py).setattr("__context__", err.value(py))?;
            self.errors.clear();
            return Err(signal);
        }
        if host.reraise && matches!(decision, Decision::Retry(_) | Decision::Stop(Stop::Exhausted(_))) {
            // The error may be raised again as it is: its traceback goes with it (before
            // 3.12 a caught error's traceback is the PyErr's, not yet the object's).
            if let Some(tb) = err.traceback(py) {
                value.setattr(pyo3::intern!(py, "__traceback__"), tb)?;
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
                Err(err)
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
        let host = &*self.host;
        let mut signal = None;
        let subject = Some((&value, true));
        let verdict = match host.hint_verdict(&value, answers) {
            Ok(Classified::Await(pending)) => return Ok(Failed::Await(pending.unbind())),
            Ok(Classified::Verdict(v)) => Ok(v),
            Err(e) => Err(e),
        };
        let at = now(&self.clock);
        let verdict = match verdict {
            Ok(v) => v,
            Err(hook_error) => {
                let _ = self.call.record(Verdict::Permanent, at, &mut |e| host.emit(py, e, subject, &mut signal));
                self.errors.clear();
                return Err(signal.unwrap_or(hook_error));
            }
        };
        let decision =
            self.call.record(verdict, at, &mut |e| host.emit(py, e, subject, &mut signal)).map_err(state_error)?;
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

    /// `RetryExhausted` from the failures kept (with `reraise=True`, the last error itself,
    /// the history attached); the call's history is then dropped.
    fn exhausted(&mut self, py: Python<'_>, reason: retryrs::ExhaustReason) -> PyErr {
        let build = if self.host.reraise { errors::reraised } else { errors::exhausted };
        let exhausted = build(py, self.host.policy.name(), self.call.attempt(), reason, &self.errors);
        self.errors.clear();
        exhausted
    }

    /// The wait is over: the next attempt may run, or the deadline passed during it.
    pub fn resume(&mut self, py: Python<'_>) -> PyResult<()> {
        let at = now(&self.clock);
        let host = &*self.host;
        let last = self.last(py);
        let subject = last.as_ref().map(|(o, v)| (o, *v));
        let mut signal = None;
        let resumed = self.call.after_wait(at, &mut |e| host.emit(py, e, subject, &mut signal)).map_err(state_error)?;
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
        let at = now(&self.clock);
        let host = &*self.host;
        let mut signal = None;
        let _ = self.call.record(Verdict::Success, at, &mut |e| host.emit(py, e, None, &mut signal));
        self.errors.clear();
        signal.map_or(Ok(()), Err)
    }

    /// The call's cancel token fired during the wait: `RetryCancelled`.
    pub fn cancelled(&mut self, py: Python<'_>) -> PyErr {
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
        let _ = self.call.cancel(at, &mut |e| host.emit(py, e, subject, &mut signal));
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
