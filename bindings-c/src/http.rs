//! HTTP helpers: the Retry-After parser and the retryable-status list, both the core's.

use std::ffi::{c_char, CStr};
use std::time::{Duration, SystemTime};

use crate::ffi::{arg_mut, guard_status, guard_value, Failure};
use crate::types::*;

/// Parses a Retry-After header value (delay-seconds or any HTTP-date form) relative to
/// the current system time. On RETRYRS_OK, *has_hint says whether the value was valid
/// and *hint_ms holds the wait in ms (rounded up; 0 for a past date; UINT64_MAX for a
/// value too large to count); garbage, negatives and fractions give *has_hint = false.
/// Pass *hint_ms as the attempt callback's hint (as a double).
#[no_mangle]
pub unsafe extern "C" fn retryrs_parse_retry_after(
    value: *const c_char,
    has_hint: *mut bool,
    hint_ms: *mut u64,
) -> retryrs_status {
    guard_status(|| parse(value, SystemTime::now(), has_hint, hint_ms))
}

/// retryrs_parse_retry_after() relative to `now_unix_ms` (milliseconds since the Unix
/// epoch; negative is before it), for tests and for callers with their own clock.
#[no_mangle]
pub unsafe extern "C" fn retryrs_parse_retry_after_at(
    value: *const c_char,
    now_unix_ms: i64,
    has_hint: *mut bool,
    hint_ms: *mut u64,
) -> retryrs_status {
    guard_status(|| {
        let offset = Duration::from_millis(now_unix_ms.unsigned_abs());
        let now = if now_unix_ms >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(offset)
        } else {
            SystemTime::UNIX_EPOCH.checked_sub(offset)
        }
        .ok_or_else(|| Failure::invalid(format!("now_unix_ms is out of range, got {now_unix_ms}")))?;
        parse(value, now, has_hint, hint_ms)
    })
}

unsafe fn parse(value: *const c_char, now: SystemTime, has_hint: *mut bool, hint_ms: *mut u64) -> Result<(), Failure> {
    if value.is_null() {
        return Err(Failure::invalid("value must not be NULL"));
    }
    let has = arg_mut(has_hint, "has_hint")?;
    let ms = arg_mut(hint_ms, "hint_ms")?;
    // A header that is not even UTF-8 is garbage like any other: no hint.
    let parsed = CStr::from_ptr(value).to_str().ok().and_then(|v| retryrs::parse_retry_after_ms(v, now));
    *has = parsed.is_some();
    *ms = parsed.unwrap_or(0);
    Ok(())
}

/// Whether an HTTP status is worth retrying: 408, 425, 429, 500, 502, 503, 504.
#[no_mangle]
pub extern "C" fn retryrs_is_retryable_status(status: i32) -> bool {
    guard_value(false, || u16::try_from(status).is_ok_and(retryrs::is_retryable_status))
}
