//! The policy: every knob of a retrier, validated once when it is built.
//!
//! A [`Policy`] is immutable and cheap to share (`Arc<Policy>`); every call made with it
//! keeps its own state in an [`crate::engine::Call`].

use std::sync::Arc;
use std::time::Duration;

use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::engine::Verdict;
use crate::grpc_status::StatusCodes;
use crate::hedge::Hedging;
use crate::knob::{self, Rule, Setting, MAX_MS};
use crate::units;

mod deadline_hint;
mod error;
mod jitter;

pub use deadline_hint::DeadlineHint;
pub use error::{Given, PolicyError};
pub use jitter::Jitter;

use jitter::check_factor;

/// Everything one retrier needs to decide: built by [`PolicyBuilder`], immutable afterwards.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) max_attempts: u32,
    pub(crate) initial_delay_ms: f64,
    pub(crate) multiplier: f64,
    pub(crate) max_delay_ms: u64,
    pub(crate) jitter: Jitter,
    pub(crate) deadline: Option<Duration>,
    pub(crate) max_retry_after: Option<Duration>,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) budget: Option<Arc<RetryBudget>>,
    pub(crate) breaker: Option<Arc<CircuitBreaker>>,
    pub(crate) name: Arc<str>,
    pub(crate) seed: Option<u64>,
    pub(crate) pushback: Pushback,
    pub(crate) hedge: Option<Hedging>,
    pub(crate) grpc_codes: Option<StatusCodes>,
}

/// How a server's requested wait (a hint: HTTP's Retry-After, gRPC's
/// `grpc-retry-pushback-ms`) combines with the backoff. Not a knob: a policy document
/// cannot choose it; the gRPC service-config loader sets [`Pushback::Grpc`] on the
/// policies it builds, every other policy has [`Pushback::Floor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pushback {
    /// The contract's rule: wait the larger of the backoff and the hint (never sooner
    /// than the server asked).
    #[default]
    Floor,
    /// gRPC A6's rule: wait exactly the hint, and the backoff after it restarts from
    /// `initial_delay`, as if the hinted retry were the first.
    Grpc,
}

impl Default for Policy {
    /// The contract's defaults: 5 attempts, 200 ms, x2, 5 s cap, full jitter, 15 s deadline.
    fn default() -> Self {
        PolicyBuilder::new().build().expect("the defaults are valid")
    }
}

impl Policy {
    /// A builder holding the contract's defaults.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::new()
    }
    /// Total calls, the first one included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// Ceiling of the wait after the first failure.
    pub fn initial_delay(&self) -> Duration {
        units::duration_from_ms_or_zero(self.initial_delay_ms)
    }
    /// Growth of the ceiling per failed attempt.
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }
    /// Cap on every backoff delay (hints are not capped).
    pub fn max_delay(&self) -> Duration {
        Duration::from_millis(self.max_delay_ms)
    }
    /// The jitter kind.
    pub fn jitter(&self) -> Jitter {
        self.jitter
    }
    /// Budget for the whole call, or `None` when off.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }
    /// The longest server-asked wait a call accepts, or `None` when off.
    pub fn max_retry_after(&self) -> Option<Duration> {
        self.max_retry_after
    }
    /// The bound on each attempt, or `None` when off. An attempt's bound is this or the
    /// time left before the deadline, whichever is smaller
    /// ([`Policy::attempt_deadline`]).
    pub fn attempt_timeout(&self) -> Option<Duration> {
        self.attempt_timeout
    }
    /// Whether attempts are bounded at all (a deadline or an attempt timeout is set).
    /// When not, no decision depends on the time, and a host that emits no events need
    /// not read a clock.
    pub fn bounds_attempts(&self) -> bool {
        self.deadline.is_some() || self.attempt_timeout.is_some()
    }
    /// Whether any decision depends on the time: attempts are bounded, or a circuit
    /// breaker or a ratio budget (both keep time windows shared with other calls) is set.
    /// When not, a host that emits no events may feed the engine a constant instead of
    /// reading a clock.
    #[inline]
    pub fn reads_time(&self) -> bool {
        self.bounds_attempts() || self.breaker.is_some() || self.budget.as_ref().is_some_and(|b| b.as_ratio().is_some())
    }
    /// Whether a call may start on the coarse clock ([`crate::clock::Clock::now_coarse`],
    /// usually less than a tick early): its deadline and attempt timeout are off or at
    /// least a second (a lag of about 10 ms ends them about 1% early, never late), and no
    /// circuit breaker or ratio budget keeps time shared with other calls (a start read
    /// early could go back before a time another call gave them). A host with a listener
    /// or hooks reads the fine clock: they see the elapsed time.
    #[inline]
    pub fn tolerates_coarse_start(&self) -> bool {
        const SECOND: Duration = Duration::from_secs(1);
        self.deadline.is_none_or(|d| d >= SECOND)
            && self.attempt_timeout.is_none_or(|t| t >= SECOND)
            && self.breaker.is_none()
            && self.budget.as_ref().is_none_or(|b| b.as_ratio().is_none())
    }
    /// Whether an executor may run attempt 1 before starting the engine (a lazy start):
    /// nothing is bounded or timed, no budget is told of the call, and it does not hedge.
    /// A value then returns at once; a failure starts the engine and is judged as attempt 1.
    /// (A host with a listener or hooks starts the engine first: they see every event.)
    #[inline]
    pub fn starts_lazily(&self) -> bool {
        !self.reads_time() && self.budget.is_none() && self.hedge.is_none()
    }
    /// Whether the time an attempt *failed* matters to a decision: the deadline (does the
    /// wait fit before it?), a circuit breaker or a ratio budget. An attempt timeout alone
    /// needs only the attempts' start times, so an executor need not read the clock when
    /// an attempt fails.
    pub(crate) fn failure_reads_time(&self) -> bool {
        self.deadline.is_some()
            || self.breaker.is_some()
            || self.budget.as_ref().is_some_and(|b| b.as_ratio().is_some())
    }
    /// When an attempt that starts at `attempt_start`, in a call that started at
    /// `call_start`, runs out of time, on the same time base: the call's deadline, or
    /// the attempt timeout if that ends sooner; `None` when neither is set. The one
    /// formula of an attempt's bound (contract, "The attempt's bound"): [`Call`] answers
    /// with it, and a host that starts its [`Call`] lazily asks it for attempt 1.
    ///
    /// [`Call`]: crate::engine::Call
    #[inline]
    pub fn attempt_deadline(&self, call_start: Duration, attempt_start: Duration) -> Option<Duration> {
        let deadline = self.deadline.map(|d| call_start.saturating_add(d));
        let timeout = self.attempt_timeout.map(|t| attempt_start.saturating_add(t));
        match (deadline, timeout) {
            (Some(d), Some(t)) => Some(d.min(t)),
            (d, t) => d.or(t),
        }
    }
    /// The shared retry budget, if one is set.
    pub fn budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }
    /// The shared circuit breaker, if one is set.
    pub fn breaker(&self) -> Option<&Arc<CircuitBreaker>> {
        self.breaker.as_ref()
    }
    /// This policy with `breaker` instead of its own (for hosts whose policies are built
    /// where no breaker can be named, such as C's config struct).
    pub fn with_breaker(&self, breaker: Option<Arc<CircuitBreaker>>) -> Policy {
        Policy { breaker, ..self.clone() }
    }
    /// The retrier's name, used in events and errors.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// How a server's hint combines with the backoff ([`Pushback::Grpc`] for a policy
    /// loaded from a gRPC service config).
    pub fn pushback(&self) -> Pushback {
        self.pushback
    }
    /// A gRPC policy's status codes: its `retryableStatusCodes` (or a hedging policy's
    /// `nonFatalStatusCodes`); `None` for a policy not loaded from a service config.
    pub fn grpc_status_codes(&self) -> Option<&StatusCodes> {
        self.grpc_codes.as_ref()
    }
    /// The verdict on a call that ended with gRPC status `status` (a name such as
    /// `"UNAVAILABLE"` or a number as text), by this policy's status codes: `OK` a
    /// success, a listed code transient (non-fatal), any other permanent. An error for a
    /// status that is no gRPC code, or for a policy without status codes.
    pub fn grpc_verdict(&self, status: &str) -> Result<Verdict, String> {
        let codes = self.grpc_codes_or_err()?;
        crate::grpc_status::status_code(status).map(|c| codes.verdict(c)).map_err(|e| e.to_string())
    }
    /// [`Policy::grpc_verdict`] for a status number.
    pub fn grpc_verdict_code(&self, code: u64) -> Result<Verdict, String> {
        let codes = self.grpc_codes_or_err()?;
        crate::grpc_status::status_number(code).map(|c| codes.verdict(c)).map_err(|e| e.to_string())
    }
    fn grpc_codes_or_err(&self) -> Result<&StatusCodes, String> {
        self.grpc_codes.as_ref().ok_or_else(|| {
            format!("{}: this policy was not loaded from a gRPC service config: it has no status codes", self.name)
        })
    }
    /// The jitter seed, if the delays are to be reproducible.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }
    /// The hedging policy, if calls are hedged (run with [`crate::hedge::HedgeCall`]).
    pub fn hedging(&self) -> Option<&Hedging> {
        self.hedge.as_ref()
    }

    /// The numeric knob `name` (a [`knob::KNOBS`] entry) in the core's units
    /// (milliseconds for durations); `None` when it is off or not a numeric knob. Hosts
    /// derive their getters and reprs from this and the table.
    pub fn number(&self, name: &str) -> Option<f64> {
        match name {
            "max_attempts" => Some(f64::from(self.max_attempts)),
            "initial_delay" => Some(self.initial_delay_ms),
            "multiplier" => Some(self.multiplier),
            "max_delay" => Some(self.max_delay_ms as f64),
            "deadline" => self.deadline.map(units::ms_from_duration),
            "max_retry_after" => self.max_retry_after.map(units::ms_from_duration),
            "attempt_timeout" => self.attempt_timeout.map(units::ms_from_duration),
            _ => None,
        }
    }
}

/// Collects the knobs of a [`Policy`]; [`PolicyBuilder::build`] validates them all at once.
///
/// Delays can be given as [`Duration`]s or as floating-point milliseconds (what most hosts
/// hold); the float forms accept negative, NaN or infinite values so that `build` can
/// reject them with a message naming the knob.
#[derive(Debug, Clone)]
pub struct PolicyBuilder {
    max_attempts: u64,
    initial_delay_ms: f64,
    multiplier: f64,
    max_delay_ms: f64,
    jitter: Jitter,
    deadline_ms: Option<f64>,
    max_retry_after_ms: Option<f64>,
    attempt_timeout_ms: Option<f64>,
    budget: Option<Arc<RetryBudget>>,
    breaker: Option<Arc<CircuitBreaker>>,
    name: Arc<str>,
    seed: Option<u64>,
    pushback: Pushback,
    hedge: Option<Hedging>,
    grpc_codes: Option<StatusCodes>,
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl From<&Policy> for PolicyBuilder {
    /// A builder holding `policy`'s knobs, to derive a variant of it (a host that lets one
    /// knob of a loaded policy be overridden).
    fn from(p: &Policy) -> Self {
        PolicyBuilder {
            max_attempts: u64::from(p.max_attempts),
            initial_delay_ms: p.initial_delay_ms,
            multiplier: p.multiplier,
            max_delay_ms: p.max_delay_ms as f64,
            jitter: p.jitter,
            deadline_ms: p.deadline.map(units::ms_from_duration),
            max_retry_after_ms: p.max_retry_after.map(units::ms_from_duration),
            attempt_timeout_ms: p.attempt_timeout.map(units::ms_from_duration),
            budget: p.budget.clone(),
            breaker: p.breaker.clone(),
            name: p.name.clone(),
            seed: p.seed,
            pushback: p.pushback,
            hedge: p.hedge.clone(),
            grpc_codes: p.grpc_codes.clone(),
        }
    }
}

impl PolicyBuilder {
    /// The contract's defaults.
    pub fn new() -> Self {
        PolicyBuilder {
            max_attempts: 5,
            initial_delay_ms: 200.0,
            multiplier: 2.0,
            max_delay_ms: 5_000.0,
            jitter: Jitter::Full,
            deadline_ms: Some(15_000.0),
            max_retry_after_ms: Some(60_000.0),
            attempt_timeout_ms: None,
            budget: None,
            breaker: None,
            name: Arc::from("retry"),
            seed: None,
            pushback: Pushback::Floor,
            hedge: None,
            grpc_codes: None,
        }
    }
    /// Total calls, the first one included (>= 1; 1 disables retrying). Wider than `u32`
    /// so an out-of-range host value reaches validation instead of wrapping.
    pub fn max_attempts(mut self, n: u64) -> Self {
        self.max_attempts = n;
        self
    }
    /// Ceiling of the wait after the first failure.
    pub fn initial_delay(self, d: Duration) -> Self {
        self.initial_delay_ms(units::ms_from_duration(d))
    }
    /// [`PolicyBuilder::initial_delay`] in milliseconds.
    pub fn initial_delay_ms(mut self, ms: f64) -> Self {
        self.initial_delay_ms = ms;
        self
    }
    /// Growth of the ceiling per failed attempt (finite, >= 1).
    pub fn multiplier(mut self, m: f64) -> Self {
        self.multiplier = m;
        self
    }
    /// Cap on every backoff delay (>= initial_delay).
    pub fn max_delay(self, d: Duration) -> Self {
        self.max_delay_ms(units::ms_from_duration(d))
    }
    /// [`PolicyBuilder::max_delay`] in milliseconds.
    pub fn max_delay_ms(mut self, ms: f64) -> Self {
        self.max_delay_ms = ms;
        self
    }
    /// The jitter kind.
    pub fn jitter(mut self, j: Jitter) -> Self {
        self.jitter = j;
        self
    }
    /// Budget for the whole call; `None` turns the deadline off.
    pub fn deadline(self, d: Option<Duration>) -> Self {
        self.deadline_ms(d.map(units::ms_from_duration))
    }
    /// [`PolicyBuilder::deadline`] in milliseconds.
    pub fn deadline_ms(mut self, ms: Option<f64>) -> Self {
        self.deadline_ms = ms;
        self
    }
    /// The longest server-asked wait (Retry-After hint) a call accepts: a longer hint ends
    /// the call at once as exhausted (reason `retry_after`). `None` turns the bound off.
    pub fn max_retry_after(self, d: Option<Duration>) -> Self {
        self.max_retry_after_ms(d.map(units::ms_from_duration))
    }
    /// [`PolicyBuilder::max_retry_after`] in milliseconds.
    pub fn max_retry_after_ms(mut self, ms: Option<f64>) -> Self {
        self.max_retry_after_ms = ms;
        self
    }
    /// The bound on each attempt (> 0), or `None` (the default) for none. Each attempt is
    /// bounded by this or by the time left before the deadline, whichever is smaller.
    pub fn attempt_timeout(self, d: Option<Duration>) -> Self {
        self.attempt_timeout_ms(d.map(units::ms_from_duration))
    }
    /// [`PolicyBuilder::attempt_timeout`] in milliseconds.
    pub fn attempt_timeout_ms(mut self, ms: Option<f64>) -> Self {
        self.attempt_timeout_ms = ms;
        self
    }
    /// A retry budget shared with other retriers, or `None`.
    pub fn budget(mut self, b: Option<Arc<RetryBudget>>) -> Self {
        self.budget = b;
        self
    }
    /// A circuit breaker shared with other retriers, or `None`.
    pub fn breaker(mut self, b: Option<Arc<CircuitBreaker>>) -> Self {
        self.breaker = b;
        self
    }
    /// The name used in events and errors.
    pub fn name(mut self, name: impl AsRef<str>) -> Self {
        self.name = Arc::from(name.as_ref());
        self
    }
    /// A gRPC policy's status codes (the gRPC loader's; see [`Policy::grpc_status_codes`]).
    pub fn grpc_status_codes(mut self, codes: Option<StatusCodes>) -> Self {
        self.grpc_codes = codes;
        self
    }
    /// How a server's hint combines with the backoff (see [`Pushback`]; the gRPC loader's).
    pub fn pushback(mut self, rule: Pushback) -> Self {
        self.pushback = rule;
        self
    }
    /// Hedges calls by this policy ([`crate::hedge`]), or `None` (the default) for none.
    pub fn hedge(mut self, hedging: Option<Hedging>) -> Self {
        self.hedge = hedging;
        self
    }
    /// A seed for reproducible jitter, or `None` for fresh randomness per call.
    pub fn seed(mut self, seed: Option<u64>) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the numeric knob `name` (a [`knob::KNOBS`] entry) from a value already in the
    /// core's units: what hosts call in a loop over [`knob::numeric`], so a new numeric
    /// knob needs no host code. A count must be a whole number >= 0 (the range is
    /// checked by `build`); `Off` only for a knob that can be turned off.
    pub fn set(self, name: &str, value: Setting) -> Result<Self, PolicyError> {
        let k = knob::knob(name).filter(|k| k.unit.is_numeric()).ok_or_else(|| {
            PolicyError::new("options", Rule::Any, Given::Text(format!("an unknown numeric knob {name}")))
        })?;
        // A count is checked here against its table rule, for every count knob alike, so
        // the error quotes the value as given: a C `uint64_t` exactly (not the float it
        // would round to), a host's 1.5 or 1e300 (not what `as u64` would make of it).
        let out_of_range = |given: Given| Err(PolicyError::new(k.name, k.rule, given));
        let number = match (value, k.rule) {
            (Setting::Off, _) if k.can_be_off => None,
            (Setting::Off, _) => return Err(PolicyError::new(k.name, k.rule, Given::Text("off".into()))),
            (Setting::Whole(n), Rule::Whole { min, max }) if !(min..=max).contains(&n) => {
                return out_of_range(Given::Whole(n))
            }
            (Setting::Number(n), Rule::Whole { min, max })
                if !(n.is_finite() && n.fract() == 0.0 && n >= min as f64 && n <= max as f64) =>
            {
                return out_of_range(Given::Number(n))
            }
            // In range, so exact as a float (a count's max is far below 2^53).
            (Setting::Whole(n), _) => Some(n as f64),
            (Setting::Number(n), _) => Some(n),
        };
        Ok(match (k.name, number) {
            ("max_attempts", Some(n)) => self.max_attempts(n as u64),
            ("initial_delay", Some(ms)) => self.initial_delay_ms(ms),
            ("multiplier", Some(m)) => self.multiplier(m),
            ("max_delay", Some(ms)) => self.max_delay_ms(ms),
            ("deadline", ms) => self.deadline_ms(ms),
            ("max_retry_after", ms) => self.max_retry_after_ms(ms),
            ("attempt_timeout", ms) => self.attempt_timeout_ms(ms),
            _ => unreachable!("every numeric knob in KNOBS has an arm here (tested)"),
        })
    }

    /// Validates every knob and freezes the policy. The first broken rule is reported.
    pub fn build(self) -> Result<Policy, PolicyError> {
        let rule = |name: &str| knob::knob(name).expect("a declared knob").rule;
        let max_attempts = u32::try_from(self.max_attempts)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| PolicyError::new("max_attempts", rule("max_attempts"), Given::Whole(self.max_attempts)))?;
        let delay = |name: &'static str, ms: f64| -> Result<f64, PolicyError> {
            if (0.0..=MAX_MS).contains(&ms) {
                Ok(ms)
            } else {
                Err(PolicyError::new(name, Rule::Duration { not_below: None }, Given::Number(ms)))
            }
        };
        let initial = delay("initial_delay", self.initial_delay_ms)?;
        let max = delay("max_delay", self.max_delay_ms)?;
        if max < initial {
            return Err(PolicyError {
                other: Some(initial),
                ..PolicyError::new("max_delay", rule("max_delay"), Given::Number(max))
            });
        }
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return Err(PolicyError::new("multiplier", rule("multiplier"), Given::Number(self.multiplier)));
        }
        if let Jitter::Proportional(f) = self.jitter {
            check_factor(f)?;
        }
        let deadline = match self.deadline_ms {
            None => None,
            Some(ms) => Some(units::duration_from_ms_or_zero(delay("deadline", ms)?)),
        };
        let max_retry_after = match self.max_retry_after_ms {
            None => None,
            Some(ms) => Some(units::duration_from_ms_or_zero(delay("max_retry_after", ms)?)),
        };
        let attempt_timeout = match self.attempt_timeout_ms {
            None => None,
            Some(ms) if ms > 0.0 && ms <= MAX_MS => Some(units::duration_from_ms_or_zero(ms)),
            Some(ms) => return Err(PolicyError::new("attempt_timeout", Rule::Positive, Given::Number(ms))),
        };
        Ok(Policy {
            max_attempts,
            initial_delay_ms: initial,
            multiplier: self.multiplier,
            // Delays have millisecond resolution (see the contract): the cap rounds down.
            max_delay_ms: max.floor() as u64,
            jitter: self.jitter,
            deadline,
            max_retry_after,
            attempt_timeout,
            budget: self.budget,
            breaker: self.breaker,
            name: self.name,
            seed: self.seed,
            pushback: self.pushback,
            hedge: self.hedge,
            grpc_codes: self.grpc_codes,
        })
    }
}

#[cfg(test)]
mod tests;
