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

/// Adds `DONT_RETRY` to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DontRetry>()?;
    m.add("DONT_RETRY", Bound::new(m.py(), DontRetry)?)
}

/// Whether a hint's value is `DONT_RETRY`.
pub fn is_dont_retry(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<DontRetry>()
}
