//! `RetryBudget`: the engine's shared token bucket, handed to any number of Retriers.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
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
    #[pyo3(signature = (max_tokens=10.0, token_ratio=0.1))]
    fn new(max_tokens: f64, token_ratio: f64) -> PyResult<Self> {
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
