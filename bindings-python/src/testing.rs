//! The virtual-time switches behind `retryrs.testing`: scopes that belong to a
//! `contextvars` context (a thread, an asyncio task and the tasks it starts), kept in one
//! context variable as a chain of [`VirtualScope`]s, and the core's process-wide switch,
//! asked for by name (`scope="process"`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use retryrs::testing::{self, HostHold, ProcessScope};
use retryrs::{Clock, VirtualClock};

use crate::convert::{repr, secs};

/// The context variable holding the newest scope entered in this context (or None).
static VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Creates the context variable and adds it to the module as `_virtual_time_var`.
pub fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let var = VAR.get_or_try_init(py, || {
        let contextvars = py.import("contextvars")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("default", py.None())?;
        Ok::<_, PyErr>(contextvars.getattr("ContextVar")?.call(("retryrs_virtual_time",), Some(&kwargs))?.unbind())
    })?;
    m.add("_virtual_time_var", var.clone_ref(py))
}

/// The clock a call starting now, in this context, runs on: the newest open scope of this
/// context, else the process-wide one, else none (real time). Outside any virtual time
/// this is the core's one relaxed atomic load.
pub fn clock(py: Python<'_>) -> Option<VirtualClock> {
    if !testing::any_on() {
        return None;
    }
    context_clock(py).or_else(testing::clock)
}

fn context_clock(py: Python<'_>) -> Option<VirtualClock> {
    let top = VAR.get(py)?.bind(py).call_method0("get").ok()?;
    let scope = top.cast::<VirtualScope>().ok()?;
    scope.get().first_open_clock()
}

fn off() -> PyErr {
    PyRuntimeError::new_err(
        "virtual time is off here: use `with retryrs.testing.virtual_time():` or retryrs.testing.enable() in this thread or task",
    )
}

fn duration(seconds: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let s = crate::convert::seconds(seconds, "seconds")?;
    Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("advance needs finite seconds >= 0, got {}", repr(seconds))))
}

#[pyfunction]
pub fn _testing_enable_process_wide() {
    testing::enable_process_wide();
}

#[pyfunction]
pub fn _testing_disable_process_wide() {
    testing::disable_process_wide();
}

#[pyfunction]
pub fn _testing_is_on(py: Python<'_>) -> bool {
    clock(py).is_some()
}

/// Moves the current virtual clock forward (an attempt that "takes" time).
#[pyfunction]
pub fn _testing_advance(py: Python<'_>, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = duration(seconds)?;
    clock(py).ok_or_else(off)?.advance(d);
    Ok(())
}

/// The current virtual now, in seconds.
#[pyfunction]
pub fn _testing_now(py: Python<'_>) -> PyResult<f64> {
    Ok(secs(clock(py).ok_or_else(off)?.now()))
}

/// One scope of a context: its clock, the scope that was newest when it was entered, and
/// whether it has been left (a left scope is skipped, wherever a copy of the context still
/// holds it, so scopes end in any order).
#[pyclass(module = "retryrs._native", name = "_VirtualScope", frozen)]
pub struct VirtualScope {
    clock: VirtualClock,
    parent: Option<Py<VirtualScope>>,
    closed: AtomicBool,
    /// Keeps the core's hot-path check open while the scope is.
    hold: Mutex<Option<HostHold>>,
}

impl VirtualScope {
    /// This scope's clock if open, else its newest open ancestor's.
    fn first_open_clock(&self) -> Option<VirtualClock> {
        let mut at = self;
        loop {
            if !at.closed.load(Ordering::Acquire) {
                return Some(at.clock.clone());
            }
            at = at.parent.as_ref()?.get();
        }
    }
}

#[pymethods]
impl VirtualScope {
    /// A new open scope with a fresh clock at zero, under `parent` (the context's newest).
    #[new]
    #[pyo3(signature = (parent=None))]
    fn new(parent: Option<Py<VirtualScope>>) -> Self {
        VirtualScope {
            clock: VirtualClock::new(),
            parent,
            closed: AtomicBool::new(false),
            hold: Mutex::new(Some(testing::host_hold())),
        }
    }

    /// Leaves the scope (again: nothing).
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.hold.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// This scope if open, else its newest open ancestor, else None: what the context
    /// variable should hold once this scope is left.
    fn first_open(slf: &Bound<'_, Self>) -> Option<Py<VirtualScope>> {
        let py = slf.py();
        let mut at = slf.clone().unbind();
        loop {
            if !at.get().closed() {
                return Some(at);
            }
            at = at.get().parent.as_ref()?.clone_ref(py);
        }
    }

    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.clock.advance(duration(seconds)?);
        Ok(())
    }

    fn now(&self) -> f64 {
        secs(self.clock.now())
    }
}

/// A process-wide scope (the core's), for `virtual_time(scope="process")`.
#[pyclass(module = "retryrs._native", name = "_ProcessScope", frozen)]
pub struct PyProcessScope {
    clock: VirtualClock,
    scope: Mutex<Option<ProcessScope>>,
}

#[pymethods]
impl PyProcessScope {
    #[new]
    fn new() -> Self {
        let scope = testing::scoped_process_wide();
        PyProcessScope { clock: scope.clock().clone(), scope: Mutex::new(Some(scope)) }
    }

    fn close(&self) {
        self.scope.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.clock.advance(duration(seconds)?);
        Ok(())
    }

    fn now(&self) -> f64 {
        secs(self.clock.now())
    }
}
