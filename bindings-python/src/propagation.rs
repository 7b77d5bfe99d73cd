//! Propagation across services (docs/propagation.md), the native half: thin wrappers
//! over `retryrs::propagation` for `retryrs.propagation` (the ASGI/WSGI middlewares, the
//! contextvar) and the HTTP helpers. Times are seconds, as everywhere in Python; every
//! rule is the core's.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use retryrs::propagation as core;

use crate::convert::{repr, secs};
use crate::host_policy::{Hooks, HostPolicy, RetryOn};
use crate::retrier::Retrier;

/// Seconds (>= 0, finite) as a duration; `None` stays `None`. An error naming `what`.
fn duration(what: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .map_err(|_| PyValueError::new_err(format!("{what} must be a number of seconds >= 0, got {s}")))
        })
        .transpose()
}

/// `(name, value)` pairs from a mapping's `.items()`, a list of pairs, or a list of
/// `(bytes, bytes)` as ASGI gives them (decoded as Latin-1, as HTTP header bytes are).
fn pairs(headers: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let items = if headers.hasattr("items")? { headers.call_method0("items")? } else { headers.clone() };
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!("headers must be (name, value) pairs or a mapping, got {}", repr(&item)))
        })?;
        out.push((text(&name)?, text(&value)?));
    }
    Ok(out)
}

fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.cast::<pyo3::types::PyBytes>() {
        return Ok(b.as_bytes().iter().map(|&c| c as char).collect());
    }
    v.extract::<String>()
        .map_err(|_| PyTypeError::new_err(format!("a header name or value must be str or bytes, got {}", repr(v))))
}

fn refs(pairs: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
}

/// A request's deadline and retry state: the context its handler runs in.
#[pyclass(frozen, module = "retryrs._native", name = "Ambient")]
#[derive(Clone, Copy)]
pub struct PyAmbient {
    pub inner: core::Ambient,
}

#[pymethods]
impl PyAmbient {
    /// `left`: the seconds left from now (None: no deadline); `is_retry`: the inbound
    /// request was a retry (the downward rule).
    #[new]
    #[pyo3(signature = (left=None, is_retry=false))]
    fn new(left: Option<f64>, is_retry: bool) -> PyResult<Self> {
        Ok(PyAmbient { inner: core::Ambient::new(duration("left", left)?, is_retry, core::now()) })
    }

    /// The seconds left now (0 once past), or None without a deadline.
    fn left(&self) -> Option<f64> {
        self.inner.left().map(secs)
    }

    #[getter]
    fn is_retry(&self) -> bool {
        self.inner.is_retry()
    }

    fn __repr__(&self) -> String {
        match self.inner.left() {
            Some(left) => format!("Ambient(left={}, is_retry={})", secs(left), py_bool(self.inner.is_retry())),
            None => format!("Ambient(left=None, is_retry={})", py_bool(self.inner.is_retry())),
        }
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// One request as a [`PyGate`] received it.
#[pyclass(frozen, module = "retryrs._native", name = "Received", get_all)]
pub struct PyReceived {
    /// The context the handler runs in.
    ambient: Py<PyAmbient>,
    /// "run", "refuse" (answer 504 with Retryrs-Pushback: -1), "observed", "capped".
    upward: &'static str,
    /// The budget the headers gave, clamped (seconds), or None.
    budget: Option<f64>,
    is_retry: bool,
    clamped: bool,
    malformed: u32,
}

/// A server helper's reading of each request: headers to ambient context, and the upward
/// rule with its cap (20% per 10 s).
#[pyclass(frozen, module = "retryrs._native", name = "Gate")]
pub struct PyGate {
    inner: core::Gate,
}

#[pymethods]
impl PyGate {
    /// `limit`: the longest budget a request may bring, seconds (None: no clamp);
    /// `trust_mesh`: read Envoy's headers (internal listeners only); `observe_only`:
    /// never refuse.
    #[new]
    #[pyo3(signature = (limit=15.0, trust_mesh=false, observe_only=false))]
    fn new(limit: Option<f64>, trust_mesh: bool, observe_only: bool) -> PyResult<Self> {
        let options = core::ServerOptions::new()
            .limit(duration("limit", limit)?)
            .trust_mesh(trust_mesh)
            .observe_only(observe_only);
        Ok(PyGate { inner: core::Gate::new(options) })
    }

    /// Reads a request's headers (a mapping, or `(name, value)` pairs of str or bytes).
    fn receive(&self, py: Python<'_>, headers: &Bound<'_, PyAny>) -> PyResult<PyReceived> {
        let pairs = pairs(headers)?;
        let r = self.inner.receive(refs(&pairs));
        Ok(PyReceived {
            ambient: Py::new(py, PyAmbient { inner: r.ambient })?,
            upward: r.upward.as_str(),
            budget: r.inbound.budget.map(secs),
            is_retry: r.inbound.is_retry,
            clamped: r.inbound.clamped,
            malformed: r.inbound.malformed,
        })
    }
}

/// What the headers say without a gate (the conformance vectors): `(budget seconds or
/// None, is_retry, clamped, malformed)`.
#[pyfunction]
#[pyo3(signature = (headers, limit=15.0, trust_mesh=false))]
pub fn read_inbound(
    headers: &Bound<'_, PyAny>,
    limit: Option<f64>,
    trust_mesh: bool,
) -> PyResult<(Option<f64>, bool, bool, u32)> {
    let pairs = pairs(headers)?;
    let options = core::ServerOptions::new().limit(duration("limit", limit)?).trust_mesh(trust_mesh);
    let i = core::Inbound::from_headers(refs(&pairs), &options);
    Ok((i.budget.map(secs), i.is_retry, i.clamped, i.malformed))
}

/// The margin an inner call keeps, in seconds, for `left` seconds left.
#[pyfunction]
pub fn margin(left: f64) -> PyResult<f64> {
    Ok(secs(core::margin(duration("left", Some(left))?.unwrap_or_default())))
}

/// The headers to send with one attempt: a list of `(name, value)` (empty when less than
/// a millisecond is left). `mesh` "none" | "envoy" | "linkerd"; `kind` "http" | "grpc" |
/// "connect"; `left` the attempt's seconds left (None: unbounded).
#[pyfunction]
#[pyo3(signature = (left, attempt, is_retry=false, mesh="none", kind="http"))]
pub fn outbound_headers<'py>(
    py: Python<'py>,
    left: Option<f64>,
    attempt: u32,
    is_retry: bool,
    mesh: &str,
    kind: &str,
) -> PyResult<Bound<'py, PyList>> {
    let mesh = core::Mesh::parse(mesh).map_err(PyValueError::new_err)?;
    let kind = core::RequestKind::parse(kind).map_err(PyValueError::new_err)?;
    let headers = core::outbound_headers(mesh, duration("left", left)?, attempt, is_retry, kind);
    PyList::new(py, headers.into_iter().map(|(n, v)| PyTuple::new(py, [n.to_string(), v]).expect("a pair")))
}

/// A response's pushback: None, `retryrs.DONT_RETRY`, or the exact wait in seconds.
#[pyfunction]
pub fn read_pushback(py: Python<'_>, headers: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let pairs = pairs(headers)?;
    Ok(match core::read_pushback(refs(&pairs)) {
        None => py.None(),
        Some(core::ServerPushback::DontRetry) => py.import("retryrs._native")?.getattr("DONT_RETRY")?.unbind(),
        Some(core::ServerPushback::Wait(w)) => secs(w).into_pyobject(py)?.into_any().unbind(),
    })
}

/// The hosts that may receive propagation headers (None: every host).
#[pyclass(frozen, module = "retryrs._native", name = "Allowlist")]
pub struct PyAllowlist {
    inner: core::Allowlist,
}

#[pymethods]
impl PyAllowlist {
    #[new]
    #[pyo3(signature = (hosts=None))]
    fn new(hosts: Option<Vec<String>>) -> PyResult<Self> {
        let inner = match hosts {
            None => core::Allowlist::all(),
            Some(h) => core::Allowlist::only(h).map_err(PyValueError::new_err)?,
        };
        Ok(PyAllowlist { inner })
    }

    /// Whether `host` (a URL's host, with or without a port) may receive them.
    fn allows(&self, host: &str) -> bool {
        self.inner.allows(host)
    }
}

/// The same retrier (its stats shared) under `ambient`'s constraint, or None when its
/// policy already obeys it: what every call made inside a request's context runs with.
#[pyfunction]
pub fn retrier_under(py: Python<'_>, retrier: &Retrier, ambient: &PyAmbient) -> Option<Retrier> {
    let policy = ambient.inner.constrain_at(&retrier.host.policy, core::now())?;
    Some(sharing(py, retrier, policy))
}

/// The same retrier under the constraint of a context with `left` seconds left (None: no
/// deadline) and the inbound retry state, or None when its policy already obeys it (the
/// conformance vectors; a call path uses `retrier_under`).
#[pyfunction]
#[pyo3(signature = (retrier, left, is_retry=false))]
pub fn retrier_constrained(
    py: Python<'_>,
    retrier: &Retrier,
    left: Option<f64>,
    is_retry: bool,
) -> PyResult<Option<Retrier>> {
    let left = duration("left", left)?;
    Ok(core::constrain(&retrier.host.policy, left, is_retry).map(|p| sharing(py, retrier, p)))
}

/// `retrier` with `policy` instead of its own: the same hooks, budget, cancel token and
/// statistics.
pub(crate) fn sharing(py: Python<'_>, retrier: &Retrier, policy: retryrs::Policy) -> Retrier {
    let h = &*retrier.host;
    let policy = Arc::new(policy);
    let retry_on = match &h.retry_on {
        RetryOn::Classes(c) => RetryOn::Classes(c.clone_ref(py)),
        RetryOn::Predicate(f) => RetryOn::Predicate(f.clone_ref(py)),
        RetryOn::Default => RetryOn::Default,
    };
    let copy = |f: &Option<Py<PyAny>>| f.as_ref().map(|f| f.clone_ref(py));
    let hooks = Hooks {
        retry_after: copy(&h.retry_after),
        retry_on_result: copy(&h.retry_on_result),
        on_event: copy(&h.on_event),
        reraise: h.reraise,
        wait: copy(&h.wait),
        before_sleep: copy(&h.before_sleep),
    };
    let budget = h.budget.as_ref().map(|b| b.clone_ref(py));
    let mut host = HostPolicy::new(py, policy, retry_on, hooks, budget, h.attempt_timeout);
    (host.stats, host.named) = (h.stats.clone(), h.named);
    Retrier {
        host: Arc::new(host),
        cancel: retrier.cancel.as_ref().map(|t| t.clone_ref(py)),
        interrupts: retrier.interrupts,
    }
}

/// Whether any ambient context or gate was made in this process.
#[pyfunction]
pub fn propagation_in_use() -> bool {
    core::in_use()
}

/// Adds the propagation exports to the native module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAmbient>()?;
    m.add_class::<PyReceived>()?;
    m.add_class::<PyGate>()?;
    m.add_class::<PyAllowlist>()?;
    m.add_function(wrap_pyfunction!(read_inbound, m)?)?;
    m.add_function(wrap_pyfunction!(margin, m)?)?;
    m.add_function(wrap_pyfunction!(outbound_headers, m)?)?;
    m.add_function(wrap_pyfunction!(read_pushback, m)?)?;
    m.add_function(wrap_pyfunction!(retrier_under, m)?)?;
    m.add_function(wrap_pyfunction!(retrier_constrained, m)?)?;
    m.add_function(wrap_pyfunction!(propagation_in_use, m)?)?;
    Ok(())
}
