//! Time: the clock and sleeper seam of the blocking executor, real or virtual, and the
//! testing switch that makes every wait virtual.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;

/// A wait ended by a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the wait was cancelled")]
pub struct Cancelled;

/// Where an executor reads the time and how it waits.
pub trait Clock: Send + Sync {
    /// Monotonic time since an arbitrary, fixed origin.
    fn now(&self) -> Duration;
    /// Waits `delay`, or until `cancel` fires. A zero delay does not sleep at all.
    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), Cancelled>;
}

/// The real monotonic clock; waits block the thread (waking early on a cancel).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        origin().elapsed()
    }

    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), Cancelled> {
        match cancel {
            Some(token) if token.wait_timeout(delay) => Err(Cancelled),
            Some(_) => Ok(()),
            None if delay.is_zero() => Ok(()),
            None => {
                std::thread::sleep(delay);
                Ok(())
            }
        }
    }
}

/// A clock that moves only when told: sleeping advances it instead of waiting. Clones
/// share one time.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    nanos: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward (for a test simulating an attempt that takes time).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self.nanos.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_add(by)));
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }

    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), Cancelled> {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(Cancelled);
        }
        self.advance(delay);
        Ok(())
    }
}

/// The testing switch: while it is on, every executor that asks [`testing::clock`] gets
/// one process-wide [`VirtualClock`], so waits take no real time and the deadline still
/// holds in virtual time. Hosts expose it as their own testing switch.
pub mod testing {
    use super::*;

    static ON: AtomicBool = AtomicBool::new(false);
    static CLOCK: Mutex<Option<VirtualClock>> = Mutex::new(None);

    /// The clock executors should use now: the virtual one while the switch is on.
    pub fn clock() -> Option<VirtualClock> {
        if !ON.load(Ordering::Acquire) {
            return None; // the hot path: one atomic load
        }
        CLOCK.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether virtual time is on.
    pub fn is_on() -> bool {
        ON.load(Ordering::Acquire)
    }

    /// Turns virtual time on (globally) with a fresh clock at zero, and returns it.
    pub fn enable() -> VirtualClock {
        let clock = VirtualClock::new();
        set(Some(clock.clone()));
        clock
    }

    /// Turns virtual time off.
    pub fn disable() {
        set(None);
    }

    /// Turns virtual time on until the guard drops, then restores what was there before.
    /// The switch is process-wide: a scope on one thread is seen by all.
    pub fn scoped() -> Scope {
        let mut slot = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
        let clock = VirtualClock::new();
        let previous = slot.replace(clock.clone());
        ON.store(true, Ordering::Release);
        Scope { clock, previous }
    }

    fn set(clock: Option<VirtualClock>) {
        let mut slot = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
        ON.store(clock.is_some(), Ordering::Release);
        *slot = clock;
    }

    /// Virtual time for as long as it lives; see [`scoped`].
    #[derive(Debug)]
    pub struct Scope {
        clock: VirtualClock,
        previous: Option<VirtualClock>,
    }

    impl Scope {
        /// The virtual clock of this scope.
        pub fn clock(&self) -> &VirtualClock {
            &self.clock
        }
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            set(self.previous.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_sleep_advances_and_respects_cancel() {
        let c = VirtualClock::new();
        c.sleep(Duration::from_secs(10), None).unwrap();
        assert_eq!(c.now(), Duration::from_secs(10));
        let token = CancelToken::new();
        token.cancel();
        assert_eq!(c.sleep(Duration::from_secs(1), Some(&token)), Err(Cancelled));
        assert_eq!(c.now(), Duration::from_secs(10));
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn system_zero_sleep_returns_and_cancel_is_seen() {
        let t0 = SystemClock.now();
        SystemClock.sleep(Duration::ZERO, None).unwrap();
        assert!(SystemClock.now() >= t0);
        let token = CancelToken::new();
        token.cancel();
        assert_eq!(SystemClock.sleep(Duration::from_secs(60), Some(&token)), Err(Cancelled));
    }
}
