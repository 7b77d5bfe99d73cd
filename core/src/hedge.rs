//! Hedging: the sans-IO engine of a hedged call (gRPC A6's `hedgingPolicy`, The Tail at
//! Scale's "hedged requests").
//!
//! Retries fix failures; hedging fixes slowness. A hedged call launches attempt 1, and if
//! it has not answered after the hedging delay, launches attempt 2 beside it, and so on up
//! to `max_attempts` (at most 5, as A6 caps it). The first success wins: its value is the
//! call's, every other attempt in flight is cancelled and its late result dropped (never
//! returned, never counted as a failure). A non-fatal failure (a [`Verdict::Transient`])
//! lets the remaining attempts go on and launches the next one at once (or after the
//! server's hint); a fatal one ([`Verdict::Permanent`]) ends the call.
//!
//! [`HedgeCall`] answers, at each moment, "launch attempt k now" ([`Step::Launch`]), "wait
//! until T or an outcome" ([`Step::Wait`]), "attempt j won: cancel the others"
//! ([`Step::Won`]) or "stop" ([`Step::Stop`]). A host runs the attempts concurrently and
//! reports each outcome with the time ([`HedgeCall::record`]); like [`crate::Call`] it
//! never sleeps, never reads a clock and never calls user code.
//!
//! The extra load is capped. With a retry budget, each hedge (attempt 2 and later) is
//! not launched while the budget refuses retries; a native policy's hedge is paid for as a
//! retry (a token bucket's hedge spends a token), while a policy from a gRPC service
//! config follows A6 exactly: a hedge is only *gated* on tokens > max/2, and only failures
//! spend ([`Hedging::with_a6_throttling`]). Without a budget, a default guard
//! ([`Hedging::guard`]: 10% of the calls of the last 10 s, plus one hedge a second) keeps
//! an overloaded server, where every attempt is slow, from seeing twice its load; it can
//! be turned off ([`Hedging::without_guard`]). The delay is fixed
//! ([`HedgeDelay::Fixed`]) or adaptive ([`HedgeDelay::Adaptive`]): a live quantile of
//! recent attempt latencies, kept in a bounded [`LatencySketch`] shared by every call of
//! the policy, clamped to a floor and a ceiling.
//!
//! A policy's circuit breaker is asked once per hedged call, before attempt 1, as for any
//! call ([`HedgeCall::start_with`]): the breaker counts calls, and a hedged call is one
//! call however many attempts it launches (per-attempt counting counts each outcome
//! recorded; a cancelled loser is not one).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::breaker::Admission;
use crate::budget::{RatioBudget, RetryBudget, RetryCause};
use crate::engine::{StateError, Stop, Verdict};
use crate::event::{Event, EventKind, ExhaustReason};
use crate::knob::MAX_MS;
use crate::policy::Policy;
use crate::spelling::Spelling;
use crate::units;

/// The most attempts a hedged call makes (gRPC A6 caps `maxAttempts` at 5).
pub const MAX_HEDGE_ATTEMPTS: u32 = 5;

/// Samples an adaptive delay needs before it follows the quantile; until then the delay
/// is the ceiling (few hedges while nothing is known).
pub const MIN_SAMPLES: usize = 20;

/// The latencies an adaptive sketch keeps by default (the most recent ones).
pub const DEFAULT_WINDOW: usize = 1000;

/// The default guard's window: hedges are counted over the last 10 s (Finagle's ttl).
pub const GUARD_WINDOW: Duration = Duration::from_secs(10);

/// The default guard's share: hedges may add 10% to the calls of the window.
pub const GUARD_PERCENT: f64 = 0.1;

/// The default guard's reserve: one hedge a second is always allowed (a client that sends
/// little may still hedge).
pub const GUARD_MIN_PER_SEC: u32 = 1;

/// A hedging knob out of range: which field (`max_attempts`, `delay`, `quantile`,
/// `floor`, `ceiling`, `window`) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgeError {
    /// The field of the hedging policy.
    pub field: &'static str,
    /// What was wrong with it, with the value given.
    pub message: String,
}

impl HedgeError {
    /// The error with the field, and any other field its message names, in `spelling`'s
    /// words (Node: `ceilingMs must be >= floorMs, got 5 ms (floorMs is 10 ms)`).
    pub fn render(&self, spelling: Spelling) -> String {
        format!("{} {}", spelling.name(self.field), spelling.respell(&self.message, &["floor"]))
    }
}

impl std::fmt::Display for HedgeError {
    /// The error in Rust's words (the contract's names).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

impl std::error::Error for HedgeError {}

fn bad(field: &'static str, message: String) -> HedgeError {
    HedgeError { field, message }
}

fn duration(field: &'static str, ms: f64) -> Result<Duration, HedgeError> {
    if (0.0..=MAX_MS).contains(&ms) {
        Ok(units::duration_from_ms_or_zero(ms))
    } else {
        Err(bad(field, format!("must be finite and >= 0 ms, got {} ms", units::compact(ms))))
    }
}

/// The recent latencies of a policy's attempts, in bounded memory: a ring of the last
/// `window` samples (microseconds), and the quantile over them by nearest rank. Thread
/// safe (one short lock per sample and per read); shared by every call of a policy.
pub struct LatencySketch {
    quantile: f64,
    inner: Mutex<Ring>,
}

struct Ring {
    samples: Vec<u32>,
    next: usize,
    window: usize,
    scratch: Vec<u32>,
    /// The quantile over the samples, while no sample has arrived since.
    cached: Option<u32>,
}

impl fmt::Debug for LatencySketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencySketch").field("quantile", &self.quantile).field("len", &self.len()).finish()
    }
}

impl LatencySketch {
    /// A sketch of the last `window` latencies (>= 1) answering `quantile` (in (0, 1)).
    pub fn new(quantile: f64, window: usize) -> Result<Self, HedgeError> {
        if !(quantile > 0.0 && quantile < 1.0) {
            return Err(bad("quantile", format!("must be > 0 and < 1, got {}", units::compact(quantile))));
        }
        if !(1..=1_000_000).contains(&window) {
            return Err(bad("window", format!("must be >= 1 and <= 1000000, got {window}")));
        }
        let ring = Ring { samples: Vec::with_capacity(window), next: 0, window, scratch: Vec::new(), cached: None };
        Ok(LatencySketch { quantile, inner: Mutex::new(ring) })
    }

    /// The quantile this sketch answers.
    pub fn quantile(&self) -> f64 {
        self.quantile
    }

    /// How many latencies it holds now (at most its window).
    pub fn len(&self) -> usize {
        self.lock().samples.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One attempt's latency (saturating at about 71 minutes).
    pub fn record(&self, latency: Duration) {
        let us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        let mut ring = self.lock();
        if ring.samples.len() < ring.window {
            ring.samples.push(us);
        } else {
            let at = ring.next;
            ring.samples[at] = us;
        }
        ring.next = (ring.next + 1) % ring.window;
        ring.cached = None;
    }

    /// The quantile of the latencies held, by nearest rank (the smallest sample with at
    /// least `quantile` of the samples at or below it); `None` while fewer than
    /// [`MIN_SAMPLES`] are held.
    pub fn estimate(&self) -> Option<Duration> {
        let mut ring = self.lock();
        if ring.samples.len() < MIN_SAMPLES.min(ring.window) {
            return None;
        }
        if ring.cached.is_none() {
            let Ring { samples, scratch, .. } = &mut *ring;
            scratch.clear();
            scratch.extend_from_slice(samples);
            let rank = ((self.quantile * scratch.len() as f64).ceil() as usize).clamp(1, scratch.len()) - 1;
            let (_, at, _) = scratch.select_nth_unstable(rank);
            ring.cached = Some(*at);
        }
        ring.cached.map(|us| Duration::from_micros(u64::from(us)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // A panic while holding the lock leaves whole samples behind: keep using them.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// When the next hedge goes out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HedgeDelay {
    /// After this long (gRPC's `hedgingDelay`; zero launches every attempt at once).
    Fixed(Duration),
    /// After the sketch's quantile of recent latencies, clamped to `[floor, ceiling]`;
    /// the ceiling until the sketch holds [`MIN_SAMPLES`].
    Adaptive {
        /// The shortest delay.
        floor: Duration,
        /// The longest delay, and the delay while too little is known.
        ceiling: Duration,
        /// The shared latencies.
        sketch: Arc<LatencySketch>,
    },
}

/// A hedging policy: how many attempts at most, after what delay, and which failures
/// let the others go on. Part of a [`Policy`] ([`crate::PolicyBuilder::hedge`]); with it
/// the policy's backoff knobs (`max_attempts`, delays, jitter) do not apply, while its
/// deadline, attempt timeout, budget, `max_retry_after` and name do.
#[derive(Debug, Clone)]
pub struct Hedging {
    max_attempts: u32,
    delay: HedgeDelay,
    non_fatal: Vec<String>,
    /// Limits the hedges of a policy without a budget (`None`: opted out).
    guard: Option<Arc<RetryBudget>>,
    /// gRPC A6's throttling: a budget gates hedges and they spend nothing.
    a6: bool,
}

/// The default guard: Finagle's windowed ratio over [`GUARD_WINDOW`], [`GUARD_PERCENT`] of
/// the calls plus [`GUARD_MIN_PER_SEC`], shared by every call of the policy.
fn default_guard() -> Option<Arc<RetryBudget>> {
    let ratio = RatioBudget::new(GUARD_WINDOW, GUARD_MIN_PER_SEC, GUARD_PERCENT, Duration::ZERO)
        .unwrap_or_else(|_| unreachable!("the guard's constants are valid"));
    Some(Arc::new(RetryBudget::from(ratio)))
}

impl Hedging {
    /// A fixed delay: a hedge goes when an attempt has run `delay` without an answer.
    /// `max_attempts` in [1, 5].
    ///
    /// ```
    /// use retryrs::Hedging;
    /// use std::time::Duration;
    /// let hedging = Hedging::fixed(2, Duration::from_millis(50)).unwrap();
    /// assert_eq!(hedging.max_attempts(), 2);
    /// assert!(Hedging::fixed(6, Duration::from_millis(50)).is_err());
    /// ```
    pub fn fixed(max_attempts: u64, delay: Duration) -> Result<Self, HedgeError> {
        Self::fixed_ms(max_attempts, units::ms_from_duration(delay))
    }

    /// [`Hedging::fixed`] with the delay in milliseconds, as policy documents and the
    /// bindings give it: finite and >= 0.
    pub fn fixed_ms(max_attempts: u64, delay_ms: f64) -> Result<Self, HedgeError> {
        Ok(Hedging {
            max_attempts: check_attempts(max_attempts)?,
            delay: HedgeDelay::Fixed(duration("delay", delay_ms)?),
            non_fatal: vec![],
            guard: default_guard(),
            a6: false,
        })
    }

    /// An adaptive delay: the `quantile` (p95: 0.95) of the last [`DEFAULT_WINDOW`]
    /// attempt latencies of every call of the policy, clamped to `[floor, ceiling]`.
    ///
    /// ```
    /// use retryrs::Hedging;
    /// use std::time::Duration;
    /// let hedging = Hedging::adaptive(3, 0.95, Duration::from_millis(10), Duration::from_millis(200)).unwrap();
    /// assert_eq!(hedging.max_attempts(), 3);
    /// // The ceiling below the floor is refused, naming it.
    /// let refused = Hedging::adaptive(3, 0.95, Duration::from_millis(200), Duration::from_millis(10));
    /// assert!(refused.unwrap_err().to_string().contains("ceiling"));
    /// ```
    pub fn adaptive(max_attempts: u64, quantile: f64, floor: Duration, ceiling: Duration) -> Result<Self, HedgeError> {
        let ms = units::ms_from_duration;
        Self::adaptive_window_ms(max_attempts, quantile, ms(floor), ms(ceiling), DEFAULT_WINDOW)
    }

    /// [`Hedging::adaptive`] with the floor and ceiling in milliseconds, as policy
    /// documents and the bindings give them.
    pub fn adaptive_ms(max_attempts: u64, quantile: f64, floor_ms: f64, ceiling_ms: f64) -> Result<Self, HedgeError> {
        Self::adaptive_window_ms(max_attempts, quantile, floor_ms, ceiling_ms, DEFAULT_WINDOW)
    }

    /// [`Hedging::adaptive_ms`] over the last `window` latencies.
    pub fn adaptive_window_ms(
        max_attempts: u64,
        quantile: f64,
        floor_ms: f64,
        ceiling_ms: f64,
        window: usize,
    ) -> Result<Self, HedgeError> {
        let max_attempts = check_attempts(max_attempts)?;
        let floor = duration("floor", floor_ms)?;
        let ceiling = duration("ceiling", ceiling_ms)?;
        if ceiling < floor {
            return Err(bad(
                "ceiling",
                format!(
                    "must be >= floor, got {} ms (floor is {} ms)",
                    units::compact(ceiling_ms),
                    units::compact(floor_ms)
                ),
            ));
        }
        let sketch = Arc::new(LatencySketch::new(quantile, window)?);
        let delay = HedgeDelay::Adaptive { floor, ceiling, sketch };
        Ok(Hedging { max_attempts, delay, non_fatal: vec![], guard: default_guard(), a6: false })
    }

    /// The failures that let the other attempts go on, as the document named them (gRPC
    /// status names, HTTP statuses): data for the host's predicate, which says
    /// [`Verdict::Transient`] for them and [`Verdict::Permanent`] for the rest.
    pub fn with_non_fatal(mut self, names: Vec<String>) -> Self {
        self.non_fatal = names;
        self
    }

    /// The same hedging with another attempt limit (in [1, 5]), everything else kept:
    /// the delay (an adaptive one's sketch shared), the non-fatal names, the guard (shared:
    /// it counts the hedges of both) and the throttling rule.
    pub fn with_max_attempts(&self, max_attempts: u64) -> Result<Self, HedgeError> {
        Ok(Hedging { max_attempts: check_attempts(max_attempts)?, ..self.clone() })
    }

    /// Without the default guard: with no budget in the policy, hedges are not limited
    /// (every slow attempt is hedged, so an overloaded server sees up to `max_attempts`
    /// times its load). A budget in the policy replaces the guard either way.
    pub fn without_guard(mut self) -> Self {
        self.guard = None;
        self
    }

    /// gRPC A6's throttling (the service-config loader sets it): a hedge is sent only while
    /// the budget allows a retry (tokens > max/2) and spends nothing; only failures spend.
    /// Without it a hedge is paid for as a retry.
    pub fn with_a6_throttling(mut self) -> Self {
        self.a6 = true;
        self
    }

    /// The default guard that limits hedges when the policy has no budget (`None`: turned
    /// off with [`Hedging::without_guard`]).
    pub fn guard(&self) -> Option<&Arc<RetryBudget>> {
        self.guard.as_ref()
    }

    /// Whether hedges follow A6's throttling ([`Hedging::with_a6_throttling`]).
    pub fn a6_throttling(&self) -> bool {
        self.a6
    }

    /// The most attempts a call makes, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The delay rule.
    pub fn delay(&self) -> &HedgeDelay {
        &self.delay
    }

    /// The non-fatal failures the document named.
    pub fn non_fatal(&self) -> &[String] {
        &self.non_fatal
    }

    /// The delay between launches for a call starting now (an adaptive one is the
    /// sketch's quantile rounded up to a whole millisecond, then clamped).
    pub fn current_delay(&self) -> Duration {
        match &self.delay {
            HedgeDelay::Fixed(d) => *d,
            // Delays have millisecond resolution (the contract): the quantile rounds up.
            HedgeDelay::Adaptive { floor, ceiling, sketch } => sketch.estimate().map_or(*ceiling, |q| {
                Duration::from_millis(q.as_micros().div_ceil(1000) as u64).clamp(*floor, *ceiling)
            }),
        }
    }

    fn sketch(&self) -> Option<&LatencySketch> {
        match &self.delay {
            HedgeDelay::Adaptive { sketch, .. } => Some(sketch),
            HedgeDelay::Fixed(_) => None,
        }
    }
}

/// Why a call that runs one attempt at a time (a blocking call, the retry engine
/// [`crate::Call`]) refuses `policy`, if it hedges: the one wording every host uses, to
/// which it appends what to use instead. `None` for a policy without hedging.
// Inlined (a crate built without LTO calls it on every blocking call): the test alone;
// the message is built out of line, only for a policy that hedges.
#[inline]
pub fn one_at_a_time_refusal(policy: &Policy) -> Option<String> {
    policy.hedging().map(|_| hedging_refused(policy))
}

#[cold]
#[inline(never)]
fn hedging_refused(policy: &Policy) -> String {
    format!(
        "{}: this policy hedges (runs attempts side by side and abandons the losers), which a call that \
         runs one attempt at a time cannot do",
        policy.name()
    )
}

fn check_attempts(n: u64) -> Result<u32, HedgeError> {
    if (1..=u64::from(MAX_HEDGE_ATTEMPTS)).contains(&n) {
        Ok(n as u32)
    } else {
        Err(bad("max_attempts", format!("must be >= 1 and <= {MAX_HEDGE_ATTEMPTS} (gRPC A6's cap), got {n}")))
    }
}

/// A set of attempt numbers (1 to 5): the attempts a host must cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttemptSet(u8);

impl AttemptSet {
    /// No attempt.
    pub const EMPTY: AttemptSet = AttemptSet(0);

    fn bit(attempt: u32) -> u8 {
        1 << (attempt - 1)
    }

    /// Whether attempt `n` is in the set.
    pub fn contains(&self, n: u32) -> bool {
        (1..=MAX_HEDGE_ATTEMPTS).contains(&n) && self.0 & Self::bit(n) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// How many attempts it holds.
    pub fn len(&self) -> u32 {
        self.0.count_ones()
    }

    /// The attempts, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=MAX_HEDGE_ATTEMPTS).filter(|n| self.contains(*n))
    }

    /// The set as a bit mask: bit `n - 1` is attempt `n` (what the C API hands over).
    pub fn bits(&self) -> u8 {
        self.0
    }
}

/// What a host does next with a hedged call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Launch attempt k (1-based) now, beside those in flight; then ask
    /// [`HedgeCall::poll`] again.
    Launch(u32),
    /// Wait until this time (the host's time base) or until an attempt in flight ends,
    /// whichever comes first, then [`HedgeCall::poll`] (or [`HedgeCall::record`]). `None`:
    /// wait for an outcome only.
    Wait(Option<Duration>),
    /// Attempt `attempt` won: return its value and cancel the attempts in `cancel`.
    Won {
        /// The winner.
        attempt: u32,
        /// The losers still in flight.
        cancel: AttemptSet,
    },
    /// The call is over without a winner: cancel the attempts in `cancel`, then surface
    /// the outcome as for [`crate::Call`] (the failure of the attempt the last event is
    /// about, or the host's exhaustion or cancellation error).
    Stop {
        /// How the call ended.
        stop: Stop,
        /// The attempts still in flight.
        cancel: AttemptSet,
    },
    /// A result that came after the call ended or after its attempt was cancelled: drop
    /// it (never returned, never counted as a failure).
    Dropped,
}

/// The state of one hedged call. `P` is any handle on a [`Policy`], as for
/// [`crate::Call`]. A policy without hedging runs as one attempt and no hedge.
#[derive(Debug, Clone)]
pub struct HedgeCall<P: Deref<Target = Policy>> {
    policy: P,
    start: Duration,
    max_attempts: u32,
    delay: Duration,
    launched: u32,
    launch_at: [Duration; MAX_HEDGE_ATTEMPTS as usize],
    running: AttemptSet,
    /// When the next attempt may launch; `None`: none will unless a failure asks.
    next_at: Option<Duration>,
    /// Why no further attempt may launch now (budget, retry_after), if something refused.
    refused: Option<ExhaustReason>,
    /// The attempt the last event was about.
    last: u32,
    done: Option<Stop>,
    /// What the policy's circuit breaker said at the start (`None`: no breaker).
    admission: Option<Admission>,
    /// What the last hedge took from a quota budget (`None`: no hedge yet).
    retry_cost: Option<u64>,
    /// What the next launch follows, for a quota's price: a timeout when the failure that
    /// asked for it ran out of its bound ([`HedgeCall::record_timeout`]).
    next_cause: RetryCause,
}

impl<P: Deref<Target = Policy>> HedgeCall<P> {
    /// Begins a hedged call at `now`; the first [`HedgeCall::poll`] launches attempt 1.
    /// An adaptive delay is read from the sketch once, here. With a circuit breaker in the
    /// policy, use [`HedgeCall::start_with`] (this one drops the breaker's events).
    pub fn start(policy: P, now: Duration) -> Self {
        Self::start_with(policy, now, &mut |_: &Event<'_>| {})
    }

    /// [`HedgeCall::start`], asking the policy's circuit breaker first (if it has one),
    /// once for the whole call. A refused call launches nothing: its first
    /// [`HedgeCall::poll`] is `Stop(Exhausted(CircuitOpen))` (the Exhausted event, attempt
    /// 0, was emitted here). A probe emits BreakerHalfOpen first.
    pub fn start_with(policy: P, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Self {
        let admission = match &policy.breaker {
            Some(_) => crate::breaker::admit(&policy, now, sink),
            None => None,
        };
        if !matches!(admission, Some(Admission::Refused { .. })) {
            if let Some(budget) = Self::hedge_budget(&policy) {
                budget.call_started(now);
            }
        }
        let (max_attempts, delay) = match policy.hedging() {
            Some(h) => (h.max_attempts, h.current_delay()),
            None => (1, Duration::ZERO),
        };
        HedgeCall {
            policy,
            start: now,
            max_attempts,
            delay,
            launched: 0,
            launch_at: [now; MAX_HEDGE_ATTEMPTS as usize],
            running: AttemptSet::EMPTY,
            next_at: Some(now),
            refused: None,
            last: 0,
            done: None,
            admission,
            retry_cost: None,
            next_cause: RetryCause::Failure,
        }
    }

    /// For a call the circuit breaker refused: the state that refused it and the time
    /// left before a probe may go.
    pub fn refusal(&self) -> Option<(crate::breaker::BreakerState, Duration)> {
        match self.admission {
            Some(Admission::Refused { state, retry_in }) => Some((state, retry_in)),
            _ => None,
        }
    }

    /// The policy this call runs.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What the circuit breaker said at the start (`None`: no breaker): an executor whose
    /// call may be dropped unfinished hands a probe back with it.
    pub(crate) fn admission(&self) -> Option<Admission> {
        self.admission
    }

    /// The delay between launches this call uses.
    pub fn hedging_delay(&self) -> Duration {
        self.delay
    }

    /// Attempts launched so far.
    pub fn launched(&self) -> u32 {
        self.launched
    }

    /// The attempts in flight.
    pub fn running(&self) -> AttemptSet {
        self.running
    }

    /// How the call ended, once it has.
    pub fn outcome(&self) -> Option<Stop> {
        self.done
    }

    /// When attempt `k` (launched, in flight) runs out of time: the call's deadline, or
    /// its own attempt timeout if that ends sooner; `Ok(None)` when unbounded.
    pub fn attempt_deadline(&self, k: u32) -> Result<Option<Duration>, StateError> {
        if !self.running.contains(k) {
            return Err(StateError::NoAttempt(if self.done.is_some() { "ended" } else { "not running" }));
        }
        Ok(self.policy.attempt_deadline(self.start, self.launch_at[k as usize - 1]))
    }

    /// Attempt `k`'s time left at `now` (zero once past), or `Ok(None)` when unbounded:
    /// what a host hands to the attempt (contract, "The attempt's bound"). A `now` before
    /// the attempt's launch counts as its launch: never more than the bound itself.
    pub fn remaining(&self, k: u32, now: Duration) -> Result<Option<Duration>, StateError> {
        let bound = self.attempt_deadline(k)?; // checks k first: launch_at is indexed by it
        let launched = self.launch_at[k as usize - 1];
        Ok(bound.map(|end| end.saturating_sub(now.max(launched))))
    }

    /// What to do at `now`: launch the next attempt, wait, or stop (the deadline passed,
    /// or nothing is in flight and nothing more may launch).
    pub fn poll(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<Step, StateError> {
        if self.done.is_some() {
            return Err(StateError::Ended);
        }
        if self.refusal().is_some() {
            // The refusal's one event was emitted at the start.
            let stop = Stop::Exhausted(ExhaustReason::CircuitOpen);
            self.done = Some(stop);
            return Ok(Step::Stop { stop, cancel: AttemptSet::EMPTY });
        }
        let elapsed = now.saturating_sub(self.start);
        if self.policy.deadline.is_some_and(|d| elapsed > d) {
            return Ok(self.stop(Stop::Exhausted(ExhaustReason::Deadline), now, sink));
        }
        if self.next_at.is_some_and(|at| at <= now) && self.launched < self.max_attempts {
            if self.launched == 0 || self.draw_token(now) {
                let k = self.launched + 1;
                self.launched = k;
                self.launch_at[k as usize - 1] = now;
                self.running.0 |= AttemptSet::bit(k);
                self.last = k;
                self.next_at = (k < self.max_attempts).then(|| now.saturating_add(self.delay));
                if k > 1 {
                    let waited = now.saturating_sub(self.launch_at[k as usize - 2]);
                    self.emit(EventKind::Hedge, k, elapsed, Some(waited), None, sink);
                }
                return Ok(Step::Launch(k));
            }
            self.refused = Some(ExhaustReason::Budget);
            self.next_at = None;
        }
        let pending = self.next_at.filter(|_| self.launched < self.max_attempts);
        if self.running.is_empty() && pending.is_none() {
            let reason = if self.launched >= self.max_attempts {
                ExhaustReason::Attempts
            } else {
                self.refused.unwrap_or(ExhaustReason::Attempts)
            };
            return Ok(self.stop(Stop::Exhausted(reason), now, sink));
        }
        let deadline =
            self.policy.deadline.map(|d| self.start.saturating_add(d).saturating_add(Duration::from_millis(1)));
        let wake = match (pending, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(Step::Wait(wake))
    }

    /// Attempt `k` ended at `now` with `verdict`. A success wins; a fatal failure
    /// ([`Verdict::Permanent`]) ends the call; a non-fatal one launches the next attempt
    /// at once (after the hint, if it carries one) and lets the others go on. A result
    /// for an attempt no longer in flight is [`Step::Dropped`].
    pub fn record(
        &mut self,
        k: u32,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        self.record_as(k, verdict, RetryCause::Failure, now, sink)
    }

    /// [`HedgeCall::record`] for an attempt that ran out of its bound (the host cut it at
    /// its attempt timeout, or its I/O timed out): the same step, but the attempt a
    /// non-fatal failure launches is priced as a retry after a timeout by a quota budget
    /// (the AWS SDKs charge 10, not 5), as [`crate::Call::record_timeout`] prices a retry.
    pub fn record_timeout(
        &mut self,
        k: u32,
        verdict: Verdict,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        self.record_as(k, verdict, RetryCause::Timeout, now, sink)
    }

    /// [`HedgeCall::record`] with what a launch it asks for follows: after an attempt that
    /// timed out ([`RetryCause::Timeout`]), a quota budget prices that next attempt as a
    /// retry after a timeout (as [`crate::Call::record_as`] does for a retry).
    pub fn record_as(
        &mut self,
        k: u32,
        verdict: Verdict,
        cause: RetryCause,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) -> Result<Step, StateError> {
        if k == 0 || k > self.launched {
            return Err(StateError::NotAttempting(if self.done.is_some() { "ended" } else { "not launched" }));
        }
        if self.done.is_some() || !self.running.contains(k) {
            return Ok(Step::Dropped);
        }
        self.running.0 &= !AttemptSet::bit(k);
        self.last = k;
        self.sample(k, now);
        let elapsed = now.saturating_sub(self.start);
        let mut admission = self.admission;
        let launched = self.launch_at[k as usize - 1];
        crate::breaker::count_attempt(&self.policy, &mut admission, verdict, launched, now, &mut |t| {
            self.transition(t, k, elapsed, sink)
        });
        self.admission = admission;
        let hint = match verdict {
            Verdict::Success => {
                if let Some(b) = &self.policy.budget {
                    b.call_succeeded(self.retry_cost);
                }
                let cancel = self.cancel_running(now);
                self.done = Some(Stop::Success);
                let abandoned = cancel.len();
                self.emit(EventKind::Success, k, elapsed, None, None, &mut |e| {
                    sink(&Event { attempts_abandoned: abandoned, ..*e })
                });
                self.count_call(Stop::Success, now, sink);
                return Ok(Step::Won { attempt: k, cancel });
            }
            Verdict::Permanent => {
                self.emit(EventKind::AttemptFailed, k, elapsed, None, None, sink);
                return Ok(self.stop(Stop::Rejected, now, sink));
            }
            Verdict::Transient { hint } => Some(hint),
            // A6 pushback "don't retry": a failure, and no further hedge; those in flight go on.
            Verdict::DontRetry => None,
        };
        self.emit(EventKind::AttemptFailed, k, elapsed, None, None, sink);
        if let Some(b) = &self.policy.budget {
            b.attempt_failed();
        }
        if self.policy.deadline.is_some_and(|d| elapsed > d) {
            return Ok(self.stop(Stop::Exhausted(ExhaustReason::Deadline), now, sink));
        }
        let Some(hint) = hint else {
            self.refused = Some(ExhaustReason::RetryAfter);
            self.next_at = None;
            return self.poll(now, sink);
        };
        if self.launched < self.max_attempts {
            match (hint, self.policy.max_retry_after) {
                (Some(h), Some(limit)) if h > limit => {
                    self.refused = Some(ExhaustReason::RetryAfter);
                    self.next_at = None;
                }
                // A6: a non-fatal failure sends the next hedge at once (or after the
                // server's pushback).
                (Some(h), _) => {
                    self.next_at = Some(now.saturating_add(h));
                    self.next_cause = cause;
                }
                (None, _) => {
                    self.next_at = Some(now);
                    self.next_cause = cause;
                }
            }
        }
        self.poll(now, sink)
    }

    /// The call was cancelled at `now`: emits Cancelled; the host cancels the attempts
    /// in the returned set.
    pub fn cancel(&mut self, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Result<AttemptSet, StateError> {
        if self.done.is_some() {
            return Err(StateError::Ended);
        }
        match self.stop(Stop::Cancelled, now, sink) {
            Step::Stop { cancel, .. } => Ok(cancel),
            _ => unreachable!("stop returns Step::Stop"),
        }
    }

    /// What limits the hedges of `policy`'s calls: its budget, else its hedging's default
    /// guard (unless turned off).
    fn hedge_budget(policy: &Policy) -> Option<&RetryBudget> {
        policy.budget.as_deref().or_else(|| policy.hedging().and_then(|h| h.guard.as_deref()))
    }

    /// A native hedge is paid for as a retry (a token bucket's hedge also spends one
    /// token); under A6's throttling it is only gated (tokens > max/2) and spends nothing.
    /// Either way it is refused while the budget (or the default guard) refuses retries.
    fn draw_token(&mut self, now: Duration) -> bool {
        // A launch a failure asked for is priced by what that failure was; a hedge sent on
        // its timer as a plain retry.
        let cause = std::mem::replace(&mut self.next_cause, RetryCause::Failure);
        let a6 = self.policy.hedging().is_some_and(Hedging::a6_throttling);
        match (&self.policy.budget, Self::hedge_budget(&self.policy)) {
            (Some(b), _) if a6 => b.allows_retry(),
            (Some(b), _) => match b.try_retry_after(cause, now) {
                Some(cost) => {
                    b.record_failure();
                    self.retry_cost = Some(cost);
                    true
                }
                None => false,
            },
            (None, Some(guard)) => guard.try_retry(now).is_some(),
            (None, None) => true,
        }
    }

    /// Emits a breaker transition's event, about attempt `k`, at `elapsed`.
    fn transition(&self, t: crate::breaker::Transition, k: u32, elapsed: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (kind, delay) = crate::breaker::transition_event(t);
        self.emit(kind, k, elapsed, delay, None, sink);
    }

    /// The call ended with `stop` at `now`: the breaker counts it.
    fn count_call(&self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (k, elapsed) = (self.last, now.saturating_sub(self.start));
        crate::breaker::count_call(&self.policy, self.admission, stop, self.start, now, &mut |t| {
            self.transition(t, k, elapsed, sink)
        });
    }

    fn sample(&self, k: u32, now: Duration) {
        if let Some(sketch) = self.policy.hedging().and_then(Hedging::sketch) {
            sketch.record(now.saturating_sub(self.launch_at[k as usize - 1]));
        }
    }

    /// Cancels every attempt in flight; each one's latency so far joins the sketch (a
    /// lower bound: without it a sketch would see only the fast attempts that win).
    fn cancel_running(&mut self, now: Duration) -> AttemptSet {
        let cancel = self.running;
        for k in cancel.iter() {
            self.sample(k, now);
        }
        self.running = AttemptSet::EMPTY;
        cancel
    }

    fn stop(&mut self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Step {
        let cancel = self.cancel_running(now);
        self.done = Some(stop);
        let elapsed = now.saturating_sub(self.start);
        let (kind, reason) = match stop {
            Stop::Success => (EventKind::Success, None),
            Stop::Rejected => (EventKind::Rejected, None),
            Stop::Exhausted(r) => (EventKind::Exhausted, Some(r)),
            Stop::Cancelled => (EventKind::Cancelled, None),
        };
        // Attempts in flight at the end were made, though they never settle: Stats
        // counts them (each one: a hedged call may have several in flight).
        let abandoned = cancel.len();
        let mut tell = |e: &Event<'_>| sink(&Event { attempts_abandoned: abandoned, ..*e });
        self.emit(kind, self.last, elapsed, None, reason, &mut tell);
        self.count_call(stop, now, sink);
        Step::Stop { stop, cancel }
    }

    fn emit(
        &self,
        kind: EventKind,
        attempt: u32,
        elapsed: Duration,
        delay: Option<Duration>,
        reason: Option<ExhaustReason>,
        sink: &mut impl FnMut(&Event<'_>),
    ) {
        sink(&Event::of(&self.policy, kind, attempt, elapsed, delay, reason));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn hedged(h: Hedging) -> Policy {
        Policy::builder().hedge(Some(h)).build().unwrap()
    }

    /// Under a quota budget a hedge costs what a retry does, and is not sent once the quota
    /// cannot pay for it.
    #[test]
    fn a_quota_pays_for_hedges_as_for_retries() {
        use crate::budget::{QuotaBudget, RetryBudget};
        let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(7, 5, 10, 1).unwrap()));
        let p = Policy::builder()
            .hedge(Some(Hedging::fixed_ms(3, 10.0).unwrap()))
            .budget(Some(std::sync::Arc::clone(&quota)))
            .build()
            .unwrap();
        let mut sink = |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(10), &mut sink), Ok(Step::Launch(2)));
        assert_eq!(quota.as_quota().unwrap().available(), 2, "the hedge took a retry's cost");
        call.record(1, Verdict::TRANSIENT, ms(11), &mut sink).unwrap();
        let end = call.record(2, Verdict::TRANSIENT, ms(12), &mut sink).unwrap();
        assert!(matches!(end, Step::Stop { stop: Stop::Exhausted(ExhaustReason::Budget), .. }), "{end:?}");
        assert_eq!((call.launched(), quota.as_quota().unwrap().available()), (2, 2));
    }

    /// A launch asked for by an attempt that timed out is priced as a retry after a
    /// timeout (10 here), one asked for by any other failure as a retry (5); a launch by
    /// the hedging delay is a plain retry even after a timeout was recorded earlier.
    #[test]
    fn a_launch_after_a_timed_out_attempt_costs_a_timeouts_price() {
        use crate::budget::{QuotaBudget, RetryBudget};
        for (cause, after_launch) in [(RetryCause::Timeout, 5), (RetryCause::Failure, 10)] {
            let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(15, 5, 10, 1).unwrap()));
            let p = Policy::builder()
                .hedge(Some(Hedging::fixed_ms(3, 1000.0).unwrap()))
                .budget(Some(std::sync::Arc::clone(&quota)))
                .build()
                .unwrap();
            let mut sink = |_: &Event<'_>| {};
            let mut call = HedgeCall::start(&p, ms(0));
            assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
            assert_eq!(call.record_as(1, Verdict::TRANSIENT, cause, ms(5), &mut sink), Ok(Step::Launch(2)));
            assert_eq!(quota.as_quota().unwrap().available(), after_launch, "{cause:?}");
            // Launched by the hedging delay: a retry's price, whatever came before.
            assert_eq!(call.poll(ms(1005), &mut sink), Ok(Step::Launch(3)));
            assert_eq!(quota.as_quota().unwrap().available(), after_launch - 5, "{cause:?}");
        }
    }

    /// Under a quota budget the attempt a timed-out failure launches is priced as a retry
    /// after a timeout (10, not 5); a hedge sent on its timer, or after another failure,
    /// as a plain retry; the success gives back what the last launch took.
    #[test]
    fn a_quota_prices_a_launch_after_a_timeout_as_a_timeouts() {
        use crate::budget::{QuotaBudget, RetryBudget};
        let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(500, 5, 10, 1).unwrap()));
        let p = Policy::builder()
            .hedge(Some(Hedging::fixed_ms(4, 1000.0).unwrap()))
            .budget(Some(std::sync::Arc::clone(&quota)))
            .build()
            .unwrap();
        let left = || quota.as_quota().unwrap().available();
        let mut sink = |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
        assert_eq!(call.record_timeout(1, Verdict::TRANSIENT, ms(100), &mut sink), Ok(Step::Launch(2)));
        assert_eq!(left(), 490, "the launch after a timeout cost 10");
        assert_eq!(call.record(2, Verdict::TRANSIENT, ms(110), &mut sink), Ok(Step::Launch(3)));
        assert_eq!(left(), 485, "after a plain failure, 5");
        assert_eq!(call.poll(ms(1110), &mut sink), Ok(Step::Launch(4)));
        assert_eq!(left(), 480, "a hedge on its timer, 5");
        assert!(matches!(call.record(4, Verdict::Success, ms(1120), &mut sink), Ok(Step::Won { attempt: 4, .. })));
        assert_eq!(left(), 485, "the success gave back the last launch's 5");
        // A permanent verdict recorded as a timeout launches nothing and costs nothing.
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
        let end = call.record_timeout(1, Verdict::Permanent, ms(5), &mut sink).unwrap();
        assert!(matches!(end, Step::Stop { stop: Stop::Rejected, .. }), "{end:?}");
        assert_eq!(left(), 485);
    }

    /// A hedged call asks the breaker once, before attempt 1; its outcome counts once,
    /// however many attempts it launched; a refused call launches nothing.
    #[test]
    fn a_hedged_call_is_one_call_to_the_breaker() {
        use crate::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
        let mut cfg = BreakerConfig::consecutive(1);
        cfg.break_duration = ms(1000);
        let breaker = std::sync::Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = Policy::builder()
            .hedge(Some(Hedging::fixed_ms(3, 10.0).unwrap()))
            .breaker(Some(std::sync::Arc::clone(&breaker)))
            .build()
            .unwrap();
        let log = std::cell::RefCell::new(vec![]);
        let mut sink = |e: &Event<'_>| log.borrow_mut().push((e.kind, e.attempt));
        let mut call = HedgeCall::start_with(&p, ms(0), &mut sink);
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(10), &mut sink), Ok(Step::Launch(2)));
        // Two non-fatal failures: the call goes on (one call, not yet counted).
        assert_eq!(call.record(1, Verdict::TRANSIENT, ms(11), &mut sink), Ok(Step::Launch(3)));
        assert_eq!(breaker.state(ms(11)), BreakerState::Closed);
        assert!(matches!(call.poll(ms(11), &mut sink), Ok(Step::Wait(_))));
        call.record(2, Verdict::TRANSIENT, ms(12), &mut sink).unwrap();
        let end = call.record(3, Verdict::TRANSIENT, ms(13), &mut sink).unwrap();
        assert!(matches!(end, Step::Stop { stop: Stop::Exhausted(ExhaustReason::Attempts), .. }), "{end:?}");
        assert_eq!(breaker.state(ms(13)), BreakerState::Open, "one exhausted call opens a 1-failure breaker");
        assert_eq!(log.borrow().last(), Some(&(EventKind::BreakerOpened, 3)));
        assert_eq!(log.borrow().iter().filter(|(k, _)| *k == EventKind::BreakerOpened).count(), 1);
        log.borrow_mut().clear();
        // Open: the next hedged call is refused before it launches anything.
        let mut refused = HedgeCall::start_with(&p, ms(20), &mut sink);
        assert!(refused.refusal().is_some());
        let stop = refused.poll(ms(20), &mut sink).unwrap();
        assert_eq!(stop, Step::Stop { stop: Stop::Exhausted(ExhaustReason::CircuitOpen), cancel: AttemptSet::EMPTY });
        assert_eq!(refused.launched(), 0);
        assert_eq!(*log.borrow(), vec![(EventKind::Exhausted, 0)]);
        log.borrow_mut().clear();
        // After the break, a probe that wins closes it (its losers are cancelled, not counted).
        let mut probe = HedgeCall::start_with(&p, ms(1013), &mut sink);
        assert_eq!(probe.poll(ms(1013), &mut sink), Ok(Step::Launch(1)));
        assert_eq!(probe.poll(ms(1023), &mut sink), Ok(Step::Launch(2)));
        let won = probe.record(2, Verdict::Success, ms(1024), &mut sink).unwrap();
        assert!(matches!(won, Step::Won { attempt: 2, .. }), "{won:?}");
        assert_eq!(breaker.state(ms(1024)), BreakerState::Closed);
        assert_eq!(log.borrow().first(), Some(&(EventKind::BreakerHalfOpen, 0)));
        assert_eq!(log.borrow().last(), Some(&(EventKind::BreakerClosed, 2)));
    }

    /// Runs `calls` hedged calls 5 ms apart on `p`, every attempt slow (an overloaded
    /// server: 100 ms, past the 10 ms hedging delay); returns the attempts launched.
    fn overloaded(p: &Policy, calls: u64) -> u64 {
        let none = &mut |_: &Event<'_>| {};
        let mut attempts = 0;
        for i in 0..calls {
            let t0 = ms(5 * i);
            let mut call = HedgeCall::start(p, t0);
            assert_eq!(call.poll(t0, none), Ok(Step::Launch(1)));
            let _ = call.poll(t0 + ms(10), none).unwrap();
            let end = call.record(1, Verdict::Success, t0 + ms(100), none).unwrap();
            assert!(matches!(end, Step::Won { attempt: 1, .. }), "{end:?}");
            attempts += u64::from(call.launched());
        }
        attempts
    }

    /// Without a budget the default guard holds hedges to about 10% of the calls (plus its
    /// reserve of one a second) when every attempt is slow; without the guard each call
    /// doubles. Over 20 s of calls the window slides: the share holds throughout.
    #[test]
    fn the_default_guard_holds_an_overloads_extra_attempts_to_about_ten_percent() {
        let guarded = hedged(Hedging::fixed_ms(2, 10.0).unwrap());
        let extra = overloaded(&guarded, 4000) - 4000;
        assert!((300..=800).contains(&extra), "{extra} extra attempts for 4000 calls (at most 20%)");
        let open = hedged(Hedging::fixed_ms(2, 10.0).unwrap().without_guard());
        assert_eq!(overloaded(&open, 4000), 8000, "no guard: every call hedged");
        // A budget replaces the guard.
        let budget = Arc::new(crate::budget::RetryBudget::new(1000.0, 1.0).unwrap());
        let p =
            Policy::builder().hedge(Some(Hedging::fixed_ms(2, 10.0).unwrap())).budget(Some(budget)).build().unwrap();
        assert_eq!(overloaded(&p, 100), 200, "each success pays back the hedge's token");
    }

    /// A6 throttling: hedges are gated on tokens > max/2 and spend nothing (A6's example
    /// bucket, nothing failing: 60 hedges of 60 calls); a native policy with the same
    /// bucket pays for each hedge, so the bucket runs dry after a few.
    #[test]
    fn a6_hedges_are_gated_not_paid_while_native_hedges_pay() {
        let run = |h: Hedging| {
            let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
            let p = Policy::builder().hedge(Some(h)).budget(Some(Arc::clone(&budget))).build().unwrap();
            (overloaded(&p, 60) - 60, budget.tokens())
        };
        assert_eq!(run(Hedging::fixed_ms(2, 10.0).unwrap().with_a6_throttling()), (60, 10.0));
        let (native, _) = run(Hedging::fixed_ms(2, 10.0).unwrap());
        assert_eq!(native, 11, "paid for: the bucket falls to half after 11 hedges of 60");
        // Gated: below half, no hedge, and a failure still spends.
        let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
        (0..5).for_each(|_| budget.record_failure());
        let p = Policy::builder()
            .hedge(Some(Hedging::fixed_ms(2, 10.0).unwrap().with_a6_throttling()))
            .budget(Some(Arc::clone(&budget)))
            .build()
            .unwrap();
        assert_eq!(overloaded(&p, 1), 1, "5 tokens of 10: not above half");
        assert_eq!(overloaded(&p, 1), 2, "its success added 0.1: 5.1 is above half");
    }

    /// "Don't retry" pushback: a failure (a token), no new hedge, the others finish.
    #[test]
    fn dont_retry_stops_new_hedges_and_lets_the_others_finish() {
        let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
        let h = Hedging::fixed_ms(3, 50.0).unwrap().with_a6_throttling();
        let p = Policy::builder().hedge(Some(h)).budget(Some(Arc::clone(&budget))).build().unwrap();
        let none = &mut |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(50), none), Ok(Step::Launch(2)));
        assert_eq!(call.record(2, Verdict::DontRetry, ms(60), none), Ok(Step::Wait(Some(ms(15_001)))));
        assert_eq!(budget.tokens(), 9.0);
        assert_eq!(call.poll(ms(100), none), Ok(Step::Wait(Some(ms(15_001)))), "no hedge at 100 ms");
        assert!(matches!(call.record(1, Verdict::Success, ms(200), none), Ok(Step::Won { attempt: 1, .. })));
        assert_eq!(call.launched(), 2);
    }

    #[test]
    fn with_max_attempts_keeps_the_guard_and_the_throttling_rule() {
        let h = Hedging::fixed_ms(3, 5.0).unwrap().with_a6_throttling();
        let two = h.with_max_attempts(2).unwrap();
        assert_eq!((two.max_attempts(), two.a6_throttling()), (2, true));
        assert!(Arc::ptr_eq(h.guard().unwrap(), two.guard().unwrap()), "one guard for both");
        assert_eq!(h.with_max_attempts(6).unwrap_err().field, "max_attempts");
    }

    #[test]
    fn a_policy_without_hedging_is_one_attempt_and_no_hedge() {
        let p = Policy::default();
        let none = &mut |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(0), none), Ok(Step::Wait(Some(ms(15_001)))), "only the deadline wakes it");
        let d = call.record(1, Verdict::TRANSIENT, ms(5), none);
        assert_eq!(d, Ok(Step::Stop { stop: Stop::Exhausted(ExhaustReason::Attempts), cancel: AttemptSet::EMPTY }));
    }

    #[test]
    fn misuse_is_reported_and_late_results_are_dropped() {
        let p = hedged(Hedging::fixed_ms(3, 10.0).unwrap());
        let none = &mut |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert!(call.record(1, Verdict::Success, ms(0), none).is_err(), "attempt 1 was not launched");
        assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(10), none), Ok(Step::Launch(2)));
        assert_eq!(call.remaining(2, ms(15)), Ok(Some(ms(14_985))));
        assert!(call.record(0, Verdict::Success, ms(11), none).is_err());
        assert!(call.record(3, Verdict::Success, ms(11), none).is_err());
        let won = call.record(2, Verdict::Success, ms(12), none).unwrap();
        let cancel = match won {
            Step::Won { attempt: 2, cancel } => cancel,
            other => panic!("{other:?}"),
        };
        assert_eq!(cancel.iter().collect::<Vec<_>>(), [1]);
        assert_eq!((cancel.len(), cancel.bits(), cancel.contains(1), cancel.contains(2)), (1, 1, true, false));
        assert_eq!(call.record(1, Verdict::Permanent, ms(20), none), Ok(Step::Dropped));
        assert_eq!(call.outcome(), Some(Stop::Success));
        assert_eq!(call.poll(ms(20), none), Err(StateError::Ended));
        assert!(call.remaining(1, ms(20)).is_err());
        assert_eq!(call.cancel(ms(20), none), Err(StateError::Ended));
    }

    #[test]
    fn cancel_hands_back_every_attempt_in_flight() {
        let p = hedged(Hedging::fixed_ms(3, 0.0).unwrap());
        let mut log = vec![];
        let mut sink = |e: &Event<'_>| log.push((e.kind, e.attempt));
        let mut call = HedgeCall::start(&p, ms(0));
        for k in 1..=3 {
            assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(k)));
        }
        assert_eq!(call.cancel(ms(7), &mut sink).map(|s| s.bits()), Ok(0b111));
        assert_eq!(call.outcome(), Some(Stop::Cancelled));
        assert_eq!(log.last(), Some(&(EventKind::Cancelled, 3)));
    }

    #[test]
    fn the_sketch_keeps_its_window_and_answers_by_nearest_rank_across_threads() {
        let sketch = Arc::new(LatencySketch::new(0.95, 100).unwrap());
        assert_eq!(sketch.estimate(), None);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = Arc::clone(&sketch);
                std::thread::spawn(move || (0..500).for_each(|i| s.record(ms((i + t) % 100 + 1))))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(sketch.len(), 100, "bounded by its window");
        let sketch = LatencySketch::new(0.95, 1000).unwrap();
        for i in 1..=100 {
            sketch.record(ms(i));
        }
        assert_eq!(sketch.estimate(), Some(ms(95)));
        sketch.record(ms(1000));
        assert_eq!(sketch.estimate(), Some(ms(96)), "ceil(0.95 * 101) = 96th smallest");
        assert!(LatencySketch::new(1.0, 10).is_err() && LatencySketch::new(0.5, 0).is_err());
    }

    #[test]
    fn only_a_hedging_policy_is_refused_by_one_at_a_time_calls() {
        assert_eq!(one_at_a_time_refusal(&Policy::default()), None);
        let p = Policy::builder().name("rates").hedge(Some(Hedging::fixed_ms(2, 5.0).unwrap())).build().unwrap();
        let why = one_at_a_time_refusal(&p).unwrap();
        assert!(why.starts_with("rates: this policy hedges"), "{why}");
    }

    #[test]
    fn bad_hedging_knobs_name_the_field() {
        assert_eq!(Hedging::fixed_ms(6, 1.0).unwrap_err().field, "max_attempts");
        assert_eq!(Hedging::fixed_ms(0, 1.0).unwrap_err().field, "max_attempts");
        assert_eq!(Hedging::fixed_ms(2, f64::NAN).unwrap_err().field, "delay");
        assert_eq!(Hedging::adaptive_ms(2, 0.95, 10.0, 5.0).unwrap_err().field, "ceiling");
        assert_eq!(Hedging::adaptive_ms(2, 0.0, 1.0, 5.0).unwrap_err().field, "quantile");
        let err = Hedging::fixed_ms(9, 1.0).unwrap_err().to_string();
        assert_eq!(err, "max_attempts must be >= 1 and <= 5 (gRPC A6's cap), got 9");
    }
}
