//! `on_event=[log_events(), retryrs.prometheus.listener()]`: several listeners told as
//! one. Normalised once, when the Retrier is built; a call sees a single callable and
//! pays nothing extra when `on_event` is one function.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::convert::repr;

/// Every listener of a list, in order, told every event. One that raises goes to
/// `sys.unraisablehook` (as a lone listener's would) and the rest are still told; a
/// KeyboardInterrupt / SystemExit from one is raised once all have been told.
#[pyclass(frozen, module = "retryrs", name = "Listeners")]
pub struct Listeners {
    all: Vec<Py<PyAny>>,
}

#[pymethods]
impl Listeners {
    fn __call__(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut signal = None;
        for listener in &self.all {
            let listener = listener.bind(py);
            crate::host_policy::tell(py, listener, listener.call1((event,)), &mut signal);
        }
        signal.map_or(Ok(()), Err)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let all: Vec<String> = self.all.iter().map(|l| repr(l.bind(py))).collect();
        format!("Listeners([{}])", all.join(", "))
    }
}

/// `on_event` as given: None, a callable, or a list / tuple of callables (an empty one is
/// no listener; one element is that listener itself).
pub fn on_event(v: Option<Bound<'_, PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    const WHAT: &str = "on_event must be a callable event -> None, or a list or tuple of them";
    let Some(v) = v else { return Ok(None) };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(list) = v.cast::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = v.cast::<PyTuple>() {
        tuple.iter().collect()
    } else if v.is_callable() {
        not_async(&v, "on_event")?;
        return Ok(Some(v.unbind()));
    } else {
        return Err(PyTypeError::new_err(format!("{WHAT}, got {}", repr(&v))));
    };
    if let Some((i, bad)) = items.iter().enumerate().find(|(_, l)| !l.is_callable()) {
        return Err(PyTypeError::new_err(format!("{WHAT}; on_event[{i}] is {}", repr(bad))));
    }
    for (i, l) in items.iter().enumerate() {
        not_async(l, &format!("on_event[{i}]"))?;
    }
    Ok(match items.len() {
        0 => None,
        1 => Some(items[0].clone().unbind()),
        _ => Some(Py::new(v.py(), Listeners { all: items.into_iter().map(Bound::unbind).collect() })?.into_any()),
    })
}

/// Listeners are never awaited (events must not slow a call), so an `async def` one would
/// never run: refused when the Retrier is built rather than dropped silently.
fn not_async(listener: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    let inspect = listener.py().import("inspect")?;
    if inspect.call_method1("iscoroutinefunction", (listener,))?.is_truthy()? {
        return Err(PyTypeError::new_err(format!(
            "{what} is an async function ({}); listeners are called, never awaited, so it would never run: give a plain function (it may schedule work with asyncio.get_running_loop().create_task)",
            repr(listener)
        )));
    }
    Ok(())
}
