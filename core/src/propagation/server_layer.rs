//! The Rust server helper (feature `tower`): a tower layer that reads each request's
//! propagation headers, applies the upward rule, and runs the inner service inside the
//! request's ambient context.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::ambient::{enter, Scoped};
use super::inbound::ServerOptions;
use super::upward::{Gate, Upward, REFUSAL_PUSHBACK, REFUSAL_STATUS};

/// The layer: `ServiceBuilder::new().layer(PropagationLayer::new(ServerOptions::default()))`
/// in front of a server's handlers. For each request it
/// - reads `Retryrs-Context`, `grpc-timeout` (and, with [`ServerOptions::trust_mesh`],
///   Envoy's headers), clamped to [`ServerOptions::limit`];
/// - answers a request that arrived with nothing left at once, `504` with
///   `Retryrs-Pushback: -1` and an empty body, without calling the inner service (at most
///   20% of a 10 s window's requests; [`ServerOptions::observe_only`] never refuses);
/// - puts the [`Received`](super::Received) in the request's extensions (the handler may read its
///   deadline, or what the upward rule said);
/// - runs the inner service's `call` and polls its future inside the request's ambient
///   context: every retrier call the handler makes on that future obeys it (its deadline
///   shortened, one attempt under a retry). The context is this thread's while the future
///   is polled ([`Scoped`]), not a tokio task-local: a task the handler spawns does not
///   inherit it; wrap that task's future in `Scoped::new(propagation::current(), fut)`.
#[derive(Debug, Clone)]
pub struct PropagationLayer {
    gate: Arc<Gate>,
}

impl PropagationLayer {
    /// A layer with these options (one gate, and its refusal cap, shared by every service
    /// it makes).
    pub fn new(options: ServerOptions) -> Self {
        PropagationLayer { gate: Arc::new(Gate::new(options)) }
    }
}

impl<S> Layer<S> for PropagationLayer {
    type Service = PropagationService<S>;
    fn layer(&self, inner: S) -> PropagationService<S> {
        PropagationService { inner, gate: self.gate.clone() }
    }
}

/// The service [`PropagationLayer`] makes.
#[derive(Debug, Clone)]
pub struct PropagationService<S> {
    inner: S,
    gate: Arc<Gate>,
}

impl<S, B, R> Service<http::Request<B>> for PropagationService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    R: Default,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = PropagationFuture<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let received = {
            let headers = request.headers();
            let text = headers.iter().filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)));
            self.gate.receive(text)
        };
        if received.upward == Upward::Refuse {
            return PropagationFuture { state: State::Refused(Some(refusal())) };
        }
        request.extensions_mut().insert(received);
        let ambient = received.ambient;
        // The inner service's call may start work at once: inside the context too.
        let future = {
            let _entered = enter(ambient);
            self.inner.call(request)
        };
        PropagationFuture { state: State::Inner(Scoped::new(Some(ambient), future)) }
    }
}

/// The upward rule's answer: 504, "don't retry", no body.
fn refusal<R: Default>() -> http::Response<R> {
    let mut response = http::Response::new(R::default());
    *response.status_mut() = http::StatusCode::from_u16(REFUSAL_STATUS).expect("504 is a status");
    let (name, value) = REFUSAL_PUSHBACK;
    response.headers_mut().insert(
        http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
        http::HeaderValue::from_static(value),
    );
    response
}

/// The future of one request through a [`PropagationService`].
#[derive(Debug)]
pub struct PropagationFuture<F, R> {
    state: State<F, R>,
}

#[derive(Debug)]
enum State<F, R> {
    Refused(Option<http::Response<R>>),
    Inner(Scoped<F>),
}

impl<F, R, E> Future for PropagationFuture<F, R>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the `Inner` future is never moved out of the pinned state (only polled
        // in place); `Refused` holds no pinned data and only its Option is taken.
        let state = unsafe { &mut self.get_unchecked_mut().state };
        match state {
            State::Refused(response) => Poll::Ready(Ok(response.take().expect("polled after it answered"))),
            State::Inner(future) => unsafe { Pin::new_unchecked(future) }.poll(cx),
        }
    }
}
