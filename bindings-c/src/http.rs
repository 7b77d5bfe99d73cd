//! HTTP helpers: the Retry-After parser, the retryable-status list and the HTTP
//! classification, all the core's.

use std::ffi::{c_char, CStr};
use std::time::{Duration, SystemTime};

use crate::ffi::{arg_mut, guard_status, guard_value, Failure};
use crate::types::*;
use retryrs::propagation::ServerPushback;
use retryrs::{classify_request, HttpOutcome, HttpRules, HttpVerdict};

/// Parses a Retry-After header value (delay-seconds or any HTTP-date form) relative to
/// the current system time. On RETRYRS_OK, *has_hint says whether the value was valid
/// and *hint_ms holds the wait in ms (rounded up; 0 for a past date; a larger value
/// saturates at RETRYRS_MAX_DELAY_MS, the longest wait); garbage, negatives and
/// fractions give *has_hint = false.
/// Pass *hint_ms as the attempt callback's hint (as a double).
#[no_mangle]
pub unsafe extern "C" fn retryrs_parse_retry_after(
    value: *const c_char,
    has_hint: *mut bool,
    hint_ms: *mut u64,
) -> retryrs_status {
    guard_status("retryrs_parse_retry_after", || parse(value, SystemTime::now(), has_hint, hint_ms))
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
    guard_status("retryrs_parse_retry_after_at", || {
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
    guard_value("retryrs_is_retryable_status", false, || u16::try_from(status).is_ok_and(retryrs::is_retryable_status))
}

/// How an HTTP request ended, for retryrs_http_classify().
pub type retryrs_http_outcome = i32;
/// A response arrived; `status` is its status.
pub const RETRYRS_HTTP_RESPONSE: retryrs_http_outcome = 0;
/// The connection could not be established (refused, DNS, TLS handshake, connect
/// timeout): the request was never sent, so it is transient for every method.
pub const RETRYRS_HTTP_CONNECT_FAILED: retryrs_http_outcome = 1;
/// Any other network failure (reset, read timeout): transient only for a method that
/// may be repeated.
pub const RETRYRS_HTTP_NETWORK_FAILED: retryrs_http_outcome = 2;

/// The core's HTTP rule, the same in every host (contract, "HTTP"). Writes to *verdict:
/// RETRYRS_TRANSIENT (retry; a Retry-After header on the response is the hint, and its
/// body should be released first), RETRYRS_SUCCESS (a response to hand back as it is:
/// the call is over) or RETRYRS_PERMANENT (a network failure that must not be repeated).
/// The verdict can be returned from an attempt callback as it is.
///
/// `method` is the request method (compared ignoring ASCII case). `status` is read only
/// for RETRYRS_HTTP_RESPONSE. `retry_methods` (`retry_methods_len` strings) replaces the
/// idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) and `retry_statuses`
/// (`retry_statuses_len` values) replaces the retryable statuses (408, 425, 429, 500,
/// 502, 503, 504); NULL keeps the default list, and a non-NULL list of length 0 is empty.
/// RETRYRS_INVALID_ARGUMENT for a NULL method or verdict, an unknown outcome, a status
/// outside 0..65535, a NULL list with a nonzero length or a NULL string in the list.
#[no_mangle]
pub unsafe extern "C" fn retryrs_http_classify(
    method: *const c_char,
    outcome: retryrs_http_outcome,
    status: i32,
    retry_methods: *const *const c_char,
    retry_methods_len: usize,
    retry_statuses: *const i32,
    retry_statuses_len: usize,
    verdict: *mut retryrs_verdict_value,
) -> retryrs_status {
    guard_status("retryrs_http_classify", || {
        let lists = Lists { retry_methods, retry_methods_len, retry_statuses, retry_statuses_len };
        classify_into("retryrs_http_classify", method, None, outcome, status, lists, verdict)
    })
}

/// retryrs_http_classify() for a request that may carry an `Idempotency-Key` header:
/// `idempotency_key` is the header's value, or NULL when the request has none. With a
/// non-blank key, a POST or PATCH may be repeated like an idempotent method (IETF httpapi
/// draft; contract, "HTTP"), whatever `retry_methods` says; pass NULL to ignore the
/// header. The other parameters, the verdict and the errors are retryrs_http_classify()'s.
#[no_mangle]
pub unsafe extern "C" fn retryrs_http_classify_request(
    method: *const c_char,
    idempotency_key: *const c_char,
    outcome: retryrs_http_outcome,
    status: i32,
    retry_methods: *const *const c_char,
    retry_methods_len: usize,
    retry_statuses: *const i32,
    retry_statuses_len: usize,
    verdict: *mut retryrs_verdict_value,
) -> retryrs_status {
    guard_status("retryrs_http_classify_request", || {
        let key = (!idempotency_key.is_null()).then(|| CStr::from_ptr(idempotency_key).to_string_lossy());
        let lists = Lists { retry_methods, retry_methods_len, retry_statuses, retry_statuses_len };
        classify_into("retryrs_http_classify_request", method, key.as_deref(), outcome, status, lists, verdict)
    })
}

/// Applies a response's pushback to the `*verdict` retryrs_http_classify() gave it
/// (`count` headers `names[i]`: `values[i]`): a RETRYRS_TRANSIENT response whose server
/// said "don't retry" (`Retryrs-Pushback: -1`, a negative `grpc-retry-pushback-ms`,
/// `x-envoy-overloaded`) becomes RETRYRS_DONT_RETRY (not retried, still a failure for the
/// budget and the breaker; the response is the caller's, as when retries run out); one
/// that asked for a wait keeps RETRYRS_TRANSIENT and *hint_ms (optional) gets the wait
/// (pass it as the callback's hint; the retrier's wait hook may make it exact). Any
/// other verdict is left as it is (pushback never makes a response retried), and
/// *hint_ms is then untouched. RETRYRS_INVALID_ARGUMENT for a NULL verdict, NULL arrays
/// with a nonzero count, or a NULL entry.
#[no_mangle]
pub unsafe extern "C" fn retryrs_http_pushback(
    verdict: *mut retryrs_verdict_value,
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
    hint_ms: *mut f64,
) -> retryrs_status {
    guard_status("retryrs_http_pushback", || {
        let v = arg_mut(verdict, "verdict")?;
        let pushback = crate::propagation::pushback(names, values, count)?;
        if *v == RETRYRS_TRANSIENT {
            match pushback {
                Some(ServerPushback::DontRetry) => *v = RETRYRS_DONT_RETRY,
                Some(ServerPushback::Wait(w)) => crate::ffi::write_opt(hint_ms, w.as_millis() as f64),
                None => {}
            }
        }
        Ok(())
    })
}

/// The user's lists as C passes them (NULL: the default list).
struct Lists {
    retry_methods: *const *const c_char,
    retry_methods_len: usize,
    retry_statuses: *const i32,
    retry_statuses_len: usize,
}

/// The body of both classify functions; `name` starts every error message.
unsafe fn classify_into(
    name: &str,
    method: *const c_char,
    idempotency_key: Option<&str>,
    outcome: retryrs_http_outcome,
    status: i32,
    lists: Lists,
    verdict: *mut retryrs_verdict_value,
) -> Result<(), Failure> {
    let Lists { retry_methods, retry_methods_len, retry_statuses, retry_statuses_len } = lists;
    if method.is_null() {
        return Err(Failure::invalid(format!("{name}: method must not be NULL")));
    }
    let out = arg_mut(verdict, "verdict")?;
    let method = CStr::from_ptr(method).to_string_lossy();
    let as_status = |s: i32, what: &str| {
        u16::try_from(s)
            .map_err(|_| Failure::invalid(format!("{name}: {what} must be an HTTP status (0..65535), got {s}")))
    };
    let outcome = match outcome {
        RETRYRS_HTTP_RESPONSE => HttpOutcome::Status(as_status(status, "status")?),
        RETRYRS_HTTP_CONNECT_FAILED => HttpOutcome::ConnectFailed,
        RETRYRS_HTTP_NETWORK_FAILED => HttpOutcome::NetworkFailed,
        other => {
            return Err(Failure::invalid(format!(
                "{name}: outcome must be RETRYRS_HTTP_RESPONSE, _CONNECT_FAILED or _NETWORK_FAILED, got {other}"
            )))
        }
    };
    let methods = c_list(name, "retry_methods", retry_methods, retry_methods_len, |i, &m| {
        if m.is_null() {
            Err(Failure::invalid(format!("{name}: retry_methods[{i}] is NULL")))
        } else {
            Ok(CStr::from_ptr(m).to_string_lossy())
        }
    })?;
    let statuses = c_list(name, "retry_statuses", retry_statuses, retry_statuses_len, |i, &s| {
        as_status(s, &format!("retry_statuses[{i}]"))
    })?;
    let method_refs: Option<Vec<&str>> = methods.as_ref().map(|l| l.iter().map(|m| m.as_ref()).collect());
    let rules = HttpRules { methods: method_refs.as_deref(), statuses: statuses.as_deref(), ..HttpRules::default() };
    *out = match classify_request(&method, idempotency_key, outcome, &rules) {
        HttpVerdict::Retry => RETRYRS_TRANSIENT,
        HttpVerdict::Response => RETRYRS_SUCCESS,
        HttpVerdict::Fail => RETRYRS_PERMANENT,
    };
    Ok(())
}

/// A list C passes as a pointer and a length, each item converted by `item` (given its
/// index): None for NULL with length 0 (the default list), an error naming `what` for
/// NULL with a nonzero length.
unsafe fn c_list<'l, T: 'l, U>(
    name: &str,
    what: &str,
    ptr: *const T,
    len: usize,
    mut item: impl FnMut(usize, &'l T) -> Result<U, Failure>,
) -> Result<Option<Vec<U>>, Failure> {
    match (ptr.is_null(), len) {
        (true, 0) => Ok(None),
        (true, n) => Err(Failure::invalid(format!("{name}: {what} is NULL but {what}_len is {n}"))),
        (false, n) => std::slice::from_raw_parts(ptr, n)
            .iter()
            .enumerate()
            .map(|(i, v)| item(i, v))
            .collect::<Result<_, _>>()
            .map(Some),
    }
}

/// Writes `url` made safe to show in logs into `buf`, by OpenTelemetry's rule for
/// `url.full`: `user:password@` becomes `REDACTED:REDACTED@`, and the values of the
/// query parameters AWSAccessKeyId, Signature, sig and X-Goog-Signature become REDACTED.
/// `buf` has `cap` bytes and is always NUL-terminated when `cap` > 0 (it may be NULL when
/// `cap` is 0). *len (optional) gets the redacted URL's length without the NUL: when it is
/// not below `cap` the output was cut short (call again with *len + 1 bytes).
/// RETRYRS_INVALID_ARGUMENT for a NULL url, or a NULL buf with a nonzero cap.
#[no_mangle]
pub unsafe extern "C" fn retryrs_redact_url(
    url: *const c_char,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> retryrs_status {
    guard_status("retryrs_redact_url", || {
        if url.is_null() {
            return Err(Failure::invalid("retryrs_redact_url: url must not be NULL"));
        }
        if buf.is_null() && cap > 0 {
            return Err(Failure::invalid(format!("retryrs_redact_url: buf is NULL but cap is {cap}")));
        }
        let redacted = retryrs::redact_url(&CStr::from_ptr(url).to_string_lossy());
        write_c_string(&redacted, buf, cap, len);
        Ok(())
    })
}

/// Writes `text` into the caller's `buf` of `cap` bytes, cut to fit and NUL-terminated
/// when `cap` > 0, and its whole length (without the NUL) to *len when given.
///
/// # Safety
/// `buf` is valid for `cap` bytes (NULL only with `cap` 0); `len` is NULL or writable.
pub(crate) unsafe fn write_c_string(text: &str, buf: *mut c_char, cap: usize, len: *mut usize) {
    let bytes = text.as_bytes();
    if cap > 0 {
        let n = bytes.len().min(cap - 1);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    if let Some(len) = len.as_mut() {
        *len = bytes.len();
    }
}
