//! A knob out of range, as data ([`PolicyError`]: the knob, the rule it broke, the value
//! [`Given`]), and the one wording each host renders it in.

use std::fmt;

use crate::knob::{Rule, Unit};
use crate::units;

/// A knob that was out of range, as data: which knob, the rule it broke and the value
/// given (in the core's units), so each host renders it once in its own names and units
/// ([`PolicyError::render`]). `Display` renders it in the contract's names, delays in ms.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyError {
    /// The knob's name as the contract spells it (`max_attempts`, `initial_delay`, ...).
    pub knob: &'static str,
    /// The rule it broke (from the knob table).
    pub rule: Rule,
    /// The offending value.
    pub value: Given,
    /// For a rule relating two knobs (`max_delay >= initial_delay`): the other's value.
    pub other: Option<f64>,
}

/// A value as a host gave it, in the core's units (milliseconds for durations).
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// A number.
    Number(f64),
    /// A whole number too large for a float to show exactly.
    Whole(u64),
    /// Text (a jitter spelling), or "off" for a knob that cannot be turned off.
    Text(String),
}

impl PolicyError {
    /// Builds the error for `knob` holding `value`, which breaks `rule`.
    pub fn new(knob: &'static str, rule: Rule, value: Given) -> Self {
        PolicyError { knob, rule, value, other: None }
    }

    /// The one wording of a broken rule, with knob names spelt by `name` and values
    /// rendered by `value` (each host passes its spelling and units).
    pub fn render(
        &self,
        name: &dyn Fn(&'static str) -> String,
        value: &dyn Fn(&'static str, &Given) -> String,
    ) -> String {
        let mut text =
            format!("{} must be {}, got {}", name(self.knob), self.rule.describe(name), value(self.knob, &self.value));
        if let (Rule::Duration { not_below: Some(other) }, Some(v)) = (self.rule, self.other) {
            text.push_str(&format!(" ({} is {})", name(other), value(other, &Given::Number(v))));
        }
        text
    }

    /// The contract's rendering of a value: durations in milliseconds.
    pub fn contract_value(knob: &'static str, v: &Given) -> String {
        let ms = crate::knob::knob(knob).is_some_and(|k| k.unit == Unit::Duration);
        match v {
            Given::Number(n) if ms => format!("{} ms", units::compact(*n)),
            Given::Number(n) => units::compact(*n),
            Given::Whole(n) => format!("{n}"),
            Given::Text(t) => t.clone(),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|k| k.to_string(), &PolicyError::contract_value))
    }
}

impl std::error::Error for PolicyError {}
