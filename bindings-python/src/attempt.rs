//! The attempt in progress, as `retryrs.current_attempt()` shows it: its number and its
//! bound (the time left before the deadline, or the smaller attempt timeout), which the
//! engine answers when the attempt starts (`Call::attempt_deadline`, or
//! `Policy::attempt_deadline` for the first attempt of a call whose engine state starts
//! lazily). Nothing here computes a bound: it only counts the engine's answer down on
//! the clock the call runs on.
//!
//! Where the attempt is found: the asyncio driver and the loop forms set a `contextvars`
//! value (tasks interleave on one thread, and `asyncio.to_thread` / child tasks copy the
//! context); an asyncio task's first attempts go in one slot the variable holds for the
//! task (`AttemptSlot`: two field writes per call rather than a set and a reset); the
//! blocking executor links its attempt on a thread-local stack instead, which costs
//! its happy path a few nanoseconds rather than a context-variable set and reset (about
//! as much again as the whole call). Nothing else can run on a thread while a blocking
//! call is in progress there, except greenlets (gevent, eventlet: each has its own
//! context, but they share the thread): once the `greenlet` module is loaded, the
//! blocking executor sets the context variable too. Each attempt is marked with where it
//! started (`Mark`: the thread, and how many blocking calls had started there), so when
//! both are visible (a sync call inside an async attempt, or the reverse) the innermost,
//! the later started, wins.

use std::cell::{Cell, UnsafeCell};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use retryrs::{Admission, Call, Policy, VirtualClock};

use crate::state::now;

/// Where an attempt started, to tell which of two visible attempts is the innermost: the
/// thread, and how many blocking calls had started on it by then (a blocking call counts
/// one more when it starts). A thread-local count, not a process-wide sequence: the
/// blocking happy path pays no atomic read-modify-write for it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Mark {
    thread: u64,
    count: u64,
}

static THREADS: AtomicU64 = AtomicU64::new(0);

impl Mark {
    /// Here, now.
    pub fn here() -> Mark {
        // (A thread that is ending has no blocking call left to be inside of.)
        SYNC.try_with(|s| s.mark(false)).unwrap_or(Mark { thread: 0, count: 0 })
    }

    /// A blocking call starting here.
    fn next() -> Mark {
        SYNC.with(|s| s.mark(true))
    }

    /// Whether an attempt marked `self` started after the blocking call marked `sync`, on
    /// this thread (whose blocking calls `sync` is one of). One that came from another
    /// thread (a context copied there) started before any blocking call here began using it.
    fn after(self, sync: Mark) -> bool {
        self.thread == sync.thread && self.count >= sync.count
    }
}

/// One attempt's place: its number, when its bound ends (engine time), the clock it runs on.
#[derive(Clone)]
pub struct Frame {
    pub mark: Mark,
    pub number: u32,
    pub end: Option<Duration>,
    /// The bound as the engine gave it when the attempt started (for messages).
    pub bound: Option<Duration>,
    pub clock: Option<VirtualClock>,
}

impl Frame {
    /// Attempt `number`, started at `at`, whose bound ends at `end` (the engine's answer).
    pub fn new(number: u32, end: Option<Duration>, at: Duration, clock: Option<VirtualClock>) -> Self {
        Frame::marked(Mark::here(), number, end, at, clock)
    }

    fn marked(mark: Mark, number: u32, end: Option<Duration>, at: Duration, clock: Option<VirtualClock>) -> Self {
        let bound = end.map(|end| end.saturating_sub(at));
        Frame { mark, number, end, bound, clock }
    }

    /// The first attempt of a call under `policy` starting at `start` (no engine state yet).
    pub fn first(policy: &Policy, start: Duration, clock: Option<VirtualClock>) -> Self {
        Frame::new(1, policy.attempt_deadline(start, start), start, clock)
    }

    /// The attempt `call` has in progress, started at `at`.
    pub fn of<P: Deref<Target = Policy>>(call: &Call<P>, at: Duration, clock: Option<VirtualClock>) -> Self {
        Frame::new(call.attempt(), call.attempt_deadline().ok().flatten(), at, clock)
    }

    fn remaining(&self) -> Option<Duration> {
        self.end.map(|end| end.saturating_sub(now(&self.clock)))
    }
}

/// `retryrs.current_attempt()`: the attempt in progress.
///
/// ``number`` (1-based); ``remaining``: seconds left of this attempt's bound (the time
/// left before the deadline, or the smaller ``attempt_timeout``) when read, never below
/// 0, or None when unbounded; ``deadline``: when the bound ends, as a ``time.monotonic()``
/// value, or None. Pass ``remaining`` to I/O as its timeout.
#[pyclass(frozen, module = "retryrs", name = "AttemptInfo")]
pub struct AttemptInfo {
    pub frame: Frame,
    /// When the call began (engine time): the async driver hands it back to `_begin`.
    pub start: Duration,
    /// The circuit breaker's answer to the call (None: no breaker, or not asked), handed
    /// back with `start` to `_succeeded` / `_begin`, which record the outcome.
    pub admission: Option<Admission>,
    /// Whether the asyncio driver arms a timer for this attempt: it is bounded and its
    /// retrier interrupts (one attribute read on the async happy path, not two).
    arm: bool,
    deadline: OnceLock<Option<f64>>,
    /// The retrier the call runs as when an ambient context constrains it (`ambient.rs`):
    /// the drivers' `_begin` / `_succeeded` go on with it, not with the one they hold.
    pub under: Option<Py<crate::retrier::Retrier>>,
}

impl AttemptInfo {
    pub fn new(frame: Frame, start: Duration) -> Self {
        Self::with_arm(frame, start, false)
    }

    /// Whether the asyncio driver arms a timer for this attempt.
    pub fn arm(&self) -> bool {
        self.arm
    }

    pub fn with_arm(frame: Frame, start: Duration, interrupts: bool) -> Self {
        let arm = interrupts && frame.end.is_some();
        AttemptInfo { frame, start, admission: None, arm, deadline: OnceLock::new(), under: None }
    }

    /// What is left of the attempt's bound now (None: unbounded).
    pub fn frame_remaining(&self) -> Option<Duration> {
        self.frame.remaining()
    }

    /// This first attempt, of a call run as `under` (an ambient context's constraint).
    pub fn run_as(self, under: Py<crate::retrier::Retrier>) -> Self {
        AttemptInfo { under: Some(under), ..self }
    }

    /// This first attempt, with the breaker's answer to its call.
    pub fn admitted(self, admission: Option<Admission>) -> Self {
        AttemptInfo { admission, ..self }
    }
}

#[pymethods]
impl AttemptInfo {
    #[getter]
    fn number(&self) -> u32 {
        self.frame.number
    }

    #[getter]
    fn remaining(&self) -> Option<f64> {
        self.frame.remaining().map(|d| d.as_secs_f64())
    }

    /// Read once: `time.monotonic()` then plus what is left.
    #[getter]
    fn deadline(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        if let Some(d) = self.deadline.get() {
            return Ok(*d);
        }
        let Some(left) = self.frame.remaining() else {
            return Ok(*self.deadline.get_or_init(|| None));
        };
        let mono: f64 = py.import("time")?.call_method0("monotonic")?.extract()?;
        Ok(*self.deadline.get_or_init(|| Some(mono + left.as_secs_f64())))
    }

    #[getter]
    fn _arm(&self) -> bool {
        self.arm
    }

    /// The bound the engine gave when the attempt started, in seconds (None: unbounded).
    #[getter]
    fn _bound(&self) -> Option<f64> {
        self.frame.bound.map(|d| d.as_secs_f64())
    }

    fn __repr__(&self) -> String {
        match self.frame.remaining() {
            Some(left) => format!("<AttemptInfo number={} remaining={:.3}>", self.frame.number, left.as_secs_f64()),
            None => format!("<AttemptInfo number={} remaining=None>", self.frame.number),
        }
    }
}

/// This thread's blocking attempts, and what marks an attempt started here.
///
/// The attempts are the blocking calls' own `SyncSlot`s (on their stacks), linked
/// innermost first: a call links its slot when it starts and unlinks it when it ends, a
/// few stores with no allocation and no borrow flag. Cells without a destructor, so that
/// the thread-local needs no registration either: each access is the address lookup.
pub struct Stack {
    /// This thread's number (0: not given yet).
    thread: Cell<u64>,
    /// The blocking calls started on this thread so far.
    count: Cell<u64>,
    /// The innermost blocking attempt on this thread (null: none).
    top: Cell<*const SyncSlot>,
}

impl Stack {
    fn mark(&self, next: bool) -> Mark {
        if self.thread.get() == 0 {
            self.thread.set(THREADS.fetch_add(1, Ordering::Relaxed) + 1);
        }
        let count = self.count.get() + u64::from(next);
        self.count.set(count);
        Mark { thread: self.thread.get(), count }
    }

    /// The innermost blocking attempt's frame.
    fn top(&self) -> Option<Frame> {
        let top = self.top.get();
        // SAFETY: a linked slot lives until its call unlinks it (SyncFrame's drop), on
        // this thread; nothing writes its frame while this reads it (no Python runs here).
        (!top.is_null()).then(|| unsafe { (*(*top).frame.get()).clone() }).flatten()
    }
}

thread_local! {
    // One thread-local for all of it: in a shared library each access is a call.
    static SYNC: Stack = const { Stack { thread: Cell::new(0), count: Cell::new(0), top: Cell::new(std::ptr::null()) } };
}

/// A blocking call's attempt, where the thread's stack links it: made empty on the call's
/// own stack, filled and linked by `SyncFrame::push`, unlinked when that is dropped.
pub struct SyncSlot {
    frame: UnsafeCell<Option<Frame>>,
    /// The next one out (null: none).
    prev: Cell<*const SyncSlot>,
}

impl SyncSlot {
    pub const fn new() -> Self {
        SyncSlot { frame: UnsafeCell::new(None), prev: Cell::new(std::ptr::null()) }
    }
}

/// A blocking call's place: its slot, linked on the thread's stack (when the call starts,
/// updated per attempt, unlinked when it ends, however it ends), or, where greenlets may
/// switch within the thread, the context variable (reset when it ends).
pub enum SyncFrame<'a> {
    /// The slot, and the thread's stack it is linked on (a thread-local without a
    /// destructor, so its address holds for the thread's life; a `SyncFrame` borrows a
    /// slot with `Cell`s, so it never leaves the thread): the end of the call unlinks it
    /// without a second thread-local lookup, a call in a shared library.
    Thread(&'a SyncSlot, *const Stack),
    /// The token of the first set, which restores what was there before the call.
    Context(Py<PyAny>),
}

static GREENLET: PyOnceLock<Py<pyo3::types::PyString>> = PyOnceLock::new();

/// Whether the `greenlet` module was ever loaded (gevent, eventlet, and some libraries
/// that use it): once it was, always (a greenlet may outlive its module's entry). Until
/// then, a dict lookup in `sys.modules` when its size changed since the last lookup (the
/// lookup costs the blocking happy path as much as the rest of the attempt's frame): an
/// import adds an entry, so an unchanged size means no import, unless as many entries
/// were removed in between.
fn greenlets(py: Python<'_>) -> bool {
    if GREENLET_SEEN.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: with the GIL held, sys.modules (a borrowed reference).
    let size = unsafe {
        let modules = pyo3::ffi::PyImport_GetModuleDict();
        if modules.is_null() {
            return false;
        }
        pyo3::ffi::PyDict_Size(modules)
    };
    if size == MODULES_WITHOUT_GREENLET.load(Ordering::Relaxed) {
        return false;
    }
    let found = loaded(py, &GREENLET, "greenlet");
    if found {
        GREENLET_SEEN.store(true, Ordering::Relaxed);
    } else {
        MODULES_WITHOUT_GREENLET.store(size, Ordering::Relaxed);
    }
    found
}

static GREENLET_SEEN: AtomicBool = AtomicBool::new(false);
/// The size of `sys.modules` when `greenlet` was last looked for and not found (-1: never).
static MODULES_WITHOUT_GREENLET: AtomicIsize = AtomicIsize::new(-1);

/// Whether the module `name` is in `sys.modules` (`key` holds the name once made).
pub fn loaded(py: Python<'_>, key: &'static PyOnceLock<Py<pyo3::types::PyString>>, name: &str) -> bool {
    let key = key.get_or_init(py, || pyo3::types::PyString::new(py, name).unbind());
    // SAFETY: with the GIL held, sys.modules (a borrowed reference) and an owned key.
    unsafe {
        let modules = pyo3::ffi::PyImport_GetModuleDict();
        !modules.is_null() && pyo3::ffi::PyDict_Contains(modules, key.as_ptr()) == 1
    }
}

fn set_in_context(py: Python<'_>, frame: Frame) -> PyResult<Py<PyAny>> {
    let info = Py::new(py, AttemptInfo::new(frame, Duration::ZERO))?;
    Ok(context_var(py)?.call_method1(pyo3::intern!(py, "set"), (info,))?.unbind())
}

impl<'a> SyncFrame<'a> {
    /// The first attempt of a blocking call under `policy`, starting at `start`, in
    /// `slot` (the call's own, which outlives the returned frame).
    pub fn push(
        py: Python<'_>,
        slot: &'a SyncSlot,
        policy: &Policy,
        start: Duration,
        clock: &Option<VirtualClock>,
    ) -> PyResult<Self> {
        let end = policy.attempt_deadline(start, start);
        if greenlets(py) {
            let frame = Frame::marked(Mark::next(), 1, end, start, clock.clone());
            return Ok(SyncFrame::Context(set_in_context(py, frame)?));
        }
        let stack = SYNC.with(|s| {
            let mark = s.mark(true);
            // SAFETY: the slot is not linked yet: nothing else reads it.
            unsafe { *slot.frame.get() = Some(Frame::marked(mark, 1, end, start, clock.clone())) };
            slot.prev.set(s.top.get());
            s.top.set(slot);
            s as *const Stack
        });
        Ok(SyncFrame::Thread(slot, stack))
    }

    /// The call's attempt in progress, `call`'s, started at `at` on `clock`.
    pub fn set<P: Deref<Target = Policy>>(
        &self,
        py: Python<'_>,
        call: &Call<P>,
        at: Duration,
        clock: &Option<VirtualClock>,
    ) -> PyResult<()> {
        match self {
            // SAFETY: the call's own slot, on this thread; no reader runs meanwhile.
            SyncFrame::Thread(slot, _) => unsafe {
                if let Some(top) = &mut *slot.frame.get() {
                    // Still the same blocking call: its place among the others (its mark)
                    // stays, so the thread's stack is not looked up again.
                    let end = call.attempt_deadline().ok().flatten();
                    *top = Frame::marked(top.mark, call.attempt(), end, at, clock.clone());
                }
            },
            // The first set's token restores the value from before the call at the end.
            SyncFrame::Context(_) => drop(set_in_context(py, Frame::of(call, at, clock.clone()))?),
        }
        Ok(())
    }
}

impl Drop for SyncFrame<'_> {
    fn drop(&mut self) {
        match self {
            SyncFrame::Thread(slot, stack) => {
                // SAFETY: this thread's stack (see `SyncFrame::Thread`), alive for its life.
                let s = unsafe { &**stack };
                let me: *const SyncSlot = *slot;
                if s.top.get() == me {
                    s.top.set(slot.prev.get());
                    return;
                }
                // Not the innermost (greenlets loaded during the call switched to another
                // blocking call on this thread): unlinked where it is, so that no link
                // outlives the slot it points to.
                let mut at = s.top.get();
                while !at.is_null() {
                    // SAFETY: every linked slot is alive (see Stack::top).
                    let next = unsafe { &(*at).prev };
                    if next.get() == me {
                        next.set(slot.prev.get());
                        return;
                    }
                    at = next.get();
                }
            }
            SyncFrame::Context(token) => Python::attach(|py| {
                // Only fails if the context changed under the call: nothing to restore then.
                if let Ok(var) = context_var(py) {
                    let _ = var.call_method1(pyo3::intern!(py, "reset"), (token.bind(py),));
                }
            }),
        }
    }
}

type Obj = *mut pyo3::ffi::PyObject;
type VarSet = unsafe extern "C" fn(Obj, Obj) -> Obj;
type VarReset = unsafe extern "C" fn(Obj, Obj) -> std::ffi::c_int;
type VarGet = unsafe extern "C" fn(Obj, Obj, *mut Obj) -> std::ffi::c_int;

/// The C API of context variables (in every CPython since 3.7, outside the stable ABI
/// the module is built for): looked up once in the running interpreter, so that the
/// asyncio happy path sets and resets the attempt without a method call each way.
struct ContextApi {
    set: VarSet,
    reset: VarReset,
    get: VarGet,
}

static CONTEXT_API: OnceLock<Option<ContextApi>> = OnceLock::new();

fn context_api() -> Option<&'static ContextApi> {
    CONTEXT_API
        .get_or_init(|| {
            let sym = crate::step::interpreter_symbol;
            let (set, reset, get) = (sym(c"PyContextVar_Set")?, sym(c"PyContextVar_Reset")?, sym(c"PyContextVar_Get")?);
            // SAFETY: the interpreter's own functions, with their documented signatures.
            unsafe {
                Some(ContextApi {
                    set: std::mem::transmute::<*mut std::ffi::c_void, VarSet>(set),
                    reset: std::mem::transmute::<*mut std::ffi::c_void, VarReset>(reset),
                    get: std::mem::transmute::<*mut std::ffi::c_void, VarGet>(get),
                })
            }
        })
        .as_ref()
}

/// `_CURRENT.set(value)`: the token that restores what was there before.
fn set_var<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let var = context_var(py)?;
    match context_api() {
        // SAFETY: live references held with the GIL; a new reference or NULL and an error.
        Some(api) => unsafe { Bound::from_owned_ptr_or_err(py, (api.set)(var.as_ptr(), value.as_ptr())) },
        None => var.call_method1(pyo3::intern!(py, "set"), (value,)),
    }
}

/// `_CURRENT.reset(token)`.
fn reset_var(token: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = token.py();
    let var = context_var(py)?;
    match context_api() {
        // SAFETY: live references held with the GIL; -1 with an error set on failure.
        Some(api) => match unsafe { (api.reset)(var.as_ptr(), token.as_ptr()) } {
            0 => Ok(()),
            _ => Err(PyErr::fetch(py)),
        },
        None => var.call_method1(pyo3::intern!(py, "reset"), (token,)).map(drop),
    }
}

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
fn shown(value: &Bound<'_, PyAny>) -> Option<Py<AttemptInfo>> {
    if let Ok(info) = value.cast::<AttemptInfo>() {
        return Some(info.clone().unbind());
    }
    value.cast::<AttemptSlot>().ok().and_then(|s| s.get().shown(value.py()))
}

/// `_CURRENT.get()`.
fn current_in_context(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    get_var(context_var(py)?)
}

/// `var.get()` of a context variable whose default is None.
pub fn get_var<'py>(var: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = var.py();
    match context_api() {
        Some(api) => {
            let mut value: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
            // SAFETY: as above; the value is a new reference (the variable's default,
            // None, when it is not set in this context).
            match unsafe { (api.get)(var.as_ptr(), std::ptr::null_mut(), &mut value) } {
                0 if !value.is_null() => Ok(unsafe { Bound::from_owned_ptr(py, value) }),
                0 => Ok(py.None().into_bound(py)),
                _ => Err(PyErr::fetch(py)),
            }
        }
        None => var.call_method0(pyo3::intern!(py, "get")),
    }
}

static CURRENT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The context variable the asyncio driver and the loop forms set (`_native._CURRENT`).
pub fn context_var(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    CURRENT.get_or_try_init(py, || new_context_var(py, "retryrs.current_attempt")).map(|v| v.bind(py))
}

/// `contextvars.ContextVar(name, default=None)`.
pub fn new_context_var(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("default", py.None())?;
    Ok(py.import("contextvars")?.getattr("ContextVar")?.call((name,), Some(&kwargs))?.unbind())
}

/// `retryrs.current_attempt()`: the attempt in progress (an `AttemptInfo`), or None
/// outside any.
#[pyfunction]
pub fn current_attempt(py: Python<'_>) -> PyResult<Option<Py<AttemptInfo>>> {
    let sync = SYNC.with(Stack::top);
    let in_context = shown(&current_in_context(py)?);
    match (sync, in_context) {
        (Some(s), Some(c)) if c.get().frame.mark.after(s.mark) => Ok(Some(c)),
        (Some(s), _) => Ok(Some(Py::new(py, AttemptInfo::new(s, Duration::ZERO))?)),
        (None, c) => Ok(c),
    }
}
