//! A broken option, phrased in Node's option names and units.

use std::collections::HashMap;

use retryrs::knob::Rule;
use retryrs::{Given, PolicyError};

/// A broken option, phrased in Node's names and units (milliseconds). Thrown with the
/// `InvalidArg` code so the JS layer can rethrow it as a RangeError.
pub struct Problem {
    message: String,
}

impl Problem {
    pub fn new(knob: &str, value: String, requirement: &str) -> Self {
        Problem { message: format!("{knob} must be {requirement}, got {value}") }
    }

    /// A message already in Node's names.
    pub fn from_message(message: String) -> Self {
        Problem { message }
    }

    pub fn into_error(self) -> napi::Error {
        napi::Error::new(napi::Status::InvalidArg, self.message)
    }
}

impl Problem {
    /// The core's verdict in Node's option names (from the knob table) and units
    /// (milliseconds, the core's own), quoting each number as the user gave it (`given`,
    /// by contract name), printed as JavaScript prints it: the core saw 1e300 as a
    /// saturated whole number, and Rust prints infinity as `inf`.
    pub fn from_policy(e: PolicyError, given: &HashMap<String, f64>) -> Self {
        let value = |knob: &'static str, v: &Given| match (given.get(knob), v) {
            (Some(n), _) => js_number(*n),
            (None, Given::Number(n)) => js_number(*n),
            (None, Given::Whole(n)) => format!("{n}"),
            (None, Given::Text(t)) => t.clone(),
        };
        // A rule between two knobs broken by the one the user set, against the other's
        // default: blame the one set, and say both ways out.
        if let (Rule::Duration { not_below: Some(other) }, Some(other_value)) = (e.rule, e.other) {
            if !given.contains_key(e.knob) && given.contains_key(other) {
                let (set, unset) = (option_name(other), option_name(e.knob));
                return Problem {
                    message: format!(
                        "{set} must be <= {unset} ({}, its default), got {}: lower {set} or set {unset} too",
                        value(e.knob, &e.value),
                        value(other, &Given::Number(other_value)),
                    ),
                };
            }
        }
        Problem { message: e.render(&|k| option_name(k).to_string(), &value) }
    }
}

impl From<PolicyError> for Problem {
    fn from(e: PolicyError) -> Self {
        Problem::from_policy(e, &HashMap::new())
    }
}

/// A whole number >= 0 (what a count or a cost must be); fractions, negatives, NaN and
/// infinities are not.
pub fn is_whole(v: f64) -> bool {
    v.is_finite() && v >= 0.0 && v.fract() == 0.0
}

/// A number as JavaScript's `String(n)` prints it (`Infinity`, `NaN`, `1e+300`), so a
/// message quotes what the user typed, not Rust's spelling of it.
pub fn js_number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let magnitude = n.abs();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        let text = format!("{n:e}");
        return match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => text,
        };
    }
    format!("{n}")
}

/// A knob's (or a budget's, breaker's or hedge's setting's) name as Node options spell
/// it: camelCase, `Ms` on durations (the core's spelling table says which).
pub fn option_name(knob: &str) -> String {
    retryrs::Spelling::Node.name(knob)
}
