//! HTTP classification and URL redaction for the hosts' HTTP helpers (the contract's
//! § HTTP): which failures of which requests are worth another attempt, decided here once
//! so that the requests/httpx adapters, the fetch wrapper and the C example agree.

use crate::retry_after::is_retryable_status;

/// The methods RFC 9110 § 9.2.2 calls idempotent (POST, PATCH and CONNECT are not):
/// sending one twice has the effect of sending it once, so a failure after it was sent
/// may be retried.
pub const IDEMPOTENT_METHODS: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];

/// Whether a request method is idempotent (ASCII case-insensitive: clients upper-case the
/// standard methods, but a caller may hand over `"get"`).
pub fn is_idempotent(method: &str) -> bool {
    IDEMPOTENT_METHODS.iter().any(|m| m.eq_ignore_ascii_case(method))
}

/// How one HTTP request ended, in the words the classification needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpOutcome {
    /// A response arrived with this status.
    Status(u16),
    /// No connection was made (refused, DNS, TLS handshake, connect timeout): the request
    /// was never sent.
    ConnectFailed,
    /// Any other network failure (reset, read timeout, a broken response): the server
    /// may have acted on the request.
    NetworkFailed,
}

/// Whether an HTTP outcome is transient (worth another attempt).
///
/// `methods` replaces the idempotent set and `statuses` the retryable statuses
/// ([`crate::RETRYABLE_STATUSES`]) when given. A connect failure is transient for every
/// method; a network failure or a listed status only for a listed method; any other status
/// is a response, returned as it is.
pub fn http_transient(method: &str, outcome: HttpOutcome, methods: Option<&[&str]>, statuses: Option<&[u16]>) -> bool {
    let listed = || match methods {
        Some(list) => list.iter().any(|m| m.eq_ignore_ascii_case(method)),
        None => is_idempotent(method),
    };
    match outcome {
        HttpOutcome::ConnectFailed => true,
        HttpOutcome::NetworkFailed => listed(),
        HttpOutcome::Status(status) => {
            let retryable = match statuses {
                Some(list) => list.contains(&status),
                None => is_retryable_status(status),
            };
            retryable && listed()
        }
    }
}

/// The query parameters whose values OpenTelemetry's `url.full` rule redacts by default:
/// request signatures and the access keys that go with them.
pub const REDACTED_QUERY_KEYS: [&str; 4] = ["AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature"];

/// A URL made safe for events, errors and logs, by OpenTelemetry's rule for `url.full`:
/// credentials (`user:password@`) become `REDACTED:REDACTED@`, and the values of the
/// signing query parameters ([`REDACTED_QUERY_KEYS`]) become `REDACTED`. Everything else
/// is kept as given.
pub fn redact_url(url: &str) -> String {
    let (before_fragment, fragment) = match url.find('#') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let (head, query) = match before_fragment.find('?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i + 1..])),
        None => (before_fragment, None),
    };
    let mut out = String::with_capacity(url.len() + 16);
    match head.find("://") {
        Some(i) => {
            let authority_start = i + 3;
            let rest = &head[authority_start..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let authority = &rest[..authority_end];
            out.push_str(&head[..authority_start]);
            match authority.rfind('@') {
                Some(at) => {
                    out.push_str("REDACTED:REDACTED");
                    out.push_str(&authority[at..]);
                }
                None => out.push_str(authority),
            }
            out.push_str(&rest[authority_end..]);
        }
        None => out.push_str(head),
    }
    if let Some(query) = query {
        out.push('?');
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let key = pair.split_once('=').map_or(pair, |(k, _)| k);
            if pair.contains('=') && REDACTED_QUERY_KEYS.contains(&key) {
                out.push_str(key);
                out.push_str("=REDACTED");
            } else {
                out.push_str(pair);
            }
        }
    }
    out.push_str(fragment);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use HttpOutcome::*;

    #[test]
    fn idempotent_methods_any_case() {
        for m in ["GET", "get", "Head", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            assert!(is_idempotent(m), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "", "GETS"] {
            assert!(!is_idempotent(m), "{m}");
        }
    }

    #[test]
    fn the_contract_table() {
        assert!(http_transient("GET", Status(503), None, None));
        assert!(http_transient("PUT", Status(429), None, None));
        assert!(!http_transient("GET", Status(404), None, None));
        assert!(!http_transient("GET", Status(200), None, None));
        assert!(!http_transient("POST", Status(503), None, None));
        assert!(http_transient("POST", ConnectFailed, None, None));
        assert!(!http_transient("POST", NetworkFailed, None, None));
        assert!(http_transient("DELETE", NetworkFailed, None, None));
        for s in crate::RETRYABLE_STATUSES {
            assert!(http_transient("GET", Status(s), None, None), "{s}");
        }
    }

    #[test]
    fn listed_methods_and_statuses_replace_the_defaults() {
        let methods: &[&str] = &["post"];
        assert!(http_transient("POST", Status(503), Some(methods), None));
        assert!(http_transient("POST", NetworkFailed, Some(methods), None));
        assert!(!http_transient("GET", Status(503), Some(methods), None));
        assert!(http_transient("GET", ConnectFailed, Some(&[]), None));
        assert!(http_transient("GET", Status(404), None, Some(&[404])));
        assert!(!http_transient("GET", Status(503), None, Some(&[404])));
    }

    #[test]
    fn redaction_follows_the_otel_url_full_rule() {
        assert_eq!(
            redact_url("https://user:secret@example.com:8443/a/b?sig=abc&x=1&Signature=s2#frag"),
            "https://REDACTED:REDACTED@example.com:8443/a/b?sig=REDACTED&x=1&Signature=REDACTED#frag"
        );
        assert_eq!(
            redact_url("http://tok@h/p?AWSAccessKeyId=K&X-Goog-Signature=G"),
            "http://REDACTED:REDACTED@h/p?AWSAccessKeyId=REDACTED&X-Goog-Signature=REDACTED"
        );
        assert_eq!(redact_url("http://h/p?signature=keep&sig&a=b"), "http://h/p?signature=keep&sig&a=b");
        assert_eq!(redact_url("http://h/a@b"), "http://h/a@b");
        assert_eq!(redact_url("/relative?sig=x"), "/relative?sig=REDACTED");
        assert_eq!(redact_url(""), "");
    }
}
