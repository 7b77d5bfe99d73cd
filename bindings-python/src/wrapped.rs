//! What `@retrier` turns a sync function into: a native callable, so a decorated call costs
//! what `retrier.call(func, ...)` costs, with no Python frame in between.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::retrier::Retrier;

static METHOD_TYPE: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

/// Looks up the bound-method type now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    METHOD_TYPE.import(py, "types", "MethodType").map(drop)
}

/// A function whose calls go through a Retrier. Carries the wrapped function's name,
/// docstring and signature (`functools.update_wrapper`), and binds as a method.
#[pyclass(frozen, dict, weakref, module = "retryrs", name = "RetryingFunction")]
pub struct RetryingFunction {
    retrier: Py<Retrier>,
    func: Py<PyAny>,
}

#[pymethods]
impl RetryingFunction {
    #[new]
    fn new(retrier: Py<Retrier>, func: Py<PyAny>) -> Self {
        RetryingFunction { retrier, func }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        self.retrier.get().run(py, self.func.bind(py), args, kwargs, true)
    }

    /// Binds like a function does, so `@retrier` works on methods.
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        obj: Option<&Bound<'py, PyAny>>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match obj {
            None => Ok(slf.clone().into_any()),
            Some(obj) if obj.is_none() => Ok(slf.clone().into_any()),
            Some(obj) => METHOD_TYPE.import(slf.py(), "types", "MethodType")?.call1((slf, obj)),
        }
    }

    // `functools.update_wrapper` gives this object a `__dict__` holding the function, whose
    // closure or globals may hold this object: the cycle collector must see it (pyo3 visits
    // the `__dict__` itself once `__traverse__` exists). The function's own tp_clear
    // breaks such cycles.
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.retrier)?;
        visit.call(&self.func)
    }

    /// Pickles by reference, as a plain function does: the module-level name the
    /// decorated function was defined under (what `ProcessPoolExecutor.submit` needs).
    /// The name is the wrapped function's `__qualname__`, copied by `update_wrapper`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.getattr(pyo3::intern!(slf.py(), "__qualname__"))
    }

    #[getter]
    fn retrier(&self, py: Python<'_>) -> Py<Retrier> {
        self.retrier.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<retrying {}>", crate::convert::repr(self.func.bind(py)))
    }
}
