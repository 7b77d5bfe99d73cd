//! The exception classes live in Python (`retryrs._errors`, so they are ordinary,
//! subclassable, picklable Python classes); the native side imports them once, lazily.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::state::Kept;

static EXHAUSTED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CANCELLED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn raise(
    py: Python<'_>,
    cell: &PyOnceLock<Py<PyType>>,
    class: &str,
    message: String,
    kwargs: &[(&str, Bound<'_, PyAny>)],
    cause: Option<&Py<PyAny>>,
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
    // If the error itself cannot be built (a recursion limit, memory), the failure that
    // ends the call is still reachable: it becomes the cause of the error raised instead.
    build().unwrap_or_else(|e| {
        if let Some(cause) = cause {
            e.set_cause(py, Some(PyErr::from_value(cause.bind(py).clone().into_any())));
        }
        e
    })
}

/// The errors among the kept failures (in order), the last failure if it is an error
/// (the cause), and the last failure if it is a rejected value (`result`).
/// (errors, cause, result) of [`split`].
type Split<'py, 'k> = (Bound<'py, PyTuple>, Option<&'k Py<PyAny>>, Bound<'py, PyAny>);

fn split<'py, 'k>(py: Python<'py>, failures: &'k [Kept]) -> PyResult<Split<'py, 'k>> {
    let errors: Vec<_> = failures.iter().filter(|k| !k.is_value).map(|k| k.obj.bind(py)).collect();
    let errors = PyTuple::new(py, errors)?;
    let cause = failures.last().filter(|k| !k.is_value).map(|k| &k.obj);
    let result =
        failures.last().filter(|k| k.is_value).map_or_else(|| py.None().into_bound(py), |k| k.obj.bind(py).clone());
    Ok((errors, cause, result))
}

/// `RetryExhausted(attempts, reason, errors, result)`, its `__cause__` the last failure
/// when that was an error; `result` the last failure when that was a rejected value.
pub fn exhausted(
    py: Python<'_>,
    name: &str,
    attempts: u32,
    reason: retryrs::ExhaustReason,
    failures: &[Kept],
    hint: Option<retryrs::DeadlineHint>,
) -> PyErr {
    let last_text = match failures.last() {
        Some(k) if k.is_value => format!("rejected value {}", crate::convert::repr(k.obj.bind(py))),
        Some(k) => crate::convert::repr(k.obj.bind(py)),
        None => String::new(),
    };
    // The core's wording in Python's names (the keyword arguments; seconds).
    let gave_up = retryrs::GaveUp { name: Some(name), attempts, reason }.render(retryrs::Spelling::Python);
    // A call the breaker refused has no failure to show.
    let mut message = if failures.is_empty() { gave_up } else { format!("{gave_up}: {last_text}") };
    // Out of time with more attempts allowed than the deadline can hold: say which knobs.
    if let (retryrs::ExhaustReason::Deadline, Some(hint)) = (reason, hint) {
        message.push_str(&format!("; {}", hint.render(retryrs::Spelling::Python)));
    }
    let reason = reason.as_str();
    let (errors, cause, result) = match split(py, failures) {
        Ok(parts) => parts,
        Err(e) => return e,
    };
    let kwargs = [
        ("attempts", attempts.into_pyobject(py).map(|v| v.into_any()).unwrap_or_else(|_| py.None().into_bound(py))),
        ("reason", pyo3::types::PyString::new(py, reason).into_any()),
        ("errors", errors.into_any()),
        ("name", pyo3::types::PyString::new(py, name).into_any()),
        ("result", result),
    ];
    raise(py, &EXHAUSTED, "RetryExhausted", message, &kwargs, cause)
}

static RERAISE: crate::preload::Lookup = crate::preload::Lookup::new("retryrs._errors", "_reraise");

/// Looks up the error classes and the reraise helper now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    EXHAUSTED.import(py, "retryrs._errors", "RetryExhausted")?;
    CANCELLED.import(py, "retryrs._errors", "RetryCancelled")?;
    RERAISE.get(py).map(drop)
}

/// `reraise=True`: the last failure itself when it was an error, the `RetryExhausted` that
/// would have been raised attached as its `retryrs_history` (and, on 3.11+, its message
/// as a note); a last failure that was a rejected value has no error to raise, so that
/// still ends in `RetryExhausted`.
pub fn reraised(
    py: Python<'_>,
    name: &str,
    attempts: u32,
    reason: retryrs::ExhaustReason,
    failures: &[Kept],
    hint: Option<retryrs::DeadlineHint>,
) -> PyErr {
    let exhausted = exhausted(py, name, attempts, reason, failures, hint);
    let Some(last) = failures.last().filter(|k| !k.is_value) else { return exhausted };
    let attach = RERAISE.get(py).and_then(|f| f.call1((last.obj.bind(py), exhausted.value(py))));
    match attach {
        Ok(err) => PyErr::from_value(err),
        // (the original error is raised even if the history could not be attached)
        Err(_) => PyErr::from_value(last.obj.bind(py).clone()),
    }
}

/// A call the circuit breaker refused: `RetryExhausted(reason="circuit_open")`, no
/// attempt made, with the breaker's `breaker_state` and `retry_in` (seconds before a probe
/// may go) as attributes.
pub fn circuit_open(py: Python<'_>, name: &str, state: &str, retry_in: std::time::Duration) -> PyErr {
    let err = exhausted(py, name, 0, retryrs::ExhaustReason::CircuitOpen, &[], None);
    let value = err.value(py);
    let set = value.setattr("breaker_state", state).and_then(|_| value.setattr("retry_in", retry_in.as_secs_f64()));
    match set {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// `RetryCancelled(attempts, errors, result)`, its `__cause__` the last failure if there
/// was one and it was an error.
pub fn cancelled(py: Python<'_>, name: &str, attempts: u32, failures: &[Kept]) -> PyErr {
    let message = retryrs::CancelledAfter { name: Some(name), attempts }.to_string();
    let (errors, cause, result) = match split(py, failures) {
        Ok(parts) => parts,
        Err(e) => return e,
    };
    let kwargs = [
        ("attempts", attempts.into_pyobject(py).map(|v| v.into_any()).unwrap_or_else(|_| py.None().into_bound(py))),
        ("errors", errors.into_any()),
        ("name", pyo3::types::PyString::new(py, name).into_any()),
        ("result", result),
    ];
    raise(py, &CANCELLED, "RetryCancelled", message, &kwargs, cause)
}
