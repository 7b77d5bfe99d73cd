//! HTTP helpers: Retry-After parsing, the retryable statuses, the classification rules and
//! URL redaction, straight from the core (`retryrs/fetch` decides nothing itself).

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

/// Whether an HTTP outcome is worth another attempt, by the core's rules: `status` for a
/// response, else `failure` is `"connect"` (no connection was made) or `"network"`.
/// `methods` and `statuses` replace the idempotent methods and the retryable statuses.
#[napi]
pub fn http_transient(
    method: String,
    status: Option<u32>,
    failure: Option<String>,
    methods: Option<Vec<String>>,
    statuses: Option<Vec<u32>>,
) -> napi::Result<bool> {
    guarded(|| {
        let outcome = match (status, failure.as_deref()) {
            (Some(s), _) => match u16::try_from(s) {
                Ok(s) => retryrs::HttpOutcome::Status(s),
                Err(_) => return Ok(false),
            },
            (None, Some("connect")) => retryrs::HttpOutcome::ConnectFailed,
            (None, Some("network")) => retryrs::HttpOutcome::NetworkFailed,
            (None, other) => {
                return Err(napi::Error::new(
                    napi::Status::InvalidArg,
                    format!("httpTransient: a status or the failure 'connect' or 'network' is needed, got {other:?}"),
                ))
            }
        };
        let methods: Option<Vec<&str>> = methods.as_ref().map(|m| m.iter().map(String::as_str).collect());
        let statuses: Option<Vec<u16>> =
            statuses.map(|s| s.into_iter().filter_map(|v| u16::try_from(v).ok()).collect());
        Ok(retryrs::http_transient(&method, outcome, methods.as_deref(), statuses.as_deref()))
    })
}

/// The URL with credentials and signing query values replaced by `REDACTED`
/// (OpenTelemetry's `url.full` rule).
#[napi]
pub fn redact_url(url: String) -> napi::Result<String> {
    guarded(|| Ok(retryrs::redact_url(&url)))
}

/// The idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
#[napi]
pub fn idempotent_methods() -> napi::Result<Vec<String>> {
    guarded(|| Ok(retryrs::IDEMPOTENT_METHODS.iter().map(|m| (*m).to_string()).collect()))
}
