//! What the HTTP middlewares ([`reqwest_retry`](crate::reqwest_retry),
//! [`tower_retry`](crate::tower_retry)) share: the contract's HTTP rules (section 6a,
//! decided by [`crate::http_rules::classify_request`], with the request's `Idempotency-Key`) turned into the verdicts the executors take, and
//! the user's overrides, owned.

use std::time::{Duration, SystemTime};

use crate::engine::Verdict;
use crate::executor::ValueVerdict;
use crate::http_rules::{
    classify_request, read_pushback, retry_with, HttpOutcome, HttpRules, HttpVerdict, RetryWith, ServerPushback,
    IDEMPOTENCY_KEY_HEADER,
};

/// The methods and statuses a middleware retries: `None` keeps the contract's lists
/// (idempotent methods; 408, 425, 429, 500, 502, 503, 504). A POST or PATCH carrying an
/// `Idempotency-Key` is repeatable unless `ignore_idempotency_key` is set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    pub(crate) methods: Option<Vec<String>>,
    pub(crate) statuses: Option<Vec<u16>>,
    pub(crate) ignore_idempotency_key: bool,
}

/// The setters of the user's overrides, for a type with a `rules: Rules` field: the
/// reqwest middleware, tower's `RetryLayer` and `RetryPolicy` take the same ones, written
/// once (either feature may be on alone, so no links).
macro_rules! http_rules_setters {
    () => {
        /// The methods that may be retried after a network error or a retryable status
        /// (replaces the idempotent set; compared ignoring ASCII case).
        pub fn methods<S: Into<String>>(mut self, methods: impl IntoIterator<Item = S>) -> Self {
            self.rules.methods = Some(methods.into_iter().map(Into::into).collect());
            self
        }

        /// The statuses worth retrying (replaces 408, 425, 429, 500, 502, 503, 504).
        pub fn statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
            self.rules.statuses = Some(statuses.into_iter().collect());
            self
        }

        /// Whether a POST or PATCH carrying an `Idempotency-Key` header may be resent like an
        /// idempotent method (default `true`; IETF httpapi draft).
        pub fn idempotency_key(mut self, honour: bool) -> Self {
            self.rules.ignore_idempotency_key = !honour;
            self
        }
    };
}
pub(crate) use http_rules_setters;

/// A request's `Idempotency-Key` header value, if it has one that is text.
pub(crate) fn idempotency_key(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(IDEMPOTENCY_KEY_HEADER).and_then(|v| v.to_str().ok())
}

impl Rules {
    fn judge(&self, method: &str, idempotency_key: Option<&str>, outcome: HttpOutcome) -> HttpVerdict {
        let methods: Option<Vec<&str>> = self.methods.as_ref().map(|m| m.iter().map(String::as_str).collect());
        let rules = HttpRules {
            methods: methods.as_deref(),
            statuses: self.statuses.as_deref(),
            idempotency_key: !self.ignore_idempotency_key,
        };
        classify_request(method, idempotency_key, outcome, &rules)
    }

    /// A response: retried (its Retry-After the hint) when the status is retryable and the
    /// request may be repeated, unless its server's pushback says "don't retry" (a
    /// non-negative pushback is the wait); otherwise it is the answer, as it would be
    /// without retries.
    pub(crate) fn response(
        &self,
        method: &str,
        idempotency_key: Option<&str>,
        status: u16,
        headers: &http::HeaderMap,
    ) -> ValueVerdict {
        match self.judge(method, idempotency_key, HttpOutcome::Status(status)) {
            HttpVerdict::Retry => {
                let retry_after = headers.get(http::header::RETRY_AFTER).and_then(|v| hint(v.as_bytes()));
                match retry_with(retry_after, pushback(headers)) {
                    RetryWith::DontRetry => ValueVerdict::DontRetry,
                    with => ValueVerdict::Retry { hint: with.exact().or(retry_after) },
                }
            }
            HttpVerdict::Response | HttpVerdict::Fail => ValueVerdict::Accept,
        }
    }

    /// Whether the request may be sent more than once (an idempotent method, or one with
    /// an honoured `Idempotency-Key`): what a hedge needs, since it is sent before the
    /// first attempt has failed.
    // Only the reqwest middleware asks (the tower layer judges through `judge`).
    #[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
    pub(crate) fn repeatable(&self, method: &str, idempotency_key: Option<&str>) -> bool {
        matches!(self.judge(method, idempotency_key, HttpOutcome::NetworkFailed), HttpVerdict::Retry)
    }

    /// A network failure: transient if the connection was never made, or if the request
    /// may be repeated; otherwise the call ends with it.
    pub(crate) fn failure(&self, method: &str, idempotency_key: Option<&str>, connect_failed: bool) -> Verdict {
        let outcome = if connect_failed { HttpOutcome::ConnectFailed } else { HttpOutcome::NetworkFailed };
        match self.judge(method, idempotency_key, outcome) {
            HttpVerdict::Retry => Verdict::TRANSIENT,
            HttpVerdict::Response | HttpVerdict::Fail => Verdict::Permanent,
        }
    }
}

/// A response's pushback (`Retryrs-Pushback`, `grpc-retry-pushback-ms`,
/// `x-envoy-overloaded`); values that are not text are skipped.
pub(crate) fn pushback(headers: &http::HeaderMap) -> Option<ServerPushback> {
    read_pushback(headers.iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))))
}

/// A Retry-After header's value as a hint (delay-seconds or an HTTP-date).
fn hint(value: &[u8]) -> Option<Duration> {
    crate::retry_after::parse_retry_after(std::str::from_utf8(value).ok()?, SystemTime::now())
}

/// Sets the propagation headers of one attempt on a request's `headers` (replacing any
/// the caller set: the time left is the attempt's, never a copy).
pub(crate) fn propagate(
    headers: &mut http::HeaderMap,
    propagate: &crate::propagation::Propagate,
    host: Option<&str>,
    attempt: &crate::Attempt,
) {
    for (name, value) in propagate.headers(host, attempt.remaining, attempt.number) {
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(name.as_bytes()), http::HeaderValue::try_from(value))
        {
            headers.insert(name, value);
        }
    }
}

/// The wait hook of a helper's call: a response's non-negative pushback is the exact wait
/// (A6), instead of the backoff and Retry-After.
pub(crate) fn pushback_wait(response: &http::HeaderMap) -> Option<Duration> {
    match pushback(response) {
        Some(ServerPushback::Wait(wait)) => Some(wait),
        _ => None,
    }
}
