//! tower's Retry middleware with the engine's decisions, in front of an HTTP client
//! service, against a loopback server: the HTTP scenarios of the Python and Node helpers.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use retryrs::tower_retry::{retry_layer, RetryPolicy};
use retryrs::{Jitter, Policy, Retrier};
use support::http_server::{serve, Reply};
use tower::{Service, ServiceBuilder, ServiceExt};

/// An HTTP client as a tower service: http::Request<String> in, http::Response<String> out.
fn http_client() -> impl Service<
    http::Request<String>,
    Response = http::Response<String>,
    Error = reqwest::Error,
    Future = impl std::future::Future<Output = Result<http::Response<String>, reqwest::Error>>,
> + Clone {
    let client = reqwest::Client::new();
    tower::service_fn(move |req: http::Request<String>| {
        let client = client.clone();
        async move {
            let response = client.execute(reqwest::Request::try_from(req)?).await?;
            let mut out = http::Response::new(String::new());
            *out.status_mut() = response.status();
            *out.headers_mut() = response.headers().clone();
            *out.body_mut() = response.text().await?;
            Ok::<_, reqwest::Error>(out)
        }
    })
}

async fn send(policy: Policy, request: http::Request<String>) -> Result<http::Response<String>, tower::BoxError> {
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(http_client());
    // The handed-over body, without its silence bound (a String is read already).
    Ok(service.ready().await?.call(request).await?.map(retryrs::tower_retry::BoundedBody::into_inner))
}

fn get(url: &str) -> http::Request<String> {
    http::Request::get(url).body(String::new()).unwrap()
}

fn quick() -> Policy {
    Policy::builder().jitter(Jitter::None).initial_delay(Duration::from_millis(10)).build().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn two_503s_then_200_make_three_requests_and_return_the_200() {
    let server = serve(vec![Reply(503, ""), Reply(503, ""), Reply(200, "")]).await;
    let response = send(quick(), get(&server.url)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.body(), "status 200");
    assert_eq!(server.requests(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_1_is_waited_out() {
    let server = serve(vec![Reply(503, "Retry-After: 1\r\n"), Reply(200, "")]).await;
    let started = Instant::now();
    let response = send(quick(), get(&server.url)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() >= Duration::from_secs(1), "retried after {:?}", started.elapsed());
    assert_eq!(server.requests(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_3600_returns_the_429_at_once() {
    let server = serve(vec![Reply(429, "Retry-After: 3600\r\n"), Reply(200, "")]).await;
    let started = Instant::now();
    let response = send(quick(), get(&server.url)).await.unwrap();
    assert_eq!(response.status(), 429);
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(server.requests(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_post_is_not_sent_again() {
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let post = http::Request::post(&server.url).body("order=1".to_string()).unwrap();
    let response = send(quick(), post).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(*server.methods.lock().unwrap(), ["POST"]);
}

/// Issue 23: a POST carrying an Idempotency-Key is resent like an idempotent method
/// (503 then 200: 2 requests), unless the policy is told to ignore the header.
#[tokio::test(flavor = "current_thread")]
async fn a_post_with_an_idempotency_key_is_sent_again() {
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let post =
        http::Request::post(&server.url).header("Idempotency-Key", "order-42").body("order=1".to_string()).unwrap();
    let response = send(quick(), post).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(*server.methods.lock().unwrap(), ["POST", "POST"]);
    let ignoring = retryrs::tower_retry::RetryPolicy::try_new(Retrier::new(quick())).unwrap().idempotency_key(false);
    let mut service = ServiceBuilder::new().layer(tower::retry::RetryLayer::new(ignoring)).service(http_client());
    let server2 = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let post2 =
        http::Request::post(&server2.url).header("Idempotency-Key", "order-42").body("order=1".to_string()).unwrap();
    let response = service.ready().await.unwrap().call(post2).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(*server2.methods.lock().unwrap(), ["POST"]);
}

#[tokio::test(flavor = "current_thread")]
async fn out_of_attempts_the_last_response_is_returned_and_each_request_starts_afresh() {
    let policy = Policy::builder().max_attempts(2).jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap();
    let server = serve(vec![Reply(503, ""), Reply(502, ""), Reply(503, ""), Reply(200, "")]).await;
    // One service, two requests: the second gets its own two attempts.
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(http_client());
    let first = service.ready().await.unwrap().call(get(&server.url)).await.unwrap();
    assert_eq!(first.status(), 502);
    let second = service.ready().await.unwrap().call(get(&server.url)).await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(server.requests(), 4);
}

/// tower's retry runs one attempt at a time and its Policy cannot fail a request: a
/// hedging policy is refused where the policy is built, as an error saying why (issue 26).
#[test]
fn a_hedging_policy_is_refused_by_tower_s_retry_policy() {
    let hedging = retryrs::Hedging::fixed_ms(2, 10.0).unwrap();
    let refused = RetryPolicy::try_new(Retrier::new(Policy::builder().name("h").hedge(Some(hedging)).build().unwrap()));
    let why = refused.unwrap_err().to_string();
    assert!(why.contains("h: this policy hedges (runs attempts side by side and abandons the losers)"), "{why}");
}

/// The layer runs each request through the async executor: a hedging policy hedges (the
/// hedge's answer wins while attempt 1 hangs).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_layer_hedges_a_hedging_policy() {
    let hedging = retryrs::Hedging::fixed_ms(2, 100.0).unwrap();
    let policy = Policy::builder().hedge(Some(hedging)).build().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let inner = counting(calls.clone(), |n| if n == 1 { None } else { Some(200) });
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(inner);
    let response = service.ready().await.unwrap().call(get("http://127.0.0.1:9/")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

/// An inner service that counts its calls and answers call n with `answer(n)`'s status, or
/// hangs for `None`.
fn counting(
    calls: Arc<AtomicUsize>,
    answer: impl Fn(usize) -> Option<u16> + Clone + Send + 'static,
) -> impl Service<
    http::Request<String>,
    Response = http::Response<String>,
    Error = std::io::Error,
    Future = impl std::future::Future<Output = Result<http::Response<String>, std::io::Error>> + Send,
> + Clone
       + Send {
    tower::service_fn(move |_req: http::Request<String>| {
        let n = calls.fetch_add(1, Ordering::Relaxed) + 1;
        let status = answer(n);
        async move {
            match status {
                None => std::future::pending().await,
                Some(status) => {
                    let mut out = http::Response::new(String::new());
                    *out.status_mut() = http::StatusCode::from_u16(status).unwrap();
                    Ok(out)
                }
            }
        }
    })
}

/// The breaker is asked before attempt 1: while it is open, requests are answered with
/// a typed error (reason circuit_open) and never reach the inner service.
#[tokio::test(flavor = "current_thread")]
async fn an_open_breaker_keeps_requests_from_the_inner_service() {
    use retryrs::{BreakerConfig, CircuitBreaker, ExhaustReason, RetryError};
    let _virtual_time = retryrs::testing::scoped();
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = Duration::from_secs(30);
    let breaker = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let policy = Policy::builder().max_attempts(1).breaker(Some(breaker)).build().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let inner = counting(calls.clone(), |_| Some(503));
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(inner);
    // The first request reaches the service; its 503 opens the breaker.
    let first = service.ready().await.unwrap().call(get("http://127.0.0.1:9/")).await.unwrap();
    assert_eq!(first.status(), 503);
    for _ in 0..5 {
        let refused = service.ready().await.unwrap().call(get("http://127.0.0.1:9/")).await.unwrap_err();
        match refused.downcast_ref::<RetryError<tower::BoxError>>() {
            Some(RetryError::Exhausted { attempts: 0, reason: ExhaustReason::CircuitOpen, .. }) => {}
            other => panic!("{other:?}: {refused}"),
        }
    }
    assert_eq!(calls.load(Ordering::Relaxed), 1, "the open breaker kept 5 requests from the inner service");
}

/// A hung attempt is cut at its bound (the layer keeps the attempt timeout itself).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_hung_attempt_is_cut_at_its_bound() {
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .initial_delay(Duration::from_millis(10))
        .attempt_timeout(Some(Duration::from_secs(1)))
        .build()
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let inner = counting(calls.clone(), |n| if n == 1 { None } else { Some(200) });
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(inner);
    let started = tokio::time::Instant::now();
    let response = service.ready().await.unwrap().call(get("http://127.0.0.1:9/")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(started.elapsed(), Duration::from_millis(1010));
}

/// A refused connect (nothing sent) is retried even for a POST, which a failure after the
/// request went out never is; the layer finds it in the error's source chain by itself.
#[tokio::test(flavor = "current_thread")]
async fn a_refused_connect_is_retried_for_a_post_and_a_reset_is_not() {
    use std::io::{Error, ErrorKind};
    for (kind, want_calls) in [(ErrorKind::ConnectionRefused, 3), (ErrorKind::ConnectionReset, 1)] {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let inner = tower::service_fn(move |_req: http::Request<String>| {
            counted.fetch_add(1, Ordering::Relaxed);
            // Wrapped, as clients wrap the socket's error (hyper-util: Error(Connect) → ConnectError → io).
            async move { Err::<http::Response<String>, _>(Error::other(Error::new(kind, "the socket's error"))) }
        });
        let policy = Policy::builder().max_attempts(3).jitter(Jitter::None).initial_delay(Duration::from_millis(1));
        let mut service =
            ServiceBuilder::new().layer(retry_layer(Retrier::new(policy.build().unwrap()))).service(inner);
        let post = http::Request::post("http://127.0.0.1:9/pay").body("x".to_owned()).unwrap();
        service.ready().await.unwrap().call(post).await.unwrap_err();
        assert_eq!(calls.load(Ordering::Relaxed), want_calls, "{kind:?}");
    }
}

/// The handed-over body is bounded by its silence only: one that stalls fails with a
/// timeout after attempt_timeout, though the response arrived within the bound.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_handed_over_body_that_stalls_fails_after_attempt_timeout() {
    use http_body_util::BodyExt;
    let inner = tower::service_fn(|_req: http::Request<String>| async {
        Ok::<_, std::io::Error>(http::Response::new(StalledBody))
    });
    let policy = Policy::builder().attempt_timeout(Some(Duration::from_millis(300))).build().unwrap();
    let mut service = ServiceBuilder::new().layer(retry_layer(Retrier::new(policy))).service(inner);
    let response = service.ready().await.unwrap().call(get("http://127.0.0.1:9/")).await.unwrap();
    let started = tokio::time::Instant::now();
    let err = response.into_body().collect().await.unwrap_err();
    let io = err.downcast_ref::<std::io::Error>().expect("the silence bound's io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(started.elapsed(), Duration::from_millis(300));
}

/// A response body that never yields a frame.
struct StalledBody;

impl http_body::Body for StalledBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        std::task::Poll::Pending
    }
}
