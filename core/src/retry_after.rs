//! Retry-After values (RFC 9110 §10.2.3) and the HTTP statuses worth retrying.

use std::time::{Duration, SystemTime};

/// The statuses the helpers treat as transient: request timeout, too early, too many
/// requests, and the server-side 500, 502, 503, 504.
pub const RETRYABLE_STATUSES: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];

/// Whether an HTTP status is worth retrying.
pub fn is_retryable_status(status: u16) -> bool {
    RETRYABLE_STATUSES.contains(&status)
}

/// The wait a `Retry-After` value asks for, relative to `now`.
///
/// Accepts delay-seconds (ASCII digits only, surrounding whitespace allowed) and the three
/// HTTP-date forms (IMF-fixdate, RFC 850, asctime). A date in the past means zero; garbage,
/// negatives and fractions mean no hint (`None`); huge values saturate instead of
/// overflowing.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n');
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate: a value too large for u64 is still "a very long time".
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// [`parse_retry_after`] in whole milliseconds (rounded up: never sooner than asked),
/// saturating at `u64::MAX`: what the C and Node hosts hand their users.
pub fn parse_retry_after_ms(value: &str, now: SystemTime) -> Option<u64> {
    parse_retry_after(value, now).map(|d| u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        // Sun, 06 Nov 1994 08:49:37 GMT, the RFC's own example date.
        SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    #[test]
    fn delay_seconds() {
        assert_eq!(parse_retry_after("120", now()), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("  7 \t", now()), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0", now()), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999999999999999999999", now()), Some(Duration::from_secs(u64::MAX)));
    }

    #[test]
    fn the_three_date_forms() {
        let later = Some(Duration::from_secs(60));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now()), later);
        assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", now()), later);
        assert_eq!(parse_retry_after("Sun Nov  6 08:50:37 1994", now()), later);
    }

    #[test]
    fn milliseconds_round_up_and_saturate() {
        assert_eq!(parse_retry_after_ms("2", now()), Some(2000));
        assert_eq!(parse_retry_after_ms("18446744073709551615", now()), Some(u64::MAX));
        assert_eq!(parse_retry_after_ms("x", now()), None);
    }

    #[test]
    fn a_past_date_means_zero() {
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now()), Some(Duration::ZERO));
    }

    #[test]
    fn garbage_negatives_and_fractions_mean_no_hint() {
        for bad in ["", "  ", "-5", "1.5", "+3", "1e3", "soon", "Sun, 06 Nov 1994", "12 s", "٣"] {
            assert_eq!(parse_retry_after(bad, now()), None, "{bad:?}");
        }
    }

    #[test]
    fn retryable_statuses() {
        for s in RETRYABLE_STATUSES {
            assert!(is_retryable_status(s));
        }
        for s in [200, 400, 401, 404, 409, 501, 505] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
