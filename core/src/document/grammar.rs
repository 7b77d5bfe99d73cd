//! What a document's strings may say: durations, jitter spellings and names, each
//! grammar stated once for the loader and for the schema's patterns, and how a value is
//! spelled back in a message.

use crate::knob::Unit;
use crate::policy::{Given, Jitter, PolicyError};

/// A value as the document spells it: durations as `"100ms"`.
pub(super) fn document_value(knob: &'static str, v: &Given) -> String {
    let duration = crate::knob::knob(knob).is_some_and(|k| k.unit == Unit::Duration);
    match v {
        Given::Number(n) if duration => format!("\"{n}ms\""),
        Given::Number(n) => format!("{n}"),
        Given::Whole(n) => format!("{n}"),
        Given::Text(t) => format!("{t:?}"),
    }
}

pub(super) fn no_unit(number: &str) -> String {
    let secs = number.parse::<f64>().map(|n| n / 1000.0).unwrap_or(f64::NAN);
    format!("\"{number}\" has no unit; write \"{number}ms\" or \"{secs}s\"")
}

/// A retryrs duration, in milliseconds: digits, optionally a point and more digits, and a
/// unit, `ms`, `s` or `m`, nothing else (no sign, no spaces, no exponent): the grammar the
/// schema's pattern states too ([`json_schema`](super::json_schema)), so an editor and the
/// loader agree.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" if decimal(number) => return Err(no_unit(number)),
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "" => return Err(not_a_duration(text)),
        other if decimal(number) => return Err(format!("{text:?}: {other:?} is not a unit; write ms, s or m")),
        _ => return Err(not_a_duration(text)),
    };
    if !decimal(number) {
        return Err(not_a_duration(text));
    }
    // The range, checked on the decimal as written (a double would read
    // 9000000000000000.5ms as the limit itself).
    let limit = (crate::knob::MAX_MS * 1000.0 / (scale * 1000.0)) as u64;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole = whole.trim_start_matches('0');
    let limit_text = limit.to_string();
    let over = (whole.len(), whole) > (limit_text.len(), limit_text.as_str())
        || (whole == limit_text && frac.bytes().any(|b| b != b'0'));
    if over {
        return Err(format!("{text:?} is more than the largest duration, {limit}{unit} (about 285,000 years)"));
    }
    let n: f64 = number.parse().map_err(|_| not_a_duration(text))?;
    // Whole milliseconds stay exact (0.3s is 300 ms, not 299.99999999999994).
    Ok(crate::units::ms_from_secs(n * scale / 1000.0))
}

/// Digits, optionally a point and more digits: a duration's number.
fn decimal(n: &str) -> bool {
    let (whole, frac) = n.split_once('.').unwrap_or((n, "0"));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(frac)
}

fn not_a_duration(text: &str) -> String {
    // What is wrong, then what to write.
    let why = match text.trim() {
        t if t != text => ": it has spaces around it",
        t if t.starts_with('-') => ": a duration cannot be negative",
        t if t.starts_with('+') => ": it has a sign",
        t if t.starts_with('.') || t.contains(".m") || t.contains(".s") => ": a point needs digits on both sides",
        _ => "",
    };
    format!("{text:?} is not a duration{why}; write a number and a unit, such as \"100ms\", \"1.5s\" or \"2m\"")
}

/// A name (a policy's or a budget's key, the `name` knob): not empty, no NUL (C hosts
/// hand names out as C strings).
pub(super) const NAME_PATTERN: &str = "^[^\\u0000]+$";
pub(super) const NAME_RULE: &str = "must be a name: not empty, without NUL";

pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('\0')
}

/// The jitter spellings a document may use: [`document_jitter`]'s grammar as a pattern
/// (ECMA-262, as JSON Schema requires: no inline flags).
pub(super) const JITTER_PATTERN: &str =
    "^(?:none|full|equal|decorrelated|proportional\\((?:0(?:\\.[0-9]+)?|1(?:\\.0+)?)\\))$";

/// A document's jitter: exactly `none`, `full`, `equal`, `decorrelated` or
/// `proportional(F)` with F a decimal in [0, 1] (`0.2`, `1`, `0`), lower case, no spaces:
/// one spelling per jitter, which the schema's pattern states too. (Code may spell it
/// more freely: [`Jitter`]'s `FromStr`.)
pub(super) fn document_jitter(text: &str) -> Result<Jitter, PolicyError> {
    let factor = text.strip_prefix("proportional(").and_then(|f| f.strip_suffix(')'));
    let canonical = match factor {
        Some(f) => f.starts_with(['0', '1']) && decimal(f) && f.parse::<f64>().is_ok_and(|x| x <= 1.0),
        None => matches!(text, "none" | "full" | "equal" | "decorrelated"),
    };
    if !canonical {
        return Err(PolicyError::new("jitter", crate::knob::Rule::Jitter, Given::Text(text.to_string())));
    }
    text.parse()
}
