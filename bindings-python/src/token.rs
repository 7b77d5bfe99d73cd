//! `CancelToken`: the engine's token (a blocking wait wakes at once) plus callbacks, so an
//! asyncio wait on another thread's loop can be woken too.

use std::sync::Mutex;

use pyo3::prelude::*;
use retryrs::CancelToken;

/// Another thread (or a listener) calls `cancel()`; a call waiting between attempts with
/// this token ends at once with `RetryCancelled`. Cancelling is sticky.
#[pyclass(frozen, module = "retryrs", name = "CancelToken")]
pub struct PyCancelToken {
    pub inner: CancelToken,
    callbacks: Mutex<Callbacks>,
}

#[derive(Default)]
struct Callbacks {
    next: u64,
    live: Vec<(u64, Py<PyAny>)>,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    fn new() -> Self {
        PyCancelToken { inner: CancelToken::new(), callbacks: Mutex::default() }
    }

    /// Cancels: wakes every waiting call, sync or async.
    fn cancel(&self, py: Python<'_>) {
        self.inner.cancel();
        let callbacks = std::mem::take(&mut self.lock().live);
        for (_, cb) in callbacks {
            if let Err(e) = cb.bind(py).call0() {
                e.write_unraisable(py, Some(cb.bind(py)));
            }
        }
    }

    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// Runs `callback()` once on cancel (at once if already cancelled); returns an id for
    /// `_unsubscribe`. Used by the asyncio driver.
    fn _subscribe(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        {
            let mut cbs = self.lock();
            if !self.inner.is_cancelled() {
                cbs.next += 1;
                let id = cbs.next;
                cbs.live.push((id, callback));
                return Ok(id);
            }
        }
        callback.bind(py).call0()?;
        Ok(0)
    }

    fn _unsubscribe(&self, id: u64) {
        self.lock().live.retain(|(i, _)| *i != id);
    }

    fn __repr__(&self) -> String {
        format!("CancelToken(cancelled={})", if self.inner.is_cancelled() { "True" } else { "False" })
    }
}

impl PyCancelToken {
    fn lock(&self) -> std::sync::MutexGuard<'_, Callbacks> {
        self.callbacks.lock().unwrap_or_else(|e| e.into_inner())
    }
}
