//! The HTTP helpers: Retry-After parsing, the retryable-status helper and the HTTP
//! classifier, straight from the core.

use std::time::{Duration, SystemTime};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::convert::{repr, secs};

/// The wait a `Retry-After` header value asks for, in seconds; `None` for no hint.
/// `now` (a Unix timestamp or an aware datetime) is what HTTP dates are measured against.
#[pyfunction]
#[pyo3(signature = (value, now=None))]
pub fn parse_retry_after(value: &Bound<'_, PyAny>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    let text: String = if let Ok(s) = value.cast::<PyString>() {
        s.to_cow()?.into_owned()
    } else if let Ok(b) = value.cast::<PyBytes>() {
        String::from_utf8_lossy(b.as_bytes()).into_owned()
    } else {
        return Err(PyTypeError::new_err(format!("parse_retry_after needs a str or bytes, got {}", repr(value))));
    };
    let now = match now {
        None => SystemTime::now(),
        Some(n) if n.is_none() => SystemTime::now(),
        Some(n) => {
            let ts: f64 = if n.hasattr("timestamp")? {
                n.call_method0("timestamp")?.extract()?
            } else {
                n.extract().map_err(|_| {
                    PyTypeError::new_err(format!("now must be a Unix timestamp or a datetime, got {}", repr(n)))
                })?
            };
            let offset = Duration::try_from_secs_f64(ts.abs())
                .map_err(|_| PyValueError::new_err(format!("now is out of range: {ts}")))?;
            let t = if ts >= 0.0 {
                SystemTime::UNIX_EPOCH.checked_add(offset)
            } else {
                SystemTime::UNIX_EPOCH.checked_sub(offset)
            };
            t.ok_or_else(|| PyValueError::new_err(format!("now is out of range: {ts}")))?
        }
    };
    Ok(retryrs::parse_retry_after(&text, now).map(secs))
}

/// Whether a final response's status reports a failure (400 and up): the call's outcome is
/// then `rejected` or `exhausted`, not `success`.
#[pyfunction]
pub fn is_error_status(status: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(retryrs::is_error_status(is_status(status)?))
}

/// Whether an HTTP status is worth retrying (408, 425, 429, 500, 502, 503, 504).
#[pyfunction]
pub fn is_retryable_status(status: &Bound<'_, PyAny>) -> PyResult<bool> {
    if status.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("status must be an int, got a bool"));
    }
    let code: i64 =
        status.extract().map_err(|_| PyTypeError::new_err(format!("status must be an int, got {}", repr(status))))?;
    Ok(u16::try_from(code).is_ok_and(retryrs::is_retryable_status))
}

/// The core's HTTP rule (contract, "HTTP"): "retry", "response" (hand the response back
/// as it is) or "fail" (a network failure that must not be repeated). Give a `status`, or a
/// `failure` of "connect" (never connected: nothing was sent) or "network" (anything
/// else); `retry_methods` / `retry_statuses` replace the default lists.
///
/// `idempotency_key` is the request's `Idempotency-Key` header value, if it has one: a POST
/// or PATCH carrying one is repeatable like an idempotent method unless
/// `honour_idempotency_key` is false.
#[pyfunction]
#[pyo3(signature = (method, status=None, failure=None, retry_methods=None, retry_statuses=None, idempotency_key=None, honour_idempotency_key=true))]
#[allow(clippy::too_many_arguments)]
pub fn classify_http(
    method: &str,
    status: Option<&Bound<'_, PyAny>>,
    failure: Option<&str>,
    retry_methods: Option<Vec<String>>,
    retry_statuses: Option<Vec<i64>>,
    idempotency_key: Option<&str>,
    honour_idempotency_key: bool,
) -> PyResult<&'static str> {
    use retryrs::{classify_request, HttpOutcome, HttpRules};
    let status = match status {
        Some(s) if !s.is_none() => Some(is_status(s)?),
        _ => None,
    };
    let outcome = match (status, failure) {
        (Some(code), None) => HttpOutcome::Status(code),
        (None, Some("connect")) => HttpOutcome::ConnectFailed,
        (None, Some("network")) => HttpOutcome::NetworkFailed,
        (None, Some(other)) => {
            return Err(PyValueError::new_err(format!("failure must be 'connect' or 'network', got {other:?}")))
        }
        _ => return Err(PyValueError::new_err("classify_http needs exactly one of status or failure")),
    };
    let methods: Option<Vec<&str>> = retry_methods.as_ref().map(|l| l.iter().map(String::as_str).collect());
    let statuses: Option<Vec<u16>> = match retry_statuses {
        None => None,
        Some(l) => Some(
            l.into_iter()
                .map(|c| {
                    u16::try_from(c)
                        .map_err(|_| PyValueError::new_err(format!("retry_statuses holds {c}, not an HTTP status")))
                })
                .collect::<PyResult<_>>()?,
        ),
    };
    let rules = HttpRules {
        methods: methods.as_deref(),
        statuses: statuses.as_deref(),
        idempotency_key: honour_idempotency_key,
    };
    Ok(classify_request(method, idempotency_key, outcome, &rules).as_str())
}

fn is_status(status: &Bound<'_, PyAny>) -> PyResult<u16> {
    if status.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("status must be an int, got a bool"));
    }
    let code: i64 =
        status.extract().map_err(|_| PyTypeError::new_err(format!("status must be an int, got {}", repr(status))))?;
    u16::try_from(code).map_err(|_| PyValueError::new_err(format!("status must be an HTTP status, got {code}")))
}

/// The URL with credentials and the values of credential query parameters replaced by
/// `REDACTED` (OpenTelemetry's `url.full` rule and the core's list of credential names),
/// for `retryrs.http`'s events, logs and errors; `extra` adds query keys (ASCII
/// case-insensitive, like the built-in ones).
#[pyfunction]
#[pyo3(signature = (url, extra=None))]
pub fn redact_url(url: &str, extra: Option<Vec<String>>) -> String {
    match extra {
        None => retryrs::redact_url(url),
        Some(keys) => retryrs::redact_url_with(url, &keys),
    }
}

/// Checks the query keys a helper was given to redact (`redact_query=`): a ValueError
/// names a key that could never match a query parameter.
#[pyfunction]
pub fn check_redact_keys(keys: Vec<String>) -> PyResult<()> {
    retryrs::check_redact_keys(&keys).map_err(|e| PyValueError::new_err(format!("redact_query: {e}")))
}

/// Every query key whose value is redacted by default (`retryrs.http.REDACTED_QUERY_KEYS`).
#[pyfunction]
pub fn redacted_query_keys() -> Vec<&'static str> {
    retryrs::REDACTED_QUERY_KEYS.to_vec()
}
