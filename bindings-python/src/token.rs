//! `CancelToken`: the engine's token (a blocking wait wakes at once) plus callbacks, so an
//! asyncio wait on another thread's loop can be woken too.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use retryrs::CancelToken;

/// Another thread (or a listener) calls `cancel()`; a call waiting between attempts with
/// this token ends at once with `RetryCancelled`. Cancelling is sticky.
#[pyclass(frozen, weakref, module = "retryrs", name = "CancelToken")]
pub struct PyCancelToken {
    pub inner: CancelToken,
    callbacks: Mutex<Callbacks>,
    /// Tokens linked to this one (`child()`, `CancelToken.any`), held weakly: cancelling
    /// this one runs their callbacks too (the engine token already cancels theirs).
    children: Mutex<Children>,
}

/// The weak references to the linked tokens, with dead ones pruned when the list has
/// doubled since the last pruning (as the engine token's own list): pruning at every
/// link walked every live sibling, so 20k contexts under one request took 1.4 s to make.
#[derive(Default)]
struct Children {
    list: Vec<Py<PyWeakrefReference>>,
    prune_at: usize,
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
        PyCancelToken::of(CancelToken::new())
    }

    /// Cancels: wakes every waiting call, sync or async, this token's and its children's.
    fn cancel(&self, py: Python<'_>) {
        self.inner.cancel();
        self.fire(py);
    }

    /// A token cancelled when this one is (at once if it already is); cancelling the child
    /// leaves this one alone. For a library's own token under its caller's.
    fn child(slf: &Bound<'_, Self>) -> PyResult<Py<PyCancelToken>> {
        let inner = slf.get().inner.child();
        PyCancelToken::linked(slf.py(), inner, std::slice::from_ref(slf))
    }

    /// `CancelToken.any([a, b])`: a token cancelled as soon as any of them is (at once if
    /// one already is); cancelling it cancels none of them.
    #[staticmethod]
    fn any(py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Py<PyCancelToken>> {
        let mut parents: Vec<Bound<'_, PyCancelToken>> = Vec::new();
        for item in tokens.try_iter().map_err(|_| not_tokens(tokens))? {
            let item = item?;
            parents.push(item.cast::<PyCancelToken>().map_err(|_| not_tokens(&item))?.clone());
        }
        let engine: Vec<&CancelToken> = parents.iter().map(|p| &p.get().inner).collect();
        let inner = CancelToken::any(&engine);
        PyCancelToken::linked(py, inner, &parents)
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

fn not_tokens(v: &Bound<'_, PyAny>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "CancelToken.any takes an iterable of retryrs.CancelToken, got {}",
        crate::convert::repr(v)
    ))
}

impl PyCancelToken {
    /// A token not yet cancelled (for a token made on the Rust side).
    pub fn fresh() -> Self {
        PyCancelToken::of(CancelToken::new())
    }

    /// `CancelToken.any(parents)`, for the Rust side.
    pub fn any_of(py: Python<'_>, parents: &[Bound<'_, PyCancelToken>]) -> PyResult<Py<PyCancelToken>> {
        let engine: Vec<&CancelToken> = parents.iter().map(|p| &p.get().inner).collect();
        PyCancelToken::linked(py, CancelToken::any(&engine), parents)
    }

    fn of(inner: CancelToken) -> Self {
        PyCancelToken { inner, callbacks: Mutex::default(), children: Mutex::default() }
    }

    /// A token whose engine token `inner` is linked to `parents`' already: each parent
    /// also keeps it (weakly) to run its callbacks.
    fn linked(py: Python<'_>, inner: CancelToken, parents: &[Bound<'_, PyCancelToken>]) -> PyResult<Py<PyCancelToken>> {
        let token = Bound::new(py, PyCancelToken::of(inner))?;
        for parent in parents {
            let weak = PyWeakrefReference::new(token.as_any())?.unbind();
            let mut children = parent.get().children.lock().unwrap_or_else(|e| e.into_inner());
            if children.list.len() >= children.prune_at {
                children.list.retain(|c| c.bind(py).upgrade().is_some());
                children.prune_at = (2 * children.list.len()).max(16);
            }
            children.list.push(weak);
        }
        Ok(token.unbind())
    }

    /// Runs the callbacks (once), then the children's.
    fn fire(&self, py: Python<'_>) {
        let callbacks = std::mem::take(&mut self.lock().live);
        for (_, cb) in callbacks {
            if let Err(e) = cb.bind(py).call0() {
                e.write_unraisable(py, Some(cb.bind(py)));
            }
        }
        let children = std::mem::take(&mut self.children.lock().unwrap_or_else(|e| e.into_inner()).list);
        for child in children {
            if let Some(child) = child.bind(py).upgrade() {
                if let Ok(child) = child.cast::<PyCancelToken>() {
                    child.get().fire(py);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Callbacks> {
        self.callbacks.lock().unwrap_or_else(|e| e.into_inner())
    }
}
