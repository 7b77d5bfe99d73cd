//! A hedging policy ([`Hedging`]): its knobs checked (attempts, a fixed or adaptive delay,
//! the non-fatal failures), the default guard that limits hedges without a budget, and the
//! refusal a call that runs one attempt at a time gives a policy that hedges.

use std::sync::Arc;
use std::time::Duration;

use crate::budget::{RatioBudget, RetryBudget};
use crate::knob::MAX_MS;
use crate::policy::Policy;
use crate::units;

use super::{
    bad, HedgeError, LatencySketch, DEFAULT_WINDOW, GUARD_MIN_PER_SEC, GUARD_PERCENT, GUARD_WINDOW, MAX_HEDGE_ATTEMPTS,
};

fn duration(field: &'static str, ms: f64) -> Result<Duration, HedgeError> {
    if (0.0..=MAX_MS).contains(&ms) {
        Ok(units::duration_from_ms_or_zero(ms))
    } else {
        Err(bad(field, format!("must be finite and >= 0 ms, got {} ms", units::compact(ms))))
    }
}

/// When the next hedge goes out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HedgeDelay {
    /// After this long (gRPC's `hedgingDelay`; zero launches every attempt at once).
    Fixed(Duration),
    /// After the sketch's quantile of recent latencies, clamped to `[floor, ceiling]`;
    /// the ceiling until the sketch holds [`MIN_SAMPLES`](super::MIN_SAMPLES).
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
    pub(super) max_attempts: u32,
    delay: HedgeDelay,
    non_fatal: Vec<String>,
    /// Limits the hedges of a policy without a budget (`None`: opted out).
    pub(super) guard: Option<Arc<RetryBudget>>,
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
    /// [`Verdict::Transient`](crate::engine::Verdict::Transient) for them and
    /// [`Verdict::Permanent`](crate::engine::Verdict::Permanent) for the rest.
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

    pub(super) fn sketch(&self) -> Option<&LatencySketch> {
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
