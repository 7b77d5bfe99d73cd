//! `retryrs.DONT_RETRY`: the answer a `retry_after` hook (or an exception's
//! `retry_after` attribute) gives for a server that said "don't retry" (gRPC A6 pushback:
//! a negative or unparseable `grpc-retry-pushback-ms`). The engine's
//! [`retryrs::Verdict::DontRetry`]: a failure that counts (a budget token, a breaker's
//! failure) after which nothing more is sent.

use pyo3::prelude::*;

/// The type of `retryrs.DONT_RETRY` (one instance).
#[pyclass(frozen, module = "retryrs", name = "DontRetry")]
pub struct DontRetry;

#[pymethods]
impl DontRetry {
    fn __repr__(&self) -> &'static str {
        "retryrs.DONT_RETRY"
    }

    fn __reduce__(&self) -> &'static str {
        // Pickles as the module attribute, so it stays the one instance.
        "DONT_RETRY"
    }
}

/// A server's exact wait (a non-negative `Retryrs-Pushback` or `grpc-retry-pushback-ms`,
/// gRPC A6's rule) as a failure's hint: the next attempt comes exactly this long after,
/// not after the larger of it and the backoff as with Retry-After (the deadline and
/// `max_retry_after` still apply). The HTTP helpers put it on a retried response.
#[pyclass(frozen, module = "retryrs._native", name = "_ExactWait")]
pub struct ExactWait(pub std::time::Duration);

#[pymethods]
impl ExactWait {
    #[new]
    fn new(seconds: f64) -> PyResult<Self> {
        std::time::Duration::try_from_secs_f64(seconds).map(ExactWait).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!("an exact wait is seconds >= 0, got {seconds}"))
        })
    }

    #[getter]
    fn seconds(&self) -> f64 {
        self.0.as_secs_f64()
    }

    fn __repr__(&self) -> String {
        format!("_ExactWait({})", self.0.as_secs_f64())
    }
}

/// Adds `DONT_RETRY` and the exact wait's class to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DontRetry>()?;
    m.add_class::<ExactWait>()?;
    m.add("DONT_RETRY", Bound::new(m.py(), DontRetry)?)
}

/// The exact wait a hint's value asks for, if it is one.
pub fn exact_wait(value: &Bound<'_, PyAny>) -> Option<std::time::Duration> {
    value.cast::<ExactWait>().ok().map(|e| e.get().0)
}

/// Whether a hint's value is `DONT_RETRY`.
pub fn is_dont_retry(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<DontRetry>()
}
