//! The hostile-server HTTP conformance suite's driver (tests/http), shared by the Rust
//! runners (core/tests/http_conformance.rs for the reqwest middleware,
//! core/tests/http_conformance_tower.rs for the tower layer): the shared scripted server
//! (`python3 scripts/http_conformance_server.py`), the cases of tests/http/cases.json, and
//! the judging of what a helper did. A runner says how its helper makes one call.
//! Included by `#[path]` (not through support/mod.rs) by the runners alone.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use retryrs::{Jitter, Policy};
use serde_json::Value;

pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
pub const READ_APIS: [&str; 4] = ["bytes", "text", "json", "chunk"];

/// The shared server as a child: it exits when its stdin (our pipe) closes.
pub struct Server {
    child: Child,
    control: String,
    pub listeners: Value,
}

impl Server {
    pub fn start() -> Server {
        let mut child = Command::new("python3")
            .arg(format!("{ROOT}/scripts/http_conformance_server.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the shared server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let info: Value = serde_json::from_str(&line).expect("the server prints its endpoints as JSON");
        Server { child, control: info["control"].as_str().unwrap().to_owned(), listeners: info["listeners"].clone() }
    }

    pub async fn load(&self, spec: &Value) {
        let r =
            reqwest::Client::new().post(format!("{}/load", self.control)).body(spec.to_string()).send().await.unwrap();
        assert!(r.status().is_success(), "load: {}", r.text().await.unwrap());
    }

    pub async fn seen(&self) -> Value {
        let text =
            reqwest::Client::new().get(format!("{}/seen", self.control)).send().await.unwrap().text().await.unwrap();
        serde_json::from_str(&text).unwrap()
    }

    pub fn url(&self, case: &Value) -> String {
        let listener = case["server"]["listener"].as_str().unwrap();
        format!("{}{}", self.listeners[listener].as_str().unwrap(), case["request"]["path"].as_str().unwrap())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

pub fn policy(p: &Value) -> Policy {
    let ms = |key: &str| p.get(key).map(|v| v.as_f64().map(|ms| Duration::from_secs_f64(ms / 1000.0)));
    let mut b = Policy::builder().jitter(Jitter::None);
    if let Some(n) = p.get("max_attempts").and_then(Value::as_u64) {
        b = b.max_attempts(n);
    }
    if let Some(d) = ms("deadline_ms") {
        b = b.deadline(d);
    }
    if let Some(d) = ms("attempt_timeout_ms") {
        b = b.attempt_timeout(d);
    }
    if let Some(d) = ms("max_retry_after_ms") {
        b = b.max_retry_after(d);
    }
    if let Some(Some(d)) = ms("initial_delay_ms") {
        b = b.initial_delay(d);
    }
    b.build().unwrap()
}

/// The server's body of `n` bytes: a JSON string literal of the alphabet repeated.
fn expected_body(n: usize) -> Vec<u8> {
    if n < 2 {
        return vec![b'x'; n];
    }
    let mut out = vec![b'"'];
    out.extend((0..n - 2).map(|i| b"abcdefghijklmnopqrstuvwxyz"[i % 26]));
    out.push(b'"');
    out
}

/// What one call of a helper did, for [`judge`]: the runner of each helper fills it in.
#[derive(Debug)]
pub struct Outcome {
    /// The call returned a response (else an error).
    pub response: bool,
    /// The error's kind, when it did not: `exhausted`, `timeout` or `connection`.
    pub error: String,
    /// The attempts an exhausted error reports.
    pub attempts: Option<u32>,
    pub status: u16,
    /// The body read through the asked read API, or why reading failed.
    pub read: Result<Vec<u8>, String>,
    /// The read's failure kind: `timeout` or `connection`.
    pub read_error: String,
    /// The call and its read, together.
    pub took: Duration,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            response: false,
            error: String::new(),
            attempts: None,
            status: 0,
            read: Ok(vec![]),
            read_error: String::new(),
            took: Duration::ZERO,
        }
    }
}

/// One helper under test. Each helper hands a response over at its headers, so every
/// case's `expect` applies as written.
pub trait Helper: Sized {
    /// The helper's name in the table (tests/http/README.md).
    const NAME: &'static str;
    /// A fresh helper (its own client and connection pool) with the case's policy, or why
    /// the case cannot apply to it (printed as n/a).
    fn new(case: &Value) -> Result<Self, String>;
    /// One call of `case.request` to `url`, its body read through `api` (one of
    /// [`READ_APIS`]); `took` need not be set.
    async fn call(&self, case: &Value, url: &str, api: &str) -> Outcome;
}

/// A call that has not ended by then hangs: far past every case's bound, so a helper that
/// breaks a bound fails its case instead of holding the suite up.
const HUNG: Duration = Duration::from_secs(20);

async fn timed<H: Helper>(helper: &H, case: &Value, url: &str, api: &str) -> Outcome {
    let started = Instant::now();
    let mut out = tokio::time::timeout(HUNG, helper.call(case, url, api)).await.unwrap_or_else(|_| Outcome {
        error: "hung".into(),
        read: Err(format!("the call (and its read) did not end within {} s", HUNG.as_secs())),
        ..Outcome::default()
    });
    out.took = started.elapsed();
    out
}

fn count_ok(want: &Value, got: u64) -> bool {
    match want {
        Value::Object(m) => {
            m.get("min").and_then(Value::as_u64).unwrap_or(0) <= got
                && got <= m.get("max").and_then(Value::as_u64).unwrap_or(got)
        }
        v => v.as_u64() == Some(got),
    }
}

fn judge(expect: &Value, slack_ms: f64, o: &Outcome, seen: Option<&Value>, failures: &mut Vec<String>) {
    let mut check = |ok: bool, msg: String| {
        if !ok {
            failures.push(msg);
        }
    };
    let want_response = expect["outcome"] == "response";
    check(
        o.response == want_response,
        format!("outcome {} ({:?}), expected {}", if o.response { "response" } else { "error" }, o, expect["outcome"]),
    );
    if o.response != want_response {
        return;
    }
    if let Some(kinds) = expect.get("error").and_then(Value::as_array) {
        check(
            kinds.iter().any(|k| k == o.error.as_str()),
            format!("error kind {} ({:?}), expected {kinds:?}", o.error, o.read),
        );
    }
    if let (Some(want), Some(got)) = (expect.get("attempts").and_then(Value::as_u64), o.attempts) {
        check(want == u64::from(got), format!("{got} attempts, expected {want}"));
    }
    if let Some(status) = expect.get("status").and_then(Value::as_u64) {
        check(u64::from(o.status) == status, format!("status {}, expected {status}", o.status));
    }
    match expect.get("read").and_then(Value::as_str) {
        Some("whole") => match &o.read {
            Ok(body) => {
                if let Some(n) = expect.get("body_bytes").and_then(Value::as_u64) {
                    check(
                        *body == expected_body(n as usize),
                        format!("body of {} bytes, expected the server's {n}", body.len()),
                    );
                }
            }
            Err(e) => check(false, format!("body not read whole: {e}")),
        },
        Some("error") => {
            check(o.read.is_err(), "the body read whole, expected a read error".into());
            if let Some(kinds) = expect.get("read_error").and_then(Value::as_array) {
                check(
                    o.read.is_ok() || kinds.iter().any(|k| k == o.read_error.as_str()),
                    format!("read error kind {} ({:?}), expected {kinds:?}", o.read_error, o.read),
                );
            }
        }
        _ => {}
    }
    if let Some(within) = expect.get("within_ms").and_then(Value::as_f64) {
        let ms = o.took.as_secs_f64() * 1000.0;
        check(ms <= within + slack_ms, format!("took {ms:.0} ms, bound {within} + {slack_ms} ms"));
    }
    if let Some(min) = expect.get("min_ms").and_then(Value::as_f64) {
        let ms = o.took.as_secs_f64() * 1000.0;
        check(ms >= min, format!("took {ms:.0} ms, sooner than {min} ms"));
    }
    if let Some(seen) = seen {
        if let Some(want) = expect.get("requests") {
            let n = seen["requests"].as_array().unwrap().len() as u64;
            check(count_ok(want, n), format!("the server saw {n} requests, expected {want}"));
        }
        if let Some(want) = expect.get("connections") {
            let n: u64 = seen["connections"].as_object().unwrap().values().filter_map(Value::as_u64).sum();
            check(count_ok(want, n), format!("the listener accepted {n} connections, expected {want}"));
        }
    }
}

/// This process's resident set, or its peak, in MB (Linux /proc).
fn rss_mb(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<f64>().ok().map(|kb| kb / 1024.0)
}

async fn run_case<H: Helper>(server: &Server, case: &Value, slack_ms: f64) -> Vec<String> {
    let mut failures = vec![];
    let expect = &case["expect"];
    let helper = match H::new(case) {
        Ok(helper) => helper,
        Err(why) => return vec![format!("not run: {why}")],
    };
    let repeat = case.get("repeat").and_then(Value::as_u64).unwrap_or(1);
    if repeat > 1 || expect.get("peak_rss_growth_mb").is_some() {
        server.load(&serde_json::json!({"listener": "http", "steps": []})).await;
        let warm = format!("{}/warm-up", server.listeners["http"].as_str().unwrap());
        let warm_case = serde_json::json!({"request": {"method": "GET", "path": "/warm-up"}});
        for _ in 0..repeat.min(200) {
            let _ = helper.call(&warm_case, &warm, "bytes").await;
        }
        server.load(&case["server"]).await;
        let before = rss_mb("VmRSS:").unwrap_or(0.0);
        let peak_known = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let url = server.url(case);
        let mut last = Outcome::default();
        for _ in 0..repeat {
            last = timed(&helper, case, &url, "bytes").await;
            if !last.response || Some(u64::from(last.status)) != expect.get("status").and_then(Value::as_u64) {
                failures.push(format!("a call went wrong: {last:?}"));
                break;
            }
        }
        let seen = server.seen().await;
        let mut single = expect.clone();
        if repeat > 1 {
            single.as_object_mut().unwrap().remove("within_ms");
        }
        judge(&single, slack_ms, &last, Some(&seen), &mut failures);
        let after = rss_mb("VmRSS:").unwrap_or(0.0);
        if let Some(bound) = expect.get("rss_growth_mb").and_then(Value::as_f64) {
            let grew = after - before;
            println!("    RSS grew by {grew:.1} MB over {repeat} calls");
            if grew >= bound {
                failures.push(format!("RSS grew by {grew:.1} MB, bound {bound} MB"));
            }
        }
        if let Some(bound) = expect.get("peak_rss_growth_mb").and_then(Value::as_f64) {
            let grew = rss_mb("VmHWM:").unwrap_or(0.0) - before;
            println!("    peak RSS grew by {grew:.1} MB");
            if !peak_known || grew >= bound {
                failures.push(format!("peak RSS grew by {grew:.1} MB (measurable: {peak_known}), bound {bound} MB"));
            }
        }
        return failures;
    }
    drop(helper);
    let apis: &[&str] =
        if expect.get("read_apis").and_then(Value::as_str) == Some("all") { &READ_APIS } else { &READ_APIS[..1] };
    for api in apis {
        // A fresh helper (and pool) per call: the load drops the last call's connections.
        let helper = H::new(case).expect("a helper made once for this case is made again");
        server.load(&case["server"]).await;
        let outcome = timed(&helper, case, &server.url(case), api).await;
        let seen = server.seen().await;
        let before = failures.len();
        judge(expect, slack_ms, &outcome, Some(&seen), &mut failures);
        for f in &mut failures[before..] {
            *f = format!("[{api}] {f}");
        }
    }
    failures
}

/// Every case against helper `H`, one after another in this process (so the memory cases
/// measure it alone); fails on any failed case, or on a case not run other than those
/// named in `may_not_run` (each with its reason printed).
pub async fn run_suite<H: Helper>(may_not_run: &[&str]) {
    let suite: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{ROOT}/tests/http/cases.json")).unwrap()).unwrap();
    let slack_ms = suite["slack_ms"].as_f64().unwrap();
    let server = Server::start();
    let (name, mut failed, mut not_run) = (H::NAME, vec![], vec![]);
    for case in suite["cases"].as_array().unwrap() {
        let case_name = case["name"].as_str().unwrap();
        let failures = run_case::<H>(&server, case, slack_ms).await;
        if failures.len() == 1 && failures[0].starts_with("not run:") {
            println!("n/a  {case_name} / {name}: {}", failures[0]);
            not_run.push(case_name.to_owned());
            continue;
        }
        println!("{}  {case_name} / {name}", if failures.is_empty() { "ok  " } else { "FAIL" });
        for f in &failures {
            println!("       {f}");
        }
        if !failures.is_empty() {
            failed.push(case_name.to_owned());
        }
    }
    println!(
        "{name}: {} cases, {} failed, not run: {not_run:?}",
        suite["cases"].as_array().unwrap().len(),
        failed.len()
    );
    assert!(failed.is_empty(), "cases failed: {failed:?}");
    assert!(not_run.iter().all(|n| may_not_run.contains(&n.as_str())), "{not_run:?}");
}
