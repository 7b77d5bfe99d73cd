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

#[cfg(unix)]
fn lookup() -> Option<IterSend> {
    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    // RTLD_DEFAULT: the global scope, where the interpreter's own symbols are.
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    let default = -2isize as *mut c_void;
    #[cfg(not(any(target_os = "macos", target_os = "ios")))]
    let default = std::ptr::null_mut::<c_void>();
    // SAFETY: dlsym with a NUL-terminated name; a non-null answer is the interpreter's
    // PyIter_Send, whose signature is the stable ABI's (3.10+).
    let found = unsafe { dlsym(default, c"PyIter_Send".as_ptr()) };
    if found.is_null() {
        None
    } else {
        Some(unsafe { std::mem::transmute::<*mut c_void, IterSend>(found) })
    }
}

#[cfg(not(unix))]
fn lookup() -> Option<IterSend> {
    None
}

/// A coroutine that suspended in its first step: `step` is what it yielded to the loop.
#[pyclass(frozen, module = "retryrs._native", name = "_Pending")]
pub struct Pending {
    #[pyo3(get)]
    step: Py<PyAny>,
}

/// Runs `coro` (a native coroutine) to its first suspension: its value if it finished,
/// a `_Pending` holding what it yielded if it suspended; raises what it raised.
#[pyfunction]
pub fn _first_step(py: Python<'_>, coro: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if let Some(send) = *ITER_SEND.get_or_init(lookup) {
        let mut result: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `coro` and None are live references held with the GIL; the result is
        // a new reference (or NULL with an exception set, for PYGEN_ERROR).
        let status = unsafe { send(coro.as_ptr(), ffi::Py_None(), &mut result) };
        return match status {
            0 => Ok(unsafe { Bound::from_owned_ptr(py, result) }.unbind()),
            1 => Ok(Py::new(py, Pending { step: unsafe { Bound::from_owned_ptr(py, result) }.unbind() })?.into_any()),
            _ => Err(PyErr::fetch(py)),
        };
    }
    match coro.call_method1(pyo3::intern!(py, "send"), (py.None(),)) {
        Ok(step) => Ok(Py::new(py, Pending { step: step.unbind() })?.into_any()),
        Err(e) if e.is_instance_of::<PyStopIteration>(py) => Ok(e.value(py).getattr("value")?.unbind()),
        Err(e) => Err(e),
    }
}
