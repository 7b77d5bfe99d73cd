//! The AWS SDKs' standard retry quota ([`QuotaBudget`]): a capacity each retry takes its
//! cost from and each success gives back to.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{BudgetError, RetryCause};

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
