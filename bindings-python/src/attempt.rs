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
//!
//! This file holds the attempt (`Frame`, `AttemptInfo`) and `current_attempt`; where it
//! is found lives in `attempt/`: the blocking calls' thread-local stack (`sync.rs`), the
//! context variable (`context.rs`), and an asyncio task's slot (`slot.rs`).

mod context;
mod slot;
mod sync;

use std::ops::Deref;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use retryrs::{Admission, Call, Policy, VirtualClock};

use crate::state::now;
use context::current_in_context;
use slot::shown;
use sync::{Mark, Stack, SYNC};

pub use context::{context_var, get_var, new_context_var};
pub use slot::{_leave_attempt, preload, Entered};
pub use sync::{SyncFrame, SyncSlot};

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

/// Whether the module `name` is in `sys.modules` (`key` holds the name once made).
pub fn loaded(py: Python<'_>, key: &'static PyOnceLock<Py<pyo3::types::PyString>>, name: &str) -> bool {
    let key = key.get_or_init(py, || pyo3::types::PyString::new(py, name).unbind());
    // SAFETY: with the GIL held, sys.modules (a borrowed reference) and an owned key.
    unsafe {
        let modules = pyo3::ffi::PyImport_GetModuleDict();
        !modules.is_null() && pyo3::ffi::PyDict_Contains(modules, key.as_ptr()) == 1
    }
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
