//! The circuit breaker handle: shared by every retrier made with it
//! (retryrs_retrier_with_breaker), across threads. Every decision is the core's.

use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

use retryrs::{testing, BreakerConfig, BreakerModel, CircuitBreaker, Clock, Retrier, SystemClock};

use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// A circuit breaker (opaque). Thread-safe: any number of retriers and threads may use it.
pub struct retryrs_breaker {
    pub(crate) inner: Arc<CircuitBreaker>,
}

/// A breaker model: after `failures` failed calls in a row.
pub const RETRYRS_BREAKER_CONSECUTIVE: i32 = 0;
/// A breaker model (Polly v8's): failures reach `failure_ratio` of at least
/// `minimum_throughput` calls within `sampling_duration_ms`.
pub const RETRYRS_BREAKER_SAMPLING: i32 = 1;
/// A breaker model (resilience4j's count-based window): failures reach `failure_ratio` of
/// the last `window_size` calls, once `minimum_calls` are counted.
pub const RETRYRS_BREAKER_COUNT: i32 = 2;

/// A breaker state: calls go through.
pub const RETRYRS_BREAKER_CLOSED: i32 = 0;
/// A breaker state: calls are refused (RETRYRS_EXHAUSTED, RETRYRS_REASON_CIRCUIT_OPEN).
pub const RETRYRS_BREAKER_OPEN: i32 = 1;
/// A breaker state: a bounded number of probe calls go through.
pub const RETRYRS_BREAKER_HALF_OPEN: i32 = 2;
/// A breaker state: held open by retryrs_breaker_isolate() until retryrs_breaker_reset().
pub const RETRYRS_BREAKER_ISOLATED: i32 = 3;

/// A circuit breaker's settings; fill it with retryrs_breaker_config_init() first.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_breaker_config {
    /// RETRYRS_BREAKER_CONSECUTIVE (default), RETRYRS_BREAKER_SAMPLING or
    /// RETRYRS_BREAKER_COUNT.
    pub model: i32,
    /// Consecutive: failed calls in a row that open it (>= 1). Default 5.
    pub failures: u32,
    /// Sampling and count: the share of failed calls that opens it, in (0, 1]. Default
    /// 0.1 (Polly's; resilience4j's is 0.5: set it for the count model).
    pub failure_ratio: f64,
    /// Sampling: calls in the window before it may open (>= 2). Default 100.
    pub minimum_throughput: u32,
    /// Sampling: the sliding window, >= 500 ms. Default 30000.
    pub sampling_duration_ms: f64,
    /// How long it stays open before a probe, 1 ms to 1 day. Default 5000.
    pub break_duration_ms: f64,
    /// Probe calls at once when half-open (>= 1). Default 1.
    pub half_open_probes: u32,
    /// Growth of the break on each open in a row (>= 1; 1: none). Default 1.
    pub break_multiplier: f64,
    /// The longest break when it grows; 0: one day. Default 0.
    pub max_break_duration_ms: f64,
    /// Count each attempt instead of each call. Default false.
    pub per_attempt: bool,
    /// Count: calls counted before it may open (>= 1; above window_size, window_size).
    /// Default 100.
    pub minimum_calls: u32,
    /// Count: how many of the last calls it judges (1 to 1000000). Default 100.
    pub window_size: u32,
    /// Count a permanent failure as a failure (default false: a success, the dependency
    /// answered).
    pub count_permanent: bool,
    /// Sampling and count: a call (or attempt) this long or longer is slow; 0: none is.
    /// Default 0.
    pub slow_call_duration_ms: f64,
    /// The share of slow calls that opens it, in (0, 1]. Default 1.
    pub slow_call_ratio: f64,
    /// Half-open: let exactly half_open_probes probes go and close only if their failure
    /// ratio is under the threshold (resilience4j); false: the first probe decides.
    pub judge_all_probes: bool,
}

fn config_defaults() -> retryrs_breaker_config {
    retryrs_breaker_config {
        model: RETRYRS_BREAKER_CONSECUTIVE,
        failures: 5,
        failure_ratio: 0.1,
        minimum_throughput: 100,
        sampling_duration_ms: 30_000.0,
        break_duration_ms: 5_000.0,
        half_open_probes: 1,
        break_multiplier: 1.0,
        max_break_duration_ms: 0.0,
        per_attempt: false,
        minimum_calls: 100,
        window_size: 100,
        count_permanent: false,
        slow_call_duration_ms: 0.0,
        slow_call_ratio: 1.0,
        judge_all_probes: false,
    }
}

/// Fills `*config` with the defaults (each field's comment says its own).
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_config_init(config: *mut retryrs_breaker_config) -> retryrs_status {
    guard_status("retryrs_breaker_config_init", || {
        *arg_mut(config, "config")? = config_defaults();
        Ok(())
    })
}

fn ms(v: f64) -> Duration {
    retryrs::units::duration_from_ms_or_zero(v)
}

/// Creates a closed breaker. RETRYRS_INVALID_ARGUMENT names a setting out of range
/// ("retryrs_breaker_new: config->failures must be a whole number >= 1, got 0"). Free
/// with retryrs_breaker_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_new(
    config: *const retryrs_breaker_config,
    out: *mut *mut retryrs_breaker,
) -> retryrs_status {
    guard_status("retryrs_breaker_new", || {
        let c = *arg(config, "config")?;
        arg_mut(out, "out")?;
        let model = match c.model {
            RETRYRS_BREAKER_CONSECUTIVE => BreakerModel::Consecutive { failures: c.failures },
            RETRYRS_BREAKER_SAMPLING => BreakerModel::Sampling {
                failure_ratio: c.failure_ratio,
                minimum_throughput: c.minimum_throughput,
                sampling_duration: ms(c.sampling_duration_ms),
            },
            RETRYRS_BREAKER_COUNT => BreakerModel::Count {
                failure_ratio: c.failure_ratio,
                minimum_calls: c.minimum_calls,
                window_size: c.window_size,
            },
            other => {
                return Err(Failure::invalid(format!(
                    "retryrs_breaker_new: config->model must be RETRYRS_BREAKER_CONSECUTIVE, RETRYRS_BREAKER_SAMPLING or RETRYRS_BREAKER_COUNT, got {other}"
                )))
            }
        };
        let mut b = BreakerConfig::new(model);
        b.break_duration = ms(c.break_duration_ms);
        b.half_open_probes = c.half_open_probes;
        b.break_multiplier = c.break_multiplier;
        b.max_break_duration = (c.max_break_duration_ms > 0.0).then(|| ms(c.max_break_duration_ms));
        b.per_attempt = c.per_attempt;
        b.count_permanent = c.count_permanent;
        b.judge_all_probes = c.judge_all_probes;
        // NaN is not "none": it reaches the check, which names it.
        let slow = c.slow_call_duration_ms;
        b.slow_call_duration = (slow != 0.0).then(|| if slow.is_nan() { Duration::ZERO } else { ms(slow) });
        b.slow_call_ratio = c.slow_call_ratio;
        let breaker = CircuitBreaker::new(b).map_err(|e| {
            Failure::invalid(format!("retryrs_breaker_new: config->{}", e.render(retryrs::Spelling::C)))
        })?;
        hand_out(out, retryrs_breaker { inner: Arc::new(breaker) });
        Ok(())
    })
}

/// Now, on the clock blocking calls use (virtual under the testing switch).
fn clock_now() -> Duration {
    match testing::clock() {
        Some(v) => v.now(),
        None => SystemClock.now(),
    }
}

/// The state now (RETRYRS_BREAKER_CLOSED, _OPEN, _HALF_OPEN or _ISOLATED) and the milliseconds left
/// before a probe may go (0 unless open), on the clock blocking calls use (virtual under
/// the testing switch); either out-pointer may be NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_state(
    breaker: *const retryrs_breaker,
    state: *mut i32,
    retry_in_ms: *mut f64,
) -> retryrs_status {
    guard_status("retryrs_breaker_state", || write_state(arg(breaker, "breaker")?, clock_now(), state, retry_in_ms))
}

/// retryrs_breaker_state() at `now_ms` on the caller's time base: for calls driven with
/// retryrs_call_start(), which give the breaker their own `now_ms`.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_state_at(
    breaker: *const retryrs_breaker,
    now_ms: u64,
    state: *mut i32,
    retry_in_ms: *mut f64,
) -> retryrs_status {
    guard_status("retryrs_breaker_state_at", || {
        write_state(arg(breaker, "breaker")?, Duration::from_millis(now_ms), state, retry_in_ms)
    })
}

/// # Safety
/// `state` and `retry_in_ms` are NULL or writable.
unsafe fn write_state(
    breaker: &retryrs_breaker,
    now: Duration,
    state: *mut i32,
    retry_in_ms: *mut f64,
) -> Result<(), Failure> {
    {
        let b = &breaker.inner;
        if let Some(s) = state.as_mut() {
            *s = i32::from(b.state(now).gauge());
        }
        if let Some(r) = retry_in_ms.as_mut() {
            *r = b.retry_in(now).as_secs_f64() * 1000.0;
        }
        Ok(())
    }
}

/// Holds it open until retryrs_breaker_reset(): every call is refused
/// (RETRYRS_EXHAUSTED, RETRYRS_REASON_CIRCUIT_OPEN); state RETRYRS_BREAKER_ISOLATED
/// (Polly's Isolate, resilience4j's FORCED_OPEN). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_isolate(breaker: *const retryrs_breaker) -> retryrs_status {
    guard_status("retryrs_breaker_isolate", || {
        arg(breaker, "breaker")?.inner.isolate();
        Ok(())
    })
}

/// Closes it, whatever its state, with its counts started over. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_reset(breaker: *const retryrs_breaker) -> retryrs_status {
    guard_status("retryrs_breaker_reset", || {
        arg(breaker, "breaker")?.inner.reset();
        Ok(())
    })
}

/// Calls refused so far.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_rejections(breaker: *const retryrs_breaker, out: *mut u64) -> retryrs_status {
    guard_status("retryrs_breaker_rejections", || {
        let b = arg(breaker, "breaker")?;
        *arg_mut(out, "out")? = b.inner.rejections();
        Ok(())
    })
}

/// Releases the handle; retriers made with it keep the breaker alive. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn retryrs_breaker_free(breaker: *mut retryrs_breaker) {
    guard_value("retryrs_breaker_free", (), || free_handle(breaker))
}

/// A new retrier with `retrier`'s policy and `breaker` (NULL: none): every call asks the
/// breaker first; a refused call returns RETRYRS_EXHAUSTED with reason
/// RETRYRS_REASON_CIRCUIT_OPEN and 0 attempts, the attempt callback never called. Several
/// retriers may share one breaker. Free with retryrs_retrier_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_with_breaker(
    retrier: *const retryrs_retrier,
    breaker: *const retryrs_breaker,
    out: *mut *mut retryrs_retrier,
) -> retryrs_status {
    guard_status("retryrs_retrier_with_breaker", || {
        let shared = &arg(retrier, "retrier")?.inner;
        arg_mut(out, "out")?;
        let breaker = breaker.as_ref().map(|b| Arc::clone(&b.inner));
        let policy = shared.retrier.policy().with_breaker(breaker);
        let name: CString = shared.name.clone();
        hand_out(out, retryrs_retrier { inner: Arc::new(Shared { retrier: Retrier::new(policy), name }) });
        Ok(())
    })
}
