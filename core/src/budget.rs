//! Retry budgets, shared by every call that uses them, so a fleet of clients stops
//! multiplying load on a server that is already failing: the token bucket of gRPC's retry
//! throttling ([`RetryBudget`]), the AWS SDKs' standard retry quota ([`QuotaBudget`]) and
//! Finagle's windowed ratio budget ([`RatioBudget`]).

use crate::spelling::Spelling;
use std::time::Duration;

mod quota;
mod ratio;
mod token_bucket;

pub use quota::QuotaBudget;
pub use ratio::RatioBudget;
pub use token_bucket::TokenBucket;

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

#[cfg(test)]
mod quota_tests;

#[cfg(test)]
mod ratio_tests;

#[cfg(test)]
mod tests;
