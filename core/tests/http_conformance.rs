//! Rust's runner of the hostile-server HTTP conformance suite (tests/http) for the reqwest
//! middleware: every case of tests/http/cases.json through the shared scripted server
//! (the driver and the judging: support/http_suite.rs). The middleware hands a response
//! over at its headers, so each case's `expect` applies as written. One test, so the
//! memory cases measure this process alone.

#[path = "support/http_suite.rs"]
mod http_suite;

use http_suite::{policy, Helper, Outcome};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use retryrs::reqwest_retry::{RetriesExhausted, RetryMiddleware};
use retryrs::Retrier;
use serde_json::Value;

struct Reqwest(ClientWithMiddleware);

fn kind(err: &reqwest_middleware::Error) -> (String, Option<u32>) {
    if let reqwest_middleware::Error::Middleware(e) = err {
        if let Some(x) = e.downcast_ref::<RetriesExhausted>() {
            return ("exhausted".into(), Some(x.attempts));
        }
    }
    if err.is_timeout() {
        return ("timeout".into(), None);
    }
    ("connection".into(), None)
}

impl Helper for Reqwest {
    const NAME: &'static str = "reqwest";

    fn new(case: &Value) -> Result<Self, String> {
        if case["server"]["listener"] == "tls_stall" {
            // This test's reqwest is built without TLS (no TLS stack compiled for the tests).
            return Err("the tests' reqwest has no TLS".into());
        }
        let retry = RetryMiddleware::new(Retrier::new(policy(&case["policy"])));
        Ok(Reqwest(ClientBuilder::new(reqwest::Client::new()).with(retry).build()))
    }

    async fn call(&self, case: &Value, url: &str, api: &str) -> Outcome {
        let req = &case["request"];
        let method = reqwest::Method::from_bytes(req["method"].as_str().unwrap().as_bytes()).unwrap();
        let mut builder = self.0.request(method, url);
        if let Some(headers) = req.get("headers").and_then(Value::as_object) {
            for (k, v) in headers {
                builder = builder.header(k, v.as_str().unwrap());
            }
        }
        if let Some(n) = req.get("body_bytes").and_then(Value::as_u64) {
            builder = builder.body(vec![b'x'; n as usize]);
        }
        let mut out = Outcome::default();
        match builder.send().await {
            Err(e) => {
                (out.error, out.attempts) = kind(&e);
                out.read = Err(format!("{e:#}"));
            }
            Ok(mut response) => {
                out.response = true;
                out.status = response.status().as_u16();
                out.read = match api {
                    "bytes" => response.bytes().await.map(|b| b.to_vec()),
                    "text" => response.text().await.map(String::into_bytes),
                    "json" => response.text().await.map(|t| {
                        serde_json::to_vec(&serde_json::from_str::<Value>(&t).expect("the body is JSON")).unwrap()
                    }),
                    _ => {
                        let mut all = vec![];
                        loop {
                            match response.chunk().await {
                                Ok(Some(c)) => all.extend_from_slice(&c),
                                Ok(None) => break Ok(all),
                                Err(e) => break Err(e),
                            }
                        }
                    }
                }
                .map_err(|e| {
                    out.read_error = if e.is_timeout() { "timeout".into() } else { "connection".into() };
                    format!("{e:#}")
                });
            }
        }
        out
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_case_against_the_reqwest_middleware() {
    // Only the TLS case may go unrun, and only for want of TLS in this build.
    http_suite::run_suite::<Reqwest>(&["tls_handshake_stall"]).await;
}
