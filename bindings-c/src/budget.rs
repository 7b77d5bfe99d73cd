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
    guard_status(|| {
        arg_mut(out, "out")?;
        let budget = RetryBudget::new(max_tokens, token_ratio).map_err(|e| Failure::invalid(e.to_string()))?;
        hand_out(out, retryrs_budget { inner: Arc::new(budget) });
        Ok(())
    })
}

/// The tokens left now.
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_tokens(budget: *const retryrs_budget, tokens: *mut f64) -> retryrs_status {
    guard_status(|| {
        let b = arg(budget, "budget")?;
        *arg_mut(tokens, "tokens")? = b.inner.tokens();
        Ok(())
    })
}

/// Releases the handle; retriers built with it keep the budget alive. NULL is a no-op.
/// Must not be called twice for the same budget.
#[no_mangle]
pub unsafe extern "C" fn retryrs_budget_free(budget: *mut retryrs_budget) {
    guard_value((), || free_handle(budget))
}
