//! The core's knob table read in Python's units (seconds for durations, `None` when off):
//! what `Retrier` and a document's `Policy` both serve as attributes and print in their
//! reprs. Neither class has a getter per knob, so a knob added to the core's table is
//! readable in Python with no binding code.

use pyo3::prelude::*;
use pyo3::types::PyString;
use retryrs::{Policy, Unit};

use crate::budget::PyRetryBudget;
use crate::convert::pyfloat;

/// The knob `name` of `policy` (with `budget`, the Python object the policy shares) in
/// Python's units; `None` for a name that is not a knob.
pub fn value(
    py: Python<'_>,
    policy: &Policy,
    budget: Option<&Py<PyRetryBudget>>,
    name: &str,
) -> PyResult<Option<Py<PyAny>>> {
    let Some(k) = retryrs::knob::knob(name) else { return Ok(None) };
    let any = |v: Bound<'_, PyAny>| v.unbind();
    let value = match k.unit {
        Unit::Count => {
            policy.number(k.name).map(|n| (n as u64).into_pyobject(py).map(|v| any(v.into_any()))).transpose()?
        }
        Unit::Duration => {
            policy.number(k.name).map(|ms| (ms / 1000.0).into_pyobject(py).map(|v| any(v.into_any()))).transpose()?
        }
        Unit::Factor => policy.number(k.name).map(|n| n.into_pyobject(py).map(|v| any(v.into_any()))).transpose()?,
        Unit::Jitter => Some(PyString::new(py, &policy.jitter().spelling()).into_any().unbind()),
        Unit::Text => Some(PyString::new(py, policy.name()).into_any().unbind()),
        Unit::Seed => policy.seed().map(|s| s.into_pyobject(py).map(|v| any(v.into_any()))).transpose()?,
        Unit::Budget => budget.map(|b| b.clone_ref(py).into_any()),
    };
    Ok(Some(value.unwrap_or_else(|| py.None())))
}

/// [`value`] as an attribute lookup: an `AttributeError` in Python's words for a name
/// that is not a knob (what `__getattr__` must raise so `getattr(x, n, default)` works).
pub fn attribute(
    py: Python<'_>,
    class: &str,
    policy: &Policy,
    budget: Option<&Py<PyRetryBudget>>,
    name: &str,
) -> PyResult<Py<PyAny>> {
    value(py, policy, budget, name)?.ok_or_else(|| {
        pyo3::exceptions::PyAttributeError::new_err(format!("'{class}' object has no attribute '{name}'"))
    })
}

/// `name='rates', max_attempts=5, initial_delay=0.2, ...`: the name, every numeric knob
/// of the table (in Python's units), then the jitter; the start of both reprs.
pub fn repr_parts(policy: &Policy) -> Vec<String> {
    let mut parts = vec![format!("name='{}'", policy.name().replace('\\', "\\\\").replace('\'', "\\'"))];
    for k in retryrs::knob::numeric() {
        let value = match (policy.number(k.name), k.unit) {
            (None, _) => "None".to_string(),
            (Some(n), Unit::Count) => format!("{n}"),
            (Some(ms), Unit::Duration) => pyfloat(ms / 1000.0),
            (Some(n), _) => pyfloat(n),
        };
        parts.push(format!("{}={value}", k.name));
    }
    parts.push(format!("jitter='{}'", policy.jitter().spelling()));
    if let Some(h) = policy.hedging() {
        // With a hedge the backoff knobs above do not apply to async calls: show it.
        let secs = |d: &std::time::Duration| pyfloat(d.as_secs_f64());
        let delay = match h.delay() {
            retryrs::HedgeDelay::Fixed(d) => secs(d),
            retryrs::HedgeDelay::Adaptive { floor, ceiling, sketch } => format!(
                "'adaptive' (quantile={}, floor={}, ceiling={})",
                pyfloat(sketch.quantile()),
                secs(floor),
                secs(ceiling)
            ),
            // HedgeDelay is #[non_exhaustive]: a kind added to the core shows as itself.
            other => format!("{other:?}"),
        };
        parts.push(format!("hedge=(max_attempts={}, delay={delay})", h.max_attempts()));
    }
    parts
}

/// The table's names, for `__dir__`.
pub fn names() -> impl Iterator<Item = &'static str> {
    retryrs::KNOBS.iter().map(|k| k.name)
}
