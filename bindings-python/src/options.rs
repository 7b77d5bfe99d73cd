//! The Retrier's keyword arguments: Python types and units in, a validated engine
//! [`Policy`] plus the host policy out. Validation itself is the engine's
//! (`PolicyBuilder::build`); this module only phrases its verdicts in Python's names and
//! units, quoting the value exactly as the caller wrote it.

use std::str::FromStr;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple, PyType};
use retryrs::{Given, Jitter, Policy, PolicyBuilder, PolicyError, Setting, Unit};

use crate::budget::PyRetryBudget;
use crate::convert::{ms, repr, seconds};
use crate::host_policy::{Hooks, HostPolicy, RetryOn};

/// The options Python has beyond the core's knob table (which supplies the rest, in the
/// contract's snake_case spelling).
pub const HOST_ONLY: [&str; 8] =
    ["retry_on", "retry_after", "retry_on_result", "on_event", "attempt_timeout", "reraise", "wait", "before_sleep"];

/// Every keyword a Retrier takes: the knob table's, then Python's own (`attempt_timeout`
/// is both: a knob of the table, which `from_policy` also takes to override a document's),
/// then the breaker (an engine object like the budget, not a knob of the table).
pub fn known() -> impl Iterator<Item = &'static str> {
    retryrs::KNOBS
        .iter()
        .map(|k| k.name)
        .chain(HOST_ONLY.into_iter().filter(|n| retryrs::knob::knob(n).is_none()))
        .chain(["breaker"])
}

/// Everything a Retrier holds, built from its keyword arguments.
pub fn parse(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<HostPolicy> {
    check_names(options, "Retrier()")?;
    let (builder, budget) = knobs(Policy::builder(), options)?;
    let policy = build(builder, options)?;
    let mut host = host_parts(py, Arc::new(policy), budget.flatten(), options, None)?;
    host.named = options.is_some_and(|o| o.contains("name").unwrap_or(false));
    Ok(host)
}

/// `r.replace(**overrides)`: `base`'s policy and options with `options` given again, as
/// the constructor takes them (same names, same errors). What is not given is shared: the
/// budget, the breaker, the listeners, the hooks.
pub fn replace(py: Python<'_>, base: &HostPolicy, options: Option<&Bound<'_, PyDict>>) -> PyResult<HostPolicy> {
    check_names(options, "Retrier.replace()")?;
    let (builder, budget) = knobs(PolicyBuilder::from(&*base.policy), options)?;
    let policy = build(builder, options)?;
    let budget = budget.unwrap_or_else(|| base.budget.as_ref().map(|b| b.clone_ref(py)));
    let mut host = host_parts(py, Arc::new(policy), budget, options, Some(base))?;
    host.named = base.named || options.is_some_and(|o| o.contains("name").unwrap_or(false));
    Ok(host)
}

/// The retrier behind `@r` on `func`: `r` itself, or, when `r` was given no name, `r`
/// named after the function (its qualified name), sharing everything, stats included.
pub fn named_for(py: Python<'_>, base: &Arc<HostPolicy>, qualname: &str) -> PyResult<Arc<HostPolicy>> {
    let builder = PolicyBuilder::from(&*base.policy).name(qualname);
    let policy = Arc::new(build(builder, None)?);
    let mut host = host_parts(py, policy, base.budget.as_ref().map(|b| b.clone_ref(py)), None, Some(base))?;
    host.named = true;
    host.stats = base.stats.clone();
    Ok(Arc::new(host))
}

/// Refuses a keyword that is neither a knob nor one of Python's options, naming them all.
fn check_names(options: Option<&Bound<'_, PyDict>>, what: &str) -> PyResult<()> {
    let Some(options) = options else { return Ok(()) };
    for key in options.keys() {
        let key: String = key.extract()?;
        if !known().any(|k| k == key) {
            return Err(PyTypeError::new_err(format!(
                "{what} got an unexpected keyword argument '{key}' (known: {})",
                known().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// The knobs given in `options` set on `builder` (validated when it is built); the budget
/// given, if one was (`Some(None)`: `budget=None`, no budget).
type Knobs = (PolicyBuilder, Option<Option<Py<PyRetryBudget>>>);

fn knobs(mut builder: PolicyBuilder, options: Option<&Bound<'_, PyDict>>) -> PyResult<Knobs> {
    let get = |key: &str| -> Option<Bound<'_, PyAny>> { options.and_then(|o| o.get_item(key).ok().flatten()) };
    // Present and not None.
    let some = |key: &str| get(key).filter(|v| !v.is_none());

    // The numeric knobs, straight from the table: Python speaks seconds for durations.
    for k in retryrs::knob::numeric() {
        let setting = match get(k.name) {
            None => continue,
            Some(v) if v.is_none() && k.can_be_off => Setting::Off,
            // None means "off"; a knob that cannot be off says so rather than quietly
            // taking its default (Node refuses null the same way).
            Some(v) if v.is_none() => return Err(not_off(k.name)),
            Some(v) => Setting::Number(match k.unit {
                Unit::Count => whole(&v, k.name)?,
                Unit::Duration => ms(seconds(&v, k.name)?),
                _ => number(&v, k.name)?,
            }),
        };
        builder = builder.set(k.name, setting).map_err(|e| policy_error(&e, options))?;
    }
    for key in ["jitter", "name"] {
        if get(key).is_some_and(|v| v.is_none()) {
            return Err(not_off(key));
        }
    }
    if let Some(v) = some("jitter") {
        let text = v.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "jitter must be a str such as \"full\" or \"proportional(0.2)\", got {}",
                repr(&v)
            ))
        })?;
        builder = builder.jitter(Jitter::from_str(&text.to_cow()?).map_err(|e| policy_error(&e, options))?);
    }
    if let Some(v) = some("name") {
        let name =
            v.cast::<PyString>().map_err(|_| PyTypeError::new_err(format!("name must be a str, got {}", repr(&v))))?;
        builder = builder.name(name.to_cow()?);
    }
    match get("seed") {
        None => {}
        Some(v) if v.is_none() => builder = builder.seed(None),
        Some(v) => builder = builder.seed(Some(seed(&v)?)),
    }
    let budget = match get("budget") {
        None => None,
        Some(v) if v.is_none() => Some(None),
        Some(v) => Some(Some(
            v.cast::<PyRetryBudget>()
                .map_err(|_| PyTypeError::new_err(format!("budget must be a retryrs.RetryBudget, got {}", repr(&v))))?
                .clone()
                .unbind(),
        )),
    };
    if let Some(b) = &budget {
        builder = builder.budget(b.as_ref().map(|b| b.get().inner.clone()));
    }
    match get("breaker") {
        None => {}
        Some(v) if v.is_none() => builder = builder.breaker(None),
        Some(v) => {
            let b = v.cast::<crate::breaker::PyCircuitBreaker>().map_err(|_| {
                PyTypeError::new_err(format!("breaker must be a retryrs.CircuitBreaker, got {}", repr(&v)))
            })?;
            builder = builder.breaker(Some(b.get().inner.clone()));
        }
    }
    Ok((builder, budget))
}

/// `Retrier.from_policy(policy, retry_on=..., max_attempts=...)`: a document's policy with
/// the parts only code can give, and any knob given again (as the constructor takes it).
pub fn from_policy(
    py: Python<'_>,
    policy: &crate::document::PyPolicy,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<HostPolicy> {
    check_names(options, "Retrier.from_policy()")?;
    // A hedging policy makes a Retrier whose async calls hedge (retryrs._hedge); its
    // blocking calls and loop forms refuse it, saying why (crate::hedged::refusal).
    let (builder, budget) = knobs(PolicyBuilder::from(&*policy.policy), options)?;
    let built = Arc::new(build(builder, options)?);
    let budget = budget.unwrap_or_else(|| policy.budget.as_ref().map(|b| b.clone_ref(py)));
    host_parts(py, built, budget, options, None)
}

/// The Python-only options (HOST_ONLY) around a validated engine policy: those given in
/// `options`, else `base`'s (a replaced retrier's), else their defaults.
fn host_parts(
    py: Python<'_>,
    policy: Arc<Policy>,
    budget: Option<Py<PyRetryBudget>>,
    options: Option<&Bound<'_, PyDict>>,
    base: Option<&HostPolicy>,
) -> PyResult<HostPolicy> {
    let get = |key: &str| -> Option<Bound<'_, PyAny>> { options.and_then(|o| o.get_item(key).ok().flatten()) };
    let some = |key: &str| get(key).filter(|v| !v.is_none());
    // `Some(given)` when the option was given (None included), else None: keep the base's.
    let given = |key: &str| get(key).map(|v| (!v.is_none()).then_some(v));
    let kept = |f: &Option<Py<PyAny>>| f.as_ref().map(|f| f.clone_ref(py));
    let retry_on = match (given("retry_on"), base) {
        (Some(Some(v)), _) => retry_on(&v)?,
        (None, Some(base)) => base.retry_on.clone_ref(py),
        _ => RetryOn::Default,
    };
    let retry_after = match (given("retry_after"), base) {
        (None, Some(base)) => kept(&base.retry_after),
        (v, _) => callable_or_none(v.flatten(), "retry_after", "a callable exc -> seconds | timedelta | None")?,
    };
    let retry_on_result = match (given("retry_on_result"), base) {
        (None, Some(base)) => kept(&base.retry_on_result),
        (v, _) => callable_or_none(v.flatten(), "retry_on_result", "a callable value -> bool (True: retry)")?,
    };
    let on_event = match (given("on_event"), base) {
        (None, Some(base)) => kept(&base.on_event),
        (v, _) => crate::listeners::on_event(v.flatten())?,
    };
    let reraise = match (given("reraise"), base) {
        (None, Some(base)) => base.reraise,
        (v, _) => match v.flatten() {
            None => false,
            Some(v) => v.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
                PyTypeError::new_err(format!("reraise must be a bool (True or False), got {}", repr(&v)))
            })?,
        },
    };
    // A knob of the core's policy; `from_policy` may override a document's (in
    // `Retrier(...)` the policy already holds it: setting it again changes nothing).
    let policy = match some("attempt_timeout") {
        None => policy,
        Some(v) => {
            let timeout = Setting::Number(ms(seconds(&v, "attempt_timeout")?));
            let builder = PolicyBuilder::from(&*policy).set("attempt_timeout", timeout);
            Arc::new(builder.and_then(PolicyBuilder::build).map_err(|e| policy_error(&e, options))?)
        }
    };
    let attempt_timeout = policy.attempt_timeout().map(|d| d.as_secs_f64());
    let wait = match (given("wait"), base) {
        (None, Some(base)) => kept(&base.wait),
        (v, _) => callable_or_none(v.flatten(), "wait", "a callable (attempt, failure, delay) -> seconds | None")?,
    };
    let before_sleep = match (given("before_sleep"), base) {
        (None, Some(base)) => kept(&base.before_sleep),
        (v, _) => callable_or_none(
            v.flatten(),
            "before_sleep",
            "a callable (attempt, failure, delay) -> None | False (False or raising retryrs.StopRetrying stops)",
        )?,
    };
    // A hedged call launches attempts on the hedging delay, not after a failure's wait:
    // the wait hooks would never run, so they are refused rather than ignored.
    if policy.hedging().is_some() && (wait.is_some() || before_sleep.is_some()) {
        return Err(PyValueError::new_err(
            "wait= and before_sleep= do not apply to a hedging retrier (its attempts are launched by the hedging \
             delay, not after a wait): remove them or the policy's hedge",
        ));
    }
    let hooks = Hooks { retry_after, retry_on_result, on_event, reraise, wait, before_sleep };
    Ok(HostPolicy::new(py, policy, retry_on, hooks, budget, attempt_timeout))
}

fn build(builder: PolicyBuilder, options: Option<&Bound<'_, PyDict>>) -> PyResult<Policy> {
    builder.build().map_err(|e| policy_error(&e, options))
}

/// The engine's verdict on a knob, rendered once by the core in Python's names (the
/// keyword arguments) with each value quoted as the caller wrote it, or in seconds if defaulted.
fn policy_error(e: &PolicyError, options: Option<&Bound<'_, PyDict>>) -> PyErr {
    let value = |knob: &'static str, v: &Given| -> String {
        if let Some(given) = options.and_then(|o| o.get_item(knob).ok().flatten()) {
            return repr(&given);
        }
        let duration = retryrs::knob::knob(knob).is_some_and(|k| k.unit == Unit::Duration);
        match v {
            Given::Number(n) if duration => format!("{} (the default)", n / 1000.0),
            Given::Number(n) => format!("{n}"),
            Given::Whole(n) => format!("{n}"),
            Given::Text(t) => t.clone(),
        }
    };
    PyValueError::new_err(e.render(&|k| retryrs::Spelling::Python.name(k), &value))
}

/// A count: an int (not a bool), as a float for the builder, which owns the range rule.
fn whole(v: &Bound<'_, PyAny>, knob: &str) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{knob} must be an int, got {}", repr(v))));
    }
    // Negative or huge values go to validation, which names them (quoting the original).
    Ok(match v.extract::<i128>() {
        Ok(n) if n < 0 => -1.0,
        Ok(n) => n as f64,
        Err(_) => f64::INFINITY,
    })
}

fn number(v: &Bound<'_, PyAny>, knob: &str) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{knob} must be a number, got {}", repr(v))));
    }
    v.extract::<f64>().map_err(|_| PyTypeError::new_err(format!("{knob} must be a number, got {}", repr(v))))
}

fn seed(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("seed must be an int, got {}", repr(v))));
    }
    v.extract::<u64>().map_err(|_| PyValueError::new_err(format!("seed must be an int in [0, 2**64), got {}", repr(v))))
}

/// An exception class, a tuple of them, or a predicate.
fn retry_on(v: &Bound<'_, PyAny>) -> PyResult<RetryOn> {
    let is_exc_class = |t: &Bound<'_, PyAny>| {
        t.cast::<PyType>().is_ok_and(|t| t.is_subclass_of::<pyo3::exceptions::PyBaseException>().unwrap_or(false))
    };
    if is_exc_class(v) {
        return Ok(RetryOn::Classes(v.clone().unbind()));
    }
    if let Ok(t) = v.cast::<PyTuple>() {
        if t.iter().all(|c| is_exc_class(&c)) {
            return Ok(RetryOn::Classes(v.clone().unbind()));
        }
    } else if v.is_instance_of::<PyType>() {
        // A class is callable, so `retry_on=str` would pass as a predicate that retries
        // every exception (str(exc) is truthy): a class must be an exception class.
        return Err(PyTypeError::new_err(format!(
            "retry_on must be an exception class, a tuple of them, or a callable exc -> bool; {} is a class but not an exception class",
            repr(v)
        )));
    } else if v.is_callable() {
        return Ok(RetryOn::Predicate(v.clone().unbind()));
    }
    Err(PyTypeError::new_err(format!(
        "retry_on must be an exception class, a tuple of them, or a callable exc -> bool, got {}",
        repr(v)
    )))
}

fn callable_or_none(v: Option<Bound<'_, PyAny>>, knob: &str, what: &str) -> PyResult<Option<Py<PyAny>>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_callable() => Ok(Some(v.unbind())),
        Some(v) => Err(PyTypeError::new_err(format!("{knob} must be {what}, got {}", repr(&v)))),
    }
}

/// One row of `_knobs()`: name, unit, default, whether it can be off.
type KnobRow = (&'static str, &'static str, Py<PyAny>, bool);

/// The core's knob table in Python's spelling and units, for tests that check the stubs
/// and signatures against it: `(name, unit, default, can_be_off)` per knob, then the
/// Python-only options and the breaker as `(name, "host", None, True)`.
#[pyfunction]
pub fn _knobs(py: Python<'_>) -> PyResult<Vec<KnobRow>> {
    let mut out = Vec::new();
    for k in retryrs::KNOBS {
        let unit = match k.unit {
            Unit::Count => "count",
            Unit::Duration => "seconds",
            Unit::Factor => "factor",
            Unit::Jitter => "jitter",
            Unit::Text => "text",
            Unit::Seed => "seed",
            Unit::Budget => "budget",
        };
        let default = match (k.default, k.unit) {
            (retryrs::knob::Default::Number(n), Unit::Count) => (n as u64).into_pyobject(py)?.into_any().unbind(),
            (retryrs::knob::Default::Number(ms), Unit::Duration) => {
                (ms / 1000.0).into_pyobject(py)?.into_any().unbind()
            }
            (retryrs::knob::Default::Number(n), _) => n.into_pyobject(py)?.into_any().unbind(),
            (retryrs::knob::Default::Text(t), _) => PyString::new(py, t).into_any().unbind(),
            (retryrs::knob::Default::Off, _) => py.None(),
        };
        out.push((k.name, unit, default, k.can_be_off));
    }
    for name in HOST_ONLY.into_iter().filter(|n| retryrs::knob::knob(n).is_none()).chain(["breaker"]) {
        // reraise is a plain bool; the others are off (None) by default.
        let flag = name == "reraise";
        let default = if flag { PyBool::new(py, false).to_owned().into_any().unbind() } else { py.None() };
        out.push((name, "host", default, !flag));
    }
    Ok(out)
}

/// The error for `knob=None` on a knob that cannot be turned off.
fn not_off(knob: &str) -> PyErr {
    PyTypeError::new_err(format!("{knob} cannot be None (it cannot be turned off): leave it out for its default"))
}
