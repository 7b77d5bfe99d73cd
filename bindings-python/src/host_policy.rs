//! The Retrier's whole policy as Python sees it: the engine's [`Policy`] plus the
//! Python-side rules (which exceptions are transient, where a Retry-After hint comes
//! from, who listens), and how each is applied: classifying a failure, extracting its
//! hint, emitting events. Shared (`Arc`) by a Retrier, its derived retriers and calls.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::preload::Lookup;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple, PyType};
use retryrs::{duration_from_ms, Event, Policy, Verdict};

use crate::budget::PyRetryBudget;
use crate::convert::{ms, seconds};
use crate::event::PyEvent;

/// What a failure's hint says: wait at least this long (`None`: no hint), or the
/// server's "don't retry".
enum Hint {
    Wait(Option<Duration>),
    DontRetry,
}

/// How the Retrier tells a transient failure from a permanent one.
pub enum RetryOn {
    /// An exception class or a tuple of them: one `isinstance`, no Python frame.
    Classes(Py<PyAny>),
    /// `exc -> bool`.
    Predicate(Py<PyAny>),
    /// None given: the transient network errors (`retryrs._defaults`), with the HTTP
    /// clients' own among them once their modules are imported.
    Default,
}

impl RetryOn {
    pub fn clone_ref(&self, py: Python<'_>) -> Self {
        match self {
            RetryOn::Classes(c) => RetryOn::Classes(c.clone_ref(py)),
            RetryOn::Predicate(f) => RetryOn::Predicate(f.clone_ref(py)),
            RetryOn::Default => RetryOn::Default,
        }
    }
}

/// The user's callables besides `retry_on`, as given (each optional).
pub struct Hooks {
    pub retry_after: Option<Py<PyAny>>,
    pub retry_on_result: Option<Py<PyAny>>,
    pub on_event: Option<Py<PyAny>>,
    /// `reraise=True`: exhaustion by a transient error raises that error itself.
    pub reraise: bool,
    /// `wait(attempt, failure, delay) -> seconds | None`: an exact wait.
    pub wait: Option<Py<PyAny>>,
    /// `before_sleep(attempt, failure, delay)`: may stop the call (False, StopRetrying).
    pub before_sleep: Option<Py<PyAny>>,
}

/// Immutable and shared (`Arc`) by a Retrier, its derived retriers and its calls.
pub struct HostPolicy {
    pub policy: Arc<Policy>,
    pub retry_on: RetryOn,
    pub retry_after: Option<Py<PyAny>>,
    /// `value -> bool` (True: retry), or None: every value is a success.
    pub retry_on_result: Option<Py<PyAny>>,
    pub on_event: Option<Py<PyAny>>,
    /// Exhaustion by a transient error raises that error (history attached), not
    /// RetryExhausted.
    pub reraise: bool,
    /// `wait=`: the exact wait hook (the engine still applies the deadline and
    /// max_retry_after to its answer).
    pub wait: Option<Py<PyAny>>,
    /// `before_sleep=`: runs before each wait and may stop the call (reason `stopped`).
    pub before_sleep: Option<Py<PyAny>>,
    pub budget: Option<Py<PyRetryBudget>>,
    pub attempt_timeout: Option<f64>,
    /// Whether the name was given (a decorator names an unnamed retrier after its function).
    pub named: bool,
    /// The retrier's counts (`r.stats()`), told every event; shared by the retriers made
    /// from this one for a decorated function or an HTTP helper.
    pub stats: Arc<retryrs::Stats>,
    /// The name as a Python str, made once rather than per event.
    pub name: Py<PyString>,
    /// A success has to reach the engine only to be reported or to refill a budget, and
    /// a returned value has to be looked at only when a result predicate is set.
    pub wants_success: bool,
    /// Whether anything shows a call's times (a listener's events) or runs Python code
    /// between a failure and the next attempt that could take time (the wait hooks): the
    /// blocking executor then reads the clock wherever an event or a bound needs it,
    /// rather than reusing a reading (see `CallState::resume_blocking`).
    pub observed: bool,
    /// Whether a blocking call may start on the coarse clock (the core's
    /// `Policy::tolerates_coarse_start`: bounds of whole seconds, no breaker or ratio
    /// budget, and nothing observing the call): a clock read is a third of a happy
    /// path's cost, the coarse one a fifth of that.
    pub coarse_start: bool,
    /// Which exception classes may supply `retry_after` beyond the instance dict
    /// (`own_attr`): this retrier's answers, so a class changed later (a test's
    /// monkeypatch) is seen by the retriers made after.
    pub retry_after_classes: crate::own_attr::ClassAnswers,
}

impl HostPolicy {
    pub fn new(
        py: Python<'_>,
        policy: Arc<Policy>,
        retry_on: RetryOn,
        hooks: Hooks,
        budget: Option<Py<PyRetryBudget>>,
        attempt_timeout: Option<f64>,
    ) -> Self {
        let Hooks { retry_after, retry_on_result, on_event, reraise, wait, before_sleep } = hooks;
        let name = PyString::new(py, policy.name()).unbind();
        let wants_success =
            on_event.is_some() || budget.is_some() || retry_on_result.is_some() || policy.breaker().is_some();
        let observed = on_event.is_some() || wait.is_some() || before_sleep.is_some();
        let coarse_start = !observed && policy.tolerates_coarse_start();
        HostPolicy {
            policy,
            retry_on,
            retry_after,
            retry_on_result,
            on_event,
            reraise,
            wait,
            before_sleep,
            budget,
            attempt_timeout,
            named: true,
            stats: Arc::default(),
            name,
            wants_success,
            observed,
            coarse_start,
            retry_after_classes: crate::own_attr::ClassAnswers::new(),
        }
    }

    /// Whether a hook runs between the engine's proposal of a wait and the wait.
    pub fn hooks_waits(&self) -> bool {
        self.wait.is_some() || self.before_sleep.is_some()
    }

    /// The verdict on a failure (an `Exception`; control-flow signals never get here).
    /// An error raised by the predicate or the hint hook ends the call: it is returned.
    ///
    /// `answers` is `None` in a sync call, where a hook that returns an awaitable is a
    /// TypeError naming it (an un-awaited coroutine is truthy: never read it as "true").
    /// In an async call it holds the hooks' awaited answers so far, in the order they are
    /// asked (the predicate, then the hint); a hook whose answer is an awaitable not yet
    /// awaited ends classification with [`Classified::Await`], and the driver asks again
    /// with that answer appended. Only awaited answers are among `answers`: a predicate
    /// that answered in place keeps its verdict in `predicate` (the caller's, per call)
    /// while the hint is awaited, so it is neither asked again nor given the hint's answer.
    pub fn classify<'py>(
        &self,
        exc: &Bound<'py, PyAny>,
        answers: Option<&Bound<'py, PyTuple>>,
        predicate: &mut Option<bool>,
    ) -> PyResult<Classified<'py>> {
        let py = exc.py();
        let mut asked = 0usize;
        if answers.is_none_or(|a| a.is_empty()) {
            *predicate = None; // a new failure: nothing answered yet
        }
        let transient = match &self.retry_on {
            RetryOn::Classes(classes) => exc.is_instance(classes.bind(py))?,
            RetryOn::Default => exc.is_instance(&default_retry_on(py)?)? && !certificate_failure(exc)?,
            RetryOn::Predicate(_) if predicate.is_some() => predicate.unwrap_or(false),
            RetryOn::Predicate(f) => match answered(answers, asked)? {
                Some(a) => {
                    asked += 1;
                    a.is_truthy()?
                }
                None => {
                    let a = f.bind(py).call1((exc,))?;
                    if let Some(pending) = awaitable(&a, "retry_on", answers.is_some())? {
                        return Ok(pending);
                    }
                    let transient = a.is_truthy()?;
                    *predicate = Some(transient);
                    transient
                }
            },
        };
        if !transient {
            return Ok(Classified::Verdict(Verdict::Permanent));
        }
        Ok(match self.hint(exc, answers, asked)? {
            Ok(verdict) => Classified::Verdict(verdict),
            Err(pending) => pending,
        })
    }

    /// The verdict on a value the result predicate rejected: transient by definition, its
    /// hint read as an error's is (the `retry_after` hook gets the value).
    pub fn hint_verdict<'py>(
        &self,
        value: &Bound<'py, PyAny>,
        answers: Option<&Bound<'py, PyTuple>>,
    ) -> PyResult<Classified<'py>> {
        Ok(match self.hint(value, answers, 0)? {
            Ok(verdict) => Classified::Verdict(verdict),
            Err(pending) => pending,
        })
    }

    /// Whether the result predicate rejects `value` (a failure to retry), or (async calls)
    /// its awaitable answer to await and hand back to [`value_rejected_by`].
    pub fn rejects<'py>(
        &self,
        value: &Bound<'py, PyAny>,
        can_await: bool,
    ) -> PyResult<Result<bool, Bound<'py, PyAny>>> {
        let Some(f) = &self.retry_on_result else { return Ok(Ok(false)) };
        let answer = f.bind(value.py()).call1((value,))?;
        if let Some(Classified::Await(pending)) = awaitable(&answer, "retry_on_result", can_await)? {
            return Ok(Err(pending));
        }
        Ok(Ok(answer.is_truthy()?))
    }

    /// The verdict on a transient failure by the Retry-After style minimum wait it carries:
    /// the `retry_after` hook's answer, or by default the exception's own `retry_after`
    /// attribute (seconds, a timedelta, or a raw `Retry-After` header value as str or
    /// bytes; `retryrs.DONT_RETRY`: the server said not to retry). The hook's answer must
    /// be one of those (or None); an attribute that is none of them is no hint (a
    /// library's method or dict of the same name is not the caller's to reject).
    fn hint<'py>(
        &self,
        exc: &Bound<'py, PyAny>,
        answers: Option<&Bound<'py, PyTuple>>,
        asked: usize,
    ) -> PyResult<Result<Verdict, Classified<'py>>> {
        Ok(self.hint_value(exc, answers, asked)?.map(|hint| match hint {
            Hint::Wait(hint) => Verdict::Transient { hint },
            Hint::DontRetry => Verdict::DontRetry,
        }))
    }

    /// [`HostPolicy::hint`]'s reading of the hook's (or attribute's) answer.
    fn hint_value<'py>(
        &self,
        exc: &Bound<'py, PyAny>,
        answers: Option<&Bound<'py, PyTuple>>,
        asked: usize,
    ) -> PyResult<Result<Hint, Classified<'py>>> {
        let py = exc.py();
        let (value, from_hook) = match &self.retry_after {
            Some(f) => match answered(answers, asked)? {
                Some(a) => (a, true),
                None => {
                    let a = f.bind(py).call1((exc,))?;
                    if let Some(pending) = awaitable(&a, "retry_after", answers.is_some())? {
                        return Ok(Err(pending));
                    }
                    (a, true)
                }
            },
            None => match self.attribute_hint(exc)? {
                Some(v) => (v, false),
                None => return Ok(Ok(Hint::Wait(None))),
            },
        };
        if value.is_none() {
            return Ok(Ok(Hint::Wait(None)));
        }
        if crate::pushback::is_dont_retry(&value) {
            return Ok(Ok(Hint::DontRetry));
        }
        if let Some(exact) = crate::pushback::exact_wait(&value) {
            // The verdict's hint; the call's state makes it the exact wait (see
            // `HostPolicy::exact_wait`).
            return Ok(Ok(Hint::Wait(Some(exact))));
        }
        if let Ok(text) = value.cast::<PyString>() {
            return Ok(Ok(Hint::Wait(retryrs::parse_retry_after(&text.to_cow()?, std::time::SystemTime::now()))));
        }
        if let Ok(raw) = value.cast::<PyBytes>() {
            // A header value as an HTTP client hands it over; not UTF-8 is no hint.
            let text = std::str::from_utf8(raw.as_bytes()).ok();
            return Ok(Ok(Hint::Wait(text.and_then(|t| retryrs::parse_retry_after(t, std::time::SystemTime::now())))));
        }
        let number =
            !value.is_instance_of::<PyBool>() && (value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>());
        if number || (value.hasattr("total_seconds")? && !value.is_instance_of::<PyType>()) {
            return match seconds(&value, "retry_after") {
                // The hook's answer by the engine's rule for a hook's hint (NaN and
                // negatives refused, as a bad `wait` answer is; huge values saturate).
                Ok(s) if from_hook => match retryrs::engine::hint_from_hook_ms(ms(s)) {
                    Ok(hint) => Ok(Ok(Hint::Wait(Some(hint)))),
                    Err(_) => Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "retry_after returned {}: a hint must be seconds >= 0, or None: no hint",
                        crate::convert::repr(&value)
                    ))),
                },
                // An exception's own attribute, by the engine's reading of a host number:
                // NaN and negatives mean no hint (a library's value is not the caller's to
                // reject), huge values saturate.
                Ok(s) => Ok(Ok(Hint::Wait(duration_from_ms(ms(s))))),
                Err(e) if from_hook => Err(e),
                Err(_) => Ok(Ok(Hint::Wait(None))),
            };
        }
        if !from_hook {
            return Ok(Ok(Hint::Wait(None)));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "retry_after must give seconds (float, int, timedelta), a Retry-After str or bytes, retryrs.DONT_RETRY or \
             None; got {}",
            crate::convert::repr(&value)
        )))
    }

    /// The exact wait a transient failure's server asked for (an `_ExactWait` as its
    /// `retry_after` attribute; never with a `retry_after` hook, whose answers are floors),
    /// looked for only when its verdict carries a hint.
    pub fn exact_wait(&self, subject: &Bound<'_, PyAny>, verdict: &Verdict) -> Option<Duration> {
        if self.retry_after.is_some() || !matches!(verdict, Verdict::Transient { hint: Some(_) }) {
            return None;
        }
        let value = self.attribute_hint(subject).ok().flatten()?;
        crate::pushback::exact_wait(&value)
    }

    /// The exception's `retry_after` attribute, if it has one (see `own_attr`).
    fn attribute_hint<'py>(&self, exc: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::own_attr::retry_after(exc, &self.retry_after_classes)
    }

    /// Hands an engine event to the listener. A listener that raises does not change the
    /// call: its error goes to `sys.unraisablehook`, Python's channel for exactly this;
    /// except KeyboardInterrupt and SystemExit (a Ctrl-C that lands while a listener
    /// runs), which are kept in `signal` for the caller to raise once the engine is done.
    /// `subject` is the failure the event is about: `(error, false)` or `(value, true)`.
    pub fn emit(
        &self,
        py: Python<'_>,
        event: &Event<'_>,
        subject: Option<(&Bound<'_, PyAny>, bool)>,
        signal: &mut Option<PyErr>,
    ) {
        self.emit_counted(py, event, subject, signal, &mut None);
    }

    /// [`emit`](Self::emit) for a call that counts its events itself: into `tally` when
    /// it is batched (`CallState`), else into the retrier's stats.
    pub fn emit_counted(
        &self,
        py: Python<'_>,
        event: &Event<'_>,
        subject: Option<(&Bound<'_, PyAny>, bool)>,
        signal: &mut Option<PyErr>,
        tally: &mut Option<retryrs::CallTally>,
    ) {
        match tally {
            Some(tally) => tally.observe(event),
            None => self.stats.observe(event),
        }
        self.notify(py, event, subject, signal);
    }

    /// The listener's part of [`emit`](Self::emit).
    fn notify(
        &self,
        py: Python<'_>,
        event: &Event<'_>,
        subject: Option<(&Bound<'_, PyAny>, bool)>,
        signal: &mut Option<PyErr>,
    ) {
        let Some(listener) = &self.on_event else { return };
        let event = PyEvent::new(py, &self.name, event, subject);
        let listener = listener.bind(py);
        let result = Bound::new(py, event).and_then(|e| listener.call1((e,)));
        tell(py, listener, result, signal);
    }
}

static DEFAULTS: Lookup = Lookup::new("retryrs._defaults", "transient");

/// The default `retry_on`: the tuple `retryrs._defaults.transient()` makes, which looks at
/// `sys.modules` (never importing an HTTP client) and caches per set of clients loaded.
pub fn default_retry_on(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    DEFAULTS.get(py)?.call0()
}

static CERTIFICATE: Lookup = Lookup::new("retryrs._defaults", "certificate_failure");

/// Looks up the default classification's functions now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    DEFAULTS.get(py)?;
    CERTIFICATE.get(py).map(drop)
}

/// Whether a failure the default `retry_on` would retry is a TLS certificate that failed
/// verification (`retryrs._defaults.certificate_failure`): deterministic, so permanent,
/// though the HTTP clients file it under their connection errors.
fn certificate_failure(exc: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = exc.py();
    CERTIFICATE.get(py)?.call1((exc,))?.is_truthy()
}

/// What a listener's call came to: nothing, an error for `sys.unraisablehook`, or a
/// control-flow signal kept for the caller (the first one wins). A listener that returns
/// an awaitable (a lambda around an `async def`) cannot be awaited -- listeners never slow
/// a call -- so the awaitable is closed and reported rather than dropped unseen.
pub fn tell(
    py: Python<'_>,
    listener: &Bound<'_, PyAny>,
    result: PyResult<Bound<'_, PyAny>>,
    signal: &mut Option<PyErr>,
) {
    let err = match result {
        Ok(value) if value.is_none() => return,
        Ok(value) => match awaitable(&value, "on_event", false) {
            Err(e) => e,
            Ok(_) => return,
        },
        Err(err) => err,
    };
    if is_signal(py, &err) {
        if signal.is_none() {
            *signal = Some(err);
        }
    } else {
        err.write_unraisable(py, Some(listener));
    }
}

/// KeyboardInterrupt or SystemExit: never swallowed by the machinery that reports a
/// listener's errors.
fn is_signal(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)
        || err.is_instance_of::<pyo3::exceptions::PySystemExit>(py)
}

/// How a failure was classified: a verdict, or a hook's awaitable the async driver must
/// await before asking again.
pub enum Classified<'py> {
    Verdict(Verdict),
    Await(Bound<'py, PyAny>),
}

/// The `i`-th awaited answer, if the async driver has already supplied it.
pub fn answered<'py>(answers: Option<&Bound<'py, PyTuple>>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
    match answers {
        Some(a) if i < a.len() => Ok(Some(a.get_item(i)?)),
        _ => Ok(None),
    }
}

/// A hook's answer that is an awaitable: in an async call, the driver awaits it
/// (`Some`); in a sync call it is a TypeError naming the hook (the coroutine is closed,
/// so Python does not warn about it a second time).
pub fn awaitable<'py>(value: &Bound<'py, PyAny>, hook: &str, can_await: bool) -> PyResult<Option<Classified<'py>>> {
    // Plain answers (bool, None, numbers, str) are never awaitable: skip the lookup.
    if value.is_none()
        || value.is_instance_of::<PyBool>()
        || value.is_instance_of::<PyFloat>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyString>()
    {
        return Ok(None);
    }
    if !value.hasattr(pyo3::intern!(value.py(), "__await__"))? {
        return Ok(None);
    }
    if can_await {
        return Ok(Some(Classified::Await(value.clone())));
    }
    if value.hasattr(pyo3::intern!(value.py(), "close"))? {
        let _ = value.call_method0(pyo3::intern!(value.py(), "close"));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{hook} returned an awaitable ({}), which a sync call cannot await: give a plain function, or use call_async / an async function",
        crate::convert::repr(value)
    )))
}
