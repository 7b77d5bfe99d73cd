//! Host units in and out: Python speaks seconds (float, int or timedelta), the engine
//! milliseconds and `Duration`s. Only conversion lives here; every rule is the engine's.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

/// Seconds from a float, an int or a `timedelta` (anything with `total_seconds()`).
/// Out-of-range values pass through so the engine's validation can name them.
pub fn seconds(obj: &Bound<'_, PyAny>, knob: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>() {
        return Err(type_error(obj, knob));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(f.value());
    }
    if obj.is_instance_of::<PyInt>() {
        // A huge int is still "a very long time": let validation reject or saturate it.
        return Ok(obj.extract::<f64>().unwrap_or(f64::INFINITY));
    }
    if obj.hasattr(pyo3::intern!(obj.py(), "total_seconds"))? {
        return obj.call_method0(pyo3::intern!(obj.py(), "total_seconds"))?.extract::<f64>();
    }
    Err(type_error(obj, knob))
}

fn type_error(obj: &Bound<'_, PyAny>, knob: &str) -> PyErr {
    let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("{knob} must be seconds as a float, an int or a timedelta, got {ty}"))
}

/// Seconds to the engine's float milliseconds (the core's conversion).
pub fn ms(secs: f64) -> f64 {
    retryrs::units::ms_from_secs(secs)
}

/// A duration as Python seconds.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Python `repr()` of a value, for error messages.
pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".into())
}

/// A float as Python prints it (`2.0`, not Rust's `2`), for reprs.
pub fn pyfloat(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x}")
    }
}
