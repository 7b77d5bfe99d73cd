//! The Retrier's keyword arguments: Python types and units in, a validated engine
//! [`Policy`] plus the host host out. Validation itself is the engine's
//! (`PolicyBuilder::build`); this module only phrases its verdicts in Python's names and
//! units, quoting the value exactly as the caller wrote it.

use std::str::FromStr;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple, PyType};
use retryrs::{Jitter, Policy, PolicyBuilder, PolicyError};

use crate::budget::PyRetryBudget;
use crate::convert::{ms, repr, seconds};
use crate::host_policy::{HostPolicy, RetryOn};

const KNOWN: [&str; 13] = [
    "retry_on",
    "max_attempts",
    "initial_delay",
    "multiplier",
    "max_delay",
    "jitter",
    "deadline",
    "retry_after",
    "on_event",
    "budget",
    "name",
    "seed",
    "attempt_timeout",
];

/// Everything a Retrier holds, built from its keyword arguments.
pub fn parse(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<HostPolicy> {
    let get = |key: &str| -> Option<Bound<'_, PyAny>> { options.and_then(|o| o.get_item(key).ok().flatten()) };
    if let Some(options) = options {
        for key in options.keys() {
            let key: String = key.extract()?;
            if !KNOWN.contains(&key.as_str()) {
                return Err(PyTypeError::new_err(format!(
                    "Retrier() got an unexpected keyword argument '{key}' (known: {})",
                    KNOWN.join(", ")
                )));
            }
        }
    }
    // Present and not None.
    let some = |key: &str| get(key).filter(|v| !v.is_none());

    let mut builder = Policy::builder();
    if let Some(v) = some("max_attempts") {
        builder = builder.max_attempts(attempts(&v)?);
    }
    if let Some(v) = some("initial_delay") {
        builder = builder.initial_delay_ms(ms(seconds(&v, "initial_delay")?));
    }
    if let Some(v) = some("multiplier") {
        builder = builder.multiplier(number(&v, "multiplier")?);
    }
    if let Some(v) = some("max_delay") {
        builder = builder.max_delay_ms(ms(seconds(&v, "max_delay")?));
    }
    if let Some(v) = some("jitter") {
        let text = v.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!("jitter must be a str such as \"full\" or \"proportional(0.2)\", got {}", repr(&v)))
        })?;
        builder = builder.jitter(Jitter::from_str(&text.to_cow()?).map_err(|e| policy_error(&e, options))?);
    }
    // A missing deadline is the default; an explicit None turns it off.
    match get("deadline") {
        None => {}
        Some(v) if v.is_none() => builder = builder.deadline_ms(None),
        Some(v) => builder = builder.deadline_ms(Some(ms(seconds(&v, "deadline")?))),
    }
    if let Some(v) = some("name") {
        let name = v.cast::<PyString>().map_err(|_| PyTypeError::new_err(format!("name must be a str, got {}", repr(&v))))?;
        builder = builder.name(name.to_cow()?);
    }
    if let Some(v) = some("seed") {
        builder = builder.seed(Some(seed(&v)?));
    }
    let budget = match some("budget") {
        None => None,
        Some(v) => Some(v.cast::<PyRetryBudget>().map_err(|_| {
            PyTypeError::new_err(format!("budget must be a retryrs.RetryBudget, got {}", repr(&v)))
        })?.clone().unbind()),
    };
    if let Some(b) = &budget {
        builder = builder.budget(Some(b.get().inner.clone()));
    }
    let policy = build(builder, options)?;

    let retry_on = match some("retry_on") {
        None => RetryOn::Classes(py.get_type::<pyo3::exceptions::PyOSError>().into_any().unbind()),
        Some(v) => retry_on(&v)?,
    };
    let retry_after = callable_or_none(some("retry_after"), "retry_after", "a callable exc -> seconds | timedelta | None")?;
    let on_event = callable_or_none(some("on_event"), "on_event", "a callable event -> None")?;
    let attempt_timeout = match some("attempt_timeout") {
        None => None,
        Some(v) => {
            let s = seconds(&v, "attempt_timeout")?;
            if !(s.is_finite() && s > 0.0) {
                return Err(PyValueError::new_err(format!("attempt_timeout must be finite and > 0 seconds, got {}", repr(&v))));
            }
            Some(s)
        }
    };
    Ok(HostPolicy::new(py, Arc::new(policy), retry_on, retry_after, on_event, budget, attempt_timeout))
}

fn build(builder: PolicyBuilder, options: Option<&Bound<'_, PyDict>>) -> PyResult<Policy> {
    builder.build().map_err(|e| policy_error(&e, options))
}

/// The engine's verdict on a knob, with the value quoted as the caller wrote it (seconds,
/// not the engine's milliseconds).
fn policy_error(e: &PolicyError, options: Option<&Bound<'_, PyDict>>) -> PyErr {
    let given = |knob: &str| options.and_then(|o| o.get_item(knob).ok().flatten()).map(|v| repr(&v));
    let message = match (e.knob, given(e.knob)) {
        ("max_delay", Some(max)) if e.requirement.contains("initial_delay") => {
            let initial = given("initial_delay").unwrap_or_else(|| "0.2 (the default)".into());
            format!("max_delay must be >= initial_delay, got max_delay={max} and initial_delay={initial}")
        }
        ("jitter", _) => e.to_string(),
        (knob, Some(value)) => format!("{knob} must be {}, got {value}", e.requirement),
        _ => e.to_string(),
    };
    PyValueError::new_err(message)
}

fn attempts(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("max_attempts must be an int, got {}", repr(v))));
    }
    // Negative or huge values go to validation, which names them (quoting the original).
    Ok(match v.extract::<i128>() {
        Ok(n) if n < 0 => 0,
        Ok(n) => u64::try_from(n).unwrap_or(u64::MAX),
        Err(_) => u64::MAX,
    })
}

fn number(v: &Bound<'_, PyAny>, knob: &str) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{knob} must be a number, got {}", repr(v))));
    }
    v.extract::<f64>().map_err(|_| PyTypeError::new_err(format!("{knob} must be a number, got {}", repr(v))))
}

fn seed(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("seed must be an int, got {}", repr(v))));
    }
    v.extract::<u64>().map_err(|_| PyValueError::new_err(format!("seed must be an int in [0, 2**64), got {}", repr(v))))
}

/// An exception class, a tuple of them, or a predicate.
fn retry_on(v: &Bound<'_, PyAny>) -> PyResult<RetryOn> {
    let is_exc_class = |t: &Bound<'_, PyAny>| {
        t.cast::<PyType>().is_ok_and(|t| t.is_subclass_of::<pyo3::exceptions::PyBaseException>().unwrap_or(false))
    };
    if is_exc_class(v) {
        return Ok(RetryOn::Classes(v.clone().unbind()));
    }
    if let Ok(t) = v.cast::<PyTuple>() {
        if t.iter().all(|c| is_exc_class(&c)) {
            return Ok(RetryOn::Classes(v.clone().unbind()));
        }
    } else if v.is_callable() {
        return Ok(RetryOn::Predicate(v.clone().unbind()));
    }
    Err(PyTypeError::new_err(format!(
        "retry_on must be an exception class, a tuple of them, or a callable exc -> bool, got {}",
        repr(v)
    )))
}

fn callable_or_none(v: Option<Bound<'_, PyAny>>, knob: &str, what: &str) -> PyResult<Option<Py<PyAny>>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_callable() => Ok(Some(v.unbind())),
        Some(v) => Err(PyTypeError::new_err(format!("{knob} must be {what}, got {}", repr(&v)))),
    }
}
