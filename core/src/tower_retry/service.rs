//! The layer that sheds load: a tower `Layer`/`Service` that runs each request through the
//! async executor, so the breaker and the budget are asked before attempt 1 (an open
//! breaker answers without calling the inner service), each attempt is cut at its bound,
//! and a hedging policy hedges.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{BoxError, Layer, Service};

use crate::async_executor::{AsyncRun, TimedOut};
use crate::bounded_body::{silence_of, BoundedBody};
use crate::executor::{Failed, Retrier, RetryError};
use crate::http_retry::Rules;
use crate::propagation::Propagate;

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
///
/// Responses (docs/contract.md §6b; this layer **hands over at the headers**):
/// - the deadline and each attempt's bound cover the attempt until the response's head
///   arrives; a response that will be retried is dropped unread (its connection closed:
///   nothing of a large body is read);
/// - the response handed over is the caller's: its body, a [`BoundedBody`], is never cut
///   while it flows (a download or a stream may outlast the deadline); only a body
///   silent for `attempt_timeout` (else the deadline) fails, with an `io::Error` of kind
///   `TimedOut`. The last response of exhausted retries is handed over whole.
///
/// Errors: a connection never made is retried for every method (nothing was sent). The
/// layer knows one when an `io::Error` of kind `ConnectionRefused` is in the error's
/// source chain; tell it your client's other connect failures with
/// [`RetryLayer::connect_failed`] (hyper-util's legacy client:
/// `|e| e.downcast_ref::<hyper_util::client::legacy::Error>().is_some_and(|e| e.is_connect())`,
/// with a connect timeout on its connector shorter than the attempt's bound: an attempt
/// the layer cuts itself may have sent its request, so it is retried only when repeatable).
#[derive(Clone)]
pub struct RetryLayer {
    retrier: Retrier,
    rules: Rules,
    connect_failed: Option<ConnectFailed>,
    propagate: Propagate,
}

/// The caller's test of an inner service's error: the connection was never made.
type ConnectFailed = Arc<dyn Fn(&(dyn StdError + 'static)) -> bool + Send + Sync>;

impl std::fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryLayer")
            .field("retrier", &self.retrier)
            .field("rules", &self.rules)
            .field("connect_failed", &self.connect_failed.as_ref().map(|_| "a caller's test"))
            .finish()
    }
}

impl RetryLayer {
    /// Retries with `retrier`'s policy and the contract's HTTP rules.
    pub fn new(retrier: impl Into<Retrier>) -> Self {
        RetryLayer {
            retrier: retrier.into(),
            rules: Rules::default(),
            connect_failed: None,
            propagate: Propagate::default(),
        }
    }

    crate::http_retry::http_rules_setters!();

    /// What each attempt propagates (docs/propagation.md): by default `Retryrs-Context`
    /// with the attempt's time left and number, to every host; [`Propagate::off`] sends
    /// nothing. The host is the request URI's (else its `Host` header's).
    pub fn propagation(mut self, propagate: Propagate) -> Self {
        self.propagate = propagate;
        self
    }

    /// Which errors of the inner service mean the connection was never made (so the
    /// request was not sent, and is retried for every method), beside a refused connect,
    /// which the layer knows by itself. Given the inner service's error as it is.
    pub fn connect_failed(mut self, test: impl Fn(&(dyn StdError + 'static)) -> bool + Send + Sync + 'static) -> Self {
        self.connect_failed = Some(Arc::new(test));
        self
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = RetryService<S>;
    fn layer(&self, inner: S) -> RetryService<S> {
        RetryService {
            inner,
            retrier: self.retrier.clone(),
            rules: self.rules.clone(),
            connect_failed: self.connect_failed.clone(),
            propagate: self.propagate.clone(),
        }
    }
}

/// Whether `error` says the connection was never made: a refused connect anywhere in its
/// source chain, or the caller's test.
fn never_connected(error: &(dyn StdError + 'static), test: Option<&ConnectFailed>) -> bool {
    if test.is_some_and(|test| test(error)) {
        return true;
    }
    let mut cause = Some(error);
    while let Some(e) = cause {
        cause = match e.downcast_ref::<std::io::Error>() {
            Some(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => return true,
            // An io::Error's source skips the error it wraps (io::Error::other(e) says e's
            // source): look into the wrapped one.
            Some(io) => io.get_ref().map(|inner| inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    false
}

/// The service [`RetryLayer`] makes. Always ready: each attempt readies a clone of the
/// inner service (as tower's own `Retry` clones it).
#[derive(Clone)]
pub struct RetryService<S> {
    inner: S,
    retrier: Retrier,
    rules: Rules,
    connect_failed: Option<ConnectFailed>,
    propagate: Propagate,
}

impl<S: std::fmt::Debug> std::fmt::Debug for RetryService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryService")
            .field("inner", &self.inner)
            .field("retrier", &self.retrier)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

/// The future of one request through a [`RetryService`].
pub type ResponseFuture<R> = Pin<Box<dyn Future<Output = Result<http::Response<BoundedBody<R>>, BoxError>> + Send>>;

impl<S, B, R> Service<http::Request<B>> for RetryService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + Sync + 'static,
    R: http_body::Body + Send + 'static,
{
    type Response = http::Response<BoundedBody<R>>;
    type Error = BoxError;
    type Future = ResponseFuture<R>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture<R> {
        let (inner, retrier, rules) = (self.inner.clone(), self.retrier.clone(), self.rules.clone());
        let connect_failed = self.connect_failed.clone();
        let propagate = self.propagate.clone();
        Box::pin(async move {
            let method = request.method().as_str().to_owned();
            let key = crate::http_retry::idempotency_key(request.headers()).map(str::to_owned);
            let (method, key) = (method.as_str(), key.as_deref());
            let run = AsyncRun::tokio()
                .result_predicate(|response: &http::Response<R>| {
                    rules.response(method, key, response.status().as_u16(), response.headers())
                })
                // A non-negative pushback is the exact wait.
                .wait_with(|ctx| match ctx.failure {
                    Failed::Value(response) => crate::http_retry::pushback_wait(response.headers()),
                    _ => None,
                })
                // A cut attempt is a network failure whose request may have been sent.
                .timed_out_as(|cut: TimedOut| -> BoxError { Box::new(cut) });
            let host =
                request.uri().host().map(str::to_owned).or_else(|| {
                    request.headers().get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_owned)
                });
            let request = &request;
            let got = retrier
                .execute_async(
                    run,
                    // Owns the inner service (a reference would ask it to be Sync).
                    move |attempt| {
                        // A clone per attempt, readied then called (tower's oneshot, which
                        // needs tower's `util` feature).
                        let (mut service, mut request) = (inner.clone(), super::clone_request(request));
                        crate::http_retry::propagate(request.headers_mut(), &propagate, host.as_deref(), &attempt);
                        async move {
                            std::future::poll_fn(|cx| service.poll_ready(cx)).await.map_err(Into::into)?;
                            service.call(request).await.map_err(Into::into)
                        }
                    },
                    // A cut attempt (a TimedOut) may have sent its request: never connected
                    // only when the error says so.
                    |e: &BoxError| rules.failure(method, key, never_connected(&**e, connect_failed.as_ref())),
                )
                .await;
            let response = match got {
                Ok(response) => response,
                Err(RetryError::Rejected(e)) => return Err(e),
                // Out of retries on a response: the last response, as without retries.
                Err(RetryError::Exhausted { value: Some(response), .. }) => response,
                Err(e) => return Err(Box::new(e.without_value()) as BoxError),
            };
            // Handed over: the retry deadline no longer applies, only the body's silence.
            let silence = silence_of(retrier.policy());
            Ok(response.map(|body| BoundedBody::new(body, silence)))
        })
    }
}
