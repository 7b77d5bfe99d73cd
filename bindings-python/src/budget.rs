//! `RetryBudget`: the engine's shared token bucket, handed to any number of Retriers.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};
use retryrs::{BudgetKind, QuotaBudget, RatioBudget, RetryBudget};

/// A token bucket shared by every call of every Retrier that holds it: it starts full at
/// `max_tokens`; each transient failure costs one token; each success adds `token_ratio`;
/// a retry is allowed only while tokens > max_tokens / 2. ``RetryBudget.quota()`` and
/// ``RetryBudget.ratio()`` make the AWS SDKs' and Finagle's budgets instead.
///
/// Parameters
/// ----------
/// max_tokens (float, default 10.0): the bucket's size (> 0, at most 1e12; 3 decimals
///     kept, truncated).
/// token_ratio (float, default 0.1): what each success adds back (> 0, at most
///     max_tokens; 3 decimals kept, truncated).
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
        let inner = RetryBudget::new(max_tokens, token_ratio)
            .map_err(|e| PyValueError::new_err(e.render(retryrs::Spelling::Python)))?;
        Ok(PyRetryBudget { inner: Arc::new(inner) })
    }
    /// The AWS SDKs' standard retry quota (kind "quota"): `capacity` that starts full; a
    /// retry takes `retry_cost` while what is left covers it; a success gives back the
    /// cost of the retry that led to it, or `no_retry_increment`. Every default is the SDKs'.
    ///
    /// Parameters
    /// ----------
    /// capacity (int, default 500): the retry cost the quota holds when full (0 to 1e12).
    /// retry_cost (int, default 5): what a retry after a failure takes (1 to 1e12).
    /// timeout_retry_cost (int, default 10): what a retry after a timed-out attempt takes
    ///     (1 to 1e12).
    /// no_retry_increment (int, default 1): what a success on the first attempt gives
    ///     back (0 to 1e12).
    #[staticmethod]
    #[pyo3(signature = (capacity=500, retry_cost=5, timeout_retry_cost=10, no_retry_increment=1))]
    fn quota(capacity: u64, retry_cost: u64, timeout_retry_cost: u64, no_retry_increment: u64) -> PyResult<Self> {
        let q = QuotaBudget::new(capacity, retry_cost, timeout_retry_cost, no_retry_increment)
            .map_err(|e| PyValueError::new_err(format!("RetryBudget.quota {}", e.render(retryrs::Spelling::Python))))?;
        Ok(PyRetryBudget { inner: Arc::new(q.into()) })
    }
    /// Finagle's RetryBudget (kind "ratio"): every call deposits, every retry withdraws,
    /// both expiring after `ttl` seconds (1 to 60), so about `percent_can_retry` of the
    /// calls may be retried, on top of `min_retries_per_sec`. Every default is Finagle's.
    ///
    /// Parameters
    /// ----------
    /// ttl (float, default 10.0): how long a deposit or withdrawal counts, in seconds (1
    ///     to 60).
    /// min_retries_per_sec (int, default 10): retries allowed each second whatever the
    ///     traffic (0 to 2147483647).
    /// percent_can_retry (float, default 0.2): retries allowed per call, as a fraction
    ///     (0 to 1000).
    #[staticmethod]
    #[pyo3(signature = (ttl=10.0, min_retries_per_sec=10, percent_can_retry=0.2))]
    fn ratio(ttl: f64, min_retries_per_sec: u32, percent_can_retry: f64) -> PyResult<Self> {
        if !(ttl.is_finite() && ttl >= 0.0) {
            return Err(PyValueError::new_err(format!("RetryBudget.ratio ttl must be in [1 s, 60 s], got {ttl}")));
        }
        let r = RatioBudget::new(
            std::time::Duration::from_secs_f64(ttl.min(1e6)),
            min_retries_per_sec,
            percent_can_retry,
            std::time::Duration::ZERO,
        )
        .map_err(|e| PyValueError::new_err(format!("RetryBudget.ratio {}", e.render(retryrs::Spelling::Python))))?;
        Ok(PyRetryBudget { inner: Arc::new(r.into()) })
    }
    /// "token_bucket", "quota" or "ratio".
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind().as_str()
    }
    /// What is left now: a token bucket's tokens, a quota's capacity left, a ratio
    /// budget's retries (as of the last call it saw).
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
    /// Pickles by its parameters: the process that unpickles gets a fresh, full budget
    /// (a budget is shared state: it cannot be shared across processes).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, pyo3::types::PyTuple>)> {
        let py = slf.py();
        let b = &slf.get().inner;
        let class = py.get_type::<PyRetryBudget>().into_any();
        if let Some(r) = b.as_ratio() {
            let args = (r.ttl().as_secs_f64(), r.min_retries_per_sec(), r.percent_can_retry());
            return Ok((class.getattr("ratio")?, args.into_pyobject(py)?));
        }
        if b.kind() != BudgetKind::TokenBucket {
            return Err(PyTypeError::new_err(format!(
                "a RetryBudget of kind {:?} cannot be pickled; make it anew where it is used",
                b.kind().as_str()
            )));
        }
        Ok((class, (b.max_tokens(), b.token_ratio()).into_pyobject(py)?))
    }

    fn __repr__(&self) -> String {
        if self.inner.kind() != BudgetKind::TokenBucket {
            return format!("RetryBudget(kind={:?}, tokens={})", self.inner.kind().as_str(), self.inner.tokens());
        }
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
