//! URLs made safe to show: what events, errors and log lines say about a request. The
//! rule is OpenTelemetry's for `url.full`, widened to the common credential names, and
//! applied in one place for every host's HTTP helper.

/// The query parameters whose values OpenTelemetry's `url.full` rule redacts by default
/// (semantic conventions 1.29 and later: request signatures and the access keys that go
/// with them).
pub const OTEL_REDACTED_QUERY_KEYS: [&str; 4] = ["AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature"];

/// Every query parameter whose value [`redact_url`] replaces with `REDACTED`: the
/// OpenTelemetry list ([`OTEL_REDACTED_QUERY_KEYS`]), then the common credential names
/// (OAuth tokens, API keys, passwords, AWS SigV4 presigned URLs). Matched without regard
/// to ASCII case, and after percent-decoding the key. Helpers add keys per instance
/// (Python `redact_query=[...]`, Node `redactQuery: [...]`) through [`redact_url_with`].
pub const REDACTED_QUERY_KEYS: [&str; 16] = [
    "AWSAccessKeyId",
    "Signature",
    "sig",
    "X-Goog-Signature",
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "api_key",
    "apikey",
    "key",
    "client_secret",
    "password",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
];

/// A URL made safe for events, errors and logs: credentials (`user:password@`) become
/// `REDACTED:REDACTED@`, and the values of the query parameters in
/// [`REDACTED_QUERY_KEYS`] become `REDACTED` (in the query, and in a fragment written as
/// `key=value` pairs, where OAuth's implicit flow puts `access_token`). Everything else is
/// kept as given.
pub fn redact_url(url: &str) -> String {
    redact_url_with::<&str>(url, &[])
}

/// [`redact_url`], redacting the values of `extra` query keys too (matched like the
/// built-in ones: ASCII case-insensitive, percent-decoded). Keys are checked when a helper
/// is made, with [`check_redact_keys`]; a key that could never match here is simply never
/// matched.
pub fn redact_url_with<S: AsRef<str>>(url: &str, extra: &[S]) -> String {
    let (before_fragment, fragment) = match url.find('#') {
        Some(i) => (&url[..i], Some(&url[i + 1..])),
        None => (url, None),
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
        push_pairs(&mut out, query, extra);
    }
    if let Some(fragment) = fragment {
        out.push('#');
        push_pairs(&mut out, fragment, extra);
    }
    out
}

/// Checks the extra keys a helper was given to redact: each a non-empty string without
/// `&`, `=` or `#` (which could never name a query parameter). The error names the key.
pub fn check_redact_keys<S: AsRef<str>>(keys: &[S]) -> Result<(), String> {
    for key in keys {
        let key = key.as_ref();
        if key.is_empty() {
            return Err("a query key to redact must not be empty".into());
        }
        if let Some(c) = key.chars().find(|c| matches!(c, '&' | '=' | '#' | '?')) {
            return Err(format!("the query key to redact {key:?} contains {c:?}: give the parameter's name alone"));
        }
    }
    Ok(())
}

/// Whether the value of query parameter `key` (as written in the URL) is redacted.
pub fn is_redacted_key<S: AsRef<str>>(key: &str, extra: &[S]) -> bool {
    let decoded = percent_decode(key);
    let key = decoded.as_deref().unwrap_or(key);
    REDACTED_QUERY_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key))
        || extra.iter().any(|k| k.as_ref().eq_ignore_ascii_case(key))
}

fn push_pairs<S: AsRef<str>>(out: &mut String, pairs: &str, extra: &[S]) {
    for (i, pair) in pairs.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((key, _)) if is_redacted_key(key, extra) => {
                out.push_str(key);
                out.push_str("=REDACTED");
            }
            _ => out.push_str(pair),
        }
    }
}

/// `%XX` escapes (and `+`, a space in form encoding) decoded, when there are any and the
/// result is UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains(['%', '+']) {
        return None;
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
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
        assert_eq!(redact_url("http://h/p?signatures=keep&sig&a=b"), "http://h/p?signatures=keep&sig&a=b");
        assert_eq!(redact_url("http://h/a@b"), "http://h/a@b");
        assert_eq!(redact_url("/relative?sig=x"), "/relative?sig=REDACTED");
        assert_eq!(redact_url(""), "");
    }

    #[test]
    fn common_credentials_are_redacted_whatever_their_case_or_encoding() {
        assert_eq!(
            redact_url("https://h/p?token=abc&X-Amz-Signature=def&q=1"),
            "https://h/p?token=REDACTED&X-Amz-Signature=REDACTED&q=1"
        );
        assert_eq!(
            redact_url("https://h/p?ACCESS_TOKEN=a&Api_Key=b&x-amz-credential=c&X-Amz-Security-Token=d&signature=e"),
            "https://h/p?ACCESS_TOKEN=REDACTED&Api_Key=REDACTED&x-amz-credential=REDACTED&X-Amz-Security-Token=REDACTED&signature=REDACTED"
        );
        for key in REDACTED_QUERY_KEYS {
            let url = format!("http://h/?{key}=s3cr3t");
            assert_eq!(redact_url(&url), format!("http://h/?{key}=REDACTED"), "{key}");
        }
        // A percent-encoded key is the same key.
        assert_eq!(
            redact_url("http://h/?X%2DAmz%2DSignature=s&%74oken=t"),
            "http://h/?X%2DAmz%2DSignature=REDACTED&%74oken=REDACTED"
        );
        // OAuth's implicit flow puts the token in the fragment.
        assert_eq!(redact_url("http://h/cb#access_token=t&state=1"), "http://h/cb#access_token=REDACTED&state=1");
        // Names that merely contain a listed one are not it.
        assert_eq!(redact_url("http://h/?monkey=1&tokens=2&keys=3"), "http://h/?monkey=1&tokens=2&keys=3");
        // A broken escape is compared as written.
        assert_eq!(redact_url("http://h/?to%6=1&%=2"), "http://h/?to%6=1&%=2");
    }

    #[test]
    fn a_helper_adds_its_own_keys() {
        let extra = ["session", "X-Custom-Auth"];
        assert_eq!(
            redact_url_with("http://h/?Session=a&x-custom-auth=b&token=c&other=d", &extra),
            "http://h/?Session=REDACTED&x-custom-auth=REDACTED&token=REDACTED&other=d"
        );
        assert!(check_redact_keys(&extra).is_ok());
        assert!(check_redact_keys(&[""]).unwrap_err().contains("empty"));
        assert!(check_redact_keys(&["a=b"]).unwrap_err().contains("\"a=b\""));
        assert!(check_redact_keys(&["x&y"]).is_err());
    }
}
