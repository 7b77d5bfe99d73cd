//! The Retrier's whole policy as Python sees it: the engine's [`Policy`] plus the
//! Python-side rules (which exceptions are transient, where a Retry-After hint comes
//! from, who listens), and how each is applied: classifying a failure, extracting its
//! hint, emitting events. Shared (`Arc`) by a Retrier, its derived retriers and calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyString, PyType};
use retryrs::{duration_from_ms, Event, Policy, Verdict};

use crate::budget::PyRetryBudget;
use crate::convert::{ms, seconds};
use crate::event::PyEvent;

/// How the Retrier tells a transient failure from a permanent one.
pub enum RetryOn {
    /// An exception class or a tuple of them: one `isinstance`, no Python frame.
    Classes(Py<PyAny>),
    /// `exc -> bool`.
    Predicate(Py<PyAny>),
}

/// Immutable and shared (`Arc`) by a Retrier, its derived retriers and its calls.
pub struct HostPolicy {
    pub policy: Arc<Policy>,
    pub retry_on: RetryOn,
    pub retry_after: Option<Py<PyAny>>,
    pub on_event: Option<Py<PyAny>>,
    pub budget: Option<Py<PyRetryBudget>>,
    pub attempt_timeout: Option<f64>,
    /// The name as a Python str, made once rather than per event.
    pub name: Py<PyString>,
    /// A success has to reach the engine only to be reported or to refill a budget.
    pub wants_success: bool,
    /// Exception classes seen, and whether they may carry `retry_after` beyond the
    /// instance dict (see `attribute_hint`). Holds the classes, so an entry never outlives
    /// its class; bounded, since a program raises few distinct classes.
    class_cache: Mutex<Vec<(Py<PyType>, bool)>>,
}

const CLASS_CACHE_SIZE: usize = 32;

impl HostPolicy {
    pub fn new(
        py: Python<'_>,
        policy: Arc<Policy>,
        retry_on: RetryOn,
        retry_after: Option<Py<PyAny>>,
        on_event: Option<Py<PyAny>>,
        budget: Option<Py<PyRetryBudget>>,
        attempt_timeout: Option<f64>,
    ) -> Self {
        let name = PyString::new(py, policy.name()).unbind();
        let wants_success = on_event.is_some() || budget.is_some();
        HostPolicy { policy, retry_on, retry_after, on_event, budget, attempt_timeout, name, wants_success, class_cache: Mutex::default() }
    }

    /// The verdict on a failure (an `Exception`; control-flow signals never get here).
    /// An error raised by the predicate or the hint hook ends the call: it is returned.
    pub fn classify(&self, exc: &Bound<'_, PyAny>, forced_transient: bool) -> PyResult<Verdict> {
        let transient = forced_transient
            || match &self.retry_on {
                RetryOn::Classes(classes) => exc.is_instance(classes.bind(exc.py()))?,
                RetryOn::Predicate(f) => f.bind(exc.py()).call1((exc,))?.is_truthy()?,
            };
        if !transient {
            return Ok(Verdict::Permanent);
        }
        Ok(Verdict::Transient { hint: self.hint(exc)? })
    }

    /// The Retry-After style minimum wait a failure carries: the `retry_after` hook's
    /// answer, or by default the exception's own `retry_after` attribute (seconds, a
    /// timedelta, or a raw `Retry-After` header value).
    fn hint(&self, exc: &Bound<'_, PyAny>) -> PyResult<Option<Duration>> {
        let py = exc.py();
        let value = match &self.retry_after {
            Some(f) => f.bind(py).call1((exc,))?,
            None => match self.attribute_hint(exc)? {
                Some(v) => v,
                None => return Ok(None),
            },
        };
        if value.is_none() {
            return Ok(None);
        }
        if let Ok(text) = value.cast::<PyString>() {
            return Ok(retryrs::parse_retry_after(&text.to_cow()?, std::time::SystemTime::now()));
        }
        if value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>() || value.hasattr("total_seconds")? {
            // The engine's own reading of a host number: NaN and negatives mean no hint,
            // huge values saturate.
            return Ok(duration_from_ms(ms(seconds(&value, "retry_after")?)));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "retry_after must give seconds (float, int, timedelta), a Retry-After str, or None; got {}",
            crate::convert::repr(&value)
        )))
    }

    /// The exception's `retry_after` attribute, if it has one. A plain `getattr` that
    /// misses builds an AttributeError (about 400 ns, more than the rest of a failure's
    /// handling), so when the exception's class defines no `retry_after` and no
    /// `__getattr__` (known once per class) only the instance dict is looked at.
    fn attribute_hint<'py>(&self, exc: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = exc.py();
        let key = pyo3::intern!(py, "retry_after");
        if self.class_may_have(exc, key)? {
            return exc.getattr_opt(key);
        }
        match exc.getattr(pyo3::intern!(py, "__dict__")) {
            Ok(d) => match d.cast::<PyDict>() {
                Ok(d) => d.get_item(key),
                Err(_) => exc.getattr_opt(key),
            },
            Err(_) => exc.getattr_opt(key),
        }
    }

    fn class_may_have(&self, exc: &Bound<'_, PyAny>, key: &Bound<'_, PyString>) -> PyResult<bool> {
        let py = exc.py();
        let ty = exc.get_type();
        {
            let cache = self.class_cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, may)) = cache.iter().find(|(t, _)| t.is(&ty)) {
                return Ok(*may);
            }
        }
        let may = ty.getattr_opt(key)?.is_some() || ty.getattr_opt(pyo3::intern!(py, "__getattr__"))?.is_some();
        let mut cache = self.class_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() < CLASS_CACHE_SIZE {
            cache.push((ty.unbind(), may));
        }
        Ok(may)
    }

    /// Hands an engine event to the listener. A listener that raises does not change the
    /// call: its error goes to `sys.unraisablehook`, Python's channel for exactly this.
    pub fn emit(&self, py: Python<'_>, event: &Event<'_>, error: Option<&Bound<'_, PyAny>>) {
        let Some(listener) = &self.on_event else { return };
        let event = PyEvent::new(py, &self.name, event, error);
        let listener = listener.bind(py);
        let result = Bound::new(py, event).and_then(|e| listener.call1((e,)));
        if let Err(err) = result {
            err.write_unraisable(py, Some(listener));
        }
    }
}
