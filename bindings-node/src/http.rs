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

/// The core's HTTP rule (contract, "HTTP"): "retry", "response" or "fail". `failure` is
/// "connect" or "network" when no response arrived (then `status` is None); the lists,
/// when given, replace the default methods and statuses. The JS wrapper checks types.
#[napi]
pub fn classify_http(
    method: String,
    status: Option<f64>,
    failure: Option<String>,
    retry_methods: Option<Vec<String>>,
    retry_statuses: Option<Vec<f64>>,
    idempotency_key: Option<String>,
    honour_idempotency_key: Option<bool>,
) -> napi::Result<String> {
    guarded(|| {
        use retryrs::{classify_request, HttpOutcome, HttpRules};
        let as_status = |s: f64| -> napi::Result<u16> {
            if s.fract() == 0.0 && (0.0..=f64::from(u16::MAX)).contains(&s) {
                Ok(s as u16)
            } else {
                Err(napi::Error::new(napi::Status::InvalidArg, format!("not an HTTP status: {s}")))
            }
        };
        let outcome = match (status, failure.as_deref()) {
            (Some(s), None) => HttpOutcome::Status(as_status(s)?),
            (None, Some("connect")) => HttpOutcome::ConnectFailed,
            (None, Some("network")) => HttpOutcome::NetworkFailed,
            _ => {
                return Err(napi::Error::new(
                    napi::Status::InvalidArg,
                    "classifyHttp needs exactly one of status or failure ('connect' or 'network')",
                ))
            }
        };
        let methods: Option<Vec<&str>> = retry_methods.as_ref().map(|l| l.iter().map(String::as_str).collect());
        let statuses: Option<Vec<u16>> = match retry_statuses {
            None => None,
            Some(l) => Some(l.into_iter().map(as_status).collect::<napi::Result<_>>()?),
        };
        let rules = HttpRules {
            methods: methods.as_deref(),
            statuses: statuses.as_deref(),
            idempotency_key: honour_idempotency_key.unwrap_or(true),
        };
        Ok(classify_request(&method, idempotency_key.as_deref(), outcome, &rules).as_str().to_owned())
    })
}

/// The URL with credentials and the values of the core's query keys (and `extra` ones)
/// replaced by `REDACTED` (OpenTelemetry's `url.full` rule, widened).
#[napi]
pub fn redact_url(url: String, extra: Option<Vec<String>>) -> napi::Result<String> {
    guarded(|| Ok(retryrs::redact_url_with(&url, extra.as_deref().unwrap_or(&[]))))
}

/// Checks a helper's `redactQuery` keys when it is made: an error names the bad key.
#[napi]
pub fn check_redact_keys(keys: Vec<String>) -> napi::Result<()> {
    guarded(|| retryrs::check_redact_keys(&keys).map_err(|m| napi::Error::new(napi::Status::InvalidArg, m)))
}

/// The query keys every helper redacts (the core's one list).
#[napi]
pub fn redacted_query_keys() -> napi::Result<Vec<String>> {
    guarded(|| Ok(retryrs::REDACTED_QUERY_KEYS.iter().map(|k| (*k).to_string()).collect()))
}

/// Whether a final response's status is an error (the core's `is_error_status`): the call
/// then ends `rejected`, not `success`, in events and metrics.
#[napi]
pub fn is_failed_status(status: f64) -> napi::Result<bool> {
    guarded(|| {
        Ok(status.fract() == 0.0
            && (0.0..=f64::from(u16::MAX)).contains(&status)
            && retryrs::is_error_status(status as u16))
    })
}

/// The idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
#[napi]
pub fn idempotent_methods() -> napi::Result<Vec<String>> {
    guarded(|| Ok(retryrs::IDEMPOTENT_METHODS.iter().map(|m| (*m).to_string()).collect()))
}
