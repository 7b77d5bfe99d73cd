//! Time: the clock and sleeper seam of the blocking executor, real or virtual, and the
//! testing switch that makes every wait virtual.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;

/// A wait ended by a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the wait was cancelled")
    }
}

impl std::error::Error for Cancelled {}

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
///
/// The time is a [`Duration`] (seconds in a `u64`), so it reaches about 5.8e11 years
/// before it saturates: far past any sum of waits a validated policy can ask for under a
/// deadline (each delay and the deadline are at most 9e15 ms, about 285,000 years). A
/// nanosecond `u64` froze at about 584 years, so a 2e10 s wait stopped the clock and a
/// wait past the deadline was started.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    now: Arc<Mutex<Duration>>,
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward (for a test simulating an attempt that takes time).
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now = now.saturating_add(by);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
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
///
/// Two layers: a global switch ([`testing::enable`] / [`testing::disable`]) and scopes
/// ([`testing::scoped`]). Open scopes are counted, not stacked by order: the newest open
/// scope's clock is the current one, closing any scope (in any order, from any thread)
/// hands the clock back to the newest scope still open, and closing the last one leaves
/// the global switch as it was. So virtual time never stays on by accident because two
/// threads left their scopes in the "wrong" order, nor goes off under a scope still open.
pub mod testing {
    use super::*;

    static ON: AtomicBool = AtomicBool::new(false);
    static SWITCH: Mutex<Switch> = Mutex::new(Switch { global: None, scopes: Vec::new(), next_id: 0 });

    struct Switch {
        global: Option<VirtualClock>,
        /// Open scopes, oldest first: (id, clock).
        scopes: Vec<(u64, VirtualClock)>,
        next_id: u64,
    }

    impl Switch {
        fn current(&self) -> Option<&VirtualClock> {
            self.scopes.last().map(|(_, c)| c).or(self.global.as_ref())
        }
    }

    fn switch() -> std::sync::MutexGuard<'static, Switch> {
        SWITCH.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(switch: &Switch) {
        ON.store(switch.current().is_some(), Ordering::Release);
    }

    /// The clock executors should use now: the virtual one while the switch is on.
    pub fn clock() -> Option<VirtualClock> {
        if !ON.load(Ordering::Acquire) {
            return None; // the hot path: one atomic load
        }
        switch().current().cloned()
    }

    /// Whether virtual time is on.
    pub fn is_on() -> bool {
        ON.load(Ordering::Acquire)
    }

    /// Turns virtual time on (globally) with a fresh clock at zero, and returns it. Open
    /// scopes keep their own clocks until they close.
    pub fn enable() -> VirtualClock {
        let clock = VirtualClock::new();
        let mut s = switch();
        s.global = Some(clock.clone());
        publish(&s);
        clock
    }

    /// Turns the global switch off. Open scopes stay on until they close.
    pub fn disable() {
        let mut s = switch();
        s.global = None;
        publish(&s);
    }

    /// Turns virtual time on, with a fresh clock at zero, until the guard drops. The switch
    /// is process-wide: a scope on one thread is seen by all.
    pub fn scoped() -> Scope {
        let clock = VirtualClock::new();
        let mut s = switch();
        let id = s.next_id;
        s.next_id += 1;
        s.scopes.push((id, clock.clone()));
        publish(&s);
        Scope { clock, id }
    }

    /// How many scopes are open now.
    pub fn open_scopes() -> usize {
        switch().scopes.len()
    }

    /// Virtual time for as long as it lives; see [`scoped`].
    #[derive(Debug)]
    pub struct Scope {
        clock: VirtualClock,
        id: u64,
    }

    impl Scope {
        /// The virtual clock of this scope.
        pub fn clock(&self) -> &VirtualClock {
            &self.clock
        }
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            let mut s = switch();
            s.scopes.retain(|(id, _)| *id != self.id);
            publish(&s);
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
        assert_eq!(c.now(), Duration::MAX);
    }

    #[test]
    fn virtual_time_does_not_freeze_at_u64_nanoseconds() {
        // 2e10 s is past u64::MAX nanoseconds (about 1.8e10 s), where the clock used to stop.
        let c = VirtualClock::new();
        let step = Duration::from_secs(20_000_000_000);
        c.sleep(step, None).unwrap();
        c.sleep(step, None).unwrap();
        assert_eq!(c.now(), step * 2);
        // The largest validated delay, 9e15 ms, many times over.
        let big = Duration::from_millis(9_000_000_000_000_000);
        for _ in 0..1000 {
            c.advance(big);
        }
        assert_eq!(c.now(), step * 2 + big * 1000);
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
