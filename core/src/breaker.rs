//! The circuit breaker, shared like a retry budget: once a dependency is down, calls fail
//! at once (reason `circuit_open`, no attempt made) instead of sending it their first
//! attempt, and after `break_duration` a bounded number of probe calls find out whether it
//! is back.
//!
//! Three models decide when it opens:
//! - *consecutive* (cockatiel's `ConsecutiveBreaker`): after N failed calls in a row;
//! - *sampling* (Polly v8's `CircuitBreakerStrategyOptions`): when, over the last
//!   `sampling_duration`, failures are at least `failure_ratio` of at least
//!   `minimum_throughput` calls. The window is Polly's `RollingHealthMetrics`: 10 windows
//!   of `sampling_duration / 10`, a window starting at the first call that finds the last
//!   one over, windows dropped once `sampling_duration` old;
//! - *count* (resilience4j's `COUNT_BASED` sliding window): when failures are at least
//!   `failure_ratio` of the last `window_size` calls, once `minimum_calls` are counted.
//!
//! With `slow_call_duration` (ratio models only, resilience4j's
//! `slowCallDurationThreshold`), a call (or attempt) that took at least that long is also
//! *slow*, and the breaker opens when slow ones reach `slow_call_ratio` as well.
//!
//! What it counts is a *call*, by the engine's verdict: a call that ended on transient
//! failures (exhausted, whatever limit ended it) is a failure; a success is a success; a
//! permanent failure is a success (the dependency answered) unless `count_permanent`,
//! then a failure; a cancelled call counts as nothing. With `per_attempt` it counts each
//! attempt instead (a transient failure, or a permanent one with `count_permanent`, is a
//! failure): a retry around the breaker, as Polly's and resilience4j's pipelines compose.
//!
//! Open: calls are refused for `break_duration`; then the first call to arrive moves it to
//! half-open and is a probe; at most `half_open_probes` probes run at once, other calls are
//! refused. By default the first probe to finish decides: a success closes it (the counts
//! start over), a failure opens it again. With `judge_all_probes` (resilience4j), exactly
//! `half_open_probes` probes go, and once all have finished it closes only if their
//! failure (and slow) ratio is under the model's threshold (consecutive model: none
//! failed). It reopens for `break_duration * break_multiplier^(n-1)` on the n-th open in a
//! row, capped at `max_break_duration` (multiplier 1: always `break_duration`).
//!
//! By hand: [`CircuitBreaker::isolate`] holds it open (state `isolated`, Polly's
//! `ManualControl.IsolateAsync`, resilience4j's `FORCED_OPEN`) until
//! [`CircuitBreaker::reset`], which closes it with its counts started over.
//!
//! Time is whatever the caller passes (`now`, on one time base for every retrier that
//! shares the breaker), so virtual time drives it; it never reads a clock. Thread-safe (a
//! small lock, held for a few comparisons); after a fork each process has its own copy,
//! and a child whose copy was locked by another thread at the fork starts it afresh,
//! closed, instead of waiting forever (crate::fork_lock).

mod calls;
mod config;
mod tally;
#[cfg(test)]
mod tests;

use crate::fork_lock::{ForkGuard, ForkLock};
use std::fmt;
use std::time::Duration;

use crate::budget::BudgetError;

pub use calls::admit;
pub(crate) use calls::{count_attempt, count_call, transition_event};
pub use config::{BreakerConfig, BreakerModel, MAX_BREAK, MAX_WINDOW};
use tally::{Outcome, ProbeTally, Tally, Thresholds};

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go through and are counted.
    Closed,
    /// Calls are refused until the break is over.
    Open,
    /// A bounded number of probe calls go through; others are refused.
    HalfOpen,
    /// Held open by hand ([`CircuitBreaker::isolate`]) until [`CircuitBreaker::reset`].
    Isolated,
}

impl BreakerState {
    /// `closed`, `open`, `half_open` or `isolated`.
    pub fn as_str(&self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
            BreakerState::Isolated => "isolated",
        }
    }

    /// The state as a gauge value: 0 closed, 1 open, 2 half-open, 3 isolated.
    pub fn gauge(&self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
            BreakerState::Isolated => 3,
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the breaker says to a call about to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Closed: go ahead, and record the outcome.
    Pass,
    /// Half-open: go ahead as a probe, and record the outcome (a cancelled probe must be
    /// released with [`CircuitBreaker::release`]).
    Probe,
    /// Refused: open (or half-open with every probe out, or isolated). `retry_in`: time
    /// left until a probe may go (zero when half-open or isolated: no time is known).
    Refused {
        /// The state that refused the call.
        state: BreakerState,
        /// Time left before the break ends (zero when half-open or isolated).
        retry_in: Duration,
    },
}

/// A state change, for the `breaker_*` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// It opened, for this long.
    Opened(Duration),
    /// The break is over: probes may go.
    HalfOpen,
    /// A probe succeeded.
    Closed,
}

/// A circuit breaker shared by every retrier that holds it. See the module docs.
#[derive(Debug)]
pub struct CircuitBreaker {
    pub(super) config: BreakerConfig,
    inner: ForkLock<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: BreakerState,
    /// When the current break ends (Open).
    until: Duration,
    /// Opens in a row without a close (for a growing break).
    opens: u32,
    /// Probes out (HalfOpen).
    probes: u32,
    /// Probes finished, with `judge_all_probes` (HalfOpen).
    judged: ProbeTally,
    /// What the model counts while closed.
    tally: Tally,
    /// Calls refused since the breaker was made.
    rejections: u64,
}

impl Inner {
    fn closed(model: &BreakerModel) -> Self {
        Inner {
            state: BreakerState::Closed,
            until: Duration::ZERO,
            opens: 0,
            probes: 0,
            judged: ProbeTally::default(),
            tally: Tally::new(model),
            rejections: 0,
        }
    }

    /// Closed, counts started over (a successful probe, or a reset).
    fn close(&mut self) {
        self.state = BreakerState::Closed;
        self.opens = 0;
        self.probes = 0;
        self.judged = ProbeTally::default();
        self.tally.clear();
    }
}

fn bad(knob: &'static str, value: f64, requirement: &'static str) -> BudgetError {
    BudgetError { knob, value, requirement }
}

impl CircuitBreaker {
    /// A closed breaker. Errors name the knob: `failures` >= 1; `failure_ratio` in (0, 1];
    /// `minimum_throughput` >= 2; `sampling_duration` >= 500 ms and <= 1 day;
    /// `minimum_calls` >= 1; `window_size` in [1, [`MAX_WINDOW`]]; `slow_call_duration`
    /// in [1 ms, 1 day] and only for a ratio model; `slow_call_ratio` in (0, 1];
    /// `break_duration` in [1 ms, 1 day]; `half_open_probes` >= 1; `break_multiplier`
    /// finite and >= 1; `max_break_duration` in [`break_duration`, 1 day].
    pub fn new(config: BreakerConfig) -> Result<Self, BudgetError> {
        match config.model {
            BreakerModel::Consecutive { failures } => {
                if failures == 0 {
                    return Err(bad("failures", 0.0, "a whole number >= 1"));
                }
            }
            BreakerModel::Sampling { failure_ratio, minimum_throughput, sampling_duration } => {
                if !(failure_ratio > 0.0 && failure_ratio <= 1.0) {
                    return Err(bad("failure_ratio", failure_ratio, "in (0, 1]"));
                }
                if minimum_throughput < 2 {
                    return Err(bad("minimum_throughput", minimum_throughput.into(), "a whole number >= 2"));
                }
                if sampling_duration < Duration::from_millis(500) || sampling_duration > MAX_BREAK {
                    let ms = sampling_duration.as_secs_f64() * 1000.0;
                    return Err(bad("sampling_duration", ms, ">= 500 ms and <= 1 day"));
                }
            }
            BreakerModel::Count { failure_ratio, minimum_calls, window_size } => {
                if !(failure_ratio > 0.0 && failure_ratio <= 1.0) {
                    return Err(bad("failure_ratio", failure_ratio, "in (0, 1]"));
                }
                if minimum_calls == 0 {
                    return Err(bad("minimum_calls", 0.0, "a whole number >= 1"));
                }
                if window_size == 0 || window_size > MAX_WINDOW {
                    return Err(bad("window_size", window_size.into(), "a whole number in [1, 1000000]"));
                }
            }
        }
        if let Some(slow) = config.slow_call_duration {
            if matches!(config.model, BreakerModel::Consecutive { .. }) {
                let ms = slow.as_secs_f64() * 1000.0;
                return Err(bad(
                    "slow_call_duration",
                    ms,
                    "unset for a consecutive breaker (slow calls are judged by a ratio: model sampling or count)",
                ));
            }
            if slow < Duration::from_millis(1) || slow > MAX_BREAK {
                let ms = slow.as_secs_f64() * 1000.0;
                return Err(bad("slow_call_duration", ms, ">= 1 ms and <= 1 day"));
            }
        }
        if !(config.slow_call_ratio > 0.0 && config.slow_call_ratio <= 1.0) {
            return Err(bad("slow_call_ratio", config.slow_call_ratio, "in (0, 1]"));
        }
        if config.break_duration < Duration::from_millis(1) || config.break_duration > MAX_BREAK {
            let ms = config.break_duration.as_secs_f64() * 1000.0;
            return Err(bad("break_duration", ms, ">= 1 ms and <= 1 day"));
        }
        if config.half_open_probes == 0 {
            return Err(bad("half_open_probes", 0.0, "a whole number >= 1"));
        }
        if !(config.break_multiplier.is_finite() && config.break_multiplier >= 1.0) {
            return Err(bad("break_multiplier", config.break_multiplier, "finite and >= 1"));
        }
        if let Some(max) = config.max_break_duration {
            if max < config.break_duration || max > MAX_BREAK {
                let ms = max.as_secs_f64() * 1000.0;
                return Err(bad("max_break_duration", ms, ">= break_duration and <= 1 day"));
            }
        }
        Ok(CircuitBreaker { config, inner: ForkLock::new(Inner::closed(&config.model)) })
    }

    /// Its knobs.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    fn lock(&self) -> ForkGuard<'_, Inner> {
        // Nothing under the lock panics. Held by a thread that did not follow a fork, the
        // state may be half-updated: the child's breaker starts afresh, closed.
        self.inner.lock(|| Some(Inner::closed(&self.config.model)))
    }

    /// The state at `now` (an open breaker whose break is over reads half-open, as the next
    /// call would find it).
    pub fn state(&self, now: Duration) -> BreakerState {
        let inner = self.lock();
        match inner.state {
            BreakerState::Open if now >= inner.until => BreakerState::HalfOpen,
            s => s,
        }
    }

    /// Time left open at `now` (zero unless open).
    pub fn retry_in(&self, now: Duration) -> Duration {
        let inner = self.lock();
        match inner.state {
            BreakerState::Open => inner.until.saturating_sub(now),
            _ => Duration::ZERO,
        }
    }

    /// Calls refused so far.
    pub fn rejections(&self) -> u64 {
        self.lock().rejections
    }

    /// Whether a success's time matters to it: only the sampling model files a success in
    /// a time window, and only a slow-call threshold judges its duration (otherwise a
    /// success resets a count, fills a ring, or closes from half-open), so an executor
    /// without a listener need not read the clock for it.
    pub(crate) fn times_successes(self: &std::sync::Arc<Self>) -> bool {
        matches!(self.config.model, BreakerModel::Sampling { .. }) || self.config.slow_call_duration.is_some()
    }

    /// A call is about to start at `now`: may it? `on` hears a move to half-open.
    pub fn admit(&self, now: Duration, on: &mut impl FnMut(Transition)) -> Admission {
        let mut inner = self.lock();
        if inner.state == BreakerState::Open {
            if now < inner.until {
                inner.rejections += 1;
                return Admission::Refused { state: BreakerState::Open, retry_in: inner.until - now };
            }
            inner.state = BreakerState::HalfOpen;
            inner.probes = 0;
            on(Transition::HalfOpen);
        }
        // Judged together, a finished probe keeps its place: exactly N go.
        let taken = inner.probes + if self.config.judge_all_probes { inner.judged.done } else { 0 };
        match inner.state {
            BreakerState::Closed => Admission::Pass,
            BreakerState::HalfOpen if taken < self.config.half_open_probes => {
                inner.probes += 1;
                Admission::Probe
            }
            state => {
                inner.rejections += 1;
                Admission::Refused { state, retry_in: Duration::ZERO }
            }
        }
    }

    /// Holds it open until [`CircuitBreaker::reset`]: every call is refused (state
    /// `isolated`). Outcomes of calls already running change nothing.
    pub fn isolate(&self) {
        let mut inner = self.lock();
        inner.state = BreakerState::Isolated;
        inner.probes = 0;
        inner.judged = ProbeTally::default();
        inner.tally.clear();
    }

    /// Closes it, whatever its state, with its counts (and the growth of its break)
    /// started over.
    pub fn reset(&self) {
        self.lock().close();
    }

    /// An outcome at `now`: `failed` or not, for a call admitted as `admission` (or, with
    /// `per_attempt`, for one of its attempts). `on` hears it open or close. (Never slow:
    /// see [`CircuitBreaker::record_timed`].)
    pub fn record(&self, admission: Admission, failed: bool, now: Duration, on: &mut impl FnMut(Transition)) {
        self.record_outcome(admission, Outcome { failed, slow: false }, now, on)
    }

    /// [`CircuitBreaker::record`] for an outcome that took `took`: slow when that reaches
    /// `slow_call_duration`.
    pub fn record_timed(
        &self,
        admission: Admission,
        failed: bool,
        took: Duration,
        now: Duration,
        on: &mut impl FnMut(Transition),
    ) {
        self.record_since(admission, failed, now.saturating_sub(took), now, on)
    }

    /// An outcome of a call (or attempt) that started at `started`: its duration is
    /// computed only when a slow-call threshold needs it (the engine's side).
    #[inline]
    pub(super) fn record_since(
        &self,
        admission: Admission,
        failed: bool,
        started: Duration,
        now: Duration,
        on: &mut impl FnMut(Transition),
    ) {
        let slow = match self.config.slow_call_duration {
            Some(d) => now.saturating_sub(started) >= d,
            None => false,
        };
        self.record_outcome(admission, Outcome { failed, slow }, now, on)
    }

    fn record_outcome(&self, admission: Admission, outcome: Outcome, now: Duration, on: &mut impl FnMut(Transition)) {
        let mut inner = self.lock();
        match (admission, inner.state) {
            (Admission::Probe, BreakerState::HalfOpen) => {
                inner.probes = inner.probes.saturating_sub(1);
                let verdict = if self.config.judge_all_probes {
                    self.judge(&mut inner, outcome)
                } else {
                    Some(outcome.failed || outcome.slow)
                };
                match verdict {
                    Some(true) => self.open(&mut inner, now, on),
                    Some(false) => {
                        inner.close();
                        on(Transition::Closed);
                    }
                    None => {}
                }
            }
            // Closed: the outcome is counted (in the guard), and may open it.
            (_, BreakerState::Closed) if self.count(&mut inner, outcome, now) => self.open(&mut inner, now, on),
            // A late outcome of a call that went ahead before the breaker opened (or was
            // isolated), or of a probe after the probes were decided: the state already
            // says what it knows.
            _ => {}
        }
    }

    /// Probes judged together: adds `outcome`; once all `half_open_probes` have finished,
    /// whether it must open again (`None`: not all have).
    fn judge(&self, inner: &mut Inner, outcome: Outcome) -> Option<bool> {
        inner.judged.add(outcome);
        let j = inner.judged;
        if j.done < self.config.half_open_probes {
            return None;
        }
        Some(match self.config.model.failure_ratio() {
            None => j.failures > 0,
            Some(failure_ratio) => {
                let slow_ratio = self.config.slow_call_duration.map(|_| self.config.slow_call_ratio);
                Thresholds { failure_ratio, slow_ratio }.reached(j.done.into(), j.failures.into(), j.slow.into())
            }
        })
    }

    /// A probe (or a call) that will record nothing (cancelled): gives its probe back.
    pub fn release(&self, admission: Admission) {
        if admission == Admission::Probe {
            let mut inner = self.lock();
            if inner.state == BreakerState::HalfOpen {
                inner.probes = inner.probes.saturating_sub(1);
            }
        }
    }

    /// Counts a closed breaker's outcome; whether it must open.
    fn count(&self, inner: &mut Inner, outcome: Outcome, now: Duration) -> bool {
        inner.tally.count(&self.config, outcome, now)
    }

    fn open(&self, inner: &mut Inner, now: Duration, on: &mut impl FnMut(Transition)) {
        let c = &self.config;
        let grown = c.break_duration.as_secs_f64() * c.break_multiplier.powi(inner.opens.min(1_000) as i32);
        let cap = c.max_break_duration.unwrap_or(MAX_BREAK);
        let length =
            if grown >= cap.as_secs_f64() { cap } else { Duration::from_secs_f64(grown).max(c.break_duration) };
        inner.state = BreakerState::Open;
        inner.until = now.saturating_add(length);
        inner.opens = inner.opens.saturating_add(1);
        inner.probes = 0;
        inner.judged = ProbeTally::default();
        inner.tally.clear();
        on(Transition::Opened(length));
    }
}
