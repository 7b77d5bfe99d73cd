//! The policy: every knob of a retrier, validated once when it is built.
//!
//! A [`Policy`] is immutable and cheap to share (`Arc<Policy>`); every call made with it
//! keeps its own state in an [`crate::engine::Call`].

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::engine::Verdict;
use crate::grpc_status::StatusCodes;
use crate::hedge::Hedging;
use crate::knob::{self, Rule, Setting, Unit, MAX_MS};
use crate::spelling::Spelling;
use crate::units;

/// How randomness is mixed into each backoff delay. See `docs/contract.md`, "Delays".
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Jitter {
    /// Exactly the ceiling: every client that failed together retries together.
    None,
    /// Uniform in `[0, ceiling]` (the AWS "full jitter").
    Full,
    /// `ceiling/2` plus uniform in `[0, ceiling/2]`.
    Equal,
    /// Uniform in `[ceiling*(1-f), ceiling*(1+f)]`, then capped at `max_delay`; `f` in `[0, 1]`.
    Proportional(f64),
    /// `min(max_delay, uniform in [initial_delay, 3 * previous delay])` (the AWS formula).
    Decorrelated,
}

impl Jitter {
    /// The canonical spelling, the one [`Jitter::from_str`] reads back.
    pub fn spelling(&self) -> String {
        match self {
            Jitter::None => "none".into(),
            Jitter::Full => "full".into(),
            Jitter::Equal => "equal".into(),
            Jitter::Proportional(f) => format!("proportional({f})"),
            Jitter::Decorrelated => "decorrelated".into(),
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelling())
    }
}

impl FromStr for Jitter {
    type Err = PolicyError;

    /// Reads `none`, `full`, `equal`, `decorrelated`, and `proportional(F)` or
    /// `proportional:F` with F in `[0, 1]`. Case and surrounding spaces do not matter.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        let bad = || PolicyError::new("jitter", Rule::Jitter, Given::Text(s.to_string()));
        match text.as_str() {
            "none" => return Ok(Jitter::None),
            "full" => return Ok(Jitter::Full),
            "equal" => return Ok(Jitter::Equal),
            "decorrelated" => return Ok(Jitter::Decorrelated),
            _ => {}
        }
        let factor = text
            .strip_prefix("proportional(")
            .and_then(|rest| rest.strip_suffix(')'))
            .or_else(|| text.strip_prefix("proportional:"))
            .ok_or_else(bad)?;
        let f: f64 = factor.trim().parse().map_err(|_| bad())?;
        check_factor(f)?;
        Ok(Jitter::Proportional(f))
    }
}

fn check_factor(f: f64) -> Result<(), PolicyError> {
    if f.is_finite() && (0.0..=1.0).contains(&f) {
        Ok(())
    } else {
        Err(PolicyError::new("jitter", Rule::Jitter, Given::Text(format!("proportional({f})"))))
    }
}

/// A knob that was out of range, as data: which knob, the rule it broke and the value
/// given (in the core's units), so each host renders it once in its own names and units
/// ([`PolicyError::render`]). `Display` renders it in the contract's names, delays in ms.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyError {
    /// The knob's name as the contract spells it (`max_attempts`, `initial_delay`, ...).
    pub knob: &'static str,
    /// The rule it broke (from the knob table).
    pub rule: Rule,
    /// The offending value.
    pub value: Given,
    /// For a rule relating two knobs (`max_delay >= initial_delay`): the other's value.
    pub other: Option<f64>,
}

/// A value as a host gave it, in the core's units (milliseconds for durations).
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// A number.
    Number(f64),
    /// A whole number too large for a float to show exactly.
    Whole(u64),
    /// Text (a jitter spelling), or "off" for a knob that cannot be turned off.
    Text(String),
}

impl PolicyError {
    /// Builds the error for `knob` holding `value`, which breaks `rule`.
    pub fn new(knob: &'static str, rule: Rule, value: Given) -> Self {
        PolicyError { knob, rule, value, other: None }
    }

    /// The one wording of a broken rule, with knob names spelt by `name` and values
    /// rendered by `value` (each host passes its spelling and units).
    pub fn render(
        &self,
        name: &dyn Fn(&'static str) -> String,
        value: &dyn Fn(&'static str, &Given) -> String,
    ) -> String {
        let mut text =
            format!("{} must be {}, got {}", name(self.knob), self.rule.describe(name), value(self.knob, &self.value));
        if let (Rule::Duration { not_below: Some(other) }, Some(v)) = (self.rule, self.other) {
            text.push_str(&format!(" ({} is {})", name(other), value(other, &Given::Number(v))));
        }
        text
    }

    /// The contract's rendering of a value: durations in milliseconds.
    pub fn contract_value(knob: &'static str, v: &Given) -> String {
        let ms = crate::knob::knob(knob).is_some_and(|k| k.unit == Unit::Duration);
        match v {
            Given::Number(n) if ms => format!("{} ms", units::compact(*n)),
            Given::Number(n) => units::compact(*n),
            Given::Whole(n) => format!("{n}"),
            Given::Text(t) => t.clone(),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|k| k.to_string(), &PolicyError::contract_value))
    }
}

impl std::error::Error for PolicyError {}

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

/// What [`Policy::deadline_hint`] reports: `max_attempts` attempts' waits, at the nominal
/// backoff (the ceilings, before jitter), do not fit the deadline. Its Display is the one
/// wording every host shows (repr/inspect, and appended to an exhaustion by `deadline`):
/// `max_attempts=10 needs up to 26.2 s of backoff waits (before jitter), deadline is 15 s:
/// raise deadline or lower max_attempts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineHint {
    /// The policy's max_attempts.
    pub max_attempts: u32,
    /// The sum of the nominal waits between those attempts (a lower bound when the sum
    /// was cut short: enough to pass the deadline).
    pub waits: Duration,
    /// The policy's deadline.
    pub deadline: Duration,
}

impl DeadlineHint {
    /// The hint in `spelling`'s knob names and unit: Node reads `maxAttempts=10 needs up
    /// to 26200 ms of backoff waits (before jitter), deadlineMs is 15000 ms: raise
    /// deadlineMs or lower maxAttempts`; C the same with `max_attempts` and `deadline_ms`.
    pub fn render(&self, spelling: Spelling) -> String {
        let (attempts, deadline) = (spelling.name("max_attempts"), spelling.name("deadline"));
        // Whole milliseconds: the waits are sums of whole-millisecond ceilings.
        let span = |d: Duration| spelling.span_ms(d.as_millis() as f64);
        format!(
            "{attempts}={} needs up to {} of backoff waits (before jitter), {deadline} is {}: raise {deadline} or lower {attempts}",
            self.max_attempts,
            span(self.waits),
            span(self.deadline)
        )
    }
}

impl fmt::Display for DeadlineHint {
    /// The hint in Rust's words (the contract's names, seconds).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

impl Policy {
    /// Whether `max_attempts` cannot fit the deadline at the nominal backoff: the sum of
    /// the backoff ceilings of the `max_attempts - 1` waits (before jitter, hints aside)
    /// is longer than the deadline. `None` when it fits, or with no deadline. Advice for
    /// people (a ported `max_attempts=10` cut short by the 15 s default deadline), never
    /// a decision: the engine goes on deciding each wait as it comes. `None` for a
    /// hedging policy, whose attempts follow the hedging delay, not the backoff.
    pub fn deadline_hint(&self) -> Option<DeadlineHint> {
        if self.hedge.is_some() {
            return None;
        }
        let deadline = self.deadline?;
        let limit = deadline.as_millis();
        let waits = self.max_attempts.saturating_sub(1);
        let mut sum: u128 = 0;
        let mut failed = 1;
        while failed <= waits && sum <= limit {
            let ceiling = crate::backoff::ceiling_ms(self, failed);
            if ceiling >= self.max_delay_ms || self.multiplier == 1.0 || failed >= 10_000 {
                // Constant from here on (or, after many tiny steps, at least this each,
                // which keeps the sum a lower bound): the rest in one multiplication.
                sum += u128::from(ceiling) * u128::from(waits - failed + 1);
                break;
            }
            sum += u128::from(ceiling);
            failed += 1;
        }
        (sum > limit).then(|| DeadlineHint {
            max_attempts: self.max_attempts,
            waits: Duration::from_millis(u64::try_from(sum).unwrap_or(u64::MAX)),
            deadline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_starts_on_the_coarse_clock_only_under_bounds_of_a_second_or_more() {
        let ms = Duration::from_millis;
        let with = |deadline: Option<Duration>, timeout: Option<Duration>| {
            Policy::builder().deadline(deadline).attempt_timeout(timeout).build().unwrap().tolerates_coarse_start()
        };
        assert!(with(Some(ms(15_000)), None), "the default 15 s deadline");
        assert!(with(Some(ms(1000)), Some(ms(1000))));
        assert!(!with(Some(ms(999)), None), "a tick of 10 ms would be over 1% of it");
        assert!(!with(Some(ms(15_000)), Some(ms(250))));
        let breaker =
            Arc::new(crate::breaker::CircuitBreaker::new(crate::breaker::BreakerConfig::consecutive(5)).unwrap());
        let shared = Policy::builder().breaker(Some(breaker)).build().unwrap();
        assert!(!shared.tolerates_coarse_start(), "a breaker keeps time with other calls");
    }

    #[test]
    fn the_deadline_hint_names_both_knobs_when_the_backoff_cannot_fit() {
        // Defaults: 200 ms doubling to the 5 s cap; 9 waits = 0.2+0.4+0.8+1.6+3.2+4*5 = 26.2 s.
        let ten = Policy::builder().max_attempts(10).build().unwrap();
        let hint = ten.deadline_hint().expect("26.2 s of waits do not fit 15 s");
        assert_eq!(hint.waits, Duration::from_millis(26_200));
        assert_eq!(
            hint.to_string(),
            "max_attempts=10 needs up to 26.2 s of backoff waits (before jitter), deadline is 15 s: raise deadline or lower max_attempts"
        );
        assert_eq!(
            hint.render(Spelling::Node),
            "maxAttempts=10 needs up to 26200 ms of backoff waits (before jitter), deadlineMs is 15000 ms: raise deadlineMs or lower maxAttempts"
        );
        assert_eq!(
            hint.render(Spelling::C),
            "max_attempts=10 needs up to 26200 ms of backoff waits (before jitter), deadline_ms is 15000 ms: raise deadline_ms or lower max_attempts"
        );
        assert_eq!(hint.render(Spelling::Python), hint.to_string());
        assert_eq!(Policy::default().deadline_hint(), None, "5 attempts: 6.2 s of waits fit");
        assert_eq!(Policy::builder().max_attempts(10).deadline(None).build().unwrap().deadline_hint(), None);
        // Exactly the deadline fits.
        let exact = Policy::builder().max_attempts(3).initial_delay_ms(100.0).deadline_ms(Some(300.0)).build().unwrap();
        assert_eq!(exact.deadline_hint(), None);
        let over = Policy::builder().max_attempts(3).initial_delay_ms(100.0).deadline_ms(Some(299.0)).build().unwrap();
        assert_eq!(over.deadline_hint().map(|h| h.waits), Some(Duration::from_millis(300)));
        // Huge max_attempts: no overflow, no four-billion-step loop.
        let huge = Policy::builder().max_attempts(u64::from(u32::MAX)).multiplier(1.0).build().unwrap();
        assert!(huge.deadline_hint().is_some());
        let zero = Policy::builder().max_attempts(u64::from(u32::MAX)).initial_delay_ms(0.0).build().unwrap();
        assert_eq!(zero.deadline_hint(), None);
    }

    #[test]
    fn defaults_are_the_contracts() {
        let p = Policy::default();
        assert_eq!(p.max_attempts(), 5);
        assert_eq!(p.initial_delay(), Duration::from_millis(200));
        assert_eq!(p.multiplier(), 2.0);
        assert_eq!(p.max_delay(), Duration::from_secs(5));
        assert_eq!(p.jitter(), Jitter::Full);
        assert_eq!(p.deadline(), Some(Duration::from_secs(15)));
        assert!(p.budget().is_none());
        assert_eq!(p.name(), "retry");
        assert_eq!(p.seed(), None);
        assert_eq!(p.attempt_timeout(), None);
    }

    #[test]
    fn an_attempts_bound_is_the_deadline_or_the_sooner_attempt_timeout() {
        let ms = Duration::from_millis;
        let build = |deadline: Option<u64>, timeout: Option<u64>| {
            Policy::builder().deadline(deadline.map(ms)).attempt_timeout(timeout.map(ms)).build().unwrap()
        };
        // Call started at 1000, this attempt at 1800.
        let at = |p: &Policy| p.attempt_deadline(ms(1000), ms(1800));
        assert_eq!(at(&build(None, None)), None);
        assert!(!build(None, None).bounds_attempts());
        assert_eq!(at(&build(Some(2000), None)), Some(ms(3000)));
        assert_eq!(at(&build(None, Some(500))), Some(ms(2300)));
        assert_eq!(at(&build(Some(2000), Some(500))), Some(ms(2300)));
        assert_eq!(at(&build(Some(1000), Some(500))), Some(ms(2000)));
        assert!(build(None, Some(500)).bounds_attempts());
        // Huge values saturate instead of overflowing.
        let far = Policy::builder().deadline_ms(Some(9e15)).attempt_timeout_ms(Some(9e15)).build().unwrap();
        assert!(far.attempt_deadline(Duration::MAX, Duration::MAX).is_some());
    }

    #[test]
    fn every_bad_knob_is_named_with_its_value() {
        let cases: Vec<(PolicyBuilder, &str, &str)> = vec![
            (Policy::builder().max_attempts(0), "max_attempts", "got 0"),
            (Policy::builder().max_attempts(1 << 40), "max_attempts", "got 1099511627776"),
            (Policy::builder().initial_delay_ms(-1.0), "initial_delay", "got -1 ms"),
            (Policy::builder().initial_delay_ms(f64::NAN), "initial_delay", "got NaN ms"),
            (Policy::builder().max_delay_ms(f64::INFINITY), "max_delay", "got inf ms"),
            (Policy::builder().initial_delay_ms(2000.0).max_delay_ms(1000.0), "max_delay", "initial_delay is 2000 ms"),
            (Policy::builder().multiplier(0.5), "multiplier", "got 0.5"),
            (Policy::builder().multiplier(f64::NAN), "multiplier", "got NaN"),
            (Policy::builder().jitter(Jitter::Proportional(1.5)), "jitter", "proportional(1.5)"),
            (Policy::builder().deadline_ms(Some(-5.0)), "deadline", "got -5 ms"),
            (Policy::builder().attempt_timeout_ms(Some(0.0)), "attempt_timeout", "must be finite and > 0"),
            (Policy::builder().attempt_timeout_ms(Some(f64::NAN)), "attempt_timeout", "got NaN ms"),
            // Finite but past the limit: the message must say there is one.
            (Policy::builder().deadline_ms(Some(1e16)), "deadline", "at most about 285,000 years), got 1e16 ms"),
        ];
        for (builder, knob, fragment) in cases {
            let err = builder.build().unwrap_err();
            assert_eq!(err.knob, knob);
            let msg = err.to_string();
            assert!(msg.starts_with(knob), "{msg}");
            assert!(msg.contains(fragment), "{msg} lacks {fragment}");
        }
    }

    #[test]
    fn every_numeric_knob_can_be_set_generically() {
        for k in knob::numeric() {
            let value = match k.default {
                knob::Default::Number(n) => n,
                // Off by default: any valid value reads back.
                knob::Default::Off if k.can_be_off => 250.0,
                _ => panic!("{} is numeric without a numeric default", k.name),
            };
            let b = Policy::builder().set(k.name, Setting::Number(value)).unwrap();
            assert_eq!(b.build().unwrap().number(k.name), Some(value), "{} reads back", k.name);
            let off = Policy::builder().set(k.name, Setting::Off);
            assert_eq!(off.is_ok(), k.can_be_off, "{}", k.name);
        }
        let err = Policy::builder().set("max_attempts", Setting::Number(1.5)).unwrap_err();
        assert_eq!(err.to_string(), "max_attempts must be >= 1 and <= 4294967295, got 1.5");
        // A count too large for u64 is reported as given, not as the saturated u64::MAX.
        let err = Policy::builder().set("max_attempts", Setting::Number(1e300)).unwrap_err();
        assert_eq!(err.value, Given::Number(1e300));
        let err = Policy::builder().set("max_attempts", Setting::Number(2f64.powi(32))).unwrap_err();
        assert_eq!(err.to_string(), "max_attempts must be >= 1 and <= 4294967295, got 4294967296");
        let p = Policy::builder().set("deadline", Setting::Off).unwrap().build().unwrap();
        assert_eq!(p.deadline(), None);
    }

    #[test]
    fn every_numeric_knob_obeys_its_table_rule_through_set_and_build() {
        // What a host does: set, then build. A knob whose hand-written check in `build`
        // disagrees with its table rule (which hosts print as the requirement), or whose
        // error misquotes the value, fails here.
        let check = |name: &str, value: Setting| Policy::builder().set(name, value).and_then(PolicyBuilder::build);
        for k in knob::numeric() {
            let bad: Vec<(Setting, &str)> = match k.rule {
                Rule::Whole { min, max } => {
                    assert!(
                        check(k.name, Setting::Whole(min)).is_ok()
                            && check(k.name, Setting::Number(max as f64)).is_ok()
                    );
                    let mut bad = vec![
                        (Setting::Number(min as f64 + 0.5), ""),
                        (Setting::Whole(u64::MAX), "18446744073709551615"),
                    ];
                    if max < u64::MAX {
                        bad.push((Setting::Whole(max + 1), ""));
                    }
                    if min > 0 {
                        bad.push((Setting::Number(min as f64 - 1.0), ""));
                    }
                    bad
                }
                Rule::AtLeast { min } => {
                    assert!(check(k.name, Setting::Number(min)).is_ok(), "{}", k.name);
                    vec![(Setting::Number(min - 0.5), ""), (Setting::Number(f64::NAN), "NaN")]
                }
                Rule::Duration { not_below } => {
                    let floor = not_below.and_then(|o| Policy::default().number(o)).unwrap_or(0.0);
                    assert!(check(k.name, Setting::Number(floor)).is_ok(), "{}", k.name);
                    vec![(Setting::Number(-1.0), "-1"), (Setting::Number(f64::INFINITY), "inf")]
                }
                Rule::Positive => {
                    assert!(check(k.name, Setting::Number(0.001)).is_ok(), "{}", k.name);
                    vec![
                        (Setting::Number(0.0), "got 0"),
                        (Setting::Number(-1.0), "-1"),
                        (Setting::Number(f64::INFINITY), "inf"),
                        (Setting::Number(f64::NAN), "NaN"),
                        (Setting::Number(1e16), "1e16"),
                    ]
                }
                Rule::Jitter | Rule::Any => vec![],
            };
            for (value, quoted) in bad {
                let err = check(k.name, value).unwrap_err();
                assert_eq!(err.knob, k.name, "{value:?}");
                // The table's rule, or for a delay its plain range (-1 is not finite-and->=0,
                // whatever it must also be >=).
                let plain = matches!(k.rule, Rule::Duration { .. }) && err.rule == Rule::Duration { not_below: None };
                assert!(err.rule == k.rule || plain, "{}: reported {:?}", k.name, err.rule);
                assert!(err.to_string().contains(quoted), "{err} should quote {quoted}");
            }
        }
    }

    #[test]
    fn errors_render_in_a_hosts_names_and_units() {
        let err = Policy::builder().initial_delay_ms(2000.0).max_delay_ms(1000.0).build().unwrap_err();
        let node = err.render(&|k| knob::knob(k).unwrap().camel_ms(), &|_, v| match v {
            Given::Number(n) => format!("{n}"),
            other => format!("{other:?}"),
        });
        assert_eq!(node, "maxDelayMs must be >= initialDelayMs, got 1000 (initialDelayMs is 2000)");
        assert_eq!(err.to_string(), "max_delay must be >= initial_delay, got 1000 ms (initial_delay is 2000 ms)");
        // Huge and tiny numbers in exponent form (what C's retryrs_last_error shows), not
        // written out in 301 digits.
        let err = Policy::builder().initial_delay_ms(1e300).max_delay_ms(1e300).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "initial_delay must be finite and >= 0 (at most about 285,000 years), got 1e300 ms"
        );
        let err = Policy::builder().multiplier(1e-7).build().unwrap_err();
        assert_eq!(err.to_string(), "multiplier must be finite and >= 1, got 1e-7");
    }

    #[test]
    fn the_defaults_are_the_tables() {
        let p = Policy::default();
        let get = |name: &str| match knob::knob(name).unwrap().default {
            knob::Default::Number(n) => n,
            _ => panic!(),
        };
        assert_eq!(f64::from(p.max_attempts()), get("max_attempts"));
        assert_eq!(p.initial_delay().as_secs_f64() * 1000.0, get("initial_delay"));
        assert_eq!(p.multiplier(), get("multiplier"));
        assert_eq!(p.max_delay().as_secs_f64() * 1000.0, get("max_delay"));
        assert_eq!(p.deadline().unwrap().as_secs_f64() * 1000.0, get("deadline"));
    }

    #[test]
    fn a_builder_from_a_policy_rebuilds_it() {
        let p = Policy::builder()
            .max_attempts(7)
            .initial_delay_ms(0.5)
            .max_delay_ms(900.0)
            .multiplier(1.5)
            .jitter(Jitter::Equal)
            .deadline_ms(Some(1234.0))
            .max_retry_after(None)
            .attempt_timeout_ms(Some(250.0))
            .name("rates")
            .seed(Some(9))
            .build()
            .unwrap();
        let again = PolicyBuilder::from(&p).build().unwrap();
        assert_eq!(format!("{again:?}"), format!("{p:?}"));
        let other = PolicyBuilder::from(&p).attempt_timeout(None).build().unwrap();
        assert_eq!((other.attempt_timeout(), other.max_attempts()), (None, 7));
    }

    #[test]
    fn edge_values_are_accepted() {
        let p = Policy::builder()
            .max_attempts(1)
            .initial_delay_ms(0.0)
            .max_delay_ms(0.0)
            .multiplier(1.0)
            .jitter(Jitter::Proportional(1.0))
            .deadline(None)
            .build()
            .unwrap();
        assert_eq!(p.max_attempts(), 1);
        assert_eq!(p.deadline(), None);
    }

    #[test]
    fn jitter_spellings_round_trip() {
        for j in [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated, Jitter::Proportional(0.25)] {
            assert_eq!(j.spelling().parse::<Jitter>().unwrap(), j);
        }
        assert_eq!(" Proportional:0.5 ".parse::<Jitter>().unwrap(), Jitter::Proportional(0.5));
        for bad in ["", "fulll", "proportional(2)", "proportional(x)", "proportional(-0.1)"] {
            let err = bad.parse::<Jitter>().unwrap_err();
            assert_eq!(err.knob, "jitter", "{bad}");
        }
    }
}
