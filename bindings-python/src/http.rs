//! The core's HTTP rules for `retryrs.http` (the requests adapter and httpx transports):
//! which outcomes are transient, and how a URL is redacted. The Python side maps its
//! client's exceptions to "connect" or "network" and asks here; it decides nothing.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use retryrs::HttpOutcome;

use crate::convert::repr;

/// Whether an HTTP outcome is worth another attempt: `outcome` is a status (int),
/// `"connect"` (no connection was made) or `"network"` (any other network failure).
/// `methods` and `statuses` replace the idempotent methods and the retryable statuses.
#[pyfunction]
#[pyo3(signature = (method, outcome, methods=None, statuses=None))]
pub fn _http_transient(
    method: &str,
    outcome: &Bound<'_, PyAny>,
    methods: Option<Vec<String>>,
    statuses: Option<Vec<u16>>,
) -> PyResult<bool> {
    let outcome = if let Ok(kind) = outcome.extract::<String>() {
        match kind.as_str() {
            "connect" => HttpOutcome::ConnectFailed,
            "network" => HttpOutcome::NetworkFailed,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "outcome must be a status, 'connect' or 'network', got {}",
                    repr(outcome)
                )))
            }
        }
    } else {
        let status: u16 = outcome.extract().map_err(|_| {
            PyTypeError::new_err(format!("outcome must be a status, 'connect' or 'network', got {}", repr(outcome)))
        })?;
        HttpOutcome::Status(status)
    };
    let methods: Option<Vec<&str>> = methods.as_ref().map(|m| m.iter().map(String::as_str).collect());
    Ok(retryrs::http_transient(method, outcome, methods.as_deref(), statuses.as_deref()))
}

/// The URL with credentials and signing query values replaced by `REDACTED`
/// (OpenTelemetry's `url.full` rule).
#[pyfunction]
pub fn redact_url(url: &str) -> String {
    retryrs::redact_url(url)
}
