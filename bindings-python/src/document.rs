//! Policy documents in Python: the core's loader (`retryrs::Policies`) does all the
//! parsing and validation; this module only hands its policies to Python as `Policy`
//! objects whose attributes are the knob table's, in Python's units (seconds), and its
//! errors as data for `retryrs.PolicyDocumentError` (python/retryrs/_policies.py).

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use retryrs::{Policies, Policy};

use crate::budget::PyRetryBudget;

/// A named policy from a document: the engine's policy and its shared budget. Read-only;
/// its knobs read as attributes (`policy.max_attempts`, `policy.initial_delay` in seconds).
#[pyclass(frozen, module = "retryrs", name = "Policy")]
pub struct PyPolicy {
    pub policy: Arc<Policy>,
    pub budget: Option<Py<PyRetryBudget>>,
}

#[pymethods]
impl PyPolicy {
    /// Every knob of the table is an attribute (None when off).
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        crate::knobs::attribute(py, "Policy", &self.policy, self.budget.as_ref(), name)
    }

    fn __dir__(&self) -> Vec<&'static str> {
        crate::knobs::names().collect()
    }

    /// `Policy(name='payments', max_attempts=3, initial_delay=0.1, ...)`.
    fn __repr__(&self) -> String {
        format!("Policy({})", crate::knobs::repr_parts(&self.policy).join(", "))
    }

    /// A gRPC policy's `retryableStatusCodes` (a hedging one's `nonFatalStatusCodes`) as
    /// names, by number; None for a policy not loaded from a service config.
    #[getter]
    fn grpc_status_codes(&self) -> Option<Vec<&'static str>> {
        self.policy.grpc_status_codes().map(|c| c.names())
    }

    /// The verdict on a call that ended with gRPC `status` (a number, a name such as
    /// "UNAVAILABLE", or grpc's `StatusCode`), by the policy's status codes: "success"
    /// (OK), "transient" (listed: retried, or non-fatal when hedging) or "permanent".
    fn grpc_verdict(&self, status: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        use pyo3::types::{PyBool, PyInt, PyString, PyTuple};
        // grpc.StatusCode's value is (number, name).
        let status = match status.getattr_opt("value")? {
            Some(v) if v.is_instance_of::<PyTuple>() && !status.is_instance_of::<PyInt>() => v.get_item(0)?,
            _ => status.clone(),
        };
        let judged = if status.is_instance_of::<PyBool>() {
            Err(format!("a gRPC status is a number or a name, got {}", crate::convert::repr(&status)))
        } else if let Ok(n) = status.extract::<i64>() {
            u64::try_from(n)
                .map_err(|_| format!("{n} is not a gRPC status code"))
                .and_then(|n| self.policy.grpc_verdict_code(n))
        } else if let Ok(s) = status.cast::<PyString>() {
            self.policy.grpc_verdict(&s.to_cow()?)
        } else {
            Err(format!("a gRPC status is a number or a name, got {}", crate::convert::repr(&status)))
        };
        match judged {
            Ok(retryrs::Verdict::Success) => Ok("success"),
            Ok(retryrs::Verdict::Permanent) => Ok("permanent"),
            Ok(_) => Ok("transient"),
            Err(why) => Err(pyo3::exceptions::PyValueError::new_err(why)),
        }
    }
}

/// What went wrong, as data: (message, path, line, column, file).
type ErrorRow = (String, String, Option<usize>, Option<usize>, Option<String>);

/// A loaded document as the core holds it, for what only the core answers: which policy a
/// gRPC method runs under (`retryrs.PolicyDocument.for_method`).
#[pyclass(frozen, module = "retryrs._native", name = "_Document")]
pub struct PyDocument {
    loaded: Policies,
}

#[pymethods]
impl PyDocument {
    /// The key of the policy `service`/`method` runs under, in gRPC's order
    /// (`service/method`, `service`, `default`), or None.
    fn method_key(&self, service: &str, method: &str) -> Option<String> {
        self.loaded.method_key(service, method).map(String::from)
    }

    /// The loader's warnings, in document order.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.loaded.warnings().to_vec()
    }
}

/// A loaded document: its policies by name, and the core's document for lookups.
type Loaded = (Py<PyDict>, Py<PyDocument>);

/// Loads a document from its text (or from the file `path` when `text` is None): a dict
/// of name to Policy, or the error as data. Budgets named by several policies come back
/// as one RetryBudget object.
#[pyfunction]
#[pyo3(signature = (text, path=None))]
pub fn _load_policies(
    py: Python<'_>,
    text: Option<&str>,
    path: Option<std::path::PathBuf>,
) -> PyResult<(Option<Loaded>, Option<ErrorRow>)> {
    let loaded = match (text, path) {
        (Some(t), _) => py.detach(|| Policies::from_json(t)),
        (None, Some(p)) => py.detach(|| Policies::from_path(p)),
        (None, None) => return Err(pyo3::exceptions::PyTypeError::new_err("a document's text or path is needed")),
    };
    let policies = match loaded {
        Ok(p) => p,
        Err(e) => {
            let (line, column) = e.position.map_or((None, None), |(l, c)| (Some(l), Some(c)));
            return Ok((None, Some((e.to_string(), e.path.clone(), line, column, e.file.clone()))));
        }
    };
    // One Python budget per core budget, so policies sharing a bucket share the object.
    let mut budgets: BTreeMap<usize, Py<PyRetryBudget>> = BTreeMap::new();
    let out = PyDict::new(py);
    for (name, policy) in policies.iter() {
        let budget = match policy.budget() {
            None => None,
            Some(b) => {
                let shared = match budgets.entry(Arc::as_ptr(b) as usize) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(Py::new(py, PyRetryBudget { inner: Arc::clone(b) })?)
                    }
                };
                Some(shared.clone_ref(py))
            }
        };
        out.set_item(name, PyPolicy { policy: Arc::new(policy.clone()), budget })?;
    }
    Ok((Some((out.unbind(), Py::new(py, PyDocument { loaded: policies })?)), None))
}
