//! Propagation across services (issue 39, docs/propagation.md) in Rust: a server behind
//! the tower `PropagationLayer` calling a dependency through the reqwest middleware, on
//! loopback.

mod support;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use retryrs::propagation::{Allowlist, Propagate, PropagationLayer, Received, ServerOptions};
use retryrs::reqwest_retry::RetryMiddleware;
use retryrs::{ExhaustReason, Jitter, Policy, Retrier};
use support::http_server::{serve, Reply};
use tower::{Layer, ServiceExt};

fn client_with(policy: Policy, propagate: Propagate) -> ClientWithMiddleware {
    let middleware = RetryMiddleware::new(Retrier::new(policy)).propagation(propagate);
    ClientBuilder::new(reqwest::Client::new()).with(middleware).build()
}

fn client(policy: Policy) -> ClientWithMiddleware {
    client_with(policy, Propagate::default())
}

fn quick() -> Policy {
    Policy::builder().jitter(Jitter::None).initial_delay(Duration::from_millis(10)).build().unwrap()
}

/// The `Retryrs-Context` value a recorded request head carries, if any.
fn context_of(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("retryrs-context").then(|| value.trim().to_string())
    })
}

/// A handler behind the layer that calls `url` through `client` and answers with the
/// dependency's status, or 502 and the error's words.
async fn handle(client: ClientWithMiddleware, url: String) -> Result<http::Response<String>, Infallible> {
    let got = client.get(&url).send().await;
    let (status, body) = match got {
        Ok(r) => (r.status().as_u16(), String::new()),
        // Display, not Debug: anyhow's Debug resolves a backtrace when RUST_BACKTRACE is set.
        Err(e) => (502, e.to_string()),
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
    Ok(response)
}

fn inbound(context: &str) -> http::Request<()> {
    http::Request::builder().uri("/quote").header("Retryrs-Context", context).body(()).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn with_t300_a_server_calling_a_hanging_dependency_answers_within_550_ms() {
    // The dependency accepts the connection and never answers.
    let hanging = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slow", hanging.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((socket, _)) = hanging.accept().await {
            held.push(socket);
        }
    });
    // A default retrier: 15 s deadline, 5 attempts.
    let client = client(Policy::default());
    let service = PropagationLayer::new(ServerOptions::default())
        .layer(tower::service_fn(move |_req: http::Request<()>| handle(client.clone(), url.clone())));
    let started = Instant::now();
    let response = service.oneshot(inbound("t=300, a=1")).await.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(550), "answered after {took:?}: {}", response.body());
    assert!(took >= Duration::from_millis(250), "the call ran to its shortened deadline, not less: {took:?}");
    assert_eq!(response.status().as_u16(), 502);
    assert!(response.body().contains("(deadline)"), "ended by the deadline: {}", response.body());
    held.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn an_inbound_retry_makes_exactly_one_inner_attempt_and_passes_r_on() {
    let server = serve(vec![Reply(503, ""), Reply(503, ""), Reply(200, "")]).await;
    let (client, url) = (client(quick()), server.url.clone());
    let service = PropagationLayer::new(ServerOptions::default())
        .layer(tower::service_fn(move |_req: http::Request<()>| handle(client.clone(), url.clone())));
    let response = service.oneshot(inbound("t=5000, a=2")).await.unwrap();
    assert_eq!(response.status().as_u16(), 503, "the one attempt's answer");
    assert_eq!(server.requests(), 1);
    let sent = context_of(&server.heads.lock().unwrap()[0]).unwrap();
    assert!(sent.ends_with("a=1, r=?1"), "{sent}");
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_context_the_same_server_retries() {
    let server = serve(vec![Reply(503, ""), Reply(503, ""), Reply(200, "")]).await;
    let (client, url) = (client(quick()), server.url.clone());
    let service = PropagationLayer::new(ServerOptions::default())
        .layer(tower::service_fn(move |_req: http::Request<()>| handle(client.clone(), url.clone())));
    let request = http::Request::builder().uri("/quote").body(()).unwrap();
    assert_eq!(service.oneshot(request).await.unwrap().status().as_u16(), 200);
    assert_eq!(server.requests(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_with_nothing_left_is_refused_without_running_the_handler() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = ran.clone();
    let service =
        PropagationLayer::new(ServerOptions::default()).layer(tower::service_fn(move |req: http::Request<()>| {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            assert!(req.extensions().get::<Received>().is_some());
            async { Ok::<_, Infallible>(http::Response::new(String::from("ran"))) }
        }));
    let response = service.clone().oneshot(inbound("t=0, a=1")).await.unwrap();
    assert_eq!(response.status().as_u16(), 504);
    assert_eq!(response.headers()["retryrs-pushback"], "-1");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "the handler did not run");
    // Time left: the handler runs and sees the context.
    let response = service.oneshot(inbound("t=800, a=1")).await.unwrap();
    assert_eq!(response.body(), "ran");
}

#[tokio::test(flavor = "current_thread")]
async fn a_503_with_dont_retry_pushback_is_one_attempt_and_handed_over() {
    let server = serve(vec![Reply(503, "Retryrs-Pushback: -1\r\n"), Reply(200, "")]).await;
    let response = client(quick()).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(server.requests(), 1);
    let server = serve(vec![Reply(503, "x-envoy-overloaded: true\r\n"), Reply(200, "")]).await;
    assert_eq!(client(quick()).get(&server.url).send().await.unwrap().status().as_u16(), 503);
    assert_eq!(server.requests(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_non_negative_pushback_is_the_exact_wait() {
    // The backoff would wait 2 s; the server asks for exactly 50 ms.
    let slow = Policy::builder().jitter(Jitter::None).initial_delay(Duration::from_secs(2)).build().unwrap();
    let server = serve(vec![Reply(503, "Retryrs-Pushback: 50\r\n"), Reply(200, "")]).await;
    let started = Instant::now();
    let response = client(slow).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(started.elapsed() < Duration::from_secs(1), "waited {:?}", started.elapsed());
}

#[tokio::test(flavor = "current_thread")]
async fn outbound_from_a_2s_deadline_carries_t_and_each_attempt_number() {
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .initial_delay(Duration::from_millis(10))
        .deadline(Some(Duration::from_secs(2)))
        .build()
        .unwrap();
    assert_eq!(client(policy).get(&server.url).send().await.unwrap().status().as_u16(), 200);
    let heads = server.heads.lock().unwrap();
    let parse = |h: &str| {
        let v = context_of(h).expect("a Retryrs-Context header");
        let t: u64 = v.strip_prefix("t=").unwrap().split(',').next().unwrap().parse().unwrap();
        (t, v)
    };
    let (t1, first) = parse(&heads[0]);
    let (t2, second) = parse(&heads[1]);
    assert!(t1 > 1500 && t1 <= 2000 && first.ends_with(", a=1"), "{first}");
    assert!(t2 > 1500 && t2 <= t1 && second.ends_with(", a=2"), "{second}");
}

#[tokio::test(flavor = "current_thread")]
async fn nothing_is_sent_to_a_host_outside_the_allowlist() {
    let only_api = Propagate::new().allowlist(Allowlist::only(["api.example.com"]).unwrap());
    let server = serve(vec![Reply(200, "")]).await;
    client_with(quick(), only_api).get(&server.url).send().await.unwrap();
    assert_eq!(context_of(&server.heads.lock().unwrap()[0]), None);
    let loopback = Propagate::new().allowlist(Allowlist::only(["127.0.0.1"]).unwrap());
    let server = serve(vec![Reply(200, "")]).await;
    client_with(quick(), loopback).get(&server.url).send().await.unwrap();
    assert!(context_of(&server.heads.lock().unwrap()[0]).is_some());
    let off = serve(vec![Reply(200, "")]).await;
    client_with(quick(), Propagate::off()).get(&off.url).send().await.unwrap();
    assert_eq!(context_of(&off.heads.lock().unwrap()[0]), None);
}

#[tokio::test(flavor = "current_thread")]
async fn mesh_modes_add_their_headers() {
    let server = serve(vec![Reply(200, "")]).await;
    client_with(quick(), Propagate::new().mesh(retryrs::propagation::Mesh::Envoy))
        .get(&server.url)
        .send()
        .await
        .unwrap();
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.contains("x-envoy-max-retries: 0") && head.contains("x-envoy-upstream-rq-timeout-ms: "), "{head}");
}

#[test]
fn exhausted_by_the_ambient_deadline_says_deadline() {
    // The blocking executor inside an entered context: the call ends with reason deadline.
    let _virtual = retryrs::testing::scoped();
    let ambient =
        retryrs::propagation::Ambient::new(Some(Duration::from_millis(100)), false, retryrs::propagation::now());
    let _in = retryrs::propagation::enter(ambient);
    let retrier = Retrier::new(Policy::builder().jitter(Jitter::None).build().unwrap());
    let got = retrier.run(|_| Err::<(), _>("503"), |_| retryrs::Verdict::TRANSIENT);
    match got {
        Err(retryrs::RetryError::Exhausted { reason, .. }) => assert_eq!(reason, ExhaustReason::Deadline),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_tower_retry_layer_sends_each_attempt_s_context_and_honours_pushback() {
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use retryrs::tower_retry::RetryLayer;

    let server = serve(vec![Reply(503, ""), Reply(503, "Retryrs-Pushback: -1\r\n"), Reply(200, "")]).await;
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let service = RetryLayer::new(Retrier::new(quick())).layer(client);
    let request = http::Request::get(server.url.as_str()).body(Full::new(Bytes::new())).unwrap();
    let response = service.oneshot(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 503, "don't retry: the second 503 is handed over");
    assert_eq!(server.requests(), 2);
    let heads = server.heads.lock().unwrap();
    assert!(context_of(&heads[0]).unwrap().ends_with("a=1"), "{}", heads[0]);
    assert!(context_of(&heads[1]).unwrap().ends_with("a=2"), "{}", heads[1]);
}
