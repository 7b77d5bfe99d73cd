//! The knob table: one declaration per policy knob (its contract name, unit, default,
//! whether it can be turned off, and the rule it must obey). The builder validates by it,
//! [`PolicyError`](crate::PolicyError) names its rule, and every host derives its option
//! list, spelling, unit conversion, repr and conformance key map from it instead of
//! restating them.
//!
//! Adding a numeric knob: one entry at the end of [`KNOBS`]; its field, its arms in
//! [`PolicyBuilder::set`](crate::PolicyBuilder::set), `build` and
//! [`Policy::number`](crate::Policy::number); the engine rule; then `make generate`,
//! which writes what hosts must hold as source (tools/knobgen: C's `retryrs_config` and
//! headers, Python's stub and signature, Node's `index.d.ts`, the document schema).
//! Everything else hosts read from this table at run time: option lists, spellings, unit
//! conversion, getters, reprs, error wording and the conformance runners' key maps.

use std::fmt;

/// What a knob's value is, which decides how a host converts and spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A whole number (attempts).
    Count,
    /// A span of time. The core holds milliseconds; Python speaks seconds, Node and C
    /// milliseconds (with an `Ms` / `_ms` suffix on the name).
    Duration,
    /// A plain real number (a growth factor).
    Factor,
    /// The jitter spelling (`full`, `proportional(0.2)`, ...).
    Jitter,
    /// Text (the retrier's name).
    Text,
    /// A 64-bit seed.
    Seed,
    /// A shared retry budget object.
    Budget,
}

impl Unit {
    /// Whether the knob is a number that hosts read, convert and hand over generically
    /// (with [`PolicyBuilder::set`](crate::PolicyBuilder::set)).
    pub const fn is_numeric(self) -> bool {
        matches!(self, Unit::Count | Unit::Duration | Unit::Factor)
    }
}

/// The rule a knob's value must obey. Rendered by [`Rule::describe`] in the host's names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// A whole number in `[min, max]`.
    Whole {
        /// The smallest allowed.
        min: u64,
        /// The largest allowed.
        max: u64,
    },
    /// A finite duration in `[0, MAX_MS]`, and not below another knob's value, if named.
    Duration {
        /// The knob this one may not be below (`max_delay >= initial_delay`).
        not_below: Option<&'static str>,
    },
    /// A finite duration in `(0, MAX_MS]`: a bound that, when set, must leave time to
    /// act (an attempt timeout of zero would fail every attempt before it starts).
    Positive,
    /// A finite number `>= min`.
    AtLeast {
        /// The smallest allowed.
        min: f64,
    },
    /// One of the jitter spellings.
    Jitter,
    /// Anything of the right type.
    Any,
}

impl Rule {
    /// What the rule asks, with other knobs' names spelt by `name` (the host's spelling).
    pub fn describe(&self, name: &dyn Fn(&'static str) -> String) -> String {
        match self {
            Rule::Whole { min, max } => format!(">= {min} and <= {max}"),
            Rule::Duration { not_below: None } => "finite and >= 0 (at most about 285,000 years)".into(),
            Rule::Duration { not_below: Some(other) } => format!(">= {}", name(other)),
            Rule::Positive => "finite and > 0 (at most about 285,000 years)".into(),
            Rule::AtLeast { min } => format!("finite and >= {min}"),
            Rule::Jitter => "one of none, full, equal, decorrelated, proportional(F) with F in [0, 1]".into(),
            Rule::Any => "valid".into(),
        }
    }
}

/// A knob's default, in the core's units (milliseconds for durations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    /// A number (count, milliseconds or factor).
    Number(f64),
    /// Text (a jitter spelling or a name).
    Text(&'static str),
    /// Off (no seed, no budget).
    Off,
}

/// `snake_name` in camelCase, with `Ms` when it is a duration (Node's spelling, for knobs
/// and for the budgets' and breakers' own settings).
pub fn camel(snake_name: &str, duration: bool) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake_name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if duration {
        out.push_str("Ms");
    }
    out
}

/// One policy knob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knob {
    /// The contract's snake_case name (Python's spelling too).
    pub name: &'static str,
    /// What the value is.
    pub unit: Unit,
    /// The contract's default.
    pub default: Default,
    /// Whether it can be turned off (Python `None`, Node `null`, C `has_*` false).
    pub can_be_off: bool,
    /// What turning it off means, for docs and stubs ("" when it cannot be).
    pub off_means: &'static str,
    /// What a value must be.
    pub rule: Rule,
    /// One line for docs, stubs and reprs.
    pub doc: &'static str,
}

impl Knob {
    /// The name in camelCase, with `Ms` on durations (Node's spelling).
    pub fn camel_ms(&self) -> String {
        camel(self.name, self.unit == Unit::Duration)
    }

    /// The name with `_ms` on durations (C's spelling).
    pub fn snake_ms(&self) -> String {
        if self.unit == Unit::Duration {
            format!("{}_ms", self.name)
        } else {
            self.name.to_string()
        }
    }
}

/// The largest delay a knob may hold: about 285,000 years, far past anything sane, and
/// small enough that every later conversion to `u64` milliseconds or `Duration` is exact.
pub const MAX_MS: f64 = 9.0e15;

/// The longest wait the engine ever asks for, in ms: [`MAX_MS`], the largest delay and
/// deadline validation accepts. A longer one can only come from a server's hint with both
/// the deadline and `max_retry_after` off; it is clamped to this, so `now + delay` in a
/// host's or a user's event loop never wraps (u64 milliseconds hold 2,000 times more).
pub const MAX_WAIT_MS: u64 = MAX_MS as u64;

/// Every policy knob, in the order knobs were added. A new knob goes at the end: C's
/// `retryrs_config` (generated from this table) lays its fields out in this order, and
/// its ABI only ever appends.
pub const KNOBS: &[Knob] = &[
    Knob {
        name: "max_attempts",
        unit: Unit::Count,
        default: Default::Number(5.0),
        can_be_off: false,
        off_means: "",
        rule: Rule::Whole { min: 1, max: u32::MAX as u64 },
        doc: "total calls, the first one included (1 disables retrying)",
    },
    Knob {
        name: "initial_delay",
        unit: Unit::Duration,
        default: Default::Number(200.0),
        can_be_off: false,
        off_means: "",
        rule: Rule::Duration { not_below: None },
        doc: "ceiling of the wait after the first failure",
    },
    Knob {
        name: "multiplier",
        unit: Unit::Factor,
        default: Default::Number(2.0),
        can_be_off: false,
        off_means: "",
        rule: Rule::AtLeast { min: 1.0 },
        doc: "growth of the ceiling per failed attempt",
    },
    Knob {
        name: "max_delay",
        unit: Unit::Duration,
        default: Default::Number(5_000.0),
        can_be_off: false,
        off_means: "",
        rule: Rule::Duration { not_below: Some("initial_delay") },
        doc: "cap on every backoff delay (hints are not capped)",
    },
    Knob {
        name: "jitter",
        unit: Unit::Jitter,
        default: Default::Text("full"),
        can_be_off: false,
        off_means: "",
        rule: Rule::Jitter,
        doc: "how randomness is mixed into each delay",
    },
    Knob {
        name: "deadline",
        unit: Unit::Duration,
        default: Default::Number(15_000.0),
        can_be_off: true,
        off_means: "no deadline (attempts alone bound the call)",
        rule: Rule::Duration { not_below: None },
        doc: "budget for the whole call, attempts and waits included",
    },
    Knob {
        name: "seed",
        unit: Unit::Seed,
        default: Default::Off,
        can_be_off: true,
        off_means: "fresh random jitter on every call",
        rule: Rule::Any,
        doc: "a seed for reproducible jitter: same seed, same delays, in every host",
    },
    Knob {
        name: "name",
        unit: Unit::Text,
        default: Default::Text("retry"),
        can_be_off: false,
        off_means: "",
        rule: Rule::Any,
        doc: "names the retrier in events and errors",
    },
    Knob {
        name: "budget",
        unit: Unit::Budget,
        default: Default::Off,
        can_be_off: true,
        off_means: "no budget (retries are not rationed)",
        rule: Rule::Any,
        doc: "a retry budget shared with other retriers",
    },
    Knob {
        name: "max_retry_after",
        unit: Unit::Duration,
        default: Default::Number(60_000.0),
        can_be_off: true,
        off_means: "every Retry-After hint is waited out (the deadline still bounds it)",
        rule: Rule::Duration { not_below: None },
        doc: "the longest server-asked wait accepted; a longer hint ends the call at once (exhausted, reason retry_after)",
    },
    Knob {
        name: "attempt_timeout",
        unit: Unit::Duration,
        default: Default::Off,
        can_be_off: true,
        off_means: "no per-attempt bound (the deadline, if on, still bounds every attempt)",
        rule: Rule::Positive,
        doc: "bound on each attempt; an attempt's bound is this or the time left before the deadline, whichever is smaller",
    },
];

/// The knob called `name` (contract spelling).
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

/// The numeric knobs, the ones hosts hand over generically.
pub fn numeric() -> impl Iterator<Item = &'static Knob> {
    KNOBS.iter().filter(|k| k.unit.is_numeric())
}

/// A value a host hands to [`PolicyBuilder::set`](crate::PolicyBuilder::set), already in
/// the core's unit (milliseconds for durations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// A number: count, milliseconds or factor.
    Number(f64),
    /// A whole number as a host holds it (C's `uint64_t` count), kept exact so that an
    /// out-of-range value is reported as given.
    Whole(u64),
    /// Turned off (only for knobs that can be).
    Off,
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_follow_the_unit() {
        let d = knob("initial_delay").unwrap();
        assert_eq!(d.camel_ms(), "initialDelayMs");
        assert_eq!(d.snake_ms(), "initial_delay_ms");
        let m = knob("max_attempts").unwrap();
        assert_eq!(m.camel_ms(), "maxAttempts");
        assert_eq!(m.snake_ms(), "max_attempts");
    }

    #[test]
    fn names_are_unique_and_not_below_names_a_knob() {
        for (i, k) in KNOBS.iter().enumerate() {
            assert!(KNOBS[i + 1..].iter().all(|o| o.name != k.name), "{} twice", k.name);
            assert_eq!(
                k.can_be_off,
                !k.off_means.is_empty(),
                "{}: off_means says what off means, iff it can be off",
                k.name
            );
            if let Rule::Duration { not_below: Some(other) } = k.rule {
                assert!(knob(other).is_some(), "{} names unknown {other}", k.name);
            }
        }
    }
}
