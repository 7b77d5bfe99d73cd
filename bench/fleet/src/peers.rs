//! The retry policies scenario 2 compares: retryrs's own, and the defaults that users of
//! the peers actually run, each with its source. The defaults were read from each
//! library's source (shared/REFERENCES.md section 5 records file and version).
//!
//! Every policy is an engine [`PolicyBuilder`]; where a peer's schedule has a shape the
//! engine lacks, the difference is named in [`Peer::model`] and, for stamina's additive
//! jitter, applied on top of the engine's delay by [`Peer::extra_jitter_ms`].

use std::sync::Arc;
use std::time::Duration;

use retryrs::{BreakerConfig, CircuitBreaker, Jitter, Policy, PolicyBuilder, QuotaBudget, RatioBudget, RetryBudget};

/// Per-client retry budget of the budgeted retryrs policy (gRPC's example numbers).
pub const BUDGET_MAX_TOKENS: f64 = 10.0;
/// See [`BUDGET_MAX_TOKENS`].
pub const BUDGET_TOKEN_RATIO: f64 = 0.1;

/// The budgeted-and-broken policies' per-client circuit breaker: open after 5 failed calls
/// in a row (cockatiel's `ConsecutiveBreaker(5)`), 2 s open, one probe.
pub const BREAKER_FAILURES: u32 = 5;
/// See [`BREAKER_FAILURES`].
pub const BREAKER_BREAK: Duration = Duration::from_secs(2);
/// The growing variant's cap on the break.
pub const BREAKER_MAX_BREAK: Duration = Duration::from_secs(16);

/// A retry policy in the outage scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// retryrs's defaults: 5 attempts, 200 ms x2, 5 s cap, full jitter, 15 s deadline.
    Retryrs,
    /// The same with a per-client retry budget (10 tokens, 0.1 per success).
    RetryrsBudget,
    /// retryrs's defaults with the jitter turned off.
    NoJitter,
    /// tenacity 9.2.1 `Retrying()` defaults.
    Tenacity,
    /// stamina 26.1.0 `retry()` defaults.
    Stamina,
    /// p-retry 9.0.0 defaults.
    PRetry,
    /// urllib3 2.8.0 `Retry.DEFAULT`.
    Urllib3,
    /// cockatiel 4.0.0 `retry(handleAll, { backoff: new ExponentialBackoff() })`.
    Cockatiel,
    /// retryrs's defaults with the AWS SDKs' standard retry quota per client.
    RetryrsQuota,
    /// retryrs's defaults with Finagle's default ratio budget per client.
    RetryrsRatio,
    /// retryrs + budget with a circuit breaker per client.
    RetryrsBreaker,
    /// The same, the break doubling on each open in a row (capped).
    RetryrsBreakerGrowing,
    /// retryrs + breaker counting attempts, not calls (a Polly or resilience4j pipeline
    /// with the retry around the breaker).
    RetryrsBreakerPerAttempt,
    /// retryrs + budget with a count-based breaker: a failure ratio of the last calls.
    RetryrsBreakerCount,
    /// retryrs + breaker letting several half-open probes go and judging them together.
    RetryrsBreakerProbes,
}

impl Peer {
    /// Every policy, in the table's order.
    pub const ALL: [Peer; 15] = [
        Peer::Retryrs,
        Peer::RetryrsBudget,
        Peer::RetryrsQuota,
        Peer::RetryrsRatio,
        Peer::RetryrsBreaker,
        Peer::RetryrsBreakerGrowing,
        Peer::RetryrsBreakerPerAttempt,
        Peer::RetryrsBreakerCount,
        Peer::RetryrsBreakerProbes,
        Peer::NoJitter,
        Peer::Tenacity,
        Peer::Stamina,
        Peer::PRetry,
        Peer::Urllib3,
        Peer::Cockatiel,
    ];

    /// retryrs's own policies: the flapping scenario's.
    pub const RETRYRS: [Peer; 9] = [
        Peer::Retryrs,
        Peer::RetryrsBudget,
        Peer::RetryrsQuota,
        Peer::RetryrsRatio,
        Peer::RetryrsBreaker,
        Peer::RetryrsBreakerGrowing,
        Peer::RetryrsBreakerPerAttempt,
        Peer::RetryrsBreakerCount,
        Peer::RetryrsBreakerProbes,
    ];

    /// The name in tables and legends.
    pub fn label(self) -> &'static str {
        match self {
            Peer::Retryrs => "retryrs defaults",
            Peer::RetryrsBudget => "retryrs + budget",
            Peer::NoJitter => "retryrs, no jitter",
            Peer::Tenacity => "tenacity",
            Peer::Stamina => "stamina",
            Peer::PRetry => "p-retry",
            Peer::Urllib3 => "urllib3 Retry",
            Peer::Cockatiel => "cockatiel",
            Peer::RetryrsQuota => "retryrs + AWS quota",
            Peer::RetryrsRatio => "retryrs + Finagle ratio",
            Peer::RetryrsBreaker => "retryrs + breaker",
            Peer::RetryrsBreakerGrowing => "retryrs + breaker, growing",
            Peer::RetryrsBreakerPerAttempt => "retryrs + breaker, per attempt",
            Peer::RetryrsBreakerCount => "retryrs + breaker, count window",
            Peer::RetryrsBreakerProbes => "retryrs + breaker, 3 probes judged",
        }
    }

    /// The policy as the simulator runs it, and where its numbers come from.
    pub fn model(self) -> &'static str {
        match self {
            Peer::Retryrs => "5 attempts, 200 ms x2, cap 5 s, full jitter, deadline 15 s (core/src/policy.rs `PolicyBuilder::new`)",
            Peer::RetryrsBudget => "the defaults + `RetryBudget::new(10, 0.1)` per client (gRPC A6 throttling numbers)",
            Peer::NoJitter => "the defaults with `Jitter::None`",
            Peer::Tenacity => "tenacity 9.2.1 `__init__.py`: `stop_never`, `wait_none` (0 s): unbounded attempts, no wait",
            Peer::Stamina => "stamina 26.1.0 `_core.py`: 10 attempts, 0.1 s x2 + U(0, 1 s), cap 5 s after jitter, timeout 45 s; the additive jitter is added to the engine's unjittered delay (the engine has no additive jitter)",
            Peer::PRetry => "p-retry 9.0.0 `index.js`: retries 10 (11 attempts), 1 s x2, no cap, randomize off",
            Peer::Urllib3 => "urllib3 2.8.0 `Retry.DEFAULT`: total 3 (4 attempts), backoff_factor 0; the outage fails connections, which it retries",
            Peer::Cockatiel => "cockatiel 4.0.0 `Policy.js`, `ExponentialBackoff.js`: maxAttempts unbounded, 128 ms x2, cap 30 s, decorrelated jitter (run as the engine's AWS-style decorrelated jitter; cockatiel's own formula differs in detail)",
            Peer::RetryrsQuota => "the defaults + `QuotaBudget::aws_standard()` per client (capacity 500, a retry costs 5, a success gives back its retry's cost or 1)",
            Peer::RetryrsRatio => "the defaults + `RatioBudget::finagle_default` per client (10 s window, 10 retries/s reserve, 20% of calls)",
            Peer::RetryrsBreaker => "retryrs + budget (the token bucket above) + a `CircuitBreaker` per client: open after 5 failed calls in a row, 2 s open, one probe",
            Peer::RetryrsBreakerGrowing => "the same, the break doubling on each open in a row up to 16 s (`break_multiplier` 2, `max_break_duration` 16 s)",
            Peer::RetryrsBreakerPerAttempt => "retryrs + breaker counting attempts (`per_attempt`): open after 5 failed attempts in a row, as a Polly v8 or resilience4j pipeline with the retry outside the breaker",
            Peer::RetryrsBreakerCount => "retryrs + budget + a count-based breaker (`BreakerConfig::count`): open when 50% of the last 20 calls failed, once 10 are counted (resilience4j's ratio and window kind), 2 s open, one probe",
            Peer::RetryrsBreakerProbes => "retryrs + breaker with 3 half-open probes judged together (`half_open_probes` 3, `judge_all_probes`: closes only if all 3 succeed, as resilience4j)",
        }
    }

    /// The engine policy (without seed or budget; the simulator adds those per call).
    pub fn builder(self) -> PolicyBuilder {
        let unbounded = u64::from(u32::MAX);
        match self {
            Peer::Retryrs
            | Peer::RetryrsBudget
            | Peer::RetryrsQuota
            | Peer::RetryrsRatio
            | Peer::RetryrsBreaker
            | Peer::RetryrsBreakerGrowing
            | Peer::RetryrsBreakerPerAttempt
            | Peer::RetryrsBreakerCount
            | Peer::RetryrsBreakerProbes => Policy::builder(),
            Peer::NoJitter => Policy::builder().jitter(Jitter::None),
            Peer::Tenacity => Policy::builder()
                .max_attempts(unbounded)
                .initial_delay_ms(0.0)
                .max_delay_ms(0.0)
                .jitter(Jitter::None)
                .deadline(None),
            Peer::Stamina => Policy::builder()
                .max_attempts(10)
                .initial_delay_ms(100.0)
                .multiplier(2.0)
                .max_delay_ms(5_000.0)
                .jitter(Jitter::None)
                .deadline_ms(Some(45_000.0)),
            Peer::PRetry => Policy::builder()
                .max_attempts(11)
                .initial_delay_ms(1_000.0)
                .multiplier(2.0)
                // "no cap": far beyond any simulated horizon
                .max_delay_ms(1.0e9)
                .jitter(Jitter::None)
                .deadline(None),
            Peer::Urllib3 => Policy::builder()
                .max_attempts(4)
                .initial_delay_ms(0.0)
                .max_delay_ms(0.0)
                .jitter(Jitter::None)
                .deadline(None),
            Peer::Cockatiel => Policy::builder()
                .max_attempts(unbounded)
                .initial_delay_ms(128.0)
                .multiplier(2.0)
                .max_delay_ms(30_000.0)
                .jitter(Jitter::Decorrelated)
                .deadline(None),
        }
    }

    /// Whether each call needs its own random stream (otherwise calls that started in the
    /// same millisecond behave identically and the simulator runs them as one cohort).
    pub fn random(self) -> bool {
        self.budget().is_some() || matches!(self, Peer::Retryrs | Peer::Stamina | Peer::Cockatiel)
    }

    /// Whether each client keeps a retry budget.
    pub fn budgeted(self) -> bool {
        self.budget().is_some()
    }

    /// A client's retry budget, fresh, if this policy keeps one.
    pub fn budget(self) -> Option<Arc<RetryBudget>> {
        let budget = match self {
            Peer::RetryrsBudget
            | Peer::RetryrsBreaker
            | Peer::RetryrsBreakerGrowing
            | Peer::RetryrsBreakerPerAttempt
            | Peer::RetryrsBreakerCount
            | Peer::RetryrsBreakerProbes => {
                RetryBudget::new(BUDGET_MAX_TOKENS, BUDGET_TOKEN_RATIO).expect("valid budget")
            }
            Peer::RetryrsQuota => QuotaBudget::aws_standard().into(),
            Peer::RetryrsRatio => RatioBudget::finagle_default(Duration::ZERO).into(),
            _ => return None,
        };
        Some(Arc::new(budget))
    }

    /// A client's circuit breaker, fresh, if this policy keeps one.
    pub fn breaker(self) -> Option<Arc<CircuitBreaker>> {
        let consecutive = BreakerConfig::consecutive(BREAKER_FAILURES).with_break_duration(BREAKER_BREAK);
        let config = match self {
            Peer::RetryrsBreaker => consecutive,
            Peer::RetryrsBreakerGrowing => consecutive.with_break_growth(2.0, Some(BREAKER_MAX_BREAK)),
            Peer::RetryrsBreakerPerAttempt => consecutive.with_per_attempt(true),
            Peer::RetryrsBreakerCount => BreakerConfig::count(0.5, 10, 20).with_break_duration(BREAKER_BREAK),
            Peer::RetryrsBreakerProbes => {
                let mut config = consecutive.with_half_open_probes(3);
                config.judge_all_probes = true;
                config
            }
            _ => return None,
        };
        Some(Arc::new(CircuitBreaker::new(config).expect("valid breaker")))
    }

    /// stamina's jitter is additive, U(0, 1 s), then capped at 5 s: the one schedule shape
    /// the engine cannot express. Given the engine's delay and a uniform draw in [0, 1),
    /// the wait stamina would take.
    pub fn extra_jitter_ms(self, engine_ms: u64, unit: f64) -> u64 {
        match self {
            Peer::Stamina => (engine_ms + (unit * 1000.0) as u64).min(5_000),
            _ => engine_ms,
        }
    }
}
