//! What a call needs from the package's Python modules and the standard library, looked
//! up when the package is imported (`retryrs/__init__.py` calls `_preload()` last), never
//! at call time.
//!
//! A lookup made on first use ran Python code (an import, with its finders) inside a
//! once-cell's initialisation in native frames. CPython 3.9-3.13 end a daemon thread that
//! takes the GIL back while the interpreter finalizes with pthread_exit, and its forced
//! unwind cannot get through those frames: a daemon thread in its first failed `call` or
//! first `call_async` at exit aborted the process (tests/import_exit.py).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// `module.name`, looked up once: at package import by `_preload`, and after that only
/// read.
pub struct Lookup {
    cell: PyOnceLock<Py<PyAny>>,
    module: &'static str,
    name: &'static str,
}

impl Lookup {
    pub const fn new(module: &'static str, name: &'static str) -> Self {
        Lookup { cell: PyOnceLock::new(), module, name }
    }

    pub fn get<'py>(&'static self, py: Python<'py>) -> PyResult<&'py Bound<'py, PyAny>> {
        self.cell
            .get_or_try_init(py, || py.import(self.module)?.getattr(self.name).map(Bound::unbind))
            .map(|f| f.bind(py))
    }
}

#[pyfunction]
pub fn _preload(py: Python<'_>) -> PyResult<()> {
    crate::errors::preload(py)?;
    crate::state::preload(py)?;
    crate::host_policy::preload(py)?;
    crate::wait::preload(py)?;
    crate::retrier::preload(py)?;
    crate::attempt::preload(py)?;
    crate::wrapped::preload(py)
}
