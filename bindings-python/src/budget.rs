//! `RetryBudget`: the engine's shared token bucket, handed to any number of Retriers.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};
use retryrs::RetryBudget;

/// A token bucket shared by every call of every Retrier that holds it: it starts full at
/// `max_tokens`; each transient failure costs one token; each success adds `token_ratio`;
/// a retry is allowed only while tokens > max_tokens / 2.
#[pyclass(frozen, module = "retryrs", name = "RetryBudget")]
pub struct PyRetryBudget {
    pub inner: Arc<RetryBudget>,
}

#[pymethods]
impl PyRetryBudget {
    #[new]
    #[pyo3(signature = (max_tokens=None, token_ratio=None), text_signature = "(max_tokens=10.0, token_ratio=0.1)")]
    fn new(max_tokens: Option<&Bound<'_, PyAny>>, token_ratio: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let max_tokens = number(max_tokens, "max_tokens", 10.0)?;
        let token_ratio = number(token_ratio, "token_ratio", 0.1)?;
        let inner = RetryBudget::new(max_tokens, token_ratio).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyRetryBudget { inner: Arc::new(inner) })
    }
    /// Tokens left now.
    #[getter]
    fn tokens(&self) -> f64 {
        self.inner.tokens()
    }
    #[getter]
    fn max_tokens(&self) -> f64 {
        self.inner.max_tokens()
    }
    #[getter]
    fn token_ratio(&self) -> f64 {
        self.inner.token_ratio()
    }
    fn __repr__(&self) -> String {
        format!(
            "RetryBudget(max_tokens={}, token_ratio={}, tokens={})",
            self.inner.max_tokens(),
            self.inner.token_ratio(),
            self.inner.tokens()
        )
    }
}

/// An int or float argument (not a bool, not a str), named when it is anything else.
fn number(v: Option<&Bound<'_, PyAny>>, name: &str, default: f64) -> PyResult<f64> {
    let Some(v) = v else { return Ok(default) };
    if !v.is_instance_of::<PyBool>() && (v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>()) {
        return Ok(v.extract::<f64>().unwrap_or(f64::INFINITY));
    }
    Err(PyTypeError::new_err(format!(
        "RetryBudget {name} must be a number (int or float), got {}",
        crate::convert::repr(v)
    )))
}
