//! The reqwest-middleware middleware against a loopback server: the HTTP scenarios of the
//! Python and Node helpers.

#[path = "support/stall.rs"]
mod stall;
mod support;

use std::time::{Duration, Instant};

use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use retryrs::reqwest_retry::{CircuitOpen, RetriesExhausted, RetryMiddleware};
use retryrs::{Jitter, Policy, Retrier};
use support::http_server::{serve, Reply};

fn client(policy: Policy) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new()).with(RetryMiddleware::new(Retrier::new(policy))).build()
}

fn quick() -> Policy {
    Policy::builder().jitter(Jitter::None).initial_delay(Duration::from_millis(10)).build().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn two_503s_then_200_make_three_requests_and_return_the_200() {
    let server = serve(vec![Reply(503, ""), Reply(503, ""), Reply(200, "")]).await;
    let response = client(quick()).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.text().await.unwrap(), "status 200");
    assert_eq!(server.requests(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_1_is_waited_out() {
    let server = serve(vec![Reply(503, "Retry-After: 1\r\n"), Reply(200, "")]).await;
    let started = Instant::now();
    let response = client(quick()).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(started.elapsed() >= Duration::from_secs(1), "retried after {:?}", started.elapsed());
    assert_eq!(server.requests(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_3600_returns_the_429_at_once() {
    let server = serve(vec![Reply(429, "Retry-After: 3600\r\n"), Reply(200, "")]).await;
    let started = Instant::now();
    let response = client(quick()).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "3600");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(server.requests(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_post_is_not_sent_again() {
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let response = client(quick()).post(&server.url).body("order=1").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(*server.methods.lock().unwrap(), ["POST"]);
    // Unless the user lists it.
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Retrier::new(quick())).methods(["GET", "POST"]))
        .build();
    let response = client.post(&server.url).body("order=1").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(*server.methods.lock().unwrap(), ["POST", "POST"]);
}

/// Issue 23: a POST carrying an Idempotency-Key is resent like an idempotent method
/// (503 then 200: 2 requests), unless the middleware is told to ignore the header.
#[tokio::test(flavor = "current_thread")]
async fn a_post_with_an_idempotency_key_is_sent_again() {
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let response =
        client(quick()).post(&server.url).header("Idempotency-Key", "order-42").body("order=1").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(*server.methods.lock().unwrap(), ["POST", "POST"]);
    let server = serve(vec![Reply(503, ""), Reply(200, "")]).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Retrier::new(quick())).idempotency_key(false))
        .build();
    let response = client.post(&server.url).header("Idempotency-Key", "order-42").body("order=1").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(*server.methods.lock().unwrap(), ["POST"]);
}

#[tokio::test(flavor = "current_thread")]
async fn out_of_attempts_the_last_response_is_returned() {
    let server = serve(vec![Reply(503, ""), Reply(502, "")]).await;
    let policy = Policy::builder().max_attempts(2).jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap();
    let response = client(policy).get(&server.url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 502);
    assert_eq!(server.requests(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_connection_never_made_is_retried_and_its_error_returned_at_the_end() {
    // A port nobody listens on: bind, learn it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let policy = Policy::builder().max_attempts(3).jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap();
    let err = client(policy).post(format!("http://127.0.0.1:{port}/")).send().await.unwrap_err();
    // Typed: attempts and reason, the client's own connect error as the source.
    let exhausted = exhausted(&err);
    assert_eq!(exhausted.attempts, 3);
    assert_eq!(exhausted.reason, retryrs::ExhaustReason::Attempts);
    assert!(exhausted.last.is_connect(), "{err:?}");
}

fn exhausted(err: &reqwest_middleware::Error) -> &RetriesExhausted {
    match err {
        reqwest_middleware::Error::Middleware(e) => e.downcast_ref::<RetriesExhausted>().expect("a RetriesExhausted"),
        other => panic!("expected a RetriesExhausted, got {other:?}"),
    }
}

/// Reads a request's head (to its blank line); false if the connection ended first.
async fn read_head(socket: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    let mut request = vec![];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// A loopback server answering every request with `head`, then `chunks` body pieces of
/// `chunk` bytes, `gap` apart (a body that flows), counting requests.
async fn flowing(
    head: &'static str,
    chunks: usize,
    chunk: usize,
    gap: Duration,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncWriteExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                if !read_head(&mut socket).await {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                let head = head.replace("{len}", &(chunks * chunk).to_string());
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..chunks {
                    tokio::time::sleep(gap).await;
                    if socket.write_all(&vec![b'x'; chunk]).await.is_err() {
                        return;
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, seen)
}

/// A policy with `deadline` and a 300 ms attempt timeout.
fn bounded(deadline: Duration) -> Policy {
    Policy::builder().deadline(Some(deadline)).attempt_timeout(Some(Duration::from_millis(300))).build().unwrap()
}

/// Issue 34/36: a 200 whose body flows for 2 s under a 1 s deadline (and a 300 ms
/// attempt timeout) comes back whole: the deadline bounds the call until the response is
/// handed over, never the body the caller reads after.
#[tokio::test(flavor = "current_thread")]
async fn a_body_that_flows_past_the_deadline_comes_back_whole() {
    let head = "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n";
    let (url, seen) = flowing(head, 20, 1024, Duration::from_millis(100)).await;
    let started = Instant::now();
    let response = client(bounded(Duration::from_secs(1))).get(&url).send().await.unwrap();
    let body = response.bytes().await.unwrap();
    assert_eq!(body.len(), 20 * 1024);
    assert!(started.elapsed() >= Duration::from_secs(2), "the body flowed for 2 s: {:?}", started.elapsed());
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A handed-over body that stalls fails after attempt_timeout of silence, as a timeout;
/// the response keeps its URL and status.
#[tokio::test(flavor = "current_thread")]
async fn a_body_that_stalls_fails_after_attempt_timeout_of_silence() {
    // Content-Length promises 100 KiB; the head comes, then nothing for 60 s.
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 102400\r\n\r\n";
    let (url, seen) = flowing(head, 2, 1024, Duration::from_secs(60)).await;
    let started = Instant::now();
    let response = client(bounded(Duration::from_secs(5))).get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.url().as_str(), url);
    let err = response.bytes().await.unwrap_err();
    let took = started.elapsed();
    assert!(err.is_timeout(), "{err:?}");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_millis(900), "took {took:?}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An open breaker refuses the call with a typed error, and no request is sent.
#[tokio::test(flavor = "current_thread")]
async fn an_open_breaker_is_a_typed_error_and_sends_nothing() {
    use retryrs::{BreakerConfig, CircuitBreaker};
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let breaker = std::sync::Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(1)).unwrap());
    let policy = Policy::builder().max_attempts(1).breaker(Some(breaker)).build().unwrap();
    let c = client(policy);
    let url = format!("http://127.0.0.1:{port}/");
    // The first call fails (refused): the breaker opens.
    let first = c.get(&url).send().await.unwrap_err();
    assert_eq!(exhausted(&first).attempts, 1);
    let server = serve(vec![Reply(200, "")]).await;
    let err = c.get(&server.url).send().await.unwrap_err();
    let open = match &err {
        reqwest_middleware::Error::Middleware(e) => *e.downcast_ref::<CircuitOpen>().expect("a CircuitOpen"),
        other => panic!("expected a CircuitOpen, got {other:?}"),
    };
    assert_eq!(open.state, retryrs::BreakerState::Open);
    assert!(open.retry_in > Duration::ZERO);
    assert_eq!(server.requests(), 0, "nothing was sent");
}

#[tokio::test(flavor = "current_thread")]
async fn the_deadline_ends_a_hung_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Accepts and never answers.
    let hold = tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let deadline = Duration::from_millis(500);
    let policy = Policy::builder().deadline(Some(deadline)).build().unwrap();
    let started = Instant::now();
    let err = client(policy).get(&url).send().await.unwrap_err();
    let took = started.elapsed();
    hold.abort();
    assert!(took < deadline + Duration::from_millis(250), "took {took:?}");
    // The attempt's bound ended it (the executor's: reqwest's own timeout is not used).
    let exhausted = exhausted(&err);
    assert_eq!(exhausted.reason, retryrs::ExhaustReason::Deadline);
    assert!(exhausted.last.to_string().contains("timed out"), "{err:?}");
}

/// Issue 26: under a hedging policy a GET whose first request hangs is hedged: the second
/// copy answers, the first connection is dropped (the server sees it close), and exactly
/// two requests were sent. A POST is sent once.
#[tokio::test(flavor = "current_thread")]
async fn a_hedging_policy_hedges_a_get_and_sends_a_post_once() {
    use tokio::io::AsyncWriteExt;

    let server = stall::stall_first(|mut socket: tokio::net::TcpStream| async move {
        if !read_head(&mut socket).await {
            return;
        }
        let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        let _ = socket.write_all(reply.as_bytes()).await;
        let _ = socket.shutdown().await;
    })
    .await;
    let url = format!("http://{}/rates", server.addr);
    let hedging = retryrs::Hedging::fixed_ms(3, 50.0).unwrap();
    let policy = Policy::builder().hedge(Some(hedging)).deadline(None).build().unwrap();
    let started = Instant::now();
    let response = client(policy).get(&url).send().await.unwrap();
    assert_eq!(response.text().await.unwrap(), "ok");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    server.assert_loser_closed_and_two_sent().await;

    // A POST may not be sent twice: once, even when the policy hedges at once (delay 0
    // would send all three copies together).
    let at_once = retryrs::Hedging::fixed_ms(3, 0.0).unwrap();
    let policy = Policy::builder().hedge(Some(at_once)).deadline(None).build().unwrap();
    let posted = serve(vec![Reply(200, ""), Reply(200, ""), Reply(200, "")]).await;
    let response = client(policy).post(&posted.url).body("order=1").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(*posted.methods.lock().unwrap(), ["POST"]);
}
