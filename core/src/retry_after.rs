//! Retry-After values (RFC 9110 §10.2.3).

use std::time::{Duration, SystemTime};

use crate::engine::Verdict;

/// An error that can carry the wait a server asked for (a `Retry-After` it read), so a
/// classifier can hand it to the engine as the hint: implement it on your error type, no
/// boxing needed, and pass [`transient`] (or your own classifier using it).
///
/// ```
/// use retryrs::{RetryAfter, Verdict};
/// use std::time::Duration;
///
/// struct Throttled { retry_after: Option<Duration> }
/// impl RetryAfter for Throttled {
///     fn retry_after(&self) -> Option<Duration> { self.retry_after }
/// }
/// let e = Throttled { retry_after: Some(Duration::from_secs(1)) };
/// assert_eq!(retryrs::transient(&e), Verdict::Transient { hint: Some(Duration::from_secs(1)) });
/// ```
pub trait RetryAfter {
    /// The minimum wait the failure asks for, if it carries one.
    fn retry_after(&self) -> Option<Duration>;
}

impl RetryAfter for std::io::Error {
    /// An I/O error carries no server hint.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

impl<E: RetryAfter + ?Sized> RetryAfter for &E {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<E: RetryAfter + ?Sized> RetryAfter for Box<E> {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

/// A classifier: every error is transient, with the hint it carries.
pub fn transient<E: RetryAfter + ?Sized>(error: &E) -> Verdict {
    Verdict::Transient { hint: error.retry_after() }
}

/// The wait a `Retry-After` value asks for, relative to `now`.
///
/// Accepts delay-seconds (ASCII digits only, surrounding whitespace allowed) and the three
/// HTTP-date forms (IMF-fixdate, RFC 850, asctime). A date in the past, before 1970
/// included, means zero; a weekday that does not match the date is not checked; an RFC 850
/// two-digit year whose date would be more than 50 years after `now` is the most recent
/// past year with those digits (RFC 9110). Garbage, negatives and fractions mean no hint
/// (`None`). Both forms saturate the same way, at the longest wait the engine ever asks
/// for ([`crate::knob::MAX_WAIT_MS`], 9e15 ms, about 285,000 years): delay-seconds past
/// it, and never a date (year 9999 is about 2.5e11 s away), so a far date is its exact
/// wait. Every host then hands back the same clamp (seconds, or milliseconds that fit a
/// double exactly), not `u64::MAX` of its own unit.
///
/// The HTTP-date forms need the `http-date` feature (on by default); without it a date
/// means no hint.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n');
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate: a value too large for u64 is still "a very long time".
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs).min(longest()));
    }
    http_date_wait(value, now).map(|d| d.min(longest()))
}

/// Where a Retry-After value saturates: the engine's longest wait.
fn longest() -> Duration {
    Duration::from_millis(crate::knob::MAX_WAIT_MS)
}

/// The wait until an HTTP-date, from `now` (zero when it is past).
#[cfg(feature = "http-date")]
fn http_date_wait(value: &str, now: SystemTime) -> Option<Duration> {
    let now_ns = unix_nanos(now);
    let when_s = crate::http_date::parse(value, now_ns.div_euclid(1_000_000_000) as i64)?;
    let wait_ns = (i128::from(when_s) * 1_000_000_000 - now_ns).max(0);
    let secs = u64::try_from(wait_ns / 1_000_000_000).unwrap_or(u64::MAX);
    Some(Duration::new(secs, (wait_ns % 1_000_000_000) as u32))
}

/// Without the `http-date` feature a date is not read: no hint.
#[cfg(not(feature = "http-date"))]
fn http_date_wait(_value: &str, _now: SystemTime) -> Option<Duration> {
    None
}

/// Nanoseconds since the Unix epoch, negative before it.
#[cfg(feature = "http-date")]
fn unix_nanos(t: SystemTime) -> i128 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// [`parse_retry_after`] in whole milliseconds (rounded up: never sooner than asked): what
/// the C and Node hosts hand their users.
pub fn parse_retry_after_ms(value: &str, now: SystemTime) -> Option<u64> {
    parse_retry_after(value, now).map(|d| u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

#[cfg(all(test, not(feature = "http-date")))]
mod without_dates {
    #[test]
    fn a_date_is_no_hint_and_seconds_still_are() {
        let now = std::time::SystemTime::now();
        assert_eq!(super::parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), None);
        assert_eq!(super::parse_retry_after(" 7 ", now), Some(std::time::Duration::from_secs(7)));
    }
}

#[cfg(all(test, feature = "http-date"))]
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
        // Saturated at the engine's longest wait, 9e15 ms, in both forms.
        let longest = Some(Duration::from_millis(9_000_000_000_000_000));
        assert_eq!(parse_retry_after("99999999999999999999999999", now()), longest);
        assert_eq!(parse_retry_after("99999999999999999999", now()), longest);
        assert_eq!(parse_retry_after("9000000000000", now()), longest);
        assert_eq!(parse_retry_after("9000000000001", now()), longest);
        assert_eq!(parse_retry_after("8999999999999", now()), Some(Duration::from_secs(8_999_999_999_999)));
        assert_eq!(parse_retry_after_ms("99999999999999999999", now()), Some(9_000_000_000_000_000));
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
        assert_eq!(parse_retry_after_ms("18446744073709551615", now()), Some(crate::knob::MAX_WAIT_MS));
        assert_eq!(parse_retry_after_ms("x", now()), None);
    }

    #[test]
    fn a_past_date_means_zero() {
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now()), Some(Duration::ZERO));
    }

    #[test]
    fn lenient_dates_per_rfc_9110() {
        // Before 1970 is still the past: zero, not "no hint".
        assert_eq!(parse_retry_after("Fri, 01 Jan 1960 00:00:00 GMT", now()), Some(Duration::ZERO));
        // The RFC's example with the wrong weekday (07 Nov 1994 was a Monday) is still a date.
        assert_eq!(parse_retry_after("Sun, 07 Nov 1994 08:48:37 GMT", now()), Some(Duration::from_secs(86_340)));
        // Read in late 2026, "80" is 1980 (2080 would be more than 50 years ahead): past.
        let in_2026 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_083_200);
        assert_eq!(parse_retry_after("Monday, 01-Jan-80 00:00:00 GMT", in_2026), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Friday, 01-Jan-27 00:00:00 GMT", in_2026),
            Some(Duration::from_secs(1_798_761_600 - 1_796_083_200))
        );
        // The 50 years are timestamps, not calendar years: on 2026-12-01, 31-Dec-76 would
        // be more than 50 years ahead, so it is 1976, long past.
        let dec_2026 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_083_200);
        assert_eq!(parse_retry_after("Thursday, 31-Dec-76 00:00:00 GMT", dec_2026), Some(Duration::ZERO));
        // A far date is its exact wait (no saturation at 2^64 ns, about 584 years).
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", dec_2026),
            Some(Duration::from_secs(251_606_217_599))
        );
        // A "now" before 1970 works too.
        let in_1960 = SystemTime::UNIX_EPOCH - Duration::from_secs(315_619_200);
        assert_eq!(parse_retry_after("Fri, 01 Jan 1960 00:01:00 GMT", in_1960), Some(Duration::from_secs(60)));
    }

    #[test]
    fn garbage_negatives_and_fractions_mean_no_hint() {
        for bad in ["", "  ", "-5", "1.5", "+3", "1e3", "soon", "Sun, 06 Nov 1994", "12 s", "٣"] {
            assert_eq!(parse_retry_after(bad, now()), None, "{bad:?}");
        }
    }
}
