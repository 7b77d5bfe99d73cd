//! The blocking executor (`Retrier.call`, a decorated sync function): the call's first
//! attempt with no engine state, then the retry loop on the call's `CallState`, each
//! attempt run without a `PyErr`.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use retryrs::{Clock, SystemClock};

use super::{is_coroutine, Retrier};
use crate::attempt::{SyncFrame, SyncSlot};
use crate::host_policy::HostPolicy;
use crate::state::{now, CallState, Failed};

impl Retrier {
    /// The blocking executor (also behind decorated functions: `decorated`, for the words
    /// of an error about the function).
    pub fn run(
        &self,
        py: Python<'_>,
        f: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        decorated: bool,
    ) -> PyResult<Py<PyAny>> {
        if let Some(refused) =
            crate::hedged::refusal(&self.host.policy, "a blocking call (Retrier.call, a decorated sync function)")
        {
            return Err(refused);
        }
        if let Some(under) = crate::ambient::constrained(py, self)? {
            return under.run_here(py, f, args, kwargs, decorated);
        }
        self.run_here(py, f, args, kwargs, decorated)
    }

    /// [`Retrier::run`] as this retrier, past the checks of the policy's shape and the
    /// ambient context.
    fn run_here(
        &self,
        py: Python<'_>,
        f: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        decorated: bool,
    ) -> PyResult<Py<PyAny>> {
        let token = self.cancel.as_ref().map(|t| &t.get().inner);
        if token.is_some_and(|t| t.is_cancelled()) {
            return Err(self.cancelled_before_start(py));
        }
        let clock = crate::testing::clock(py);
        // Bounds of whole seconds and nothing to show the elapsed time: the coarse clock
        // may start the call (its bounds then end the coarse clock's lag early, never late).
        let start = match &clock {
            None if self.host.coarse_start => SystemClock.now_coarse(),
            _ => now(&clock),
        };
        let admission = self.admit(py, start)?;
        // The attempt's bound, for `retryrs.current_attempt()`: a blocking attempt cannot
        // be interrupted, so it is there to be passed to I/O.
        let slot = SyncSlot::new();
        let frame = SyncFrame::push(py, &slot, &self.host.policy, start, &clock)?;
        let mut failure = match attempt(f, args, kwargs) {
            Ok(value) => {
                if is_coroutine(py, &value)? {
                    return Err(coroutine_in_sync_call(f, &value, decorated));
                }
                if self.host.wants_success {
                    if sync_rejects(&self.host, &value)? {
                        Err(value)
                    } else {
                        self.report_success(py, start, &clock, admission)?;
                        return Ok(value.unbind());
                    }
                } else {
                    // In the shared cell: an uncontended locked add (about 4.5 ns here)
                    // costs less than finding this thread's cell in a shared library
                    // (a call to __tls_get_addr, about 8 ns), which the C host's does.
                    self.host.stats.count_first_attempt_success();
                    return Ok(value.unbind());
                }
            }
            Err(e) => Ok(e),
        };
        let mut state = CallState::begin(self.host.clone(), start, clock, token.cloned(), admission, true);
        loop {
            let delay = match failure {
                Ok(err) => state.failed(py, &self.host, err)?,
                Err(value) => match state.rejected_value(py, value, None)? {
                    Failed::Wait(delay) => delay,
                    Failed::Await(_) => return Err(PyRuntimeError::new_err("retryrs: a sync call was asked to await")),
                },
            };
            state.wait_blocking(py, delay, self.cancel.as_ref())?;
            state.resume_blocking(py, delay)?;
            state.set_frame(py, &frame)?;
            failure = match attempt(f, args, kwargs) {
                Ok(value) if sync_rejects(&self.host, &value)? => Err(value),
                Ok(value) => {
                    state.succeeded(py)?;
                    return Ok(value.unbind());
                }
                Err(e) => Ok(e),
            }
        }
    }
}

/// One attempt of a blocking call, `f(*args, **kwargs)`: its value, or the exception it
/// raised, normalized and with its traceback attached as an `except` clause sees it (so
/// raising it again raises it unchanged). Fetched without a `PyErr`, whose state (a
/// `Once` completed with atomics, three references) costs a failure more than the rest of
/// taking it.
fn attempt<'py>(
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>, Bound<'py, PyAny>> {
    let py = f.py();
    let kwargs = kwargs.map_or(std::ptr::null_mut(), |k| k.as_ptr());
    // SAFETY: live objects, the GIL held; the result is a new reference or null with an
    // exception set.
    let result = unsafe { pyo3::ffi::PyObject_Call(f.as_ptr(), args.as_ptr(), kwargs) };
    if !result.is_null() {
        // SAFETY: a new reference.
        return Ok(unsafe { Bound::from_owned_ptr(py, result) });
    }
    let (mut kind, mut value, mut traceback) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the error indicator is set (the call returned null); Fetch hands over its
    // three references (each may be null) and clears it; Normalize makes `value` an
    // instance of `kind`; SetTraceback takes its own reference to the traceback.
    unsafe {
        pyo3::ffi::PyErr_Fetch(&mut kind, &mut value, &mut traceback);
        if kind.is_null() {
            // A callable that returned null without an exception (a broken extension).
            return Err(pyo3::exceptions::PySystemError::new_err("error return without exception set")
                .into_value(py)
                .into_any()
                .into_bound(py));
        }
        pyo3::ffi::PyErr_NormalizeException(&mut kind, &mut value, &mut traceback);
        if !traceback.is_null() && !value.is_null() {
            pyo3::ffi::PyException_SetTraceback(value, traceback);
        }
        pyo3::ffi::Py_XDECREF(kind);
        pyo3::ffi::Py_XDECREF(traceback);
        if value.is_null() {
            return Err(pyo3::exceptions::PySystemError::new_err("an exception without a value")
                .into_value(py)
                .into_any()
                .into_bound(py));
        }
        Err(Bound::from_owned_ptr(py, value))
    }
}

/// Whether the result predicate (if any) rejects a value, in a sync call: an awaitable
/// answer is a TypeError naming `retry_on_result`.
fn sync_rejects(host: &HostPolicy, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    match host.rejects(value, false)? {
        Ok(rejected) => Ok(rejected),
        Err(_) => Err(PyRuntimeError::new_err("retryrs: a sync call was asked to await retry_on_result")),
    }
}

/// `r.call(async_fn)` would hand back an un-awaited coroutine and retry nothing: refused
/// (the coroutine is closed, so Python does not also warn that it was never awaited).
/// A decorated function got here because it is not `async def` (a lambda or a plain
/// `def` that returns a coroutine): @retrier chose the sync wrapper at decoration time.
fn coroutine_in_sync_call(f: &Bound<'_, PyAny>, coroutine: &Bound<'_, PyAny>, decorated: bool) -> PyErr {
    let _ = coroutine.call_method0("close");
    let f = crate::convert::repr(f);
    pyo3::exceptions::PyTypeError::new_err(if decorated {
        format!(
            "{f} returned a coroutine, but it is not an `async def` function, so @retrier wrapped it as a sync \
             function that would retry nothing: make it `async def` (then @retrier awaits and retries it), or \
             call `await retrier.call_async(fn, ...)` instead of decorating it"
        )
    } else {
        format!(
            "{f} is async: use `await retrier.call_async(fn, ...)` (or decorate it with the retrier), not retrier.call"
        )
    })
}
