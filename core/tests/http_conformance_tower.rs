//! Rust's runner of the hostile-server HTTP conformance suite (tests/http) for the tower
//! layer: every case of tests/http/cases.json through `RetryLayer` over hyper-util's
//! legacy client as the inner service, as a hyper or tower-http user stacks them (the
//! driver and the judging: support/http_suite.rs). The layer hands a response over at
//! its headers, so each case's `expect` applies as written. One test, so the memory
//! cases measure this process alone.

#[path = "support/http_suite.rs"]
mod http_suite;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use http_suite::{policy, Helper, Outcome};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retryrs::tower_retry::{RetryLayer, RetryService};
use retryrs::{Retrier, RetryError};
use serde_json::Value;
use tower::{BoxError, ServiceBuilder, ServiceExt};

type HyperClient = Client<HttpConnector, Full<Bytes>>;

struct Tower(RetryService<HyperClient>);

/// Whether `e`, or an error in its source chain, is an `io::Error` of kind `TimedOut`:
/// the body's silence bound, or a client's own timeout.
fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        cause = e.source();
    }
    false
}

fn kind(err: &BoxError) -> (String, Option<u32>) {
    if let Some(RetryError::Exhausted { attempts, .. }) = err.downcast_ref::<RetryError<BoxError>>() {
        return ("exhausted".into(), Some(*attempts));
    }
    if timed_out(&**err) {
        return ("timeout".into(), None);
    }
    ("connection".into(), None)
}

impl Helper for Tower {
    const NAME: &'static str = "tower";

    fn new(case: &Value) -> Result<Self, String> {
        if case["server"]["listener"] == "tls_stall" {
            return Err("the tests' hyper-util client has no TLS connector".into());
        }
        let policy = policy(&case["policy"]);
        let mut connector = HttpConnector::new();
        // A connect timeout inside the attempt's bound, so a connect that timed out is the
        // client's connect error (nothing sent: retried for every method) rather than an
        // attempt the layer cut, which may have sent its request.
        let bound = policy.attempt_timeout().or(policy.deadline());
        connector.set_connect_timeout(bound.map(|b| b.mul_f64(0.8)));
        let client: HyperClient = Client::builder(TokioExecutor::new())
            // Idle connections are not kept past the case (the server drops them at load).
            .pool_idle_timeout(Duration::from_secs(5))
            .build(connector);
        let layer = RetryLayer::new(Retrier::new(policy)).connect_failed(|e| {
            e.downcast_ref::<hyper_util::client::legacy::Error>()
                .is_some_and(hyper_util::client::legacy::Error::is_connect)
        });
        Ok(Tower(ServiceBuilder::new().layer(layer).service(client)))
    }

    async fn call(&self, case: &Value, url: &str, api: &str) -> Outcome {
        let req = &case["request"];
        let mut builder = http::Request::builder().method(req["method"].as_str().unwrap()).uri(url);
        if let Some(headers) = req.get("headers").and_then(Value::as_object) {
            for (k, v) in headers {
                builder = builder.header(k, v.as_str().unwrap());
            }
        }
        let n = req.get("body_bytes").and_then(Value::as_u64).unwrap_or(0);
        let request = builder.body(Full::new(Bytes::from(vec![b'x'; n as usize]))).unwrap();
        let mut out = Outcome::default();
        match self.0.clone().oneshot(request).await {
            Err(e) => {
                (out.error, out.attempts) = kind(&e);
                out.read = Err(format!("{e}"));
            }
            Ok(response) => {
                out.response = true;
                out.status = response.status().as_u16();
                let mut body = response.into_body();
                let read: Result<Vec<u8>, BoxError> = match api {
                    "bytes" => body.collect().await.map(|b| b.to_bytes().to_vec()),
                    "text" => {
                        body.collect().await.map(|b| String::from_utf8(b.to_bytes().to_vec()).unwrap().into_bytes())
                    }
                    "json" => body.collect().await.map(|b| {
                        let json: Value = serde_json::from_slice(&b.to_bytes()).expect("the body is JSON");
                        serde_json::to_vec(&json).unwrap()
                    }),
                    _ => {
                        let mut all = vec![];
                        loop {
                            match body.frame().await {
                                Some(Ok(frame)) => all.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
                                None => break Ok(all),
                                Some(Err(e)) => break Err(e),
                            }
                        }
                    }
                };
                out.read = read.map_err(|e| {
                    out.read_error = if timed_out(&*e) { "timeout".into() } else { "connection".into() };
                    format!("{e}")
                });
            }
        }
        out
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_case_against_the_tower_layer() {
    // Only the TLS case may go unrun, and only for want of a TLS connector in this build.
    http_suite::run_suite::<Tower>(&["tls_handshake_stall"]).await;
}
