//! The shared retry budget, as a native class the JS `RetryBudget` wraps.

use std::sync::Arc;

use napi_derive::napi;
use retryrs::RetryBudget;

use crate::guard::guarded;
use crate::problem::{option_name, Problem};

/// One token bucket, shared by every retrier (and call) that holds it.
#[napi]
pub struct NativeBudget {
    pub(crate) inner: Arc<RetryBudget>,
}

#[napi]
impl NativeBudget {
    /// Builds a budget, or explains which number was wrong (the JS layer throws it as a
    /// RangeError in its own spelling). Never throws for out-of-range input.
    #[napi(factory)]
    pub fn create(max_tokens: f64, token_ratio: f64) -> napi::Result<Self> {
        guarded(|| match RetryBudget::new(max_tokens, token_ratio) {
            Ok(b) => Ok(NativeBudget { inner: Arc::new(b) }),
            // The budget's rule names the other number by its contract name.
            Err(e) => Err(Problem::new(
                &option_name(e.knob),
                e.value.to_string(),
                &e.requirement.replace("max_tokens", "maxTokens"),
            )
            .into_error()),
        })
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
