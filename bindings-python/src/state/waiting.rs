//! The wait between attempts and what ends it: the next attempt resumed (or the
//! deadline passed during the wait), the call's cancel token, or a signal.

use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use retryrs::{Clock, Resume, Stop};

use super::{now, state_error, CallState};
use crate::errors;
use crate::token::PyCancelToken;
use crate::wait::{self, WaitEnd};

impl CallState {
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
