//! The retry budget: a token bucket shared by every call that uses it (gRPC's
//! retry-throttling rule), so a fleet of clients stops multiplying load on a server that is
//! already failing.

use std::sync::atomic::{AtomicU64, Ordering};

/// Tokens are kept in thousandths (as gRPC does), so a ratio such as 0.1 adds exactly.
const SCALE: f64 = 1000.0;

/// `x` in thousandths, truncated as gRPC truncates `tokenRatio` to 3 decimals. Truncates
/// the decimal the user wrote (the shortest text that reads back as `x`), not the binary
/// product: `1.005 * 1000` is 1004.999... in IEEE doubles, but 1.005 keeps 1.005.
fn thousandths(x: f64) -> u64 {
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
    /// The value as given.
    pub value: f64,
    /// The rule it broke.
    pub requirement: &'static str,
}

impl std::fmt::Display for BudgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} must be {}, got {}", self.knob, self.requirement, self.value)
    }
}

impl std::error::Error for BudgetError {}

/// A thread-safe, lock-free token bucket. It starts full at `max_tokens`; each transient
/// failure costs one token; each success adds `token_ratio` (capped at `max_tokens`); a
/// retry is allowed only while tokens > `max_tokens / 2`.
#[derive(Debug)]
pub struct RetryBudget {
    milli_tokens: AtomicU64,
    max_milli: u64,
    ratio_milli: u64,
}

impl RetryBudget {
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
        Ok(RetryBudget { milli_tokens: AtomicU64::new(max_milli), max_milli, ratio_milli })
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
