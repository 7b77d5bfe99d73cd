//! The HTTP helpers: Retry-After parsing and the retryable-status helper.

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
            let ts: f64 = if n.hasattr("timestamp")? { n.call_method0("timestamp")?.extract()? } else { n.extract().map_err(|_| PyTypeError::new_err(format!("now must be a Unix timestamp or a datetime, got {}", repr(n))))? };
            let offset = Duration::try_from_secs_f64(ts.abs()).map_err(|_| PyValueError::new_err(format!("now is out of range: {ts}")))?;
            let t = if ts >= 0.0 { SystemTime::UNIX_EPOCH.checked_add(offset) } else { SystemTime::UNIX_EPOCH.checked_sub(offset) };
            t.ok_or_else(|| PyValueError::new_err(format!("now is out of range: {ts}")))?
        }
    };
    Ok(retryrs::parse_retry_after(&text, now).map(secs))
}

/// Whether an HTTP status is worth retrying (408, 425, 429, 500, 502, 503, 504).
#[pyfunction]
pub fn is_retryable_status(status: &Bound<'_, PyAny>) -> PyResult<bool> {
    if status.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("status must be an int, got a bool"));
    }
    let code: i64 = status.extract().map_err(|_| PyTypeError::new_err(format!("status must be an int, got {}", repr(status))))?;
    Ok(u16::try_from(code).is_ok_and(retryrs::is_retryable_status))
}

