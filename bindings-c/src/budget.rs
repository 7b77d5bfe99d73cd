//! The retry budget handle: a token bucket shared by every retrier configured with it.

use std::sync::Arc;

use retryrs::RetryBudget;

use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::types::*;

/// A retry budget (opaque). Thread-safe: any number of retriers and threads may use
/// it at once.
pub struct retryrs_budget {
    pub(crate) inner: Arc<RetryBudget>,
}

/// Creates a full budget: max_tokens in [0.001, 1e12], token_ratio in [0.001,
/// max_tokens]; both keep 3 decimals, truncated, as gRPC does (0.1239 adds 0.123), and a
/// value that truncates to 0 is RETRYRS_INVALID_ARGUMENT naming it.
/// Each transient failure costs one token, each success adds token_ratio, and a retry
/// is allowed only while tokens > max_tokens / 2. Free with retryrs_budget_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_new(
    max_tokens: f64,
    token_ratio: f64,
    out: *mut *mut retryrs_budget,
) -> retryrs_status {
    guard_status("retryrs_budget_new", || {
        arg_mut(out, "out")?;
        let budget =
            RetryBudget::new(max_tokens, token_ratio).map_err(|e| Failure::invalid(e.render(retryrs::Spelling::C)))?;
        hand_out(out, retryrs_budget { inner: Arc::new(budget) });
        Ok(())
    })
}

/// Creates the AWS SDKs' standard retry quota (kind quota): `capacity` (500 in the SDKs)
/// that starts full; a retry is allowed only while what is left covers `retry_cost` (5)
/// and takes it; a call that succeeds gives back its last retry's cost, or
/// `no_retry_increment` (1) when it needed none. `timeout_retry_cost` (10) is the SDKs'
/// price of a retry after a timeout: after an attempt reported as RETRYRS_TIMED_OUT (or
/// with retryrs_call_record_timeout()). Whole numbers; capacity and costs in [1, 1e12], the increment in [0, 1e12]:
/// otherwise RETRYRS_INVALID_ARGUMENT naming it. retryrs_budget_tokens() reads the
/// capacity left. Free with retryrs_budget_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_new_quota(
    capacity: u64,
    retry_cost: u64,
    timeout_retry_cost: u64,
    no_retry_increment: u64,
    out: *mut *mut retryrs_budget,
) -> retryrs_status {
    guard_status("retryrs_budget_new_quota", || {
        arg_mut(out, "out")?;
        let q = retryrs::QuotaBudget::new(capacity, retry_cost, timeout_retry_cost, no_retry_increment)
            .map_err(|e| Failure::invalid(format!("retryrs_budget_new_quota: {}", e.render(retryrs::Spelling::C))))?;
        hand_out(out, retryrs_budget { inner: Arc::new(q.into()) });
        Ok(())
    })
}

/// Creates Finagle's RetryBudget (kind ratio): every call deposits, every retry
/// withdraws (1 / percent_can_retry deposits), both expiring after `ttl_ms` (1 s to 60 s),
/// on top of a reserve of `min_retries_per_sec` retries a second (Finagle's defaults:
/// 10000, 10, 0.2). Out-of-range values: RETRYRS_INVALID_ARGUMENT naming it.
/// retryrs_budget_tokens() reads the retries left. Free with retryrs_budget_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_new_ratio(
    ttl_ms: u64,
    min_retries_per_sec: u32,
    percent_can_retry: f64,
    out: *mut *mut retryrs_budget,
) -> retryrs_status {
    guard_status("retryrs_budget_new_ratio", || {
        arg_mut(out, "out")?;
        let ttl = std::time::Duration::from_millis(ttl_ms);
        let r = retryrs::RatioBudget::new(ttl, min_retries_per_sec, percent_can_retry, std::time::Duration::ZERO)
            .map_err(|e| Failure::invalid(format!("retryrs_budget_new_ratio: {}", e.render(retryrs::Spelling::C))))?;
        hand_out(out, retryrs_budget { inner: Arc::new(r.into()) });
        Ok(())
    })
}

/// The tokens left now (a quota: the capacity left; a ratio budget: the retries left).
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_tokens(budget: *const retryrs_budget, tokens: *mut f64) -> retryrs_status {
    guard_status("retryrs_budget_tokens", || {
        let b = arg(budget, "budget")?;
        *arg_mut(tokens, "tokens")? = b.inner.tokens();
        Ok(())
    })
}

/// Releases the handle; retriers built with it keep the budget alive. NULL is a no-op.
/// Must not be called twice for the same budget.
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_free(budget: *mut retryrs_budget) {
    guard_value("retryrs_budget_free", (), || free_handle(budget))
}
