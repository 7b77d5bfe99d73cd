//! How a Retrier shows itself: its repr (every option that changes what is retried and
//! how) and the options the constructor would rebuild it from (what pickling sends).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::Retrier;
use crate::host_policy::RetryOn;

impl Retrier {
    /// `_options`' work (the Python method's doc says what it holds).
    pub(super) fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = &*self.host;
        let out = PyDict::new(py);
        for k in retryrs::KNOBS {
            out.set_item(k.name, self.knob(py, k.name)?)?;
        }
        if let Some(breaker) = self.breaker() {
            out.set_item("breaker", Bound::new(py, breaker)?)?;
        }
        match &h.retry_on {
            RetryOn::Classes(c) | RetryOn::Predicate(c) => out.set_item("retry_on", c)?,
            RetryOn::Default => {}
        }
        for (key, f) in [
            ("retry_after", &h.retry_after),
            ("retry_on_result", &h.retry_on_result),
            ("on_event", &h.on_event),
            ("wait", &h.wait),
            ("before_sleep", &h.before_sleep),
        ] {
            if let Some(f) = f {
                out.set_item(key, f)?;
            }
        }
        if h.reraise {
            out.set_item("reraise", true)?;
        }
        Ok(out)
    }

    /// `__repr__`'s work (the Python method's doc says what it shows).
    pub(super) fn repr(&self, py: Python<'_>) -> String {
        let p = &self.host.policy;
        let mut parts = crate::knobs::repr_parts(p);
        // The options that change which failures are retried and how: none may hide.
        let py_repr = |v: &Bound<'_, PyAny>| crate::convert::repr(v);
        {
            let h = &*self.host;
            match &h.retry_on {
                RetryOn::Classes(c) | RetryOn::Predicate(c) => parts.push(format!("retry_on={}", py_repr(c.bind(py)))),
                RetryOn::Default => parts.push("retry_on=<transient network errors>".to_string()),
            }
            parts.push(format!("seed={}", p.seed().map_or("None".to_string(), |s| s.to_string())));
            let budget = h.budget.as_ref().map_or("None".to_string(), |b| py_repr(b.bind(py).as_any()));
            parts.push(format!("budget={budget}"));
            if let Some(b) = self.breaker() {
                parts.push(format!("breaker=CircuitBreaker(model={:?})", b.model_name()));
            }
            if let Some(f) = &h.retry_after {
                parts.push(format!("retry_after={}", py_repr(f.bind(py))));
            }
            if let Some(f) = &h.retry_on_result {
                parts.push(format!("retry_on_result={}", py_repr(f.bind(py))));
            }
            if let Some(f) = &h.on_event {
                parts.push(format!("on_event={}", py_repr(f.bind(py))));
            }
            if h.reraise {
                parts.push("reraise=True".to_string());
            }
            for (key, f) in [("wait", &h.wait), ("before_sleep", &h.before_sleep)] {
                if let Some(f) = f {
                    parts.push(format!("{key}={}", py_repr(f.bind(py))));
                }
            }
        }
        // The attempts cannot all fit in the deadline: say so where a port would look.
        if let Some(hint) = p.deadline_hint() {
            parts.push(format!("hint='{}'", hint.render(retryrs::Spelling::Python).replace('\'', "\\'")));
        }
        format!("Retrier({})", parts.join(", "))
    }
}
