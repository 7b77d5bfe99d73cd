//! One call driven step by step from Python code: the native half of both the asyncio
//! driver (`retryrs/_aio.py`, which does the awaiting) and the loop form
//! (`retryrs/_loop.py`, `for attempt in retrier:`). It holds the call's engine state and
//! answers each decision; the Python side does the waiting.

use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};

use pyo3::types::PyTuple;

use crate::attempt::AttemptInfo;
use crate::state::{CallState, Failed};
use crate::token::PyCancelToken;

#[pyclass(module = "retryrs._native", name = "SteppedCall")]
pub struct SteppedCall {
    state: CallState,
    token: Option<Py<PyCancelToken>>,
}

impl SteppedCall {
    /// The seconds to await before the next attempt, 0.0 when there is nothing to await
    /// (a zero delay, or virtual time, where the wait has already happened).
    fn after_failure(&mut self, py: Python<'_>, delay: std::time::Duration) -> PyResult<Py<PyAny>> {
        if self.state.clock.is_some() || delay.is_zero() {
            self.state.wait_blocking(py, delay, self.token.as_ref())?;
            return Ok(0.0f64.into_pyobject(py)?.into_any().unbind());
        }
        Ok(delay.as_secs_f64().into_pyobject(py)?.into_any().unbind())
    }

    pub fn new(state: CallState, token: Option<Py<PyCancelToken>>) -> Self {
        SteppedCall { state, token }
    }
}

#[pymethods]
impl SteppedCall {
    /// An attempt raised `exc`. Returns the seconds to await before the next attempt, 0.0
    /// when there is nothing to await (a zero delay, or virtual time, where the wait has
    /// already happened); raises whatever ends the call.
    ///
    /// `answers` (async drivers only) are the hooks' awaited answers so far: when a hook
    /// answers with an awaitable, that awaitable is returned instead of a float, and the
    /// driver calls again with its result appended. Without `answers` (the sync loop
    /// form), such a hook is a TypeError naming it.
    ///
    /// `timed_out`: the driver cut the attempt at its bound and `exc` is the
    /// AttemptTimeout it raised for that: a quota budget prices the retry as a timeout's.
    #[pyo3(signature = (exc, answers=None, timed_out=false))]
    fn failed(
        &mut self,
        py: Python<'_>,
        exc: Bound<'_, PyAny>,
        answers: Option<Bound<'_, PyTuple>>,
        timed_out: bool,
    ) -> PyResult<Py<PyAny>> {
        let err = PyErr::from_value(exc);
        let delay = match self.state.failed_async(py, err, answers.as_ref(), timed_out)? {
            Failed::Wait(delay) => delay,
            Failed::Await(pending) => return Ok(pending),
        };
        self.after_failure(py, delay)
    }

    /// The attempt returned `value` and `retry_on_result` rejected it: as `failed`, for a
    /// value (the retry_after hook, if any, gets the value).
    #[pyo3(signature = (value, answers=None))]
    fn rejected(
        &mut self,
        py: Python<'_>,
        value: Bound<'_, PyAny>,
        answers: Option<Bound<'_, PyTuple>>,
    ) -> PyResult<Py<PyAny>> {
        let delay = match self.state.rejected_value(py, value, answers.as_ref())? {
            Failed::Wait(delay) => delay,
            Failed::Await(pending) => return Ok(pending),
        };
        self.after_failure(py, delay)
    }

    /// A blocking wait (the `for attempt in retrier:` form): GIL released, woken by the
    /// token, Ctrl-C honoured.
    fn wait(&mut self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        let delay = std::time::Duration::try_from_secs_f64(seconds).unwrap_or(std::time::Duration::ZERO);
        self.state.wait_blocking(py, delay, self.token.as_ref())
    }

    /// The wait is over: raises RetryExhausted if the deadline passed during it.
    fn resume(&mut self, py: Python<'_>) -> PyResult<()> {
        self.state.resume(py)
    }

    /// The attempt starting now, after `resume` (`retryrs.current_attempt()`, with the
    /// engine's bound on it).
    fn current(&self) -> AttemptInfo {
        AttemptInfo::new(self.state.frame(), self.state.started_at())
    }

    fn succeeded(&mut self, py: Python<'_>) -> PyResult<()> {
        self.state.succeeded(py)
    }

    /// The token fired during the wait: raises RetryCancelled.
    fn cancelled(&mut self, py: Python<'_>) -> PyResult<()> {
        Err(self.state.cancelled(py))
    }

    /// The wait was interrupted (task cancelled): records the cancel; the caller re-raises.
    fn interrupted(&mut self, py: Python<'_>) {
        self.state.interrupted(py)
    }

    // The errors' tracebacks reference the driver's frames, which reference this object:
    // the cycle collector must see these edges. (The host policy is shared through an Arc with
    // the Retrier that owns them, so they are not this object's to report.)
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for e in &self.state.errors {
            visit.call(&e.obj)?;
        }
        if let Some(t) = &self.token {
            visit.call(t)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.state.errors.clear();
        self.token = None;
    }

    /// True while the wait / before_sleep hooks are being asked (an awaited one that raises
    /// is handed back wrapped in `retryrs._errors._Raised`).
    #[getter]
    fn _hooking(&self) -> bool {
        self.state.hooking()
    }

    /// Seconds left before the call's deadline, for the asyncio driver to bound an
    /// awaited wait / before_sleep hook with; None with no deadline, and under virtual
    /// time (where a hook's real time is not the call's).
    #[getter]
    fn _deadline_left(&self) -> Option<f64> {
        if self.state.clock.is_some() {
            return None;
        }
        let end = self.state.started_at() + self.state.host.policy.deadline()?;
        Some(end.saturating_sub(crate::state::now(&None)).as_secs_f64())
    }

    #[getter]
    fn attempt(&self) -> u32 {
        self.state.attempt()
    }

    #[getter]
    fn token(&self, py: Python<'_>) -> Option<Py<PyCancelToken>> {
        self.token.as_ref().map(|t| t.clone_ref(py))
    }
}
