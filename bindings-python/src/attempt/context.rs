//! The context variable `retryrs.current_attempt()` reads (`_native._CURRENT`), set, reset
//! and read through the interpreter's C API where it has one.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

type Obj = *mut pyo3::ffi::PyObject;
type VarSet = unsafe extern "C" fn(Obj, Obj) -> Obj;
type VarReset = unsafe extern "C" fn(Obj, Obj) -> std::ffi::c_int;
type VarGet = unsafe extern "C" fn(Obj, Obj, *mut Obj) -> std::ffi::c_int;

/// The C API of context variables (in every CPython since 3.7, outside the stable ABI
/// the module is built for): looked up once in the running interpreter, so that the
/// asyncio happy path sets and resets the attempt without a method call each way.
struct ContextApi {
    set: VarSet,
    reset: VarReset,
    get: VarGet,
}

static CONTEXT_API: OnceLock<Option<ContextApi>> = OnceLock::new();

fn context_api() -> Option<&'static ContextApi> {
    CONTEXT_API
        .get_or_init(|| {
            let sym = crate::step::interpreter_symbol;
            let (set, reset, get) = (sym(c"PyContextVar_Set")?, sym(c"PyContextVar_Reset")?, sym(c"PyContextVar_Get")?);
            // SAFETY: the interpreter's own functions, with their documented signatures.
            unsafe {
                Some(ContextApi {
                    set: std::mem::transmute::<*mut std::ffi::c_void, VarSet>(set),
                    reset: std::mem::transmute::<*mut std::ffi::c_void, VarReset>(reset),
                    get: std::mem::transmute::<*mut std::ffi::c_void, VarGet>(get),
                })
            }
        })
        .as_ref()
}

/// `_CURRENT.set(value)`: the token that restores what was there before.
pub(super) fn set_var<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let var = context_var(py)?;
    match context_api() {
        // SAFETY: live references held with the GIL; a new reference or NULL and an error.
        Some(api) => unsafe { Bound::from_owned_ptr_or_err(py, (api.set)(var.as_ptr(), value.as_ptr())) },
        None => var.call_method1(pyo3::intern!(py, "set"), (value,)),
    }
}

/// `_CURRENT.reset(token)`.
pub(super) fn reset_var(token: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = token.py();
    let var = context_var(py)?;
    match context_api() {
        // SAFETY: live references held with the GIL; -1 with an error set on failure.
        Some(api) => match unsafe { (api.reset)(var.as_ptr(), token.as_ptr()) } {
            0 => Ok(()),
            _ => Err(PyErr::fetch(py)),
        },
        None => var.call_method1(pyo3::intern!(py, "reset"), (token,)).map(drop),
    }
}

/// `_CURRENT.get()`.
pub(super) fn current_in_context(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    get_var(context_var(py)?)
}

/// `var.get()` of a context variable whose default is None.
pub fn get_var<'py>(var: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = var.py();
    match context_api() {
        Some(api) => {
            let mut value: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
            // SAFETY: as above; the value is a new reference (the variable's default,
            // None, when it is not set in this context).
            match unsafe { (api.get)(var.as_ptr(), std::ptr::null_mut(), &mut value) } {
                0 if !value.is_null() => Ok(unsafe { Bound::from_owned_ptr(py, value) }),
                0 => Ok(py.None().into_bound(py)),
                _ => Err(PyErr::fetch(py)),
            }
        }
        None => var.call_method0(pyo3::intern!(py, "get")),
    }
}

static CURRENT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The context variable the asyncio driver and the loop forms set (`_native._CURRENT`).
pub fn context_var(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    CURRENT.get_or_try_init(py, || new_context_var(py, "retryrs.current_attempt")).map(|v| v.bind(py))
}

/// `contextvars.ContextVar(name, default=None)`.
pub fn new_context_var(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("default", py.None())?;
    Ok(py.import("contextvars")?.getattr("ContextVar")?.call((name,), Some(&kwargs))?.unbind())
}
