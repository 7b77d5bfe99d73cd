//! A breaker's knobs ([`BreakerConfig`]): the model that decides when it opens
//! ([`BreakerModel`]), the break and its growth, the probes, what it counts, and their
//! limits ([`MAX_WINDOW`], [`MAX_BREAK`]);
//! [`CircuitBreaker::new`](super::CircuitBreaker::new) validates them.

use std::time::Duration;

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
    /// When failures reach `failure_ratio` of the last `window_size` calls, once at least
    /// `minimum_calls` are counted (resilience4j's count-based sliding window).
    Count {
        /// Share of failed calls that opens it, in (0, 1].
        failure_ratio: f64,
        /// Calls counted before it may open (>= 1; above `window_size` it is
        /// `window_size`, as resilience4j).
        minimum_calls: u32,
        /// How many of the last calls it judges (1 to [`MAX_WINDOW`]).
        window_size: u32,
    },
}

impl BreakerModel {
    /// `consecutive`, `sampling` or `count`.
    pub fn name(&self) -> &'static str {
        match self {
            BreakerModel::Consecutive { .. } => "consecutive",
            BreakerModel::Sampling { .. } => "sampling",
            BreakerModel::Count { .. } => "count",
        }
    }

    /// The failure ratio that opens it (and that probes judged together must stay under);
    /// `None` for the consecutive model.
    pub fn failure_ratio(&self) -> Option<f64> {
        match *self {
            BreakerModel::Consecutive { .. } => None,
            BreakerModel::Sampling { failure_ratio, .. } | BreakerModel::Count { failure_ratio, .. } => {
                Some(failure_ratio)
            }
        }
    }
}

/// The largest count-based window (one byte per call it remembers).
pub const MAX_WINDOW: u32 = 1_000_000;

/// Every knob of a breaker; [`CircuitBreaker::new`](super::CircuitBreaker::new) validates
/// them.
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
    /// Count a permanent failure as a failure (default: a success, the dependency answered).
    pub count_permanent: bool,
    /// A call (or attempt) this long or longer is slow (ratio models only); `None`: none is.
    pub slow_call_duration: Option<Duration>,
    /// Share of slow calls that opens it, in (0, 1] (resilience4j's default: 1).
    pub slow_call_ratio: f64,
    /// Half-open: let exactly `half_open_probes` probes go and judge them all together
    /// (resilience4j), instead of closing on the first success (Polly).
    pub judge_all_probes: bool,
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
            count_permanent: false,
            slow_call_duration: None,
            slow_call_ratio: 1.0,
            judge_all_probes: false,
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

    /// resilience4j's count-based sliding window.
    pub fn count(failure_ratio: f64, minimum_calls: u32, window_size: u32) -> Self {
        Self::new(BreakerModel::Count { failure_ratio, minimum_calls, window_size })
    }
}

/// The longest break (Polly's upper bound for `BreakDuration`).
pub const MAX_BREAK: Duration = Duration::from_secs(86_400);
