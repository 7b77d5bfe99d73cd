//! A small lock that a forked child never waits on forever (issue 27).
//!
//! A `std::sync::Mutex` held by another thread when the process forks stays locked in the
//! child for good: the thread that would unlock it does not exist there, and the child's
//! first call through a shared breaker or ratio budget hangs. This lock records which
//! *fork generation* took it: a `pthread_atfork` child handler (registered once, when the
//! first lock is made) moves the generation on in every child, so a lock still marked
//! with an older generation is known to be held by a thread that is gone. The child takes
//! it over; the data may be half-updated, so the caller says what becomes of it (a
//! breaker starts afresh, closed; a budget's counters, plain numbers, are kept).
//!
//! Uncontended, a lock is one compare-and-swap and an unlock one store, like a mutex's
//! fast path; contended (critical sections here are a few comparisons), it spins briefly
//! and then yields. Not fair and not reentrant; nothing under it may panic or block.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};

/// The fork generation of this process: 1 in the original process, one more in each
/// child forked from it (pthread_atfork's child handler). 0 marks a free lock.
static GENERATION: AtomicU64 = AtomicU64::new(1);

#[cfg(unix)]
fn register_fork_handler() {
    use std::sync::Once;
    extern "C" fn child() {
        // In the child, before fork() returns there: only the forking thread runs, and an
        // atomic add is async-signal-safe.
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
    extern "C" {
        fn pthread_atfork(
            prepare: Option<extern "C" fn()>,
            parent: Option<extern "C" fn()>,
            child: Option<extern "C" fn()>,
        ) -> std::os::raw::c_int;
    }
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: the handler is a plain function that only touches an atomic. If
        // registration fails (ENOMEM), locks still work; only the fork case is unhandled.
        let _ = unsafe { pthread_atfork(None, None, Some(child)) };
    });
}

/// No fork() here (Windows, wasm32-unknown-unknown): nothing to register.
#[cfg(not(unix))]
fn register_fork_handler() {}

/// A lock over `T` that a forked child can take over from a thread that did not follow.
pub(crate) struct ForkLock<T> {
    /// 0: free; otherwise the generation of the process whose thread holds it.
    state: AtomicU64,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, and a guard exists only while the
// state says this process's thread holds the lock (one at a time).
unsafe impl<T: Send> Send for ForkLock<T> {}
unsafe impl<T: Send> Sync for ForkLock<T> {}

impl<T> ForkLock<T> {
    pub(crate) fn new(value: T) -> Self {
        register_fork_handler();
        ForkLock { state: AtomicU64::new(0), data: UnsafeCell::new(value) }
    }

    /// Takes the lock. If a thread of the process this one was forked from held it at the
    /// fork, this process takes it over, and `orphaned` may replace the data (which that
    /// thread may have left half-updated): `Some(fresh)` is written over it without
    /// dropping it, `None` keeps it.
    #[inline]
    pub(crate) fn lock(&self, orphaned: impl FnOnce() -> Option<T>) -> ForkGuard<'_, T> {
        let generation = GENERATION.load(Ordering::Acquire);
        if self.state.compare_exchange(0, generation, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return ForkGuard { lock: self };
        }
        self.lock_slow(generation, orphaned)
    }

    #[cold]
    fn lock_slow(&self, generation: u64, orphaned: impl FnOnce() -> Option<T>) -> ForkGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            let held = self.state.load(Ordering::Relaxed);
            if held == 0 {
                if self.state.compare_exchange_weak(0, generation, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    return ForkGuard { lock: self };
                }
            } else if held < generation {
                // Held by a thread of an ancestor process: gone here. Take it over.
                if self.state.compare_exchange(held, generation, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    if let Some(fresh) = orphaned() {
                        // SAFETY: this thread holds the lock. The old value is not dropped:
                        // it may be half-updated (a collection mid-push).
                        unsafe { std::ptr::write(self.data.get(), fresh) };
                    }
                    return ForkGuard { lock: self };
                }
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Never waits: a lock held elsewhere (or by the caller) prints as `<locked>`.
impl<T: std::fmt::Debug> std::fmt::Debug for ForkLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let generation = GENERATION.load(Ordering::Acquire);
        if self.state.compare_exchange(0, generation, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            let guard = ForkGuard { lock: self };
            f.debug_struct("ForkLock").field("data", &*guard).finish()
        } else {
            f.debug_struct("ForkLock").field("data", &format_args!("<locked>")).finish()
        }
    }
}

/// The lock, held: the data, until dropped.
pub(crate) struct ForkGuard<'a, T> {
    lock: &'a ForkLock<T>,
}

impl<T> Deref for ForkGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for ForkGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, and is borrowed mutably.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for ForkGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.state.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    // Taking over a lock after a real fork: core/tests/fork_breaker.rs (its own process).

    #[test]
    fn threads_take_turns() {
        let lock = Arc::new(ForkLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || (0..10_000).for_each(|_| *lock.lock(|| None) += 1))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock.lock(|| None), 40_000);
    }
}
