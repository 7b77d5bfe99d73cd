//! The Rust runner of the cross-language conformance vectors (tests/conformance/*.json,
//! format in tests/conformance/README.md). Every vector runs through the public API: the
//! blocking executor on a virtual clock, a listener, a cancel token.

#[path = "support/propagation_vectors.rs"]
mod propagation_vectors;

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use retryrs::{classify_request, HttpOutcome, HttpRules};
use retryrs::{
    is_retryable_status, parse_retry_after_ms, CancelToken, Clock, DocumentError, EventKind, Failed, HedgeCall,
    Policies, Policy, Retrier, RetryError, Run, Step, Stop, ValueVerdict, Verdict, VirtualClock, HISTORY,
};
use serde_json::{json, Value};

fn vector_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

fn load_vectors() -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(vector_dir())
        .expect("tests/conformance exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = vec![];
    for file in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for v in doc["vectors"].as_array().unwrap_or_else(|| panic!("{name}: no vectors")) {
            out.push((name.clone(), v.clone()));
        }
    }
    out
}

/// Refuses keys the format does not define: a misspelt key must fail, not test nothing.
fn check_keys(where_: &str, obj: &Value, allowed: &[&str]) -> Result<(), String> {
    let map = obj.as_object().ok_or_else(|| format!("{where_}: not an object"))?;
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{where_}: unknown key {k:?} (known: {})", allowed.join(", "))),
        None => Ok(()),
    }
}

/// The vectors' policy keys: every knob in the table, by its name (the document format),
/// and the breaker a policy names.
fn policy_keys() -> Vec<String> {
    retryrs::KNOBS.iter().map(|k| k.name.to_string()).chain(["breaker".to_string(), "hedge".to_string()]).collect()
}

/// A budget's keys, every kind's (the loader checks which belong to which kind).
const BUDGET_KEYS: &[&str] = &[
    "kind",
    "max_tokens",
    "token_ratio",
    "capacity",
    "retry_cost",
    "timeout_retry_cost",
    "no_retry_increment",
    "ttl",
    "min_retries_per_sec",
    "percent_can_retry",
];

/// A breaker's keys, every model's.
const BREAKER_KEYS: &[&str] = &[
    "model",
    "failures",
    "failure_ratio",
    "minimum_throughput",
    "sampling_duration",
    "break_duration",
    "half_open_probes",
    "break_multiplier",
    "max_break_duration",
    "per_attempt",
    "count_permanent",
    "judge_all_probes",
    "minimum_calls",
    "window_size",
    "slow_call_duration",
    "slow_call_ratio",
];

/// The vector's policy through the document loader, as every host loads it: the policy is
/// `retry` (the contract's default name) in a document with the vector's budgets, or the
/// service `retry` of the vector's gRPC `service_config`.
fn build_policy(v: &Value) -> Result<Policy, DocumentError> {
    let doc = match v.get("service_config") {
        Some(config) => config.clone(),
        None => json!({
            "policies": {"retry": v["policy"]},
            "budgets": v.get("budgets").cloned().unwrap_or(json!({})),
            "breakers": v.get("breakers").cloned().unwrap_or(json!({})),
        }),
    };
    Ok(Policies::from_json(&doc.to_string())?.get("retry").expect("the document's one policy").clone())
}

/// The error a scripted attempt fails with: its attempt number, so order can be checked.
#[derive(Debug, PartialEq)]
struct Scripted(u32);

/// Runs one call of a call vector; returns the observed expectation object.
fn run_call(retrier: &Retrier, script: &[Value], at_ms: Option<u64>) -> Result<Value, String> {
    // Every call gets a clock at the vector's origin, moved to the call's `at_ms`: the
    // times a breaker (or a ratio budget) sees are the vector's timeline.
    let clock = VirtualClock::new();
    clock.advance(Duration::from_millis(at_ms.unwrap_or(0)));
    let token = CancelToken::new();
    let events = RefCell::new(Vec::<Value>::new());
    let mut delays = vec![];
    let mut calls = 0u32;
    // Each attempt's bound as the attempt sees it, before it takes any time.
    let mut bounds = vec![];
    let step = |n: u32| -> Option<&Value> { script.get(n as usize - 1) };
    let listener = |e: &retryrs::Event<'_>, failed: Option<Failed<'_, Scripted, u32>>| {
        let err = failed.and_then(Failed::error);
        let value = failed.and_then(Failed::value);
        let mut ev = event_json(e);
        ev["retries_left"] = json!(e.retries_left);
        // Whether the event carried an error, or a rejected value: the vectors say which
        // must (docs/contract.md, "Events").
        ev["error"] = json!(err.is_some());
        ev["value"] = json!(value.is_some());
        // Failure events carry the failure they are about: the latest attempt's.
        let wants_failure = e.kind.carries_error();
        let about = err.map(|s| s.0).or(value.copied());
        if wants_failure && e.attempt > 0 && about != Some(e.attempt) {
            ev["error_mismatch"] = json!(format!("{failed:?}"));
        }
        if e.kind == EventKind::Retrying {
            let s = step(e.attempt).cloned().unwrap_or_default();
            if let Some(overrun) = s.get("wait_overrun_ms").and_then(Value::as_u64) {
                clock.advance(Duration::from_millis(overrun));
            }
            if s.get("cancel_during_wait").and_then(Value::as_bool) == Some(true) {
                token.cancel();
            }
        }
        events.borrow_mut().push(ev);
    };
    let hint = |s: &Value| s.get("hint_ms").and_then(Value::as_f64).and_then(retryrs::duration_from_ms);
    let mut run = Run::default();
    // A hook vector (an attempt with "wait"): the wait and before-retry hooks answer what
    // the script says for the attempt that failed; other vectors run without hooks (the
    // one-step path).
    if script.iter().any(|s| s.get("wait").is_some()) {
        let wait = |n: u32| step(n).and_then(|s| s.get("wait")).cloned().unwrap_or(json!("engine"));
        run = run
            .before_retry(move |ctx| match wait(ctx.attempt) == "stop" {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            })
            .wait_with(move |ctx| wait(ctx.attempt).as_u64().map(Duration::from_millis));
    }
    let result = retrier.execute(
        run.clock(&clock)
            .cancel(&token)
            .observer(listener)
            // The value attempt n returns is n; the script says whether it is accepted.
            .result_predicate(|n: &u32| match step(*n) {
                Some(s) if s["result"] == "rejected_value" => ValueVerdict::Retry { hint: hint(s) },
                _ => ValueVerdict::Accept,
            }),
        |attempt: &retryrs::Attempt| {
            let n = attempt.number;
            calls += 1;
            bounds.push(attempt.remaining.map(|d| d.as_millis() as u64));
            // Called more often than the script allows: fail with a marker the checks reject.
            let s = step(n).ok_or(Scripted(u32::MAX))?;
            clock.advance(Duration::from_millis(s.get("takes_ms").and_then(Value::as_u64).unwrap_or(0)));
            match s["result"].as_str() {
                Some("success" | "rejected_value") => Ok(n),
                _ => Err(Scripted(n)),
            }
        },
        |e: &Scripted| match step(e.0) {
            Some(s) if s["result"] == "transient" => Verdict::Transient { hint: hint(s) },
            Some(s) if s["result"] == "dont_retry" => Verdict::DontRetry,
            _ => Verdict::Permanent,
        },
    );
    let events = events.into_inner();
    // The waits: Retrying's delays (BreakerOpened carries the break, not a wait).
    for e in events.iter().filter(|e| e["kind"] == "retrying") {
        if let Some(d) = e.get("delay_ms") {
            delays.push(d.clone());
        }
    }
    if events.iter().any(|e| e.get("error_mismatch").is_some()) {
        return Err(format!("an event carried the wrong failure: {events:?}"));
    }
    let mut got = json!({"attempts": calls, "delays_ms": delays, "events": events, "bounds_ms": bounds});
    // The errors a history must keep: the error attempts among the last HISTORY failures.
    let is_error = |n: &u32| step(*n).is_some_and(|s| s["result"] != "rejected_value");
    let kept = |attempts: u32| -> Vec<Scripted> {
        (1..=attempts)
            .filter(is_error)
            .map(Scripted)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .take(HISTORY)
            .rev()
            .collect()
    };
    match result {
        Ok(n) => {
            got["outcome"] = json!("success");
            if n != calls {
                return Err(format!("returned the value of attempt {n}, not of attempt {calls}"));
            }
        }
        Err(RetryError::Rejected(e)) => {
            got["outcome"] = json!("rejected");
            if e != Scripted(calls) {
                return Err(format!("rejected with {e:?}, not the failure of attempt {calls}"));
            }
        }
        Err(RetryError::Exhausted { attempts, reason, errors, value, .. }) => {
            got["outcome"] = json!("exhausted");
            got["reason"] = json!(reason.as_str());
            if let Some(v) = value {
                got["value"] = json!(v);
            }
            if attempts != calls || errors != kept(attempts) {
                return Err(format!("exhausted after {attempts} with errors {errors:?}, {calls} calls"));
            }
        }
        Err(RetryError::Cancelled { attempts, errors, value, .. }) => {
            got["outcome"] = json!("cancelled");
            let last_is = errors.last().map(|e| e.0).filter(|_| value.is_none()).or(value);
            if attempts != calls || last_is != Some(calls) {
                return Err(format!(
                    "cancelled after {attempts} with errors {errors:?}, value {value:?}, {calls} calls"
                ));
            }
        }
        // RetryError is non_exhaustive: an outcome this runner does not know fails the vector.
        Err(other) => return Err(format!("an outcome the runner does not know: {other:?}")),
    }
    if let Some(budget) = retrier.policy().budget() {
        got["budget_tokens"] = json!(budget.tokens());
    }
    if let Some(breaker) = retrier.policy().breaker() {
        got["breaker_state"] = json!(breaker.state(clock.now()).as_str());
    }
    Ok(got)
}

/// What every runner here records of an event: kind, attempt, elapsed_ms, and delay_ms
/// and reason when it has them (each runner adds what it checks besides).
fn event_json(e: &retryrs::Event<'_>) -> Value {
    let mut ev = json!({"kind": e.kind.as_str(), "attempt": e.attempt, "elapsed_ms": e.elapsed.as_millis() as u64});
    if let Some(d) = e.delay {
        ev["delay_ms"] = json!(d.as_millis() as u64);
    }
    if let Some(r) = e.reason {
        ev["reason"] = json!(r.as_str());
    }
    ev
}

/// Runs one hedged call of a call vector through the sans-IO [`HedgeCall`] on virtual
/// time: attempt k, once launched, ends `takes_ms` later with its script's result. At one
/// instant, outcomes are reported (in attempt order) before the engine is polled again.
/// After the call, each cancelled loser's late result is reported too: it must be
/// dropped, changing neither the events nor the budget.
fn run_hedged_call(policy: &Policy, script: &[Value]) -> Result<Value, String> {
    let events = RefCell::new(Vec::<Value>::new());
    let mut sink = |e: &retryrs::Event<'_>| {
        events.borrow_mut().push(event_json(e));
    };
    let ms = |n: u64| Duration::from_millis(n);
    let step_of =
        |k: u32| script.get(k as usize - 1).ok_or(format!("attempt {k} launched; the script has {}", script.len()));
    let verdict = |s: &Value| {
        let hint = s.get("hint_ms").and_then(Value::as_f64).and_then(retryrs::duration_from_ms);
        match s["result"].as_str() {
            Some("success") => Verdict::Success,
            Some("transient") => Verdict::Transient { hint },
            Some("dont_retry") => Verdict::DontRetry,
            _ => Verdict::Permanent,
        }
    };
    let mut call = HedgeCall::start_with(policy, ms(0), &mut sink);
    let mut now = ms(0);
    let mut launched = vec![];
    let mut bounds = vec![];
    // When each launched attempt ends.
    let mut ends: Vec<Duration> = vec![];
    let mut step = call.poll(now, &mut sink).map_err(|e| e.to_string())?;
    let (outcome, cancel) = loop {
        match step {
            Step::Launch(k) => {
                launched.push(now.as_millis() as u64);
                bounds.push(call.remaining(k, now).map_err(|e| e.to_string())?.map(|d| d.as_millis() as u64));
                let takes = step_of(k)?.get("takes_ms").and_then(Value::as_u64).unwrap_or(0);
                ends.push(now + ms(takes));
                step = call.poll(now, &mut sink).map_err(|e| e.to_string())?;
            }
            Step::Wait(until) => {
                let next = call.running().iter().min_by_key(|k| (ends[*k as usize - 1], *k));
                match (next, until) {
                    (Some(k), until) if until.is_none_or(|t| ends[k as usize - 1] <= t) => {
                        now = ends[k as usize - 1];
                        step = call.record(k, verdict(step_of(k)?), now, &mut sink).map_err(|e| e.to_string())?;
                    }
                    (_, Some(t)) => {
                        if t < now {
                            return Err(format!("asked to wait until {t:?}, which is before now ({now:?})"));
                        }
                        now = t;
                        step = call.poll(now, &mut sink).map_err(|e| e.to_string())?;
                    }
                    _ => return Err("told to wait for an outcome with nothing in flight".into()),
                }
            }
            Step::Won { attempt, cancel } => break ((json!("success"), Some(attempt), None), cancel),
            Step::Stop { stop, cancel } => {
                let (name, reason) = match stop {
                    Stop::Success => return Err("Stop(Success) without a winner".into()),
                    Stop::Rejected => ("rejected", None),
                    Stop::Exhausted(r) => ("exhausted", Some(r.as_str())),
                    Stop::Cancelled => ("cancelled", None),
                };
                break ((json!(name), None, reason), cancel);
            }
            Step::Dropped => return Err("a result was dropped while its attempt was in flight".into()),
        }
    };
    // The losers' late results: dropped, counted nowhere.
    let tokens = policy.budget().map(|b| b.tokens());
    let before = events.borrow().len();
    for k in cancel.iter() {
        let late = call.record(k, verdict(step_of(k)?), ends[k as usize - 1], &mut sink);
        if late != Ok(Step::Dropped) {
            return Err(format!("the late result of cancelled attempt {k} was not dropped: {late:?}"));
        }
    }
    if events.borrow().len() != before || policy.budget().map(|b| b.tokens()) != tokens {
        return Err("a late result changed the events or the budget".into());
    }
    let (outcome, winner, reason) = outcome;
    let mut got = json!({
        "outcome": outcome, "attempts": launched.len(), "launched_ms": launched,
        "cancelled": cancel.iter().collect::<Vec<_>>(), "events": events.into_inner(), "bounds_ms": bounds,
    });
    if let Some(w) = winner {
        got["winner"] = json!(w);
    }
    if let Some(r) = reason {
        got["reason"] = json!(r);
    }
    if let Some(budget) = policy.budget() {
        got["budget_tokens"] = json!(budget.tokens());
    }
    if let Some(breaker) = policy.breaker() {
        got["breaker_state"] = json!(breaker.state(now).as_str());
    }
    Ok(got)
}

/// Whether attempt `s` is one the host cut at its bound (`"timed_out": true`).
fn is_cut(s: &Value) -> bool {
    s.get("timed_out").and_then(Value::as_bool) == Some(true)
}

/// Runs one call with an attempt the host cuts at its bound through the sans-IO [`Call`]:
/// the blocking executor cannot interrupt an attempt, and the async one does not on a
/// virtual clock, so the runner is the host here. A cut attempt takes its bound and is
/// recorded with [`Call::record_timeout`] (what the async executor does when its timer
/// wins); every other attempt as the executors record it.
fn run_engine_call(policy: &Policy, script: &[Value], at_ms: Option<u64>) -> Result<Value, String> {
    let events = RefCell::new(Vec::<Value>::new());
    let mut sink = |e: &retryrs::Event<'_>| {
        let mut ev = event_json(e);
        ev["retries_left"] = json!(e.retries_left);
        // What the executors attach: the failure an event is about (no value: the
        // vectors with a cut attempt have no rejected values).
        ev["error"] = json!(e.kind.carries_error() && e.attempt > 0);
        events.borrow_mut().push(ev);
    };
    let err = |e: retryrs::StateError| e.to_string();
    let mut now = Duration::from_millis(1000 + at_ms.unwrap_or(0));
    let mut call = retryrs::Call::start_with(policy, now, &mut sink);
    let (mut delays, mut bounds) = (vec![], vec![]);
    let stop = loop {
        if let Some(stop) = call.outcome() {
            break stop;
        }
        let n = call.attempt();
        let s = script.get(n as usize - 1).ok_or(format!("attempt {n} made; the script has {}", script.len()))?;
        let bound = call.remaining(now).map_err(err)?;
        bounds.push(bound.map(|d| d.as_millis() as u64));
        let hint = s.get("hint_ms").and_then(Value::as_f64).and_then(retryrs::duration_from_ms);
        let decision = if is_cut(s) {
            now += bound.ok_or(format!("attempt {n} timed out but is unbounded"))?;
            call.record_timeout(Verdict::TRANSIENT, now, &mut sink)
        } else {
            now += Duration::from_millis(s.get("takes_ms").and_then(Value::as_u64).unwrap_or(0));
            let verdict = match s["result"].as_str() {
                Some("success") => Verdict::Success,
                Some("transient") => Verdict::Transient { hint },
                Some("dont_retry") => Verdict::DontRetry,
                Some(other) => return Err(format!("a vector with a cut attempt scripts {other:?}")),
                None => Verdict::Permanent,
            };
            call.record(verdict, now, &mut sink)
        };
        match decision.map_err(err)? {
            retryrs::Decision::Retry(delay) => {
                delays.push(delay.as_millis() as u64);
                now += delay + Duration::from_millis(s.get("wait_overrun_ms").and_then(Value::as_u64).unwrap_or(0));
                call.after_wait(now, &mut sink).map_err(err)?;
            }
            retryrs::Decision::Stop(stop) => break stop,
        }
    };
    let mut got =
        json!({"attempts": call.attempt(), "delays_ms": delays, "events": events.into_inner(), "bounds_ms": bounds});
    got["outcome"] = json!(match stop {
        Stop::Success => "success",
        Stop::Rejected => "rejected",
        Stop::Exhausted(_) => "exhausted",
        Stop::Cancelled => "cancelled",
    });
    if let Stop::Exhausted(r) = stop {
        got["reason"] = json!(r.as_str());
    }
    if let Some(budget) = policy.budget() {
        got["budget_tokens"] = json!(budget.tokens());
    }
    Ok(got)
}

fn check_call_vector(v: &Value) -> Result<(), String> {
    let policy = build_policy(v).map_err(|e| format!("policy did not build: {e}"))?;
    if policy.hedging().is_some() {
        return check_hedged_vector(&policy, v);
    }
    let retrier = Retrier::new(policy);
    for (i, call) in v["calls"].as_array().unwrap().iter().enumerate() {
        let at_ms = call.get("at_ms").and_then(Value::as_u64);
        let script = call["attempts"].as_array().unwrap();
        let got = match script.iter().any(is_cut) {
            true => run_engine_call(retrier.policy(), script, at_ms)?,
            false => run_call(&retrier, script, at_ms)?,
        };
        let want = &call["expect"];
        for key in ["outcome", "reason", "attempts", "delays_ms", "value", "bounds_ms"] {
            // bounds_ms is compared where a vector gives it.
            if key == "bounds_ms" && want.get(key).is_none() {
                continue;
            }
            if want.get(key) != got.get(key) {
                return Err(format!("call {i}: {key}: want {}, got {}", want[key], got[key]));
            }
        }
        compare_events(i, want, &got)?;
        compare_tokens(i, want, &got)?;
        compare_breaker_state(i, want, &got)?;
    }
    Ok(())
}

/// A hedged call vector: each key `expect` gives is compared (events field by field).
fn check_hedged_vector(policy: &Policy, v: &Value) -> Result<(), String> {
    for (i, call) in v["calls"].as_array().unwrap().iter().enumerate() {
        let got = run_hedged_call(policy, call["attempts"].as_array().unwrap())?;
        let want = &call["expect"];
        for key in ["outcome", "reason", "attempts", "winner", "launched_ms", "cancelled", "bounds_ms"] {
            if key != "reason" && key != "winner" && want.get(key).is_none() {
                continue;
            }
            if want.get(key) != got.get(key) {
                return Err(format!("call {i}: {key}: want {}, got {}", want[key], got[key]));
            }
        }
        compare_events(i, want, &got)?;
        compare_tokens(i, want, &got)?;
        compare_breaker_state(i, want, &got)?;
    }
    Ok(())
}

fn compare_events(i: usize, want: &Value, got: &Value) -> Result<(), String> {
    // Each field a vector gives is compared (an event without "value" does not care
    // whether a value was carried).
    let (want_ev, got_ev) = (want["events"].as_array(), got["events"].as_array());
    let same = match (want_ev, got_ev) {
        (Some(w), Some(g)) => {
            w.len() == g.len()
                && w.iter().zip(g).all(|(w, g)| w.as_object().unwrap().iter().all(|(k, v)| g.get(k) == Some(v)))
        }
        _ => want_ev.is_none(),
    };
    if !same {
        return Err(format!("call {i}: events: want {}, got {}", want["events"], got["events"]));
    }
    Ok(())
}

fn compare_breaker_state(i: usize, want: &Value, got: &Value) -> Result<(), String> {
    if want.get("breaker_state").is_some() && want.get("breaker_state") != got.get("breaker_state") {
        return Err(format!("call {i}: breaker_state: want {}, got {}", want["breaker_state"], got["breaker_state"]));
    }
    Ok(())
}

fn compare_tokens(i: usize, want: &Value, got: &Value) -> Result<(), String> {
    if let Some(tokens) = want.get("budget_tokens").and_then(Value::as_f64) {
        let have = got["budget_tokens"].as_f64().unwrap_or(f64::NAN);
        if (tokens - have).abs() > 1e-9 {
            return Err(format!("call {i}: budget_tokens: want {tokens}, got {have}"));
        }
    }
    Ok(())
}

fn check_vector_keys(v: &Value) -> Result<(), String> {
    let body = ["calls", "expect_error", "retry_after", "status", "http", "propagation"]
        .into_iter()
        .find(|b| v.get(b).is_some())
        .unwrap_or("calls");
    check_keys("vector", v, &["id", "rule", "policy", "budgets", "breakers", "service_config", body])?;
    if let Some(p) = v.get("policy") {
        let keys = policy_keys();
        check_keys("policy", p, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
    }
    for (name, b) in v.get("budgets").and_then(Value::as_object).into_iter().flatten() {
        check_keys(&format!("budgets.{name}"), b, BUDGET_KEYS)?;
    }
    for (name, b) in v.get("breakers").and_then(Value::as_object).into_iter().flatten() {
        check_keys(&format!("breakers.{name}"), b, BREAKER_KEYS)?;
    }
    let calls = v.get("calls").and_then(Value::as_array);
    let timed = calls.into_iter().flatten().filter(|c| c.get("at_ms").is_some()).count();
    if timed != 0 && timed != calls.map_or(0, Vec::len) {
        return Err("at_ms: a vector whose calls have a time gives every call one".into());
    }
    let mut last_at = 0;
    for call in calls.into_iter().flatten() {
        check_keys("call", call, &["at_ms", "attempts", "expect"])?;
        if let Some(at) = call.get("at_ms") {
            let at = at.as_u64().ok_or("at_ms: a whole number of ms")?;
            if at < last_at {
                return Err(format!("at_ms: {at} is before the previous call's {last_at}"));
            }
            last_at = at;
        }
        for a in call["attempts"].as_array().into_iter().flatten() {
            check_keys(
                "attempt",
                a,
                &["result", "hint_ms", "takes_ms", "wait_overrun_ms", "cancel_during_wait", "wait", "timed_out"],
            )?;
            if a.get("timed_out").is_some()
                && (a["timed_out"] != true || a["result"] != "transient" || a.get("takes_ms").is_some())
            {
                return Err(
                    "attempt: timed_out is true, with result transient and no takes_ms (it takes its bound)".into()
                );
            }
            if let Some(w) = a.get("wait") {
                if !(w.is_u64() || w == "engine" || w == "stop") {
                    return Err(format!("attempt: wait is a whole number of ms, \"engine\" or \"stop\", not {w}"));
                }
            }
            let result = a["result"].as_str().unwrap_or("");
            if !["success", "transient", "permanent", "dont_retry", "rejected_value"].contains(&result) {
                return Err(format!("attempt: unknown result {result:?}"));
            }
        }
        let expect = &call["expect"];
        check_keys(
            "expect",
            expect,
            &[
                "outcome",
                "reason",
                "attempts",
                "value",
                "delays_ms",
                "events",
                "budget_tokens",
                "breaker_state",
                "bounds_ms",
                "winner",
                "launched_ms",
                "cancelled",
            ],
        )?;
        for e in expect.get("events").and_then(Value::as_array).into_iter().flatten() {
            check_keys(
                "event",
                e,
                &["kind", "attempt", "elapsed_ms", "delay_ms", "reason", "error", "value", "retries_left"],
            )?;
        }
    }
    if let Some(e) = v.get("expect_error") {
        check_keys("expect_error", e, &["knob"])?;
    }
    if let Some(r) = v.get("retry_after") {
        check_keys("retry_after", r, &["value", "now_unix_s", "expect_ms"])?;
    }
    if let Some(s) = v.get("status") {
        check_keys("status", s, &["code", "retryable"])?;
    }
    if let Some(p) = v.get("propagation") {
        let case = propagation_vectors::CASES.iter().find(|(n, _, _)| p.get(*n).is_some());
        let Some((name, keys, expect)) = case else {
            return Err(format!("propagation: none of the cases in {p}"));
        };
        check_keys("propagation", p, &[name, "expect"])?;
        check_keys(&format!("propagation.{name}"), &p[*name], keys)?;
        check_keys("propagation.expect", &p["expect"], expect)?;
    }
    if let Some(h) = v.get("http") {
        check_keys(
            "http",
            h,
            &[
                "method",
                "status",
                "failure",
                "retry_methods",
                "retry_statuses",
                "idempotency_key",
                "honour_idempotency_key",
                "expect",
            ],
        )?;
    }
    Ok(())
}

#[test]
fn a_misspelt_key_fails_instead_of_testing_nothing() {
    let v = json!({"id": "x", "policy": {"max_attempt": 3}, "calls": []});
    assert!(check_vector(&v).unwrap_err().contains("max_attempt"));
    let v = json!({"id": "x", "calls": [{"attempts": [], "expect": {"event": []}}]});
    assert!(check_vector(&v).unwrap_err().contains("\"event\""));
}

fn check_vector(v: &Value) -> Result<(), String> {
    check_vector_keys(v)?;
    if v.get("calls").is_some() {
        check_call_vector(v)
    } else if let Some(expect) = v.get("expect_error") {
        let knob = expect["knob"].as_str().unwrap();
        match build_policy(v) {
            Ok(_) => Err(format!("policy built; expected an error naming {knob}")),
            Err(e) if e.path == format!("policies.retry.{knob}") && e.to_string().contains(knob) => Ok(()),
            Err(e) => Err(format!("error is about {} ({e}); expected policies.retry.{knob}", e.path)),
        }
    } else if let Some(ra) = v.get("retry_after") {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(ra["now_unix_s"].as_u64().unwrap());
        let got = parse_retry_after_ms(ra["value"].as_str().unwrap(), now);
        let ok = match &ra["expect_ms"] {
            Value::Null => got.is_none(),
            Value::String(s) if s == "saturated" => got.is_some_and(|ms| ms >= 1_000_000_000_000_000),
            want => got == want.as_u64(),
        };
        ok.then_some(()).ok_or_else(|| format!("parsed {:?} as {got:?}, want {}", ra["value"], ra["expect_ms"]))
    } else if let Some(st) = v.get("status") {
        let code = st["code"].as_u64().unwrap() as u16;
        let want = st["retryable"].as_bool().unwrap();
        (is_retryable_status(code) == want).then_some(()).ok_or_else(|| format!("status {code}: want {want}"))
    } else if let Some(h) = v.get("http") {
        check_http_vector(h)
    } else if let Some(p) = v.get("propagation") {
        let policy = match v.get("policy") {
            Some(_) => Some(build_policy(v).map_err(|e| e.to_string())?),
            None => None,
        };
        propagation_vectors::check(p, policy)
    } else {
        Err("a vector with none of calls, expect_error, retry_after, status, http, propagation".into())
    }
}

fn check_http_vector(h: &Value) -> Result<(), String> {
    let method = h["method"].as_str().unwrap();
    let outcome = match (h.get("status").and_then(Value::as_u64), h.get("failure").and_then(Value::as_str)) {
        (Some(code), None) => HttpOutcome::Status(code as u16),
        (None, Some("connect")) => HttpOutcome::ConnectFailed,
        (None, Some("network")) => HttpOutcome::NetworkFailed,
        other => return Err(format!("an http vector needs a status or a failure (connect, network), got {other:?}")),
    };
    let methods: Option<Vec<&str>> =
        h.get("retry_methods").map(|l| l.as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect());
    let statuses: Option<Vec<u16>> =
        h.get("retry_statuses").map(|l| l.as_array().unwrap().iter().map(|s| s.as_u64().unwrap() as u16).collect());
    let key = h.get("idempotency_key").and_then(Value::as_str);
    let honour = h.get("honour_idempotency_key").is_none_or(|b| b.as_bool().unwrap());
    let rules = HttpRules { methods: methods.as_deref(), statuses: statuses.as_deref(), idempotency_key: honour };
    let got = classify_request(method, key, outcome, &rules).as_str();
    let want = h["expect"].as_str().unwrap();
    (got == want).then_some(()).ok_or_else(|| format!("{method} {outcome:?}: want {want}, got {got}"))
}

#[test]
fn every_vector_passes() {
    let vectors = load_vectors();
    assert!(vectors.len() >= 40, "only {} vectors", vectors.len());
    let mut ids = std::collections::HashSet::new();
    let mut failed = vec![];
    for (file, v) in &vectors {
        let id = v["id"].as_str().expect("every vector has an id");
        assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        if let Err(why) = check_vector(v) {
            failed.push(format!("{file} {id}: {why}"));
        }
    }
    for f in &failed {
        println!("FAIL {f}");
    }
    let passed = vectors.len() - failed.len();
    println!("conformance: {passed} passed, {} failed", failed.len());
    // The report `make test` sums up across hosts (see scripts/conformance-summary).
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/conformance");
    std::fs::create_dir_all(&report).unwrap();
    std::fs::write(report.join("rust.txt"), format!("rust {passed} {}\n", failed.len())).unwrap();
    assert!(failed.is_empty(), "{} vectors failed", failed.len());
}
