//! A [reqwest-middleware](https://docs.rs/reqwest-middleware) middleware (feature
//! `reqwest`): every request through the client is retried by a [`Retrier`], with the
//! contract's HTTP rules, the same as the Python and Node helpers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), reqwest_middleware::Error> {
//! use retryrs::reqwest_retry::RetryMiddleware;
//! use retryrs::{Policy, Retrier};
//!
//! let client = reqwest_middleware::ClientBuilder::new(reqwest_middleware::reqwest::Client::new())
//!     .with(RetryMiddleware::new(Retrier::new(Policy::default())))
//!     .build();
//! let rates = client.get("http://127.0.0.1:8080/rates").send().await?;
//! # Ok(()) }
//! ```
//!
//! - A **retryable status** (408, 425, 429, 500, 502, 503, 504, or the statuses given)
//!   on an **idempotent method** (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or the methods
//!   given) is retried, its `Retry-After` (seconds or an HTTP-date) the minimum wait. When
//!   the retries run out (attempts, deadline, a Retry-After over `max_retry_after`, the
//!   budget) the **last response** is returned, as it would be without retries. Any other
//!   status is returned at once.
//! - A **connection never made** is retried for every method (nothing was sent); any
//!   other network error only for an idempotent method; otherwise, or when the retries run
//!   out, the call ends with that **error**.
//! - A POST or PATCH carrying an **`Idempotency-Key`** header is repeatable like an
//!   idempotent method (turn off with [`RetryMiddleware::idempotency_key`]).
//! - The **attempt's bound** (the deadline, or `attempt_timeout`) cuts an attempt short:
//!   it fails as a network error (a [`TimedOut`] inside `Error::Middleware`).
//! - A request whose body cannot be cloned (a stream) is sent once, without retries.
//! - Under a **hedging** policy ([`Policy::hedging`](crate::Policy::hedging)) a repeatable
//!   request (an idempotent method, or an `Idempotency-Key`) is hedged: the next copy goes
//!   out after the hedging delay beside the one in flight, the first answer that is not a
//!   retryable status wins and the others' connections are dropped. A request that may not
//!   be repeated is sent once (a hedge is sent before anything failed, so nothing would
//!   tell a duplicate apart).
//!
//! Against `reqwest-retry`: the same transient statuses and connection errors, and also
//! Retry-After (as a floor, with a cap), a deadline for the whole call, attempt timeouts,
//! a shared budget, and methods that are not idempotent left alone.

use std::time::Duration;

use http::Extensions;
use reqwest_middleware::reqwest::{header::RETRY_AFTER, Request, Response};
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::async_executor::{AsyncRun, TimedOut};
use crate::executor::{Retrier, RetryError};
use crate::http_retry::Rules;

/// The middleware: a [`Retrier`] and the HTTP rules. Build it once, share it.
#[derive(Debug, Clone)]
pub struct RetryMiddleware {
    retrier: Retrier,
    rules: Rules,
}

impl RetryMiddleware {
    /// Retries with `retrier`'s policy and the contract's HTTP rules.
    pub fn new(retrier: impl Into<Retrier>) -> Self {
        RetryMiddleware { retrier: retrier.into(), rules: Rules::default() }
    }

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
}

/// One attempt's failure: the client's error, or the attempt's bound.
#[derive(Debug)]
enum AttemptError {
    Http(Error),
    TimedOut(TimedOut),
}

impl From<TimedOut> for AttemptError {
    fn from(t: TimedOut) -> Self {
        AttemptError::TimedOut(t)
    }
}

impl From<AttemptError> for Error {
    fn from(e: AttemptError) -> Self {
        match e {
            AttemptError::Http(e) => e,
            AttemptError::TimedOut(t) => Error::middleware(t),
        }
    }
}

#[async_trait::async_trait]
impl Middleware for RetryMiddleware {
    async fn handle(&self, req: Request, extensions: &mut Extensions, next: Next<'_>) -> Result<Response> {
        let Some(template) = req.try_clone() else {
            return next.run(req, extensions).await;
        };
        let method = req.method().as_str().to_owned();
        let key = crate::http_retry::idempotency_key(req.headers()).map(str::to_owned);
        let key = key.as_deref();
        if self.retrier.policy().hedging().is_some() && !self.rules.repeatable(&method, key) {
            return next.run(req, extensions).await;
        }
        let mut first = Some(req);
        let rules = &self.rules;
        let ext: &Extensions = extensions;
        let got = self
            .retrier
            .execute_async(
                AsyncRun::tokio()
                    .result_predicate(|(response, _): &(Response, Extensions)| {
                        let retry_after = response.headers().get(RETRY_AFTER).map(|v| v.as_bytes());
                        rules.response(&method, key, response.status().as_u16(), retry_after)
                    })
                    // A cut request may have been sent: classified by the HTTP rules below.
                    .timed_out_as(AttemptError::TimedOut),
                |attempt| {
                    let mut req = first
                        .take()
                        .unwrap_or_else(|| template.try_clone().expect("a request that cloned once clones again"));
                    if let Some(left) = attempt.remaining {
                        // The client's own timeout too, so the connection is not left open.
                        *req.timeout_mut() =
                            Some(req.timeout().map_or(left, |t| (*t).min(left)).max(Duration::from_millis(1)));
                    }
                    let mut ext = ext.clone();
                    let next = next.clone();
                    async move {
                        match next.run(req, &mut ext).await {
                            Ok(response) => Ok((response, ext)),
                            Err(e) => Err(AttemptError::Http(e)),
                        }
                    }
                },
                |e: &AttemptError| match e {
                    AttemptError::Http(Error::Reqwest(e)) => rules.failure(&method, key, e.is_connect()),
                    // Another middleware's error is not the network's: not retried.
                    AttemptError::Http(_) => crate::Verdict::Permanent,
                    AttemptError::TimedOut(_) => rules.failure(&method, key, false),
                },
            )
            .await;
        let (response, ext) = match got {
            Ok(answer) => answer,
            Err(RetryError::Rejected(e)) => return Err(e.into()),
            // Out of retries on a response: the last response, as without retries.
            Err(RetryError::Exhausted { value: Some(answer), .. }) => answer,
            Err(RetryError::Exhausted { mut errors, .. }) | Err(RetryError::Cancelled { mut errors, .. }) => {
                return Err(errors
                    .pop()
                    .map_or_else(|| Error::middleware(std::io::Error::other("retry ended")), Into::into))
            }
            Err(RetryError::Refused(why)) => return Err(Error::middleware(std::io::Error::other(why))),
        };
        *extensions = ext;
        Ok(response)
    }
}
