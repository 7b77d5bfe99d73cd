//! `Retrier`: an immutable policy (engine and host parts), and the blocking executor. The happy path of
//! `call` reads the clock once, calls the function, and returns: no engine state, no
//! Python object beyond what the function itself makes. Engine state starts at the first
//! failure.
//!
//! This file holds the class and its Python methods (one `#[pymethods]` block, as pyo3
//! requires without its `multiple-pymethods` feature); its parts live in `retrier/`: the
//! blocking executor (`blocking.rs`), what the engine hears before a call's engine state
//! starts (`stateless.rs`), the drivers' steps (`drivers.rs`), the HTTP helpers' Retrier
//! (`classifier.rs`), and its repr and constructor options (`describe.rs`).

mod blocking;
mod classifier;
mod describe;
mod drivers;
mod stateless;

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::preload::Lookup;
use pyo3::types::{PyDict, PyTuple};

use crate::attempt::AttemptInfo;
use crate::host_policy::{HostPolicy, RetryOn};
use crate::step::{FirstAttempt, Step};
use crate::stepped::SteppedCall;
use crate::token::PyCancelToken;

/// Retries a function on transient failures, under one immutable policy. Share it freely
/// between threads and tasks: every call keeps its own state.
///
/// ``r.call(fn, *args)`` and ``await r.call_async(fn, *args)`` run a call; ``@r``
/// decorates a function (sync or ``async def``). Every parameter is keyword-only;
/// durations are in seconds (a float, or a ``datetime.timedelta``).
///
/// Parameters
/// ----------
/// retry_on (exception class, tuple of them, or predicate, default: transient network
///     errors): which failures are retried; a predicate gets the exception and answers
///     True (retry), False (give up) or ``retryrs.DONT_RETRY``.
// knobgen:begin docstring
/// max_attempts (int, default 5): Total calls, the first one included (1 disables
///     retrying).
/// initial_delay (float, default 0.2): Ceiling of the wait after the first failure, in
///     seconds.
/// multiplier (float, default 2.0): Growth of the ceiling per failed attempt.
/// max_delay (float, default 5.0): Cap on every backoff delay (hints are not capped),
///     in seconds.
/// jitter (str, default 'full'): How randomness is mixed into each delay.
/// deadline (Optional[float], default 15.0): Budget for the whole call, attempts and
///     waits included, in seconds; None: no deadline (attempts alone bound the call).
/// seed (Optional[int], default None): A seed for reproducible jitter: same seed, same
///     delays, in every host; None: fresh random jitter on every call.
/// name (str, default 'retry'): Names the retrier in events and errors.
/// budget (Optional[RetryBudget], default None): A retry budget shared with other
///     retriers; None: no budget (retries are not rationed).
/// max_retry_after (Optional[float], default 60.0): The longest server-asked wait
///     accepted; a longer hint ends the call at once (exhausted, reason retry_after), in
///     seconds; None: every Retry-After hint is waited out (the deadline still bounds it).
/// attempt_timeout (Optional[float], default None): Bound on each attempt; an attempt's
///     bound is this or the time left before the deadline, whichever is smaller, in
///     seconds; None: no per-attempt bound (the deadline, if on, still bounds every
///     attempt).
// knobgen:end docstring
/// retry_after (callable or None, default None): the failure's hint: gets the exception,
///     or the value retry_on_result rejected, and returns seconds to wait at least (or
///     None); None reads the exception's ``retry_after`` attribute.
/// retry_on_result (callable or None, default None): value -> bool, True: retry the
///     value (may be async in async calls).
/// on_event (callable, list or tuple of them, or None, default None): listeners told
///     every event of every call, in order (``retryrs.log_events()`` logs them).
/// breaker (CircuitBreaker or None, default None): a circuit breaker shared with other
///     retriers; None: no breaker.
/// reraise (bool, default False): True: exhaustion by a transient error raises that
///     error itself (the history as its ``.retryrs_history``); exhaustion on a rejected
///     value still raises RetryExhausted.
/// wait (callable or None, default None): (attempt, failure, delay) -> seconds to wait
///     instead of the engine's ``delay``, or None for the engine's; the deadline and
///     max_retry_after still apply (may be async in async calls).
/// before_sleep (callable or None, default None): (attempt, failure, delay), before each
///     wait: returning False or raising ``retryrs.StopRetrying`` stops the call
///     (RetryExhausted, reason "stopped").
///
/// Hedged calls: a policy document's ``hedge`` (``Retrier.from_policy``) makes
/// ``call_async`` launch attempts side by side on the hedging delay; ``wait`` and
/// ``before_sleep`` do not apply to it.
#[pyclass(frozen, module = "retryrs", name = "Retrier")]
pub struct Retrier {
    pub host: Arc<HostPolicy>,
    pub cancel: Option<Py<PyCancelToken>>,
    /// Whether the asyncio driver interrupts an attempt at its bound (False for a helper
    /// that bounds its requests itself, so a request past it is judged as its client's
    /// timeout by the HTTP rules).
    pub interrupts: bool,
}

static DRIVE: Lookup = Lookup::new("retryrs._aio", "drive");
static DECORATE: Lookup = Lookup::new("retryrs._aio", "decorate");
/// The hedged call's driver.
static HEDGE: Lookup = Lookup::new("retryrs._hedge", "drive");
/// The loop form's classes.
static ATTEMPTS: Lookup = Lookup::new("retryrs._loop", "Attempts");
static ASYNC_ATTEMPTS: Lookup = Lookup::new("retryrs._loop", "AsyncAttempts");

/// Looks up the async and hedged drivers and the coroutine type now (package import: see
/// preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    for lookup in [&DRIVE, &DECORATE, &HEDGE, &ATTEMPTS, &ASYNC_ATTEMPTS] {
        lookup.get(py)?;
    }
    COROUTINE.import(py, "types", "CoroutineType")?;
    crate::attempt::loaded(py, &TRIO, "trio");
    Ok(())
}

static TRIO: PyOnceLock<Py<pyo3::types::PyString>> = PyOnceLock::new();
static COROUTINE: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();

/// A native coroutine (what an `async def` returns): one pointer comparison, so the
/// happy path pays nothing measurable for the check.
fn is_coroutine(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let coroutine = COROUTINE.import(py, "types", "CoroutineType")?;
    Ok(value.get_type().is(coroutine))
}

impl Retrier {
    /// The knob `name` of the table, as the generated getters read it.
    fn knob(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        Ok(crate::knobs::value(py, &self.host.policy, self.host.budget.as_ref(), name)?.unwrap_or_else(|| py.None()))
    }
}

/// A non-callable would fail every attempt with a TypeError: say so before the first.
fn not_callable(func: &Bound<'_, PyAny>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!("Retrier.call needs a callable, got {}", crate::convert::repr(func)))
}

#[pymethods]
impl Retrier {
    /// `Retrier(*, retry_on=OSError, **knobs and options)`: the knobs are the core's table
    /// (in seconds), the signature below is written from it by tools/knobgen.
    #[new]
    // knobgen:begin signature
    #[pyo3(signature = (**options), text_signature = "(*, retry_on=None, max_attempts=5, initial_delay=0.2, multiplier=2.0, max_delay=5.0, jitter='full', deadline=15.0, seed=None, name='retry', budget=None, max_retry_after=60.0, attempt_timeout=None, retry_after=None, retry_on_result=None, on_event=None, breaker=None, reraise=False, wait=None, before_sleep=None)")]
    // knobgen:end signature
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(Retrier { host: Arc::new(crate::options::parse(py, options)?), cancel: None, interrupts: true })
    }

    /// `Retrier.from_policy(policies["payments"], retry_on=..., on_event=...)`: a retrier
    /// running a document's policy (see `retryrs.load_policies`), with the parts only code
    /// can give (retry_on, retry_after, retry_on_result, on_event, attempt_timeout,
    /// reraise, wait, before_sleep) and any knob given again to override the document's.
    ///
    /// Parameters
    /// ----------
    /// policy (Policy): a policy of a loaded document (``load_policies(...)["name"]``).
    /// retry_on (exception class, tuple of them, or predicate, default: transient network
    ///     errors): which failures are retried, as ``Retrier(retry_on=...)``.
    /// retry_after (callable or None, default None): the failure's hint, as Retrier's.
    /// retry_on_result (callable or None, default None): value -> bool, as Retrier's.
    /// on_event (callable, list or tuple of them, or None, default None): listeners.
    /// attempt_timeout (float or None, default None): bound on each attempt, in seconds.
    /// reraise (bool, default False): raise the last transient error itself when
    ///     retries run out, as Retrier's.
    /// wait (callable or None, default None): the exact wait hook, as Retrier's.
    /// before_sleep (callable or None, default None): the hook before each wait, as
    ///     Retrier's.
    /// **knobs (default: the document's): any knob of Retrier (max_attempts, deadline,
    ///     ...), same names, units and errors, overriding the document's value.
    #[staticmethod]
    #[pyo3(signature = (policy, /, **options), text_signature = "(policy, /, *, retry_on=None, retry_after=None, retry_on_result=None, on_event=None, attempt_timeout=None, reraise=False, wait=None, before_sleep=None, **knobs)")]
    fn from_policy(
        py: Python<'_>,
        policy: &Bound<'_, crate::document::PyPolicy>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        Ok(Retrier {
            host: Arc::new(crate::options::from_policy(py, policy.get(), options)?),
            cancel: None,
            interrupts: true,
        })
    }

    /// Calls `func(*args, **kwargs)`, retrying transient failures; returns its value.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if !func.is_callable() {
            return Err(not_callable(func));
        }
        self.run(py, func, args, kwargs, false)
    }

    /// `await r.call_async(func, *args, **kwargs)` for coroutine functions.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call_async<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !func.is_callable() {
            return Err(not_callable(func));
        }
        if slf.get().host.policy.hedging().is_some() {
            return HEDGE.get(slf.py())?.call1((slf, func, args, kwargs));
        }
        DRIVE.get(slf.py())?.call1((slf, func, args, kwargs))
    }

    /// `@retrier` on a sync or async function (or method): keeps its name, docstring and
    /// signature.
    fn __call__<'py>(slf: &Bound<'py, Self>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        DECORATE.get(slf.py())?.call1((slf, func))
    }

    /// `for attempt in retrier: with attempt: ...` -- the loop form.
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ATTEMPTS.get(slf.py())?.call1((slf,))
    }

    /// `async for attempt in retrier: with attempt: ...`
    fn __aiter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ASYNC_ATTEMPTS.get(slf.py())?.call1((slf,))
    }

    /// The same retrier whose calls end with `RetryCancelled` as soon as `token` fires.
    fn with_cancel(&self, token: Py<PyCancelToken>) -> Self {
        Retrier { host: self.host.clone(), cancel: Some(token), interrupts: self.interrupts }
    }

    /// The same retrier (policy, listener, budget, attempt timeout, cancel token) with
    /// another classification: `retry_on` a tuple of exception classes, `retry_after` the
    /// hint hook (None: the exception's `retry_after` attribute). The HTTP helpers use it:
    /// their verdicts come from the core's HTTP rules, not from the user's `retry_on`.
    /// `interrupts=False`: the asyncio driver leaves each attempt's bound to a helper that
    /// bounds its requests itself (the async httpx transport: a request past it is its
    /// client's timeout, judged by the HTTP rules, not an always-transient AttemptTimeout).
    /// `helper` (the HTTP helper's name) refuses a Retrier whose `retry_on_result` or
    /// `retry_after` hook would otherwise be silently dropped; `max_attempts` overrides the
    /// policy's (a per-request attempt limit).
    /// `unhedged`: the same policy without its hedging section (the helpers' requests that
    /// cannot be sent twice side by side: a non-idempotent method, a one-shot body), run
    /// with the policy's retry knobs.
    #[pyo3(signature = (retry_on, retry_after=None, interrupts=true, helper=None, max_attempts=None, unhedged=false))]
    #[allow(clippy::too_many_arguments)]
    fn _with_classifier(
        &self,
        py: Python<'_>,
        retry_on: Py<PyAny>,
        retry_after: Option<Py<PyAny>>,
        interrupts: bool,
        helper: Option<&str>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        unhedged: bool,
    ) -> PyResult<Self> {
        self.refuse_dropped_hooks(helper)?;
        let policy = self.helper_policy(max_attempts, unhedged)?;
        self.reclassified(py, policy, retry_on, retry_after, interrupts)
    }

    #[getter]
    fn cancel_token(&self, py: Python<'_>) -> Option<Py<PyCancelToken>> {
        self.cancel.as_ref().map(|t| t.clone_ref(py))
    }
    // Every knob of the core's table as a getter, in Python's units (None when off). Not a
    // __getattr__ (as Policy has): that replaces the type's generic attribute lookup, and
    // every `r.call(...)` would pay for it (measured: ~50 ns on bench/python's happy path).
    // knobgen:begin getters
    #[getter]
    fn max_attempts(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "max_attempts")
    }
    #[getter]
    fn initial_delay(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "initial_delay")
    }
    #[getter]
    fn multiplier(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "multiplier")
    }
    #[getter]
    fn max_delay(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "max_delay")
    }
    #[getter]
    fn jitter(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "jitter")
    }
    #[getter]
    fn deadline(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "deadline")
    }
    #[getter]
    fn seed(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "seed")
    }
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "name")
    }
    #[getter]
    fn budget(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "budget")
    }
    #[getter]
    fn max_retry_after(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "max_retry_after")
    }
    #[getter]
    fn attempt_timeout(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.knob(py, "attempt_timeout")
    }
    // knobgen:end getters
    /// The circuit breaker this Retrier shares, or None (a new handle on the same breaker).
    #[getter]
    fn breaker(&self) -> Option<crate::breaker::PyCircuitBreaker> {
        self.host.policy.breaker().map(|b| crate::breaker::PyCircuitBreaker { inner: b.clone() })
    }
    /// The exception classes (or predicate) retried; by default the transient network
    /// errors, as a tuple of the classes that applies now (see `retryrs._defaults`; a
    /// TLS certificate that fails verification is not retried, whatever its class).
    #[getter]
    fn retry_on(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match &self.host.retry_on {
            RetryOn::Classes(c) | RetryOn::Predicate(c) => c.clone_ref(py),
            RetryOn::Default => crate::host_policy::default_retry_on(py)?.unbind(),
        })
    }

    /// `{calls, attempts, retries, successes, rejections, cancellations, exhausted:
    /// {reason: n}}`: what this retrier's calls came to so far (the engine counts every
    /// event; calls are the ended ones).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.host.stats.snapshot();
        let out = PyDict::new(py);
        for (key, n) in [
            ("calls", s.calls),
            ("attempts", s.attempts),
            ("retries", s.retries),
            ("successes", s.successes),
            ("rejections", s.rejections),
            ("cancellations", s.cancellations),
        ] {
            out.set_item(key, n)?;
        }
        let exhausted = PyDict::new(py);
        for reason in retryrs::ExhaustReason::ALL {
            exhausted.set_item(reason.as_str(), s.exhausted(reason))?;
        }
        out.set_item("exhausted", exhausted)?;
        Ok(out)
    }

    /// The retrier `@r` runs `func` with: `r`, or `r` named after `qualname` when it was
    /// given no name (sharing everything, its stats included).
    fn _named(slf: &Bound<'_, Self>, qualname: &str) -> PyResult<Py<Self>> {
        let (py, this) = (slf.py(), slf.get());
        if this.host.named {
            return Ok(slf.clone().unbind());
        }
        let host = crate::options::named_for(py, &this.host, qualname)?;
        let cancel = this.cancel.as_ref().map(|t| t.clone_ref(py));
        Py::new(py, Retrier { host, cancel, interrupts: this.interrupts })
    }

    /// Whether exhaustion by a transient error raises that error itself.
    #[getter]
    fn reraise(&self) -> bool {
        self.host.reraise
    }

    /// `r.replace(max_attempts=3)`: a new Retrier with these options given again (as the
    /// constructor takes them, with its errors) and everything else kept: it shares this
    /// one's budget, breaker, listeners, hooks and cancel token.
    #[pyo3(signature = (**options))]
    fn replace(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let host = crate::options::replace(py, &self.host, options)?;
        Ok(Retrier {
            host: Arc::new(host),
            cancel: self.cancel.as_ref().map(|t| t.clone_ref(py)),
            interrupts: self.interrupts,
        })
    }

    /// `copy.copy(r)`: the same retrier (it is immutable), sharing everything.
    fn __copy__(&self, py: Python<'_>) -> Self {
        Retrier {
            host: self.host.clone(),
            cancel: self.cancel.as_ref().map(|t| t.clone_ref(py)),
            interrupts: self.interrupts,
        }
    }

    /// Pickles by its options: `Retrier(**r._options())`. A budget or breaker is made
    /// anew (fresh, by its own parameters) in the process that unpickles.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        if self.cancel.is_some() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a Retrier with a cancel token cannot be pickled (a token does not cross processes): pickle the \
                 Retrier, then call .with_cancel(token) where it is used",
            ));
        }
        // The options rebuild the knobs, budget and breaker; a policy document's hedging
        // section and a gRPC service config's pushback rule are no constructor option, so
        // an unpickled copy would silently retry where this one hedges.
        let p = &self.host.policy;
        let unexpressed = if p.hedging().is_some() {
            Some("hedges (its hedge section)")
        } else if p.pushback() != retryrs::Pushback::Floor {
            Some("comes from a gRPC service config (its pushback rule)")
        } else {
            None
        };
        if let Some(what) = unexpressed {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "Retrier {:?} cannot be pickled or deep-copied: its policy {what}, which the constructor's \
                 options cannot carry; load the policy document where it is used and call Retrier.from_policy \
                 there (copy.copy shares it)",
                p.name()
            )));
        }
        let rebuild = py.import("retryrs._pickle")?.getattr("retrier")?;
        Ok((rebuild, (self._options(py)?,)))
    }

    /// Every option as the constructor takes it: each knob (budget and breaker included),
    /// then Python's own options that differ from their defaults.
    fn _options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.options(py)
    }

    /// `Retrier(name='rates', max_attempts=5, initial_delay=0.2, ...)`: the name, then
    /// every numeric knob of the core's table (in Python's units), then the jitter.
    fn __repr__(&self, py: Python<'_>) -> String {
        self.repr(py)
    }

    // The asyncio driver's hooks into the engine (see retryrs/_aio.py).

    /// Starts an async call: raises RetryCancelled if the token already fired; returns the
    /// first attempt (`retryrs.current_attempt()`), which also holds the call's start and,
    /// with a circuit breaker, its answer: a refused call raises
    /// RetryExhausted(reason="circuit_open") here.
    fn _start(&self, py: Python<'_>) -> PyResult<AttemptInfo> {
        if let Some(refused) =
            crate::hedged::refusal(&self.host.policy, "the loop form (`for` / `async for attempt in retrier`)")
        {
            return Err(refused);
        }
        if let Some(under) = crate::ambient::constrained(py, self)? {
            let info = under.start_here(py)?;
            return Ok(info.run_as(Py::new(py, under)?));
        }
        self.start_here(py)
    }

    /// The asyncio driver's first attempt, run here up to its first suspension (see
    /// `retryrs._aio.drive`): starts the call as `_start` does, makes the attempt
    /// `retryrs.current_attempt()` (in its asyncio task's slot, or the context variable
    /// set: see `attempt::AttemptSlot`; before the function is called, so that what the
    /// first step starts, threads and child tasks, copies it),
    /// calls the function and, for a native coroutine, runs its first step. An attempt
    /// over in that step with a value nobody else needs to see (no result predicate; a
    /// listener or budget hears of the success here) returns the value: the happy path,
    /// one call from Python with no timer armed and nothing else made but the attempt.
    /// Anything else comes back as a `_FirstAttempt` for the driver to go on with.
    #[pyo3(signature = (func, args, kwargs=None))]
    fn _first<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (py, this) = (slf.py(), slf.get());
        let info = Bound::new(py, this._start(py)?)?;
        let entered = crate::attempt::Entered::enter(&info)?;
        let slow = |kind: u8,
                    attempt: Option<Bound<'py, PyAny>>,
                    step: Option<Bound<'py, PyAny>>,
                    value: Option<Bound<'py, PyAny>>,
                    running: bool|
         -> PyResult<Bound<'py, PyAny>> {
            let first = FirstAttempt {
                kind,
                info: info.clone().unbind(),
                called: attempt.is_some(),
                attempt: attempt.map(Bound::unbind),
                step: step.map(Bound::unbind),
                value: value.map(Bound::unbind),
                token: running.then(|| entered.to_object()),
            };
            Ok(Bound::new(py, first)?.into_any())
        };
        let kwargs = kwargs.filter(|kw| !kw.is_empty());
        let attempt = match func.call(args, kwargs) {
            Ok(attempt) => attempt,
            Err(e) => {
                entered.leave()?;
                return slow(FirstAttempt::FAILED, None, None, Some(e.into_value(py).into_bound(py).into_any()), false);
            }
        };
        // A trio cancel scope bounding the attempt must be entered before its first step
        // (for the scopes the attempt opens to nest inside it): the driver starts it then.
        // (Not in an asyncio task, where the attempt entered its task's slot.)
        let under_trio = || !entered.in_task() && crate::attempt::loaded(py, &TRIO, "trio");
        if !is_coroutine(py, &attempt)? || (info.get().arm() && under_trio()) {
            return slow(FirstAttempt::UNSTARTED, Some(attempt), None, None, true);
        }
        match crate::step::first_step(py, &attempt) {
            Step::Yielded(step) => slow(FirstAttempt::SUSPENDED, Some(attempt), Some(step), None, true),
            Step::Raised(e) => {
                entered.leave()?;
                slow(FirstAttempt::FAILED, Some(attempt), None, Some(e.into_value(py).into_bound(py).into_any()), false)
            }
            Step::Done(value) => {
                entered.leave()?;
                if this.host.wants_success {
                    if this.host.retry_on_result.is_some() {
                        return slow(FirstAttempt::VALUE, Some(attempt), None, Some(value), false);
                    }
                    this.report_success(py, info.get().start, &info.get().frame.clock, info.get().admission)?;
                } else {
                    this.host.stats.count_first_attempt_success();
                }
                Ok(value)
            }
        }
    }

    /// Whether this Retrier's policy hedges (its async calls go to `retryrs._hedge`).
    #[getter]
    fn _hedges(&self) -> bool {
        self.host.policy.hedging().is_some()
    }

    /// The error text a call that runs one attempt at a time (`what`: an HTTP helper for
    /// a blocking client, say) gives for this Retrier's hedging policy, or None.
    fn _refusal(&self, py: Python<'_>, what: &str) -> Option<String> {
        crate::hedged::refusal(&self.host.policy, what).map(|e| e.value(py).to_string())
    }

    /// Starts a hedged call (`retryrs._hedge.drive`): raises RetryCancelled if the token
    /// already fired; the policy's circuit breaker is asked once, here (a refused call's
    /// first `poll()` is STOP with `RetryExhausted(reason="circuit_open")`).
    fn _hedge(&self, py: Python<'_>) -> PyResult<crate::hedged::HedgedCall> {
        if let Some(under) = crate::ambient::constrained(py, self)? {
            return under.hedge_here(py);
        }
        self.hedge_here(py)
    }

    #[getter]
    fn _interrupts(&self) -> bool {
        self.interrupts
    }

    #[getter]
    fn _wants_success(&self) -> bool {
        self.host.wants_success
    }

    /// For the async drivers: True when the result predicate rejects `value`, False when
    /// it accepts it (or there is none), or the predicate's awaitable answer to await.
    fn _rejects(&self, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = value.py();
        Ok(match self.host.rejects(value, true)? {
            Ok(rejected) => pyo3::types::PyBool::new(py, rejected).to_owned().into_any().unbind(),
            Err(pending) => pending.unbind(),
        })
    }

    /// `value -> bool` (True: retry the returned value), or None.
    #[getter]
    fn retry_on_result(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.host.retry_on_result.as_ref().map(|f| f.clone_ref(py))
    }

    /// A first attempt's success, from the Python drivers: reported to the engine when
    /// someone needs it, else only counted.
    fn _succeeded(&self, py: Python<'_>, first: &Bound<'_, AttemptInfo>) -> PyResult<()> {
        if let Some(under) = &first.get().under {
            return under.get().succeeded_here(py, first);
        }
        self.succeeded_here(py, first)
    }

    /// The first attempt of an async call failed: engine state starts here.
    fn _begin(&self, py: Python<'_>, first: &Bound<'_, AttemptInfo>) -> SteppedCall {
        match &first.get().under {
            Some(under) => under.get().begin_here(py, first),
            None => self.begin_here(py, first),
        }
    }
}
