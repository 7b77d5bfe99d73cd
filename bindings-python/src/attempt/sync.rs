//! The blocking calls' attempts: each thread's stack of them (linked from the calls' own
//! stacks), the mark that orders an attempt among them, and the context variable used
//! instead once greenlets may switch within the thread.

use std::cell::{Cell, UnsafeCell};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use retryrs::{Call, Policy, VirtualClock};

use super::{context_var, loaded, AttemptInfo, Frame};

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
    pub(super) fn after(self, sync: Mark) -> bool {
        self.thread == sync.thread && self.count >= sync.count
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
    pub(super) fn top(&self) -> Option<Frame> {
        let top = self.top.get();
        // SAFETY: a linked slot lives until its call unlinks it (SyncFrame's drop), on
        // this thread; nothing writes its frame while this reads it (no Python runs here).
        (!top.is_null()).then(|| unsafe { (*(*top).frame.get()).clone() }).flatten()
    }
}

thread_local! {
    // One thread-local for all of it: in a shared library each access is a call.
    pub(super) static SYNC: Stack = const { Stack { thread: Cell::new(0), count: Cell::new(0), top: Cell::new(std::ptr::null()) } };
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

pub(super) static GREENLET: PyOnceLock<Py<pyo3::types::PyString>> = PyOnceLock::new();

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
