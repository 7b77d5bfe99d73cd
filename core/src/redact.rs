//! URLs made safe to show: what events, errors and log lines say about a request. The
//! rule is OpenTelemetry's for `url.full`, applied in one place for every host's HTTP
//! helper.

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
