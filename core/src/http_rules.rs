//! HTTP classification, in one place for every host: which methods may be repeated, which
//! statuses are worth retrying, and what a request's outcome means for the retry loop
//! (contract, "HTTP"), and what a server's pushback does to a retry ([`retry_with`]).
//! The hosts' HTTP helpers ask here and decide nothing themselves.

use std::time::Duration;

use crate::engine::Verdict;
pub use crate::propagation::{read_pushback, ServerPushback};

/// The statuses the helpers treat as transient: request timeout, too early, too many
/// requests, and the server-side 500, 502, 503, 504.
pub const RETRYABLE_STATUSES: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];

/// The methods RFC 9110 defines as idempotent: repeating them is safe.
pub const IDEMPOTENT_METHODS: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];

/// Whether an HTTP status is worth retrying.
pub fn is_retryable_status(status: u16) -> bool {
    RETRYABLE_STATUSES.contains(&status)
}

/// Whether a final response reports a failure, for telemetry: a status of 400 or more
/// (OpenTelemetry's HTTP client rule). A call that ends on one is `rejected` (or
/// `exhausted`, when it was retried), never `success`, and its `error.type` is the status.
pub fn is_error_status(status: u16) -> bool {
    status >= 400
}

/// Whether a request method is idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
/// Method names are compared ignoring ASCII case, since clients disagree on spelling.
pub fn is_idempotent(method: &str) -> bool {
    IDEMPOTENT_METHODS.iter().any(|m| m.eq_ignore_ascii_case(method))
}

/// How a request ended, as far as retrying cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpOutcome {
    /// A response arrived with this status.
    Status(u16),
    /// The connection could not be established (refused, DNS, TLS handshake, connect
    /// timeout): the request was never sent.
    ConnectFailed,
    /// Any other network failure (reset, read timeout): the server may have acted on it.
    NetworkFailed,
}

/// What the retry loop does with an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVerdict {
    /// Transient: retry (a Retry-After header on the response is the hint; release the
    /// response's body first).
    Retry,
    /// A response to hand back as it is: the call is over, as it would be without retries.
    Response,
    /// A network failure that must not be repeated: the call ends with that error.
    Fail,
}

impl HttpVerdict {
    /// The spelling used in conformance vectors and host bindings.
    pub fn as_str(&self) -> &'static str {
        match self {
            HttpVerdict::Retry => "retry",
            HttpVerdict::Response => "response",
            HttpVerdict::Fail => "fail",
        }
    }
}

/// The request header that makes a POST or PATCH safe to send again (IETF httpapi
/// draft "The Idempotency-Key HTTP Header Field"): the server keeps the first outcome for
/// the key and answers a repeat with it.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// The methods an `Idempotency-Key` header makes repeatable (the draft's scope).
pub const IDEMPOTENCY_KEY_METHODS: [&str; 2] = ["POST", "PATCH"];

/// The user's overrides of the defaults: `None` keeps the contract's list.
#[derive(Debug, Clone, Copy)]
pub struct HttpRules<'a> {
    /// Methods that may be retried after a network failure or a retryable status
    /// (replaces the idempotent set; compared ignoring ASCII case).
    pub methods: Option<&'a [&'a str]>,
    /// Statuses worth retrying (replaces [`RETRYABLE_STATUSES`]).
    pub statuses: Option<&'a [u16]>,
    /// Whether a POST or PATCH carrying a non-empty `Idempotency-Key` header may be
    /// repeated like an idempotent method, whatever `methods` says (default `true`).
    pub idempotency_key: bool,
}

impl Default for HttpRules<'_> {
    fn default() -> Self {
        HttpRules { methods: None, statuses: None, idempotency_key: true }
    }
}

impl HttpRules<'_> {
    /// Whether a request may be sent again: its method is in the list (the idempotent
    /// set by default), or it is a POST/PATCH with an `Idempotency-Key` (value given as
    /// `idempotency_key`; a blank one does not count) and the rules honour the header.
    pub fn repeatable(&self, method: &str, idempotency_key: Option<&str>) -> bool {
        self.retries_method(method)
            || (self.idempotency_key
                && idempotency_key.is_some_and(|k| !k.trim().is_empty())
                && IDEMPOTENCY_KEY_METHODS.iter().any(|m| m.eq_ignore_ascii_case(method)))
    }

    fn retries_method(&self, method: &str) -> bool {
        match self.methods {
            Some(list) => list.iter().any(|m| m.eq_ignore_ascii_case(method)),
            None => is_idempotent(method),
        }
    }

    fn retries_status(&self, status: u16) -> bool {
        match self.statuses {
            Some(list) => list.contains(&status),
            None => is_retryable_status(status),
        }
    }
}

/// The contract's HTTP rule: a connection never established is transient for every
/// method (nothing was sent); any other network failure, and a retryable status, are
/// transient only for a method that may be repeated; any other status is a response.
pub fn classify(method: &str, outcome: HttpOutcome, rules: &HttpRules<'_>) -> HttpVerdict {
    classify_request(method, None, outcome, rules)
}

/// [`classify`] for a request whose `Idempotency-Key` header value (if it has one) is
/// `idempotency_key`: with the header, a POST or PATCH is repeatable like an idempotent
/// method (see [`HttpRules::repeatable`]).
pub fn classify_request(
    method: &str,
    idempotency_key: Option<&str>,
    outcome: HttpOutcome,
    rules: &HttpRules<'_>,
) -> HttpVerdict {
    match outcome {
        HttpOutcome::ConnectFailed => HttpVerdict::Retry,
        HttpOutcome::NetworkFailed if rules.repeatable(method, idempotency_key) => HttpVerdict::Retry,
        HttpOutcome::NetworkFailed => HttpVerdict::Fail,
        HttpOutcome::Status(s) if rules.retries_status(s) && rules.repeatable(method, idempotency_key) => {
            HttpVerdict::Retry
        }
        HttpOutcome::Status(_) => HttpVerdict::Response,
    }
}

/// What a response the rules retry ([`HttpVerdict::Retry`]) becomes once its server's
/// pushback is read ([`crate::propagation::read_pushback`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryWith {
    /// Retry, never sooner than `hint` (its Retry-After), as without pushback.
    Floor {
        /// The Retry-After hint, if any.
        hint: Option<Duration>,
    },
    /// Retry after exactly this wait (a non-negative pushback, gRPC A6's rule: it replaces
    /// the backoff and Retry-After; the deadline and `max_retry_after` still apply).
    Exact(Duration),
    /// Don't retry ([`Verdict::DontRetry`]): the response is handed over, and it still
    /// counts as a failure for budgets and breakers.
    DontRetry,
}

impl RetryWith {
    /// The engine's verdict: [`Verdict::DontRetry`], or a transient failure whose hint is
    /// the Retry-After (for [`RetryWith::Exact`], the exact wait: a host that cannot give
    /// the engine an exact wait waits at least that long).
    pub fn verdict(&self) -> Verdict {
        match *self {
            RetryWith::Floor { hint } => Verdict::Transient { hint },
            RetryWith::Exact(wait) => Verdict::Transient { hint: Some(wait) },
            RetryWith::DontRetry => Verdict::DontRetry,
        }
    }

    /// The exact wait a host hands the engine as [`crate::Plan::Exact`], if any.
    pub fn exact(&self) -> Option<Duration> {
        match *self {
            RetryWith::Exact(wait) => Some(wait),
            _ => None,
        }
    }
}

/// A retried response's fate, given its Retry-After hint and its pushback: "don't retry"
/// wins, a non-negative pushback is an exact wait, else the Retry-After floor. Pushback
/// never makes a response retried that the rules would hand over.
pub fn retry_with(retry_after: Option<Duration>, pushback: Option<ServerPushback>) -> RetryWith {
    match pushback {
        Some(ServerPushback::DontRetry) => RetryWith::DontRetry,
        Some(ServerPushback::Wait(wait)) => RetryWith::Exact(wait),
        None => RetryWith::Floor { hint: retry_after },
    }
}

/// [`retry_with`] for any verdict of the rules: `None` when the response is not one they
/// retry (pushback never makes a response retried), else its fate with its pushback.
pub fn with_pushback(
    verdict: HttpVerdict,
    retry_after: Option<Duration>,
    pushback: Option<ServerPushback>,
) -> Option<RetryWith> {
    (verdict == HttpVerdict::Retry).then(|| retry_with(retry_after, pushback))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushback_turns_a_retry_into_dont_retry_or_an_exact_wait() {
        let s = Duration::from_secs;
        assert_eq!(retry_with(Some(s(1)), None), RetryWith::Floor { hint: Some(s(1)) });
        assert_eq!(retry_with(Some(s(1)), Some(ServerPushback::DontRetry)).verdict(), Verdict::DontRetry);
        let exact = retry_with(Some(s(9)), Some(ServerPushback::Wait(s(2))));
        assert_eq!((exact.exact(), exact.verdict()), (Some(s(2)), Verdict::Transient { hint: Some(s(2)) }));
    }

    const DEFAULT: HttpRules<'static> = HttpRules { methods: None, statuses: None, idempotency_key: true };

    #[test]
    fn retryable_statuses() {
        for s in RETRYABLE_STATUSES {
            assert!(is_retryable_status(s));
        }
        for s in [200, 400, 401, 404, 409, 501, 505] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn error_statuses_are_400_and_up() {
        assert!(!is_error_status(200) && !is_error_status(304) && !is_error_status(399));
        assert!(is_error_status(400) && is_error_status(404) && is_error_status(503));
    }

    #[test]
    fn idempotent_methods() {
        for m in ["GET", "head", "Options", "TRACE", "PUT", "DELETE"] {
            assert!(is_idempotent(m), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "", "GETX"] {
            assert!(!is_idempotent(m), "{m}");
        }
    }

    #[test]
    fn the_contract_table() {
        use HttpOutcome::*;
        use HttpVerdict::*;
        assert_eq!(classify("POST", ConnectFailed, &DEFAULT), Retry);
        assert_eq!(classify("POST", NetworkFailed, &DEFAULT), Fail);
        assert_eq!(classify("GET", NetworkFailed, &DEFAULT), Retry);
        assert_eq!(classify("GET", Status(503), &DEFAULT), Retry);
        assert_eq!(classify("POST", Status(503), &DEFAULT), Response);
        assert_eq!(classify("GET", Status(404), &DEFAULT), Response);
        assert_eq!(classify("GET", Status(200), &DEFAULT), Response);
    }

    #[test]
    fn user_lists_replace_the_defaults() {
        use HttpOutcome::*;
        use HttpVerdict::*;
        let post = HttpRules { methods: Some(&["POST"]), ..HttpRules::default() };
        assert_eq!(classify("post", Status(503), &post), Retry);
        assert_eq!(classify("GET", Status(503), &post), Response, "the list replaces, not extends");
        assert_eq!(classify("POST", NetworkFailed, &post), Retry);
        let only_409 = HttpRules { statuses: Some(&[409]), ..HttpRules::default() };
        assert_eq!(classify("PUT", Status(409), &only_409), Retry);
        assert_eq!(classify("PUT", Status(503), &only_409), Response);
        assert_eq!(
            classify(
                "POST",
                ConnectFailed,
                &HttpRules { methods: Some(&[]), statuses: Some(&[]), idempotency_key: true }
            ),
            Retry
        );
    }

    #[test]
    fn an_idempotency_key_makes_post_and_patch_repeatable() {
        use HttpOutcome::*;
        use HttpVerdict::*;
        assert!(HttpRules::default().idempotency_key, "on by default");
        for method in ["POST", "patch"] {
            assert_eq!(classify_request(method, Some("k-1"), Status(503), &DEFAULT), Retry, "{method}");
            assert_eq!(classify_request(method, Some("k-1"), NetworkFailed, &DEFAULT), Retry, "{method}");
            assert_eq!(classify_request(method, None, Status(503), &DEFAULT), Response, "{method}");
            assert_eq!(classify_request(method, Some("  "), Status(503), &DEFAULT), Response, "blank key");
            assert_eq!(classify_request(method, Some("k-1"), Status(404), &DEFAULT), Response);
        }
        // Only POST and PATCH: the header does not make CONNECT or a custom method safe.
        assert_eq!(classify_request("CONNECT", Some("k"), Status(503), &DEFAULT), Response);
        // Turned off: the header is ignored.
        let off = HttpRules { idempotency_key: false, ..HttpRules::default() };
        assert_eq!(classify_request("POST", Some("k-1"), Status(503), &off), Response);
        assert_eq!(classify_request("POST", Some("k-1"), NetworkFailed, &off), Fail);
        // A method list narrower than the defaults still lets the header count.
        let get_only = HttpRules { methods: Some(&["GET"]), ..HttpRules::default() };
        assert_eq!(classify_request("POST", Some("k"), Status(503), &get_only), Retry);
        assert_eq!(classify("POST", Status(503), &get_only), Response);
    }
}
