//! The first step of an async attempt, for the asyncio driver: it runs the coroutine up
//! to its first suspension, so that a timer for the attempt's bound is armed only for an
//! attempt that suspends (one that finishes in its first step, the happy path of a
//! cached or computed value, pays for no loop timer).
//!
//! `coro.send(None)` from Python reports a finished coroutine by raising StopIteration,
//! which costs the asyncio happy path a few hundred nanoseconds. CPython 3.10+ has
//! `PyIter_Send` (stable ABI from 3.10), which reports it without an exception, as
//! `await` itself does. The module is built for the 3.9 stable ABI, so the function is
//! looked up in the running interpreter once; without it (3.9, or a platform with no
//! `dlsym`), the step is `send(None)` and StopIteration, as before.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use pyo3::exceptions::PyStopIteration;
use pyo3::ffi;
use pyo3::prelude::*;

/// `PySendResult PyIter_Send(PyObject *iter, PyObject *arg, PyObject **presult)`:
/// PYGEN_RETURN (0), PYGEN_ERROR (-1) or PYGEN_NEXT (1).
type IterSend = unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject, *mut *mut ffi::PyObject) -> c_int;

static ITER_SEND: OnceLock<Option<IterSend>> = OnceLock::new();

/// A function of the running interpreter by name (`RTLD_DEFAULT`: the global scope, where
/// the interpreter's own symbols are), for C API functions outside the stable ABI the
/// module is built for; None where there is no `dlsym`. The caller gives the type.
#[cfg(unix)]
pub fn interpreter_symbol(name: &std::ffi::CStr) -> Option<*mut c_void> {
    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    let default = -2isize as *mut c_void;
    #[cfg(not(any(target_os = "macos", target_os = "ios")))]
    let default = std::ptr::null_mut::<c_void>();
    // SAFETY: dlsym with a NUL-terminated name.
    let found = unsafe { dlsym(default, name.as_ptr()) };
    (!found.is_null()).then_some(found)
}

#[cfg(not(unix))]
pub fn interpreter_symbol(_name: &std::ffi::CStr) -> Option<*mut c_void> {
    None
}

fn lookup() -> Option<IterSend> {
    // SAFETY: the interpreter's PyIter_Send, whose signature is the stable ABI's (3.10+).
    interpreter_symbol(c"PyIter_Send").map(|f| unsafe { std::mem::transmute::<*mut c_void, IterSend>(f) })
}

/// How the first step of a coroutine ended.
pub enum Step<'py> {
    /// It finished: its value.
    Done(Bound<'py, PyAny>),
    /// It suspended: what it yielded to the loop.
    Yielded(Bound<'py, PyAny>),
    /// It raised.
    Raised(PyErr),
}

/// Runs `coro` (a native coroutine) to its first suspension.
pub fn first_step<'py>(py: Python<'py>, coro: &Bound<'py, PyAny>) -> Step<'py> {
    if let Some(send) = *ITER_SEND.get_or_init(lookup) {
        let mut result: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `coro` and None are live references held with the GIL; the result is
        // a new reference (or NULL with an exception set, for PYGEN_ERROR).
        let status = unsafe { send(coro.as_ptr(), ffi::Py_None(), &mut result) };
        return match status {
            0 => Step::Done(unsafe { Bound::from_owned_ptr(py, result) }),
            1 => Step::Yielded(unsafe { Bound::from_owned_ptr(py, result) }),
            _ => Step::Raised(PyErr::fetch(py)),
        };
    }
    match coro.call_method1(pyo3::intern!(py, "send"), (py.None(),)) {
        Ok(step) => Step::Yielded(step),
        Err(e) if e.is_instance_of::<PyStopIteration>(py) => match e.value(py).getattr("value") {
            Ok(value) => Step::Done(value),
            Err(e) => Step::Raised(e),
        },
        Err(e) => Step::Raised(e),
    }
}

/// The first attempt of an async call when it is not over in its first step with a value
/// nobody else needs to see (the asyncio driver's slow paths; see `Retrier._first`).
///
/// `kind`: `SUSPENDED` (`attempt` yielded `step` to the loop), `UNSTARTED` (`attempt`
/// is an awaitable not yet started: not a native coroutine, or a bounded one under trio,
/// whose cancel scope must be entered first), `FAILED` (`value` is what it raised;
/// `called`: whether the function returned `attempt` before), `VALUE` (`value` is what
/// it returned, for `retry_on_result` to judge). While the attempt runs (`SUSPENDED`,
/// `UNSTARTED`) it is `retryrs.current_attempt()`, and `token` resets that when it ends.
#[pyclass(frozen, module = "retryrs._native", name = "_FirstAttempt")]
pub struct FirstAttempt {
    pub kind: u8,
    pub info: Py<crate::attempt::AttemptInfo>,
    pub attempt: Option<Py<PyAny>>,
    pub called: bool,
    pub step: Option<Py<PyAny>>,
    pub value: Option<Py<PyAny>>,
    pub token: Option<Py<PyAny>>,
}

impl FirstAttempt {
    pub const SUSPENDED: u8 = 0;
    pub const UNSTARTED: u8 = 1;
    pub const FAILED: u8 = 2;
    pub const VALUE: u8 = 3;
}

#[pymethods]
impl FirstAttempt {
    /// `(kind, info, attempt, step, value, token, called)` in one read (each attribute
    /// read of a native object is a lookup through its type).
    #[getter]
    fn parts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let held = |v: &Option<Py<PyAny>>| v.as_ref().map_or_else(|| py.None(), |v| v.clone_ref(py));
        pyo3::types::PyTuple::new(
            py,
            [
                self.kind.into_pyobject(py)?.into_any().unbind(),
                self.info.clone_ref(py).into_any(),
                held(&self.attempt),
                held(&self.step),
                held(&self.value),
                held(&self.token),
                pyo3::types::PyBool::new(py, self.called).to_owned().into_any().unbind(),
            ],
        )
    }

    // What it holds (an exception, whose traceback holds the driver's frame, which holds
    // this object) can make a cycle: the collector must see it (and breaks it at the
    // frame or the exception).
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.info)?;
        for held in [&self.attempt, &self.step, &self.value, &self.token].into_iter().flatten() {
            visit.call(held)?;
        }
        Ok(())
    }
}
