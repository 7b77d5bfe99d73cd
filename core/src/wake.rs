//! Waiting on a 32-bit word until another thread changes it, and waking those waiters
//! without a lock: what lets a cancel token be fired from a signal handler.
//!
//! A waiter reads the word, checks its condition, then calls [`wait`] with the value it
//! read: if the word changed in between, [`wait`] returns at once, so a waker that first
//! makes the condition true and then bumps the word and calls [`wake_all`] is never
//! missed, and needs no lock (a condition variable's notify does: it is not
//! async-signal-safe).
//!
//! On Linux and Android the word is a futex: [`wake_all`] is one atomic add and one
//! system call, async-signal-safe. Elsewhere the waiters park on one process-wide
//! condition variable: a wake from a thread notifies it under its lock, and a wake from a
//! signal handler (which may not take a lock) is seen within [`SIGNAL_SLICE`], the longest
//! a waiter sleeps before it looks at its word again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Where the waits cannot be woken from a signal handler, the longest a waiter sleeps
/// before it looks at its word again.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) const SIGNAL_SLICE: Duration = Duration::from_millis(20);

/// Blocks while `word` holds `expected`, at most `timeout` (spurious returns allowed:
/// the caller checks its condition and the time again).
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    imp::wait(word, expected, timeout);
}

/// Changes `word` and wakes every thread blocked in [`wait`] on it. `from_signal`: the
/// caller may be a signal handler, so no lock may be taken (only a futex can then wake
/// at once; elsewhere the waiters see the change within [`SIGNAL_SLICE`]).
pub(crate) fn wake_all(word: &AtomicU32, from_signal: bool) {
    word.fetch_add(1, Ordering::SeqCst);
    imp::wake_all(word, from_signal);
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use super::*;

    pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
        // A day at most per wait: any longer timeout is a loop of such waits (the caller
        // checks its time), and the timespec cannot overflow.
        let timeout = timeout.min(Duration::from_secs(86_400));
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        // SAFETY: the futex word is a live AtomicU32 (4-byte aligned); FUTEX_WAIT only
        // reads it and the timespec, and returns on a wake, a timeout, a signal
        // (EINTR) or a changed word (EAGAIN): each one a return the caller handles.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                &ts as *const libc::timespec,
            );
        }
    }

    pub(super) fn wake_all(word: &AtomicU32, _from_signal: bool) {
        // SAFETY: FUTEX_WAKE reads nothing but the address; a system call is
        // async-signal-safe.
        unsafe {
            libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX);
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    use super::*;
    use std::sync::{Condvar, Mutex};

    // One for the process: waits are rare (a retry's sleep), so a wake that rouses every
    // waiter to look at its own word costs little.
    static LOCK: Mutex<()> = Mutex::new(());
    static PARKED: Condvar = Condvar::new();

    pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
        let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // Checked under the lock: a thread's wake bumps the word before it takes the lock
        // to notify, so a change is seen here or the notify comes after this wait began.
        if word.load(Ordering::SeqCst) == expected {
            let _ = PARKED.wait_timeout(guard, timeout.min(SIGNAL_SLICE));
        }
    }

    pub(super) fn wake_all(_word: &AtomicU32, from_signal: bool) {
        if !from_signal {
            let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
            PARKED.notify_all();
        }
    }
}
