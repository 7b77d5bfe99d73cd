//! Policy documents in Python: the core's loader (`retryrs::Policies`) does all the
//! parsing and validation; this module only hands its policies to Python as `Policy`
//! objects whose attributes are the knob table's, in Python's units (seconds), and its
//! errors as data for `retryrs.PolicyDocumentError` (python/retryrs/_policies.py).

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use retryrs::{Policies, Policy, Unit};

use crate::budget::PyRetryBudget;
use crate::convert::pyfloat;

/// A named policy from a document: the engine's policy and its shared budget. Read-only;
/// its knobs read as attributes (`policy.max_attempts`, `policy.initial_delay` in seconds).
#[pyclass(frozen, module = "retryrs", name = "Policy")]
pub struct PyPolicy {
    pub policy: Arc<Policy>,
    pub budget: Option<Py<PyRetryBudget>>,
}

impl PyPolicy {
    /// The knob `name` (a knob table entry) in Python's units; `None` for an unknown name.
    fn knob(&self, py: Python<'_>, name: &str) -> PyResult<Option<Py<PyAny>>> {
        let Some(k) = retryrs::knob::knob(name) else { return Ok(None) };
        let p = &self.policy;
        let value = match k.unit {
            Unit::Count => {
                p.number(k.name).map(|n| (n as u64).into_pyobject(py).map(|v| v.into_any().unbind())).transpose()?
            }
            Unit::Duration => {
                p.number(k.name).map(|ms| (ms / 1000.0).into_pyobject(py).map(|v| v.into_any().unbind())).transpose()?
            }
            Unit::Factor => p.number(k.name).map(|n| n.into_pyobject(py).map(|v| v.into_any().unbind())).transpose()?,
            Unit::Jitter => Some(PyString::new(py, &p.jitter().spelling()).into_any().unbind()),
            Unit::Text => Some(PyString::new(py, p.name()).into_any().unbind()),
            Unit::Seed => p.seed().map(|s| s.into_pyobject(py).map(|v| v.into_any().unbind())).transpose()?,
            Unit::Budget => self.budget.as_ref().map(|b| b.clone_ref(py).into_any()),
        };
        Ok(Some(value.unwrap_or_else(|| py.None())))
    }
}

#[pymethods]
impl PyPolicy {
    /// Every knob of the table is an attribute (None when off).
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        self.knob(py, name)?.ok_or_else(|| {
            pyo3::exceptions::PyAttributeError::new_err(format!("'Policy' object has no attribute '{name}'"))
        })
    }

    fn __dir__(&self) -> Vec<&'static str> {
        retryrs::KNOBS.iter().map(|k| k.name).collect()
    }

    /// `Policy(name='payments', max_attempts=3, initial_delay=0.1, ...)`.
    fn __repr__(&self) -> String {
        let p = &self.policy;
        let mut parts = vec![format!("name='{}'", p.name().replace('\\', "\\\\").replace('\'', "\\'"))];
        for k in retryrs::knob::numeric() {
            let value = match (p.number(k.name), k.unit) {
                (None, _) => "None".to_string(),
                (Some(n), Unit::Count) => format!("{n}"),
                (Some(ms), Unit::Duration) => pyfloat(ms / 1000.0),
                (Some(n), _) => pyfloat(n),
            };
            parts.push(format!("{}={value}", k.name));
        }
        parts.push(format!("jitter='{}'", p.jitter().spelling()));
        format!("Policy({})", parts.join(", "))
    }
}

/// What went wrong, as data: (message, path, line, column, file).
type ErrorRow = (String, String, Option<usize>, Option<usize>, Option<String>);

/// Loads a document from its text (or from the file `path` when `text` is None): a dict
/// of name to Policy, or the error as data. Budgets named by several policies come back
/// as one RetryBudget object.
#[pyfunction]
#[pyo3(signature = (text, path=None))]
pub fn _load_policies(
    py: Python<'_>,
    text: Option<&str>,
    path: Option<std::path::PathBuf>,
) -> PyResult<(Option<Py<PyDict>>, Option<ErrorRow>)> {
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
    Ok((Some(out.unbind()), None))
}
