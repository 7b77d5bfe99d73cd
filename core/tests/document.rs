//! Policy documents in Rust: the shared document and its expected behaviour (which every
//! host checks too, from tests/policies/), every error case with its path and position,
//! hostile input, gRPC's service config, and the JSON Schema against the knob table.

use std::path::{Path, PathBuf};
use std::time::Duration;

use retryrs::document::{json_schema, LoadOptions, MAX_DOCUMENT_BYTES};
use retryrs::{Call, Decision, Jitter, Policies, Policy, Pushback, Verdict};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/policies").join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).unwrap()
}

/// The waits a call under `policy` takes when every attempt fails transiently (no time
/// passes during attempts), until it stops.
fn waits(policy: &Policy) -> Vec<u64> {
    let mut call = Call::start(policy, Duration::ZERO);
    let mut now = Duration::ZERO;
    let mut out = vec![];
    loop {
        match call.record(Verdict::TRANSIENT, now, &mut |_| {}).unwrap() {
            Decision::Retry(d) => {
                out.push(d.as_millis() as u64);
                now += d;
                call.after_wait(now, &mut |_| {}).unwrap();
            }
            Decision::Stop(_) => return out,
        }
    }
}

#[test]
fn the_shared_document_gives_the_expected_policies() {
    let policies = Policies::from_path(data("shared.json")).unwrap();
    let expected: Value = serde_json::from_str(&read("expected.json")).unwrap();
    let names: Vec<&str> = policies.names().collect();
    assert_eq!(names, ["default", "ledger", "payments", "rates"]);
    for (name, want) in expected["policies"].as_object().unwrap() {
        let p = policies.get(name).unwrap();
        let knobs = &want["knobs"];
        assert_eq!(u64::from(p.max_attempts()), knobs["max_attempts"].as_u64().unwrap(), "{name}");
        assert_eq!(p.initial_delay().as_millis() as f64, knobs["initial_delay_ms"].as_f64().unwrap(), "{name}");
        assert_eq!(p.multiplier(), knobs["multiplier"].as_f64().unwrap(), "{name}");
        assert_eq!(p.max_delay().as_millis() as f64, knobs["max_delay_ms"].as_f64().unwrap(), "{name}");
        assert_eq!(p.deadline().map(|d| d.as_millis() as f64), knobs["deadline_ms"].as_f64(), "{name}");
        assert_eq!(p.max_retry_after().map(|d| d.as_millis() as f64), knobs["max_retry_after_ms"].as_f64(), "{name}");
        assert_eq!(p.jitter().spelling(), knobs["jitter"].as_str().unwrap(), "{name}");
        assert_eq!(p.name(), knobs["name"].as_str().unwrap(), "{name}");
        assert_eq!(p.seed(), knobs["seed"].as_u64(), "{name}");
        assert_eq!(p.budget().is_some(), !knobs["budget"].is_null(), "{name}");
    }
    // The delays: a fresh load for each, so the shared budget starts full.
    for (name, want) in expected["policies"].as_object().unwrap() {
        let fresh = Policies::from_path(data("shared.json")).unwrap();
        let got = waits(fresh.get(name).unwrap());
        let want: Vec<u64> = want["waits_ms"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn a_budget_named_twice_is_one_bucket() {
    let policies = Policies::from_path(data("shared.json")).unwrap();
    let shared = policies.budget("shared").unwrap();
    assert!(std::sync::Arc::ptr_eq(shared, policies.get("payments").unwrap().budget().unwrap()));
    assert!(std::sync::Arc::ptr_eq(shared, policies.get("rates").unwrap().budget().unwrap()));
    // payments spends the bucket (4 tokens, retries while > 2): rates then gets no retry.
    let expected: Value = serde_json::from_str(&read("expected.json")).unwrap();
    let after = expected["budget_after_payments"]["rates_waits_ms"].as_array().unwrap();
    waits(policies.get("payments").unwrap());
    assert_eq!(waits(policies.get("rates").unwrap()).len(), after.len());
    // Another load is another bucket.
    let other = Policies::from_path(data("shared.json")).unwrap();
    assert!(!std::sync::Arc::ptr_eq(shared, other.budget("shared").unwrap()));
}

#[test]
fn every_error_names_its_path_and_position() {
    let cases: Value = serde_json::from_str(&read("errors.json")).unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let err = Policies::from_json(case["document"].as_str().unwrap()).unwrap_err();
        assert_eq!(err.path, case["path"].as_str().unwrap(), "{name}: {err}");
        let text = err.to_string();
        assert!(text.contains(case["path"].as_str().unwrap()), "{name}: {text}");
        assert!(text.contains(case["fragment"].as_str().unwrap()), "{name}: {text}");
        let want =
            case["position"].as_array().map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize));
        assert_eq!(err.position, want, "{name}: {text}");
    }
}

#[test]
fn the_issue_s_message_word_for_word() {
    let err = Policies::from_json(r#"{"policies": {"payments": {"initial_delay": "100"}}}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"policies.payments.initial_delay: "100" has no unit; write "100ms" or "0.1s" (line 1, column 45)"#
    );
}

#[test]
fn a_file_s_errors_carry_its_name_line_and_column() {
    let dir = std::env::temp_dir().join(format!("retryrs-doc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("policies.json");
    std::fs::write(&file, "{\n  \"policies\": {\n    \"payments\": { \"deadline\": \"5 s\" }\n  }\n}\n").unwrap();
    let err = Policies::from_path(&file).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}:3:31: policies.payments.deadline:", file.display())), "{text}");
    let missing = Policies::from_path(dir.join("absent.json")).unwrap_err().to_string();
    assert!(missing.contains("absent.json") && missing.contains("cannot read it"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn durations_inheritance_and_null() {
    let p = Policies::from_json(
        r#"{"policies": {
            "default": {"max_attempts": 2, "deadline": null, "jitter": "none", "name": "ignored"},
            "a": {"initial_delay": "1.5s", "max_delay": "2m"},
            "b": {"max_attempts": 3, "deadline": "250ms", "initial_delay": "0.3s"}}}"#,
    )
    .unwrap();
    let a = p.get("a").unwrap();
    assert_eq!(a.max_attempts(), 2);
    assert_eq!(a.initial_delay(), Duration::from_millis(1500));
    assert_eq!(a.max_delay(), Duration::from_secs(120));
    assert_eq!(a.deadline(), None);
    assert_eq!(a.jitter(), Jitter::None);
    assert_eq!(a.name(), "a", "the name is the policy's own, not default's");
    let b = p.get("b").unwrap();
    assert_eq!(b.max_attempts(), 3);
    assert_eq!(b.initial_delay(), Duration::from_millis(300));
    assert_eq!(b.deadline(), Some(Duration::from_millis(250)));
    // What default omits is the built-in default.
    assert_eq!(b.multiplier(), Policy::default().multiplier());
    assert_eq!(b.max_delay(), Policy::default().max_delay());
    // A document without a default policy is fine.
    let only = Policies::from_json(r#"{"policies": {"x": {}}}"#).unwrap();
    assert_eq!(only.get("x").unwrap().max_attempts(), Policy::default().max_attempts());
}

#[test]
fn hostile_input_is_a_clear_error() {
    // 100 MB in one string: refused by size before any parsing.
    let huge = format!(r#"{{"policies": {{"p": {{"name": "{}"}}}}}}"#, "x".repeat(100 * 1024 * 1024));
    let err = Policies::from_json(&huge).unwrap_err();
    assert_eq!(err.path, "document");
    assert!(err.to_string().contains(&format!("more than the {MAX_DOCUMENT_BYTES}")), "{err}");
    // Deep nesting at the top and inside a policy: serde_json's recursion limit.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let err = Policies::from_json(&deep).unwrap_err();
    assert!(err.to_string().contains("must be an object"), "{err}");
    let deep =
        format!(r#"{{"policies": {{"p": {{"seed": {}}}}}}}"#, "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000));
    let err = Policies::from_json(&deep).unwrap_err();
    assert!(err.to_string().contains("recursion limit exceeded"), "{err}");
    // Numbers past f64, and a duration past the knob's range.
    let err = Policies::from_json(r#"{"policies": {"p": {"deadline": "1e400s"}}}"#).unwrap_err();
    assert!(err.to_string().contains("policies.p.deadline"), "{err}");
    let err = Policies::from_json(r#"{"policies": {"p": {"deadline": "99999999999999999999m"}}}"#).unwrap_err();
    assert!(
        err.to_string().contains(
            "policies.p.deadline: \"99999999999999999999m\" is more than the largest duration, 150000000000m"
        ),
        "{err}"
    );
    // Not UTF-8 cannot reach from_json (a &str); from_path says so.
    let file = std::env::temp_dir().join(format!("retryrs-doc-bin-{}", std::process::id()));
    std::fs::write(&file, [0xff, 0xfe, 0x00]).unwrap();
    let err = Policies::from_path(&file).unwrap_err();
    assert!(err.to_string().contains("cannot read it"), "{err}");
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn grpc_s_example_service_config_behaves_as_grpc_describes() {
    let policies = Policies::from_path(data("grpc_service_config.json")).unwrap();
    let echo = policies.get("EchoService").unwrap();
    // A6's example: 4 attempts, 0.1 s doubling to 1 s, jitter x U(0.8, 1.2), no deadline.
    assert_eq!(echo.max_attempts(), 4);
    assert_eq!(echo.initial_delay(), Duration::from_millis(100));
    assert_eq!(echo.max_delay(), Duration::from_secs(1));
    assert_eq!(echo.multiplier(), 2.0);
    assert_eq!(echo.jitter(), Jitter::Proportional(0.2));
    assert_eq!(echo.deadline(), None);
    assert_eq!(echo.max_retry_after(), None, "gRPC waits out any pushback");
    for _ in 0..50 {
        let fresh = Policies::from_path(data("grpc_service_config.json")).unwrap();
        let w = waits(fresh.get("EchoService").unwrap());
        assert_eq!(w.len(), 3, "4 attempts, 3 waits");
        for (i, ms) in w.iter().enumerate() {
            let ceiling = (100.0 * 2f64.powi(i as i32)).min(1000.0);
            // retryrs clamps to max_delay where gRPC (since 2024) does not: see docs/policies.md.
            assert!((*ms as f64) >= (ceiling * 0.8).floor() && (*ms as f64) <= (ceiling * 1.2).min(1000.0), "{w:?}");
        }
    }
    // maxAttempts 7 is capped at gRPC's 5, unless told otherwise; the timeout is the deadline.
    let stream = policies.get("EchoService/Stream").unwrap();
    assert_eq!(stream.max_attempts(), 5);
    assert_eq!(stream.deadline(), Some(Duration::from_millis(2500)));
    assert_eq!(stream.multiplier(), 1.5);
    let uncapped =
        Policies::from_json_with(&read("grpc_service_config.json"), LoadOptions::default().grpc_max_attempts(10))
            .unwrap();
    assert_eq!(uncapped.get("EchoService/Stream").unwrap().max_attempts(), 7);
    // Throttling: one bucket for the config; 10 tokens, retries only while tokens > 5.
    let budget = policies.budget("retryThrottling").unwrap();
    assert!(std::sync::Arc::ptr_eq(budget, echo.budget().unwrap()));
    assert!(std::sync::Arc::ptr_eq(budget, stream.budget().unwrap()));
    for _ in 0..5 {
        budget.record_failure();
    }
    assert_eq!(budget.tokens(), 5.0);
    assert!(!budget.allows_retry(), "gRPC: no retry while tokens <= maxTokens / 2");
    assert_eq!(waits(echo), Vec::<u64>::new(), "the throttled call makes one attempt");
    assert_eq!(budget.tokens(), 4.0, "its failure cost a token");
    for _ in 0..10 {
        budget.record_success();
    }
    assert!(!budget.allows_retry(), "ten successes at 0.1 make 5.0: still <= 5");
    budget.record_success();
    assert!(budget.allows_retry(), "5.1 > 5: retries again");
}

#[test]
fn ten_thousand_policies_load() {
    // Correctness at size; the speed is measured by the benchmark (bench/), not here.
    let mut doc = String::from(
        r#"{"budgets": {"b": {"max_tokens": 10, "token_ratio": 0.1}}, "policies": {"default": {"deadline": "2s"}"#,
    );
    for i in 0..10_000 {
        doc.push_str(&format!(
            r#", "svc{i}": {{"max_attempts": {}, "initial_delay": "{}ms", "budget": "b"}}"#,
            1 + i % 7,
            i % 500
        ));
    }
    doc.push_str("}}");
    let p = Policies::from_json(&doc).unwrap();
    assert_eq!(p.len(), 10_001);
    assert_eq!(p.get("svc9999").unwrap().initial_delay(), Duration::from_millis(499));
}

#[test]
fn the_schema_file_is_the_knob_table_s() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policies.schema.json");
    let generated = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
    if std::env::var_os("RETRYRS_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/policies.schema.json is not the knob table's schema: run `make schema` to regenerate it"
    );
    // Every knob is a key of the policy object, and the shared document uses only known keys.
    let schema = json_schema();
    for k in retryrs::KNOBS {
        assert!(schema["$defs"]["policy"]["properties"].get(k.name).is_some(), "{}", k.name);
    }
}

#[test]
fn the_document_guide_lists_exactly_the_knobs_that_can_be_off() {
    // docs/policies.md names them for readers; the table decides them.
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policies.md")).unwrap();
    let line = guide.lines().find(|l| l.contains("turns off what can be off")).expect("the guide's line on null");
    let listed = line.split_once('(').and_then(|(_, rest)| rest.split_once(')')).map(|(inside, _)| inside).unwrap();
    let mut named: Vec<&str> = listed.split(", ").map(|n| n.trim_matches('`')).collect();
    let mut offable: Vec<&str> = retryrs::KNOBS.iter().filter(|k| k.can_be_off).map(|k| k.name).collect();
    named.sort_unstable();
    offable.sort_unstable();
    assert_eq!(named, offable, "docs/policies.md: {line}");
}

#[test]
fn budget_kinds_and_breakers_load_and_are_shared() {
    use retryrs::{BreakerModel, BudgetKind};
    let doc = Policies::from_json(
        r#"{"policies": {"default": {"breaker": "db"},
                         "a": {"budget": "aws"}, "b": {"budget": "finagle"}, "c": {"breaker": null, "budget": "grpc"}},
            "budgets": {"aws": {"kind": "quota"}, "finagle": {"kind": "ratio", "ttl": "2s", "percent_can_retry": 0.5},
                        "grpc": {"kind": "token_bucket", "max_tokens": 10, "token_ratio": 0.1}},
            "breakers": {"db": {"model": "sampling", "failure_ratio": 0.5, "minimum_throughput": 4,
                                "sampling_duration": "10s", "break_duration": "1s", "break_multiplier": 2,
                                "max_break_duration": "8s"}}}"#,
    )
    .unwrap();
    let (a, b, c) = (doc.get("a").unwrap(), doc.get("b").unwrap(), doc.get("c").unwrap());
    assert_eq!(a.budget().unwrap().kind(), BudgetKind::Quota);
    assert_eq!(a.budget().unwrap().as_quota().unwrap().available(), 500, "the SDKs' capacity by default");
    let r = b.budget().unwrap().as_ratio().unwrap();
    assert_eq!((r.ttl(), r.min_retries_per_sec(), r.percent_can_retry()), (Duration::from_secs(2), 10, 0.5));
    assert_eq!(c.budget().unwrap().kind(), BudgetKind::TokenBucket);
    assert!(c.breaker().is_none(), "null turns off the default's breaker");
    let shared = doc.breaker("db").unwrap();
    assert!(
        std::sync::Arc::ptr_eq(a.breaker().unwrap(), shared) && std::sync::Arc::ptr_eq(b.breaker().unwrap(), shared)
    );
    let cfg = shared.config();
    assert_eq!(
        cfg.model,
        BreakerModel::Sampling {
            failure_ratio: 0.5,
            minimum_throughput: 4,
            sampling_duration: Duration::from_secs(10)
        }
    );
    assert_eq!(
        (cfg.break_duration, cfg.break_multiplier, cfg.max_break_duration),
        (Duration::from_secs(1), 2.0, Some(Duration::from_secs(8)))
    );
    assert_eq!(doc.breaker_names().collect::<Vec<_>>(), ["db"]);
}

#[test]
fn grpc_service_configs_load_as_grpc_go_reads_them() {
    let cases: Value = serde_json::from_str(&read("grpc_cases.json")).unwrap();
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        // A string is the document's text itself (2.0 kept as written).
        let text = case["document"].as_str().map_or_else(|| case["document"].to_string(), str::to_owned);
        let loaded = Policies::from_json(&text);
        if let Some(want) = case.get("error") {
            let err = loaded.err().unwrap_or_else(|| panic!("{name}: loaded; expected an error"));
            assert_eq!(err.path, want["path"].as_str().unwrap(), "{name}: {err}");
            assert!(err.message.contains(want["fragment"].as_str().unwrap()), "{name}: {err}");
            assert!(err.position.is_some(), "{name}: {err} has no position");
            continue;
        }
        let policies = loaded.unwrap_or_else(|e| panic!("{name}: {e}"));
        let warnings = case["warnings"].as_array().unwrap();
        assert_eq!(policies.warnings().len(), warnings.len(), "{name}: {:?}", policies.warnings());
        for (got, want) in policies.warnings().iter().zip(warnings) {
            assert!(got.contains(want.as_str().unwrap()), "{name}: {got}");
        }
        for l in case["lookups"].as_array().unwrap() {
            let (service, method) = (l["service"].as_str().unwrap(), l["method"].as_str().unwrap());
            let key = policies.method_key(service, method);
            assert_eq!(key, l["key"].as_str(), "{name}: {service}/{method}");
            let Some(key) = key else {
                assert!(policies.for_method(service, method).is_none());
                continue;
            };
            let p = policies.for_method(service, method).unwrap();
            assert!(std::ptr::eq(p, policies.get(key).unwrap()));
            assert_eq!(u64::from(p.max_attempts()), l["max_attempts"].as_u64().unwrap(), "{name}: {key}");
            assert_eq!(p.deadline().map(|d| d.as_millis() as u64), l["deadline_ms"].as_u64(), "{name}: {key}");
            assert_eq!(p.budget().is_some(), l["budget"].as_bool().unwrap(), "{name}: {key}");
            assert_eq!(p.pushback(), Pushback::Grpc, "{name}: {key}: a service config's policy follows A6's pushback");
        }
        if let Some(b) = case.get("budget") {
            let budget = policies.budget("retryThrottling").unwrap();
            assert_eq!(budget.max_tokens(), b["max_tokens"].as_f64().unwrap(), "{name}");
            assert_eq!(budget.token_ratio(), b["token_ratio"].as_f64().unwrap(), "{name}");
        }
    }
}

#[test]
fn a_timeout_only_method_is_not_resent_under_the_service_s_policy() {
    // The non-idempotent case of issue 29: DeleteAccount fails once, and is not retried.
    let cases: Value = serde_json::from_str(&read("grpc_cases.json")).unwrap();
    let doc = cases["cases"][0]["document"].to_string();
    let policies = Policies::from_json(&doc).unwrap();
    let service = "google.analytics.admin.v1alpha.AnalyticsAdminService";
    assert_eq!(waits(policies.for_method(service, "DeleteAccount").unwrap()), Vec::<u64>::new());
    assert_eq!(waits(policies.for_method(service, "GetAccount").unwrap()).len(), 4);
}

#[test]
fn a_grpc_policy_waits_exactly_the_pushback_and_then_backs_off_from_the_start() {
    let doc = r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s",
        "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let policies = Policies::from_json(doc).unwrap();
    let grpc = policies.get("default").unwrap();
    let mut call = Call::start(grpc, Duration::ZERO);
    let mut now = Duration::ZERO;
    let mut step = |call: &mut Call<&Policy>, hint_ms: Option<u64>| {
        let hint = hint_ms.map(Duration::from_millis);
        let Decision::Retry(d) = call.record(Verdict::Transient { hint }, now, &mut |_| {}).unwrap() else {
            panic!("expected a retry")
        };
        now += d;
        call.after_wait(now, &mut |_| {}).unwrap();
        d.as_millis() as u64
    };
    // Two backoffs (x U(0.8, 1.2) of 100 then 200), a 30 ms pushback (shorter than the
    // backoff, still exactly it), then the backoff again from 100 ms.
    let first = step(&mut call, None);
    assert!((80..=120).contains(&first), "{first}");
    let second = step(&mut call, None);
    assert!((160..=240).contains(&second), "{second}");
    assert_eq!(step(&mut call, Some(30)), 30, "A6: exactly the pushback, even below the backoff");
    let after = step(&mut call, None);
    assert!((80..=120).contains(&after), "the backoff restarts from initialBackoff: {after}");
    // The same document as a retryrs policy keeps the contract's floor: never sooner than asked.
    let floor = Policy::builder().initial_delay_ms(100.0).max_delay_ms(10_000.0).jitter(Jitter::None).build().unwrap();
    let mut call = Call::start(&floor, Duration::ZERO);
    assert_eq!(
        call.record(Verdict::Transient { hint: Some(Duration::from_millis(30)) }, now, &mut |_| {}).unwrap(),
        Decision::Retry(Duration::from_millis(100))
    );
}

/// tests/policies/schema_cases.json: each document's text as the loader reads it.
fn schema_case_text(case: &Value) -> String {
    case.get("text").and_then(Value::as_str).map_or_else(|| case["document"].to_string(), String::from)
}

#[test]
fn the_loader_gives_the_shared_schema_cases_their_verdicts() {
    // The schema validators (ajv in Node, jsonschema in Python) check the same list.
    let cases: Value = serde_json::from_str(&read("schema_cases.json")).unwrap();
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policies.md")).unwrap();
    let beyond = guide.split("## What the schema cannot say").nth(1).expect("docs/policies.md's section");
    let beyond = beyond.split("\n## ").next().unwrap();
    let mut reasons = vec![];
    for case in cases["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let loaded = Policies::from_json(&schema_case_text(case));
        assert_eq!(loaded.is_ok(), case["loader"].as_bool().unwrap(), "{name}: {:?}", loaded.err());
        if let Some(why) = case.get("schema_cannot").and_then(Value::as_str) {
            assert!(beyond.contains(why), "docs/policies.md does not list {why:?}");
            reasons.push(why);
        }
    }
    // The guide lists exactly the rules the cases show the schema cannot state.
    let listed = beyond.lines().filter(|l| l.starts_with("- ")).count();
    assert_eq!(listed, reasons.len(), "{reasons:?}");
}

#[test]
fn grpc_java_s_hedging_example_loads_as_a6_describes() {
    // grpc-java examples/src/main/resources/io/grpc/examples/hedging/hedging_service_config.json
    let config = r#"{
      "methodConfig": [
        { "name": [ { "service": "helloworld.Greeter", "method": "SayHello" } ],
          "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "1s" } }
      ],
      "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
    }"#;
    let policies = Policies::from_json(config).unwrap();
    let p = policies.for_method("helloworld.Greeter", "SayHello").unwrap();
    let h = p.hedging().expect("a hedging policy");
    assert_eq!(h.max_attempts(), 3);
    assert_eq!(h.current_delay(), Duration::from_secs(1));
    assert!(h.non_fatal().is_empty(), "A6: without nonFatalStatusCodes every failure is fatal");
    assert!(std::ptr::eq(p.budget().unwrap().as_ref(), policies.budget("retryThrottling").unwrap().as_ref()));
    assert_eq!(p.deadline(), None);
    // A6's example: maxAttempts over 5 is 5; codes by number read as names.
    let a6 = r#"{"methodConfig": [{"name": [{"service": "s"}], "timeout": "2s",
        "hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.5s", "nonFatalStatusCodes": ["UNAVAILABLE", 13, "ABORTED"]}}]}"#;
    let policies = Policies::from_json(a6).unwrap();
    let h = policies.get("s").unwrap().hedging().unwrap();
    assert_eq!(h.max_attempts(), 5);
    assert_eq!(h.non_fatal(), ["UNAVAILABLE", "INTERNAL", "ABORTED"]);
    assert_eq!(policies.get("s").unwrap().deadline(), Some(Duration::from_secs(2)));
    // hedgingDelay is optional (A6: 0s, every attempt at once).
    let zero =
        Policies::from_json(r#"{"methodConfig": [{"name": [{"service": "s"}], "hedgingPolicy": {"maxAttempts": 2}}]}"#);
    assert_eq!(zero.unwrap().get("s").unwrap().hedging().unwrap().current_delay(), Duration::ZERO);
    for (bad, path, fragment) in [
        (r#"{"maxAttempts": 2, "hedgingDelay": "-1s"}"#, "hedgingPolicy.hedgingDelay", "not a protobuf duration"),
        (r#"{"maxAttempts": 2, "hedgingDelay": 5}"#, "hedgingPolicy.hedgingDelay", r#"such as "0.5s", got"#),
        (r#"{"maxAttempts": 1}"#, "hedgingPolicy.maxAttempts", "must be a whole number > 1 (gRPC), got 1"),
        (r#"{"maxAttempts": 2.5}"#, "hedgingPolicy.maxAttempts", "must be a whole number > 1 (gRPC), got 2.5"),
        (r#"{"maxAttempts": 1, "initialBackoff": 5}"#, "hedgingPolicy.initialBackoff", "unknown"),
        (r#"{"maxAttempts": 2, "nonFatalStatusCodes": ["NOPE"]}"#, "hedgingPolicy.nonFatalStatusCodes[0]", "NOPE"),
        (r#"{"maxAttempts": 2, "hedgeDelay": "1s"}"#, "hedgingPolicy.hedgeDelay", "unknown"),
        (r#"{"hedgingDelay": "1s"}"#, "hedgingPolicy", "maxAttempts is missing"),
    ] {
        let doc = format!(r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], "hedgingPolicy": {bad}}}]}}"#);
        let err = Policies::from_json(&doc).unwrap_err();
        assert_eq!(err.path, format!("methodConfig[0].{path}"), "{bad}: {err}");
        assert!(err.message.contains(fragment), "{bad}: {err}");
    }
    // The retry policy reads maxAttempts and its durations by the same rules.
    let retry = r#""initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#;
    for (bad, path, fragment) in [
        (
            format!(r#"{{"maxAttempts": 1, {retry}}}"#),
            "retryPolicy.maxAttempts",
            "must be a whole number > 1 (gRPC), got 1",
        ),
        (
            format!(r#"{{"maxAttempts": 3, {}}}"#, retry.replace(r#""0.1s""#, "5")),
            "retryPolicy.initialBackoff",
            r#"such as "0.1s", got"#,
        ),
    ] {
        let doc = format!(r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], "retryPolicy": {bad}}}]}}"#);
        let err = Policies::from_json(&doc).unwrap_err();
        assert_eq!(err.path, format!("methodConfig[0].{path}"), "{bad}: {err}");
        assert!(err.message.contains(fragment), "{bad}: {err}");
    }
}

#[test]
fn our_hedge_object_loads_is_inherited_and_refuses_what_it_does_not_know() {
    let doc = r#"{"policies": {
        "default": {"hedge": {"max_attempts": 3, "delay": "40ms", "non_fatal": ["UNAVAILABLE", 503]}},
        "reads": {},
        "adaptive": {"hedge": {"max_attempts": 2, "delay": "adaptive", "floor": "2ms", "ceiling": "80ms"}},
        "plain": {"hedge": null}
    }}"#;
    let policies = Policies::from_json(doc).unwrap();
    let reads = policies.get("reads").unwrap().hedging().expect("inherited from default");
    assert_eq!((reads.max_attempts(), reads.current_delay()), (3, Duration::from_millis(40)));
    assert_eq!(reads.non_fatal(), ["UNAVAILABLE", "503"]);
    let adaptive = policies.get("adaptive").unwrap().hedging().unwrap();
    assert_eq!(adaptive.current_delay(), Duration::from_millis(80), "the ceiling until the sketch knows enough");
    assert!(policies.get("plain").unwrap().hedging().is_none(), "null turns an inherited hedge off");
    for (bad, path, fragment) in [
        (r#"{"max_attempts": 6, "delay": "1ms"}"#, "max_attempts", "<= 5"),
        (r#"{"max_attempts": 2}"#, "", "delay is missing"),
        (r#"{"max_attempts": 2, "delay": 5}"#, "delay", "unit"),
        (r#"{"max_attempts": 2, "delay": "5ms", "quantile": 0.9}"#, "quantile", "adaptive"),
        (r#"{"max_attempts": 2, "delay": "adaptive", "floor": "9ms", "ceiling": "3ms"}"#, "ceiling", ">= floor"),
        (r#"{"max_attempts": 2, "delay": "adaptive", "window": 0}"#, "window", ">= 1"),
        (r#"{"max_attempts": 2, "delay": "5ms", "nonfatal": []}"#, "nonfatal", "unknown key"),
        (r#"{"max_attempts": 2, "delay": "5ms", "non_fatal": [true]}"#, "non_fatal", "names or status numbers"),
    ] {
        let doc = format!(r#"{{"policies": {{"p": {{"hedge": {bad}}}}}}}"#);
        let err = Policies::from_json(&doc).unwrap_err();
        let want = if path.is_empty() { "policies.p.hedge".to_string() } else { format!("policies.p.hedge.{path}") };
        assert_eq!(err.path, want, "{bad}: {err}");
        assert!(err.message.contains(fragment), "{bad}: {err}");
    }
}

#[test]
fn budgets_and_breakers_are_named_and_built_at_their_paths() {
    for (doc, path, fragment) in [
        (
            r#"{"policies": {"a": {}}, "budgets": {"": {"max_tokens": 1, "token_ratio": 0.1}}}"#,
            r#"budgets."""#,
            "the key must be a name",
        ),
        (
            r#"{"policies": {"a": {}}, "breakers": {"": {"model": "consecutive"}}}"#,
            r#"breakers."""#,
            "the key must be a name",
        ),
        (
            r#"{"policies": {"a": {}}, "budgets": {"b": {"max_tokens": -1, "token_ratio": 0.1}}}"#,
            "budgets.b.max_tokens",
            "",
        ),
        (r#"{"policies": {"a": {}}, "breakers": {"k": {"model": "nope"}}}"#, "breakers.k.model", ""),
        (r#"{"policies": {"a": {}}, "budgets": []}"#, "budgets", ""),
    ] {
        let err = Policies::from_json(doc).unwrap_err();
        assert_eq!(err.path, path, "{doc}: {err}");
        assert!(err.to_string().contains(fragment), "{doc}: {err}");
    }
    let policies = Policies::from_json(
        r#"{"policies": {"a": {}}, "budgets": {"b": {"max_tokens": 3, "token_ratio": 0.1}}, "breakers": {"k": {"model": "consecutive", "failures": 3}}}"#,
    )
    .unwrap();
    assert_eq!(policies.budget_names().collect::<Vec<_>>(), ["b"]);
    assert_eq!(policies.breaker_names().collect::<Vec<_>>(), ["k"]);
    assert_eq!(policies.budget("b").unwrap().max_tokens(), 3.0);
}
