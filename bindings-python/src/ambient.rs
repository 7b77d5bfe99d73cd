//! The ambient context of a request being served (`retryrs.propagation.Context`): its
//! deadline and retry state as a server helper read them from the inbound request, in a
//! context variable for the request's duration, and the one place a call looks for it.
//!
//! A call asks the core's flag first ([`retryrs::propagation::in_use`]: set once any
//! ambient context was ever made), so a program that never propagates pays one relaxed
//! load per call. Inside a context the call runs under the policy the core's
//! [`constrain`](retryrs::propagation::constrain) gives (its deadline the smaller of its
//! own and the inbound one minus the margin; one attempt and no hedge under a retry) and
//! is cancelled with the context (a client that went away).

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use retryrs::propagation::{self as prop, Ambient};

use crate::retrier::Retrier;
use crate::token::PyCancelToken;

/// A request's deadline and retry state, as every retrier call made while serving it
/// obeys them. Made by the server helpers (`ASGIMiddleware`, `WSGIMiddleware`) or by
/// `retryrs.propagation.context(...)`; read with `retryrs.propagation.current()`.
#[pyclass(frozen, module = "retryrs.propagation", name = "Context")]
pub struct PyContext {
    pub ambient: Ambient,
    /// Fires when the request is abandoned (the client went away): the calls made under
    /// the context end with RetryCancelled.
    pub token: Py<PyCancelToken>,
    /// Set when the request is over (the server helper answered it): work the request
    /// started and left running (a task, a lazily started refresher) no longer finds the
    /// context, so its calls run under their own policy, not a finished request's.
    pub ended: std::sync::atomic::AtomicBool,
    /// The context in force where this one was made (`propagation.context()` inside a
    /// request): this one narrows it, and once this one ends, work it left running falls
    /// back to it while it is in force.
    pub parent: Option<Py<PyContext>>,
}

/// The context in force of `ctx` and its parents: the first not ended, or None.
fn in_force<'py>(ctx: &Bound<'py, PyContext>) -> Option<Bound<'py, PyContext>> {
    let mut at = ctx.clone();
    loop {
        let c = at.get();
        if !c.ended.load(std::sync::atomic::Ordering::Relaxed) {
            return Some(at);
        }
        let parent = c.parent.as_ref()?.bind(at.py()).clone();
        at = parent;
    }
}

#[pymethods]
impl PyContext {
    /// `timeout`: the seconds the caller has left, from now (None: no deadline);
    /// `is_retry`: the inbound request is itself a retry (the downward rule: inner calls
    /// make one attempt, send no hedge, and pass `r=?1` on); `cancel_token`: the token
    /// that abandons the request (a new one if None); `_parent`: the context in force
    /// where this one is made, which it narrows (the core's `Ambient::within`: the sooner
    /// deadline, either retry mark) and falls back to once ended.
    #[new]
    #[pyo3(signature = (timeout=None, *, is_retry=None, cancel_token=None, _parent=None))]
    fn new(
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
        is_retry: Option<&Bound<'_, PyAny>>,
        cancel_token: Option<Py<PyCancelToken>>,
        _parent: Option<Py<PyContext>>,
    ) -> PyResult<Self> {
        let left = match timeout {
            None => None,
            Some(t) if t.is_none() => None,
            Some(t) => Some(seconds(t)?),
        };
        let is_retry = match is_retry {
            None => false,
            Some(b) => match b.cast::<pyo3::types::PyBool>() {
                Ok(b) => b.is_true(),
                Err(_) => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "is_retry must be True or False, got {}",
                        crate::convert::repr(b)
                    )))
                }
            },
        };
        let token = match cancel_token {
            Some(t) => t,
            None => Py::new(py, PyCancelToken::fresh())?,
        };
        let outer = _parent.as_ref().and_then(|p| in_force(p.bind(py))).map(|p| p.get().ambient);
        let ambient = Ambient::new(left, is_retry, now(py)).within(outer);
        Ok(PyContext { ambient, token, ended: Default::default(), parent: _parent })
    }

    /// This context if it is in force, else the first of its parents that is, else None
    /// (`propagation.current()`).
    fn _in_force(slf: &Bound<'_, Self>) -> Option<Py<PyContext>> {
        in_force(slf).map(Bound::unbind)
    }

    /// The seconds left before the caller gives up (0.0 once past), or None: no deadline.
    #[getter]
    fn remaining(&self, py: Python<'_>) -> Option<f64> {
        self.ambient.left_at(now(py)).map(|d| d.as_secs_f64())
    }

    /// Whether the inbound request was a retry (the downward rule applies).
    #[getter]
    fn is_retry(&self) -> bool {
        self.ambient.is_retry()
    }

    /// Whether nothing is left (the upward rule refuses such a request).
    #[getter]
    fn expired(&self, py: Python<'_>) -> bool {
        self.ambient.left_at(now(py)).is_some_and(|d| d < Duration::from_millis(1))
    }

    /// The token that abandons the request: cancel it to end every call made under the
    /// context (the ASGI helper does on `http.disconnect`).
    #[getter]
    fn cancel_token(&self, py: Python<'_>) -> Py<PyCancelToken> {
        self.token.clone_ref(py)
    }

    /// Whether the request is over: calls no longer obey the context (see `_end`).
    #[getter]
    fn ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Ends the context (the server helpers do once the request is answered): calls
    /// starting later, in tasks the request left running, ignore it.
    fn _end(&self) {
        self.ended.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the request was abandoned.
    #[getter]
    fn cancelled(&self) -> bool {
        self.token.get().inner.is_cancelled()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let left = match self.ambient.left_at(now(py)) {
            Some(d) => format!("{:.3}", d.as_secs_f64()),
            None => "None".into(),
        };
        let retry = if self.ambient.is_retry() { "True" } else { "False" };
        format!("<retryrs.propagation.Context remaining={left} is_retry={retry}>")
    }
}

/// Now, on the clock this thread's (or task's) calls run on: virtual under
/// `retryrs.testing`, else the monotonic one. A context's deadline is on this time base.
fn now(py: Python<'_>) -> Duration {
    crate::state::now(&crate::testing::clock(py))
}

fn seconds(t: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let bad = || {
        pyo3::exceptions::PyValueError::new_err(format!(
            "timeout must be seconds >= 0 (a float or int) or None, got {}",
            crate::convert::repr(t)
        ))
    };
    if t.is_instance_of::<pyo3::types::PyBool>() {
        return Err(bad());
    }
    let s: f64 = t.extract().map_err(|_| bad())?;
    Duration::try_from_secs_f64(s).map_err(|_| bad())
}

static VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The context variable that holds the ambient `Context` (`_native._AMBIENT`).
pub fn context_var(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    VAR.get_or_try_init(py, || crate::attempt::new_context_var(py, "retryrs.propagation.context")).map(|v| v.bind(py))
}

/// The retrier a call of `r` starting now runs as, or None: `r` itself (no ambient
/// context, or one that changes nothing). One flag test when propagation is not in use.
#[inline]
pub fn constrained(py: Python<'_>, r: &Retrier) -> PyResult<Option<Retrier>> {
    if !prop::in_use() {
        return Ok(None);
    }
    look(py, r)
}

#[cold]
#[inline(never)]
fn look(py: Python<'_>, r: &Retrier) -> PyResult<Option<Retrier>> {
    let value = crate::attempt::get_var(context_var(py)?)?;
    let Ok(context) = value.cast::<PyContext>() else { return Ok(None) };
    let Some(context) = in_force(context) else { return Ok(None) };
    let context = context.get();
    let ambient_token = context.token.bind(py);
    let cancel = match &r.cancel {
        Some(own) => PyCancelToken::any_of(py, &[own.bind(py).clone(), ambient_token.clone()])?,
        None => ambient_token.clone().unbind(),
    };
    let ambient = &context.ambient;
    let under = prop::constrain(&r.host.policy, ambient.left_at(now(py)), ambient.is_retry());
    let host = under.map_or_else(|| r.host.clone(), |p| crate::propagation::sharing(py, r, p).host);
    Ok(Some(Retrier { host, cancel: Some(cancel), interrupts: r.interrupts }))
}

/// Adds the context class, the variable and the lookup to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyContext>()?;
    m.add("_AMBIENT", context_var(m.py())?)?;
    // The upward rule's answer, for the server helpers to send.
    m.add("_REFUSAL_STATUS", prop::REFUSAL_STATUS)?;
    m.add("_REFUSAL_PUSHBACK", prop::REFUSAL_PUSHBACK)?;
    Ok(())
}
