//! The shared retry budget, as a native class the JS `RetryBudget` wraps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use napi_derive::napi;
use retryrs::RetryBudget;

use crate::guard::guarded;
use crate::problem::{option_name, Problem};

/// One token bucket, shared by every retrier (and call) that holds it.
#[napi]
pub struct NativeBudget {
    pub(crate) inner: Arc<RetryBudget>,
}

/// Budgets other threads (worker_threads) may attach to, by share id. The addon is loaded
/// once per process, so this map is seen by every thread; it holds budgets weakly: a
/// budget lives while some thread's RetryBudget holds it.
static SHARED: Mutex<Option<HashMap<u32, Weak<RetryBudget>>>> = Mutex::new(None);
/// Share ids are never reused, so a stale id cannot attach to another budget.
static NEXT_SHARE_ID: AtomicU32 = AtomicU32::new(1);

fn shared() -> std::sync::MutexGuard<'static, Option<HashMap<u32, Weak<RetryBudget>>>> {
    SHARED.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Registers this budget for other threads and returns its share id (what a
    /// RetryBudget carries through postMessage).
    #[napi]
    pub fn share(&self) -> napi::Result<u32> {
        guarded(|| {
            let id = NEXT_SHARE_ID.fetch_add(1, Ordering::Relaxed);
            let mut map = shared();
            let map = map.get_or_insert_with(HashMap::new);
            // Budgets no thread holds any more leave the map as new ones arrive.
            map.retain(|_, w| w.strong_count() > 0);
            map.insert(id, Arc::downgrade(&self.inner));
            Ok(id)
        })
    }

    /// The budget shared under `id` (by another thread), if some thread still holds it.
    #[napi(factory)]
    pub fn attach(id: u32) -> napi::Result<Self> {
        guarded(|| {
            let inner = shared().as_ref().and_then(|m| m.get(&id)).and_then(Weak::upgrade);
            inner.map(|inner| NativeBudget { inner }).ok_or_else(|| {
                napi::Error::new(
                    napi::Status::InvalidArg,
                    format!("no RetryBudget is shared under id {id}: no thread holds it any more"),
                )
            })
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
