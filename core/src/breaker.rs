//! The circuit breaker, shared like a retry budget: once a dependency is down, calls fail
//! at once (reason `circuit_open`, no attempt made) instead of sending it their first
//! attempt, and after `break_duration` a bounded number of probe calls find out whether it
//! is back.
//!
//! Two models decide when it opens:
//! - *consecutive* (cockatiel's `ConsecutiveBreaker`): after N failed calls in a row;
//! - *sampling* (Polly v8's `CircuitBreakerStrategyOptions`): when, over the last
//!   `sampling_duration`, failures are at least `failure_ratio` of at least
//!   `minimum_throughput` calls. The window is Polly's `RollingHealthMetrics`: 10 windows
//!   of `sampling_duration / 10`, a window starting at the first call that finds the last
//!   one over, windows dropped once `sampling_duration` old.
//!
//! What it counts is a *call*, by the engine's verdict: a call that ended on transient
//! failures (exhausted, whatever limit ended it) is a failure; a success, and a permanent
//! failure (the dependency answered), are successes; a cancelled call counts as nothing.
//! With `per_attempt` it counts each attempt instead (a transient failure is a failure).
//!
//! Open: calls are refused for `break_duration`; then the first call to arrive moves it to
//! half-open and is a probe; at most `half_open_probes` probes run at once, other calls are
//! refused. A successful probe closes it (the counts start over); a failed probe opens it
//! again, for `break_duration * break_multiplier^(n-1)` on the n-th open in a row, capped
//! at `max_break_duration` (multiplier 1: always `break_duration`).
//!
//! Time is whatever the caller passes (`now`, on one time base for every retrier that
//! shares the breaker), so virtual time drives it; it never reads a clock. Thread-safe (a
//! small lock, held for a few comparisons); after a fork each process has its own copy,
//! and a child whose copy was locked by another thread at the fork starts it afresh,
//! closed, instead of waiting forever (crate::fork_lock).

use crate::fork_lock::{ForkGuard, ForkLock};
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use std::ops::Deref;

use crate::budget::BudgetError;
use crate::engine::{Call, Stop, Verdict};
use crate::event::{Event, EventKind};
use crate::policy::Policy;

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go through and are counted.
    Closed,
    /// Calls are refused until the break is over.
    Open,
    /// A bounded number of probe calls go through; others are refused.
    HalfOpen,
}

impl BreakerState {
    /// `closed`, `open` or `half_open`.
    pub fn as_str(&self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }

    /// The state as a gauge value: 0 closed, 1 open, 2 half-open.
    pub fn gauge(&self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When the breaker opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerModel {
    /// After `failures` failed calls in a row.
    Consecutive {
        /// Failed calls in a row that open it (>= 1).
        failures: u32,
    },
    /// When failures reach `failure_ratio` of at least `minimum_throughput` calls within the
    /// last `sampling_duration` (Polly v8).
    Sampling {
        /// Share of failed calls that opens it, in (0, 1].
        failure_ratio: f64,
        /// Calls in the window before it may open (>= 2, as Polly).
        minimum_throughput: u32,
        /// The sliding window (>= 500 ms, as Polly).
        sampling_duration: Duration,
    },
}

/// Every knob of a breaker; [`CircuitBreaker::new`] validates them.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct BreakerConfig {
    /// When it opens.
    pub model: BreakerModel,
    /// How long it stays open before a probe (>= 1 ms, <= 1 day).
    pub break_duration: Duration,
    /// Probe calls allowed at once when half-open (>= 1).
    pub half_open_probes: u32,
    /// Growth of the break on each open in a row (>= 1; 1: no growth).
    pub break_multiplier: f64,
    /// The longest break when it grows (>= `break_duration`); `None`: 1 day.
    pub max_break_duration: Option<Duration>,
    /// Count each attempt instead of each call.
    pub per_attempt: bool,
}

impl BreakerConfig {
    /// Polly v8's defaults for `model`: a 5 s break, one probe, no growth, per call.
    pub fn new(model: BreakerModel) -> Self {
        BreakerConfig {
            model,
            break_duration: Duration::from_secs(5),
            half_open_probes: 1,
            break_multiplier: 1.0,
            max_break_duration: None,
            per_attempt: false,
        }
    }

    /// Open after `failures` failed calls in a row.
    pub fn consecutive(failures: u32) -> Self {
        Self::new(BreakerModel::Consecutive { failures })
    }

    /// Polly v8's sampling model.
    pub fn sampling(failure_ratio: f64, minimum_throughput: u32, sampling_duration: Duration) -> Self {
        Self::new(BreakerModel::Sampling { failure_ratio, minimum_throughput, sampling_duration })
    }

    // #[non_exhaustive]: outside the crate a config is made by a constructor above and
    // adjusted by these (CircuitBreaker::new validates it once).

    /// With this break (>= 1 ms, <= 1 day).
    ///
    /// ```
    /// use retryrs::{BreakerConfig, CircuitBreaker};
    /// use std::time::Duration;
    /// let config = BreakerConfig::consecutive(5).with_break_duration(Duration::from_secs(30)).with_half_open_probes(2);
    /// assert_eq!(config.break_duration, Duration::from_secs(30));
    /// assert!(CircuitBreaker::new(config).is_ok());
    /// assert!(CircuitBreaker::new(config.with_half_open_probes(0)).is_err());
    /// ```
    pub fn with_break_duration(mut self, break_duration: Duration) -> Self {
        self.break_duration = break_duration;
        self
    }

    /// With this many probes at once when half-open (>= 1).
    pub fn with_half_open_probes(mut self, probes: u32) -> Self {
        self.half_open_probes = probes;
        self
    }

    /// With the break growing by `multiplier` on each open in a row (>= 1), up to `max`
    /// (`None`: 1 day).
    pub fn with_break_growth(mut self, multiplier: f64, max: Option<Duration>) -> Self {
        self.break_multiplier = multiplier;
        self.max_break_duration = max;
        self
    }

    /// Counting each attempt (`true`) or each call (`false`, the default).
    pub fn with_per_attempt(mut self, per_attempt: bool) -> Self {
        self.per_attempt = per_attempt;
        self
    }
}

/// The longest break (Polly's upper bound for `BreakDuration`).
pub const MAX_BREAK: Duration = Duration::from_secs(86_400);

/// What the breaker says to a call about to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Closed: go ahead, and record the outcome.
    Pass,
    /// Half-open: go ahead as a probe, and record the outcome (a cancelled probe must be
    /// released with [`CircuitBreaker::release`]).
    Probe,
    /// Refused: open (or half-open with every probe out). `retry_in`: time left until a
    /// probe may go (zero when half-open).
    Refused {
        /// The state that refused the call.
        state: BreakerState,
        /// Time left before the break ends (zero when half-open).
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
    config: BreakerConfig,
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
    /// Consecutive model: failures in a row.
    consecutive: u32,
    /// Sampling model: Polly's windows, oldest first.
    windows: VecDeque<HealthWindow>,
    /// Calls refused since the breaker was made.
    rejections: u64,
}

impl Inner {
    fn closed() -> Self {
        Inner {
            state: BreakerState::Closed,
            until: Duration::ZERO,
            opens: 0,
            probes: 0,
            consecutive: 0,
            windows: VecDeque::new(),
            rejections: 0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct HealthWindow {
    started: Duration,
    successes: u64,
    failures: u64,
}

/// Polly's `RollingHealthMetrics.NumberOfWindows`.
const WINDOWS: u32 = 10;

fn bad(knob: &'static str, value: f64, requirement: &'static str) -> BudgetError {
    BudgetError { knob, value, requirement }
}

impl CircuitBreaker {
    /// A closed breaker. Errors name the knob: `failures` >= 1; `failure_ratio` in (0, 1];
    /// `minimum_throughput` >= 2; `sampling_duration` >= 500 ms and <= 1 day;
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
                    return Err(bad("sampling_duration", ms, ">= 500 ms and <= 1 day (ms)"));
                }
            }
        }
        if config.break_duration < Duration::from_millis(1) || config.break_duration > MAX_BREAK {
            let ms = config.break_duration.as_secs_f64() * 1000.0;
            return Err(bad("break_duration", ms, ">= 1 ms and <= 1 day (ms)"));
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
                return Err(bad("max_break_duration", ms, ">= break_duration and <= 1 day (ms)"));
            }
        }
        Ok(CircuitBreaker { config, inner: ForkLock::new(Inner::closed()) })
    }

    /// Its knobs.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    fn lock(&self) -> ForkGuard<'_, Inner> {
        // Nothing under the lock panics. Held by a thread that did not follow a fork, the
        // state may be half-updated: the child's breaker starts afresh, closed.
        self.inner.lock(|| Some(Inner::closed()))
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
    /// a time window (a consecutive breaker resets a count, or closes from half-open), so
    /// an executor without a listener need not read the clock for it.
    pub(crate) fn times_successes(self: &std::sync::Arc<Self>) -> bool {
        matches!(self.config.model, BreakerModel::Sampling { .. })
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
        match inner.state {
            BreakerState::Closed => Admission::Pass,
            _ if inner.probes < self.config.half_open_probes => {
                inner.probes += 1;
                Admission::Probe
            }
            _ => {
                inner.rejections += 1;
                Admission::Refused { state: BreakerState::HalfOpen, retry_in: Duration::ZERO }
            }
        }
    }

    /// An outcome at `now`: `failed` or not, for a call admitted as `admission` (or, with
    /// `per_attempt`, for one of its attempts). `on` hears it open or close.
    pub fn record(&self, admission: Admission, failed: bool, now: Duration, on: &mut impl FnMut(Transition)) {
        let mut inner = self.lock();
        match (admission, inner.state) {
            (Admission::Probe, BreakerState::HalfOpen) => {
                inner.probes = inner.probes.saturating_sub(1);
                if failed {
                    self.open(&mut inner, now, on);
                } else {
                    inner.state = BreakerState::Closed;
                    inner.opens = 0;
                    inner.consecutive = 0;
                    inner.windows.clear();
                    on(Transition::Closed);
                }
            }
            // Closed: the outcome is counted (in the guard), and may open it.
            (_, BreakerState::Closed) if self.count(&mut inner, failed, now) => self.open(&mut inner, now, on),
            // A late outcome of a call that went ahead before the breaker opened, or of a
            // probe after another probe decided: the state already says what it knows.
            _ => {}
        }
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
    fn count(&self, inner: &mut Inner, failed: bool, now: Duration) -> bool {
        match self.config.model {
            BreakerModel::Consecutive { failures } => {
                inner.consecutive = if failed { inner.consecutive.saturating_add(1) } else { 0 };
                inner.consecutive >= failures
            }
            BreakerModel::Sampling { failure_ratio, minimum_throughput, sampling_duration } => {
                let slice = sampling_duration / WINDOWS;
                let fresh = match inner.windows.back() {
                    Some(w) => now.saturating_sub(w.started) >= slice,
                    None => true,
                };
                if fresh {
                    inner.windows.push_back(HealthWindow { started: now, successes: 0, failures: 0 });
                }
                while inner.windows.front().is_some_and(|w| now.saturating_sub(w.started) >= sampling_duration) {
                    inner.windows.pop_front();
                }
                // The window just pushed (or the last one) is never `sampling_duration` old.
                if let Some(w) = inner.windows.back_mut() {
                    if failed {
                        w.failures += 1;
                    } else {
                        w.successes += 1;
                    }
                }
                if !failed {
                    return false;
                }
                let (s, f) = inner.windows.iter().fold((0u64, 0u64), |(s, f), w| (s + w.successes, f + w.failures));
                let throughput = s + f;
                throughput >= u64::from(minimum_throughput) && f as f64 / throughput as f64 >= failure_ratio
            }
        }
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
        inner.consecutive = 0;
        inner.windows.clear();
        on(Transition::Opened(length));
    }
}

/// Puts a call about to start at `now` to `policy`'s breaker (`None`: it has none). Emits
/// BreakerHalfOpen when the break is over (this call is then a probe), or, when refused,
/// the call's one event: Exhausted, attempt 0, reason `circuit_open`. The host makes no
/// attempt for a refused call; for the others it starts the call with
/// [`Call::start_admitted`] (or uses [`Call::start_with`], which does both).
pub fn admit(policy: &Policy, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Option<Admission> {
    let breaker = policy.breaker.as_ref()?;
    let mut event = |kind, delay, reason| sink(&Event::of(policy, kind, 0, Duration::ZERO, delay, reason));
    let admission = breaker.admit(now, &mut |t| {
        if t == Transition::HalfOpen {
            event(EventKind::BreakerHalfOpen, None, None);
        }
    });
    if let Admission::Refused { .. } = admission {
        event(EventKind::Exhausted, None, Some(crate::event::ExhaustReason::CircuitOpen));
    }
    Some(admission)
}

/// What a call (one at a time or hedged) tells its policy's breaker: the engine's side,
/// one piece of code for both. `admission` is what [`admit`] said at the start (`None`: no
/// breaker); `on` gets each state change.
pub(crate) fn count_attempt(
    policy: &Policy,
    admission: &mut Option<Admission>,
    verdict: Verdict,
    now: Duration,
    on: &mut impl FnMut(Transition),
) {
    let (Some(breaker), Some(admitted)) = (&policy.breaker, *admission) else { return };
    if !breaker.config.per_attempt || matches!(admitted, Admission::Refused { .. }) {
        return;
    }
    let failed = verdict.is_counted_failure();
    breaker.record(admitted, failed, now, on);
    // After the first, the call counts as an ordinary one (a probe is decided by its first
    // attempt).
    *admission = Some(Admission::Pass);
}

/// The call ended with `stop` at `now`: per call, its outcome counts (exhausted: a
/// failure; success or rejected: a success); a cancelled call gives its probe back.
pub(crate) fn count_call(
    policy: &Policy,
    admission: Option<Admission>,
    stop: Stop,
    now: Duration,
    on: &mut impl FnMut(Transition),
) {
    let (Some(breaker), Some(admitted)) = (&policy.breaker, admission) else { return };
    if matches!(admitted, Admission::Refused { .. }) {
        return;
    }
    let failed = match stop {
        Stop::Cancelled => return breaker.release(admitted),
        _ if breaker.config.per_attempt => return,
        Stop::Success | Stop::Rejected => false,
        Stop::Exhausted(_) => true,
    };
    breaker.record(admitted, failed, now, on);
}

/// A transition's event: its kind and the delay it carries.
pub(crate) fn transition_event(t: Transition) -> (EventKind, Option<Duration>) {
    match t {
        Transition::Opened(d) => (EventKind::BreakerOpened, Some(d)),
        Transition::HalfOpen => (EventKind::BreakerHalfOpen, None),
        Transition::Closed => (EventKind::BreakerClosed, None),
    }
}

/// The one-at-a-time engine's side.
impl<P: Deref<Target = Policy>> Call<P> {
    /// Emits a transition's event at `elapsed`.
    fn transition(&self, t: Transition, elapsed: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (kind, delay) = transition_event(t);
        self.emit(kind, elapsed, delay, None, sink);
    }

    /// Per-attempt counting: an attempt's verdict at `now`.
    pub(crate) fn count_attempt(&mut self, verdict: Verdict, now: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let elapsed = now.saturating_sub(self.started_at());
        let mut admission = self.admission;
        count_attempt(&self.policy, &mut admission, verdict, now, &mut |t| self.transition(t, elapsed, sink));
        self.admission = admission;
    }

    /// The call ended with `stop` at `now` (see [`count_call`]).
    pub(crate) fn count_call(&mut self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let elapsed = now.saturating_sub(self.started_at());
        count_call(&self.policy, self.admission, stop, now, &mut |t| self.transition(t, elapsed, sink));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn quiet() -> impl FnMut(Transition) {
        |_| {}
    }

    /// One call at `t`: admitted? then its outcome. Returns the admission.
    fn call(b: &CircuitBreaker, t: u64, failed: bool, log: &mut Vec<(u64, Transition)>) -> Admission {
        let mut on = |x| log.push((t, x));
        let a = b.admit(ms(t), &mut on);
        if !matches!(a, Admission::Refused { .. }) {
            b.record(a, failed, ms(t), &mut on);
        }
        a
    }

    #[test]
    fn consecutive_opens_after_n_and_a_success_resets_the_count() {
        let mut cfg = BreakerConfig::consecutive(3);
        cfg.break_duration = ms(1000);
        let b = CircuitBreaker::new(cfg).unwrap();
        let mut log = vec![];
        for (t, failed) in [(0, true), (1, true), (2, false), (3, true), (4, true)] {
            assert_eq!(call(&b, t, failed, &mut log), Admission::Pass);
        }
        assert_eq!(b.state(ms(4)), BreakerState::Closed);
        assert_eq!(call(&b, 5, true, &mut log), Admission::Pass);
        assert_eq!(log, [(5, Transition::Opened(ms(1000)))]);
        assert_eq!(b.state(ms(6)), BreakerState::Open);
        assert_eq!(call(&b, 6, false, &mut log), Admission::Refused { state: BreakerState::Open, retry_in: ms(999) });
        assert_eq!(b.retry_in(ms(600)), ms(405));
        assert_eq!(b.rejections(), 1);
        // The break ends at 1005: the first call is a probe; a second one meanwhile waits.
        let mut on = quiet();
        assert_eq!(b.state(ms(1005)), BreakerState::HalfOpen);
        assert_eq!(b.admit(ms(1005), &mut on), Admission::Probe);
        assert_eq!(b.admit(ms(1006), &mut on), Admission::Refused { state: BreakerState::HalfOpen, retry_in: ms(0) });
        b.record(Admission::Probe, false, ms(1010), &mut |x| log.push((1010, x)));
        assert_eq!(b.state(ms(1010)), BreakerState::Closed);
        assert_eq!(log.last(), Some(&(1010, Transition::Closed)));
        // Closed again, the count starts over: two failures do not open it.
        call(&b, 1011, true, &mut log);
        call(&b, 1012, true, &mut log);
        assert_eq!(b.state(ms(1012)), BreakerState::Closed);
    }

    #[test]
    fn a_failed_probe_reopens_for_a_growing_break_up_to_the_cap() {
        let mut cfg = BreakerConfig::consecutive(1);
        cfg.break_duration = ms(100);
        cfg.break_multiplier = 2.0;
        cfg.max_break_duration = Some(ms(350));
        let b = CircuitBreaker::new(cfg).unwrap();
        let mut log = vec![];
        call(&b, 0, true, &mut log);
        let mut t = 0;
        for want in [200, 350, 350] {
            t += log.last().map(|(_, x)| if let Transition::Opened(d) = x { d.as_millis() as u64 } else { 0 }).unwrap();
            assert_eq!(call(&b, t, true, &mut log), Admission::Probe);
            assert_eq!(log.last(), Some(&(t, Transition::Opened(ms(want)))));
        }
        // A success closes it, and the next break is back to 100 ms.
        t += 350;
        call(&b, t, false, &mut log);
        call(&b, t + 1, true, &mut log);
        assert_eq!(log.last(), Some(&(t + 1, Transition::Opened(ms(100)))));
        let kinds: Vec<_> = log.iter().map(|(_, x)| *x).filter(|x| *x == Transition::HalfOpen).collect();
        assert_eq!(kinds.len(), 4, "each probe follows a move to half-open");
    }

    #[test]
    fn sampling_needs_the_throughput_and_the_ratio_within_the_window() {
        // Polly-like: ratio 0.5, at least 4 calls, 1 s window (10 windows of 100 ms).
        let mut cfg = BreakerConfig::sampling(0.5, 4, ms(1000));
        cfg.break_duration = ms(500);
        let b = CircuitBreaker::new(cfg).unwrap();
        let mut log = vec![];
        // 3 failures: under the throughput, closed.
        for t in [0, 10, 20] {
            call(&b, t, true, &mut log);
        }
        assert_eq!(b.state(ms(20)), BreakerState::Closed);
        // The window slides: at 1000 ms the calls of the window started at 0 are gone.
        call(&b, 1000, true, &mut log);
        assert_eq!(b.state(ms(1000)), BreakerState::Closed, "1 call in the window");
        // 3 successes and 2 failures in the window: 0.4, closed; one more failure: 0.5.
        call(&b, 1100, false, &mut log);
        call(&b, 1200, false, &mut log);
        call(&b, 1300, false, &mut log);
        call(&b, 1400, true, &mut log);
        assert_eq!(b.state(ms(1400)), BreakerState::Closed, "2 of 5 is under 0.5");
        call(&b, 1500, true, &mut log);
        assert_eq!(log, [(1500, Transition::Opened(ms(500)))], "3 of 6 reaches 0.5");
    }

    #[test]
    fn a_success_alone_never_opens_it_and_the_ratio_is_inclusive() {
        let b = CircuitBreaker::new(BreakerConfig::sampling(0.5, 2, ms(1000))).unwrap();
        let mut log = vec![];
        call(&b, 0, false, &mut log);
        call(&b, 1, true, &mut log);
        assert_eq!(log.len(), 1, "1 of 2 reaches 0.5");
    }

    #[test]
    fn bad_knobs_are_named() {
        let err = |cfg| CircuitBreaker::new(cfg).unwrap_err().knob;
        assert_eq!(err(BreakerConfig::consecutive(0)), "failures");
        assert_eq!(err(BreakerConfig::sampling(0.0, 10, ms(1000))), "failure_ratio");
        assert_eq!(err(BreakerConfig::sampling(f64::NAN, 10, ms(1000))), "failure_ratio");
        assert_eq!(err(BreakerConfig::sampling(1.5, 10, ms(1000))), "failure_ratio");
        assert_eq!(err(BreakerConfig::sampling(0.5, 1, ms(1000))), "minimum_throughput");
        assert_eq!(err(BreakerConfig::sampling(0.5, 2, ms(499))), "sampling_duration");
        let with = |f: &dyn Fn(&mut BreakerConfig)| {
            let mut c = BreakerConfig::consecutive(2);
            f(&mut c);
            CircuitBreaker::new(c).map(|_| ()).map_err(|e| e.to_string())
        };
        assert_eq!(
            with(&|c| c.break_duration = ms(0)).unwrap_err(),
            "break_duration must be >= 1 ms and <= 1 day (ms), got 0"
        );
        assert!(with(&|c| c.half_open_probes = 0).unwrap_err().starts_with("half_open_probes"));
        assert!(with(&|c| c.break_multiplier = 0.5).unwrap_err().starts_with("break_multiplier"));
        assert!(with(&|c| c.max_break_duration = Some(ms(10))).unwrap_err().starts_with("max_break_duration"));
        assert!(with(&|c| c.max_break_duration = Some(ms(5000))).is_ok());
    }

    #[test]
    fn a_released_probe_lets_another_go_and_late_outcomes_change_nothing() {
        let mut cfg = BreakerConfig::consecutive(1);
        cfg.break_duration = ms(10);
        cfg.half_open_probes = 2;
        let b = CircuitBreaker::new(cfg).unwrap();
        let mut on = quiet();
        let early = b.admit(ms(0), &mut on);
        call(&b, 0, true, &mut vec![]);
        assert_eq!(b.state(ms(1)), BreakerState::Open);
        b.record(early, false, ms(2), &mut on);
        assert_eq!(b.state(ms(2)), BreakerState::Open, "a call admitted before it opened does not close it");
        assert_eq!(b.admit(ms(10), &mut on), Admission::Probe);
        assert_eq!(b.admit(ms(10), &mut on), Admission::Probe);
        assert!(matches!(b.admit(ms(10), &mut on), Admission::Refused { .. }));
        b.release(Admission::Probe);
        assert_eq!(b.admit(ms(11), &mut on), Admission::Probe);
    }

    #[test]
    fn shared_across_threads_it_opens_once() {
        let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(100)).unwrap());
        let opened = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (b, opened) = (b.clone(), opened.clone());
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        let mut on = |x| {
                            if matches!(x, Transition::Opened(_)) {
                                opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        };
                        let a = b.admit(ms(0), &mut on);
                        if !matches!(a, Admission::Refused { .. }) {
                            b.record(a, true, ms(0), &mut on);
                        }
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(opened.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(b.state(ms(0)), BreakerState::Open);
        assert!(b.rejections() >= 290, "at most 100 + 3 in flight went ahead");
    }

    mod engine {
        use super::*;
        use crate::engine::{Decision, Verdict};
        use crate::event::ExhaustReason;
        use crate::policy::Jitter;

        fn policy(b: &Arc<CircuitBreaker>, attempts: u64) -> Policy {
            Policy::builder()
                .name("dep")
                .max_attempts(attempts)
                .initial_delay_ms(0.0)
                .jitter(Jitter::None)
                .breaker(Some(b.clone()))
                .build()
                .unwrap()
        }

        /// A whole call at `t` whose attempts all end with `verdict`; the events' names.
        fn run(p: &Policy, t: u64, verdict: Verdict) -> (Option<Stop>, Vec<String>) {
            let mut log = vec![];
            let mut sink = |e: &Event<'_>| {
                let reason = e.reason.map(|r| format!("({r})")).unwrap_or_default();
                log.push(format!("{}:{}{reason}", e.kind, e.attempt))
            };
            let mut call = Call::start_with(p, ms(t), &mut sink);
            while call.outcome().is_none() {
                match call.record(verdict, ms(t), &mut sink).unwrap() {
                    Decision::Retry(_) => {
                        call.after_wait(ms(t), &mut sink).unwrap();
                    }
                    Decision::Stop(_) => {}
                }
            }
            (call.outcome(), log)
        }

        #[test]
        fn two_retriers_share_it_and_a_refused_call_makes_no_attempt() {
            let mut cfg = BreakerConfig::consecutive(2);
            cfg.break_duration = ms(1000);
            let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
            let (a, c) = (policy(&b, 3), policy(&b, 2));
            let (stop, log) = run(&a, 0, Verdict::TRANSIENT);
            assert_eq!(stop, Some(Stop::Exhausted(ExhaustReason::Attempts)));
            assert_eq!(log.len(), 6, "3 failures, 2 retries, exhausted: {log:?}");
            let (_, log) = run(&c, 10, Verdict::TRANSIENT);
            assert_eq!(log.last().unwrap(), "breaker_opened:2", "{log:?}");
            // Refused: one event, attempt 0, reason circuit_open; the refusal says for how long.
            let mut events = vec![];
            let call = Call::start_with(&a, ms(500), &mut |e: &Event<'_>| events.push((e.kind, e.attempt, e.reason)));
            assert_eq!(call.outcome(), Some(Stop::Exhausted(ExhaustReason::CircuitOpen)));
            assert_eq!(call.attempt(), 0);
            assert_eq!(call.refusal(), Some((BreakerState::Open, ms(510))));
            assert_eq!(events, [(EventKind::Exhausted, 0, Some(ExhaustReason::CircuitOpen))]);
            // After the break: a probe (half-open first), and a success closes it.
            let (stop, log) = run(&c, 1010, Verdict::Success);
            assert_eq!(stop, Some(Stop::Success));
            assert_eq!(log, ["breaker_half_open:0", "success:1", "breaker_closed:1"]);
            assert_eq!(b.state(ms(1010)), BreakerState::Closed);
        }

        #[test]
        fn a_permanent_failure_is_the_dependency_answering() {
            let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(1)).unwrap());
            let p = policy(&b, 3);
            let (stop, _) = run(&p, 0, Verdict::Permanent);
            assert_eq!(stop, Some(Stop::Rejected));
            assert_eq!(b.state(ms(0)), BreakerState::Closed);
        }

        #[test]
        fn a_cancelled_probe_gives_its_place_back() {
            let mut cfg = BreakerConfig::consecutive(1);
            cfg.break_duration = ms(10);
            let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
            let p = policy(&b, 1);
            run(&p, 0, Verdict::TRANSIENT);
            let none = &mut |_: &Event<'_>| {};
            let mut probe = Call::start_with(&p, ms(10), none);
            assert!(probe.outcome().is_none());
            assert!(Call::start_with(&p, ms(11), none).refusal().is_some(), "one probe at a time");
            probe.cancel(ms(12), none).unwrap();
            assert_eq!(b.state(ms(12)), BreakerState::HalfOpen);
            assert!(Call::start_with(&p, ms(13), none).refusal().is_none());
        }

        #[test]
        fn per_attempt_counts_each_failed_attempt() {
            let mut cfg = BreakerConfig::consecutive(3);
            cfg.per_attempt = true;
            let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
            let p = policy(&b, 3);
            let (_, log) = run(&p, 0, Verdict::TRANSIENT);
            assert!(log.contains(&"breaker_opened:3".to_string()), "{log:?}");
            // Per call it would take 3 calls.
            let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(3)).unwrap());
            let p = policy(&b, 3);
            run(&p, 0, Verdict::TRANSIENT);
            assert_eq!(b.state(ms(0)), BreakerState::Closed);
        }

        #[test]
        fn without_a_breaker_nothing_changes() {
            let p = Policy::builder().max_attempts(2).initial_delay_ms(0.0).build().unwrap();
            let (stop, log) = run(&p, 0, Verdict::TRANSIENT);
            assert_eq!(stop, Some(Stop::Exhausted(ExhaustReason::Attempts)));
            assert_eq!(log, ["attempt_failed:1", "retrying:1", "attempt_failed:2", "exhausted:2(attempts)"]);
        }
    }
}
