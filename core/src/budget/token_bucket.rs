//! gRPC's retry throttling ([`TokenBucket`]): a lock-free bucket that failures drain and
//! successes refill, allowing a retry while it is more than half full.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{thousandths, BudgetError, SCALE};

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
