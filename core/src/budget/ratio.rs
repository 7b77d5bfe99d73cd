//! Finagle's windowed ratio budget ([`RatioBudget`]): a share of the calls of the last
//! `ttl` may be retried, on top of a reserve per second.

use std::time::Duration;

use crate::fork_lock::{ForkGuard, ForkLock};

use super::BudgetError;

/// Finagle's `RetryBudget`: every call deposits, every retry withdraws, and deposits and
/// withdrawals expire after about `ttl`, so about `percent_can_retry` of the calls of the
/// last `ttl` may be retried, on top of a reserve of `min_retries_per_sec` retries per
/// second (for clients that have just started or send little).
///
/// The arithmetic is Finagle's (`finagle-core` `RetryBudget.apply`, over twitter/util's
/// `TokenBucket.newLeakyBucket` and `WindowedAdder`): integer tokens scaled by 1000; a
/// deposit adds 1000 (0 when `percent_can_retry` is 0), a withdrawal costs
/// `(1000 / percent_can_retry).toInt` (1 when it is 0); the reserve is
/// `min_retries_per_sec * ttl.inSeconds * withdrawal`; the tokens are the reserve plus the
/// sum of a window of `ttl` in 10 slices (the current one and the last 9; a slice ends
/// `ttl / 10` after the previous one ended, counted from when it was noticed); a retry is
/// allowed while the tokens cover a withdrawal; the balance is tokens / withdrawal. With
/// 0 for both it never allows a retry (Finagle's `Empty`). Where Finagle's 32-bit `Int`
/// reserve would overflow (a huge withdrawal times a long ttl), this keeps the exact value.
///
/// Time is whatever clock the caller reads (milliseconds are used), passed to each method,
/// so virtual time drives it in tests.
#[derive(Debug)]
pub struct RatioBudget {
    ttl: Duration,
    min_retries_per_sec: u32,
    percent_can_retry: f64,
    deposit: i64,
    withdrawal: i64,
    reserve: i64,
    /// `None`: Finagle's `Empty` (no reserve, no percentage).
    window: Option<ForkLock<Window>>,
}

/// twitter/util's `WindowedAdder` with 10 slices: the current slice (`writer`) and the
/// last 9 (`buf`).
#[derive(Debug)]
struct Window {
    slice_ms: u64,
    writer: i64,
    buf: [i64; WINDOW_PAST],
    i: usize,
    old_ms: u64,
}

/// Past slices kept (`slices - 1` of WindowedAdder's 10).
const WINDOW_PAST: usize = 9;

impl Window {
    fn new(range_ms: u64, now_ms: u64) -> Self {
        Window { slice_ms: range_ms / (WINDOW_PAST as u64 + 1), writer: 0, buf: [0; WINDOW_PAST], i: 0, old_ms: now_ms }
    }

    fn tick(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.old_ms) < self.slice_ms {
            return;
        }
        // The slice that ended gets what was added (it was likely current when added).
        self.buf[self.i] = std::mem::take(&mut self.writer);
        self.i = (self.i + 1) % WINDOW_PAST;
        // Slices that went by with nothing noticed are emptied.
        let skipped = (now_ms - self.old_ms) / self.slice_ms - 1;
        let nskip = skipped.min(WINDOW_PAST as u64) as usize;
        if nskip > 0 {
            let r = nskip.min(WINDOW_PAST - self.i);
            self.buf[self.i..self.i + r].fill(0);
            self.buf[..nskip - r].fill(0);
            self.i = (self.i + nskip) % WINDOW_PAST;
        }
        self.old_ms = now_ms;
    }

    fn add(&mut self, now_ms: u64, x: i64) {
        self.tick(now_ms);
        self.writer += x;
    }

    fn sum(&mut self, now_ms: u64) -> i64 {
        self.tick(now_ms);
        self.writer + self.buf.iter().sum::<i64>()
    }
}

fn ms(now: Duration) -> u64 {
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

impl RatioBudget {
    /// Finagle's default ttl (10 s).
    pub const FINAGLE_TTL: Duration = Duration::from_secs(10);
    /// Finagle's default minimum retries per second (10).
    pub const FINAGLE_MIN_RETRIES_PER_SEC: u32 = 10;
    /// Finagle's default share of calls that may be retried (0.2).
    pub const FINAGLE_PERCENT_CAN_RETRY: f64 = 0.2;

    /// Finagle's default budget (`RetryBudget()`: 10 s, 10 per second, 0.2), its window
    /// starting at `now`.
    pub fn finagle_default(now: Duration) -> Self {
        Self::new(Self::FINAGLE_TTL, Self::FINAGLE_MIN_RETRIES_PER_SEC, Self::FINAGLE_PERCENT_CAN_RETRY, now)
            .unwrap_or_else(|_| unreachable!("Finagle's defaults are valid"))
    }

    /// A budget whose window starts at `now`: `ttl` of 1 to 60 whole seconds (a fraction is
    /// dropped from the reserve, as Finagle's `inSeconds` does, but kept in the window),
    /// `min_retries_per_sec` at most 2^31 - 1, `percent_can_retry` in [0, 1000].
    pub fn new(
        ttl: Duration,
        min_retries_per_sec: u32,
        percent_can_retry: f64,
        now: Duration,
    ) -> Result<Self, BudgetError> {
        let ttl_secs = ttl.as_secs();
        if !(1..=60).contains(&ttl_secs) {
            return Err(BudgetError {
                knob: "ttl",
                value: crate::units::ms_from_duration(ttl),
                requirement: "in [1 s, 60 s]",
            });
        }
        if min_retries_per_sec > i32::MAX as u32 {
            let requirement = "a whole number in [0, 2147483647]";
            return Err(BudgetError { knob: "min_retries_per_sec", value: min_retries_per_sec.into(), requirement });
        }
        if !(percent_can_retry.is_finite() && (0.0..=1000.0).contains(&percent_can_retry)) {
            return Err(BudgetError {
                knob: "percent_can_retry",
                value: percent_can_retry,
                requirement: "in [0, 1000]",
            });
        }
        let none = percent_can_retry == 0.0;
        let deposit = if none { 0 } else { 1000 };
        // Scala's Double.toInt: truncated, and at most Int.MaxValue.
        let withdrawal = if none { 1 } else { (1000.0 / percent_can_retry).min(f64::from(i32::MAX)) as i64 };
        let reserve = i64::from(min_retries_per_sec) * ttl_secs as i64 * withdrawal;
        let window = (min_retries_per_sec > 0 || !none).then(|| ForkLock::new(Window::new(ms(ttl), ms(now))));
        Ok(RatioBudget { ttl, min_retries_per_sec, percent_can_retry, deposit, withdrawal, reserve, window })
    }

    fn window(&self) -> Option<ForkGuard<'_, Window>> {
        // Held by a thread that did not follow a fork: its counters (plain numbers, one
        // update at most behind) are kept.
        self.window.as_ref().map(|w| w.lock(|| None))
    }

    /// A call (every call, not only the ones that fail): one deposit.
    pub fn deposit(&self, now: Duration) {
        if let Some(mut w) = self.window() {
            w.add(ms(now), self.deposit);
        }
    }

    /// Takes a withdrawal for a retry if the tokens cover it; `false`: no retry, nothing
    /// taken.
    pub fn try_withdraw(&self, now: Duration) -> bool {
        let Some(mut w) = self.window() else { return false };
        let now = ms(now);
        let ok = w.sum(now) + self.reserve >= self.withdrawal;
        if ok {
            w.add(now, -self.withdrawal);
        }
        ok
    }

    /// How many retries could be made when it last saw a deposit, a withdrawal or a
    /// balance (no time passes for it between calls).
    pub fn last_balance(&self) -> i64 {
        match self.window() {
            Some(w) => (w.writer + w.buf.iter().sum::<i64>() + self.reserve) / self.withdrawal,
            None => 0,
        }
    }

    /// How many retries could be made now.
    pub fn balance(&self, now: Duration) -> i64 {
        match self.window() {
            Some(mut w) => (w.sum(ms(now)) + self.reserve) / self.withdrawal,
            None => 0,
        }
    }

    /// The window deposits and withdrawals live in.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The reserve's retries per second.
    pub fn min_retries_per_sec(&self) -> u32 {
        self.min_retries_per_sec
    }

    /// The share of calls that may be retried, on top of the reserve.
    pub fn percent_can_retry(&self) -> f64 {
        self.percent_can_retry
    }
}
