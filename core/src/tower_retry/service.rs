//! The layer that sheds load: a tower `Layer`/`Service` that runs each request through the
//! async executor, so the breaker and the budget are asked before attempt 1 (an open
//! breaker answers without calling the inner service), each attempt is cut at its bound,
//! and a hedging policy hedges.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower::{BoxError, Layer, Service};

use crate::async_executor::{AsyncRun, TimedOut};
use crate::executor::{Retrier, RetryError};
use crate::http_retry::Rules;

/// The layer: `ServiceBuilder::new().layer(RetryLayer::new(retrier))` (or
/// [`retry_layer`](super::retry_layer)). Each request runs as one retried call of the
/// retrier: the breaker and the budget are asked before the first attempt, each attempt
/// is cut at its bound (the time left before the deadline, or the attempt timeout), a
/// hedging policy runs its attempts side by side, and the contract's HTTP rules judge
/// each answer.
///
/// The service's error is tower's `BoxError`:
/// - the inner service's own error, as it is, when it is permanent (a non-idempotent
///   request: not retried);
/// - a [`RetryError<BoxError>`](RetryError) when the call gave up with an error (its
///   attempts and reason, the last error as its source) or never ran: an open breaker
///   answers at once with reason `circuit_open`, and the inner service is not called;
/// - when the retries end on a response (a 503 each time), the last response is returned,
///   as it would be without retries.
#[derive(Debug, Clone)]
pub struct RetryLayer {
    retrier: Retrier,
    rules: Rules,
}

impl RetryLayer {
    /// Retries with `retrier`'s policy and the contract's HTTP rules.
    pub fn new(retrier: impl Into<Retrier>) -> Self {
        RetryLayer { retrier: retrier.into(), rules: Rules::default() }
    }

    http_rules_setters!();
}

impl<S> Layer<S> for RetryLayer {
    type Service = RetryService<S>;
    fn layer(&self, inner: S) -> RetryService<S> {
        RetryService { inner, retrier: self.retrier.clone(), rules: self.rules.clone() }
    }
}

/// The service [`RetryLayer`] makes. Always ready: each attempt readies a clone of the
/// inner service (as tower's own `Retry` clones it).
#[derive(Debug, Clone)]
pub struct RetryService<S> {
    inner: S,
    retrier: Retrier,
    rules: Rules,
}

/// The future of one request through a [`RetryService`].
pub type ResponseFuture<R> = Pin<Box<dyn Future<Output = Result<http::Response<R>, BoxError>> + Send>>;

impl<S, B, R> Service<http::Request<B>> for RetryService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + Sync + 'static,
    R: Send + 'static,
{
    type Response = http::Response<R>;
    type Error = BoxError;
    type Future = ResponseFuture<R>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture<R> {
        let (inner, retrier, rules) = (self.inner.clone(), self.retrier.clone(), self.rules.clone());
        Box::pin(async move {
            let method = request.method().as_str().to_owned();
            let key = crate::http_retry::idempotency_key(request.headers()).map(str::to_owned);
            let (method, key) = (method.as_str(), key.as_deref());
            let run = AsyncRun::tokio()
                .result_predicate(|response: &http::Response<R>| {
                    let retry_after = response.headers().get(http::header::RETRY_AFTER).map(|v| v.as_bytes());
                    rules.response(method, key, response.status().as_u16(), retry_after)
                })
                // A cut attempt is a network failure whose request may have been sent.
                .timed_out_as(|cut: TimedOut| -> BoxError { Box::new(cut) });
            let request = &request;
            let got = retrier
                .execute_async(
                    run,
                    // Owns the inner service (a reference would ask it to be Sync).
                    move |_| {
                        // A clone per attempt, readied then called (tower's oneshot, which
                        // needs tower's `util` feature).
                        let (mut service, request) = (inner.clone(), super::clone_request(request));
                        async move {
                            std::future::poll_fn(|cx| service.poll_ready(cx)).await.map_err(Into::into)?;
                            service.call(request).await.map_err(Into::into)
                        }
                    },
                    // tower does not say whether the connection was made.
                    |_: &BoxError| rules.failure(method, key, false),
                )
                .await;
            match got {
                Ok(response) => Ok(response),
                Err(RetryError::Rejected(e)) => Err(e),
                // Out of retries on a response: the last response, as without retries.
                Err(RetryError::Exhausted { value: Some(response), .. }) => Ok(response),
                Err(e) => Err(Box::new(e.without_value()) as BoxError),
            }
        })
    }
}
