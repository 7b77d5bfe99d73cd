//! HTTP helpers: Retry-After parsing and the retryable statuses, straight from the core.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use napi_derive::napi;

use crate::guard::guarded;

/// The wait a Retry-After value asks for, in whole milliseconds (rounded up), relative
/// to `now_ms` (milliseconds since the Unix epoch). `None` means no hint; a huge value
/// saturates at 2^64-1 ms (about 1.8e19).
#[napi]
pub fn parse_retry_after_ms(value: String, now_ms: f64) -> napi::Result<Option<f64>> {
    guarded(|| {
        let now = if now_ms.is_finite() && now_ms >= 0.0 {
            UNIX_EPOCH + Duration::from_nanos((now_ms * 1e6).min(u64::MAX as f64) as u64)
        } else {
            SystemTime::now()
        };
        Ok(retryrs::parse_retry_after_ms(&value, now).map(|ms| ms as f64))
    })
}

/// Whether an HTTP status is worth retrying (408, 425, 429, 500, 502, 503, 504).
#[napi]
pub fn is_retryable_status(status: f64) -> napi::Result<bool> {
    guarded(|| {
        Ok(status.fract() == 0.0
            && (0.0..=f64::from(u16::MAX)).contains(&status)
            && retryrs::is_retryable_status(status as u16))
    })
}

/// The statuses the helper retries, for documentation and tests.
#[napi]
pub fn retryable_statuses() -> napi::Result<Vec<u32>> {
    guarded(|| Ok(retryrs::RETRYABLE_STATUSES.iter().map(|&s| u32::from(s)).collect()))
}
