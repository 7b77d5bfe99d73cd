//! The wire format, read and written: `Retryrs-Context` (a structured-field-like
//! dictionary, `t=<ms left>, a=<attempt>[, r=?1]`), gRPC's `grpc-timeout`, and the plain
//! integers of the interop headers. Nothing here knows what a value means for a call:
//! [`crate::propagation::Inbound`] combines them.

use std::time::Duration;

/// The request header that carries the time left and the retry state (docs/propagation.md).
pub const CONTEXT_HEADER: &str = "Retryrs-Context";
/// gRPC's relative budget: 1 to 8 ASCII digits, then a unit (`H M S m u n`).
pub const GRPC_TIMEOUT_HEADER: &str = "grpc-timeout";
/// gRPC A6: how many attempts preceded this one.
pub const GRPC_PREVIOUS_ATTEMPTS_HEADER: &str = "grpc-previous-rpc-attempts";
/// Connect's relative budget, whole milliseconds (at most 10 digits).
pub const CONNECT_TIMEOUT_HEADER: &str = "connect-timeout-ms";
/// Envoy's budget for the next hop, read only on a listener marked internal.
pub const ENVOY_EXPECTED_TIMEOUT_HEADER: &str = "x-envoy-expected-rq-timeout-ms";
/// Envoy's attempt count (1 for the first), read only on a listener marked internal.
pub const ENVOY_ATTEMPT_COUNT_HEADER: &str = "x-envoy-attempt-count";

/// The longest `t` (and any millisecond count) the codec accepts: 10 digits.
pub const MAX_MS_DIGITS: usize = 10;

/// A `Retryrs-Context` value, read. `None` fields were absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextValue {
    /// `t`: the milliseconds the caller had left when it sent the request.
    pub t_ms: Option<u64>,
    /// `a`: the caller's attempt number (1-based).
    pub attempt: Option<u32>,
    /// `r=?1`: the caller itself runs inside a request that was a retry.
    pub retry: bool,
}

/// Why a header's value was ignored (counted by [`crate::propagation::Inbound`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The header's name.
    pub header: &'static str,
    /// What was wrong, in words.
    pub why: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ignored: {}", self.header, self.why)
    }
}

impl std::error::Error for Malformed {}

fn malformed(header: &'static str, why: impl Into<String>) -> Malformed {
    Malformed { header, why: why.into() }
}

/// A whole number of at most `max_digits` ASCII digits (no sign, no space), as SF
/// integers are written.
pub fn parse_digits(value: &str, max_digits: usize) -> Option<u64> {
    if value.is_empty() || value.len() > max_digits || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Reads a `Retryrs-Context` value. Members are `key=value` (or a bare key, true)
/// separated by commas with optional spaces; unknown keys are ignored (room for later
/// members); a later duplicate wins, as in RFC 8941. Any syntax error, or a known key with
/// a bad value (`t` not 1 to 10 digits, `a` not a whole number from 1, `r` not `?0`/`?1`),
/// makes the whole value malformed: it is ignored, never half-read.
pub fn parse_context(value: &str) -> Result<ContextValue, Malformed> {
    let bad = |why: String| malformed(CONTEXT_HEADER, why);
    let mut out = ContextValue::default();
    let trimmed = value.trim_matches([' ', '\t']);
    if trimmed.is_empty() {
        return Err(bad("empty value".into()));
    }
    for member in trimmed.split(',') {
        let member = member.trim_matches([' ', '\t']);
        let (key, val) = match member.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (member, None),
        };
        if !is_key(key) {
            return Err(bad(format!("{member:?} is not a key=value member")));
        }
        match key {
            "t" => match val.and_then(|v| parse_digits(v, MAX_MS_DIGITS)) {
                Some(ms) => out.t_ms = Some(ms),
                None => return Err(bad(format!("t must be 1 to 10 digits (milliseconds), got {member:?}"))),
            },
            "a" => match val.and_then(|v| parse_digits(v, MAX_MS_DIGITS)) {
                Some(n) if n >= 1 && n <= u64::from(u32::MAX) => out.attempt = Some(n as u32),
                _ => return Err(bad(format!("a must be a whole number from 1, got {member:?}"))),
            },
            "r" => match val {
                None | Some("?1") => out.retry = true,
                Some("?0") => out.retry = false,
                Some(_) => return Err(bad(format!("r must be ?1 or ?0, got {member:?}"))),
            },
            // Unknown members are skipped whatever their value (a bare item of any kind).
            _ if val.is_some_and(|v| v.is_empty()) => return Err(bad(format!("{member:?} has no value"))),
            _ => {}
        }
    }
    Ok(out)
}

/// An RFC 8941 key: a lowercase letter or `*`, then lowercase letters, digits, `_ - . *`.
fn is_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'*'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*'))
}

/// Reads a `grpc-timeout` value: 1 to 8 ASCII digits, then one case-sensitive unit,
/// `H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds, `n`
/// nanoseconds (gRPC over HTTP/2). `1S` is 1000 ms, `5M` 300000 ms, `5m` 5 ms;
/// `123456789m` (9 digits) is refused.
pub fn parse_grpc_timeout(value: &str) -> Result<Duration, Malformed> {
    let bad = |why: &str| malformed(GRPC_TIMEOUT_HEADER, format!("{why}, got {value:?}"));
    let Some(unit) = value.bytes().last() else { return Err(bad("empty value")) };
    let digits = &value[..value.len() - 1];
    let n = parse_digits(digits, 8).ok_or_else(|| bad("expected 1 to 8 digits and a unit (H M S m u n)"))?;
    Ok(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return Err(bad("the unit must be one of H M S m u n (case-sensitive)")),
    })
}

/// Writes a `grpc-timeout` value for `left`: whole milliseconds when they fit in 8
/// digits, else whole seconds, minutes, hours (truncated, so the next hop never gets more
/// than was left).
pub fn format_grpc_timeout(left: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ms = left.as_millis();
    if ms <= MAX {
        return format!("{ms}m");
    }
    let s = left.as_secs();
    if u128::from(s) <= MAX {
        return format!("{s}S");
    }
    if u128::from(s / 60) <= MAX {
        return format!("{}M", s / 60);
    }
    format!("{}H", (s / 3600).min(99_999_999))
}

/// Writes a `Retryrs-Context` value: `t=<ms>, a=<attempt>` (`t` left out when the call is
/// unbounded), then `, r=?1` when the call runs inside a request that was a retry.
pub fn format_context(t_ms: Option<u64>, attempt: u32, retry: bool) -> String {
    let mut out = match t_ms {
        Some(t) => format!("t={}, a={attempt}", t.min(9_999_999_999)),
        None => format!("a={attempt}"),
    };
    if retry {
        out.push_str(", r=?1");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_values() {
        assert_eq!(parse_context("t=300, a=1"), Ok(ContextValue { t_ms: Some(300), attempt: Some(1), retry: false }));
        assert_eq!(
            parse_context("a=2,t=5,r=?1").unwrap(),
            ContextValue { t_ms: Some(5), attempt: Some(2), retry: true }
        );
        assert_eq!(parse_context("t=300, zz=whatever, a=1").unwrap().t_ms, Some(300), "unknown keys skipped");
        assert!(parse_context("r").unwrap().retry, "a bare key is true");
        for bad in ["", "t=", "t=-1", "t=12345678901", "t=1.5", "a=0", "T=5", "t=5;a=1", "r=1", "t=5,,a=1", "x="] {
            assert!(parse_context(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn grpc_timeouts() {
        let ms = |v: &str| parse_grpc_timeout(v).map(|d| d.as_millis());
        assert_eq!(ms("1S"), Ok(1000));
        assert_eq!(ms("5M"), Ok(300_000));
        assert_eq!(ms("5m"), Ok(5));
        assert_eq!(ms("2H"), Ok(7_200_000));
        assert_eq!(parse_grpc_timeout("1500u"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_grpc_timeout("7n"), Ok(Duration::from_nanos(7)));
        assert_eq!(ms("12345678m"), Ok(12_345_678));
        for bad in ["123456789m", "5", "m", "5s", "5 m", "-5m", "", "5mm"] {
            assert!(parse_grpc_timeout(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn writing() {
        assert_eq!(format_context(Some(1999), 1, false), "t=1999, a=1");
        assert_eq!(format_context(Some(5), 2, true), "t=5, a=2, r=?1");
        assert_eq!(format_context(None, 3, false), "a=3");
        assert_eq!(format_grpc_timeout(Duration::from_millis(1999)), "1999m");
        assert_eq!(format_grpc_timeout(Duration::from_secs(200_000)), "200000S");
        for left in [Duration::from_millis(7), Duration::from_secs(200_000), Duration::from_secs(400_000_000)] {
            assert!(parse_grpc_timeout(&format_grpc_timeout(left)).unwrap() <= left);
        }
    }
}
