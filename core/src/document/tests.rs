//! The policy document's tests: a gRPC policy's status codes, a bad duration's message,
//! the JSON Schema's bounds against the knobs' rules.

use super::schema::knob_schema;
use super::*;
use crate::engine::Verdict;
use crate::knob::{Default, Knob, Rule, Unit};

/// A loaded gRPC policy keeps its status codes, and judges a status by them: a config
/// that limits a method to UNAVAILABLE does not retry INTERNAL.
#[test]
fn a_grpc_policy_keeps_its_status_codes_and_judges_by_them() {
    let config = r#"{"methodConfig": [
        {"name": [{"service": "pay", "method": "Charge"}], "retryPolicy": {"maxAttempts": 3,
          "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}},
        {"name": [{"service": "reads"}], "hedgingPolicy": {"maxAttempts": 2,
          "nonFatalStatusCodes": [13, "ABORTED"]}},
        {"name": [{"service": "once"}], "timeout": "1s"}]}"#;
    let all = Policies::from_json(config).unwrap();
    let charge = all.get("pay/Charge").unwrap();
    let codes = charge.grpc_status_codes().unwrap();
    assert_eq!((codes.names(), codes.field()), (vec!["UNAVAILABLE"], "retryableStatusCodes"));
    assert_eq!(charge.grpc_verdict("UNAVAILABLE"), Ok(Verdict::TRANSIENT));
    assert_eq!(charge.grpc_verdict("INTERNAL"), Ok(Verdict::Permanent));
    assert_eq!(charge.grpc_verdict_code(0), Ok(Verdict::Success));
    assert!(charge.grpc_verdict("BUSY").unwrap_err().contains("\"BUSY\" is not a gRPC status code"));
    let reads = all.get("reads").unwrap();
    assert_eq!(reads.grpc_status_codes().unwrap().names(), ["ABORTED", "INTERNAL"]);
    assert_eq!(reads.grpc_verdict("13"), Ok(Verdict::TRANSIENT));
    assert_eq!(all.get("once").unwrap().grpc_verdict("UNAVAILABLE"), Ok(Verdict::Permanent));
    let native = Policies::from_json(r#"{"policies": {"x": {}}}"#).unwrap();
    let err = native.get("x").unwrap().grpc_verdict("UNAVAILABLE").unwrap_err();
    assert!(err.contains("not loaded from a gRPC service config"), "{err}");
}

#[test]
fn a_bad_duration_says_what_is_wrong_then_what_to_write() {
    let write = "; write a number and a unit, such as \"100ms\", \"1.5s\" or \"2m\"";
    for (text, why) in [
        ("-1s", ": a duration cannot be negative"),
        (" 1s", ": it has spaces around it"),
        ("+1s", ": it has a sign"),
        (".5s", ": a point needs digits on both sides"),
        ("1..5s", ""),
    ] {
        assert_eq!(parse_duration(text).unwrap_err(), format!("{text:?} is not a duration{why}{write}"));
    }
}

#[test]
fn a_knobs_schema_bounds_are_its_rules() {
    // A factor that may be 0 (a new knob's rule), not the multiplier's 1.
    let scale = Knob {
        name: "scale",
        unit: Unit::Factor,
        default: Default::Number(0.5),
        can_be_off: false,
        off_means: "",
        rule: Rule::AtLeast { min: 0.0 },
        doc: "x",
    };
    assert_eq!(knob_schema(&scale)["minimum"], 0);
    let half = Knob { rule: Rule::AtLeast { min: 0.5 }, ..scale };
    assert_eq!(knob_schema(&half)["minimum"], 0.5);
    let multiplier = crate::knob::knob("multiplier").unwrap();
    assert_eq!(knob_schema(multiplier)["minimum"], 1);
    let count = Knob { unit: Unit::Count, rule: Rule::Whole { min: 0, max: 9 }, can_be_off: true, ..scale };
    let s = knob_schema(&count);
    assert_eq!((s["minimum"].clone(), s["maximum"].clone()), (0.into(), 9.into()));
    assert_eq!(s["type"], serde_json::json!(["integer", "null"]));
}
