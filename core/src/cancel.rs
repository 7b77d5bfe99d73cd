//! A cancel token: one side calls [`CancelToken::cancel`], a sleeping executor on another
//! thread wakes at once (not when its timer would have fired).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Cheap to clone (one `Arc`), `Send + Sync`; every clone cancels the same thing.
/// Cancelling is sticky: a cancelled token stays cancelled.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    // The condvar needs a mutex; the flag itself is the atomic, so readers never lock.
    lock: Mutex<()>,
    wake: Condvar,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels, and wakes every thread waiting on this token.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
        // Taking the lock orders this notify after a waiter's check-then-wait.
        let _guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.wake.notify_all();
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Blocks for `timeout` or until cancelled, whichever is first. Returns `true` if
    /// cancelled. A zero timeout only looks at the flag.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        if self.is_cancelled() || timeout.is_zero() {
            return self.is_cancelled();
        }
        let until = Instant::now().checked_add(timeout);
        let mut guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.is_cancelled() {
                return true;
            }
            let left = match until {
                Some(until) => match until.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                // Beyond what Instant can hold: wait in long slices, forever in effect.
                None => Duration::from_secs(86_400),
            };
            guard = self.inner.wake.wait_timeout(guard, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_from_another_thread_wakes_a_sleeper_at_once() {
        let token = CancelToken::new();
        let other = token.clone();
        let started = Instant::now();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.cancel();
        });
        assert!(token.wait_timeout(Duration::from_secs(30)));
        let waited = started.elapsed();
        canceller.join().unwrap();
        // 50 ms before the cancel, then "at once": generous slack for a loaded machine,
        // still far below the 30 s the timer would have taken.
        assert!(waited < Duration::from_secs(5), "woke after {waited:?}");
        assert!(token.is_cancelled());
    }

    #[test]
    fn an_uncancelled_wait_times_out() {
        let token = CancelToken::new();
        assert!(!token.wait_timeout(Duration::from_millis(10)));
        assert!(!token.wait_timeout(Duration::ZERO));
        token.cancel();
        assert!(token.wait_timeout(Duration::ZERO));
        assert!(token.wait_timeout(Duration::MAX));
    }
}
