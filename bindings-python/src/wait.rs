//! A real wait in a blocking call: the GIL is released so other threads run Python, the
//! cancel token wakes it at once, and on the main thread it wakes every slice to let
//! Python run its signal handlers, so Ctrl-C raises KeyboardInterrupt promptly instead of
//! after the delay.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use retryrs::CancelToken;

use crate::token::PyCancelToken;

/// Set by an `atexit` hook when the interpreter starts to finalize, with the thread that
/// finalizes. CPython before 3.14 ends any other thread that takes the GIL back from
/// then on with `pthread_exit`, a forced unwind through these frames. The module is
/// built with panic = abort (the release-python profile in the workspace Cargo.toml), so
/// the unwind finds no landing pad here and the thread just ends, wherever it is (in an
/// attempt, a listener, a wait). On top of that a wait on another thread (a daemon
/// thread: the others were joined before atexit runs) never takes the GIL back, and
/// sleeps until the process ends without touching Python, as CPython 3.14 itself makes
/// such threads do.
static EXITING: AtomicBool = AtomicBool::new(false);
static FINALIZER: OnceLock<ThreadId> = OnceLock::new();

/// The `atexit` hook (registered by the module at import).
#[pyfunction]
pub fn _interpreter_exiting() {
    let _ = FINALIZER.set(thread::current().id());
    EXITING.store(true, Ordering::SeqCst);
}

/// Parks this thread for good if the interpreter is finalizing and this is not the
/// thread doing it. Called without the GIL, before taking it back.
fn stay_out_if_exiting() {
    if EXITING.load(Ordering::SeqCst) && FINALIZER.get() != Some(&thread::current().id()) {
        loop {
            thread::park();
        }
    }
}

/// How often a long wait on the main thread re-enters Python to check for signals.
const SLICE: Duration = Duration::from_millis(50);
/// The longest sleep in one go on any other thread (bounded only to keep a wait past
/// `Instant`'s range a loop of ordinary sleeps).
const OFF_MAIN_SLICE: Duration = Duration::from_secs(3600);

/// Whether this is the interpreter's main thread (the one that runs signal handlers);
/// if Python cannot say, assume it is, which only wakes the wait more often.
fn on_main_thread(py: Python<'_>) -> bool {
    let ask = || -> PyResult<bool> {
        let threading = py.import("threading")?;
        Ok(threading.call_method0("current_thread")?.is(&threading.call_method0("main_thread")?))
    };
    ask().unwrap_or(true)
}

pub enum WaitEnd {
    Cancelled,
    Signal(PyErr),
}

static GREEN_WAITER: crate::preload::Lookup = crate::preload::Lookup::new("retryrs._green", "waiter");

/// The wait of gevent or eventlet when the program has monkey-patched `time` with it
/// (`retryrs._green.waiter()`): a native sleep would stall every green thread of this OS
/// thread.
fn green_wait(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let wait = GREEN_WAITER.get(py)?.call0()?;
    Ok(if wait.is_none() { None } else { Some(wait) })
}

/// Looks the green wait up now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    GREEN_WAITER.get(py).map(drop)
}

/// `token` is `cancel`'s engine token; the Python one is for a green wait to subscribe to.
pub fn blocking(
    py: Python<'_>,
    delay: Duration,
    token: Option<&CancelToken>,
    cancel: Option<&Py<PyCancelToken>>,
) -> Result<(), WaitEnd> {
    if delay.is_zero() {
        // A zero delay sleeps not at all; a fired token is still seen.
        return if token.is_some_and(CancelToken::is_cancelled) { Err(WaitEnd::Cancelled) } else { Ok(()) };
    }
    if let Some(wait) = green_wait(py).map_err(WaitEnd::Signal)? {
        // Whatever ends a green wait early (gevent.kill, a Timeout, Ctrl-C) goes on as is.
        let fired = wait.call1((delay.as_secs_f64(), cancel)).and_then(|f| f.is_truthy()).map_err(WaitEnd::Signal)?;
        return if fired { Err(WaitEnd::Cancelled) } else { Ok(()) };
    }
    // Only the main thread runs signal handlers, so only it needs to wake every slice;
    // another thread sleeps the whole wait without the GIL. That matters at exit: a
    // daemon thread waking every slice would take the GIL back while the interpreter
    // finalizes (see EXITING).
    let most = if on_main_thread(py) { SLICE } else { OFF_MAIN_SLICE };
    let until = Instant::now().checked_add(delay);
    loop {
        let left = match until {
            Some(until) => until.saturating_duration_since(Instant::now()),
            None => most,
        };
        if left.is_zero() {
            return Ok(());
        }
        let slice = left.min(most);
        let cancelled = py.detach(|| {
            let cancelled = match token {
                Some(t) => t.wait_timeout(slice),
                None => {
                    std::thread::sleep(slice);
                    false
                }
            };
            stay_out_if_exiting();
            cancelled
        });
        if cancelled {
            return Err(WaitEnd::Cancelled);
        }
        py.check_signals().map_err(WaitEnd::Signal)?;
    }
}
