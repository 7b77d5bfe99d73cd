//! The state of one call past its first failure, shared by the sync executor and the
//! asyncio driver: the engine's [`Call`], every failure so far, the clock and the token.
//! Every decision is the engine's; this only turns Python outcomes into verdicts and the
//! engine's stops into Python exceptions.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyBaseException, PyException, PyRuntimeError};
use pyo3::prelude::*;
use retryrs::{Call, CancelToken, Clock, Decision, Policy, Resume, Stop, SystemClock, Verdict, VirtualClock};

use crate::errors;
use crate::host_policy::HostPolicy;
use crate::wait::{self, WaitEnd};

/// Now, on the virtual clock under `retryrs.testing`, else on the monotonic one.
pub fn now(clock: &Option<VirtualClock>) -> Duration {
    match clock {
        Some(v) => v.now(),
        None => SystemClock.now(),
    }
}

/// Once the call has ended its failures are dropped: they live on in the exception that
/// carries them, and a finished call must not keep tracebacks (hence frames, hence often
/// itself) alive.
pub struct CallState {
    pub host: Arc<HostPolicy>,
    call: Call<Arc<Policy>>,
    /// The failures so far, in order, the last `retryrs::HISTORY` at most (the cause of
    /// Exhausted and Cancelled is the last).
    pub errors: Vec<Py<PyBaseException>>,
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
    ) -> Self {
        let call = Call::start(host.policy.clone(), start);
        CallState { host, call, errors: Vec::new(), clock, token }
    }

    pub fn attempt(&self) -> u32 {
        self.call.attempt()
    }

    /// Keeps a failure: the last `retryrs::HISTORY` only, so a call with a huge
    /// max_attempts cannot hold every traceback it ever saw.
    fn keep(&mut self, error: Py<PyBaseException>) {
        if self.errors.len() == retryrs::HISTORY {
            self.errors.remove(0);
        }
        self.errors.push(error);
    }

    /// An attempt raised `err`. Returns the wait before the next attempt, or the exception
    /// that ends the call: the original (rejected, or a control-flow signal), a
    /// `RetryExhausted`, or an error raised by the predicate / hint hook (original
    /// attached as its cause).
    pub fn failed(&mut self, py: Python<'_>, err: PyErr, forced_transient: bool) -> Result<Duration, PyErr> {
        let value = err.value(py).clone().into_any();
        let host = &*self.host;
        // KeyboardInterrupt, SystemExit, GeneratorExit, CancelledError: never offered to
        // the predicate, never retried. The call is cancelled; the signal goes on as is.
        if !value.is_instance_of::<PyException>() {
            let at = now(&self.clock);
            let _ = self.call.cancel(at, &mut |e| host.emit(py, e, Some(&value)));
            self.errors.clear();
            return Err(err);
        }
        let verdict = host.classify(&value, forced_transient);
        let at = now(&self.clock);
        let verdict = match verdict {
            Ok(v) => v,
            Err(hook_error) => {
                // The hook's own failure ends the call; the events still close it (as a
                // rejection: no retry happened), and nothing is lost.
                let _ = self.call.record(Verdict::Permanent, at, &mut |e| host.emit(py, e, Some(&value)));
                hook_error.set_cause(py, Some(err));
                self.errors.clear();
                return Err(hook_error);
            }
        };
        let decision = self.call.record(verdict, at, &mut |e| host.emit(py, e, Some(&value))).map_err(state_error)?;
        match decision {
            Decision::Retry(delay) => {
                self.keep(err.into_value(py));
                Ok(delay)
            }
            Decision::Stop(Stop::Exhausted(reason)) => {
                self.keep(err.into_value(py));
                let exhausted =
                    errors::exhausted(py, self.host.policy.name(), self.call.attempt(), reason, &self.errors);
                self.errors.clear();
                Err(exhausted)
            }
            // Rejected: the original error, unchanged (same object, same traceback).
            Decision::Stop(_) => {
                self.errors.clear();
                Err(err)
            }
        }
    }

    /// The wait is over: the next attempt may run, or the deadline passed during it.
    pub fn resume(&mut self, py: Python<'_>) -> PyResult<()> {
        let at = now(&self.clock);
        let host = &*self.host;
        let last = self.errors.last().map(|e| e.bind(py).clone().into_any());
        match self.call.after_wait(at, &mut |e| host.emit(py, e, last.as_ref())).map_err(state_error)? {
            Resume::Attempt(_) => Ok(()),
            Resume::Stop(Stop::Exhausted(reason)) => {
                let exhausted = errors::exhausted(py, host.policy.name(), self.call.attempt(), reason, &self.errors);
                self.errors.clear();
                Err(exhausted)
            }
            Resume::Stop(_) => Err(PyRuntimeError::new_err("retryrs: unexpected stop after a wait")),
        }
    }

    /// The next attempt succeeded: the engine reports it and refills the budget.
    pub fn succeeded(&mut self, py: Python<'_>) {
        let at = now(&self.clock);
        let host = &*self.host;
        let _ = self.call.record(Verdict::Success, at, &mut |e| host.emit(py, e, None));
        self.errors.clear();
    }

    /// The call's cancel token fired during the wait: `RetryCancelled`.
    pub fn cancelled(&mut self, py: Python<'_>) -> PyErr {
        self.emit_cancel(py);
        let cancelled = errors::cancelled(py, self.host.policy.name(), self.call.attempt(), &self.errors);
        self.errors.clear();
        cancelled
    }

    /// Something else ended the wait (KeyboardInterrupt, task cancellation): the engine
    /// records the cancel, and the host's own signal goes on.
    pub fn interrupted(&mut self, py: Python<'_>) {
        self.emit_cancel(py);
        self.errors.clear();
    }

    fn emit_cancel(&mut self, py: Python<'_>) {
        let at = now(&self.clock);
        let host = &*self.host;
        let last = self.errors.last().map(|e| e.bind(py).clone().into_any());
        let _ = self.call.cancel(at, &mut |e| host.emit(py, e, last.as_ref()));
    }

    /// Waits `delay` in a blocking call: virtual time advances at once; real time passes
    /// with the GIL released, waking at once on the token and promptly on Ctrl-C.
    pub fn wait_blocking(&mut self, py: Python<'_>, delay: Duration) -> PyResult<()> {
        let end = match &self.clock {
            Some(v) => v.sleep(delay, self.token.as_ref()).map_err(|_| WaitEnd::Cancelled),
            None => wait::blocking(py, delay, self.token.as_ref()),
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
