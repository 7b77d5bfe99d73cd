//! The shared circuit breaker, as a native class the JS `CircuitBreaker` wraps; shareable
//! with worker_threads like the budget (see `share.rs`). Every decision is the core's.

use std::sync::Arc;

use napi_derive::napi;
use retryrs::{BreakerConfig, BreakerModel, CircuitBreaker};

use crate::budget::budget_problem;
use crate::call::duration;
use crate::guard::guarded;
use crate::problem::is_whole;
use crate::share::Registry;

/// Breakers other threads may attach to, by share id.
static SHARED: Registry<CircuitBreaker> = Registry::new("CircuitBreaker");

/// The breaker's settings as the JS layer normalised them (types checked there, defaults
/// filled in; durations in milliseconds).
#[napi(object)]
pub struct BreakerOptions {
    /// `consecutive`, `sampling` or `count`.
    pub model: String,
    pub failures: f64,
    pub failure_ratio: f64,
    pub minimum_throughput: f64,
    pub sampling_duration_ms: f64,
    pub break_duration_ms: f64,
    pub half_open_probes: f64,
    pub break_multiplier: f64,
    pub max_break_duration_ms: Option<f64>,
    pub per_attempt: bool,
    pub minimum_calls: f64,
    pub window_size: f64,
    pub count_permanent: bool,
    pub slow_call_duration_ms: Option<f64>,
    pub slow_call_ratio: f64,
    pub judge_all_probes: bool,
}

#[napi]
pub struct NativeBreaker {
    pub(crate) inner: Arc<CircuitBreaker>,
}

/// A whole number as the core's `u32`: a fraction or a negative is refused by the caller's
/// rule (0 where the core requires >= 1 or 2), a huge one saturates.
fn count(v: f64) -> u32 {
    if is_whole(v) {
        v.min(f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

#[napi]
impl NativeBreaker {
    /// Builds a breaker, or explains which setting was wrong (thrown by the JS layer as a
    /// RangeError).
    #[napi(factory)]
    pub fn create(o: BreakerOptions) -> napi::Result<Self> {
        guarded(|| {
            let model = match o.model.as_str() {
                "sampling" => BreakerModel::Sampling {
                    failure_ratio: o.failure_ratio,
                    minimum_throughput: count(o.minimum_throughput),
                    sampling_duration: duration(o.sampling_duration_ms),
                },
                "count" => BreakerModel::Count {
                    failure_ratio: o.failure_ratio,
                    minimum_calls: count(o.minimum_calls),
                    window_size: count(o.window_size),
                },
                _ => BreakerModel::Consecutive { failures: count(o.failures) },
            };
            let mut config = BreakerConfig::new(model);
            config.break_duration = duration(o.break_duration_ms);
            config.half_open_probes = count(o.half_open_probes);
            config.break_multiplier = o.break_multiplier;
            config.max_break_duration = o.max_break_duration_ms.map(duration);
            config.per_attempt = o.per_attempt;
            config.count_permanent = o.count_permanent;
            config.judge_all_probes = o.judge_all_probes;
            // NaN reaches the core's check (which names it) instead of reading as none.
            config.slow_call_duration =
                o.slow_call_duration_ms.map(|v| if v.is_nan() { std::time::Duration::ZERO } else { duration(v) });
            config.slow_call_ratio = o.slow_call_ratio;
            CircuitBreaker::new(config).map(|b| NativeBreaker { inner: Arc::new(b) }).map_err(budget_problem)
        })
    }

    /// Registers this breaker for other threads and returns its share id.
    #[napi]
    pub fn share(&self) -> napi::Result<u32> {
        guarded(|| Ok(SHARED.share(&self.inner)))
    }

    /// The breaker shared under `id` (by another thread), if some thread still holds it.
    #[napi(factory)]
    pub fn attach(id: u32) -> napi::Result<Self> {
        guarded(|| SHARED.attach(id).map(|inner| NativeBreaker { inner }))
    }

    /// `closed`, `open`, `half_open` or `isolated` at `now_ms` (the breaker's time base).
    #[napi]
    pub fn state(&self, now_ms: f64) -> napi::Result<String> {
        guarded(|| Ok(self.inner.state(duration(now_ms)).as_str().to_string()))
    }

    /// Milliseconds left before a probe may go, at `now_ms` (0 unless open).
    #[napi]
    pub fn retry_in_ms(&self, now_ms: f64) -> napi::Result<f64> {
        guarded(|| Ok(self.inner.retry_in(duration(now_ms)).as_secs_f64() * 1000.0))
    }

    /// Calls refused so far.
    #[napi(getter)]
    pub fn rejections(&self) -> napi::Result<f64> {
        guarded(|| Ok(self.inner.rejections() as f64))
    }

    /// `consecutive`, `sampling` or `count`.
    #[napi(getter)]
    pub fn model(&self) -> napi::Result<String> {
        guarded(|| Ok(self.inner.config().model.name().to_string()))
    }

    /// Holds it open until `reset` (state `isolated`).
    #[napi]
    pub fn isolate(&self) -> napi::Result<()> {
        guarded(|| {
            self.inner.isolate();
            Ok(())
        })
    }

    /// Closes it, counts started over.
    #[napi]
    pub fn reset(&self) -> napi::Result<()> {
        guarded(|| {
            self.inner.reset();
            Ok(())
        })
    }
}
