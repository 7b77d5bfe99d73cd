//! The exception classes live in Python (`retryrs._errors`, so they are ordinary,
//! subclassable, picklable Python classes); the native side imports them once, lazily.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

static EXHAUSTED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CANCELLED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn raise(
    py: Python<'_>,
    cell: &PyOnceLock<Py<PyType>>,
    class: &str,
    message: String,
    kwargs: &[(&str, Bound<'_, PyAny>)],
    cause: Option<&Py<pyo3::exceptions::PyBaseException>>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let cls = cell.import(py, "retryrs._errors", class)?;
        let kw = PyDict::new(py);
        for (k, v) in kwargs {
            kw.set_item(k, v)?;
        }
        let exc = cls.call((message,), Some(&kw))?;
        let err = PyErr::from_value(exc);
        if let Some(cause) = cause {
            err.set_cause(py, Some(PyErr::from_value(cause.bind(py).clone().into_any())));
        }
        Ok(err)
    };
    build().unwrap_or_else(|e| e)
}

/// `RetryExhausted(attempts, reason, errors)`, its `__cause__` the last failure.
pub fn exhausted(
    py: Python<'_>,
    name: &str,
    attempts: u32,
    reason: retryrs::ExhaustReason,
    errors: &[Py<pyo3::exceptions::PyBaseException>],
) -> PyErr {
    let last = errors.last();
    let last_text = last.map(|e| crate::convert::repr(e.bind(py))).unwrap_or_default();
    let message = format!("{}: {last_text}", retryrs::GaveUp { name: Some(name), attempts, reason });
    let reason = reason.as_str();
    let errors = match PyTuple::new(py, errors) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let kwargs = [
        ("attempts", attempts.into_pyobject(py).map(|v| v.into_any()).unwrap_or_else(|_| py.None().into_bound(py))),
        ("reason", pyo3::types::PyString::new(py, reason).into_any()),
        ("errors", errors.into_any()),
        ("name", pyo3::types::PyString::new(py, name).into_any()),
    ];
    raise(py, &EXHAUSTED, "RetryExhausted", message, &kwargs, last)
}

/// `RetryCancelled(attempts, errors)`, its `__cause__` the last failure if there was one.
pub fn cancelled(py: Python<'_>, name: &str, attempts: u32, errors: &[Py<pyo3::exceptions::PyBaseException>]) -> PyErr {
    let message = retryrs::CancelledAfter { name: Some(name), attempts }.to_string();
    let tuple = match PyTuple::new(py, errors) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let kwargs = [
        ("attempts", attempts.into_pyobject(py).map(|v| v.into_any()).unwrap_or_else(|_| py.None().into_bound(py))),
        ("errors", tuple.into_any()),
        ("name", pyo3::types::PyString::new(py, name).into_any()),
    ];
    raise(py, &CANCELLED, "RetryCancelled", message, &kwargs, errors.last())
}
