//! The frozen event object a listener receives.

use pyo3::prelude::*;
use pyo3::types::PyString;
use retryrs::Event;

use crate::convert::secs;

/// One event of one call: what happened, to which retrier, at which attempt, when (seconds
/// since the call began), and what applies: the error, the delay (retrying), the reason
/// (exhausted).
#[pyclass(frozen, module = "retryrs", name = "Event")]
pub struct PyEvent {
    kind: &'static str,
    name: Py<PyString>,
    attempt: u32,
    retries_left: u32,
    elapsed: f64,
    error: Option<Py<PyAny>>,
    result: Option<Py<PyAny>>,
    delay: Option<f64>,
    reason: Option<&'static str>,
}

impl PyEvent {
    /// `subject`: the failure the event is about, `(error, false)` or `(rejected value, true)`.
    pub fn new(py: Python<'_>, name: &Py<PyString>, e: &Event<'_>, subject: Option<(&Bound<'_, PyAny>, bool)>) -> Self {
        // Only the kinds the core says carry the failure get one.
        let subject = subject.filter(|_| e.kind.carries_error());
        PyEvent {
            kind: e.kind.as_str(),
            name: name.clone_ref(py),
            attempt: e.attempt,
            retries_left: e.retries_left,
            elapsed: secs(e.elapsed),
            error: subject.filter(|(_, v)| !v).map(|(o, _)| o.clone().unbind()),
            result: subject.filter(|(_, v)| *v).map(|(o, _)| o.clone().unbind()),
            delay: e.delay.map(secs),
            reason: e.reason.map(|r| r.as_str()),
        }
    }
}

#[pymethods]
impl PyEvent {
    /// "attempt_failed", "retrying", "success", "rejected", "exhausted" or "cancelled".
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }
    /// The retrier's name.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyString> {
        self.name.clone_ref(py)
    }
    /// The attempt the event is about (1-based; 0 for a call cancelled before it began).
    #[getter]
    fn attempt(&self) -> u32 {
        self.attempt
    }
    /// Seconds since the call began.
    /// The retries the attempt limit still allows after this attempt (a bound, not a
    /// promise: the deadline, the budget or a hook may end the call sooner).
    #[getter]
    fn retries_left(&self) -> u32 {
        self.retries_left
    }

    #[getter]
    fn elapsed(&self) -> f64 {
        self.elapsed
    }
    /// The failure this event is about, if any.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.error.as_ref().map(|e| e.clone_ref(py))
    }
    /// The value the result predicate rejected, when that is the failure the event is
    /// about (then `error` is None).
    #[getter]
    fn result(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.result.as_ref().map(|e| e.clone_ref(py))
    }
    /// The wait about to start, in seconds (retrying only).
    #[getter]
    fn delay(&self) -> Option<f64> {
        self.delay
    }
    /// "attempts", "deadline", "budget", "retry_after", "circuit_open" or "stopped"
    /// (exhausted only).
    #[getter]
    fn reason(&self) -> Option<&'static str> {
        self.reason
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let mut s = format!(
            "Event(kind='{}', name={}, attempt={}, elapsed={}",
            self.kind,
            self.name.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            self.attempt,
            crate::convert::pyfloat(self.elapsed)
        );
        if let Some(d) = self.delay {
            s.push_str(&format!(", delay={}", crate::convert::pyfloat(d)));
        }
        if let Some(r) = self.reason {
            s.push_str(&format!(", reason='{r}'"));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!(", error={}", crate::convert::repr(e.bind(py))));
        }
        if let Some(v) = &self.result {
            s.push_str(&format!(", result={}", crate::convert::repr(v.bind(py))));
        }
        s.push(')');
        s
    }
}
