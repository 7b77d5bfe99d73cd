//! A real wait in a blocking call: the GIL is released so other threads run Python, the
//! cancel token wakes it at once, and it wakes every slice to let Python run its signal
//! handlers, so Ctrl-C raises KeyboardInterrupt promptly instead of after the delay.

use std::time::{Duration, Instant};

use pyo3::prelude::*;
use retryrs::CancelToken;

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
        let cancelled = py.detach(|| match token {
            Some(t) => t.wait_timeout(slice),
            None => {
                std::thread::sleep(slice);
                false
            }
        });
        if cancelled {
            return Err(WaitEnd::Cancelled);
        }
        py.check_signals().map_err(WaitEnd::Signal)?;
    }
}
