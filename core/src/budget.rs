//! Retry budgets, shared by every call that uses them, so a fleet of clients stops
//! multiplying load on a server that is already failing: the token bucket of gRPC's retry
//! throttling ([`RetryBudget`]), the AWS SDKs' standard retry quota ([`QuotaBudget`]) and
//! Finagle's windowed ratio budget ([`RatioBudget`]).

use crate::fork_lock::{ForkGuard, ForkLock};
use crate::spelling::Spelling;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Tokens are kept in thousandths (as gRPC does), so a ratio such as 0.1 adds exactly.
const SCALE: f64 = 1000.0;

/// `x` in thousandths, truncated as gRPC truncates `tokenRatio` to 3 decimals. Truncates
/// the decimal the user wrote (the shortest text that reads back as `x`), not the binary
/// product: `1.005 * 1000` is 1004.999... in IEEE doubles, but 1.005 keeps 1.005.
pub(crate) fn thousandths(x: f64) -> u64 {
    // `{}` never uses an exponent for f64, so the text is digits, a point, digits.
    let text = x.to_string();
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac: String = frac.chars().chain("000".chars()).take(3).collect();
    let whole: u64 = whole.parse().unwrap_or(u64::MAX / 1000);
    whole.saturating_mul(1000).saturating_add(frac.parse::<u64>().unwrap_or(0))
}

/// Error building a [`RetryBudget`] from out-of-range numbers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BudgetError {
    /// `max_tokens` or `token_ratio`.
    pub knob: &'static str,
    /// The value as given (a duration in milliseconds).
    pub value: f64,
    /// The rule it broke.
    pub requirement: &'static str,
}

/// The settings a budget's or a breaker's rule may name beside its own.
const OTHER_SETTINGS: &[&str] = &["max_tokens", "break_duration"];

impl BudgetError {
    /// The error in `spelling`'s names and unit: the setting and any other the rule names
    /// (`tokenRatio must be > 0 and <= maxTokens` in Node), a duration's value in the
    /// host's unit (`breakDurationMs must be >= 1 ms and <= 1 day, got 0 ms`).
    pub fn render(&self, spelling: Spelling) -> String {
        let value = if Spelling::is_duration(self.knob) {
            spelling.span_ms(self.value)
        } else {
            crate::units::compact(self.value)
        };
        format!(
            "{} must be {}, got {value}",
            spelling.name(self.knob),
            spelling.respell(self.requirement, OTHER_SETTINGS)
        )
    }
}

impl std::fmt::Display for BudgetError {
    /// The error in Rust's words (the contract's names, durations in seconds).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

impl std::error::Error for BudgetError {}

/// A thread-safe, lock-free token bucket (gRPC A6 retry throttling). It starts full at
/// `max_tokens`; each transient failure costs one token; each success adds `token_ratio`
/// (capped at `max_tokens`); a retry is allowed only while tokens > `max_tokens / 2`.
#[derive(Debug)]
pub struct TokenBucket {
    milli_tokens: AtomicU64,
    max_milli: u64,
    ratio_milli: u64,
}

impl TokenBucket {
    /// A full bucket. `max_tokens` in [0.001, 1e12], `token_ratio` in [0.001, max_tokens].
    /// Both keep 3 decimals, truncated (gRPC's rule): 0.1239 adds 0.123 per success, and a
    /// value that truncates to 0 (such as 1e-9) is an error naming it, not a bucket that
    /// silently never allows a retry.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Self, BudgetError> {
        if !(max_tokens.is_finite() && max_tokens > 0.0 && max_tokens <= 1e12) {
            return Err(BudgetError { knob: "max_tokens", value: max_tokens, requirement: "> 0 and <= 1e12" });
        }
        if !(token_ratio.is_finite() && token_ratio > 0.0) {
            return Err(BudgetError { knob: "token_ratio", value: token_ratio, requirement: "> 0 and <= max_tokens" });
        }
        let max_milli = thousandths(max_tokens);
        if max_milli == 0 {
            let requirement = ">= 0.001 (it keeps 3 decimals, truncated)";
            return Err(BudgetError { knob: "max_tokens", value: max_tokens, requirement });
        }
        let ratio_milli = thousandths(token_ratio);
        if ratio_milli == 0 {
            let requirement = ">= 0.001 (it keeps 3 decimals, truncated)";
            return Err(BudgetError { knob: "token_ratio", value: token_ratio, requirement });
        }
        if ratio_milli > max_milli {
            return Err(BudgetError { knob: "token_ratio", value: token_ratio, requirement: "> 0 and <= max_tokens" });
        }
        Ok(TokenBucket { milli_tokens: AtomicU64::new(max_milli), max_milli, ratio_milli })
    }

    /// gRPC's `retryThrottling` bucket, whose rules are gRPC's: the caller has checked
    /// `max_tokens` (a whole number in (0, 1000]) and `token_ratio` (> 0). Unlike
    /// [`TokenBucket::new`] a ratio above `max_tokens` is fine (a success refills the
    /// bucket), and so is one that three decimals truncate to 0 (successes add nothing):
    /// gRPC accepts both.
    #[cfg(feature = "documents")]
    pub(crate) fn grpc(max_tokens: f64, token_ratio: f64) -> Self {
        let max_milli = thousandths(max_tokens);
        TokenBucket { milli_tokens: AtomicU64::new(max_milli), max_milli, ratio_milli: thousandths(token_ratio) }
    }

    /// Tokens left now.
    pub fn tokens(&self) -> f64 {
        self.milli_tokens.load(Ordering::Relaxed) as f64 / SCALE
    }

    /// The bucket's size.
    pub fn max_tokens(&self) -> f64 {
        self.max_milli as f64 / SCALE
    }

    /// What each success adds back.
    pub fn token_ratio(&self) -> f64 {
        self.ratio_milli as f64 / SCALE
    }

    /// A transient failure: one token less, never below zero.
    pub fn record_failure(&self) {
        self.update(|t| t.saturating_sub(SCALE as u64));
    }

    /// A success: `token_ratio` more, never above the maximum.
    pub fn record_success(&self) {
        let max = self.max_milli;
        let ratio = self.ratio_milli;
        self.update(|t| t.saturating_add(ratio).min(max));
    }

    /// Whether a retry may go ahead now: tokens > max_tokens / 2.
    pub fn allows_retry(&self) -> bool {
        // Compare doubled values so an odd maximum needs no rounding.
        self.milli_tokens.load(Ordering::Relaxed).saturating_mul(2) > self.max_milli
    }

    fn update(&self, f: impl Fn(u64) -> u64) {
        // fetch_update retries the CAS until it lands; the closure never fails.
        let _ = self.milli_tokens.fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(f(t)));
    }
}

/// Which model a [`RetryBudget`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetKind {
    /// gRPC's retry throttling ([`TokenBucket`]), the default.
    TokenBucket,
    /// The AWS SDKs' standard retry quota ([`QuotaBudget`]).
    Quota,
    /// Finagle's windowed ratio ([`RatioBudget`]).
    Ratio,
}

impl BudgetKind {
    /// `token_bucket`, `quota` or `ratio` (the policy documents' `kind`).
    pub fn as_str(&self) -> &'static str {
        match self {
            BudgetKind::TokenBucket => "token_bucket",
            BudgetKind::Quota => "quota",
            BudgetKind::Ratio => "ratio",
        }
    }
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A retry budget shared by every call that uses it (`Arc<RetryBudget>` in a policy): one
/// of the three models in production use, chosen when it is built. The engine asks it
/// through [`RetryBudget::call_started`], [`RetryBudget::attempt_failed`],
/// [`RetryBudget::try_retry`] and [`RetryBudget::call_succeeded`]; each model answers by
/// its own source's rules.
#[derive(Debug)]
pub struct RetryBudget {
    model: Model,
}

#[derive(Debug)]
enum Model {
    TokenBucket(TokenBucket),
    Quota(QuotaBudget),
    Ratio(RatioBudget),
}

impl RetryBudget {
    /// A full token bucket (see [`TokenBucket::new`]): today's budget, gRPC's rule.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Self, BudgetError> {
        TokenBucket::new(max_tokens, token_ratio).map(Self::from)
    }

    /// Which model it follows.
    pub fn kind(&self) -> BudgetKind {
        match self.model {
            Model::TokenBucket(_) => BudgetKind::TokenBucket,
            Model::Quota(_) => BudgetKind::Quota,
            Model::Ratio(_) => BudgetKind::Ratio,
        }
    }

    /// The token bucket, when it is one.
    pub fn as_token_bucket(&self) -> Option<&TokenBucket> {
        match &self.model {
            Model::TokenBucket(b) => Some(b),
            _ => None,
        }
    }

    /// The AWS quota, when it is one.
    pub fn as_quota(&self) -> Option<&QuotaBudget> {
        match &self.model {
            Model::Quota(q) => Some(q),
            _ => None,
        }
    }

    /// Finagle's ratio budget, when it is one.
    pub fn as_ratio(&self) -> Option<&RatioBudget> {
        match &self.model {
            Model::Ratio(r) => Some(r),
            _ => None,
        }
    }

    /// What is left now, in each model's own unit: a token bucket's tokens, a quota's
    /// capacity left, a ratio budget's retries (its balance when it last saw a call).
    pub fn tokens(&self) -> f64 {
        match &self.model {
            Model::TokenBucket(b) => b.tokens(),
            Model::Quota(q) => q.available() as f64,
            Model::Ratio(r) => r.last_balance() as f64,
        }
    }

    /// A token bucket's size; a quota's capacity; NaN for a ratio budget (it has none).
    pub fn max_tokens(&self) -> f64 {
        match &self.model {
            Model::TokenBucket(b) => b.max_tokens(),
            Model::Quota(q) => q.capacity() as f64,
            Model::Ratio(_) => f64::NAN,
        }
    }

    /// A token bucket's `token_ratio`; NaN for the other models (they have none).
    pub fn token_ratio(&self) -> f64 {
        match &self.model {
            Model::TokenBucket(b) => b.token_ratio(),
            _ => f64::NAN,
        }
    }

    /// Token bucket only: a transient failure (see [`TokenBucket::record_failure`]).
    pub fn record_failure(&self) {
        if let Model::TokenBucket(b) = &self.model {
            b.record_failure();
        }
    }

    /// Token bucket only: a success (see [`TokenBucket::record_success`]).
    pub fn record_success(&self) {
        if let Model::TokenBucket(b) = &self.model {
            b.record_success();
        }
    }

    /// Token bucket only: whether a retry may go now (the others decide in
    /// [`RetryBudget::try_retry`], which takes what the retry costs).
    pub fn allows_retry(&self) -> bool {
        match &self.model {
            Model::TokenBucket(b) => b.allows_retry(),
            Model::Quota(q) => q.has_retry_tokens(RetryCause::Failure),
            Model::Ratio(_) => true,
        }
    }

    /// A call starts at `now`: Finagle deposits.
    #[inline]
    pub fn call_started(&self, now: Duration) {
        if let Model::Ratio(r) = &self.model {
            r.deposit(now);
        }
    }

    /// An attempt failed transiently: the token bucket loses a token.
    #[inline]
    pub fn attempt_failed(&self) {
        self.record_failure();
    }

    /// May a retry go at `now`? `Some(cost)`: yes, and what it took (a quota's cost, kept
    /// by the call for [`RetryBudget::call_succeeded`]; 0 for the other models); `None`:
    /// no, and nothing was taken.
    #[inline]
    pub fn try_retry(&self, now: Duration) -> Option<u64> {
        self.try_retry_after(RetryCause::Failure, now)
    }

    /// [`RetryBudget::try_retry`] for a retry that follows `cause`: a quota charges a
    /// timeout its `timeout_retry_cost` (the AWS SDKs' 10, against 5); the other models
    /// price every retry alike.
    #[inline]
    pub fn try_retry_after(&self, cause: RetryCause, now: Duration) -> Option<u64> {
        match &self.model {
            Model::TokenBucket(b) => b.allows_retry().then_some(0),
            Model::Quota(q) => q.try_acquire(cause),
            Model::Ratio(r) => r.try_withdraw(now).then_some(0),
        }
    }

    /// A call succeeded; `last_retry_cost` is what its last retry's [`RetryBudget::try_retry`]
    /// returned (`None`: it succeeded without a retry).
    #[inline]
    pub fn call_succeeded(&self, last_retry_cost: Option<u64>) {
        match &self.model {
            Model::TokenBucket(b) => b.record_success(),
            Model::Quota(q) => q.record_success(last_retry_cost),
            Model::Ratio(_) => {}
        }
    }
}

impl From<TokenBucket> for RetryBudget {
    fn from(b: TokenBucket) -> Self {
        RetryBudget { model: Model::TokenBucket(b) }
    }
}

impl From<QuotaBudget> for RetryBudget {
    fn from(q: QuotaBudget) -> Self {
        RetryBudget { model: Model::Quota(q) }
    }
}

impl From<RatioBudget> for RetryBudget {
    fn from(r: RatioBudget) -> Self {
        RetryBudget { model: Model::Ratio(r) }
    }
}

/// What a retry follows, for [`QuotaBudget`]'s price of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryCause {
    /// Any retryable failure but a timeout.
    Failure,
    /// A timeout or a connection failure (middleware-retry's `TimeoutError`, util-retry's
    /// `TRANSIENT` error type).
    Timeout,
}

impl RetryCause {
    /// The cause of a retry after an attempt that did (`true`) or did not time out: what a
    /// host that reports "timed out" as a flag or a verdict code passes to
    /// [`Call::record_as`](crate::Call::record_as).
    #[inline]
    pub fn from_timed_out(timed_out: bool) -> RetryCause {
        if timed_out {
            RetryCause::Timeout
        } else {
            RetryCause::Failure
        }
    }
}

/// The AWS SDKs' standard-mode retry quota, shared by every call that uses it: a capacity
/// (500) that starts full; a retry is allowed only while the capacity left covers its cost
/// (5, or 10 after a timeout), and takes it; a call that succeeds gives back the cost of
/// the retry that led to the success, or 1 when it succeeded without a retry, never past
/// the capacity. A call that fails for good gives nothing back. So in a total outage with
/// the SDKs' 3 attempts a client makes 100 retries (50 calls' worth), then none until
/// successes refill it. Whole tokens, lock-free.
///
/// Checked against aws-sdk-js-v3 (`middleware-retry/src/defaultRetryQuota.ts`, and
/// `util-retry`'s `StandardRetryStrategy`: `INITIAL_RETRY_TOKENS` 500, `RETRY_COST` 5,
/// `TIMEOUT_RETRY_COST` 10, `NO_RETRY_INCREMENT` 1, a retry while `cost <= capacity`, a
/// success adding `min(capacity + (lastRetryCost ?? 1), 500)`). Not modelled: the SDKs'
/// opt-in 2026 retry behaviour (`AWS_NEW_RETRIES_2026`: 14 per retry, 5 after throttling).
#[derive(Debug)]
pub struct QuotaBudget {
    available: AtomicU64,
    capacity: u64,
    retry_cost: u64,
    timeout_retry_cost: u64,
    no_retry_increment: u64,
}

/// The largest number any quota knob accepts.
const QUOTA_MAX: u64 = 1_000_000_000_000;

impl QuotaBudget {
    /// The SDKs' capacity (`INITIAL_RETRY_TOKENS`).
    pub const AWS_CAPACITY: u64 = 500;
    /// The SDKs' cost of a retry (`RETRY_COST`).
    pub const AWS_RETRY_COST: u64 = 5;
    /// The SDKs' cost of a retry after a timeout (`TIMEOUT_RETRY_COST`).
    pub const AWS_TIMEOUT_RETRY_COST: u64 = 10;
    /// What the SDKs give back for a success without a retry (`NO_RETRY_INCREMENT`).
    pub const AWS_NO_RETRY_INCREMENT: u64 = 1;

    /// The SDKs' standard quota: 500, 5, 10, 1.
    pub fn aws_standard() -> Self {
        QuotaBudget {
            available: AtomicU64::new(Self::AWS_CAPACITY),
            capacity: Self::AWS_CAPACITY,
            retry_cost: Self::AWS_RETRY_COST,
            timeout_retry_cost: Self::AWS_TIMEOUT_RETRY_COST,
            no_retry_increment: Self::AWS_NO_RETRY_INCREMENT,
        }
    }

    /// A full quota with the SDKs' knobs (`initialRetryTokens`, `retryCost`,
    /// `timeoutRetryCost`, `noRetryIncrement`): `capacity` and both costs in [1, 1e12],
    /// `no_retry_increment` in [0, 1e12].
    pub fn new(
        capacity: u64,
        retry_cost: u64,
        timeout_retry_cost: u64,
        no_retry_increment: u64,
    ) -> Result<Self, BudgetError> {
        let check = |knob: &'static str, value: u64, min: u64| {
            if value < min || value > QUOTA_MAX {
                let requirement = if min == 0 { "a whole number in [0, 1e12]" } else { "a whole number in [1, 1e12]" };
                return Err(BudgetError { knob, value: value as f64, requirement });
            }
            Ok(())
        };
        check("capacity", capacity, 1)?;
        check("retry_cost", retry_cost, 1)?;
        check("timeout_retry_cost", timeout_retry_cost, 1)?;
        check("no_retry_increment", no_retry_increment, 0)?;
        Ok(QuotaBudget {
            available: AtomicU64::new(capacity),
            capacity,
            retry_cost,
            timeout_retry_cost,
            no_retry_increment,
        })
    }

    /// The capacity left now.
    pub fn available(&self) -> u64 {
        self.available.load(Ordering::Relaxed)
    }

    /// The most it holds (and what it starts with).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// What a retry after `cause` costs.
    pub fn cost(&self, cause: RetryCause) -> u64 {
        match cause {
            RetryCause::Failure => self.retry_cost,
            RetryCause::Timeout => self.timeout_retry_cost,
        }
    }

    /// Whether a retry after `cause` would be allowed now (the SDKs' `hasRetryTokens`).
    pub fn has_retry_tokens(&self, cause: RetryCause) -> bool {
        self.cost(cause) <= self.available()
    }

    /// Takes the cost of a retry after `cause` if the capacity left covers it, and returns
    /// it (the call keeps it for [`QuotaBudget::record_success`]); `None`: no retry (the
    /// SDKs' "No retry token available"), and nothing taken.
    pub fn try_acquire(&self, cause: RetryCause) -> Option<u64> {
        let cost = self.cost(cause);
        self.available.fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| a.checked_sub(cost)).ok().map(|_| cost)
    }

    /// A call succeeded: gives back the cost of the retry that led to the success (the last
    /// one [`QuotaBudget::try_acquire`] returned for this call), or `no_retry_increment`
    /// when it succeeded without a retry; never past the capacity.
    pub fn record_success(&self, last_retry_cost: Option<u64>) {
        let back = last_retry_cost.unwrap_or(self.no_retry_increment);
        let capacity = self.capacity;
        let _ = self
            .available
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| Some(a.saturating_add(back).min(capacity)));
    }
}

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

#[cfg(test)]
mod quota_tests {
    use super::*;
    use std::sync::Arc;

    use RetryCause::{Failure, Timeout};

    /// aws-sdk-js-v3's `getDrainedRetryQuota`: retrieves while the tracked capacity covers
    /// `cost`.
    fn drained(q: &QuotaBudget, cause: RetryCause) {
        let cost = q.cost(cause);
        let mut tracked = q.capacity();
        while tracked >= cost {
            assert_eq!(q.try_acquire(cause), Some(cost));
            tracked -= cost;
        }
    }

    #[test]
    fn the_sdk_numbers() {
        let q = QuotaBudget::aws_standard();
        assert_eq!((q.capacity(), q.available(), q.cost(Failure), q.cost(Timeout)), (500, 500, 5, 10));
        assert!(q.has_retry_tokens(Failure) && q.has_retry_tokens(Timeout));
        assert_eq!(q.try_acquire(Timeout), Some(10));
        assert_eq!(q.try_acquire(Failure), Some(5));
        assert_eq!(q.available(), 485);
    }

    #[test]
    fn drained_it_refuses_and_takes_nothing() {
        for cause in [Failure, Timeout] {
            let q = QuotaBudget::aws_standard();
            drained(&q, cause);
            assert!(!q.has_retry_tokens(cause));
            assert_eq!(q.try_acquire(cause), None);
            assert_eq!(q.available(), 0);
        }
        // A custom capacity of 100: 20 retries.
        let q = QuotaBudget::new(100, 5, 10, 1).unwrap();
        assert_eq!(std::iter::from_fn(|| q.try_acquire(Failure)).count(), 20);
        // A timeout may be refused where a plain retry is not.
        let q = QuotaBudget::aws_standard();
        for _ in 0..99 {
            q.try_acquire(Failure).unwrap();
        }
        assert_eq!(q.available(), 5);
        assert_eq!(q.try_acquire(Timeout), None);
        assert_eq!(q.try_acquire(Failure), Some(5));
    }

    #[test]
    fn a_success_gives_back_the_last_retrys_cost_or_one() {
        let q = QuotaBudget::aws_standard();
        drained(&q, Failure);
        q.record_success(Some(5));
        assert!(q.has_retry_tokens(Failure));
        assert_eq!(q.try_acquire(Failure), Some(5));
        assert!(!q.has_retry_tokens(Failure));
        // Without a retry: 1 each; 500 % 5 == 0, so 5 successes before the next retry.
        let q = QuotaBudget::aws_standard();
        drained(&q, Failure);
        for _ in 0..5 {
            assert!(!q.has_retry_tokens(Failure));
            q.record_success(None);
        }
        assert!(q.has_retry_tokens(Failure));
        // Never past the capacity: 100 successes on a full quota leave 500, 100 retries.
        let q = QuotaBudget::aws_standard();
        (0..100).for_each(|_| q.record_success(None));
        assert_eq!(q.available(), 500);
        assert_eq!(std::iter::from_fn(|| q.try_acquire(Failure)).count(), 100);
    }

    /// The SDK's call loop (`StandardRetryStrategy.retry`, 3 attempts by default): a retry
    /// while attempts < max and the quota allows; a success releases the last retry's cost.
    fn call(q: &QuotaBudget, outcomes: &[Result<(), RetryCause>]) -> (usize, bool) {
        let mut last = None;
        for (n, outcome) in outcomes.iter().enumerate() {
            let attempts = n + 1;
            match outcome {
                Ok(()) => {
                    q.record_success(last);
                    return (attempts, true);
                }
                Err(cause) => {
                    if attempts >= 3 {
                        return (attempts, false);
                    }
                    match q.try_acquire(*cause) {
                        Some(cost) => last = Some(cost),
                        None => return (attempts, false),
                    }
                }
            }
        }
        (outcomes.len(), false)
    }

    #[test]
    fn a_total_outage_allows_100_retries_then_none() {
        let q = QuotaBudget::aws_standard();
        let down = [Err(Failure); 3];
        let mut retries = 0;
        for _ in 0..200 {
            retries += call(&q, &down).0 - 1;
        }
        assert_eq!(retries, 100, "50 calls retried twice, 150 not at all");
        assert_eq!(q.available(), 0);
        // Timeouts cost 10: 50 retries.
        let q = QuotaBudget::aws_standard();
        let retries: usize = (0..200).map(|_| call(&q, &[Err(Timeout); 3]).0 - 1).sum();
        assert_eq!(retries, 50);
    }

    #[test]
    fn a_scripted_sequence_gives_the_sdks_capacities() {
        let q = QuotaBudget::aws_standard();
        let mut after = Vec::new();
        // Fail, retry after a timeout, succeed: takes 5 then 10, gives back 10 (the last).
        call(&q, &[Err(Failure), Err(Timeout), Ok(())]);
        after.push(q.available());
        // Success at once: +1.
        call(&q, &[Ok(())]);
        after.push(q.available());
        // Two failures then the third attempt fails: 2 retries taken, nothing back.
        call(&q, &[Err(Failure), Err(Failure), Err(Failure)]);
        after.push(q.available());
        // Fail then succeed: 5 taken, 5 back.
        call(&q, &[Err(Failure), Ok(())]);
        after.push(q.available());
        // Six successes at once: +1 each, capped at 500 on the last.
        for _ in 0..6 {
            call(&q, &[Ok(())]);
            after.push(q.available());
        }
        assert_eq!(after, [495, 496, 486, 486, 487, 488, 489, 490, 491, 492]);
        (0..10).for_each(|_| q.record_success(None));
        assert_eq!(q.available(), 500);
    }

    #[test]
    fn bad_knobs_are_named() {
        assert_eq!(QuotaBudget::new(0, 5, 10, 1).unwrap_err().knob, "capacity");
        assert_eq!(QuotaBudget::new(500, 0, 10, 1).unwrap_err().knob, "retry_cost");
        assert_eq!(QuotaBudget::new(500, 5, 0, 1).unwrap_err().knob, "timeout_retry_cost");
        let e = QuotaBudget::new(500, 5, 10, 2_000_000_000_000).unwrap_err();
        assert_eq!(e.to_string(), "no_retry_increment must be a whole number in [0, 1e12], got 2000000000000");
        assert!(QuotaBudget::new(500, 5, 10, 0).is_ok());
    }

    #[test]
    fn concurrent_retries_take_exactly_the_capacity() {
        let q = Arc::new(QuotaBudget::aws_standard());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || std::iter::from_fn(|| q.try_acquire(Failure)).count())
            })
            .collect();
        let taken: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(taken, 100);
        assert_eq!(q.available(), 0);
    }
}

#[cfg(test)]
mod ratio_tests {
    use super::*;

    const T0: Duration = Duration::from_secs(1_000);

    fn at(ms: u64) -> Duration {
        T0 + Duration::from_millis(ms)
    }

    /// Finagle's `RetryBudgetTest.testBudget` with time frozen: 10,000 calls, each one
    /// deposit and one try; returns the retries made. Where a try fails the balance is 0.
    fn frozen(ttl_s: u64, min: u32, percent: f64) -> i64 {
        let b = RatioBudget::new(Duration::from_secs(ttl_s), min, percent, T0).unwrap();
        let min_retries = ttl_s as i64 * i64::from(min);
        assert_eq!(b.balance(T0), min_retries);
        if min_retries == 0 {
            assert!(!b.try_withdraw(T0));
        }
        let mut retried = 0;
        for _ in 0..10_000 {
            b.deposit(T0);
            if b.try_withdraw(T0) {
                retried += 1;
            } else {
                assert_eq!(b.balance(T0), 0);
            }
        }
        retried
    }

    #[test]
    fn finagles_arithmetic_with_time_frozen() {
        // Finagle's own expectations ((10000 * percent).toInt + minRetries, +-1), made exact
        // by its integer arithmetic: retries = (10000 * 1000 + reserve) / withdrawal.
        let cases: [(u64, u32, f64, i64); 14] = [
            (60, 0, 0.1, 1000),     // withdrawal 10000
            (60, 0, 0.5, 5000),     // 2000
            (60, 0, 0.25, 2500),    // 4000
            (60, 0, 0.75, 7501),    // 1333 (1333.33 truncated): 10^7 / 1333
            (60, 0, 0.99, 9900),    // 1010 (1010.1 truncated)
            (60, 0, 0.999, 9990),   // 1001
            (60, 0, 0.9999, 10000), // 1000 (1000.1 truncated)
            (60, 0, 0.01, 100),     // 100000
            (60, 0, 0.001, 10),     // 1000000
            (60, 0, 0.0001, 1),     // 10000000
            (1, 10, 0.0, 10),       // deposit 0, withdrawal 1, reserve 10
            (2, 5, 0.0, 10),        // reserve 10
            (1, 10, 0.1, 1010),     // reserve 10 * 1 * 10000
            (2, 5, 0.5, 5010),      // reserve 5 * 2 * 2000
        ];
        for (ttl, min, percent, want) in cases {
            let got = frozen(ttl, min, percent);
            assert_eq!(got, want, "ttl {ttl} s, min {min}/s, percent {percent}");
            let finagle = (10_000.0 * percent) as i64 + ttl as i64 * i64::from(min);
            assert!((got - finagle).abs() <= 1, "Finagle's own bound: {finagle} +-1");
        }
    }

    #[test]
    fn a_percentage_over_one_banks_more_than_a_retry_per_call() {
        // Finagle's "maxPercentOver greater than 1.0": 10,000 deposits at 2.0 -> 20,000.
        let b = RatioBudget::new(Duration::from_secs(60), 0, 2.0, T0).unwrap();
        assert_eq!(b.balance(T0), 0);
        assert!(!b.try_withdraw(T0));
        (0..10_000).for_each(|_| b.deposit(T0));
        assert_eq!(b.balance(T0), 20_000);
    }

    #[test]
    fn zero_and_zero_is_empty() {
        let b = RatioBudget::new(Duration::from_secs(10), 0, 0.0, T0).unwrap();
        b.deposit(T0);
        assert!(!b.try_withdraw(T0));
        assert_eq!(b.balance(T0), 0);
    }

    #[test]
    fn withdrawals_from_the_reserve_expire_after_the_ttl() {
        // ttl 1 s in 10 slices of 100 ms; a reserve of 10.
        let b = RatioBudget::new(Duration::from_secs(1), 10, 0.0, T0).unwrap();
        assert_eq!((0..20).filter(|_| b.try_withdraw(at(0))).count(), 10);
        // Noticed every slice: the 10 withdrawals sit in the oldest slice until 1 s.
        for t in (100..1000).step_by(100) {
            assert_eq!(b.balance(at(t)), 0, "at {t} ms");
        }
        assert!(!b.try_withdraw(at(999)));
        assert_eq!(b.balance(at(1000)), 10, "the reserve is back after the ttl");

        // Noticed only at 999 ms: that notice starts a new slice there (WindowedAdder counts
        // a slice from when the last one was noticed), so they go at 1099 ms.
        let b = RatioBudget::new(Duration::from_secs(1), 10, 0.0, T0).unwrap();
        assert_eq!((0..20).filter(|_| b.try_withdraw(at(0))).count(), 10);
        assert!(!b.try_withdraw(at(999)));
        assert_eq!(b.balance(at(1098)), 0);
        assert_eq!(b.balance(at(1099)), 10);
    }

    #[test]
    fn deposits_expire_after_the_ttl() {
        // percent 0.5: a withdrawal costs 2000, a deposit gives 1000.
        let b = RatioBudget::new(Duration::from_secs(1), 0, 0.5, T0).unwrap();
        b.deposit(at(0));
        b.deposit(at(999));
        assert!(b.try_withdraw(at(999)), "two deposits within the ttl pay for one retry");
        let b = RatioBudget::new(Duration::from_secs(1), 0, 0.5, T0).unwrap();
        b.deposit(at(0));
        b.deposit(at(1000));
        assert!(!b.try_withdraw(at(1000)), "the first deposit expired");
        assert_eq!(b.balance(at(1000)), 0);
    }

    #[test]
    fn slices_are_counted_from_when_one_was_noticed() {
        // percent 1.0: a deposit pays for one retry. Deposits at 0 and 150 ms: the notice at
        // 150 closes the first slice and starts the next there.
        let b = RatioBudget::new(Duration::from_secs(1), 0, 1.0, T0).unwrap();
        b.deposit(at(0));
        b.deposit(at(150));
        assert_eq!(b.balance(at(150)), 2);
        // The next notice, at 1049 ms, keeps both (7 empty slices skipped) and starts a slice
        // there; each later slice of 100 ms drops one of them.
        assert_eq!(b.balance(at(1049)), 2);
        assert_eq!(b.balance(at(1148)), 2);
        assert_eq!(b.balance(at(1149)), 1, "the deposit at 0 is gone");
        assert_eq!(b.balance(at(1248)), 1);
        assert_eq!(b.balance(at(1249)), 0, "the deposit at 150 is gone");
    }

    #[test]
    fn finagles_defaults_and_bad_knobs() {
        let b = RatioBudget::finagle_default(T0);
        // reserve 10/s * 10 s, withdrawal 1000 / 0.2 = 5000.
        assert_eq!(b.balance(T0), 100);
        assert_eq!((b.ttl(), b.min_retries_per_sec(), b.percent_can_retry()), (Duration::from_secs(10), 10, 0.2));
        let bad = |ttl: f64, min: u32, percent: f64| {
            RatioBudget::new(Duration::from_secs_f64(ttl), min, percent, T0).unwrap_err().knob
        };
        assert_eq!(bad(0.0, 5, 0.1), "ttl");
        assert_eq!(bad(0.999, 5, 0.1), "ttl");
        assert_eq!(bad(61.0, 5, 0.1), "ttl");
        assert_eq!(bad(10.0, u32::MAX, 0.1), "min_retries_per_sec");
        assert_eq!(bad(10.0, 0, -1.0), "percent_can_retry");
        assert_eq!(bad(10.0, 0, 1000.5), "percent_can_retry");
        assert_eq!(bad(10.0, 0, f64::NAN), "percent_can_retry");
        // A fraction of a second is dropped from the reserve (inSeconds), kept in the window.
        let b = RatioBudget::new(Duration::from_millis(1500), 2, 0.0, T0).unwrap();
        assert_eq!(b.balance(T0), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn starts_full_and_throttles_at_half() {
        let b = RetryBudget::new(10.0, 0.1).unwrap();
        assert_eq!(b.tokens(), 10.0);
        for _ in 0..4 {
            b.record_failure();
        }
        assert_eq!(b.tokens(), 6.0);
        assert!(b.allows_retry());
        b.record_failure();
        assert_eq!(b.tokens(), 5.0);
        assert!(!b.allows_retry(), "5 is not > 10/2");
        b.record_success();
        assert!((b.tokens() - 5.1).abs() < 1e-9);
        assert!(b.allows_retry());
    }

    #[test]
    fn never_below_zero_nor_above_max() {
        let b = RetryBudget::new(2.0, 1.5).unwrap();
        for _ in 0..10 {
            b.record_failure();
        }
        assert_eq!(b.tokens(), 0.0);
        for _ in 0..10 {
            b.record_success();
        }
        assert_eq!(b.tokens(), 2.0);
    }

    #[test]
    fn bad_numbers_are_named() {
        assert_eq!(RetryBudget::new(0.0, 0.1).unwrap_err().knob, "max_tokens");
        assert_eq!(RetryBudget::new(f64::NAN, 0.1).unwrap_err().knob, "max_tokens");
        assert_eq!(RetryBudget::new(10.0, -1.0).unwrap_err().knob, "token_ratio");
        assert_eq!(RetryBudget::new(10.0, 11.0).unwrap_err().knob, "token_ratio");
        assert!(RetryBudget::new(10.0, 0.0).unwrap_err().to_string().contains("token_ratio must be > 0"));
    }

    #[test]
    fn ratio_keeps_three_decimals_truncated() {
        assert_eq!(RetryBudget::new(10.0, 0.1239).unwrap().token_ratio(), 0.123);
        assert_eq!(RetryBudget::new(10.0, 1.005).unwrap().token_ratio(), 1.005);
        assert_eq!(RetryBudget::new(10.0, 0.0019).unwrap().token_ratio(), 0.001);
        assert_eq!(RetryBudget::new(10.5559, 1.0).unwrap().max_tokens(), 10.555);
        assert_eq!(thousandths(1e-9), 0);
        assert_eq!(thousandths(1e12), 1_000_000_000_000_000);
        let b = RetryBudget::new(10.0, 0.1239).unwrap();
        b.record_failure();
        b.record_success();
        assert_eq!(b.tokens(), 9.123);
    }

    #[test]
    fn values_that_truncate_to_nothing_are_errors() {
        let e = RetryBudget::new(1e-9, 1e-9).unwrap_err();
        assert_eq!(e.knob, "max_tokens");
        assert!(e.to_string().contains("max_tokens must be >= 0.001"), "{e}");
        let e = RetryBudget::new(10.0, 0.0009).unwrap_err();
        assert_eq!(e.knob, "token_ratio");
        assert!(e.to_string().contains("token_ratio must be >= 0.001"), "{e}");
    }

    #[test]
    fn concurrent_use_stays_in_bounds_and_adds_up() {
        let b = Arc::new(RetryBudget::new(1000.0, 1.0).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        b.record_failure();
                        let t = b.tokens();
                        assert!((0.0..=1000.0).contains(&t));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.tokens(), 0.0);
        // 500 successes from 4 threads: exactly 500 tokens back, none lost to races.
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..125).for_each(|_| b.record_success()))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.tokens(), 500.0);
    }
}
