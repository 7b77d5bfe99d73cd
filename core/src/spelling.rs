//! How each host spells a knob in the messages the core words: the core keeps the
//! identity (the contract's snake_case name, a value in its own units) and renders the
//! text once, in the names and units the host's users wrote. A Node user who set
//! `maxAttempts: 10, deadlineMs: 15000` reads `maxAttempts` and `deadlineMs`, with times
//! in milliseconds; a C user reads the `retryrs_config` fields (`deadline_ms`); Python
//! and Rust read the contract's names, with times in seconds.
//!
//! The names come from the knob table ([`crate::knob`]) and, for the settings of budgets,
//! breakers and hedges (which are not policy knobs), from [`DURATION_SETTINGS`]: the same
//! rule, camelCase plus `Ms` for Node and `_ms` for C on a duration.

use crate::knob;
use crate::units;

/// The settings of budgets, breakers and hedges that are durations (policy knobs say so
/// in the knob table): Node spells them with `Ms`, C with `_ms`.
pub const DURATION_SETTINGS: &[&str] = &[
    "ttl",
    "sampling_duration",
    "break_duration",
    "max_break_duration",
    "slow_call_duration",
    "delay",
    "floor",
    "ceiling",
];

/// Whose words a message is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spelling {
    /// Rust: the contract's names (the builder's methods); times in seconds.
    Rust,
    /// Python: the contract's names (the keyword arguments); times in seconds.
    Python,
    /// Node: camelCase, `Ms` on durations (`maxAttempts`, `deadlineMs`); times in ms.
    Node,
    /// C: the `retryrs_config` fields, `_ms` on durations (`deadline_ms`); times in ms.
    C,
}

impl Spelling {
    /// Every spelling (what a test enumerates).
    pub const ALL: [Spelling; 4] = [Spelling::Rust, Spelling::Python, Spelling::Node, Spelling::C];

    /// Whether `name` (a knob or a setting, contract spelling) is a duration.
    pub fn is_duration(name: &str) -> bool {
        match knob::knob(name) {
            Some(k) => k.unit == knob::Unit::Duration,
            None => DURATION_SETTINGS.contains(&name),
        }
    }

    /// Whether this host gives durations in milliseconds (else in seconds).
    pub fn in_ms(self) -> bool {
        matches!(self, Spelling::Node | Spelling::C)
    }

    /// The knob or setting `name` (contract spelling) as this host's users write it.
    pub fn name(self, name: &str) -> String {
        let duration = Spelling::is_duration(name);
        match self {
            Spelling::Rust | Spelling::Python => name.to_string(),
            Spelling::Node => knob::camel(name, duration),
            Spelling::C if duration => format!("{name}_ms"),
            Spelling::C => name.to_string(),
        }
    }

    /// A span of `ms` milliseconds in this host's unit, with the unit: `15 s` (Rust,
    /// Python: at most 3 decimals, trailing zeros dropped) or `15000 ms` (Node, C).
    pub fn span_ms(self, ms: f64) -> String {
        if self.in_ms() {
            format!("{} ms", units::compact(ms))
        } else {
            format!("{} s", seconds(ms))
        }
    }

    /// `text` (a rule written by the core) with every word that is one of `names` (knobs
    /// or settings, contract spelling) in this host's spelling. Only the listed names are
    /// touched, so prose around them ("backoff delay") stays as written.
    pub fn respell(self, text: &str, names: &[&str]) -> String {
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            if names.contains(&word.as_str()) {
                out.push_str(&self.name(word));
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }
}

/// Seconds from milliseconds as an error message shows a number: `15`, `26.2`, `0.0005`.
fn seconds(ms: f64) -> String {
    units::compact(ms / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_spells_knobs_and_settings_its_own_way() {
        let names = |name: &str| Spelling::ALL.map(|s| s.name(name));
        assert_eq!(names("max_attempts"), ["max_attempts", "max_attempts", "maxAttempts", "max_attempts"]);
        assert_eq!(names("deadline"), ["deadline", "deadline", "deadlineMs", "deadline_ms"]);
        assert_eq!(
            names("break_duration"),
            ["break_duration", "break_duration", "breakDurationMs", "break_duration_ms"]
        );
        assert_eq!(names("token_ratio"), ["token_ratio", "token_ratio", "tokenRatio", "token_ratio"]);
    }

    #[test]
    fn spans_read_in_the_hosts_unit() {
        assert_eq!(Spelling::Python.span_ms(26_200.0), "26.2 s");
        assert_eq!(Spelling::Rust.span_ms(15_000.0), "15 s");
        assert_eq!(Spelling::Rust.span_ms(125.0), "0.125 s");
        assert_eq!(Spelling::Node.span_ms(26_200.0), "26200 ms");
        assert_eq!(Spelling::C.span_ms(0.5), "0.5 ms");
        assert_eq!(Spelling::Python.span_ms(0.5), "0.0005 s");
    }

    /// Every message kind the core words, rendered in `spelling`, with the knobs or
    /// settings it names (contract spelling).
    fn every_message(spelling: Spelling) -> Vec<(String, Vec<&'static str>)> {
        use crate::breaker::{BreakerConfig, CircuitBreaker};
        use crate::budget::RetryBudget;
        use crate::event::{ExhaustReason, GaveUp};
        use crate::hedge::Hedging;
        use crate::policy::{Given, Policy, PolicyError};
        use std::time::Duration;
        let mut out = vec![];
        for k in crate::knob::numeric() {
            let e = PolicyError::new(k.name, k.rule, Given::Number(-1.0));
            out.push((e.render(&|n| spelling.name(n), &PolicyError::contract_value), vec![k.name]));
        }
        let e = Policy::builder().initial_delay_ms(2000.0).max_delay_ms(1000.0).build().unwrap_err();
        out.push((e.render(&|n| spelling.name(n), &PolicyError::contract_value), vec!["max_delay", "initial_delay"]));
        let hint = Policy::builder().max_attempts(10).build().unwrap().deadline_hint().unwrap();
        out.push((hint.render(spelling), vec!["max_attempts", "deadline"]));
        for (reason, names) in [
            (ExhaustReason::Attempts, vec!["max_attempts"]),
            (ExhaustReason::Deadline, vec!["deadline"]),
            (ExhaustReason::RetryAfter, vec!["max_retry_after"]),
        ] {
            out.push((GaveUp { name: Some("r"), attempts: 3, reason }.render(spelling), names));
        }
        out.push((RetryBudget::new(10.0, 20.0).unwrap_err().render(spelling), vec!["token_ratio", "max_tokens"]));
        let mut c = BreakerConfig::consecutive(5);
        c.max_break_duration = Some(Duration::from_millis(10));
        out.push((CircuitBreaker::new(c).unwrap_err().render(spelling), vec!["max_break_duration", "break_duration"]));
        let e = Hedging::adaptive_window_ms(3, 0.9, 50.0, 10.0, 100).unwrap_err();
        out.push((e.render(spelling), vec!["ceiling", "floor"]));
        out
    }

    #[test]
    fn every_message_kind_names_its_knobs_in_each_hosts_spelling() {
        let word = |text: &str, w: &str| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|t| t == w);
        for spelling in Spelling::ALL {
            for (text, names) in every_message(spelling) {
                for name in names {
                    let spelt = spelling.name(name);
                    assert!(word(&text, &spelt), "{spelling:?}: {spelt} missing from {text}");
                    if spelt != name {
                        assert!(!word(&text, name), "{spelling:?}: the contract's {name} in {text}");
                    }
                }
                if spelling.in_ms() {
                    assert!(!text.contains(" s of ") && !text.contains(" s:"), "{spelling:?}: seconds in {text}");
                }
            }
        }
    }

    #[test]
    fn respell_touches_only_the_named_words() {
        let text = "<= max_tokens, not max_tokens_x nor the backoff delay";
        assert_eq!(
            Spelling::Node.respell(text, &["max_tokens"]),
            "<= maxTokens, not max_tokens_x nor the backoff delay"
        );
        assert_eq!(Spelling::Python.respell(text, &["max_tokens"]), text);
    }
}
