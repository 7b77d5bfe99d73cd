//! An asyncio task's first attempts (`_AttemptSlot`), entered and left around the
//! attempt (`Entered`, `_leave_attempt`), and how the running task is found.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::context::{current_in_context, reset_var, set_var};
use super::sync::GREENLET;
use super::{loaded, AttemptInfo};

/// An asyncio task's first attempts, where its context shows them.
///
/// Setting the context variable and resetting it again would cost each async call more
/// than the rest of its happy path (two new HAMTs and a token). Instead, the first time a
/// task's first attempt starts, the task's context gets one of these, and each first
/// attempt of that task that is not nested in another puts itself in it and takes itself
/// out again (a field written twice). Whatever copies the context meanwhile (a child
/// task, `asyncio.to_thread`, a callback) holds the same slot, so it sees the attempt
/// while the attempt is in progress, as it would have seen the variable; a call nested in
/// the attempt sets the variable over the slot, so that those copies keep seeing the
/// attempt they were made in. After the attempt a copy sees what the slot shows then
/// (the variable, set, would have shown the attempt that was over). Only the task that
/// owns the slot writes it: a child task's first call gets a slot of its own (what it
/// replaced, `outer`, shows through it while it holds no attempt).
#[pyclass(frozen, module = "retryrs", name = "_AttemptSlot")]
pub struct AttemptSlot {
    /// A weak reference to the task.
    owner: Py<PyAny>,
    /// The loop running the task.
    task_loop: Py<PyAny>,
    /// What the context showed before: nothing, or another task's slot.
    outer: Option<Py<AttemptSlot>>,
    /// The attempt in it (an owned reference to an `AttemptInfo`), or null. Written only
    /// by the owning task, attached to the interpreter: plain loads and stores (a lock
    /// costs the happy path more than the rest of the slot).
    current: AtomicPtr<pyo3::ffi::PyObject>,
}

impl AttemptSlot {
    /// The attempt `info` goes in (the slot holds none).
    fn put(&self, info: &Bound<'_, AttemptInfo>) {
        self.current.store(info.clone().into_ptr(), Ordering::Release);
    }

    /// The attempt in it is over.
    fn clear(&self, py: Python<'_>) {
        let held = self.current.load(Ordering::Acquire);
        self.current.store(std::ptr::null_mut(), Ordering::Release);
        if !held.is_null() {
            // SAFETY: the slot's own reference, given up here.
            drop(unsafe { Bound::<PyAny>::from_owned_ptr(py, held) });
        }
    }

    fn holds_one(&self) -> bool {
        !self.current.load(Ordering::Acquire).is_null()
    }

    /// The attempt it shows: its own, else the one the slot it replaced shows.
    fn shown(&self, py: Python<'_>) -> Option<Py<AttemptInfo>> {
        let held = self.current.load(Ordering::Acquire);
        if held.is_null() {
            return self.outer.as_ref().and_then(|o| o.get().shown(py));
        }
        // SAFETY: the slot holds a reference, and only its task (this thread, attached)
        // gives it up.
        let held = unsafe { Bound::<PyAny>::from_borrowed_ptr(py, held) };
        held.cast_into::<AttemptInfo>().ok().map(Bound::unbind)
    }
}

impl Drop for AttemptSlot {
    fn drop(&mut self) {
        let held = *self.current.get_mut();
        if !held.is_null() {
            // SAFETY: the slot's own reference.
            Python::attach(|py| drop(unsafe { Bound::<PyAny>::from_owned_ptr(py, held) }));
        }
    }
}

/// A first attempt, made the context's current one (see `enter`).
pub enum Entered<'py> {
    /// In its task's slot (which held none before).
    Slot(Bound<'py, AttemptSlot>),
    /// Set in the context variable: the token that resets it.
    Token(Bound<'py, PyAny>),
}

static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CURRENT_TASK: PyOnceLock<TaskOf> = PyOnceLock::new();

/// How to find a loop's running task: the C accelerator's `current_task` (3.12 on), its
/// dict of them (before: asyncio's own `current_task` is written in Python there, and
/// reads that dict), or asyncio's function where there is no accelerator.
enum TaskOf {
    Function(Py<PyAny>),
    Dict(Py<pyo3::types::PyDict>),
}

/// The asyncio loop running here and its task, if any (None: no running loop, or not in
/// a task). Asking for the running loop costs a system call (asyncio checks the process
/// id each time, for fork safety): a task's slot keeps its loop, so that its later calls
/// only ask the loop for its task (`task_of`).
fn running_task(py: Python<'_>) -> PyResult<Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>> {
    let get_loop =
        RUNNING_LOOP.get_or_try_init(py, || accelerator(py)?.getattr("_get_running_loop").map(Bound::unbind))?;
    let running = get_loop.bind(py).call0()?;
    if running.is_none() {
        return Ok(None);
    }
    Ok(task_of(&running)?.map(|task| (running, task)))
}

fn accelerator(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyModule>> {
    py.import("_asyncio").or_else(|_| py.import("asyncio"))
}

fn task_finder(py: Python<'_>) -> PyResult<&TaskOf> {
    CURRENT_TASK.get_or_try_init(py, || {
        let module = accelerator(py)?;
        if let Ok(f) = module.getattr("current_task") {
            return Ok::<_, PyErr>(TaskOf::Function(f.unbind()));
        }
        match module.getattr("_current_tasks").map(|d| d.cast_into::<pyo3::types::PyDict>()) {
            Ok(Ok(tasks)) => Ok(TaskOf::Dict(tasks.unbind())),
            _ => Ok(TaskOf::Function(py.import("asyncio")?.getattr("current_task")?.unbind())),
        }
    })
}

/// The task `running_loop` is running now, if any.
fn task_of<'py>(running_loop: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = running_loop.py();
    let task = match task_finder(py)? {
        TaskOf::Function(f) => f.bind(py).call1((running_loop,))?,
        TaskOf::Dict(tasks) => match tasks.bind(py).get_item(running_loop)? {
            Some(task) => task,
            None => return Ok(None),
        },
    };
    Ok((!task.is_none()).then_some(task))
}

static TRIO_MODULE: PyOnceLock<Py<pyo3::types::PyString>> = PyOnceLock::new();

/// Looks up asyncio's running loop and task functions and the module names asked for now
/// (package import: see preload.rs; `retryrs._aio` has imported asyncio by then).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    RUNNING_LOOP.get_or_try_init(py, || accelerator(py)?.getattr("_get_running_loop").map(Bound::unbind))?;
    task_finder(py)?;
    loaded(py, &TRIO_MODULE, "trio");
    loaded(py, &GREENLET, "greenlet");
    Ok(())
}

impl<'py> Entered<'py> {
    /// Makes `info` the attempt `retryrs.current_attempt()` shows in this context (and in
    /// what copies it), before the attempt's function is called.
    pub fn enter(info: &Bound<'py, AttemptInfo>) -> PyResult<Self> {
        let py = info.py();
        let shown = current_in_context(py)?;
        let foreign = match shown.cast::<AttemptSlot>() {
            Ok(slot) => Some(slot),
            Err(_) if shown.is_none() => None,
            // An attempt set by the loop forms or a later attempt: set over it.
            Err(_) => return Ok(Entered::Token(set_var(info.as_any())?)),
        };
        if let Some(slot) = foreign {
            // The slot's task is the one running its loop now: this is that task (a loop
            // runs in one thread, one task at a time, and no loop runs inside another).
            let this = slot.get();
            if let Some(task) = task_of(this.task_loop.bind(py))? {
                if this.owner.bind(py).call0()?.is(&task) {
                    if this.holds_one() {
                        // A call nested in the task's attempt: set over the slot, so that
                        // what copied the context inside the outer attempt keeps seeing
                        // that one.
                        return Ok(Entered::Token(set_var(info.as_any())?));
                    }
                    this.put(info);
                    return Ok(Entered::Slot(slot.clone()));
                }
            }
        }
        // Under trio (loaded) the variable is set, as before asyncio tasks had slots.
        if loaded(py, &TRIO_MODULE, "trio") {
            return Ok(Entered::Token(set_var(info.as_any())?));
        }
        let Some((running_loop, task)) = running_task(py)? else {
            return Ok(Entered::Token(set_var(info.as_any())?));
        };
        let weak = pyo3::types::PyWeakrefReference::new(&task)?;
        let slot = Bound::new(
            py,
            AttemptSlot {
                owner: weak.into_any().unbind(),
                task_loop: running_loop.unbind(),
                outer: foreign.map(|f| f.clone().unbind()),
                current: AtomicPtr::new(info.clone().into_ptr()),
            },
        )?;
        // Kept for the task's life: its token is dropped, never reset.
        drop(set_var(slot.as_any())?);
        Ok(Entered::Slot(slot))
    }

    /// Whether the attempt is in an asyncio task's slot (so asyncio runs it, not trio).
    pub fn in_task(&self) -> bool {
        matches!(self, Entered::Slot(_))
    }

    /// The attempt is over: the context shows what it showed before.
    pub fn leave(&self) -> PyResult<()> {
        match self {
            Entered::Slot(slot) => slot.get().clear(slot.py()),
            Entered::Token(token) => reset_var(token)?,
        }
        Ok(())
    }

    /// For the asyncio driver, which leaves an attempt that went on past its first step
    /// (`_leave_attempt`).
    pub fn to_object(&self) -> Py<PyAny> {
        match self {
            Entered::Slot(slot) => slot.clone().into_any().unbind(),
            Entered::Token(token) => token.clone().unbind(),
        }
    }
}

/// `_leave_attempt(entered)`: the asyncio driver's first attempt is over (entered in its
/// task's `_AttemptSlot`, or set in the context variable: the token).
#[pyfunction]
pub fn _leave_attempt(entered: &Bound<'_, PyAny>) -> PyResult<()> {
    match entered.cast::<AttemptSlot>() {
        Ok(slot) => slot.get().clear(slot.py()),
        Err(_) => reset_var(entered)?,
    }
    Ok(())
}

/// The attempt a value of the context variable shows.
pub(super) fn shown(value: &Bound<'_, PyAny>) -> Option<Py<AttemptInfo>> {
    if let Ok(info) = value.cast::<AttemptInfo>() {
        return Some(info.clone().unbind());
    }
    value.cast::<AttemptSlot>().ok().and_then(|s| s.get().shown(value.py()))
}
