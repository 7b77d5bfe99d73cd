//! tower (feature `tower`): a retrying [`RetryLayer`] that sheds load, and a retry
//! [`RetryPolicy`] for tower's own `Retry` middleware, both with the decisions of a
//! [`Retrier`] and the contract's HTTP rules.
//!
//! ```
//! use retryrs::tower_retry::{retry_layer, RetryLayer};
//! use retryrs::{Policy, Retrier};
//!
//! let layer: RetryLayer = retry_layer(Retrier::new(Policy::default()));
//! // tower::ServiceBuilder::new().layer(layer).service(http_client)
//! ```
//!
//! **[`RetryLayer`]** (the one to use) runs each request as one call of the async
//! executor: an open breaker or an empty budget answers before the inner service is
//! called, each attempt is cut at its bound, a hedging policy hedges (see its docs).
//!
//! **[`RetryPolicy`]** plugs into `tower::retry::RetryLayer` for a stack built around
//! tower's own `Retry`; tower sends attempt 1 before the policy is asked anything, so
//! the breaker cannot shed it, and a hedging policy is refused ([`RetryPolicy::try_new`]).
//!
//! Both take `http::Request<B>` with a `Clone` body (tower's `Retry` clones the
//! request before each attempt) and answer `http::Response<_>` ([`RetryLayer`]'s body a
//! [`BoundedBody`]: a handed-over body is bounded by its silence only; see
//! [`RetryLayer`] for responses and connect failures):
//! - a retryable status (408, 425, 429, 500, 502, 503, 504) on an idempotent method is
//!   retried, its `Retry-After` the minimum wait; when the retries run out the last
//!   response is returned, as it would be without retries;
//! - an error of the inner service is a network failure: retried for an idempotent
//!   method only (tower does not say whether the connection was made);
//! - a POST or PATCH carrying an `Idempotency-Key` header counts as idempotent (turn off
//!   with [`RetryPolicy::idempotency_key`]);
//! - the deadline and the budget are kept between attempts. tower's `Retry` cannot drop
//!   an attempt in flight: put a `tower::timeout::TimeoutLayer` inside it to bound each
//!   attempt, or use [`Retrier::run_async`](crate::async_executor) /
//!   [`reqwest_retry`](crate::reqwest_retry), which keep the attempt's bound themselves.
//!   A wait that overshoots the deadline runs the attempt tower has already started, and
//!   no further one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::clock::{testing, Clock, SystemClock};
use crate::engine::{Call, Decision, Resume, Verdict};
use crate::executor::Retrier;
use crate::http_retry::Rules;
use crate::policy::Policy;

mod service;
pub use crate::bounded_body::BoundedBody;
pub use service::{ResponseFuture, RetryLayer, RetryService};

/// The layer: `ServiceBuilder::new().layer(retry_layer(retrier))` ([`RetryLayer::new`]).
pub fn retry_layer(retrier: impl Into<Retrier>) -> RetryLayer {
    RetryLayer::new(retrier)
}

/// A copy of `req` for one attempt: method, URI, version, headers, extensions and body.
fn clone_request<B: Clone>(req: &http::Request<B>) -> http::Request<B> {
    let mut clone = http::Request::new(req.body().clone());
    *clone.method_mut() = req.method().clone();
    *clone.uri_mut() = req.uri().clone();
    *clone.version_mut() = req.version();
    *clone.headers_mut() = req.headers().clone();
    *clone.extensions_mut() = req.extensions().clone();
    clone
}

/// Why [`RetryPolicy::try_new`] refused a policy: it hedges, and tower's `Retry` runs one
/// attempt at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HedgingRefused(String);

impl std::fmt::Display for HedgingRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tower_retry::RetryPolicy: {}; tower's retry does not hedge (use RetryLayer, which does)", self.0)
    }
}

impl std::error::Error for HedgingRefused {}

/// A `tower::retry::Policy` whose decisions are the engine's. Each request gets its own
/// copy (tower clones the policy per request), holding that request's call.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    retrier: Retrier,
    rules: Rules,
    /// When the request began (set as tower clones the request before the first attempt).
    started: Duration,
    call: Option<Call<Arc<Policy>>>,
    /// The deadline passed during the last wait: no further retry.
    stopped: bool,
}

impl RetryPolicy {
    /// Retries with `retrier`'s policy and the contract's HTTP rules; refused when the
    /// policy hedges ([`Policy::hedging`]): tower's retry runs one attempt at a time and
    /// cannot abandon one, and its `Policy` has no way to fail a request, so the refusal
    /// comes here, where the layer is built, saying why.
    pub fn try_new(retrier: impl Into<Retrier>) -> Result<Self, HedgingRefused> {
        let retrier = retrier.into();
        if let Some(why) = crate::hedge::one_at_a_time_refusal(retrier.policy()) {
            return Err(HedgingRefused(why.to_string()));
        }
        Ok(RetryPolicy { retrier, rules: Rules::default(), started: Duration::ZERO, call: None, stopped: false })
    }

    crate::http_retry::http_rules_setters!();

    /// The time, only when the policy bounds attempts (a deadline or an attempt
    /// timeout): otherwise no clock is read.
    fn now(&self) -> Duration {
        if !self.retrier.policy().bounds_attempts() {
            return Duration::ZERO;
        }
        match testing::clock() {
            Some(virtual_clock) => virtual_clock.now(),
            None => SystemClock.now(),
        }
    }
}

/// The wait before a retry: tokio's timer, or nothing for a zero delay or under virtual
/// time (which the wait advances instead).
#[derive(Debug)]
pub struct Wait(Option<Pin<Box<tokio::time::Sleep>>>);

impl Future for Wait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.0.as_mut() {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

fn wait(delay: Duration) -> Wait {
    if let Some(virtual_clock) = testing::clock() {
        virtual_clock.advance(delay);
        return Wait(None);
    }
    Wait((!delay.is_zero()).then(|| Box::pin(tokio::time::sleep(delay))))
}

impl<B: Clone, R, E> tower::retry::Policy<http::Request<B>, http::Response<R>, E> for RetryPolicy {
    type Future = Wait;

    fn retry(&mut self, req: &mut http::Request<B>, result: &mut Result<http::Response<R>, E>) -> Option<Wait> {
        if self.stopped {
            return None;
        }
        let method = req.method().as_str();
        let key = crate::http_retry::idempotency_key(req.headers());
        let verdict = match result {
            Ok(response) => self
                .rules
                .response(method, key, response.status().as_u16(), response.headers())
                .failure()
                .unwrap_or(Verdict::Success),
            Err(_) => self.rules.failure(method, key, false),
        };
        let now = self.now();
        let started = self.started;
        let policy = self.retrier.policy();
        let call = self.call.get_or_insert_with(|| Call::start(policy.clone(), started));
        match call.record(verdict, now, &mut |_| {}) {
            Ok(Decision::Retry(delay)) => Some(wait(delay)),
            _ => None,
        }
    }

    fn clone_request(&mut self, req: &http::Request<B>) -> Option<http::Request<B>> {
        let now = self.now();
        match self.call.as_mut() {
            // Before the first attempt (on the service's own copy, cloned into the request's).
            None => self.started = now,
            // After a wait: the engine says whether another attempt is in time.
            Some(call) => {
                if let Ok(Resume::Stop(_)) = call.after_wait(now, &mut |_| {}) {
                    self.stopped = true;
                    return None;
                }
            }
        }
        Some(clone_request(req))
    }
}
