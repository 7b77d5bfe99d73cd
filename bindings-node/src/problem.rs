//! A broken option, phrased in Node's option names and units.

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

    pub fn into_error(self) -> napi::Error {
        napi::Error::new(napi::Status::InvalidArg, self.message)
    }
}

impl From<PolicyError> for Problem {
    /// The core's verdict in Node's option names (from the knob table) and units
    /// (milliseconds, the core's own).
    fn from(e: PolicyError) -> Self {
        let value = |_: &'static str, v: &Given| match v {
            Given::Number(n) => js_number(*n),
            Given::Whole(n) => format!("{n}"),
            Given::Text(t) => t.clone(),
        };
        Problem { message: e.render(&|k| option_name(k).to_string(), &value) }
    }
}

/// `n` as JavaScript's `String(n)` spells it (`Infinity`, `NaN`, `1e+300`, `1e-7`, `0` for
/// -0), since that is what the caller wrote or will see when printing their value;
/// Rust's `Display` says `inf` and writes 1e300 out in 301 digits.
fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n == 0.0 {
        "0".into()
    } else if n.abs() >= 1e21 || n.abs() < 1e-6 {
        // Shortest round-trip digits either way; JavaScript signs a positive exponent.
        let s = format!("{n:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        format!("{n}")
    }
}

/// A knob's name as Node options spell it: camelCase, `Ms` on durations (the knob
/// table's unit says which), and the budget's own two numbers.
pub fn option_name(knob: &str) -> String {
    match retryrs::knob::knob(knob) {
        Some(k) => k.camel_ms(),
        None => match knob {
            "max_tokens" => "maxTokens".into(),
            "token_ratio" => "tokenRatio".into(),
            other => other.into(),
        },
    }
}
