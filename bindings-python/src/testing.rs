//! The virtual-time switch behind `retryrs.testing`: one process-wide switch in the
//! engine, shared with every host.

use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use retryrs::{testing, Clock};

use crate::convert::{repr, secs};

#[pyfunction]
pub fn _testing_enable() {
    testing::enable();
}

#[pyfunction]
pub fn _testing_disable() {
    testing::disable();
}

#[pyfunction]
pub fn _testing_is_on() -> bool {
    testing::is_on()
}

fn clock() -> PyResult<retryrs::VirtualClock> {
    testing::clock().ok_or_else(|| {
        PyRuntimeError::new_err(
            "virtual time is off: use retryrs.testing.enable() or `with retryrs.testing.virtual_time():`",
        )
    })
}

/// Moves virtual time forward (an attempt that "takes" time).
#[pyfunction]
pub fn _testing_advance(seconds: &Bound<'_, PyAny>) -> PyResult<()> {
    let s = crate::convert::seconds(seconds, "seconds")?;
    let d = Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("advance needs finite seconds >= 0, got {}", repr(seconds))))?;
    clock()?.advance(d);
    Ok(())
}

/// Virtual now, in seconds.
#[pyfunction]
pub fn _testing_now() -> PyResult<f64> {
    Ok(secs(clock()?.now()))
}

/// Virtual time until `__exit__`, then whatever was there before.
#[pyclass(module = "retryrs.testing", name = "VirtualTime")]
pub struct VirtualTime {
    scope: Mutex<Option<testing::Scope>>,
}

#[pymethods]
impl VirtualTime {
    #[new]
    fn new() -> Self {
        VirtualTime { scope: Mutex::new(None) }
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        {
            let this = slf.borrow();
            let mut scope = this.scope.lock().unwrap_or_else(|e| e.into_inner());
            if scope.is_some() {
                return Err(PyRuntimeError::new_err("this virtual_time() is already entered"));
            }
            *scope = Some(testing::scoped());
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.scope.lock().unwrap_or_else(|e| e.into_inner()).take();
        false
    }

    /// Moves this scope's virtual clock forward.
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        _testing_advance(seconds)
    }

    /// This scope's virtual now, in seconds.
    fn now(&self) -> PyResult<f64> {
        match &*self.scope.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(s) => Ok(secs(s.clock().now())),
            None => Err(PyRuntimeError::new_err("virtual_time() is not entered")),
        }
    }
}
