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
//! - The **attempt's bound** (the deadline, or `attempt_timeout`) cuts an attempt short
//!   until the response's headers arrive: it fails as a network error (a [`TimedOut`]).
//!   The response handed over is the caller's (docs/contract.md §6b: this middleware
//!   hands over at the headers): its body is never cut by the retry deadline while it
//!   flows, so a download, an SSE stream or a long poll may outlast the deadline. Only
//!   its **silence** is bounded: a body that stalls for `attempt_timeout` (else the
//!   deadline) fails with a timeout (`reqwest::Error::is_timeout`). A whole-request
//!   `timeout` of your own still applies to the body, as it would without the middleware.
//! - When the retries end **without a response**, the error is typed, inside
//!   `Error::Middleware`: [`RetriesExhausted`] (attempts made, the [`ExhaustReason`], the
//!   last attempt's error as its `source`) or, with a breaker that is open, [`CircuitOpen`]
//!   (no request sent). Downcast to read them:
//!   `if let reqwest_middleware::Error::Middleware(e) = &err { e.downcast_ref::<RetriesExhausted>() }`.
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

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::Extensions;
use reqwest_middleware::reqwest::{Request, Response};
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::async_executor::{AsyncRun, TimedOut};
use crate::breaker::BreakerState;
use crate::event::ExhaustReason;
use crate::executor::Failed;
use crate::executor::{Retrier, RetryError};
use crate::http_retry::Rules;
use crate::propagation::Propagate;

/// The retries ended without a response (inside `reqwest_middleware::Error::Middleware`):
/// every attempt failed on the network or at its bound, and a limit ended the call.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetriesExhausted {
    /// Attempts made (requests sent or tried).
    pub attempts: u32,
    /// Which limit ended the call (attempts, deadline, budget, ...).
    pub reason: ExhaustReason,
    /// The last attempt's error (also the `source`): the client's, or a [`TimedOut`].
    pub last: Error,
}

impl fmt::Display for RetriesExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry: gave up after {} attempts ({}): {}", self.attempts, self.reason, self.last)
    }
}

impl std::error::Error for RetriesExhausted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.last)
    }
}

/// The circuit breaker is open: the call was refused before any request was sent (inside
/// `reqwest_middleware::Error::Middleware`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircuitOpen {
    /// The breaker's state when it refused.
    pub state: BreakerState,
    /// The time before it lets a probe through.
    pub retry_in: Duration,
}

impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry: the circuit breaker is open (a probe in {} ms); no request sent", self.retry_in.as_millis())
    }
}

impl std::error::Error for CircuitOpen {}

/// The middleware: a [`Retrier`] and the HTTP rules. Build it once, share it.
#[derive(Debug, Clone)]
pub struct RetryMiddleware {
    retrier: Retrier,
    rules: Rules,
    propagate: Propagate,
}

impl RetryMiddleware {
    /// Retries with `retrier`'s policy and the contract's HTTP rules.
    pub fn new(retrier: impl Into<Retrier>) -> Self {
        RetryMiddleware { retrier: retrier.into(), rules: Rules::default(), propagate: Propagate::default() }
    }

    crate::http_retry::http_rules_setters!();

    /// What each attempt propagates (docs/propagation.md): by default `Retryrs-Context`
    /// with the attempt's time left and number, to every host; [`Propagate::off`] sends
    /// nothing.
    pub fn propagation(mut self, propagate: Propagate) -> Self {
        self.propagate = propagate;
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
        let has_body = req.body().is_some();
        // Whether the current attempt's request went out on a connection (its body
        // was polled): hyper asks for a body only once a connection carries the request.
        let sent = Arc::new(AtomicBool::new(false));
        let mut first = Some(req);
        let rules = &self.rules;
        let ext: &Extensions = extensions;
        let got = self
            .retrier
            .execute_async(
                AsyncRun::tokio()
                    .result_predicate(|(response, _): &(Response, Extensions)| {
                        rules.response(&method, key, response.status().as_u16(), response.headers())
                    })
                    // A non-negative pushback is the exact wait.
                    .wait_with(|ctx| match ctx.failure {
                        Failed::Value((response, _)) => crate::http_retry::pushback_wait(response.headers()),
                        _ => None,
                    })
                    // A cut request may have been sent: classified by the HTTP rules below.
                    .timed_out_as(AttemptError::TimedOut),
                |attempt| {
                    let mut req = first
                        .take()
                        .unwrap_or_else(|| template.try_clone().expect("a request that cloned once clones again"));
                    let host = req.url().host_str().map(str::to_owned);
                    crate::http_retry::propagate(req.headers_mut(), &self.propagate, host.as_deref(), &attempt);
                    sent.store(false, Ordering::SeqCst);
                    if let Some(body) = req.body_mut().take() {
                        *req.body_mut() = Some(sending::flagged(body, sent.clone()));
                    }
                    // The attempt's bound is the executor's (it drops the request at the
                    // bound, until the headers arrive), never reqwest's per-request
                    // timeout: that one covers the body too, after the response is
                    // handed over, and would cut a body that flows past the deadline.
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
                    // Cut at the bound: never sent (a connect that timed out, retried for
                    // every method) only when its body was never asked for; a request
                    // without a body cannot tell, so it counts as sent.
                    AttemptError::TimedOut(_) => rules.failure(&method, key, has_body && !sent.load(Ordering::SeqCst)),
                },
            )
            .await;
        let (response, ext) = match got {
            Ok(answer) => answer,
            Err(RetryError::Rejected(e)) => return Err(e.into()),
            // Out of retries on a response: the last response, as without retries.
            Err(RetryError::Exhausted { value: Some(answer), .. }) => answer,
            Err(RetryError::Exhausted { reason: ExhaustReason::CircuitOpen, refusal, .. }) => {
                let (state, retry_in) = refusal.unwrap_or((BreakerState::Open, Duration::ZERO));
                return Err(Error::middleware(CircuitOpen { state, retry_in }));
            }
            Err(RetryError::Exhausted { attempts, reason, mut errors, .. }) => {
                return Err(match errors.pop() {
                    Some(last) => Error::middleware(RetriesExhausted { attempts, reason, last: last.into() }),
                    None => Error::middleware(std::io::Error::other(format!(
                        "retry: gave up ({reason}) before any attempt"
                    ))),
                })
            }
            Err(RetryError::Cancelled { mut errors, .. }) => {
                return Err(errors.pop().map_or_else(
                    || Error::middleware(std::io::Error::other("retry: cancelled before any attempt")),
                    Into::into,
                ))
            }
            Err(RetryError::Refused(why)) => return Err(Error::middleware(std::io::Error::other(why))),
        };
        *extensions = ext;
        Ok(match crate::bounded_body::silence_of(self.retrier.policy()) {
            Some(silence) => silence::bounded(response, silence),
            None => response,
        })
    }
}

/// The request body that tells when it is first asked for: the request went out.
mod sending {
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use http_body::{Body as HttpBody, Frame, SizeHint};
    use reqwest_middleware::reqwest::Body;

    pub(super) fn flagged(inner: Body, sent: Arc<AtomicBool>) -> Body {
        Body::wrap(Sending { inner, sent })
    }

    struct Sending {
        inner: Body,
        sent: Arc<AtomicBool>,
    }

    impl HttpBody for Sending {
        type Data = <Body as HttpBody>::Data;
        type Error = <Body as HttpBody>::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            self.sent.store(true, Ordering::SeqCst);
            Pin::new(&mut self.inner).poll_frame(cx)
        }

        fn is_end_stream(&self) -> bool {
            self.inner.is_end_stream()
        }

        fn size_hint(&self) -> SizeHint {
            self.inner.size_hint()
        }
    }
}

/// The handed-over body's bound on silence (docs/contract.md §6b): reqwest has no
/// per-request read timeout a middleware could set, so the body is wrapped (in the
/// bound the tower layer's bodies get too).
mod silence {
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use http_body::{Body as HttpBody, Frame};
    use reqwest_middleware::reqwest::{Body, Response, ResponseBuilderExt};

    use crate::bounded_body::BoundedBody;

    /// `response` with a body that fails (an `io::ErrorKind::TimedOut`, so
    /// `reqwest::Error::is_timeout`) after `silence` without a byte; status, headers,
    /// URL and extensions kept.
    pub(super) fn bounded(response: Response, silence: Duration) -> Response {
        let url = response.url().clone();
        let (parts, body) = http::Response::<Body>::from(response).into_parts();
        let mut builder = http::Response::builder().status(parts.status).version(parts.version).url(url);
        if let Some(headers) = builder.headers_mut() {
            *headers = parts.headers;
        }
        if let Some(extensions) = builder.extensions_mut() {
            extensions.extend(parts.extensions);
        }
        let body = Body::wrap(BoundedBody::new(body, Some(silence)));
        match builder.body(body) {
            Ok(r) => Response::from(r),
            // The parts came from a valid response: unreachable, but never a panic.
            Err(e) => unreachable_response(e),
        }
    }

    #[cold]
    fn unreachable_response(e: http::Error) -> Response {
        Response::from(http::Response::new(Body::wrap(Failed(Some(std::io::Error::other(e))))))
    }

    struct Failed(Option<std::io::Error>);

    impl HttpBody for Failed {
        type Data = <Body as HttpBody>::Data;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            Poll::Ready(self.0.take().map(Err))
        }
    }
}
