//! A real wait in a blocking call: the GIL is released so other threads run Python, the
//! cancel token wakes it at once, and it wakes every slice to let Python run its signal
//! handlers, so Ctrl-C raises KeyboardInterrupt promptly instead of after the delay.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use retryrs::CancelToken;

/// Set by an `atexit` hook when the interpreter starts to finalize, with the thread that
/// finalizes. CPython before 3.14 ends any other thread that takes the GIL back from
/// then on with `pthread_exit`, whose forced unwind through these Rust frames crashes
/// the process; so a wait on another thread (a daemon thread: the others were joined
/// before atexit runs) never takes it back, and sleeps until the process ends, as
/// CPython 3.14 itself makes such threads do.
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

/// How often a long wait re-enters Python to check for signals.
const SLICE: Duration = Duration::from_millis(50);

pub enum WaitEnd {
    Cancelled,
    Signal(PyErr),
}

pub fn blocking(py: Python<'_>, delay: Duration, token: Option<&CancelToken>) -> Result<(), WaitEnd> {
    if delay.is_zero() {
        // A zero delay sleeps not at all; a fired token is still seen.
        return if token.is_some_and(CancelToken::is_cancelled) { Err(WaitEnd::Cancelled) } else { Ok(()) };
    }
    let until = Instant::now().checked_add(delay);
    loop {
        let left = match until {
            Some(until) => until.saturating_duration_since(Instant::now()),
            None => SLICE,
        };
        if left.is_zero() {
            return Ok(());
        }
        let slice = left.min(SLICE);
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
