//! The shared retry budget, as a native class the JS `RetryBudget` wraps.

use std::sync::Arc;

use napi_derive::napi;
use retryrs::RetryBudget;

use crate::guard::guarded;
use crate::problem::{is_whole, option_name, Problem};
use crate::share::Registry;

/// One token bucket, shared by every retrier (and call) that holds it.
#[napi]
pub struct NativeBudget {
    pub(crate) inner: Arc<RetryBudget>,
}

/// Budgets other threads (worker_threads) may attach to, by share id.
static SHARED: Registry<RetryBudget> = Registry::new("RetryBudget");

#[napi]
impl NativeBudget {
    /// Builds a budget, or explains which number was wrong (the JS layer throws it as a
    /// RangeError in its own spelling). Never throws for out-of-range input.
    #[napi(factory)]
    pub fn create(max_tokens: f64, token_ratio: f64) -> napi::Result<Self> {
        guarded(|| match RetryBudget::new(max_tokens, token_ratio) {
            Ok(b) => Ok(NativeBudget { inner: Arc::new(b) }),
            Err(e) => Err(budget_problem(e)),
        })
    }

    /// The AWS SDKs' standard retry quota (kind `quota`); whole numbers (the JS layer
    /// checks the types and passes the SDKs' defaults).
    #[napi(factory)]
    pub fn quota(
        capacity: f64,
        retry_cost: f64,
        timeout_retry_cost: f64,
        no_retry_increment: f64,
    ) -> napi::Result<Self> {
        guarded(|| {
            let whole = |knob: &'static str, v: f64| {
                if is_whole(v) {
                    Ok(v as u64)
                } else {
                    Err(Problem::new(&option_name(knob), v.to_string(), "a whole number in [0, 1e12]").into_error())
                }
            };
            let q = retryrs::QuotaBudget::new(
                whole("capacity", capacity)?,
                whole("retry_cost", retry_cost)?,
                whole("timeout_retry_cost", timeout_retry_cost)?,
                whole("no_retry_increment", no_retry_increment)?,
            );
            q.map(|q| NativeBudget { inner: Arc::new(q.into()) }).map_err(budget_problem)
        })
    }

    /// Finagle's RetryBudget (kind `ratio`): `ttl_ms` of 1 to 60 s.
    #[napi(factory)]
    pub fn ratio(ttl_ms: f64, min_retries_per_sec: f64, percent_can_retry: f64) -> napi::Result<Self> {
        guarded(|| {
            if !is_whole(min_retries_per_sec) {
                let v = min_retries_per_sec.to_string();
                return Err(Problem::new("minRetriesPerSec", v, "a whole number in [0, 2147483647]").into_error());
            }
            let ttl = retryrs::units::duration_from_ms_or_zero(ttl_ms);
            let min = min_retries_per_sec.min(f64::from(u32::MAX)) as u32;
            let r = retryrs::RatioBudget::new(ttl, min, percent_can_retry, std::time::Duration::ZERO);
            r.map(|r| NativeBudget { inner: Arc::new(r.into()) }).map_err(budget_problem)
        })
    }

    /// `token_bucket`, `quota` or `ratio`.
    #[napi(getter)]
    pub fn kind(&self) -> napi::Result<String> {
        guarded(|| Ok(self.inner.kind().as_str().to_string()))
    }

    /// Registers this budget for other threads and returns its share id (what a
    /// RetryBudget carries through postMessage).
    #[napi]
    pub fn share(&self) -> napi::Result<u32> {
        guarded(|| Ok(SHARED.share(&self.inner)))
    }

    /// The budget shared under `id` (by another thread), if some thread still holds it.
    #[napi(factory)]
    pub fn attach(id: u32) -> napi::Result<Self> {
        guarded(|| SHARED.attach(id).map(|inner| NativeBudget { inner }))
    }

    /// Tokens left now.
    #[napi(getter)]
    pub fn tokens(&self) -> napi::Result<f64> {
        guarded(|| Ok(self.inner.tokens()))
    }

    /// The bucket's size.
    #[napi(getter)]
    pub fn max_tokens(&self) -> napi::Result<f64> {
        guarded(|| Ok(self.inner.max_tokens()))
    }

    /// What each success adds back.
    #[napi(getter)]
    pub fn token_ratio(&self) -> napi::Result<f64> {
        guarded(|| Ok(self.inner.token_ratio()))
    }
}

/// A budget's (or breaker's) out-of-range setting, rendered by the core in Node's
/// spelling (the setting and any other its rule names; durations in ms).
pub(crate) fn budget_problem(e: retryrs::BudgetError) -> napi::Error {
    Problem::from_message(e.render(retryrs::Spelling::Node)).into_error()
}
