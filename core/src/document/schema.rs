//! The JSON Schema of a policy document (`docs/policies.schema.json`), derived from the
//! knob table and the document's grammar.

use serde_json::Value;

use crate::knob::{Unit, KNOBS};

use super::grammar::{JITTER_PATTERN, NAME_PATTERN};
use super::HEDGE_KEY;

/// The JSON Schema of a policy document, derived from the knob table
/// (`docs/policies.schema.json` is this, checked by a test).
pub fn json_schema() -> Value {
    use serde_json::json;
    let mut knobs = serde_json::Map::new();
    for k in KNOBS {
        knobs.insert(k.name.to_string(), knob_schema(k));
    }
    knobs.insert(
        "breaker".into(),
        json!({ "type": ["string", "null"], "pattern": NAME_PATTERN, "description": "the name of a breaker in breakers (null turns it off)", "default": null }),
    );
    knobs.insert(HEDGE_KEY.to_string(), hedge_schema());
    let duration = duration_pattern();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.invalid/retryrs/policies.schema.json",
        "title": "retryrs policy document",
        "description": "Retry policies by name, read identically by retryrs in Rust, Python, Node and C. Generated from the knob table (core/src/knob.rs); see docs/policies.md.",
        "type": "object",
        "additionalProperties": false,
        "required": ["policies"],
        "properties": {
            "$schema": { "type": "string" },
            "policies": {
                "type": "object",
                "description": "Policies by name; \"default\" gives every other policy the knobs it omits.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/policy" }
            },
            "budgets": {
                "type": "object",
                "description": "Retry budgets by name; every policy naming one shares that one budget.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/budget" }
            },
            "breakers": {
                "type": "object",
                "description": "Circuit breakers by name; every policy naming one shares that one breaker.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/breaker" }
            }
        },
        "$defs": {
            "policy": { "type": "object", "additionalProperties": false, "properties": knobs },
            "budget": {
                "description": "kind token_bucket (the default: gRPC's retry throttling), quota (the AWS SDKs' standard retry quota) or ratio (Finagle's RetryBudget)",
                "oneOf": [
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["max_tokens", "token_ratio"],
                        "properties": {
                            "kind": { "const": "token_bucket" },
                            "max_tokens": { "type": "number", "minimum": 0.001, "maximum": 1e12, "description": "the bucket's size; it starts full (3 decimals kept, truncated)" },
                            "token_ratio": { "type": "number", "minimum": 0.001, "maximum": 1e12, "description": "tokens a success adds back (<= max_tokens; 3 decimals kept, truncated)" }
                        }
                    },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["kind"],
                        "properties": {
                            "kind": { "const": "quota" },
                            "capacity": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 500, "description": "what it holds and starts with" },
                            "retry_cost": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 5, "description": "what a retry takes" },
                            "timeout_retry_cost": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 10, "description": "what a retry after a timeout takes" },
                            "no_retry_increment": { "type": "integer", "minimum": 0, "maximum": 1e12, "default": 1, "description": "what a success without a retry gives back" }
                        }
                    },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["kind"],
                        "properties": {
                            "kind": { "const": "ratio" },
                            "ttl": { "type": "string", "pattern": duration, "default": "10s", "description": "how long deposits and withdrawals count, 1 s to 60 s" },
                            "min_retries_per_sec": { "type": "integer", "minimum": 0, "maximum": i32::MAX, "default": 10, "description": "retries always allowed per second" },
                            "percent_can_retry": { "type": "number", "minimum": 0, "maximum": 1000, "default": 0.2, "description": "retries allowed per call, on top" }
                        }
                    }
                ]
            },
            "breaker": {
                "description": "model consecutive (after failures failed calls in a row), sampling (Polly v8's failure ratio over a sliding time window) or count (resilience4j's failure ratio over the last window_size calls); docs/breaker.md",
                "oneOf": [breaker_schema("consecutive", &duration), breaker_schema("sampling", &duration), breaker_schema("count", &duration)]
            }
        }
    })
}

/// One breaker model's schema: its own keys (consecutive: `failures`, required; sampling
/// and count: the window's and the slow-call threshold) and the keys every model takes.
fn breaker_schema(model: &str, duration: &str) -> Value {
    use serde_json::json;
    let mut properties = json!({
        "model": { "const": model },
        "break_duration": { "type": "string", "pattern": duration, "default": "5s", "description": "how long it stays open before a probe, 1 ms to 1 day" },
        "half_open_probes": { "type": "integer", "minimum": 1, "default": 1, "description": "probe calls at once when half-open" },
        "break_multiplier": { "type": "number", "minimum": 1, "default": 1, "description": "growth of the break on each open in a row" },
        "max_break_duration": { "type": ["string", "null"], "pattern": duration, "default": null, "description": "the longest break when it grows (null: 1 day)" },
        "per_attempt": { "type": "boolean", "default": false, "description": "count each attempt instead of each call (a retry around the breaker, as Polly's and resilience4j's pipelines)" },
        "count_permanent": { "type": "boolean", "default": false, "description": "count a permanent failure as a failure (default: a success, the dependency answered)" },
        "judge_all_probes": { "type": "boolean", "default": false, "description": "half-open: send exactly half_open_probes probes and close only if their failure ratio is under the threshold (resilience4j); default: the first probe decides (Polly)" }
    });
    let slow = json!({
        "slow_call_duration": { "type": ["string", "null"], "pattern": duration, "default": null, "description": "a call (or attempt) this long or longer is slow, 1 ms to 1 day (null: none is)" },
        "slow_call_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 1, "description": "the share of slow calls that opens it" }
    });
    let (own, required) = match model {
        "consecutive" => {
            let own = json!({ "failures": { "type": "integer", "minimum": 1, "description": "failed calls in a row that open it" } });
            (own, json!(["model", "failures"]))
        }
        "sampling" => {
            let own = json!({
                "failure_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.1, "description": "the share of failed calls that opens it" },
                "minimum_throughput": { "type": "integer", "minimum": 2, "default": 100, "description": "calls in the window before it may open" },
                "sampling_duration": { "type": "string", "pattern": duration, "default": "30s", "description": "the sliding window, 500 ms to 1 day" }
            });
            (own, json!(["model"]))
        }
        _ => {
            let own = json!({
                "failure_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5, "description": "the share of failed calls that opens it" },
                "minimum_calls": { "type": "integer", "minimum": 1, "default": 100, "description": "calls counted before it may open (at most window_size count)" },
                "window_size": { "type": "integer", "minimum": 1, "maximum": crate::breaker::MAX_WINDOW, "default": 100, "description": "how many of the last calls it judges" }
            });
            (own, json!(["model"]))
        }
    };
    for extra in [own, if model == "consecutive" { json!({}) } else { slow }] {
        if let (Some(all), Value::Object(extra)) = (properties.as_object_mut(), extra) {
            all.extend(extra);
        }
    }
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": properties })
}

/// The `hedge` object's schema (what [`Loader::hedge`](super::Loader::hedge) reads).
fn hedge_schema() -> Value {
    use serde_json::json;
    let duration = json!({ "type": "string", "pattern": duration_pattern() });
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "required": ["delay"],
        "description": "Hedge calls (docs/contract.md, Hedging): launch another attempt beside the first after delay, up to max_attempts; the first success wins (null: no hedging)",
        "properties": {
            "max_attempts": { "type": "integer", "minimum": 1, "maximum": crate::hedge::MAX_HEDGE_ATTEMPTS, "default": 2, "description": "attempts at most, the first included (gRPC A6 caps them at 5)" },
            "delay": { "anyOf": [duration, { "const": "adaptive" }], "description": "the time between launches, or \"adaptive\": a quantile of recent attempt latencies" },
            "non_fatal": { "type": "array", "items": { "type": ["string", "integer"] }, "description": "the failures that let the other attempts go on (for the host's predicate)" },
            "quantile": { "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.95, "description": "adaptive only: the quantile of recent latencies" },
            "floor": { "type": "string", "pattern": duration_pattern(), "default": "1ms", "description": "adaptive only: the shortest delay" },
            "ceiling": { "type": "string", "pattern": duration_pattern(), "default": "1000ms", "description": "adaptive only: the longest delay, and the delay until enough latencies are known" },
            "window": { "type": "integer", "minimum": 1, "maximum": 1_000_000, "default": crate::hedge::DEFAULT_WINDOW, "description": "adaptive only: how many recent latencies are kept" },
            "guard": { "type": "boolean", "default": true, "description": "without a budget, hold hedges to 10% of the calls of the last 10 s plus one a second (docs/contract.md, Hedging); false: no limit" }
        }
    })
}

/// One knob's schema: its type by unit, its bounds and default from the table.
pub(super) fn knob_schema(k: &crate::knob::Knob) -> Value {
    use serde_json::json;
    let mut schema = match k.unit {
        Unit::Count => json!({ "type": "integer", "minimum": 1 }),
        Unit::Duration => json!({ "type": "string", "pattern": duration_pattern() }),
        Unit::Factor => json!({ "type": "number" }),
        Unit::Jitter => json!({ "type": "string", "pattern": JITTER_PATTERN }),
        Unit::Text => json!({ "type": "string", "pattern": NAME_PATTERN }),
        Unit::Seed => json!({ "type": "integer", "minimum": 0, "maximum": u64::MAX }),
        Unit::Budget => json!({ "type": "string", "pattern": NAME_PATTERN }),
    };
    match k.rule {
        crate::knob::Rule::Whole { min, max } => {
            schema["minimum"] = json!(min);
            schema["maximum"] = json!(max);
        }
        // The rule's own bound (a whole one written as an integer, as editors show it).
        crate::knob::Rule::AtLeast { min } if min.fract() == 0.0 => schema["minimum"] = json!(min as i64),
        crate::knob::Rule::AtLeast { min } => schema["minimum"] = json!(min),
        // A zero duration in any unit; typed so that `null` (off) is not refused with it.
        crate::knob::Rule::Positive if k.unit == Unit::Duration => {
            schema["not"] = json!({ "type": "string", "pattern": "^0+(?:\\.0+)?(?:ms|s|m)$" })
        }
        _ => {}
    }
    if k.can_be_off {
        let t = schema["type"].as_str().unwrap_or("string").to_string();
        schema["type"] = json!([t, "null"]);
    }
    let default = match k.default {
        crate::knob::Default::Number(n) if k.unit == Unit::Duration => json!(format!("{n}ms")),
        crate::knob::Default::Number(n) if k.unit == Unit::Count => json!(n as u64),
        crate::knob::Default::Number(n) => json!(n),
        crate::knob::Default::Text(t) => json!(t),
        crate::knob::Default::Off => Value::Null,
    };
    let doc = if k.can_be_off { format!("{} (null turns it off)", k.doc) } else { k.doc.to_string() };
    schema["description"] = json!(doc);
    schema["default"] = default;
    schema
}

/// What a duration string looks like: [`parse_duration`](super::parse_duration)'s grammar,
/// and a value no larger than [`crate::knob::MAX_MS`] in its unit (the loader's range), as a
/// pattern.
fn duration_pattern() -> String {
    let per_unit: Vec<String> = [("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)]
        .iter()
        .map(|(unit, scale)| {
            let limit = (crate::knob::MAX_MS / scale) as u64;
            // Below the limit any fraction; the limit itself only with a zero one.
            format!("0*(?:{})(?:\\.[0-9]+)?{unit}|0*{limit}(?:\\.0+)?{unit}", below(limit))
        })
        .collect();
    format!("^(?:{})$", per_unit.join("|"))
}

/// A regular expression for the whole numbers in `[0, n)`, without leading zeros.
fn below(n: u64) -> String {
    let digits: Vec<u32> = n.to_string().chars().map(|c| c.to_digit(10).unwrap_or(0)).collect();
    let k = digits.len();
    let mut parts = vec!["0".to_string()];
    if k > 1 {
        parts.push(format!("[1-9][0-9]{{0,{}}}", k - 2));
    }
    for (i, &d) in digits.iter().enumerate() {
        let low = if i == 0 { 1 } else { 0 };
        if d > low {
            let prefix: String = digits[..i].iter().map(|d| d.to_string()).collect();
            let rest = if k - i - 1 > 0 { format!("[0-9]{{{}}}", k - i - 1) } else { String::new() };
            parts.push(format!("{prefix}[{low}-{}]{rest}", d - 1));
        }
    }
    parts.join("|")
}
