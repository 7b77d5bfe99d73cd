//! Time: the clock and sleeper seam of the blocking executor, real or virtual, and the
//! testing switches that make the waits of a thread (or, asked by name, of the whole
//! process) virtual.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

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
    /// [`Clock::now`], or a cheaper reading that may lag behind it (usually by less than
    /// a clock tick, 1 to 10 ms; more on a loaded machine), for an executor to start a
    /// call whose bounds are whole seconds ([`crate::Policy::tolerates_coarse_start`]): a
    /// start read early only makes the call's elapsed time longer, so its deadline and
    /// attempt bounds end that much early, never late. The default is [`Clock::now`].
    fn now_coarse(&self) -> Duration {
        self.now()
    }
}

/// The real monotonic clock; waits block the thread (waking early on a cancel).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

/// The monotonic clock itself, from its own zero (on Unix, CLOCK_MONOTONIC's: one
/// clock_gettime; an `Instant`'s `elapsed()` went through a general timespec subtraction
/// and its checks, about 90 instructions, more than the rest of a C call's happy path).
///
/// The origin is the clock's own zero, not the process's first reading, so that every
/// time tokio's paused clock can show is after it: a paused runtime stands still at the
/// real time it started, which may be before the process first read this clock, and a
/// later origin made its readings saturate at zero until tokio's time passed it (a call
/// started there measured its first wait short by the gap: 9.000047 s left of a 10 s
/// deadline after a 1 s wait).
#[cfg(unix)]
#[inline]
fn raw_now() -> Duration {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// Off Unix, std's clock since a fixed instant, taken a day before the first reading
/// (or as far back as the platform allows) for the reason above.
#[cfg(not(unix))]
fn raw_now() -> Duration {
    origin_instant().elapsed()
}

#[cfg(unix)]
#[inline]
fn read_clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; the monotonic clocks always exist (the
    // coarse one is asked for only where clock_getres found it), so nothing fails.
    unsafe { libc::clock_gettime(id, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The coarse monotonic clock (Linux's CLOCK_MONOTONIC_COARSE: the same time, as of the
/// last clock tick, read without the time counter: a quarter of the fine read's cost on
/// the machine the benchmarks run on), when its tick is at most 10 ms; else `None`.
#[cfg(target_os = "linux")]
#[inline]
fn raw_now_coarse() -> Option<Duration> {
    static USABLE: OnceLock<bool> = OnceLock::new();
    let usable = *USABLE.get_or_init(|| {
        let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `res` is a valid timespec to write.
        let ok = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) } == 0;
        ok && res.tv_sec == 0 && res.tv_nsec <= 10_000_000
    });
    usable.then(|| read_clock(libc::CLOCK_MONOTONIC_COARSE))
}

#[cfg(not(target_os = "linux"))]
fn raw_now_coarse() -> Option<Duration> {
    None
}

/// The origin of [`raw_now`] as an `Instant`, for clocks that count in std's (tokio's
/// paused clock: `TokioClock`), so a breaker or budget shared by blocking and async calls
/// sees one time. On Unix std's `Instant` reads the same CLOCK_MONOTONIC on Linux (a
/// reading less its own value is the clock's zero); where it cannot go back that far, a
/// day back or the reading itself.
#[cfg(any(feature = "tokio", not(unix)))]
pub(crate) fn origin_instant() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(|| {
        let now = std::time::Instant::now();
        #[cfg(unix)]
        let back = raw_now();
        #[cfg(not(unix))]
        let back = Duration::from_secs(86_400);
        now.checked_sub(back).unwrap_or(now)
    })
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Duration {
        raw_now()
    }

    /// The coarse clock lags the fine one, usually by less than a tick.
    #[inline]
    fn now_coarse(&self) -> Duration {
        match raw_now_coarse() {
            Some(coarse) => coarse,
            None => self.now(),
        }
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

/// Virtual time for tests: while it is on, an executor that asks [`testing::clock`] gets a
/// [`VirtualClock`], so waits take no real time and the deadline still holds in virtual
/// time. Hosts expose it as their own testing switch.
///
/// Virtual time belongs to where it was turned on:
/// - **this thread**: [`testing::scoped`] (until the guard drops) and [`testing::enable`] /
///   [`testing::disable`] (a switch) change only the calling thread, so tests running in
///   parallel on other threads keep real time. A blocking call reads the clock once, when
///   it starts, on the thread that runs it; work that hops to another thread takes the
///   clock along by name: [`testing::scoped_with`]`(scope.clock().clone())` there, or
///   [`crate::Run::clock`].
/// - **the whole process**, only when asked for by name: [`testing::scoped_process_wide`],
///   [`testing::enable_process_wide`] / [`testing::disable_process_wide`].
///
/// The current clock is the thread's newest open scope, else the thread's switch, else the
/// newest open process-wide scope, else the process-wide switch. Open scopes are counted,
/// not stacked by order: closing any scope (in any order) hands the clock back to the newest
/// one still open, and closing the last leaves the switch as it was. So virtual time never
/// stays on by accident because scopes were left in the "wrong" order, nor goes off under a
/// scope still open. A thread that ends with scopes open or its switch on takes them with
/// it. Outside any virtual time, [`testing::clock`] costs one relaxed atomic load.
pub mod testing {
    use std::cell::RefCell;
    use std::marker::PhantomData;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// How many things anywhere may make some thread's clock virtual: every open scope, every
    /// thread's switch, the process-wide layer, and every host hold. Zero: nothing is on
    /// anywhere, the hot path's answer.
    static ACTIVE: AtomicUsize = AtomicUsize::new(0);
    /// Whether the process-wide layer has anything on (checked before its mutex).
    static PROCESS_ON: AtomicBool = AtomicBool::new(false);
    static PROCESS: Mutex<Layer> = Mutex::new(Layer::new());

    /// One layer of virtual time: a switch and counted scopes.
    struct Layer {
        switch: Option<VirtualClock>,
        /// Open scopes, oldest first: (id, clock).
        scopes: Vec<(u64, VirtualClock)>,
        next_id: u64,
    }

    impl Layer {
        const fn new() -> Self {
            Layer { switch: None, scopes: Vec::new(), next_id: 0 }
        }

        fn current(&self) -> Option<&VirtualClock> {
            self.scopes.last().map(|(_, c)| c).or(self.switch.as_ref())
        }

        fn weight(&self) -> usize {
            self.scopes.len() + usize::from(self.switch.is_some())
        }

        /// Applies `change`, keeping [`ACTIVE`] equal to the sum of the weights.
        fn change<R>(&mut self, change: impl FnOnce(&mut Layer) -> R) -> R {
            let before = self.weight();
            let r = change(self);
            let after = self.weight();
            if after > before {
                ACTIVE.fetch_add(after - before, Ordering::Release);
            } else if before > after {
                ACTIVE.fetch_sub(before - after, Ordering::Release);
            }
            r
        }

        fn open(&mut self, clock: VirtualClock) -> u64 {
            self.change(|l| {
                let id = l.next_id;
                l.next_id += 1;
                l.scopes.push((id, clock));
                id
            })
        }

        fn close(&mut self, id: u64) {
            self.change(|l| l.scopes.retain(|(i, _)| *i != id));
        }
    }

    /// This thread's layer; when the thread ends, what it left on goes with it.
    struct ThreadLayer(RefCell<Layer>);

    impl Drop for ThreadLayer {
        fn drop(&mut self) {
            let l = self.0.get_mut();
            l.change(|l| *l = Layer::new());
        }
    }

    thread_local! {
        static THREAD: ThreadLayer = const { ThreadLayer(RefCell::new(Layer::new())) };
    }

    /// Runs `f` on this thread's layer; `None` while the thread is being torn down (its
    /// layer is gone: nothing is on for it any more).
    fn on_thread<R>(f: impl FnOnce(&mut Layer) -> R) -> Option<R> {
        THREAD.try_with(|t| t.0.try_borrow_mut().ok().map(|mut l| f(&mut l))).ok().flatten()
    }

    fn process() -> std::sync::MutexGuard<'static, Layer> {
        PROCESS.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn on_process<R>(f: impl FnOnce(&mut Layer) -> R) -> R {
        let mut p = process();
        let r = f(&mut p);
        PROCESS_ON.store(p.weight() > 0, Ordering::Release);
        r
    }

    /// The clock executors on this thread should use now: the virtual one while virtual
    /// time is on for this thread (its own scope or switch, or the process-wide one).
    #[inline]
    pub fn clock() -> Option<VirtualClock> {
        if ACTIVE.load(Ordering::Relaxed) == 0 {
            return None; // the hot path: one relaxed atomic load, inlined into the caller
        }
        active_clock()
    }

    /// [`clock`] once virtual time may be on somewhere.
    #[inline(never)]
    fn active_clock() -> Option<VirtualClock> {
        on_thread(|l| l.current().cloned()).flatten().or_else(process_wide_clock)
    }

    /// The process-wide clock alone (what a host with its own scopes falls back to).
    pub fn process_wide_clock() -> Option<VirtualClock> {
        if !PROCESS_ON.load(Ordering::Acquire) {
            return None;
        }
        process().current().cloned()
    }

    /// Whether virtual time is on for this thread.
    pub fn is_on() -> bool {
        clock().is_some()
    }

    /// Whether virtual time may be on anywhere in the process (any thread, the process-wide
    /// layer, or a host's own scope): one relaxed atomic load. `false` means no clock
    /// anywhere is virtual, so a host's hot path need look no further.
    pub fn any_on() -> bool {
        ACTIVE.load(Ordering::Relaxed) != 0
    }

    /// Turns virtual time on for this thread with a fresh clock at zero (replacing this
    /// thread's switch), and returns it. Open scopes keep their own clocks until they close.
    pub fn enable() -> VirtualClock {
        let clock = VirtualClock::new();
        on_thread(|l| l.change(|l| l.switch = Some(clock.clone())));
        clock
    }

    /// Turns this thread's switch off. Open scopes stay on until they close.
    pub fn disable() {
        on_thread(|l| l.change(|l| l.switch = None));
    }

    /// Turns virtual time on for every thread of the process (under their own scopes and
    /// switches) with a fresh clock at zero, and returns it.
    pub fn enable_process_wide() -> VirtualClock {
        let clock = VirtualClock::new();
        on_process(|l| l.change(|l| l.switch = Some(clock.clone())));
        clock
    }

    /// Turns the process-wide switch off. Open process-wide scopes stay on until they close.
    pub fn disable_process_wide() {
        on_process(|l| l.change(|l| l.switch = None));
    }

    /// Turns virtual time on for this thread, with a fresh clock at zero, until the guard
    /// drops. Other threads keep their own time. The guard stays on its thread.
    pub fn scoped() -> Scope {
        scoped_with(VirtualClock::new())
    }

    /// [`scoped`] with a given clock: the way to take a scope's time to another thread
    /// (`scoped_with(scope.clock().clone())` there), so both threads share one clock.
    pub fn scoped_with(clock: VirtualClock) -> Scope {
        let id = on_thread(|l| l.open(clock.clone()));
        Scope { clock, id, _thread: PhantomData }
    }

    /// Turns virtual time on for every thread of the process, with a fresh clock at zero,
    /// until the guard drops (from any thread).
    pub fn scoped_process_wide() -> ProcessScope {
        let clock = VirtualClock::new();
        let id = on_process(|l| l.open(clock.clone()));
        ProcessScope { clock, id }
    }

    /// How many scopes are open on this thread now.
    pub fn open_scopes() -> usize {
        on_thread(|l| l.scopes.len()).unwrap_or(0)
    }

    /// How many process-wide scopes are open now.
    pub fn open_process_wide_scopes() -> usize {
        process().scopes.len()
    }

    /// Virtual time on this thread for as long as it lives; see [`scoped`]. Not `Send`: a
    /// scope ends on the thread it began on.
    #[derive(Debug)]
    pub struct Scope {
        clock: VirtualClock,
        /// `None`: opened while the thread was being torn down (nothing to close).
        id: Option<u64>,
        _thread: PhantomData<*const ()>,
    }

    impl Scope {
        /// The virtual clock of this scope.
        pub fn clock(&self) -> &VirtualClock {
            &self.clock
        }
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            if let Some(id) = self.id {
                on_thread(|l| l.close(id));
            }
        }
    }

    /// Virtual time for the whole process for as long as it lives; see
    /// [`scoped_process_wide`].
    #[derive(Debug)]
    pub struct ProcessScope {
        clock: VirtualClock,
        id: u64,
    }

    impl ProcessScope {
        /// The virtual clock of this scope.
        pub fn clock(&self) -> &VirtualClock {
            &self.clock
        }
    }

    impl Drop for ProcessScope {
        fn drop(&mut self) {
            on_process(|l| l.close(self.id));
        }
    }

    /// For a host that keeps its own scopes (Python `contextvars`, Node
    /// `AsyncLocalStorage`): while a hold lives, [`any_on`] is true, so the host's hot path
    /// (which checks [`any_on`] first) goes on to look in its own context.
    #[derive(Debug)]
    pub struct HostHold(());

    /// Opens a [`HostHold`]; it ends when dropped, from any thread.
    pub fn host_hold() -> HostHold {
        ACTIVE.fetch_add(1, Ordering::Release);
        HostHold(())
    }

    impl Drop for HostHold {
        fn drop(&mut self) {
            ACTIVE.fetch_sub(1, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_reads_at_most_a_tick_behind_the_fine_one() {
        // Read between two fine readings: never after the second, and at most 10 ms (the
        // coarsest tick it is used with) before the first.
        for _ in 0..1000 {
            let before = SystemClock.now();
            let coarse = SystemClock.now_coarse();
            let after = SystemClock.now();
            assert!(coarse <= after, "{coarse:?} > {after:?}");
            assert!(before.saturating_sub(coarse) <= Duration::from_millis(10), "{before:?} vs {coarse:?}");
        }
        // Any other clock's coarse reading is its reading.
        let v = VirtualClock::new();
        v.advance(Duration::from_millis(1234));
        assert_eq!(v.now_coarse(), Duration::from_millis(1234));
    }

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
