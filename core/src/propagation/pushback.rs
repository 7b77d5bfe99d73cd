//! A server's pushback on a response: "don't retry" (`Retryrs-Pushback: -1`,
//! `grpc-retry-pushback-ms` negative, `x-envoy-overloaded`) or an exact wait (a
//! non-negative value, as gRPC A6). The engine's [`Verdict::DontRetry`] is the answer to
//! the first: not retried, still a failure for budgets and breakers.
//!
//! [`Verdict::DontRetry`]: crate::Verdict::DontRetry

use std::time::Duration;

use super::codec::{parse_digits, MAX_MS_DIGITS};

/// retryrs' own pushback header: `-1` "don't retry", `N >= 0` "retry after exactly N ms".
pub const PUSHBACK_HEADER: &str = "Retryrs-Pushback";
/// gRPC A6's pushback: negative or unparseable "don't retry", `N >= 0` an exact wait.
pub const GRPC_PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";
/// Envoy's mark of a response it made because it is overloaded: never retried.
pub const ENVOY_OVERLOADED_HEADER: &str = "x-envoy-overloaded";

/// What a response's pushback asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPushback {
    /// Don't retry: the caller stops, counting the response as a failure.
    DontRetry,
    /// Retry after exactly this long (not a floor: A6's rule).
    Wait(Duration),
}

/// One pushback value: `-N` "don't retry", `N` (at most 10 digits) an exact wait in
/// milliseconds; anything else `None` (a malformed `Retryrs-Pushback` is ignored).
pub fn parse_pushback(value: &str) -> Option<ServerPushback> {
    let value = value.trim_matches([' ', '\t']);
    match value.strip_prefix('-') {
        Some(n) => parse_digits(n, MAX_MS_DIGITS).map(|_| ServerPushback::DontRetry),
        None => parse_digits(value, MAX_MS_DIGITS).map(|ms| ServerPushback::Wait(Duration::from_millis(ms))),
    }
}

/// The pushback among a response's headers (name, value; names ignoring ASCII case):
/// "don't retry" from any of them wins, else the longest exact wait, else `None`. An
/// unparseable `grpc-retry-pushback-ms` is "don't retry" (A6); an unparseable
/// `Retryrs-Pushback` is ignored.
pub fn read_pushback<'h>(headers: impl IntoIterator<Item = (&'h str, &'h str)>) -> Option<ServerPushback> {
    let mut wait: Option<Duration> = None;
    for (name, value) in headers {
        let said = if name.eq_ignore_ascii_case(PUSHBACK_HEADER) {
            parse_pushback(value)
        } else if name.eq_ignore_ascii_case(GRPC_PUSHBACK_HEADER) {
            Some(parse_pushback(value).unwrap_or(ServerPushback::DontRetry))
        } else if name.eq_ignore_ascii_case(ENVOY_OVERLOADED_HEADER) {
            Some(ServerPushback::DontRetry)
        } else {
            None
        };
        match said {
            Some(ServerPushback::DontRetry) => return Some(ServerPushback::DontRetry),
            Some(ServerPushback::Wait(w)) => wait = Some(wait.map_or(w, |x| x.max(w))),
            None => {}
        }
    }
    wait.map(ServerPushback::Wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(parse_pushback("-1"), Some(ServerPushback::DontRetry));
        assert_eq!(parse_pushback("250"), Some(ServerPushback::Wait(Duration::from_millis(250))));
        assert_eq!(parse_pushback("0"), Some(ServerPushback::Wait(Duration::ZERO)));
        for bad in ["", "-", "1.5", "abc", "12345678901", "+5"] {
            assert_eq!(parse_pushback(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn headers() {
        assert_eq!(read_pushback([("retryrs-pushback", "-1")]), Some(ServerPushback::DontRetry));
        assert_eq!(read_pushback([("X-Envoy-Overloaded", "true")]), Some(ServerPushback::DontRetry));
        assert_eq!(read_pushback([("grpc-retry-pushback-ms", "soon")]), Some(ServerPushback::DontRetry));
        assert_eq!(read_pushback([("retryrs-pushback", "soon")]), None);
        assert_eq!(
            read_pushback([("retryrs-pushback", "100"), ("grpc-retry-pushback-ms", "300")]),
            Some(ServerPushback::Wait(Duration::from_millis(300)))
        );
        assert_eq!(read_pushback([("retry-after", "1")]), None);
    }
}
