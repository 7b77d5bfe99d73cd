//! The Rust runner of the propagation vectors (tests/conformance/propagation.json; the
//! body `propagation`, tests/conformance/README.md): each case asked of the core's
//! `retryrs::propagation`, and a constraint case also run as a call inside the context.

use std::time::Duration;

use retryrs::propagation::{
    self as prop, constrain, outbound_headers, Allowlist, Gate, Inbound, Mesh, RequestKind, ServerOptions,
    ServerPushback,
};
use retryrs::{with_pushback, Attempt, HttpVerdict, Policy, Retrier, RetryWith, Verdict};
use serde_json::{json, Value};

/// The keys of each case and of its `expect`.
pub const CASES: &[(&str, &[&str], &[&str])] = &[
    ("inbound", &["headers", "limit_ms", "trust_mesh"], &["budget_ms", "is_retry", "clamped", "malformed"]),
    ("margin", &["left_ms"], &["margin_ms"]),
    ("constrain", &["left_ms", "is_retry"], &["deadline_ms", "max_attempts", "changed"]),
    ("outbound", &["left_ms", "attempt", "is_retry", "mesh", "kind"], &["headers"]),
    ("pushback", &["headers", "verdict"], &["pushback", "verdict", "wait_ms"]),
    ("upward", &["requests", "observe_only"], &["upward"]),
    ("allowlist", &["hosts", "host"], &["allows"]),
];

fn ms(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_millis() as u64))
}

fn opt_ms(v: &Value) -> Option<Duration> {
    v.as_u64().map(Duration::from_millis)
}

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_str().unwrap().to_string()))
        .collect()
}

fn refs(p: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    p.iter().map(|(n, v)| (n.as_str(), v.as_str()))
}

/// The server options a case gives: `limit_ms` absent is the default (15 s), null no clamp.
fn options(case: &Value) -> ServerOptions {
    let mut o = ServerOptions::new().trust_mesh(case.get("trust_mesh").and_then(Value::as_bool).unwrap_or(false));
    if let Some(limit) = case.get("limit_ms") {
        o = o.limit(opt_ms(limit));
    }
    o
}

/// Checks one propagation vector; `policy` is the vector's policy, when it has one.
pub fn check(body: &Value, policy: Option<Policy>) -> Result<(), String> {
    let (name, case) = CASES
        .iter()
        .find_map(|(n, _, _)| body.get(*n).map(|c| (*n, c)))
        .ok_or("a propagation vector needs one of inbound, margin, constrain, outbound, pushback, upward, allowlist")?;
    let want = &body["expect"];
    let got = match name {
        "inbound" => {
            let i = Inbound::from_headers(refs(&pairs(&case["headers"])), &options(case));
            json!({"budget_ms": ms(i.budget), "is_retry": i.is_retry, "clamped": i.clamped, "malformed": i.malformed})
        }
        "margin" => {
            json!({"margin_ms": prop::margin(Duration::from_millis(case["left_ms"].as_u64().unwrap())).as_millis() as u64})
        }
        "constrain" => {
            let policy = policy.ok_or("a constrain vector has a policy")?;
            let left = opt_ms(&case["left_ms"]);
            let is_retry = case["is_retry"].as_bool().unwrap();
            let under = constrain(&policy, left, is_retry);
            let p = under.as_ref().unwrap_or(&policy);
            let got =
                json!({"deadline_ms": ms(p.deadline()), "max_attempts": p.max_attempts(), "changed": under.is_some()});
            run_inside(&policy, left, is_retry, &got)?;
            got
        }
        "outbound" => {
            let mesh = Mesh::parse(case["mesh"].as_str().unwrap())?;
            let kind = RequestKind::parse(case["kind"].as_str().unwrap())?;
            let attempt = case["attempt"].as_u64().unwrap() as u32;
            let h =
                outbound_headers(mesh, opt_ms(&case["left_ms"]), attempt, case["is_retry"].as_bool().unwrap(), kind);
            json!({"headers": h.into_iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>()})
        }
        "pushback" => {
            let pushback = prop::read_pushback(refs(&pairs(&case["headers"])));
            let verdict = match case["verdict"].as_str().unwrap() {
                "retry" => HttpVerdict::Retry,
                "response" => HttpVerdict::Response,
                "fail" => HttpVerdict::Fail,
                other => return Err(format!("unknown verdict {other:?}")),
            };
            let (fate, wait) = match with_pushback(verdict, None, pushback) {
                None => (verdict.as_str(), None),
                Some(RetryWith::DontRetry) => ("dont_retry", None),
                Some(with) => ("retry", with.exact()),
            };
            let said = match pushback {
                None => Value::Null,
                Some(ServerPushback::DontRetry) => json!("dont_retry"),
                Some(ServerPushback::Wait(w)) => json!(w.as_millis() as u64),
            };
            json!({"pushback": said, "verdict": fate, "wait_ms": ms(wait)})
        }
        "upward" => {
            let gate = Gate::new(ServerOptions::new().observe_only(case["observe_only"].as_bool().unwrap()));
            let answers: Vec<&str> = case["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| gate.receive_at(refs(&pairs(r)), Duration::from_secs(100)).upward.as_str())
                .collect();
            json!({"upward": answers})
        }
        "allowlist" => {
            let list = match case["hosts"].as_array() {
                None => Allowlist::all(),
                Some(h) => Allowlist::only(h.iter().map(|x| x.as_str().unwrap()))?,
            };
            json!({"allows": list.allows(case["host"].as_str().unwrap())})
        }
        _ => unreachable!(),
    };
    for (key, value) in want.as_object().ok_or("expect is an object")? {
        if got.get(key) != Some(value) {
            return Err(format!("{name}: {key}: want {value}, got {}", got.get(key).unwrap_or(&Value::Null)));
        }
    }
    Ok(())
}

/// A constraint case run as a call: inside the context (entered on this thread, under
/// virtual time), a retrier whose every attempt fails transiently makes `max_attempts`
/// attempts (the vectors' policies wait 0 ms), the first bounded by `deadline_ms`.
fn run_inside(policy: &Policy, left: Option<Duration>, is_retry: bool, want: &Value) -> Result<(), String> {
    let _virtual = retryrs::testing::scoped();
    let ambient = prop::Ambient::new(left, is_retry, prop::now());
    let _entered = prop::enter(ambient);
    let retrier = Retrier::new(policy.clone());
    let mut bounds = vec![];
    let _ = retrier.run(
        |a: &Attempt| {
            bounds.push(a.remaining.map(|d| d.as_millis() as u64));
            Err::<(), _>("transient")
        },
        |_| Verdict::TRANSIENT,
    );
    let first = bounds.first().copied().flatten();
    let attempts = bounds.len() as u64;
    let (want_deadline, want_attempts) = (want["deadline_ms"].as_u64(), want["max_attempts"].as_u64());
    // Virtual time stands still during the attempts and the waits are 0 ms: every
    // attempt the limit allows runs (a zero deadline is not yet passed at 0 ms).
    let expect_attempts = want_attempts;
    if first != want_deadline || Some(attempts) != expect_attempts {
        return Err(format!(
            "run inside the context: first bound {first:?}, attempts {attempts}; want {want_deadline:?}, {expect_attempts:?}"
        ));
    }
    Ok(())
}
