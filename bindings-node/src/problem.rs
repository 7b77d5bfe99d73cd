//! A broken option, phrased in Node's option names and units.

use retryrs::PolicyError;

/// A broken option, phrased in Node's names and units (milliseconds). Thrown with the
/// `InvalidArg` code so the JS layer can rethrow it as a RangeError.
pub struct Problem {
    knob: &'static str,
    value: String,
    requirement: String,
}

impl Problem {
    pub fn new(knob: &'static str, value: String, requirement: &str) -> Self {
        Problem { knob, value: in_node_names(&value), requirement: in_node_names(requirement) }
    }

    pub fn into_error(self) -> napi::Error {
        napi::Error::new(
            napi::Status::InvalidArg,
            format!("{} must be {}, got {}", self.knob, self.requirement, self.value),
        )
    }
}

impl From<PolicyError> for Problem {
    fn from(e: PolicyError) -> Self {
        Problem::new(option_name(e.knob), e.value, e.requirement)
    }
}

/// A core message fragment with the contract's knob names (`initial_delay is 5 ms`) in
/// Node's spelling (`initialDelayMs is 5 ms`).
fn in_node_names(text: &str) -> String {
    const KNOBS: [&str; 6] = ["max_attempts", "initial_delay", "max_delay", "deadline", "max_tokens", "token_ratio"];
    let mut out = text.to_string();
    for knob in KNOBS {
        if out.contains(knob) {
            out = out.replace(knob, option_name(knob));
        }
    }
    out
}

/// The contract's knob names as Node options spell them.
pub fn option_name(knob: &str) -> &'static str {
    match knob {
        "max_attempts" => "maxAttempts",
        "initial_delay" => "initialDelayMs",
        "multiplier" => "multiplier",
        "max_delay" => "maxDelayMs",
        "jitter" => "jitter",
        "deadline" => "deadlineMs",
        "budget" => "budget",
        "name" => "name",
        "seed" => "seed",
        "max_tokens" => "maxTokens",
        "token_ratio" => "tokenRatio",
        _ => "options",
    }
}
