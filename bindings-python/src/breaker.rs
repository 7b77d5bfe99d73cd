//! `CircuitBreaker`: the engine's shared circuit breaker, handed to any number of
//! Retriers (`Retrier(breaker=...)`). Every decision is the core's (`retryrs::breaker`).

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt};
use retryrs::{BreakerConfig, BreakerModel, CircuitBreaker};

use crate::convert::{repr, seconds};
use crate::state::now;

/// A circuit breaker shared by every call of every Retrier that holds it: after
/// `failures` failed calls in a row (model "consecutive"), when failures reach
/// `failure_ratio` of at least `minimum_throughput` calls within `sampling_duration`
/// (model "sampling", Polly v8's), or of the last `window_size` calls once
/// `minimum_calls` are counted (model "count", resilience4j's), calls fail at once with
/// `RetryExhausted(reason="circuit_open")` for `break_duration` seconds; then
/// `half_open_probes` probe calls go through, and a successful one closes it (with
/// `judge_all_probes`: all of them are judged together). `slow_call_duration` (ratio
/// models) makes calls that long slow, opening it at `slow_call_ratio`; `count_permanent`
/// counts permanent failures too; `per_attempt` counts attempts. `isolate()` holds it open
/// and `reset()` closes it. Left out (None), a knob takes its default: failures 5; Polly
/// v8's failure_ratio 0.1, minimum_throughput 100, sampling_duration 30 s; resilience4j's
/// failure_ratio 0.5, minimum_calls 100, window_size 100; break_duration 5 s;
/// half_open_probes 1; break_multiplier 1 (no growth); max_break_duration 1 day;
/// slow_call_ratio 1. docs/breaker.md maps Polly's and resilience4j's options.
///
/// Parameters
/// ----------
/// model (str, default 'consecutive'): "consecutive", "sampling" (Polly v8) or "count"
///     (resilience4j). A setting given to a model that has none is a TypeError naming
///     the models that own it.
/// failures (int, default 5): consecutive: failed calls in a row that open it (>= 1).
/// failure_ratio (float, default 0.1 sampling, 0.5 count): the share of failed calls
///     that opens it, in (0, 1].
/// minimum_throughput (int, default 100): sampling: calls in the window before it may
///     open (>= 2).
/// sampling_duration (float, default 30.0): sampling: the sliding window, in seconds
///     (0.5 to one day).
/// minimum_calls (int, default 100): count: calls counted before it may open (>= 1).
/// window_size (int, default 100): count: how many of the last calls it judges (1 to
///     1000000).
/// break_duration (float, default 5.0): how long it stays open before a probe, in
///     seconds (0.001 to one day).
/// half_open_probes (int, default 1): probe calls let through at once when half-open.
/// break_multiplier (float, default 1.0): growth of the break on each open in a row
///     (>= 1).
/// max_break_duration (float or None, default None): the longest break when it grows,
///     in seconds (break_duration to one day); None: one day.
/// per_attempt (bool, default False): count each attempt instead of each call.
/// count_permanent (bool, default False): count a permanent failure as a failure
///     (False: a success, the dependency answered).
/// slow_call_duration (float or None, default None): sampling and count: a call this
///     long or longer is slow, in seconds (0.001 to one day); None: none is.
/// slow_call_ratio (float, default 1.0): sampling and count: the share of slow calls
///     that opens it, in (0, 1].
/// judge_all_probes (bool, default False): True: let exactly half_open_probes probes go
///     and close only if their failure ratio is under the threshold (resilience4j);
///     False: the first probe decides (Polly).
#[pyclass(frozen, module = "retryrs", name = "CircuitBreaker")]
pub struct PyCircuitBreaker {
    pub inner: Arc<CircuitBreaker>,
}

/// What `__reduce__` gives pickle: `retryrs._pickle.breaker` and its (model, options).
type Reduced<'py> = (Bound<'py, PyAny>, (&'static str, Bound<'py, PyDict>));

impl PyCircuitBreaker {
    /// "consecutive", "sampling" or "count".
    pub fn model_name(&self) -> &'static str {
        self.inner.config().model.name()
    }
}

#[pymethods]
impl PyCircuitBreaker {
    #[new]
    #[pyo3(
        signature = (model="consecutive", *, failures=None, failure_ratio=None, minimum_throughput=None, sampling_duration=None, minimum_calls=None, window_size=None, break_duration=None, half_open_probes=None, break_multiplier=None, max_break_duration=None, per_attempt=None, count_permanent=None, slow_call_duration=None, slow_call_ratio=None, judge_all_probes=None),
        text_signature = "(model='consecutive', *, failures=None, failure_ratio=None, minimum_throughput=None, sampling_duration=None, minimum_calls=None, window_size=None, break_duration=None, half_open_probes=None, break_multiplier=None, max_break_duration=None, per_attempt=False, count_permanent=False, slow_call_duration=None, slow_call_ratio=None, judge_all_probes=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &str,
        failures: Option<&Bound<'_, PyAny>>,
        failure_ratio: Option<&Bound<'_, PyAny>>,
        minimum_throughput: Option<&Bound<'_, PyAny>>,
        sampling_duration: Option<&Bound<'_, PyAny>>,
        minimum_calls: Option<&Bound<'_, PyAny>>,
        window_size: Option<&Bound<'_, PyAny>>,
        break_duration: Option<&Bound<'_, PyAny>>,
        half_open_probes: Option<&Bound<'_, PyAny>>,
        break_multiplier: Option<&Bound<'_, PyAny>>,
        max_break_duration: Option<&Bound<'_, PyAny>>,
        per_attempt: Option<&Bound<'_, PyAny>>,
        count_permanent: Option<&Bound<'_, PyAny>>,
        slow_call_duration: Option<&Bound<'_, PyAny>>,
        slow_call_ratio: Option<&Bound<'_, PyAny>>,
        judge_all_probes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Each model's own knobs; one given to another model is a mistake worth naming.
        let given = |v: Option<&Bound<'_, PyAny>>| v.is_some_and(|v| !v.is_none());
        let own: [(&str, &str, bool); 6] = [
            ("failures", "consecutive", given(failures)),
            ("minimum_throughput", "sampling", given(minimum_throughput)),
            ("sampling_duration", "sampling", given(sampling_duration)),
            ("minimum_calls", "count", given(minimum_calls)),
            ("window_size", "count", given(window_size)),
            ("failure_ratio", "sampling\" or model=\"count", given(failure_ratio) && model == "consecutive"),
        ];
        if let Some((knob, owner, _)) = own.iter().find(|(_, owner, set)| *set && !owner.contains(model)) {
            return Err(PyTypeError::new_err(format!("CircuitBreaker: {knob} belongs to model=\"{owner}\"")));
        }
        let model = match model {
            "consecutive" => BreakerModel::Consecutive { failures: count(failures, "failures", 5)? },
            "sampling" => BreakerModel::Sampling {
                failure_ratio: number(failure_ratio, "failure_ratio", 0.1)?,
                minimum_throughput: count(minimum_throughput, "minimum_throughput", 100)?,
                sampling_duration: duration(sampling_duration, "sampling_duration", 30.0)?,
            },
            "count" => BreakerModel::Count {
                failure_ratio: number(failure_ratio, "failure_ratio", 0.5)?,
                minimum_calls: count(minimum_calls, "minimum_calls", 100)?,
                window_size: count(window_size, "window_size", 100)?,
            },
            other => {
                return Err(PyValueError::new_err(format!(
                    "CircuitBreaker model must be \"consecutive\", \"sampling\" or \"count\", got {other:?}"
                )))
            }
        };
        let mut config = BreakerConfig::new(model);
        config.break_duration = duration(break_duration, "break_duration", 5.0)?;
        config.half_open_probes = count(half_open_probes, "half_open_probes", 1)?;
        config.break_multiplier = number(break_multiplier, "break_multiplier", 1.0)?;
        config.max_break_duration = match max_break_duration.filter(|v| !v.is_none()) {
            None => None,
            some => Some(duration(some, "max_break_duration", 0.0)?),
        };
        config.per_attempt = flag(per_attempt, "per_attempt")?;
        config.count_permanent = flag(count_permanent, "count_permanent")?;
        config.judge_all_probes = flag(judge_all_probes, "judge_all_probes")?;
        config.slow_call_duration = match slow_call_duration.filter(|v| !v.is_none()) {
            None => None,
            some => Some(duration(some, "slow_call_duration", 0.0)?),
        };
        config.slow_call_ratio = number(slow_call_ratio, "slow_call_ratio", 1.0)?;
        let inner = CircuitBreaker::new(config)
            .map_err(|e| PyValueError::new_err(format!("CircuitBreaker {}", e.render(retryrs::Spelling::Python))))?;
        Ok(PyCircuitBreaker { inner: Arc::new(inner) })
    }

    /// "closed", "open", "half_open" or "isolated", now (virtual time under
    /// `retryrs.testing`).
    #[getter]
    fn state(&self, py: Python<'_>) -> &'static str {
        self.inner.state(now(&crate::testing::clock(py))).as_str()
    }

    /// Seconds left before a probe may go (0.0 unless open).
    #[getter]
    fn retry_in(&self, py: Python<'_>) -> f64 {
        self.inner.retry_in(now(&crate::testing::clock(py))).as_secs_f64()
    }

    /// Calls refused so far.
    #[getter]
    fn rejections(&self) -> u64 {
        self.inner.rejections()
    }

    /// "consecutive", "sampling" or "count".
    #[getter]
    fn model(&self) -> &'static str {
        self.model_name()
    }

    /// Holds it open until `reset()`: every call fails at once with
    /// `RetryExhausted(reason="circuit_open")` (Polly's Isolate, resilience4j's
    /// FORCED_OPEN). State "isolated".
    fn isolate(&self) {
        self.inner.isolate()
    }

    /// Closes it, whatever its state, with its counts started over.
    fn reset(&self) {
        self.inner.reset()
    }

    /// Pickles by its configuration: the process that unpickles gets a fresh, closed
    /// breaker (its state is this process's view of a server).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let c = self.inner.config();
        let kw = PyDict::new(py);
        match c.model {
            BreakerModel::Consecutive { failures } => kw.set_item("failures", failures)?,
            BreakerModel::Sampling { failure_ratio, minimum_throughput, sampling_duration } => {
                kw.set_item("failure_ratio", failure_ratio)?;
                kw.set_item("minimum_throughput", minimum_throughput)?;
                kw.set_item("sampling_duration", sampling_duration.as_secs_f64())?;
            }
            BreakerModel::Count { failure_ratio, minimum_calls, window_size } => {
                kw.set_item("failure_ratio", failure_ratio)?;
                kw.set_item("minimum_calls", minimum_calls)?;
                kw.set_item("window_size", window_size)?;
            }
        }
        kw.set_item("break_duration", c.break_duration.as_secs_f64())?;
        kw.set_item("half_open_probes", c.half_open_probes)?;
        kw.set_item("break_multiplier", c.break_multiplier)?;
        kw.set_item("max_break_duration", c.max_break_duration.map(|d| d.as_secs_f64()))?;
        kw.set_item("per_attempt", c.per_attempt)?;
        kw.set_item("count_permanent", c.count_permanent)?;
        kw.set_item("judge_all_probes", c.judge_all_probes)?;
        kw.set_item("slow_call_duration", c.slow_call_duration.map(|d| d.as_secs_f64()))?;
        kw.set_item("slow_call_ratio", c.slow_call_ratio)?;
        Ok((py.import("retryrs._pickle")?.getattr("breaker")?, (self.model(), kw)))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("CircuitBreaker(model={:?}, state={:?})", self.model(), self.state(py))
    }
}

fn count(v: Option<&Bound<'_, PyAny>>, name: &str, default: u32) -> PyResult<u32> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(default) };
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("CircuitBreaker {name} must be an int, got {}", repr(v))));
    }
    match v.extract::<i128>() {
        Ok(n) if n < 0 => Err(PyValueError::new_err(format!("CircuitBreaker {name} must be >= 0, got {n}"))),
        Ok(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        Err(_) => Ok(u32::MAX),
    }
}

/// True or False (None: False), named when it is anything else.
fn flag(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<bool> {
    match v.filter(|v| !v.is_none()) {
        None => Ok(false),
        Some(v) if v.is_instance_of::<PyBool>() => Ok(v.is_truthy()?),
        Some(v) => Err(PyTypeError::new_err(format!("CircuitBreaker {name} must be True or False, got {}", repr(v)))),
    }
}

fn number(v: Option<&Bound<'_, PyAny>>, name: &str, default: f64) -> PyResult<f64> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(default) };
    if !v.is_instance_of::<PyBool>() && (v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>()) {
        return Ok(v.extract::<f64>().unwrap_or(f64::INFINITY));
    }
    Err(PyTypeError::new_err(format!("CircuitBreaker {name} must be a number, got {}", repr(v))))
}

/// Seconds (a number or a timedelta), as the Retrier's durations.
fn duration(v: Option<&Bound<'_, PyAny>>, name: &str, default: f64) -> PyResult<Duration> {
    let secs = match v.filter(|v| !v.is_none()) {
        None => default,
        Some(v) => seconds(v, name)?,
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "CircuitBreaker {name} must be finite and >= 0 seconds, got {secs}"
        )));
    }
    Ok(Duration::from_secs_f64(secs.min(1e12)))
}
